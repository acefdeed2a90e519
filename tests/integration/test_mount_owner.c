/* Mounts and readPaths of real directories under a root daemon (docs/running-code.md
 * "Mounts"): a user's 0700 project under a 0700 parent is reachable by the jail uid, what
 * the jail writes there belongs to the project's owner, a root-only file inside stays
 * shut, a filesystem that cannot be idmapped is named in a note, and no staging mount is
 * left on the host. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "cleanup.h"
#include "harness.h"

#define OWNER_UID 1000u
#define OWNER_GID 1000u

static char top[64];      /* /var/tmp/sbx-owner-XXXXXX, root 0700 */
static char project[128]; /* <top>/project, uid 1000 0700 */
static char ramdir[128];  /* <top>/ram: a ramfs (no idmapped mounts), mounted by a test */
static bool ram_mounted;

static void put(const char *path, const char *text, mode_t mode, uid_t uid, gid_t gid)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	cr_assert(fd >= 0, "create %s: %s", path, strerror(errno));
	cr_assert(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
	close(fd);
	cr_assert(chown(path, uid, gid) == 0 && chmod(path, mode) == 0);
}

static void setup(void)
{
	char p[256];
	sbx_require_bwrap();
	if (geteuid() != 0) {
		printf("SKIP: needs root (the daemon's jails must run as their own uid)\n");
		fflush(stdout);
		cr_skip_test("SKIP: needs root (the daemon's jails must run as their own uid)");
	}
	snprintf(top, sizeof(top), "/var/tmp/sbx-owner-XXXXXX");
	cr_assert_not_null(mkdtemp(top));
	cr_assert(chmod(top, 0700) == 0);
	snprintf(project, sizeof(project), "%s/project", top);
	cr_assert(mkdir(project, 0700) == 0);
	cr_assert(chown(project, OWNER_UID, OWNER_GID) == 0 && chmod(project, 0700) == 0);
	snprintf(p, sizeof(p), "%s/hello.txt", project);
	put(p, "owner-content\n", 0600, OWNER_UID, OWNER_GID);
	snprintf(p, sizeof(p), "%s/rootonly.txt", project);
	put(p, "root-secret\n", 0600, 0, 0);
	snprintf(p, sizeof(p), "%s/pub", top);
	cr_assert(mkdir(p, 0755) == 0);
	snprintf(p, sizeof(p), "%s/pub/r.txt", top);
	put(p, "root-public\n", 0644, 0, 0);
	sbx_it_init();
}

static void teardown(void)
{
	char cmd[160];
	sbx_it_fini();
	if (ram_mounted)
		umount2(ramdir, MNT_DETACH);
	if (top[0]) {
		snprintf(cmd, sizeof(cmd), "rm -rf %s", top); /* our own temp tree */
		if (system(cmd) != 0)
			fprintf(stderr, "could not remove %s\n", top);
	}
}

TestSuite(mount_owner, .init = setup, .fini = teardown, .timeout = 90);

static const char *out_of(const struct http_resp *r)
{
	const char *s = js_str(r->json, "stdout");
	return s ? s : "";
}

static struct http_resp run_sh(const char *id, const char *code)
{
	_cleanup_free_ char *body = run_body("sh", code, NULL, 20000);
	cr_assert(body);
	return sbx_run(&sbx_it, id, body);
}

static struct http_resp add_mount(const char *id, const char *source, const char *target, bool ro)
{
	char json[512], path[256];
	snprintf(json, sizeof(json), "{\"source\":\"%s\",\"target\":\"%s\",\"readOnly\":%s}", source,
	         target, ro ? "true" : "false");
	snprintf(path, sizeof(path), "/api/sandbox/sandboxes/%s/mounts", id);
	return http_req(&sbx_it, "POST", path, json, NULL);
}

/* Lines of the host's mount table naming the staging tmpfs or a staging point. */
static int staging_lines(void)
{
	char line[4096];
	int n = 0;
	FILE *f = fopen("/proc/self/mountinfo", "re");
	cr_assert(f);
	while (fgets(line, sizeof(line), f))
		if (strstr(line, "sbx-stage") || strstr(line, " /dev/shm/m") || strstr(line, " /dev/shm/r"))
			n++;
	fclose(f);
	return n;
}

Test(mount_owner, read_only_mount_of_a_0700_user_project_is_readable)
{
	char id[128];
	sbx_create(&sbx_it, "{\"name\":\"ro\"}", id, sizeof(id));
	_cleanup_resp_ struct http_resp m = add_mount(id, project, "proj", true);
	assert_status(m, 201);
	_cleanup_resp_ struct http_resp r =
		run_sh(id, "cat proj/hello.txt; echo x > proj/new.txt 2>/dev/null || echo refused");
	assert_status(r, 200);
	cr_expect(strstr(out_of(&r), "owner-content"), "the 0700 project was unreadable: %s", r.body);
	cr_expect(strstr(out_of(&r), "refused"), "the read-only mount took a write: %s", r.body);
}

