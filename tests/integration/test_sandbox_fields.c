/* The sandbox object through a real daemon: POST /sandboxes takes every field of
 * DESIGN.md §5 (mounts included, with the checks of POST /mounts), unknown and read-only
 * keys are refused by name, and what is stored but not enforced is said on the sandbox
 * and on each of its runs. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "cleanup.h"
#include "harness.h"

static char hostdir[64]; /* /var/tmp/sbx-fields-XXXXXX with shared/hello.txt */
static bool made_ssh;

static void setup(void)
{
	char p[256];
	int fd;
	sbx_require_bwrap();
	/* not under /tmp (each jail has its own); left 0700: a mount is staged by the
	 * launcher, so the jail uid never has to traverse its parents */
	snprintf(hostdir, sizeof(hostdir), "/var/tmp/sbx-fields-XXXXXX");
	cr_assert_not_null(mkdtemp(hostdir));
	snprintf(p, sizeof(p), "%s/shared", hostdir);
	cr_assert_eq(mkdir(p, 0755), 0);
	chmod(p, 0755);
	snprintf(p, sizeof(p), "%s/shared/hello.txt", hostdir);
	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	cr_assert(fd >= 0, "%s: %s", p, strerror(errno));
	cr_assert_eq(write(fd, "mounted-at-create\n", 18), 18);
	close(fd);
	chmod(p, 0644);
	if (geteuid() == 0 && access("/root/.ssh", F_OK) != 0 && mkdir("/root/.ssh", 0700) == 0)
		made_ssh = true;
	sbx_it_init();
}

static void teardown(void)
{
	char cmd[128];
	sbx_it_fini();
	snprintf(cmd, sizeof(cmd), "rm -rf %s", hostdir); /* our own temp tree */
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", hostdir);
	if (made_ssh)
		rmdir("/root/.ssh");
}

TestSuite(sandbox_fields, .init = setup, .fini = teardown, .timeout = 90);

static bool listed(const char *name)
{
	_cleanup_resp_ struct http_resp l = http_req(&sbx_it, "GET", "/api/sandbox/sandboxes", NULL, NULL);
	yajl_val arr = js_array(l.json, "sandboxes");
	cr_assert(l.status == 200 && arr, "%s", l.body);
	for (size_t i = 0; i < arr->u.array.len; i++) {
		const char *n = js_str(arr->u.array.values[i], "name");
		if (n && strcmp(n, name) == 0)
			return true;
	}
	return false;
}

/* The first element of the array at obj.path (a dotted object path), or NULL. */
static yajl_val first(yajl_val root, const char *path)
{
	yajl_val a = js_get(root, path);
	return a && YAJL_IS_ARRAY(a) && a->u.array.len ? a->u.array.values[0] : NULL;
}

