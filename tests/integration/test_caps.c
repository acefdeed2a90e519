/* The capability probe never lies and never stalls runs: with a docker client that hangs
 * for ever, /caps answers within 4.5 s saying why, and a direct run started meanwhile is
 * not delayed by the probe. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "cleanup.h"
#include "harness.h"

static struct sbxd d;
static char fakedir[64];

static void setup(void)
{
	char path[128];
	sbx_require_bwrap();
	snprintf(fakedir, sizeof(fakedir), "/tmp/sbx-fakedocker-XXXXXX");
	cr_assert_not_null(mkdtemp(fakedir));
	/* a broken Docker Desktop: `docker info` never answers */
	cr_assert_eq(sbx_fake_program(fakedir, "docker", "#!/bin/sh\nexec sleep 1000\n", path,
	                              sizeof(path)), 0);
	memset(&d, 0, sizeof(d));
	snprintf(d.docker, sizeof(d.docker), "%s", path);
	cr_assert_eq(sbxd_start(&d), 0, "sbxd did not start");
}

static void teardown(void)
{
	char cmd[128];
	sbxd_stop(&d);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", fakedir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", fakedir);
}

TestSuite(caps, .init = setup, .fini = teardown, .timeout = 60);

Test(caps, hanging_docker_is_reported_and_does_not_delay_runs)
{
	char id[128];
	struct bg_req caps;
	sbx_create(&d, "{\"name\":\"fast\"}", id, sizeof(id));
	/* re-probe so the hang certainly starts now */
	unsigned long long t0 = mono_ms();
	cr_assert_eq(bg_req_start(&caps, &d, "POST", "/api/sandbox/caps/recheck", NULL, 30), 0);
	sleep_ms(200);
	unsigned long long r0 = mono_ms();
	_cleanup_free_ char *body = run_body("sh", "echo fast", NULL, 10000);
	_cleanup_resp_ struct http_resp run = sbx_run(&d, id, body);
	unsigned long long run_ms = mono_ms() - r0;
	assert_status(run, 200);
	cr_expect(strstr(run.body, "\"stdout\":\"fast\\n\""), "%s", run.body);
	cr_expect_lt(run_ms, 3000, "a direct run waited %llu ms on the docker probe", run_ms);
	_cleanup_resp_ struct http_resp c = bg_req_join(&caps);
	unsigned long long caps_ms = mono_ms() - t0;
	assert_status(c, 200);
	cr_expect_lt(caps_ms, 4500, "caps took %llu ms", caps_ms);
	cr_expect(js_is_false(c.json, "docker.ok"), "a hanging docker was called usable: %s", c.body);
	const char *why = js_str(c.json, "docker.reason");
	cr_expect(why && (strstr(why, "4") || strstr(why, "time")), "no reason given: %s", c.body);
	cr_expect(js_is_true(c.json, "direct.ok"), "bwrap probe failed: %s", c.body);
	/* the cached answer comes at once */
	unsigned long long t1 = mono_ms();
	_cleanup_resp_ struct http_resp again = http_req(&d, "GET", "/api/sandbox/caps", NULL, NULL);
	assert_status(again, 200);
	cr_expect_lt(mono_ms() - t1, 1000, "the cache did not answer");
}

/* No backend can run anything: a bwrap that fails every jail (as on a kernel without
 * unprivileged user namespaces) and a docker without an engine. */
static struct sbxd broken;
static char brokendir[64];

static void broken_setup(void)
{
	char path[128];
	snprintf(brokendir, sizeof(brokendir), "/tmp/sbx-brokenbwrap-XXXXXX");
	cr_assert_not_null(mkdtemp(brokendir));
	/* the probe runs the fake as a jail uid: sbx_fake_program makes it reachable */
	cr_assert_eq(sbx_fake_program(brokendir, "bwrap",
	                              "#!/bin/sh\n[ \"$1\" = --version ] && { echo 'bubblewrap 0.8.0'; exit 0; }\n"
	                              "echo 'bwrap: setting up uid map: Permission denied' >&2\nexit 1\n",
	                              path, sizeof(path)), 0);
	memset(&broken, 0, sizeof(broken));
	snprintf(broken.bwrap, sizeof(broken.bwrap), "%s", path);
	cr_assert_eq(sbx_fake_program(brokendir, "docker",
	                              "#!/bin/sh\necho 'Cannot connect to the Docker daemon' >&2\nexit 1\n",
	                              path, sizeof(path)), 0);
	snprintf(broken.docker, sizeof(broken.docker), "%s", path);
	cr_assert_eq(sbxd_start(&broken), 0, "sbxd did not start");
}

static void broken_teardown(void)
{
	char cmd[128];
	sbxd_stop(&broken);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", brokendir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", brokendir);
}

TestSuite(nobackend, .init = broken_setup, .fini = broken_teardown, .timeout = 60);

Test(nobackend, routes_answer_503_and_switches_on_fail)
{
	/* the caps answer waits for the probes, and says why */
	_cleanup_resp_ struct http_resp c = http_req(&broken, "GET", "/api/sandbox/caps", NULL, NULL);
	assert_status(c, 200);
	cr_expect(js_is_false(c.json, "direct.ok"), "%s", c.body);
	cr_expect(strstr(c.body, "Permission denied"), "no reason: %s", c.body);
	cr_expect_str_eq(js_str(c.json, "isolation"), "unavailable", "%s", c.body);
	_cleanup_resp_ struct http_resp l = http_req(&broken, "GET", "/api/sandbox/sandboxes", NULL, NULL);
	cr_expect_eq(l.status, 503, "%d %s", l.status, l.body);
	cr_expect(strstr(l.body, "engine_unavailable") && strstr(l.body, "Permission denied"), "%s", l.body);
	_cleanup_resp_ struct http_resp cr = http_req(&broken, "POST", "/api/sandbox/sandboxes",
	                                              "{\"name\":\"x\"}", NULL);
	cr_expect_eq(cr.status, 503, "%d %s", cr.status, cr.body);
	/* execShell on: the command fails, it never runs raw */
	_cleanup_resp_ struct http_resp e = http_req(&broken, "POST", "/api/sandbox/exec",
	                                             "{\"code\":\"echo raw\"}", NULL);
	cr_expect_eq(e.status, 503, "%d %s", e.status, e.body);
	cr_expect(!strstr(e.body, "raw\\n"), "ran unsandboxed: %s", e.body);
	/* execShell off: as before the sandbox existed, and labelled */
	_cleanup_resp_ struct http_resp p = http_req(&broken, "PUT", "/api/sandbox/exec-policy",
	                                             "{\"execShell\":false}", NULL);
	assert_status(p, 200);
	_cleanup_resp_ struct http_resp e2 = http_req(&broken, "POST", "/api/sandbox/exec",
	                                              "{\"code\":\"echo before\"}", NULL);
	assert_status(e2, 200);
	cr_expect_str_eq(js_str(e2.json, "isolation"), "none", "%s", e2.body);
	_cleanup_resp_ struct http_resp h = http_req(&broken, "GET", "/api/sandbox/health", NULL, NULL);
	assert_status(h, 200);
}