Test(mount_owner, read_write_mount_added_later_writes_files_owned_by_the_project_owner)
{
	char id[128], p[256];
	struct stat st;
	/* open mode: the jail's / is the run child's namespace, staging tmpfs included, and
	 * bwrap's own /dev must still cover it */
	sbx_create(&sbx_it, "{\"name\":\"rw\",\"fsMode\":\"open\"}", id, sizeof(id));
	/* a run before the mount exists, then the mount: it takes effect on the next run */
	_cleanup_resp_ struct http_resp r0 = run_sh(id, "ls proj 2>/dev/null || echo none");
	assert_status(r0, 200);
	cr_expect(strstr(out_of(&r0), "none"), "%s", r0.body);
	_cleanup_resp_ struct http_resp m = add_mount(id, project, "proj", false);
	assert_status(m, 201);
	cr_expect(!js_str(m.json, "note") || !strstr(js_str(m.json, "note"), "idmapped"),
	          "ext4 can be idmapped, yet the reply says otherwise: %s", m.body);
	_cleanup_resp_ struct http_resp r =
		run_sh(id, "echo from-jail > proj/made.txt && mkdir proj/sub && echo wrote;"
		           " test -e /dev/shm/m0 && echo STAGE-VISIBLE; id -u");
	assert_status(r, 200);
	cr_expect(strstr(out_of(&r), "wrote"), "the jail could not write the project: %s", r.body);
	cr_expect(!strstr(out_of(&r), "STAGE-VISIBLE"), "the staging points show in the jail: %s",
	          r.body);
	snprintf(p, sizeof(p), "%s/made.txt", project);
	cr_assert(lstat(p, &st) == 0, "no file on the host: %s", r.body);
	cr_expect(st.st_uid == OWNER_UID && st.st_gid == OWNER_GID,
	          "the new file is owned by %u:%u, not the project's owner", (unsigned)st.st_uid,
	          (unsigned)st.st_gid);
	snprintf(p, sizeof(p), "%s/sub", project);
	cr_assert(lstat(p, &st) == 0);
	cr_expect(st.st_uid == OWNER_UID && st.st_gid == OWNER_GID, "the new directory is %u:%u",
	          (unsigned)st.st_uid, (unsigned)st.st_gid);
	/* nothing of the staging is left on the host */
	cr_expect_eq(staging_lines(), 0, "a staging mount is left in the host's mount table");
}

Test(mount_owner, a_root_only_file_inside_a_mounted_project_stays_unreadable)
{
	char id[128];
	sbx_create(&sbx_it, "{\"name\":\"secret\"}", id, sizeof(id));
	_cleanup_resp_ struct http_resp m = add_mount(id, project, "proj", false);
	assert_status(m, 201);
	_cleanup_resp_ struct http_resp r = run_sh(
		id, "cat proj/hello.txt; cat proj/rootonly.txt 2>/dev/null && echo LEAKED;"
		    " echo x >> proj/rootonly.txt 2>/dev/null && echo APPENDED; echo end");
	assert_status(r, 200);
	cr_expect(strstr(out_of(&r), "owner-content") && strstr(out_of(&r), "end"), "%s", r.body);
	cr_expect(!strstr(out_of(&r), "root-secret") && !strstr(out_of(&r), "LEAKED") &&
	                  !strstr(out_of(&r), "APPENDED"),
	          "a root-only file was reachable: %s", r.body);
}

Test(mount_owner, read_paths_under_a_0700_parent_are_readable)
{
	char id[128], json[512], code[512];
	snprintf(json, sizeof(json),
	         "{\"name\":\"allow\",\"fsMode\":\"allowlist\",\"readPaths\":[\"%s\",\"%s/pub\"]}",
	         project, top);
	sbx_create(&sbx_it, json, id, sizeof(id));
	snprintf(code, sizeof(code), "cat %s/hello.txt; cat %s/pub/r.txt; echo x > %s/w 2>/dev/null || echo ro",
	         project, top, project);
	_cleanup_resp_ struct http_resp r = run_sh(id, code);
	assert_status(r, 200);
	cr_expect(strstr(out_of(&r), "owner-content"), "the user's readPath was unreadable: %s", r.body);
	cr_expect(strstr(out_of(&r), "root-public"), "the root-owned readPath was unreadable: %s", r.body);
	cr_expect(strstr(out_of(&r), "ro"), "a readPath took a write: %s", r.body);
	cr_expect_eq(staging_lines(), 0, "a staging mount is left in the host's mount table");
}

