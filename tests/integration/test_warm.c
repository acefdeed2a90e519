/* Jails built ahead (issue 11): a run given a prepared jail is fenced exactly like a cold
 * one, a PATCH in between means the prepared jail is never used, and a killed launcher
 * leaves no prepared jail behind. Which runs were warm is read from the launcher's log. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "cleanup.h"
#include "harness.h"

#define WAIT_WARM_MS 5000u

static struct sbxd d = { .pid = -1, .extra_args = { "--log-level", "debug" } };

static void setup(void)
{
	sbx_require_bwrap();
	int r = sbxd_start(&d);
	if (r < 0) {
		sbxd_dump_log(&d);
		cr_assert_fail("sbxd did not start: %s", strerror(-r));
	}
}

static void teardown(void) { sbxd_stop(&d); }

TestSuite(warm, .init = setup, .fini = teardown, .timeout = 120);

static bool log_has(const char *a, const char *b)
{
	_cleanup_fclose_ FILE *f = fopen(d.log_path, "re");
	char line[4096];
	while (f && fgets(line, sizeof(line), f))
		if (strstr(line, a) && (!b || strstr(line, b)))
			return true;
	return false;
}

/* Wait until the launcher says a jail is built ahead for sandbox id. */
static void wait_built(const char *id)
{
	for (unsigned t = 0; t < WAIT_WARM_MS; t += 20) {
		if (log_has("a jail is built ahead for", id))
			return;
		sleep_ms(20);
	}
	sbxd_dump_log(&d);
	cr_assert_fail("no jail was built ahead for %s", id);
}

/* A run; its id and stdout copied out, its limits object printed as JSON-ish text. */
static void run(const char *id, const char *code, char *ret_run, size_t runsz, char *out,
                size_t outsz, char *limits, size_t limsz)
{
	_cleanup_free_ char *body = run_body("sh", code, NULL, 0);
	_cleanup_resp_ struct http_resp r = sbx_run(&d, id, body);
	assert_status(r, 200);
	cr_assert_eq(js_int(r.json, "exitCode", -1), 0, "%s", r.body);
	snprintf(ret_run, runsz, "%s", js_str(r.json, "id"));
	snprintf(out, outsz, "%s", js_str(r.json, "stdout"));
	const char *l = strstr(r.body, "\"limits\":");
	cr_assert_not_null(l);
	snprintf(limits, limsz, "%.*s", (int)(strchr(l, '}') - l + 1), l);
}

/* What the jail is, seen from inside: uid, credentials, seccomp, no_new_privs, and for each
 * namespace whether it differs from the host's (the inode numbers differ per jail). */
static const char *probe_code(char *buf, size_t bufsz)
{
	static const char *const ns[] = { "user", "mnt", "pid", "net", "ipc", "uts", "cgroup" };
	size_t n = (size_t)snprintf(buf, bufsz, "id; grep -E '^(Cap(Inh|Prm|Eff|Bnd|Amb)|NoNewPrivs|Seccomp):' /proc/self/status; ");
	for (size_t i = 0; i < sizeof(ns) / sizeof(ns[0]); i++) {
		char host[64] = "";
		char p[64];
		snprintf(p, sizeof(p), "/proc/self/ns/%s", ns[i]);
		ssize_t k = readlink(p, host, sizeof(host) - 1);
		cr_assert_gt(k, 0);
		host[k] = '\0';
		n += (size_t)snprintf(buf + n, bufsz - n,
		                      "[ \"$(readlink /proc/self/ns/%s)\" = '%s' ] && echo %s=host || echo %s=own; ",
		                      ns[i], host, ns[i], ns[i]);
	}
	return buf;
}

Test(warm, a_warm_run_is_fenced_exactly_like_a_cold_one)
{
	char id[64], code[4096], r1[64], r2[64], o1[2048], o2[2048], l1[512], l2[512];
	_cleanup_resp_ struct http_resp p1 = { 0 }, p2 = { 0 };
	char path[256];

	sbx_create(&d, "{\"name\":\"warm\"}", id, sizeof(id));
	snprintf(path, sizeof(path), "/api/sandbox/sandboxes/%s/profile", id);
	probe_code(code, sizeof(code));
	run(id, code, r1, sizeof(r1), o1, sizeof(o1), l1, sizeof(l1));
	cr_assert(!log_has("given a jail built ahead", r1), "the first run cannot be warm");
	p1 = http_req(&d, "GET", path, NULL, NULL);
	wait_built(id);
	run(id, code, r2, sizeof(r2), o2, sizeof(o2), l2, sizeof(l2));
	cr_assert(log_has("given a jail built ahead", r2), "the second run was not warm");
	p2 = http_req(&d, "GET", path, NULL, NULL);

	cr_assert_str_eq(o1, o2, "cold:\n%s\nwarm:\n%s", o1, o2);
	cr_assert(strstr(o1, "user=own") && strstr(o1, "mnt=own") && strstr(o1, "pid=own") &&
	          strstr(o1, "net=own"), "%s", o1);
	cr_assert(strstr(o1, "Seccomp:\t2") && strstr(o1, "NoNewPrivs:\t1"), "%s", o1);
	cr_assert_str_eq(l1, l2);
	assert_status(p1, 200);
	cr_assert_str_eq(p1.body, p2.body, "the profile changed between a cold and a warm run");
}

Test(warm, a_patch_between_build_and_run_gives_the_new_settings)
{
	char id[64], r1[64], r2[64], out[256], lim[512], path[256];
	sbx_create(&d, "{\"name\":\"patched\",\"env\":{\"X\":\"old\"}}", id, sizeof(id));
	run(id, "echo $X", r1, sizeof(r1), out, sizeof(out), lim, sizeof(lim));
	cr_assert_str_eq(out, "old\n");
	wait_built(id);
	snprintf(path, sizeof(path), "/api/sandbox/sandboxes/%s", id);
	{
		_cleanup_resp_ struct http_resp p =
			http_req(&d, "PATCH", path, "{\"env\":{\"X\":\"new\"}}", NULL);
		assert_status(p, 200);
	}
	run(id, "echo $X", r2, sizeof(r2), out, sizeof(out), lim, sizeof(lim));
	cr_assert_str_eq(out, "new\n", "the run used the jail built for the old settings");
	cr_assert(!log_has("given a jail built ahead", r2));
}

Test(warm, a_killed_launcher_leaves_no_prepared_jail)
{
	char id[64], r1[64], out[256], lim[512];
	sbx_create(&d, "{\"name\":\"orphan\"}", id, sizeof(id));
	long uid = sbx_workdir_uid(&d, id);
	cr_assert_gt(uid, 0);
	run(id, "true", r1, sizeof(r1), out, sizeof(out), lim, sizeof(lim));
	wait_built(id);
	cr_assert_gt(proc_count_uid((uid_t)uid), 0, "no process of the prepared jail is alive");
	pid_t launcher = proc_child_by_comm(d.pid, "sbx-launcher");
	cr_assert_gt(launcher, 0);
	cr_assert_eq(kill(launcher, SIGKILL), 0);
	cr_assert_eq(proc_wait_uid_gone((uid_t)uid, 5000), 0,
	             "the prepared jail outlived its launcher");
}
