/* sbxd keeps the registry of live process groups: when sbx-launcher dies (SIGKILL, no
 * chance to clean up) mid-run, sbxd kills the jail it left behind and restarts it. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include <criterion/criterion.h>

#include "cleanup.h"
#include "harness.h"

static void setup(void)
{
	sbx_require_bwrap();
	sbx_it_init();
}

TestSuite(launcher_crash, .init = setup, .fini = sbx_it_fini, .timeout = 90);

static bool pid_alive(pid_t pid)
{
	return pid > 0 && (kill(pid, 0) == 0 || errno == EPERM);
}

Test(launcher_crash, orphans_are_killed_and_launcher_restarts)
{
	char id[128], rnd[13], marker[24], code[512], path[512];
	sbx_create(&sbx_it, "{\"name\":\"crash\"}", id, sizeof(id));
	rand_alnum(rnd, 12);
	snprintf(marker, sizeof(marker), "mk_%s", rnd);
	snprintf(code, sizeof(code), "cp /bin/sleep ./%s || exit 9\n./%s 30\n", marker, marker);
	_cleanup_free_ char *body = run_body("sh", code, NULL, 60000);
	snprintf(path, sizeof(path), "/api/sandbox/sandboxes/%s/runs", id);

	pid_t launcher = proc_child_by_comm(sbx_it.pid, "sbx-launcher");
	cr_assert(launcher > 0, "no sbx-launcher child of sbxd %d", (int)sbx_it.pid);
	{ /* where /health reports the launcher's pid, it must be this one */
		_cleanup_resp_ struct http_resp h =
			http_req(&sbx_it, "GET", "/api/sandbox/health", NULL, NULL);
		long long hp = js_int(h.json, "processes.launcher.pid", -1);
		cr_expect(hp == -1 || hp == launcher, "/health says launcher %lld, /proc says %d", hp,
			  (int)launcher);
	}

	struct bg_req bg;
	cr_assert(bg_req_start(&bg, &sbx_it, "POST", path, body, 15) == 0);
	bool seen = false;
	for (int i = 0; i < 250 && !seen; i++) { /* up to 5 s for the jail to start */
		seen = proc_count_marker(marker) > 0;
		if (!seen)
			sleep_ms(20);
	}
	if (!seen) {
		_cleanup_resp_ struct http_resp early = bg_req_join(&bg);
		cr_assert_fail("the in-flight run never started: status %d body %s", early.status,
			       early.body ? early.body : "(none)");
	}

	cr_assert(kill(launcher, SIGKILL) == 0, "kill launcher %d: %s", (int)launcher,
		  strerror(errno));
	unsigned long long killed_at = mono_ms();

	int left = proc_wait_marker_gone(marker, 3000);
	cr_expect_eq(left, 0, "%d jailed process(es) %s outlived the launcher by 3 s", left, marker);

	/* the in-flight request must be answered (an error), not hang */
	_cleanup_resp_ struct http_resp r = bg_req_join(&bg);
	cr_expect(r.status >= 500 && r.status < 600,
		  "the in-flight request was not answered with a 5xx: %d %s", r.status,
		  r.body ? r.body : "(none)");
	cr_log_info("in-flight request answered %d after %llu ms: %s", r.status,
		    bg.finished_ms - killed_at, r.body ? r.body : "");

	/* a new launcher, and a new run works */
	pid_t fresh = -1;
	bool ok = false;
	for (unsigned long long deadline = mono_ms() + 10000; mono_ms() < deadline && !ok;) {
		fresh = proc_child_by_comm(sbx_it.pid, "sbx-launcher");
		if (fresh > 0 && fresh != launcher && pid_alive(fresh)) {
			_cleanup_resp_ struct http_resp h =
				http_req(&sbx_it, "GET", "/api/sandbox/health", NULL, NULL);
			ok = h.status == 200;
		}
		if (!ok)
			sleep_ms(100);
	}
	cr_assert(ok, "no new launcher answering within 10 s (child %d)", (int)fresh);

	_cleanup_free_ char *again = run_body("sh", "echo alive", NULL, 10000);
	_cleanup_resp_ struct http_resp a = {0};
	for (int i = 0; i < 20; i++) { /* the api may need a moment to get the new peer fd */
		http_resp_clear(&a);
		a = sbx_run(&sbx_it, id, again);
		if (a.status == 200)
			break;
		sleep_ms(250);
	}
	assert_status(a, 200);
	cr_expect_str_eq(js_str(a.json, "stdout") ? js_str(a.json, "stdout") : "", "alive\n");
	cr_expect(pid_alive(sbx_it.pid), "sbxd itself died");
}
