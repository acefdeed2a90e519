/* The docker backend against a fake `docker` that records its arguments and answers, and
 * against the real engine where one answers. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "cleanup.h"
#include "harness.h"

static struct sbxd d;
static char fakedir[64], logpath[128];

static void setup(void)
{
	char path[128], script[2048];
	snprintf(fakedir, sizeof(fakedir), "/tmp/sbx-fakedocker-XXXXXX");
	cr_assert_not_null(mkdtemp(fakedir));
	snprintf(logpath, sizeof(logpath), "%s/calls.log", fakedir);
	snprintf(script, sizeof(script),
	         "#!/bin/sh\n"
	         "printf '%%s\\n' \"$*\" >> %s\n"
	         "[ -n \"$SBX_LEAK\" ] && echo CLIENT-ENV-LEAK >> %s\n"
	         "case \"$1\" in\n"
	         "  info) exit 0 ;;\n"
	         "  container) [ -e %s/running ] && { echo true; exit 0; }; exit 1 ;;\n"
	         "  run) touch %s/running; echo 0123456789ab; exit 0 ;;\n"
	         /* a stand-in engine: the program arrives on stdin of sh -s, in the workdir */
	         "  exec) exec /bin/sh -s ;;\n"
	         "  rm) rm -f %s/running; exit 0 ;;\n"
	         "esac\nexit 2\n",
	         logpath, logpath, fakedir, fakedir, fakedir);
	cr_assert_eq(sbx_fake_program(fakedir, "docker", script, path, sizeof(path)), 0);
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

TestSuite(docker_fake, .init = setup, .fini = teardown, .timeout = 60);

static char *read_log(void)
{
	FILE *f = fopen(logpath, "r");
	static char buf[65536];
	size_t n = 0;
	buf[0] = '\0';
	if (f) {
		n = fread(buf, 1, sizeof(buf) - 1, f);
		buf[n] = '\0';
		fclose(f);
	}
	return buf;
}

