/* limits.diskMb through a real daemon: a run that writes past it gets ENOSPC inside the
 * jail, and a full sandbox breaks nothing else: its next run is recorded, PATCH, PUT
 * exec-policy and the create of another sandbox work, and DELETE frees the image (file,
 * mount and loop device gone). Values at and past SBX_DISK_MB_MAX are checked. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "cleanup.h"
#include "harness.h"
#include "util.h"

#define DISK_TEST_MB     16u    /* small: the image is made and filled in well under a second */
#define DISK_MB_MAX      16384u /* launcher.h SBX_DISK_MB_MAX */
#define DISK_MOUNTINFO_MAX (1024u * 1024u)

static void setup(void)
{
	sbx_require_bwrap();
	if (geteuid() != 0 || access("/dev/loop-control", F_OK) != 0) {
		printf("SKIP: needs root and /dev/loop-control for workdir images\n");
		fflush(stdout);
		cr_skip_test("SKIP: needs root and /dev/loop-control for workdir images");
	}
	sbx_it_init();
}

TestSuite(disk_quota, .init = setup, .fini = sbx_it_fini, .timeout = 90);

/* Whether path is a mount point in our namespace (the launcher's: sbxd does not unshare). */
static bool mounted_at(const char *path)
{
	_cleanup_free_ char *mi = NULL;
	size_t len;
	char needle[1200];
	cr_assert_eq(read_file("/proc/self/mountinfo", DISK_MOUNTINFO_MAX, &mi, &len), 0);
	snprintf(needle, sizeof(needle), " %s ", path);
	return strstr(mi, needle) != NULL;
}

/* Whether some loop device is bound to a file whose name contains id. */
static bool loop_bound_to(const char *id)
{
	char p[128];
	for (unsigned i = 0; i < 256; i++) {
		_cleanup_free_ char *f = NULL;
		size_t len;
		snprintf(p, sizeof(p), "/sys/block/loop%u/loop/backing_file", i);
		if (read_file(p, 4096, &f, &len) == 0 && strstr(f, id))
			return true;
	}
	return false;
}

static void image_path(const char *id, char *buf, size_t sz)
{
	snprintf(buf, sz, "%s/images/%s.img", sbx_it.data_dir, id);
}

static struct http_resp run_sh(const char *id, const char *code)
{
	_cleanup_free_ char *body = run_body("sh", code, NULL, 20000);
	cr_assert_not_null(body);
	return sbx_run(&sbx_it, id, body);
}

