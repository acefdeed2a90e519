/* Hostile and broken input gets a clear 4xx JSON error, changes nothing, and the daemon
 * keeps answering. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "cleanup.h"
#include "harness.h"

TestSuite(badinput, .init = sbx_it_init, .fini = sbx_it_fini, .timeout = 60);

#define SANDBOXES "/api/sandbox/sandboxes"

static void expect_error(struct http_resp *r, int status, const char *code, const char *what)
{
	cr_expect_eq(r->status, status, "%s: status %d want %d body %s", what, r->status, status,
		     r->body ? r->body : "(none)");
	cr_expect(r->json, "%s: error body is not JSON: %s", what, r->body ? r->body : "(none)");
	const char *c = js_str(r->json, "error.code");
	cr_expect(c && strcmp(c, code) == 0, "%s: error.code %s want %s", what, c ? c : "(none)",
		  code);
	cr_expect(js_str(r->json, "error.message"), "%s: no error.message", what);
}

static size_t sandbox_count(void)
{
	_cleanup_resp_ struct http_resp r = http_req(&sbx_it, "GET", SANDBOXES, NULL, NULL);
	assert_status(r, 200);
	yajl_val a = js_array(r.json, "sandboxes");
	cr_assert(a, "sandbox list is not an array: %s", r.body);
	return YAJL_GET_ARRAY(a)->len;
}

static void expect_alive(void)
{
	_cleanup_resp_ struct http_resp h =
		http_req(&sbx_it, "GET", "/api/sandbox/health", NULL, NULL);
	assert_status(h, 200);
}

Test(badinput, malformed_json)
{
	size_t before = sandbox_count();
	const char *bodies[] = { "{\"name\":", "{name: 1}", "not json", "{\"name\":\"a\"} trailing",
				 "\"just a string\"", "[]" };
	for (size_t i = 0; i < sizeof(bodies) / sizeof(bodies[0]); i++) {
		_cleanup_resp_ struct http_resp r = http_req(&sbx_it, "POST", SANDBOXES, bodies[i], NULL);
		char what[64];
		snprintf(what, sizeof(what), "body #%zu", i);
		expect_error(&r, 400, "invalid_argument", what);
	}
	cr_expect_eq(sandbox_count(), before, "a malformed create changed the sandbox list");
	expect_alive();
}

Test(badinput, unknown_sandbox)
{
	_cleanup_resp_ struct http_resp g =
		http_req(&sbx_it, "GET", SANDBOXES "/sbx_doesnotexist", NULL, NULL);
	expect_error(&g, 404, "not_found", "GET unknown");
	_cleanup_free_ char *body = run_body("sh", "echo hi", NULL, 0);
	_cleanup_resp_ struct http_resp r = sbx_run(&sbx_it, "sbx_doesnotexist", body);
	expect_error(&r, 404, "not_found", "run unknown");
	_cleanup_resp_ struct http_resp d =
		http_req(&sbx_it, "DELETE", SANDBOXES "/sbx_doesnotexist", NULL, NULL);
	expect_error(&d, 404, "not_found", "DELETE unknown");
	_cleanup_resp_ struct http_resp n =
		http_req(&sbx_it, "GET", "/api/sandbox/no-such-route", NULL, NULL);
	cr_expect_eq(n.status, 404, "unknown route: %d", n.status);
}

Test(badinput, wrong_types)
{
	size_t before = sandbox_count();
	const char *creates[] = { "{\"name\":5}", "{\"name\":\"a\",\"network\":\"yes\"}",
				  "{\"name\":\"a\",\"readPaths\":\"/etc\"}",
				  "{\"name\":\"a\",\"limits\":{\"timeoutMs\":\"long\"}}",
				  "{\"name\":\"a\",\"limits\":{\"timeoutMs\":-1}}",
				  "{\"name\":\"a\",\"ports\":{\"listen\":[70000]}}" };
	for (size_t i = 0; i < sizeof(creates) / sizeof(creates[0]); i++) {
		_cleanup_resp_ struct http_resp r = http_req(&sbx_it, "POST", SANDBOXES, creates[i], NULL);
		expect_error(&r, 400, "invalid_argument", creates[i]);
	}
	cr_expect_eq(sandbox_count(), before, "an invalid create changed the sandbox list");

	char id[128];
	sbx_create(&sbx_it, NULL, id, sizeof(id));
	const char *runs[] = { "{\"language\":\"python\",\"code\":42}",
			       "{\"language\":\"cobol\",\"code\":\"x\"}",
			       "{\"language\":\"sh\"}",
			       "{\"language\":\"sh\",\"code\":\"true\",\"timeoutMs\":\"soon\"}",
			       "{\"language\":\"sh\",\"code\":\"true\",\"timeoutMs\":-5}" };
	for (size_t i = 0; i < sizeof(runs) / sizeof(runs[0]); i++) {
		_cleanup_resp_ struct http_resp r = sbx_run(&sbx_it, id, runs[i]);
		expect_error(&r, 400, "invalid_argument", runs[i]);
	}
	expect_alive();
}

Test(badinput, deep_nesting)
{
	const size_t depth = 10000; /* far beyond any sane JSON, well under a body limit */
	_cleanup_free_ char *body = malloc(depth * 2 + 1);
	cr_assert(body);
	memset(body, '[', depth);
	memset(body + depth, ']', depth);
	body[depth * 2] = '\0';
	_cleanup_resp_ struct http_resp r = http_req(&sbx_it, "POST", SANDBOXES, body, NULL);
	cr_expect(r.status == 400 || r.status == 413, "deep nesting: %d %s", r.status,
		  r.body ? r.body : "(none)");

	memset(body, '{', depth); /* unbalanced, object openers */
	body[depth] = '\0';
	_cleanup_resp_ struct http_resp r2 = http_req(&sbx_it, "POST", SANDBOXES, body, NULL);
	cr_expect(r2.status == 400 || r2.status == 413, "deep objects: %d", r2.status);
	expect_alive();
}

