/* The trust boundary at the listener: Host and Origin checks (DNS rebinding, cross-site)
 * and the bearer token. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "cleanup.h"
#include "harness.h"

TestSuite(frontdoor, .init = sbx_it_init, .fini = sbx_it_fini, .timeout = 60);

#define HEALTH "/api/sandbox/health"

static struct http_resp get_with(const char *host, const char *auth, const char *origin)
{
	const char *hdrs[4];
	size_t n = 0;
	if (host)
		hdrs[n++] = host;
	if (auth)
		hdrs[n++] = auth;
	if (origin)
		hdrs[n++] = origin;
	hdrs[n] = NULL;
	return http_send(sbx_it.port, "GET", "/api/sandbox/sandboxes", hdrs, NULL, 0,
			 HTTP_TIMEOUT_S);
}

Test(frontdoor, host_origin_and_token)
{
	char host[64], host_localhost[64], host_wrong_port[64], host_evil[64], auth[SBX_TOKEN_MAX + 32],
		own_origin[64];
	snprintf(host, sizeof(host), "Host: 127.0.0.1:%u", sbx_it.port);
	snprintf(host_localhost, sizeof(host_localhost), "Host: localhost:%u", sbx_it.port);
	snprintf(host_wrong_port, sizeof(host_wrong_port), "Host: 127.0.0.1:%u",
		 sbx_it.port == 65535 ? 1 : sbx_it.port + 1);
	snprintf(host_evil, sizeof(host_evil), "Host: evil.example:%u", sbx_it.port);
	snprintf(auth, sizeof(auth), "Authorization: Bearer %s", sbx_it.token);
	snprintf(own_origin, sizeof(own_origin), "Origin: http://127.0.0.1:%u", sbx_it.port);

	struct {
		const char *what, *host, *auth, *origin;
		int want;
	} cases[] = {
		{ "control", host, auth, NULL, 200 },
		{ "localhost name", host_localhost, auth, NULL, 200 },
		{ "own origin", host, auth, own_origin, 200 },
		{ "foreign host", host_evil, auth, NULL, 403 },
		{ "wrong port in host", host_wrong_port, auth, NULL, 403 },
		{ "foreign origin", host, auth, "Origin: http://evil.example", 403 },
		{ "null origin", host, auth, "Origin: null", 403 },
		{ "missing token", host, NULL, NULL, 401 },
		{ "wrong token", host, "Authorization: Bearer not-the-token", NULL, 401 },
		{ "basic scheme", host, "Authorization: Basic YTpi", NULL, 401 },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		_cleanup_resp_ struct http_resp r = get_with(cases[i].host, cases[i].auth, cases[i].origin);
		cr_expect_eq(r.status, cases[i].want, "%s: status %d want %d body %s", cases[i].what,
			     r.status, cases[i].want, r.body ? r.body : "(none)");
		if (cases[i].want >= 400)
			cr_expect(js_str(r.json, "error.code"), "%s: no JSON error body: %s",
				  cases[i].what, r.body ? r.body : "(none)");
	}
}

Test(frontdoor, refused_requests_change_nothing)
{
	char host[64];
	snprintf(host, sizeof(host), "Host: 127.0.0.1:%u", sbx_it.port);
	const char *hdrs[] = { host, "Content-Type: application/json", NULL };
	const char *body = "{\"name\":\"sneaky\"}";
	_cleanup_resp_ struct http_resp r = http_send(sbx_it.port, "POST", "/api/sandbox/sandboxes",
						      hdrs, body, strlen(body), HTTP_TIMEOUT_S);
	assert_status(r, 401);
	_cleanup_resp_ struct http_resp list =
		http_req(&sbx_it, "GET", "/api/sandbox/sandboxes", NULL, NULL);
	assert_status(list, 200);
	cr_expect(!strstr(list.body, "sneaky"), "an unauthenticated create took effect: %s",
		  list.body);
}

Test(frontdoor, health_reports_processes)
{
	_cleanup_resp_ struct http_resp r = http_req(&sbx_it, "GET", HEALTH, NULL, NULL);
	assert_status(r, 200);
	cr_assert(r.json, "health is not JSON: %s", r.body);
	cr_expect_gt(js_int(r.json, "processes.launcher", 0), 1, "%s", r.body);
	cr_expect_gt(js_int(r.json, "processes.api", 0), 1, "%s", r.body);
	cr_expect_str_eq(js_str(r.json, "isolation"), "bwrap", "%s", r.body);
	/* what the API process achieved, as it reports it */
	cr_expect(js_is_true(r.json, "confinement.noNewPrivs"), "%s", r.body);
	cr_expect(js_is_true(r.json, "confinement.seccomp"), "%s", r.body);
	cr_expect_gt(js_int(r.json, "confinement.seccompSyscalls", 0), 10, "%s", r.body);
	if (geteuid() == 0) {
		cr_expect(js_is_true(r.json, "confinement.chroot"), "%s", r.body);
		cr_expect(js_is_true(r.json, "confinement.uidDropped"), "%s", r.body);
	}
	if (js_int(r.json, "confinement.landlockAbi", 0) > 0)
		cr_expect(js_is_true(r.json, "confinement.landlock"), "%s", r.body);
	/* and it is true: the API process's credentials, read from the kernel */
	char path[64], line[256];
	snprintf(path, sizeof(path), "/proc/%lld/status", js_int(r.json, "processes.api", 0));
	FILE *f = fopen(path, "re");
	cr_assert_not_null(f);
	bool nnp = false, filtered = false, uid_ok = geteuid() != 0;
	while (fgets(line, sizeof(line), f)) {
		nnp |= strncmp(line, "NoNewPrivs:\t1", 13) == 0;
		filtered |= strncmp(line, "Seccomp:\t2", 10) == 0;
		uid_ok |= strncmp(line, "Uid:\t65534", 10) == 0;
	}
	fclose(f);
	cr_expect(nnp && filtered && uid_ok, "the API process is not confined as reported");
}

