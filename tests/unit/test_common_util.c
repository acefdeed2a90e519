/* common/util.c: close_fds_from keeps exactly what it is told to, in any order. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util.h"

#define NFDS 40

/* In a child: open NFDS descriptors, close all from fds[0] keeping `keep` (indexes into
 * fds), and report through the exit status whether exactly the kept ones survived. */
static int run_case(const int *keep_idx, size_t nkeep)
{
	pid_t pid = fork();
	int st;
	if (pid == 0) {
		int fds[NFDS], keep[NFDS];
		for (int i = 0; i < NFDS; i++)
			if ((fds[i] = open("/dev/null", O_RDONLY)) < 0)
				_exit(90);
		for (size_t i = 0; i < nkeep; i++)
			keep[i] = fds[keep_idx[i]];
		close_fds_from(fds[0], keep, nkeep);
		for (int i = 0; i < NFDS; i++) {
			bool kept = false;
			for (size_t j = 0; j < nkeep; j++)
				kept |= keep_idx[j] == i;
			if ((fcntl(fds[i], F_GETFD) >= 0) != kept)
				_exit(10 + i % 80);
		}
		/* stdin..stderr (below lowfd) are untouched */
		_exit(fcntl(2, F_GETFD) >= 0 ? 0 : 99);
	}
	cr_assert_gt(pid, 0);
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 200;
}

Test(util, close_fds_from_keeps_exactly_the_listed_ones)
{
	static const int none[1] = { 0 };
	static const int unsorted[] = { 30, 2, 17, 3, 39 };
	static const int dup_first[] = { 0, 0, 1, 5 };
	static const int all_last[] = { 39 };
	cr_assert_eq(run_case(none, 0), 0);
	cr_assert_eq(run_case(unsorted, 5), 0);
	cr_assert_eq(run_case(dup_first, 4), 0);
	cr_assert_eq(run_case(all_last, 1), 0);
}
