/* The files API through REST against a real sbxd (docs/observe.md "Files"): bytes round-trip
 * exactly and belong to the sandbox's uid, the kernel keeps every path beneath the workdir
 * or the mount it walks into (.., absolute paths, %2e%2e, links to /etc, a link swapped in
 * while requests run), read-only mounts refuse writes, and the size limits hold at and
 * one past their value. */
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

#define FILE_MAX (8u << 20) /* PROTO_FILE_MAX */
#define OWNER_UID 1000u

static char top[64]; /* /var/tmp/sbx-files-XXXXXX: mount sources */

static void setup(void)
{
	sbx_require_bwrap();
	sbx_it.extra_args[0] = "--no-warm";
	snprintf(top, sizeof(top), "/var/tmp/sbx-files-XXXXXX");
	cr_assert_not_null(mkdtemp(top));
	cr_assert(chmod(top, 0755) == 0);
	sbx_it_init();
}

static void teardown(void)
{
	char cmd[128];
	sbx_it_fini();
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", top);
	if (top[0] && system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", top);
}

TestSuite(files, .init = setup, .fini = teardown, .timeout = 120);

static struct http_resp req_raw(const char *method, const char *sid, const char *route,
                                const char *query, const char *extra, const void *body,
                                size_t len)
{
	char path[4096], host[64], auth[SBX_TOKEN_MAX + 32];
	const char *hdrs[5] = { host, auth, NULL, NULL, NULL };
	size_t n = 2;
	snprintf(path, sizeof(path), "/api/sandbox/sandboxes/%s/%s%s%s", sid, route, query ? "?" : "",
	         query ? query : "");
	snprintf(host, sizeof(host), "Host: 127.0.0.1:%u", sbx_it.port);
	snprintf(auth, sizeof(auth), "Authorization: Bearer %s", sbx_it.token);
	if (body)
		hdrs[n++] = "Content-Type: application/octet-stream";
	if (extra)
		hdrs[n++] = extra;
	return http_send(sbx_it.port, method, path, hdrs, body, len, 60);
}

static struct http_resp put_file(const char *sid, const char *query, const void *body, size_t len)
{
	return req_raw("PUT", sid, "files/content", query, NULL, body, len);
}

static struct http_resp get_file(const char *sid, const char *query, const char *range)
{
	return req_raw("GET", sid, "files/content", query, range, NULL, 0);
}

static struct http_resp run_sh(const char *sid, const char *code)
{
	_cleanup_free_ char *body = run_body("sh", code, NULL, 0);
	return sbx_run(&sbx_it, sid, body);
}

static char *random_bytes(size_t n)
{
	char *b = malloc(n);
	int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
	cr_assert(b && fd >= 0);
	for (size_t got = 0; got < n;) {
		ssize_t r = read(fd, b + got, n - got);
		cr_assert(r > 0);
		got += (size_t)r;
	}
	close(fd);
	b[0] = '\0'; /* NULs travel too */
	return b;
}

Test(files, five_mib_binary_round_trip_owned_by_the_sandbox_uid)
{
	char sid[64], wd[512], host_path[640];
	const size_t n = 5u << 20;
	_cleanup_free_ char *data = random_bytes(n);
	struct stat st;

	sbx_create(&sbx_it, "{\"name\":\"rt\"}", sid, sizeof(sid));
	_cleanup_resp_ struct http_resp w = put_file(sid, "path=bin/blob.dat&parents=true", data, n);
	assert_status(w, 200);
	cr_expect_eq(js_int(w.json, "size", -1), (long long)n, "%s", w.body);
	_cleanup_resp_ struct http_resp r = get_file(sid, "path=bin/blob.dat", NULL);
	assert_status(r, 200);
	cr_assert_eq(r.body_len, n);
	cr_expect(memcmp(r.body, data, n) == 0, "byte for byte");
	char ct[64] = "";
	http_header(&r, "Content-Type", ct, sizeof(ct));
	cr_expect_str_eq(ct, "application/octet-stream");

	/* on the host: the sandbox's uid owns it, not root */
	cr_assert(sbx_workdir_path(&sbx_it, sid, wd, sizeof(wd)) == 0);
	snprintf(host_path, sizeof(host_path), "%s/bin/blob.dat", wd);
	cr_assert(stat(host_path, &st) == 0, "%s: %s", host_path, strerror(errno));
	cr_expect_eq((long)st.st_uid, sbx_workdir_uid(&sbx_it, sid));
	if (geteuid() == 0)
		cr_expect_neq(st.st_uid, 0u, "never root's");
	/* and the jail sees the same bytes */
	_cleanup_resp_ struct http_resp c = run_sh(sid, "wc -c < bin/blob.dat");
	cr_expect_str_eq(js_str(c.json, "stdout"), "5242880\n");

	/* replaced whole: a shorter write leaves nothing of the longer one */
	_cleanup_resp_ struct http_resp w2 = put_file(sid, "path=bin/blob.dat", "short", 5);
	assert_status(w2, 200);
	_cleanup_resp_ struct http_resp r2 = get_file(sid, "path=bin/blob.dat", NULL);
	cr_expect_eq(r2.body_len, 5u);
	cr_expect(memcmp(r2.body, "short", 5) == 0);
	/* no temporary file is left beside it */
	_cleanup_resp_ struct http_resp ls = req_raw("GET", sid, "files", "path=bin", NULL, NULL, 0);
	assert_status(ls, 200);
	cr_expect_eq(js_int(ls.json, "count", -1), 1, "%s", ls.body);
}

Test(files, ranges_and_size_limits_at_and_past_the_value)
{
	char sid[64];
	sbx_create(&sbx_it, "{\"name\":\"lim\",\"limits\":{\"diskMb\":64}}", sid, sizeof(sid));
	_cleanup_free_ char *data = random_bytes(FILE_MAX + 1);

	/* exactly the limit is written; one past it is refused and changes nothing */
	_cleanup_resp_ struct http_resp at = put_file(sid, "path=max.bin", data, FILE_MAX);
	assert_status(at, 200);
	_cleanup_resp_ struct http_resp past = put_file(sid, "path=past.bin", data, FILE_MAX + 1);
	assert_status(past, 413);
	_cleanup_resp_ struct http_resp gone = get_file(sid, "path=past.bin", NULL);
	assert_status(gone, 404);

	/* a file of the limit is read whole; one past it asks for a range */
	_cleanup_resp_ struct http_resp whole = get_file(sid, "path=max.bin", NULL);
	assert_status(whole, 200);
	cr_expect_eq(whole.body_len, FILE_MAX);
	_cleanup_resp_ struct http_resp grow = run_sh(sid, "cat max.bin > big.bin; printf x >> big.bin; wc -c < big.bin");
	cr_assert_str_eq(js_str(grow.json, "stdout"), "8388609\n", "%s", grow.body);
	_cleanup_resp_ struct http_resp big = get_file(sid, "path=big.bin", NULL);
	assert_status(big, 413);
	_cleanup_resp_ struct http_resp first = get_file(sid, "path=big.bin", "Range: bytes=0-");
	assert_status(first, 206);
	cr_expect_eq(first.body_len, FILE_MAX);
	char cr[96] = "";
	http_header(&first, "Content-Range", cr, sizeof(cr));
	cr_expect_str_eq(cr, "bytes 0-8388607/8388609");
	_cleanup_resp_ struct http_resp tail = get_file(sid, "path=big.bin", "Range: bytes=8388608-");
	assert_status(tail, 206);
	cr_expect_eq(tail.body_len, 1u);
	cr_expect_eq(tail.body[0], 'x');

	_cleanup_resp_ struct http_resp mid = get_file(sid, "path=max.bin", "Range: bytes=10-19");
	assert_status(mid, 206);
	cr_expect_eq(mid.body_len, 10u);
	cr_expect(memcmp(mid.body, data + 10, 10) == 0);
	_cleanup_resp_ struct http_resp suf = get_file(sid, "path=max.bin", "Range: bytes=-4");
	assert_status(suf, 206);
	cr_expect(suf.body_len == 4 && memcmp(suf.body, data + FILE_MAX - 4, 4) == 0);
	_cleanup_resp_ struct http_resp beyond = get_file(sid, "path=max.bin", "Range: bytes=9000000-");
	assert_status(beyond, 416);
	_cleanup_resp_ struct http_resp multi = get_file(sid, "path=max.bin", "Range: bytes=0-1,5-6");
	assert_status(multi, 400);
}

/* A full disk: the write fails with 507 and leaves neither the file nor its temporary. */
Test(files, a_full_disk_is_507_and_leaves_nothing)
{
	char sid[64];
	sbx_create(&sbx_it, "{\"name\":\"full\",\"limits\":{\"diskMb\":8}}", sid, sizeof(sid));
	_cleanup_resp_ struct http_resp probe = run_sh(sid, "true");
	const char *disk = js_str(probe.json, "limits.disk");
	if (!disk || strcmp(disk, "none") == 0) {
		printf("SKIP: limits.diskMb is not enforced here (no workdir images)\n");
		cr_skip_test("no workdir images");
	}
	_cleanup_free_ char *data = random_bytes(FILE_MAX);
	_cleanup_resp_ struct http_resp w = put_file(sid, "path=fill.bin", data, FILE_MAX);
	assert_status(w, 507);
	_cleanup_resp_ struct http_resp ls = req_raw("GET", sid, "files", "path=", NULL, NULL, 0);
	assert_status(ls, 200);
	cr_expect(!strstr(ls.body, "fill.bin") && !strstr(ls.body, ".sbx-write"), "%s", ls.body);
	/* and the sandbox still works */
	_cleanup_resp_ struct http_resp ok = put_file(sid, "path=small.txt", "ok", 2);
	assert_status(ok, 200);
}

Test(files, paths_out_of_the_sandbox_are_refused_by_the_kernel)
{
	char sid[64];
	sbx_create(&sbx_it, "{\"name\":\"esc\"}", sid, sizeof(sid));
	_cleanup_resp_ struct http_resp mk = run_sh(sid,
		"mkdir -p inner && echo in > inner/f.txt && ln -s /etc etc_link && "
		"ln -s ../../../../../../ up && ln -s inner ok_link && ln -s /proc/self/root root_link");
	assert_status(mk, 200);
	cr_assert_eq(js_int(mk.json, "exitCode", -1), 0, "%s", mk.body);

	static const char *const out[] = {
		"path=../x", "path=inner/../../x", "path=%2e%2e/%2e%2e/etc/passwd", "path=%2e%2e%2fetc%2fpasswd",
		"path=etc_link/passwd", "path=up/etc/passwd", "path=root_link/etc/passwd",
	};
	for (size_t i = 0; i < sizeof(out) / sizeof(out[0]); i++) {
		_cleanup_resp_ struct http_resp r = get_file(sid, out[i], NULL);
		assert_status(r, 403);
		cr_expect(!r.body || !strstr(r.body, "root:"), "%s leaked /etc/passwd", out[i]);
		_cleanup_resp_ struct http_resp w = put_file(sid, out[i], "x", 1);
		cr_expect(w.status == 403, "write %s: %d %s", out[i], w.status, w.body);
	}
	_cleanup_resp_ struct http_resp abs = get_file(sid, "path=/etc/passwd", NULL);
	assert_status(abs, 400);
	_cleanup_resp_ struct http_resp lsl = req_raw("GET", sid, "files", "path=etc_link", NULL, NULL, 0);
	assert_status(lsl, 403);
	_cleanup_resp_ struct http_resp del = req_raw("DELETE", sid, "files", "path=etc_link/hostname", NULL, NULL, 0);
	assert_status(del, 403);
	/* a link that stays inside is followed */
	_cleanup_resp_ struct http_resp ok = get_file(sid, "path=ok_link/f.txt", NULL);
	assert_status(ok, 200);
	cr_expect(ok.body_len == 3 && memcmp(ok.body, "in\n", 3) == 0);
	/* deleting the link removes the link, never what it names */
	_cleanup_resp_ struct http_resp dl = req_raw("DELETE", sid, "files", "path=etc_link", NULL, NULL, 0);
	assert_status(dl, 200);
	cr_expect(access("/etc/hostname", F_OK) == 0);
}

/* A jail flips "swap" between a directory of its own and a link to /etc while the API
 * reads swap/passwd: every answer is the jail's file or a refusal, never the host's. */
Test(files, a_link_swapped_in_during_requests_never_leads_out)
{
	char sid[64], body[1024], path[128];
	sbx_create(&sbx_it, "{\"name\":\"swap\"}", sid, sizeof(sid));
	snprintf(body, sizeof(body), "{\"detach\":true,\"timeoutMs\":60000,\"code\":\"mkdir -p real && "
	         "echo safe > real/passwd && while :; do ln -sfn /etc t1 && mv -T t1 swap; "
	         "ln -sfn real t2 && mv -T t2 swap; done\"}");
	_cleanup_resp_ struct http_resp d = sbx_run(&sbx_it, sid, body);
	assert_status(d, 200);
	sleep_ms(300);
	int safe = 0, refused = 0;
	for (int i = 0; i < 300; i++) {
		_cleanup_resp_ struct http_resp r = get_file(sid, "path=swap/passwd", NULL);
		cr_assert(!r.body || !memmem(r.body, r.body_len, "root:", 5), "read the host's /etc/passwd");
		if (r.status == 200) {
			cr_assert(r.body_len == 5 && memcmp(r.body, "safe\n", 5) == 0);
			safe++;
		} else {
			cr_assert(r.status == 403 || r.status == 404, "%d %s", r.status, r.body);
			refused++;
		}
	}
	cr_expect_gt(refused, 0, "the link was seen (and refused) at least once");
	snprintf(path, sizeof(path), "/api/sandbox/sandboxes/%s/kill", sid);
	_cleanup_resp_ struct http_resp k = http_req(&sbx_it, "POST", path, "{}", NULL);
	assert_status(k, 200);
	printf("swap race: %d reads of the jail's file, %d refused\n", safe, refused);
}

static void put_host(const char *path, const char *text, mode_t mode, uid_t uid)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	cr_assert(fd >= 0, "create %s: %s", path, strerror(errno));
	cr_assert(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
	close(fd);
	cr_assert(chown(path, uid, uid) == 0 && chmod(path, mode) == 0);
}

Test(files, a_mount_is_walked_into_and_not_out_of)
{
	char sid[64], pub[128], proj[128], p[256], body[1024];
	struct stat st;
	if (geteuid() != 0) {
		printf("SKIP: needs root (mount owners other than the daemon's user)\n");
		cr_skip_test("needs root");
	}
	snprintf(pub, sizeof(pub), "%s/pub", top);
	cr_assert(mkdir(pub, 0755) == 0);
	snprintf(p, sizeof(p), "%s/r.txt", pub);
	put_host(p, "public\n", 0644, 0);
	snprintf(proj, sizeof(proj), "%s/proj", top);
	cr_assert(mkdir(proj, 0700) == 0 && chown(proj, OWNER_UID, OWNER_UID) == 0);
	snprintf(p, sizeof(p), "%s/rootonly.txt", proj);
	put_host(p, "secret\n", 0600, 0);
	snprintf(body, sizeof(body),
	         "{\"name\":\"mnt\",\"mounts\":[{\"source\":\"%s\",\"target\":\"data\"},"
	         "{\"source\":\"%s\",\"target\":\"work/proj\",\"readOnly\":false}]}", pub, proj);
	sbx_create(&sbx_it, body, sid, sizeof(sid));

	_cleanup_resp_ struct http_resp ls = req_raw("GET", sid, "files", "path=data", NULL, NULL, 0);
	assert_status(ls, 200);
	cr_expect(strstr(ls.body, "\"r.txt\""), "%s", ls.body);
	_cleanup_resp_ struct http_resp rd = get_file(sid, "path=./data//r.txt", NULL);
	assert_status(rd, 200);
	cr_expect(rd.body_len == 7 && memcmp(rd.body, "public\n", 7) == 0);
	/* one step beyond the mount, whichever way */
	_cleanup_resp_ struct http_resp up = req_raw("GET", sid, "files", "path=data/..", NULL, NULL, 0);
	assert_status(up, 403);
	_cleanup_resp_ struct http_resp up2 = get_file(sid, "path=data/../../../etc/passwd", NULL);
	assert_status(up2, 403);
	_cleanup_resp_ struct http_resp sib = get_file(sid, "path=work/proj/../../data/r.txt", NULL);
	assert_status(sib, 403);
	/* read-only: no write, delete or mkdir inside; the host file unchanged */
	_cleanup_resp_ struct http_resp w = put_file(sid, "path=data/r.txt", "changed", 7);
	assert_status(w, 403);
	_cleanup_resp_ struct http_resp dm = req_raw("DELETE", sid, "files", "path=data/r.txt", NULL, NULL, 0);
	assert_status(dm, 403);
	_cleanup_resp_ struct http_resp dmount = req_raw("DELETE", sid, "files", "path=work/proj", NULL, NULL, 0);
	assert_status(dmount, 400);
	snprintf(p, sizeof(p), "%s/r.txt", pub);
	cr_assert(stat(p, &st) == 0 && st.st_size == 7);

	/* a writable mount owned by a user: written as that user (the jail sees it idmapped),
	 * and a root-only file inside stays shut, as it does for the jail */
	_cleanup_resp_ struct http_resp pw = put_file(sid, "path=work/proj/new.txt", "mine", 4);
	assert_status(pw, 200);
	snprintf(p, sizeof(p), "%s/new.txt", proj);
	cr_assert(stat(p, &st) == 0, "written into the source");
	cr_expect_eq(st.st_uid, OWNER_UID);
	_cleanup_resp_ struct http_resp ro = get_file(sid, "path=work/proj/rootonly.txt", NULL);
	assert_status(ro, 403);
	_cleanup_resp_ struct http_resp jail = run_sh(sid, "cat work/proj/new.txt; cat work/proj/rootonly.txt 2>/dev/null || echo shut");
	cr_expect_str_eq(js_str(jail.json, "stdout"), "mineshut\n", "%s", jail.body);
}

Test(files, mkdir_delete_and_bad_arguments)
{
	char sid[64];
	sbx_create(&sbx_it, "{\"name\":\"md\"}", sid, sizeof(sid));
	_cleanup_resp_ struct http_resp no_parent = req_raw("POST", sid, "files/dir", "path=d1/d2", NULL, NULL, 0);
	assert_status(no_parent, 404);
	_cleanup_resp_ struct http_resp mk = req_raw("POST", sid, "files/dir", "path=d1/d2&parents=true", NULL, NULL, 0);
	assert_status(mk, 201);
	cr_expect_str_eq(js_str(mk.json, "type"), "dir");
	_cleanup_resp_ struct http_resp again = req_raw("POST", sid, "files/dir", "path=d1/d2", NULL, NULL, 0);
	assert_status(again, 409);
	_cleanup_resp_ struct http_resp w = put_file(sid, "path=d1/d2/f", "x", 1);
	assert_status(w, 200);
	_cleanup_resp_ struct http_resp over_dir = put_file(sid, "path=d1", "x", 1);
	assert_status(over_dir, 409);
	_cleanup_resp_ struct http_resp notempty = req_raw("DELETE", sid, "files", "path=d1", NULL, NULL, 0);
	assert_status(notempty, 409);
	_cleanup_resp_ struct http_resp rec = req_raw("DELETE", sid, "files", "path=d1&recursive=true", NULL, NULL, 0);
	assert_status(rec, 200);
	_cleanup_resp_ struct http_resp gone = req_raw("GET", sid, "files", "path=d1", NULL, NULL, 0);
	assert_status(gone, 404);
	_cleanup_resp_ struct http_resp root = req_raw("DELETE", sid, "files", "path=.", NULL, NULL, 0);
	assert_status(root, 400);
	_cleanup_resp_ struct http_resp nopath = get_file(sid, NULL, NULL);
	assert_status(nopath, 400);
	_cleanup_resp_ struct http_resp badflag = req_raw("DELETE", sid, "files", "path=x&recursive=maybe", NULL, NULL, 0);
	assert_status(badflag, 400);
	/* JSON with a file's bytes is not a file write: the body must be octet-stream */
	_cleanup_resp_ struct http_resp form = req_raw("POST", sid, "files/dir", "path=z", NULL, NULL, 0);
	assert_status(form, 201);
	_cleanup_resp_ struct http_resp nf = req_raw("GET", "sbx_nosuch", "files", "path=x", NULL, NULL, 0);
	assert_status(nf, 404);
	/* a directory is listed, not read */
	_cleanup_resp_ struct http_resp rdir = get_file(sid, "path=z", NULL);
	assert_status(rdir, 400);
}