Test(frontdoor, cross_site_simple_post_is_refused)
{
	/* a browser form can send text/plain without a preflight: refused, nothing created */
	char host[64];
	snprintf(host, sizeof(host), "Host: 127.0.0.1:%u", (unsigned)sbx_it.port);
	char auth[SBX_TOKEN_MAX + 32];
	snprintf(auth, sizeof(auth), "Authorization: Bearer %s", sbx_it.token);
	const char *hdrs[] = { host, auth, "Content-Type: text/plain", NULL };
	const char *body = "{\"name\":\"csrf\"}";
	_cleanup_resp_ struct http_resp r = http_send(sbx_it.port, "POST", "/api/sandbox/sandboxes",
	                                               hdrs, body, strlen(body), 10);
	cr_expect_eq(r.status, 415, "%d %s", r.status, r.body);
	_cleanup_resp_ struct http_resp l = http_req(&sbx_it, "GET", "/api/sandbox/sandboxes", NULL, NULL);
	cr_expect(!strstr(l.body, "csrf"), "the refused request created a sandbox: %s", l.body);
}

/* Raw bytes are taken by the file write alone: a JSON route given application/octet-stream
 * (here the ExecPolicy, by PUT) is 415 and changes nothing. */
Test(frontdoor, octet_stream_is_only_a_file_write)
{
	char host[64], auth[SBX_TOKEN_MAX + 32];
	snprintf(host, sizeof(host), "Host: 127.0.0.1:%u", (unsigned)sbx_it.port);
	snprintf(auth, sizeof(auth), "Authorization: Bearer %s", sbx_it.token);
	const char *hdrs[] = { host, auth, "Content-Type: application/octet-stream", NULL };
	const char *body = "{\"execShell\":false}";
	_cleanup_resp_ struct http_resp r = http_send(sbx_it.port, "PUT", "/api/sandbox/exec-policy",
	                                               hdrs, body, strlen(body), 10);
	cr_expect_eq(r.status, 415, "%d %s", r.status, r.body);
	_cleanup_resp_ struct http_resp p = http_req(&sbx_it, "GET", "/api/sandbox/exec-policy", NULL, NULL);
	cr_expect(js_is_true(p.json, "execShell"), "the refused request changed the policy: %s", p.body);
	_cleanup_resp_ struct http_resp post = http_send(sbx_it.port, "POST", "/api/sandbox/sandboxes",
	                                                  hdrs, "{}", 2, 10);
	cr_expect_eq(post.status, 415, "%d %s", post.status, post.body);
}
