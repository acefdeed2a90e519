/* The files API's path split (launcher/files.c), and /proc parsing for the processes route
 * (launcher/procs.c) read against this very process. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "files.h"
#include "procs.h"

static size_t split(const char *path, const char **comp, char *buf, size_t bufsz, int *ret)
{
	size_t n = 0;
	*ret = files_split(path, buf, bufsz, comp, &n);
	return n;
}

Test(files_split, components)
{
	const char *c[FILES_COMPONENTS_MAX];
	char buf[4200];
	int r;
	cr_expect_eq(split("", c, buf, sizeof(buf), &r), 0u);
	cr_expect_eq(r, 0);
	cr_expect_eq(split("./a//b/./c/", c, buf, sizeof(buf), &r), 3u);
	cr_expect_str_eq(c[0], "a");
	cr_expect_str_eq(c[2], "c");
	/* ".." is kept: the kernel judges it against the base */
	cr_expect_eq(split("a/../..", c, buf, sizeof(buf), &r), 3u);
	cr_expect_str_eq(c[2], "..");
	split("/etc/passwd", c, buf, sizeof(buf), &r);
	cr_expect_eq(r, -EINVAL, "absolute paths are refused");
}

Test(files_split, component_limit_at_and_past)
{
	const char *c[FILES_COMPONENTS_MAX];
	static char path[2 * (FILES_COMPONENTS_MAX + 1) + 1], buf[sizeof(path) + 1];
	int r;
	for (size_t i = 0; i < FILES_COMPONENTS_MAX; i++)
		memcpy(path + 2 * i, "a/", 2);
	path[2 * FILES_COMPONENTS_MAX] = '\0';
	cr_expect_eq(split(path, c, buf, sizeof(buf), &r), FILES_COMPONENTS_MAX);
	cr_expect_eq(r, 0);
	strcat(path, "b");
	split(path, c, buf, sizeof(buf), &r);
	cr_expect_eq(r, -EINVAL, "one component past the limit");
}

Test(procs, reads_this_process)
{
	struct proc_info p;
	char cmd[256];
	int fd = open("/proc/self", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	cr_assert(fd >= 0);
	cr_assert_eq(proc_read(fd, &p), 0);
	cr_expect_eq(p.pid, getpid());
	cr_expect_eq(p.ppid, getppid());
	cr_expect_eq(p.pgid, getpgrp());
	cr_expect_eq(p.uid, geteuid());
	cr_expect(p.state == 'R' || p.state == 'S');
	cr_expect_eq(strlen(p.cap_eff), 16u);
	proc_cmdline(fd, cmd, sizeof(cmd));
	cr_expect(cmd[0] && p.comm[0], "a command line and a name: %s", cmd);
	close(fd);
}

Test(procs, only_the_listed_signals)
{
	cr_expect(procs_signal_allowed(SIGTERM));
	cr_expect(procs_signal_allowed(SIGKILL));
	cr_expect(!procs_signal_allowed(0));
	cr_expect(!procs_signal_allowed(SIGSEGV));
	cr_expect(!procs_signal_allowed(9999));
}