Test(mount_owner, a_filesystem_without_idmapping_is_named_in_the_notes)
{
	char id[128], p[256];
	snprintf(ramdir, sizeof(ramdir), "%s/ram", top);
	cr_assert(mkdir(ramdir, 0755) == 0);
	cr_assert(mount("sbx-test-ramfs", ramdir, "ramfs", 0, "mode=0755") == 0, "ramfs: %s",
	          strerror(errno));
	ram_mounted = true;
	snprintf(p, sizeof(p), "%s/mine", ramdir);
	cr_assert(mkdir(p, 0777) == 0 && chmod(p, 0777) == 0 && chown(p, OWNER_UID, OWNER_GID) == 0);
	sbx_create(&sbx_it, "{\"name\":\"ramfs\"}", id, sizeof(id));
	_cleanup_resp_ struct http_resp m = add_mount(id, p, "ram", false);
	assert_status(m, 201);
	cr_expect(js_str(m.json, "note") && strstr(js_str(m.json, "note"), "cannot be idmapped"),
	          "the mount's reply is silent about the missing idmapping: %s", m.body);
	_cleanup_resp_ struct http_resp r = run_sh(id, "echo x > ram/f && echo wrote");
	assert_status(r, 200);
	cr_expect(strstr(out_of(&r), "wrote"), "the plain bind of a 0777 dir failed: %s", r.body);
	cr_expect(js_str(r.json, "note") && strstr(js_str(r.json, "note"), "cannot be idmapped"),
	          "the run's note is silent about the missing idmapping: %s", r.body);
	/* a mount in the create body: the create's reply says it too */
	char json[512];
	snprintf(json, sizeof(json),
	         "{\"name\":\"ramfs2\",\"mounts\":[{\"source\":\"%s\",\"target\":\"ram\"}]}", p);
	_cleanup_resp_ struct http_resp c =
		http_req(&sbx_it, "POST", "/api/sandbox/sandboxes", json, NULL);
	assert_status(c, 201);
	cr_expect(js_str(c.json, "note") && strstr(js_str(c.json, "note"), "cannot be idmapped"),
	          "the create's reply is silent about the missing idmapping: %s", c.body);
}

/* The source was canonical when it was added; a symlink put in its place afterwards is
 * not followed at run time (bwrap would have bound wherever it points). */
Test(mount_owner, a_source_swapped_for_a_symlink_after_add_is_refused)
{
	char id[128], src[256], moved[256], pub[256];
	snprintf(src, sizeof(src), "%s/swap", top);
	snprintf(moved, sizeof(moved), "%s/swap.old", top);
	snprintf(pub, sizeof(pub), "%s/pub", top);
	cr_assert(mkdir(src, 0755) == 0);
	sbx_create(&sbx_it, "{\"name\":\"swap\"}", id, sizeof(id));
	_cleanup_resp_ struct http_resp m = add_mount(id, src, "s", true);
	assert_status(m, 201);
	cr_assert(rename(src, moved) == 0 && symlink(pub, src) == 0);
	_cleanup_resp_ struct http_resp r = run_sh(id, "cat s/r.txt; echo end");
	cr_expect(!strstr(r.body ? r.body : "", "root-public"),
	          "the run followed a symlink swapped in after the check: %s", r.body);
	cr_expect(r.status != 200 && strstr(r.body ? r.body : "", "no longer the path"),
	          "the refusal does not say why: %d %s", r.status, r.body);
}

/* A single file is staged on a file mount point, idmapped like a directory. */
Test(mount_owner, a_single_user_file_is_mounted_and_writable)
{
	char id[128], src[256], buf[64] = "";
	snprintf(src, sizeof(src), "%s/hello.txt", project);
	sbx_create(&sbx_it, "{\"name\":\"file\"}", id, sizeof(id));
	_cleanup_resp_ struct http_resp m = add_mount(id, src, "h.txt", false);
	assert_status(m, 201);
	_cleanup_resp_ struct http_resp r = run_sh(id, "cat h.txt && echo appended >> h.txt && echo ok");
	assert_status(r, 200);
	cr_expect(strstr(out_of(&r), "owner-content") && strstr(out_of(&r), "ok"), "%s", r.body);
	int fd = open(src, O_RDONLY | O_CLOEXEC);
	cr_assert(fd >= 0);
	cr_expect(read(fd, buf, sizeof(buf) - 1) > 0);
	close(fd);
	cr_expect(strstr(buf, "appended"), "the write did not reach the host file: %s", buf);
}
