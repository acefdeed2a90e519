/* Mount source/target checks: canonicalization before the forbidden-roots comparison. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "fence/mounts.h"

static char home[256], data[256], base[64];

static void setup(void)
{
	char p[PATH_MAX + 64];
	snprintf(base, sizeof(base), "/tmp/sbx-mounts-XXXXXX");
	cr_assert_not_null(mkdtemp(base));
	snprintf(home, sizeof(home), "%s/home", base);
	snprintf(data, sizeof(data), "%s/home/.local/share/sbx", base);
	cr_assert_eq(mkdir(home, 0755), 0);
	snprintf(p, sizeof(p), "%s/.ssh", home);
	cr_assert_eq(mkdir(p, 0700), 0);
	snprintf(p, sizeof(p), "%s/.ssh/keys", home);
	cr_assert_eq(mkdir(p, 0700), 0);
	snprintf(p, sizeof(p), "%s/.local", home);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/.local/share", home);
	mkdir(p, 0755);
	cr_assert_eq(mkdir(data, 0700), 0);
	snprintf(p, sizeof(p), "%s/project", home);
	cr_assert_eq(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/link-to-ssh", home);
	cr_assert_eq(symlink(".ssh", p), 0);
}

static void teardown(void)
{
	char cmd[PATH_MAX + 16];
	/* our own temp tree, removed by path */
	snprintf(cmd, sizeof(cmd), "rm -rf %s", base);
	cr_assert_eq(system(cmd), 0);
}

TestSuite(mounts, .init = setup, .fini = teardown, .timeout = 10);

/* rel is appended to home ("" = home itself) */
static int check(const char *rel, const char **reason)
{
	char src[PATH_MAX + 64], *canon = NULL;
	int r;
	snprintf(src, sizeof(src), "%s%s", home, rel);
	r = mount_check_source(src, home, data, &canon, reason);
	free(canon);
	return r;
}

Test(mounts, ordinary_directory_allowed)
{
	const char *why;
	cr_assert_eq(check("/project", &why), 0);
	cr_assert_eq(check("/project/../project/.", &why), 0);
}

Test(mounts, forbidden_sources_refused_even_disguised)
{
	const char *why;
	static const char *const bad[] = { "/.ssh", "/./.ssh", "/project/../.ssh",
		                           "/.ssh/keys", "/link-to-ssh", "/link-to-ssh/keys",
		                           "", "/.", "/.local/share/sbx",
		                           "/.local/share/sbx/../sbx", "/.local", NULL };
	for (size_t i = 0; bad[i]; i++) {
		why = NULL;
		cr_expect_eq(check(bad[i], &why), -EPERM, "source ~%s was not refused", bad[i]);
		cr_expect_not_null(why);
	}
}

Test(mounts, system_roots_refused_but_not_their_children)
{
	const char *why;
	char *canon = NULL;
	static const char *const roots[] = { "/", "/etc", "/usr", "/var", "/usr/../etc", "//", NULL };
	for (size_t i = 0; roots[i]; i++)
		cr_expect_eq(mount_check_source(roots[i], home, data, &canon, &why), -EPERM, "",
		             roots[i]);
	cr_assert_eq(mount_check_source("/usr/share", home, data, &canon, &why), 0);
	cr_assert_str_eq(canon, "/usr/share");
	free(canon);
}

Test(mounts, relative_missing_and_control_chars_invalid)
{
	const char *why;
	char *canon = NULL;
	cr_assert_eq(mount_check_source("relative/path", home, data, &canon, &why), -EINVAL);
	cr_assert_eq(mount_check_source("/nonexistent/sbx/xyz", home, data, &canon, &why), -ENOENT);
	cr_assert_eq(mount_check_source("/tmp/a\nb", home, data, &canon, &why), -EINVAL);
}

Test(mounts, targets)
{
	const char *why;
	cr_assert_eq(mount_check_target("data", &why), 0);
	cr_assert_eq(mount_check_target("a/b/c", &why), 0);
	cr_assert_eq(mount_check_target("/abs", &why), -EINVAL);
	cr_assert_eq(mount_check_target("", &why), -EINVAL);
	cr_assert_eq(mount_check_target("..", &why), -EINVAL);
	cr_assert_eq(mount_check_target("a/../../b", &why), -EINVAL);
	cr_assert_eq(mount_check_target("a//b", &why), -EINVAL);
	cr_assert_eq(mount_check_target("./a", &why), -EINVAL);
	cr_assert_eq(mount_check_target("a/", &why), -EINVAL);
	cr_assert_eq(mount_check_target(".sbx", &why), -EINVAL);
	cr_assert_eq(mount_check_target("x\ty", &why), -EINVAL);
}