Test(disk_quota, a_full_workdir_breaks_nothing_else_and_delete_frees_it)
{
	char id[64], other[64], wd[1200], img[1200], path[256], body[128];
	struct stat st;

	snprintf(body, sizeof(body), "{\"name\":\"full\",\"limits\":{\"diskMb\":%u}}", DISK_TEST_MB);
	sbx_create(&sbx_it, body, id, sizeof(id));
	cr_assert_eq(sbx_workdir_path(&sbx_it, id, wd, sizeof(wd)), 0);
	image_path(id, img, sizeof(img));
	cr_assert_eq(stat(img, &st), 0, "no image at %s", img);
	cr_expect_eq((unsigned long long)st.st_size, DISK_TEST_MB * 1024ull * 1024ull);
	cr_expect(mounted_at(wd), "the image is not mounted on %s", wd);

	/* twice the limit from /dev/zero: dd stops at ENOSPC, well short of 2x */
	_cleanup_resp_ struct http_resp fill = run_sh(
		id, "dd if=/dev/zero of=big bs=1M count=32 2>err; echo rc=$?; "
		    "grep -c 'No space left' err; wc -c < big");
	assert_status(fill, 200);
	const char *out = js_str(fill.json, "stdout");
	cr_assert_not_null(out, "%s", fill.body);
	cr_expect(strstr(out, "rc=1\n1\n"), "dd did not fail with ENOSPC: %s", out);
	/* what dd wrote is what the filesystem had room for: under the limit */
	const char *last = strstr(out, "rc=1\n1\n");
	long written = last ? strtol(last + 7, NULL, 10) : -1;
	cr_expect(written > 0 && written < (long)(DISK_TEST_MB * 1024 * 1024), "wrote %ld", written);
	cr_expect(js_str(fill.json, "limits.disk") && strcmp(js_str(fill.json, "limits.disk"), "ext4-loop") == 0,
	          "no disk entry in %s", fill.body);

	/* the host side saw none of it: the image never grows */
	cr_assert_eq(stat(img, &st), 0);
	cr_expect_eq((unsigned long long)st.st_size, DISK_TEST_MB * 1024ull * 1024ull);

	/* the next run in the full sandbox is recorded and can be read back */
	_cleanup_resp_ struct http_resp again = run_sh(id, "echo still-here");
	assert_status(again, 200);
	const char *rid = js_str(again.json, "id");
	cr_assert_not_null(rid, "%s", again.body);
	snprintf(path, sizeof(path), "/api/sandbox/sandboxes/%s/runs/%s", id, rid);
	_cleanup_resp_ struct http_resp got = http_req(&sbx_it, "GET", path, NULL, NULL);
	assert_status(got, 200);

	/* the database and the other settings still write */
	snprintf(path, sizeof(path), "/api/sandbox/sandboxes/%s", id);
	_cleanup_resp_ struct http_resp patch =
		http_req(&sbx_it, "PATCH", path, "{\"limits\":{\"timeoutMs\":15000}}", NULL);
	assert_status(patch, 200);
	_cleanup_resp_ struct http_resp pol = http_req(&sbx_it, "PUT", "/api/sandbox/exec-policy",
	                                               "{\"execShell\":true}", NULL);
	assert_status(pol, 200);
	snprintf(body, sizeof(body), "{\"name\":\"other\",\"limits\":{\"diskMb\":%u}}", DISK_TEST_MB);
	sbx_create(&sbx_it, body, other, sizeof(other));

	/* DELETE frees everything the image held */
	_cleanup_resp_ struct http_resp del = http_req(&sbx_it, "DELETE", path, NULL, NULL);
	assert_status(del, 200);
	cr_expect(stat(img, &st) < 0 && errno == ENOENT, "the image %s is still there", img);
	cr_expect(!mounted_at(wd), "%s is still mounted", wd);
	for (int i = 0; i < 50 && loop_bound_to(id); i++)
		sleep_ms(20); /* the detach follows the lazy unmount */
	cr_expect(!loop_bound_to(id), "a loop device still holds the image of %s", id);
}

