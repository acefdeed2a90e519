/* Per-run cgroups, for real: a memory hog and a fork bomb in a group are stopped. */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fence/cgroup.h"

TestSuite(limits, .timeout = 60);

static bool usable(void)
{
	if (geteuid() != 0) {
		printf("SKIP: cgroup tests need root\n");
		return false;
	}
	if (cgroup_detect() == CG_NONE) {
		printf("SKIP: no cgroup v2 controllers and no v1 memory/pids hierarchy\n");
		return false;
	}
	return true;
}

/* fork a child that waits until it is in the group, then runs fn */
static pid_t start_in(struct cgroup_run *cg, void (*fn)(void))
{
	int p[2];
	char c;
	pid_t pid;
	cr_assert_eq(pipe(p), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		close(p[1]);
		if (read(p[0], &c, 1) != 1)
			_exit(99);
		fn();
		_exit(0);
	}
	close(p[0]);
	cr_assert_eq(cgroup_run_attach(cg, pid), 0);
	cr_assert_eq(write(p[1], "g", 1), 1);
	close(p[1]);
	return pid;
}

static void hog(void)
{
	for (size_t total = 0; total < (size_t)2 << 30; total += 1 << 20) {
		char *m = malloc(1 << 20);
		if (!m)
			_exit(3);
		memset(m, 1, 1 << 20);
	}
	_exit(4); /* got 2 GiB: the limit did nothing */
}

static void bomb(void)
{
	int refused = 0;
	for (int i = 0; i < 1000; i++) {
		pid_t c = fork();
		if (c == 0) {
			pause();
			_exit(0);
		}
		if (c < 0)
			refused++;
	}
	_exit(refused ? 5 : 6);
}

Test(limits, memory_hog_is_stopped)
{
	struct cgroup_run cg;
	int status;
	if (!usable())
		cr_skip_test("no usable cgroups");
	cr_assert_eq(cgroup_run_create("test_hog", 64, 64, &cg), 0);
	cr_assert(cg.memory_limited);
	pid_t pid = start_in(&cg, hog);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
	          "hog was not OOM-killed (status 0x%x)", status);
	cr_assert(cgroup_run_hit_memory(&cg));
	cgroup_run_destroy(&cg);
}

Test(limits, fork_bomb_is_stopped_and_killed_whole)
{
	struct cgroup_run cg;
	int status;
	if (!usable())
		cr_skip_test("no usable cgroups");
	cr_assert_eq(cgroup_run_create("test_bomb", 0, 32, &cg), 0);
	cr_assert(cg.pids_limited);
	pid_t pid = start_in(&cg, bomb);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 5, "forks were not refused (0x%x)",
	          status);
	cr_assert(cgroup_run_hit_pids(&cg));
	/* the bomb's children are orphans now, still in the group: end them all */
	cr_assert_gt(cgroup_run_nprocs(&cg), 0);
	cr_assert_eq(cgroup_run_kill(&cg), 0);
	for (int i = 0; i < 200 && cgroup_run_nprocs(&cg) > 0; i++)
		usleep(10000);
	cr_assert_eq(cgroup_run_nprocs(&cg), 0);
	cgroup_run_destroy(&cg);
}

Test(limits, bad_run_id_refused)
{
	struct cgroup_run cg;
	cr_assert_lt(cgroup_run_create("../escape", 64, 64, &cg), 0);
	cr_assert_lt(cgroup_run_create("a/b", 64, 64, &cg), 0);
}