/* Issue 7, defect 5: kernel and runtime trees, sockets and device nodes, and the
 * credential trees of every home (not only the daemon user's) are refused. */
static void expect_refused(const char *src)
{
	char *canon = NULL;
	const char *why = NULL;
	cr_expect_eq(mount_check_source(src, home, data, &canon, &why), -EPERM, "%s accepted", src);
	cr_expect_not_null(why, "%s: no reason", src);
	free(canon);
}

Test(mounts, kernel_and_runtime_trees_are_refused_at_and_below, .init = setup, .fini = teardown)
{
	static const char *const srcs[] = { "/proc", "/proc/self", "/sys", "/sys/fs/cgroup",
		                            "/dev", "/dev/shm", "/run", "/boot", "/var/lib",
		                            "/var/run", "/dev/null" };
	for (size_t i = 0; i < sizeof(srcs) / sizeof(srcs[0]); i++) {
		struct stat st;
		if (stat(srcs[i], &st) == 0)
			expect_refused(srcs[i]);
	}
}

Test(mounts, sockets_and_fifos_are_refused, .init = setup, .fini = teardown)
{
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s/project/fifo", home);
	cr_assert_eq(mkfifo(p, 0600), 0);
	expect_refused(p);
	snprintf(p, sizeof(p), "%s/project/sock", home);
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", p);
	cr_assert_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	expect_refused(p);
	close(fd);
}

Test(mounts, another_users_credential_tree_is_refused, .init = setup, .fini = teardown)
{
	char user[32], uhome[PATH_MAX], cmd[PATH_MAX + 128], p[PATH_MAX + 32];
	if (geteuid() != 0) {
		printf("SKIP: creating a user needs root\n");
		cr_skip_test("not root");
	}
	snprintf(user, sizeof(user), "sbxt%d", (int)getpid() % 100000);
	snprintf(uhome, sizeof(uhome), "%s/alice", base);
	snprintf(cmd, sizeof(cmd), "useradd -M -d %s %s", uhome, user);
	cr_assert_eq(system(cmd), 0);
	cr_assert_eq(mkdir(uhome, 0755), 0);
	snprintf(p, sizeof(p), "%s/.aws", uhome);
	cr_assert_eq(mkdir(p, 0700), 0);
	snprintf(p, sizeof(p), "%s/.aws/profile", uhome);
	cr_assert_eq(mkdir(p, 0700), 0);
	expect_refused(p);
	snprintf(p, sizeof(p), "%s/.aws", uhome);
	expect_refused(p);
	/* the rest of that home is a plain directory */
	char *canon = NULL;
	const char *why = NULL;
	cr_expect_eq(mount_check_source(uhome, home, data, &canon, &why), 0, "%s", why ? why : "");
	free(canon);
	snprintf(cmd, sizeof(cmd), "userdel %s", user);
	cr_expect_eq(system(cmd), 0);
}

/* The run-time check on an opened source: it must still be the stored path, and neither a
 * special file nor a kernel filesystem (a symlink swapped in since add time is caught
 * because the descriptor's path differs). */
Test(mounts, an_opened_source_is_checked_again, .init = setup, .fini = teardown)
{
	char canon[PATH_MAX], link[PATH_MAX + 16];
	const char *why = NULL;
	int fd;
	cr_assert_not_null(realpath(home, canon));
	fd = open(canon, O_PATH | O_CLOEXEC);
	cr_assert_geq(fd, 0);
	cr_expect_eq(mount_check_opened(fd, canon, &why), 0, "%s", why ? why : "");
	snprintf(link, sizeof(link), "%s/other", canon);
	cr_expect_eq(mount_check_opened(fd, link, &why), -EPERM, "another path was accepted");
	cr_expect_not_null(why);
	close(fd);
	fd = open("/proc/self", O_PATH | O_CLOEXEC | O_NOFOLLOW);
	cr_assert_geq(fd, 0);
	cr_expect_eq(mount_check_opened(fd, "/proc/self", &why), -EPERM, "procfs was accepted");
	close(fd);
}