Test(sandbox_fields, every_field_in_the_create_body_is_kept)
{
	char body[2048], id[128], real[4096];
	snprintf(body, sizeof(body),
	         "{\"name\":\"full\",\"backend\":\"direct\",\"fsMode\":\"allowlist\","
	         "\"readPaths\":[\"/opt\"],\"network\":false,"
	         "\"ports\":{\"listen\":[8000],\"connect\":[443],\"loopback\":[8899]},"
	         "\"mounts\":[{\"source\":\"%s/shared\",\"target\":\"data\",\"readOnly\":true}],"
	         "\"env\":{\"GREETING\":\"hi\"},"
	         "\"limits\":{\"timeoutMs\":20000,\"memoryMb\":256,\"pids\":128,\"outputBytes\":65536},"
	         "\"tracing\":false,\"image\":\"\"}",
	         hostdir);
	_cleanup_resp_ struct http_resp r = http_req(&sbx_it, "POST", "/api/sandbox/sandboxes", body, NULL);
	assert_status(r, 201);
	snprintf(id, sizeof(id), "%s", js_str(r.json, "id"));
	snprintf(real, sizeof(real), "%s/shared", hostdir);
	cr_expect_str_eq(js_str(r.json, "fsMode"), "allowlist");
	cr_expect(first(r.json, "readPaths") && strcmp(first(r.json, "readPaths")->u.string, "/opt") == 0,
	          "%s", r.body);
	cr_expect(first(r.json, "ports.loopback") && YAJL_GET_INTEGER(first(r.json, "ports.loopback")) == 8899,
	          "%s", r.body);
	cr_expect(first(r.json, "ports.connect") && YAJL_GET_INTEGER(first(r.json, "ports.connect")) == 443,
	          "%s", r.body);
	cr_expect(first(r.json, "ports.listen") && YAJL_GET_INTEGER(first(r.json, "ports.listen")) == 8000,
	          "%s", r.body);
	cr_expect(js_is_false(r.json, "network") && js_is_false(r.json, "tracing"), "%s", r.body);
	cr_expect_str_eq(js_str(r.json, "backend"), "direct");
	cr_expect_str_eq(js_str(r.json, "env.GREETING"), "hi");
	cr_expect_eq(js_int(r.json, "limits.memoryMb", 0), 256);
	cr_expect_eq(js_int(r.json, "limits.outputBytes", 0), 65536);
	cr_expect_eq(js_int(r.json, "limits.timeoutMs", 0), 20000);
	cr_expect_eq(js_int(r.json, "limits.pids", 0), 128);
	yajl_val m = js_array(r.json, "mounts");
	cr_assert(m && m->u.array.len == 1, "mounts in the create body were dropped: %s", r.body);
	cr_expect_str_eq(js_str(m->u.array.values[0], "target"), "data");
	cr_expect_str_eq(js_str(m->u.array.values[0], "source"), real); /* no links in it */
	cr_expect(js_is_true(m->u.array.values[0], "readOnly"));

	/* stored, not just echoed */
	char path[256];
	snprintf(path, sizeof(path), "/api/sandbox/sandboxes/%s/mounts", id);
	_cleanup_resp_ struct http_resp ml = http_req(&sbx_it, "GET", path, NULL, NULL);
	assert_status(ml, 200);
	cr_expect(strstr(ml.body, "\"target\":\"data\""), "%s", ml.body);
}

Test(sandbox_fields, a_mount_in_the_create_body_is_there_in_the_first_run)
{
	char body[512], id[128];
	snprintf(body, sizeof(body),
	         "{\"name\":\"first\",\"mounts\":[{\"source\":\"%s/shared\",\"target\":\"in/data\"}]}",
	         hostdir);
	sbx_create(&sbx_it, body, id, sizeof(id));
	_cleanup_free_ char *rb = run_body("sh", "cat in/data/hello.txt; echo x > in/data/new.txt || echo refused", NULL, 20000);
	_cleanup_resp_ struct http_resp r = sbx_run(&sbx_it, id, rb);
	assert_status(r, 200);
	const char *out = js_str(r.json, "stdout");
	cr_expect(out && strstr(out, "mounted-at-create"), "the first run did not see the mount: %s", r.body);
	cr_expect(out && strstr(out, "refused"), "a mount is read-only unless readOnly is false: %s", r.body);
	char p[256];
	snprintf(p, sizeof(p), "%s/shared/new.txt", hostdir);
	cr_expect(access(p, F_OK) != 0, "the jail wrote through a read-only mount");
}

