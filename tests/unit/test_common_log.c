/* common/log.c: with stderr the journal's stream ($JOURNAL_STREAM names it), every line
 * carries its syslog priority and no timestamp; otherwise the plain timestamped form. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "log.h"

/* In a child with stderr a pipe: JOURNAL_STREAM set to that pipe (or to another inode when
 * !match), log one warning and one info line; the parent reads them. */
static void logged(bool match, char *out, size_t sz)
{
	int p[2];
	cr_assert_eq(pipe(p), 0);
	pid_t pid = fork();
	if (pid == 0) {
		struct stat st;
		char js[64];
		dup2(p[1], 2);
		fstat(2, &st);
		snprintf(js, sizeof(js), "%llu:%llu", (unsigned long long)st.st_dev,
		         (unsigned long long)st.st_ino + (match ? 0 : 1));
		setenv("JOURNAL_STREAM", js, 1);
		log_init("t", LOG_LVL_DEBUG);
		log_warnx("disk %d%% full", 97);
		log_info("ready");
		log_debug("detail");
		_exit(0);
	}
	close(p[1]);
	size_t n = 0;
	ssize_t r;
	while (n + 1 < sz && (r = read(p[0], out + n, sz - 1 - n)) > 0)
		n += (size_t)r;
	out[n] = '\0';
	close(p[0]);
	waitpid(pid, NULL, 0);
}

Test(log, the_journal_gets_priorities)
{
	char out[1024], want[256];
	logged(true, out, sizeof(out));
	/* the child's pid is in each line; compare the rest */
	char *l1 = strstr(out, "<4>t["), *l2 = strstr(out, "<6>t["), *l3 = strstr(out, "<7>t[");
	cr_assert(l1 && l2 && l3, "[%s]", out);
	cr_expect(strstr(l1, "] warn: disk 97% full\n") != NULL, "[%s]", out);
	cr_expect(strstr(l2, "] info: ready\n") != NULL, "[%s]", out);
	snprintf(want, sizeof(want), "%s", out);
	cr_expect(out[0] == '<', "a timestamp before the priority: [%s]", out);
}

Test(log, anything_else_gets_timestamps)
{
	char out[1024];
	logged(false, out, sizeof(out));
	cr_expect(!strchr(out, '<'), "[%s]", out);
	cr_expect(out[2] == ':' && out[5] == ':' && strstr(out, " t[") && strstr(out, "warn: disk 97% full"),
	          "[%s]", out);
}
