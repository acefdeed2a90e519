/* The fences of DESIGN.md §5 and §10 observed through a real daemon: read modes, mounts,
 * the syscall filter, privileges and resource limits. */
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

static char hostdir[64]; /* /var/tmp/sbx-fence-XXXXXX: allowed/, sibling/ with a file each */
static bool made_ssh;

static void write_file(const char *path, const char *text, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	cr_assert(fd >= 0, "create %s: %s", path, strerror(errno));
	cr_assert(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
	close(fd);
	chmod(path, mode);
}

static void setup(void)
{
	char p[256];
	sbx_require_bwrap();
	/* not under /tmp: every jail gets a private /tmp, so open mode would not see it */
	snprintf(hostdir, sizeof(hostdir), "/var/tmp/sbx-fence-XXXXXX");
	cr_assert_not_null(mkdtemp(hostdir));
	/* 0755: the strict and open tests read through the host's own paths */
	chmod(hostdir, 0755);
	snprintf(p, sizeof(p), "%s/allowed", hostdir);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/allowed/a.txt", hostdir);
	write_file(p, "allowed-content\n", 0644);
	snprintf(p, sizeof(p), "%s/sibling", hostdir);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/sibling/b.txt", hostdir);
	write_file(p, "sibling-content\n", 0644);
	snprintf(p, sizeof(p), "%s/rootonly.txt", hostdir);
	write_file(p, "root-secret\n", 0600);
	/* a user's own 0700 directory: the jail writes it through an idmapped mount */
	snprintf(p, sizeof(p), "%s/rw", hostdir);
	mkdir(p, 0700);
	cr_assert(geteuid() != 0 || chown(p, 1000, 1000) == 0);
	snprintf(p, sizeof(p), "%s/ro", hostdir);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/ro/keep.txt", hostdir);
	write_file(p, "unchanged\n", 0666);
	if (geteuid() == 0 && access("/root/.ssh", F_OK) != 0 && mkdir("/root/.ssh", 0700) == 0)
		made_ssh = true;
	/* the fence tests check what a run leaves behind; jails built ahead stay between runs
	 * on purpose and have their own tests (test_warm.c) */
	sbx_it.extra_args[0] = "--no-warm";
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

TestSuite(fence, .init = setup, .fini = teardown, .timeout = 90);

static struct http_resp run(const char *id, const char *lang, const char *code)
{
	_cleanup_free_ char *body = run_body(lang, code, NULL, 20000);
	cr_assert(body);
	return sbx_run(&sbx_it, id, body);
}

static const char *out_of(const struct http_resp *r)
{
	const char *s = js_str(r->json, "stdout");
	return s ? s : "";
}

static void create_with(const char *json, char *id)
{
	sbx_create(&sbx_it, json, id, 128);
}

Test(fence, strict_blocks_outside_reads_but_python_has_its_stdlib)
{
	char id[128], code[512];
	create_with("{\"name\":\"strict\",\"fsMode\":\"strict\"}", id);
	snprintf(code, sizeof(code),
	         "import json, os, ssl, sqlite3, subprocess\n"
	         "print('stdlib-ok')\n"
	         "try:\n    open('%s/allowed/a.txt').read(); print('READ')\n"
	         "except Exception as e: print('blocked', type(e).__name__)\n",
	         hostdir);
	_cleanup_resp_ struct http_resp r = run(id, "python", code);
	assert_status(r, 200);
	cr_expect(strstr(out_of(&r), "stdlib-ok"), "stdlib import failed: %s", r.body);
	cr_expect(strstr(out_of(&r), "blocked") && !strstr(out_of(&r), "READ"),
	          "strict read a host file: %s", r.body);
}

Test(fence, allowlist_opens_exactly_the_declared_directory)
{
	char id[128], json[256], code[512];
	snprintf(json, sizeof(json), "{\"name\":\"allow\",\"fsMode\":\"allowlist\",\"readPaths\":[\"%s/allowed\"]}",
	         hostdir);
	create_with(json, id);
	snprintf(code, sizeof(code), "cat %s/allowed/a.txt; cat %s/sibling/b.txt; echo x > %s/allowed/new || echo ro",
	         hostdir, hostdir, hostdir);
	_cleanup_resp_ struct http_resp r = run(id, "sh", code);
	assert_status(r, 200);
	cr_expect(strstr(out_of(&r), "allowed-content"), "declared dir unreadable: %s", r.body);
	cr_expect(!strstr(out_of(&r), "sibling-content"), "the sibling was readable: %s", r.body);
	cr_expect(strstr(out_of(&r), "ro"), "the read path was writable: %s", r.body);
}

Test(fence, open_reads_the_disk_but_not_secrets)
{
	char id[128], other[128], code[1024], otherwd[1024];
	create_with("{\"name\":\"other\"}", other);
	cr_assert_eq(sbx_workdir_path(&sbx_it, other, otherwd, sizeof(otherwd)), 0);
	snprintf(code, sizeof(code), "%s/mine.txt", otherwd);
	write_file(code, "other-sandbox\n", 0644);
	create_with("{\"name\":\"open\",\"fsMode\":\"open\"}", id);
	snprintf(code, sizeof(code),
	         "cat %s/sibling/b.txt\n"
	         "cat /etc/shadow 2>/dev/null && echo SHADOW\n"
	         "cat %s/rootonly.txt 2>/dev/null && echo ROOTFILE\n"
	         "cat %s/api.token 2>/dev/null && echo TOKEN\n"
	         "ls %s/sbx.db 2>/dev/null && echo DB\n"
	         "cat %s/mine.txt 2>/dev/null && echo OTHER\n"
	         "echo x > /etc/sbx-open-write 2>/dev/null && echo WROTE\n"
	         "echo done\n",
	         hostdir, hostdir, sbx_it.data_dir, sbx_it.data_dir, otherwd);
	_cleanup_resp_ struct http_resp r = run(id, "sh", code);
	assert_status(r, 200);
	const char *o = out_of(&r);
	cr_expect(strstr(o, "sibling-content"), "open could not read the disk: %s", r.body);
	cr_expect(strstr(o, "done"), "%s", r.body);
	for (const char *const *w = (const char *const[]){ "SHADOW", "ROOTFILE", "TOKEN", "DB", "OTHER",
		                                           "WROTE", NULL };
	     *w; w++)
		cr_expect(!strstr(o, *w), "open mode exposed %s: %s", *w, r.body);
	cr_expect(access("/etc/sbx-open-write", F_OK) != 0, "the jail wrote to the host's /etc");
}

Test(fence, read_only_and_read_write_mounts)
{
	char id[128], json[512], path[256], buf[64] = "";
	create_with("{\"name\":\"mounts\"}", id);
	snprintf(json, sizeof(json), "{\"source\":\"%s/ro\",\"target\":\"data\",\"readOnly\":true}", hostdir);
	snprintf(path, sizeof(path), "/api/sandbox/sandboxes/%s/mounts", id);
	_cleanup_resp_ struct http_resp m1 = http_req(&sbx_it, "POST", path, json, NULL);
	assert_status(m1, 201);
	snprintf(json, sizeof(json), "{\"source\":\"%s/rw\",\"target\":\"out\",\"readOnly\":false}", hostdir);
	_cleanup_resp_ struct http_resp m2 = http_req(&sbx_it, "POST", path, json, NULL);
	assert_status(m2, 201);
	_cleanup_resp_ struct http_resp r = run(id, "sh",
	                                        "cat data/keep.txt; echo changed > data/keep.txt || echo refused;"
	                                        " echo through > out/new.txt && echo wrote");
	assert_status(r, 200);
	cr_expect(strstr(out_of(&r), "unchanged") && strstr(out_of(&r), "refused"), "%s", r.body);
	snprintf(path, sizeof(path), "%s/ro/keep.txt", hostdir);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	cr_assert(fd >= 0);
	cr_assert(read(fd, buf, sizeof(buf) - 1) > 0);
	close(fd);
	cr_expect_str_eq(buf, "unchanged\n", "the read-only mount's file changed");
	snprintf(path, sizeof(path), "%s/rw/new.txt", hostdir);
	struct stat st;
	cr_expect(lstat(path, &st) == 0, "the read-write mount did not write through: %s", r.body);
	cr_expect(geteuid() != 0 || (st.st_uid == 1000 && st.st_gid == 1000), "the jail's file is owned by %u:%u",
	          (unsigned)st.st_uid, (unsigned)st.st_gid);
	/* and the route lists, then removes */
	snprintf(path, sizeof(path), "/api/sandbox/sandboxes/%s/mounts?target=out", id);
	_cleanup_resp_ struct http_resp d = http_req(&sbx_it, "DELETE", path, NULL, NULL);
	assert_status(d, 200);
	cr_expect(!strstr(d.body, "\"out\""), "%s", d.body);
}

Test(fence, forbidden_mount_sources_refused)
{
	char id[128], json[512], path[256], link[256];
	const char *bad[8];
	int n = 0;
	create_with("{\"name\":\"badmounts\"}", id);
	snprintf(path, sizeof(path), "/api/sandbox/sandboxes/%s/mounts", id);
	snprintf(link, sizeof(link), "%s/link-to-data", hostdir);
	cr_assert_eq(symlink(sbx_it.data_dir, link), 0);
	bad[n++] = "/";
	bad[n++] = "/etc";
	bad[n++] = "/usr/../etc";
	bad[n++] = "/root";
	bad[n++] = sbx_it.data_dir;
	bad[n++] = link;
	if (access("/root/.ssh", F_OK) == 0) {
		bad[n++] = "/root/./.ssh";
		bad[n++] = "/root/.ssh/../.ssh";
	}
	for (int i = 0; i < n; i++) {
		snprintf(json, sizeof(json), "{\"source\":\"%s\",\"target\":\"t%d\"}", bad[i], i);
		_cleanup_resp_ struct http_resp r = http_req(&sbx_it, "POST", path, json, NULL);
		cr_expect_eq(r.status, 403, "source %s: status %d %s", bad[i], r.status, r.body);
		cr_expect(r.body && strstr(r.body, "forbidden"), "%s", r.body);
	}
	snprintf(json, sizeof(json), "{\"source\":\"%s/ro\",\"target\":\"../escape\"}", hostdir);
	_cleanup_resp_ struct http_resp t = http_req(&sbx_it, "POST", path, json, NULL);
	cr_expect_eq(t.status, 400, "a target leaving the sandbox: %d %s", t.status, t.body);
	snprintf(path, sizeof(path), "/api/sandbox/sandboxes/%s", id);
	_cleanup_resp_ struct http_resp g = http_req(&sbx_it, "GET", path, NULL, NULL);
	cr_expect(strstr(g.body, "\"mounts\":[]"), "a refused mount was stored: %s", g.body);
}

Test(fence, no_capabilities_no_remount_no_ptrace_no_userns_no_keyctl)
{
	char id[128];
	create_with("{\"name\":\"caps\"}", id);
	_cleanup_resp_ struct http_resp r = run(id, "python",
	        "import ctypes, os, subprocess\n"
	        "st = open('/proc/self/status').read()\n"
	        "print([l for l in st.splitlines() if l.startswith('CapEff')][0])\n"
	        "rc = subprocess.run(['mount', '-o', 'remount,rw', '/'], capture_output=True).returncode\n"
	        "print('remount', 'ok' if rc == 0 else 'failed')\n"
	        "libc = ctypes.CDLL(None, use_errno=True)\n"
	        "print('ptrace', libc.ptrace(0, 0, 0, 0), ctypes.get_errno())\n"
	        "print('unshare', libc.unshare(0x10000000), ctypes.get_errno())\n"
	        "print('keyctl', libc.syscall(250, 0, -3, 0), ctypes.get_errno())\n");
	assert_status(r, 200);
	const char *o = out_of(&r);
	cr_log_info("jail said:\n%s%s", o, js_str(r.json, "stderr"));
	cr_expect(strstr(o, "CapEff:\t0000000000000000"), "capabilities left: %s", r.body);
	cr_expect(strstr(o, "remount failed"), "remount succeeded: %s", r.body);
	cr_expect(strstr(o, "ptrace -1"), "ptrace allowed: %s", r.body);
	cr_expect(strstr(o, "unshare -1"), "a user namespace could be made: %s", r.body);
	cr_expect(strstr(o, "keyctl -1"), "keyctl allowed: %s", r.body);
}

Test(fence, fork_bomb_and_memory_hog_are_stopped)
{
	char id[128];
	if (geteuid() != 0) {
		printf("SKIP: cgroup limits need sbxd to run as root\n");
		cr_skip_test("not root");
	}
	create_with("{\"name\":\"limits\",\"limits\":{\"memoryMb\":64,\"pids\":32,\"timeoutMs\":20000}}", id);
	_cleanup_resp_ struct http_resp hog = run(id, "python",
	        "chunks = []\nwhile True:\n    chunks.append(bytearray(16 << 20))\n");
	assert_status(hog, 200);
	cr_expect(js_is_false(hog.json, "timedOut"), "the hog ran to the deadline: %s", hog.body);
	cr_expect(js_int(hog.json, "exitCode", 0) != 0 || js_get(hog.json, "signal"), "%s", hog.body);
	cr_expect(strstr(hog.body, "\"memory\":\"cgroup-v"), "memory not enforced by cgroup: %s", hog.body);
	_cleanup_resp_ struct http_resp bomb = run(id, "python",
	        "import os, time\nok = refused = 0\n"
	        "for i in range(200):\n"
	        "    try:\n"
	        "        if os.fork() == 0:\n"
	        "            time.sleep(30); os._exit(0)\n"
	        "        ok += 1\n"
	        "    except OSError:\n"
	        "        refused += 1\n"
	        "print('forked', ok, 'refused', refused)\n");
	assert_status(bomb, 200);
	cr_log_info("bomb: %s", bomb.body);
	long forked = -1, refused = -1;
	sscanf(out_of(&bomb), "forked %ld refused %ld", &forked, &refused);
	cr_expect(forked >= 0 && forked < 32 && refused > 0, "the process limit did not act: %s",
	          bomb.body);
	cr_expect(js_is_false(bomb.json, "timedOut"), "%s", bomb.body);
	/* the daemon is unaffected */
	_cleanup_resp_ struct http_resp h = http_req(&sbx_it, "GET", "/api/sandbox/health", NULL, NULL);
	assert_status(h, 200);
	long uid = sbx_workdir_uid(&sbx_it, id);
	cr_expect_eq(proc_wait_uid_gone((uid_t)uid, 3000), 0, "processes of the sandbox outlived the run");
}