Test(sandbox_fields, a_refused_mount_refuses_the_whole_create)
{
	struct {
		char source[512];
		const char *target;
		int status;
	} cases[5];
	int n = 0;
	if (access("/root/.ssh", F_OK) == 0) {
		snprintf(cases[n].source, sizeof(cases[n].source), "/root/./.ssh");
		cases[n].target = "keys";
		cases[n++].status = 403;
	}
	snprintf(cases[n].source, sizeof(cases[n].source), "%s", sbx_it.data_dir);
	cases[n].target = "engine";
	cases[n++].status = 403;
	snprintf(cases[n].source, sizeof(cases[n].source), "/etc");
	cases[n].target = "etc";
	cases[n++].status = 403;
	snprintf(cases[n].source, sizeof(cases[n].source), "%s/shared", hostdir);
	cases[n].target = "../escape";
	cases[n++].status = 400;
	snprintf(cases[n].source, sizeof(cases[n].source), "%s/does-not-exist", hostdir);
	cases[n].target = "gone";
	cases[n++].status = 400;

	for (int i = 0; i < n; i++) {
		char body[1024], name[32];
		snprintf(name, sizeof(name), "refused%d", i);
		/* a good mount first: nothing of the request may be kept */
		snprintf(body, sizeof(body),
		         "{\"name\":\"%s\",\"mounts\":[{\"source\":\"%s/shared\",\"target\":\"ok\"},"
		         "{\"source\":\"%s\",\"target\":\"%s\"}]}",
		         name, hostdir, cases[i].source, cases[i].target);
		_cleanup_resp_ struct http_resp r = http_req(&sbx_it, "POST", "/api/sandbox/sandboxes", body, NULL);
		cr_expect_eq(r.status, cases[i].status, "%s -> %s: %d %s", cases[i].source,
		             cases[i].target, r.status, r.body);
		cr_expect(!listed(name), "a refused create left sandbox %s behind", name);
	}
	/* and no workdir was made either */
	char sbdir[SBX_IT_ROOT_MAX + 64], cmd[SBX_IT_ROOT_MAX + 128];
	snprintf(sbdir, sizeof(sbdir), "%s/sandboxes", sbx_it.data_dir);
	snprintf(cmd, sizeof(cmd), "test -z \"$(ls -A %s)\"", sbdir);
	cr_expect_eq(system(cmd), 0, "a refused create left a workdir in %s", sbdir);
}

Test(sandbox_fields, unknown_and_read_only_fields_are_refused_by_name)
{
	static const struct {
		const char *body, *name;
	} cases[] = {
		{ "{\"name\":\"u\",\"foo\":1}", "unknown field: foo" },
		{ "{\"name\":\"u\",\"ports\":{\"listn\":[80]}}", "unknown field: ports.listn" },
		{ "{\"name\":\"u\",\"limits\":{\"memory\":64}}", "unknown field: limits.memory" },
		{ "{\"name\":\"u\",\"mounts\":[{\"source\":\"/var/tmp\",\"target\":\"t\",\"rw\":true}]}",
		  "unknown field: mounts[0].rw" },
		{ "{\"name\":\"u\",\"id\":\"sbx_mine\"}", "read-only field: id" },
		{ "{\"name\":\"u\",\"workdir\":\"/\"}", "read-only field: workdir" },
		{ "{\"name\":\"u\",\"sandboxId\":\"x\"}", "unknown field: sandboxId" },
	};
	char id[128], path[256];
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		_cleanup_resp_ struct http_resp r =
		    http_req(&sbx_it, "POST", "/api/sandbox/sandboxes", cases[i].body, NULL);
		cr_expect_eq(r.status, 400, "POST %s: %d %s", cases[i].body, r.status, r.body);
		cr_expect_str_eq(js_str(r.json, "error.message") ? js_str(r.json, "error.message") : "",
		                 cases[i].name, "POST %s", cases[i].body);
	}
	cr_expect(!listed("u"));

	sbx_create(&sbx_it, "{\"name\":\"patched\",\"tracing\":false}", id, sizeof(id));
	snprintf(path, sizeof(path), "/api/sandbox/sandboxes/%s", id);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		_cleanup_resp_ struct http_resp r = http_req(&sbx_it, "PATCH", path, cases[i].body, NULL);
		cr_expect_eq(r.status, 400, "PATCH %s: %d %s", cases[i].body, r.status, r.body);
		cr_expect_str_eq(js_str(r.json, "error.message") ? js_str(r.json, "error.message") : "",
		                 cases[i].name, "PATCH %s", cases[i].body);
	}
	/* a refused PATCH changed nothing, not even the fields it named correctly */
	_cleanup_resp_ struct http_resp p = http_req(&sbx_it, "PATCH", path, "{\"tracing\":true,\"bogus\":1}", NULL);
	cr_expect_eq(p.status, 400, "%s", p.body);
	_cleanup_resp_ struct http_resp g = http_req(&sbx_it, "GET", path, NULL, NULL);
	assert_status(g, 200);
	cr_expect(js_is_false(g.json, "tracing"), "%s", g.body);
	cr_expect_str_eq(js_str(g.json, "name"), "patched");
}