static int count(const char *hay, const char *needle)
{
	int n = 0;
	for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

Test(docker_fake, container_per_sandbox_exec_per_run_removed_with_it)
{
	char id[128], want[512], wd[1024];
	/* the first caps probe must have seen `docker info` answer */
	_cleanup_resp_ struct http_resp caps = http_req(&d, "GET", "/api/sandbox/caps", NULL, NULL);
	assert_status(caps, 200);
	cr_assert(js_is_true(caps.json, "docker.ok"), "%s", caps.body);
	sbx_create(&d, "{\"name\":\"dk\",\"backend\":\"docker\",\"env\":{\"SBX_LEAK\":\"1\"},"
	           "\"limits\":{\"memoryMb\":256,\"pids\":64}}",
	           id, sizeof(id));
	cr_assert_eq(sbx_workdir_path(&d, id, wd, sizeof(wd)), 0);

	_cleanup_free_ char *b1 = run_body("sh", "echo via-docker", NULL, 10000);
	_cleanup_resp_ struct http_resp r1 = sbx_run(&d, id, b1);
	assert_status(r1, 200);
	cr_expect_str_eq(js_str(r1.json, "isolation"), "docker", "%s", r1.body);
	cr_expect_str_eq(js_str(r1.json, "stdout"), "via-docker\n", "%s", r1.body);
	cr_expect(strstr(r1.body, "\"memory\":\"docker\""), "%s", r1.body);
	_cleanup_free_ char *b2 = run_body("python", "print(6*7)", NULL, 10000);
	_cleanup_resp_ struct http_resp r2 = sbx_run(&d, id, b2);
	assert_status(r2, 200);
	cr_expect_str_eq(js_str(r2.json, "stdout"), "42\n", "%s", r2.body);

	/* a deadline ends the client and what it started in the container */
	_cleanup_free_ char *b3 = run_body("sh", "sleep 30", NULL, 500);
	_cleanup_resp_ struct http_resp r3 = sbx_run(&d, id, b3);
	assert_status(r3, 200);
	cr_expect(js_is_true(r3.json, "timedOut"), "%s", r3.body);
	snprintf(want, sizeof(want), "exec sbx-%s kill -KILL -1", id);
	for (int i = 0; i < 50 && !strstr(read_log(), want); i++)
		sleep_ms(100);
	cr_expect(strstr(read_log(), want), "the container's processes were not killed: %s", read_log());

	const char *log = read_log();
	cr_log_info("docker was called as:\n%s", log);
	snprintf(want, sizeof(want), "run -d --name sbx-%s", id);
	cr_expect_eq(count(log, want), 1, "one container per sandbox, reused: %s", log);
	for (const char *const *f = (const char *const[]){ "--network none", "--memory 256m --memory-swap 256m",
		                                           "--pids-limit 64", "--cap-drop ALL",
		                                           "--security-opt no-new-privileges",
		                                           "--entrypoint sleep", "infinity", NULL };
	     *f; f++)
		cr_expect(strstr(log, *f), "docker run lacks %s: %s", *f, log);
	snprintf(want, sizeof(want), "type=bind,source=%s,target=/work", wd);
	cr_expect(strstr(log, want), "the workdir is not at /work: %s", log);
	snprintf(want, sizeof(want), "--user %ld:%ld", sbx_workdir_uid(&d, id), sbx_workdir_uid(&d, id));
	cr_expect(strstr(log, want), "the container does not run as the jail uid: %s", log);
	snprintf(want, sizeof(want), "exec -i --workdir /work --env HOME=/work --env SBX_LEAK=1 sbx-%s sh -s", id);
	cr_expect_eq(count(log, want), 3, "each run is one docker exec: %s", log);
	cr_expect(!strstr(log, " -c "), "a shell command line reached docker: %s", log);
	/* the sandbox's env goes to the container as --env, never to the root client */
	cr_expect(strstr(log, "--env SBX_LEAK=1"), "%s", log);
	cr_expect(!strstr(log, "CLIENT-ENV-LEAK"), "the sandbox env reached the docker client: %s", log);

	/* the profile shows the same argv */
	char path[256];
	snprintf(path, sizeof(path), "/api/sandbox/sandboxes/%s/profile", id);
	_cleanup_resp_ struct http_resp pr = http_req(&d, "GET", path, NULL, NULL);
	assert_status(pr, 200);
	cr_expect_str_eq(js_str(pr.json, "kind"), "docker", "%s", pr.body);

	snprintf(path, sizeof(path), "/api/sandbox/sandboxes/%s", id);
	_cleanup_resp_ struct http_resp del = http_req(&d, "DELETE", path, NULL, NULL);
	assert_status(del, 200);
	snprintf(want, sizeof(want), "rm -f sbx-%s", id);
	for (int i = 0; i < 50 && !strstr(read_log(), want); i++)
		sleep_ms(100);
	cr_expect(strstr(read_log(), want), "the container was not removed: %s", read_log());
}

Test(docker_real, engine_runs_a_sandbox)
{
	int st = system("docker info >/dev/null 2>&1");
	if (st != 0) {
		printf("SKIP: no docker engine answers `docker info` on this machine\n");
		cr_skip_test("no docker engine");
	}
	/* an engine exists: the same flow against it */
	struct sbxd real;
	memset(&real, 0, sizeof(real));
	cr_assert_eq(sbxd_start(&real), 0);
	char id[128];
	sbx_create(&real, "{\"name\":\"real\",\"backend\":\"docker\",\"image\":\"python:3.12-slim\"}", id,
	           sizeof(id));
	_cleanup_free_ char *b = run_body("sh", "id -u; echo in-container", NULL, 120000);
	_cleanup_resp_ struct http_resp r = sbx_run(&real, id, b);
	cr_expect_eq(r.status, 200, "%s", r.body);
	cr_expect(strstr(r.body, "in-container"), "%s", r.body);
	sbxd_stop(&real);
}