Test(disk_quota, disk_mb_at_and_past_the_max)
{
	char path[256], body[128];
	_cleanup_resp_ struct http_resp at = { 0 }, past = { 0 }, small = { 0 }, shrink = { 0 },
	                                grow = { 0 }, run = { 0 };
	char id[64];

	/* the max itself passes validation (made if the host has the room, else 507); one past
	 * it is refused before anything is allocated */
	snprintf(body, sizeof(body), "{\"name\":\"atmax\",\"limits\":{\"diskMb\":%u}}", DISK_MB_MAX);
	at = http_req(&sbx_it, "POST", "/api/sandbox/sandboxes", body, NULL);
	cr_expect(at.status == 200 || at.status == 201 || at.status == 507, "%d %s", at.status, at.body);
	if (at.status != 507 && js_str(at.json, "id")) {
		snprintf(path, sizeof(path), "/api/sandbox/sandboxes/%s", js_str(at.json, "id"));
		_cleanup_resp_ struct http_resp d = http_req(&sbx_it, "DELETE", path, NULL, NULL);
		cr_expect_eq(d.status, 200, "%d %s", d.status, d.body);
	}
	snprintf(body, sizeof(body), "{\"name\":\"past\",\"limits\":{\"diskMb\":%u}}", DISK_MB_MAX + 1);
	past = http_req(&sbx_it, "POST", "/api/sandbox/sandboxes", body, NULL);
	cr_expect_eq(past.status, 400, "%d %s", past.status, past.body);
	small = http_req(&sbx_it, "POST", "/api/sandbox/sandboxes",
	                 "{\"name\":\"tiny\",\"limits\":{\"diskMb\":1}}", NULL);
	cr_expect_eq(small.status, 400, "%d %s", small.status, small.body);

	sbx_create(&sbx_it, "{\"name\":\"grow\",\"limits\":{\"diskMb\":16}}", id, sizeof(id));
	snprintf(path, sizeof(path), "/api/sandbox/sandboxes/%s", id);
	snprintf(body, sizeof(body), "{\"limits\":{\"diskMb\":%u}}", DISK_MB_MAX + 1);
	_cleanup_resp_ struct http_resp ppast = http_req(&sbx_it, "PATCH", path, body, NULL);
	cr_expect_eq(ppast.status, 400, "%d %s", ppast.status, ppast.body);
	shrink = http_req(&sbx_it, "PATCH", path, "{\"limits\":{\"diskMb\":8}}", NULL);
	cr_expect_eq(shrink.status, 400, "a shrink: %d %s", shrink.status, shrink.body);
	/* a grow happens online where the kernel allows it (CAP_SYS_RESOURCE), else is refused
	 * with 409 and the sandbox keeps its size: never a stored value the image lacks */
	grow = http_req(&sbx_it, "PATCH", path, "{\"limits\":{\"diskMb\":32}}", NULL);
	cr_assert(grow.status == 200 || grow.status == 409, "%d %s", grow.status, grow.body);
	_cleanup_resp_ struct http_resp now = http_req(&sbx_it, "GET", path, NULL, NULL);
	unsigned want = grow.status == 200 ? 32 : 16;
	cr_expect_eq(js_int(now.json, "limits.diskMb", 0), want, "%s", now.body);
	/* what the filesystem holds follows the stored value: 20 MiB fits only after a grow */
	run = run_sh(id, "dd if=/dev/zero of=big bs=1M count=20 2>/dev/null; echo rc=$?");
	assert_status(run, 200);
	const char *o = js_str(run.json, "stdout");
	cr_expect(o && strstr(o, want == 32 ? "rc=0" : "rc=1"), "diskMb %u: %s", want, run.body);
	char img[1200];
	struct stat st;
	snprintf(img, sizeof(img), "%s/images/%s.img", sbx_it.data_dir, id);
	cr_assert_eq(stat(img, &st), 0);
	cr_expect_eq((unsigned long long)st.st_size, want * 1024ull * 1024ull);
}

/* Outside its workdir image a jail can write only to tmpfs (RAM), and what it writes
 * there is charged to the run's memory cgroup: no way around diskMb onto the host disk. */
Test(disk_quota, outside_the_image_only_ram_is_writable_and_it_counts_as_memory)
{
	char id[64];
	sbx_create(&sbx_it, "{\"name\":\"ram\",\"limits\":{\"memoryMb\":64,\"diskMb\":16}}", id,
	           sizeof(id));
	_cleanup_resp_ struct http_resp w = run_sh(
		id, "for d in / /tmp /var/tmp /dev/shm /root /home /run /usr /etc /opt /srv /mnt; do "
		    "touch $d/.sbx-probe 2>/dev/null && echo \"W $d $(stat -f -c %T $d)\"; done; echo end");
	assert_status(w, 200);
	const char *out = js_str(w.json, "stdout");
	cr_assert(out && strstr(out, "end\n"), "%s", w.body);
	for (const char *l = strstr(out, "W "); l; l = strstr(l + 1, "W "))
		cr_expect(strncmp(strchr(l + 2, ' ') + 1, "tmpfs\n", 6) == 0,
		          "writable and not tmpfs: %.*s", (int)(strchr(l, '\n') - l), l);
	/* 200 MiB into /tmp under a 64 MiB memory limit: killed short of it */
	_cleanup_resp_ struct http_resp t =
		run_sh(id, "dd if=/dev/zero of=/tmp/x bs=1M count=200 2>/dev/null; wc -c < /tmp/x");
	assert_status(t, 200);
	const char *n = js_str(t.json, "note");
	cr_expect(n && strstr(n, "memory limit was reached"), "%s", t.body);
}
