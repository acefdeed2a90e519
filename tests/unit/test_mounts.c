/* Mount source/target checks: canonicalization before the forbidden-roots comparison. */
#include <criterion/criterion.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
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