Test(sandbox_fields, patch_mounts_pass_the_same_checks)
{
	char id[128], path[256], body[1024];
	sbx_create(&sbx_it, "{\"name\":\"pm\"}", id, sizeof(id));
	snprintf(path, sizeof(path), "/api/sandbox/sandboxes/%s", id);
	snprintf(body, sizeof(body), "{\"mounts\":[{\"source\":\"%s\",\"target\":\"x\"}]}", sbx_it.data_dir);
	_cleanup_resp_ struct http_resp bad = http_req(&sbx_it, "PATCH", path, body, NULL);
	cr_expect_eq(bad.status, 403, "%s", bad.body);
	snprintf(body, sizeof(body),
	         "{\"mounts\":[{\"source\":\"%s/shared\",\"target\":\"x\",\"readOnly\":false}]}", hostdir);
	_cleanup_resp_ struct http_resp ok = http_req(&sbx_it, "PATCH", path, body, NULL);
	assert_status(ok, 200);
	yajl_val m = js_array(ok.json, "mounts");
	cr_assert(m && m->u.array.len == 1, "%s", ok.body);
	cr_expect(js_is_false(m->u.array.values[0], "readOnly"), "%s", ok.body);
	/* PATCH mounts replaces the list */
	_cleanup_resp_ struct http_resp clear = http_req(&sbx_it, "PATCH", path, "{\"mounts\":[]}", NULL);
	assert_status(clear, 200);
	cr_expect(strstr(clear.body, "\"mounts\":[]"), "%s", clear.body);
}

Test(sandbox_fields, ports_and_tracing_are_noted_on_the_sandbox_and_each_run)
{
	char id[128], path[256];
	sbx_create(&sbx_it, "{\"name\":\"noted\",\"ports\":{\"loopback\":[8899]},\"tracing\":true}", id,
	           sizeof(id));
	snprintf(path, sizeof(path), "/api/sandbox/sandboxes/%s", id);
	_cleanup_resp_ struct http_resp g = http_req(&sbx_it, "GET", path, NULL, NULL);
	assert_status(g, 200);
	const char *note = js_str(g.json, "note");
	cr_assert(note, "no note on a sandbox with ports and tracing: %s", g.body);
	/* a loopback port is a port rule: the note says it reaches that port on every host */
	cr_expect(strstr(note, "every remote host"), "%s", note);
	cr_expect(strstr(note, "tracing observes Python and Node"), "%s", note);

	_cleanup_free_ char *rb = run_body("sh", "echo ran", NULL, 20000);
	_cleanup_resp_ struct http_resp r = sbx_run(&sbx_it, id, rb);
	assert_status(r, 200);
	const char *rn = js_str(r.json, "note");
	cr_assert(rn, "the run has no note: %s", r.body);
	cr_expect(strstr(rn, "every remote host"), "%s", rn);
	cr_expect(strstr(rn, "tracing observes Python and Node"), "%s", rn);

	/* the run as recorded says it too */
	snprintf(path, sizeof(path), "/api/sandbox/sandboxes/%s/runs", id);
	_cleanup_resp_ struct http_resp h = http_req(&sbx_it, "GET", path, NULL, NULL);
	assert_status(h, 200);
	cr_expect(strstr(h.body, "tracing observes Python and Node"), "%s", h.body);

	/* with neither, no note */
	sbx_create(&sbx_it, "{\"name\":\"plain\"}", id, sizeof(id));
	snprintf(path, sizeof(path), "/api/sandbox/sandboxes/%s", id);
	_cleanup_resp_ struct http_resp p = http_req(&sbx_it, "GET", path, NULL, NULL);
	cr_expect_null(js_get(p.json, "note"), "%s", p.body);
}
