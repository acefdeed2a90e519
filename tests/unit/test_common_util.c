/* common/util.c: close_fds_from keeps exactly what it is told to, in any order. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/time.h>
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

static void on_alarm(int sig) { (void)sig; }

/* A signal storm (SIGALRM every 200 us, no SA_RESTART) neither shortens the wait nor
 * fails it: the network fence's waits for the leader and sbx-net depend on it. */
Test(util, wait_readable_outlasts_signals_and_keeps_its_deadline)
{
	struct sigaction sa = { .sa_handler = on_alarm }; /* no SA_RESTART: poll gets EINTR */
	struct itimerval it = { { 0, 200 }, { 0, 200 } }, off = { 0 };
	int p[2];
	cr_assert_eq(pipe(p), 0);
	cr_assert_eq(sigaction(SIGALRM, &sa, NULL), 0);
	cr_assert_eq(setitimer(ITIMER_REAL, &it, NULL), 0);
	uint64_t t0 = now_ms();
	int r = wait_readable(p[0], 300);
	uint64_t waited = now_ms() - t0;
	cr_expect_eq(r, -ETIMEDOUT, "%s", strerror(-r));
	cr_expect_geq(waited, 300, "the wait ended early: %llu ms", (unsigned long long)waited);
	cr_assert_eq(write(p[1], "x", 1), 1);
	cr_expect_eq(wait_readable(p[0], 300), 0, "data ready, yet no wake-up");
	setitimer(ITIMER_REAL, &off, NULL);
	signal(SIGALRM, SIG_DFL);
	close(p[0]);
	close(p[1]);
}
