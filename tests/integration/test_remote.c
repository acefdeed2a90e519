/* --allow-remote end to end: sbxd and sbx-api agree on the listen address, the token is
 * then mandatory, and a refused combination stops sbxd at once instead of restarting
 * sbx-api for ever. Only ever connects to 127.0.0.1. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <criterion/criterion.h>

#include "cleanup.h"
#include "harness.h"

TestSuite(remote, .timeout = 60);

static bool log_has(const struct sbxd *d, const char *needle)
{
	_cleanup_fclose_ FILE *f = fopen(d->log_path, "re");
	char line[4096];
	while (f && fgets(line, sizeof(line), f))
		if (strstr(line, needle))
			return true;
	return false;
}

Test(remote, wildcard_listen_serves_with_the_token_only)
{
	struct sbxd d = { .pid = -1, .listen_host = "0.0.0.0", .extra_args = { "--allow-remote" } };
	char host[64];
	int r = sbxd_start(&d);
	if (r < 0)
		sbxd_dump_log(&d);
	cr_assert_eq(r, 0, "sbxd --allow-remote --listen 0.0.0.0:P did not come up");
	snprintf(host, sizeof(host), "Host: 127.0.0.1:%u", d.port);

	{
		_cleanup_resp_ struct http_resp h = http_req(&d, "GET", "/api/sandbox/health", NULL, NULL);
		assert_status(h, 200);
	}
	{
		const char *hdrs[] = { host, NULL };
		_cleanup_resp_ struct http_resp h =
			http_send(d.port, "GET", "/api/sandbox/health", hdrs, NULL, 0, 10);
		assert_status(h, 401);
	}
	{
		const char *hdrs[] = { host, "Authorization: Bearer 0000000000000000", NULL };
		_cleanup_resp_ struct http_resp h =
			http_send(d.port, "GET", "/api/sandbox/health", hdrs, NULL, 0, 10);
		assert_status(h, 401);
	}
	/* sbx-api accepted the address on its first start: no restart loop */
	sleep_ms(300);
	{
		_cleanup_resp_ struct http_resp h = http_req(&d, "GET", "/api/sandbox/health", NULL, NULL);
		assert_status(h, 200);
		cr_assert_eq(js_int(h.json, "processes.apiRestarts", -1), 0, "body: %s", h.body);
	}
	sbxd_stop(&d);
}

static void expect_refused_at_once(struct sbxd *d, const char *message)
{
	unsigned long long t0 = mono_ms();
	int r = sbxd_start(d);
	unsigned long long took = mono_ms() - t0;
	sbxd_stop(d);
	cr_assert_eq(r, -ECHILD, "sbxd started (%d) where it must refuse", r);
	cr_assert(WIFEXITED(d->exit_status) && WEXITSTATUS(d->exit_status) != 0,
	          "status 0x%x", d->exit_status);
	cr_assert_lt(took, 3000ull, "took %llu ms: not refused at once", took);
	cr_assert(log_has(d, message), "no \"%s\" in the log", message);
}

Test(remote, no_auth_with_allow_remote_is_refused)
{
	struct sbxd d = { .pid = -1, .listen_host = "0.0.0.0",
		          .extra_args = { "--allow-remote", "--no-auth" } };
	expect_refused_at_once(&d, "--no-auth cannot be combined with --allow-remote");
}

Test(remote, no_auth_with_allow_remote_is_refused_on_loopback_too)
{
	struct sbxd d = { .pid = -1, .extra_args = { "--allow-remote", "--no-auth" } };
	expect_refused_at_once(&d, "--no-auth cannot be combined with --allow-remote");
}

Test(remote, non_loopback_without_allow_remote_is_refused)
{
	struct sbxd d = { .pid = -1, .listen_host = "0.0.0.0" };
	expect_refused_at_once(&d, "without --allow-remote");
}