Test(badinput, oversized_body_and_garbage_request)
{
	const size_t n = 16u * 1024u * 1024u;
	_cleanup_free_ char *big = malloc(n + 32);
	cr_assert(big);
	memcpy(big, "{\"name\":\"", 9);
	memset(big + 9, 'a', n);
	memcpy(big + 9 + n, "\"}", 3);
	_cleanup_resp_ struct http_resp r = http_req(&sbx_it, "POST", SANDBOXES, big, NULL);
	cr_expect(r.status == 413 || r.status == 400 || r.status < 0,
		  "a 16 MiB body: status %d", r.status);

	const char garbage[] = "\x01\x02 NOT HTTP AT ALL\r\n\r\n";
	_cleanup_resp_ struct http_resp g = http_raw(sbx_it.port, garbage, sizeof(garbage) - 1, 5);
	cr_expect(g.status < 0 || (g.status >= 400 && g.status < 500), "garbage: status %d",
		  g.status);
	expect_alive();
}

/* Settings each within its own limit (32 env values of 4000 bytes) but together larger
 * than one wire message (PROTO_MSG_MAX): the client sent too much, so 413, not a 500
 * "Message too long" from the encoder. Found writing fuzz_json's encode invariant. */
Test(badinput, settings_larger_than_one_message)
{
	const int n = 32;
	const size_t vlen = 4000;
	_cleanup_free_ char *body = malloc((size_t)n * (vlen + 16) + 64);
	size_t used;
	cr_assert(body);
	used = (size_t)sprintf(body, "{\"name\":\"big\",\"env\":{");
	for (int i = 0; i < n; i++) {
		used += (size_t)sprintf(body + used, "%s\"K%d\":\"", i ? "," : "", i);
		memset(body + used, 'v', vlen);
		used += vlen;
		body[used++] = '"';
	}
	strcpy(body + used, "}}");
	/* the same settings without the name, as a PATCH body */
	_cleanup_free_ char *patch = NULL;
	cr_assert(asprintf(&patch, "{%s", body + strlen("{\"name\":\"big\",")) > 0);
	size_t before = sandbox_count();
	_cleanup_resp_ struct http_resp c = http_req(&sbx_it, "POST", SANDBOXES, body, NULL);
	expect_error(&c, 413, "payload_too_large", "POST with settings over one message");
	_cleanup_resp_ struct http_resp u =
		http_req(&sbx_it, "PATCH", SANDBOXES "/sbx_nosuch", patch, NULL);
	expect_error(&u, 413, "payload_too_large", "PATCH with settings over one message");
	cr_expect_eq(sandbox_count(), before);
	expect_alive();
}
