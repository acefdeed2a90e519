/* Per-run cgroups, for real: a memory hog and a fork bomb in a group are stopped. */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fence/cgroup.h"

static char instance_dir[64];

static void fini(void)
{
	/* the groups' parents of this test's instance, and the directory naming it */
	if (instance_dir[0] && cgroup_instance_set(instance_dir) == 0)
		cgroup_instance_release();
	if (instance_dir[0])
		rmdir(instance_dir);
}

TestSuite(limits, .timeout = 60, .fini = fini);

/* An instance of its own per test (the parent group is named after a data directory). */
static void instance_tmp(char *dir, size_t dirsz)
{
	snprintf(dir, dirsz, "/tmp/sbx-limits.XXXXXX");
	cr_assert(mkdtemp(dir), "mkdtemp");
	cr_assert_eq(cgroup_instance_set(dir), 0);
}

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
	instance_tmp(instance_dir, sizeof(instance_dir));
	return true;
}

/* fork a child that joins the run's groups itself, as a run's child does, and runs fn once
 * it is in them; returns when it is */
static pid_t start_in(struct cgroup_run *cg, void (*fn)(void))
{
	int p[2];
	char c;
	pid_t pid;
	cr_assert_eq(pipe(p), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		close(p[0]);
		if (cgroup_run_join_self(cg, false) < 0)
			_exit(99);
		if (write(p[1], "j", 1) != 1)
			_exit(98);
		close(p[1]);
		fn();
		_exit(0);
	}
	close(p[1]);
	cr_assert_eq(read(p[0], &c, 1), 1, "the child could not join its groups");
	close(p[0]);
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

static void sleeper(void)
{
	for (;;)
		pause();
}

static bool gone(const struct cgroup_run *cg)
{
	const char *g[] = { cg->v2, cg->mem, cg->pids, cg->kill };
	for (size_t i = 0; i < 4; i++)
		if (g[i][0] && access(g[i], F_OK) == 0)
			return false;
	return true;
}

/* A launcher SIGKILLed mid-run leaves its run groups, and maybe their processes; the next
 * launcher of the same instance kills and removes them, and touches no other instance's. */
Test(limits, sweep_kills_and_removes_only_this_instances_groups)
{
	char mine[64], other[64];
	struct cgroup_run a, b;
	int st;
	if (!usable())
		cr_skip_test("no usable cgroups");
	instance_tmp(other, sizeof(other));
	cr_assert_eq(cgroup_run_create("run_sweepother1", 0, 16, &b), 0);
	pid_t pb = start_in(&b, sleeper);
	instance_tmp(mine, sizeof(mine));
	cr_assert_eq(cgroup_run_create("run_sweepmine01", 0, 16, &a), 0);
	pid_t pa = start_in(&a, sleeper);
	cr_assert_str_neq(a.pids[0] ? a.pids : a.v2, b.pids[0] ? b.pids : b.v2);

	int n = cgroup_sweep(); /* as a new launcher of `mine` would at start-up */
	cr_assert_geq(n, 1, "sweep returned %d", n);
	cr_assert_eq(waitpid(pa, &st, 0), pa);
	cr_expect(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "orphan not killed (0x%x)", st);
	cr_expect(gone(&a), "a run group of this instance is left: %s", a.pids[0] ? a.pids : a.v2);
	cr_expect_eq(waitpid(pb, &st, WNOHANG), 0, "the other instance's process was touched");
	cr_expect(!gone(&b) && access(b.pids[0] ? b.pids : b.v2, F_OK) == 0,
	          "the other instance's group was removed");
	cgroup_instance_release();

	cr_assert_eq(cgroup_instance_set(other), 0);
	cgroup_run_destroy(&b);
	waitpid(pb, &st, 0);
	cgroup_instance_release();
	rmdir(mine);
	rmdir(other);
}
