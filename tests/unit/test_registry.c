/* The registry of process groups: add/remove/list/lookup, what reaches sbxd's mirror, the
 * run guard, the limits, and that kill only reaches a group of the right sandbox. */
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "registry.h"

TestSuite(registry, .timeout = 20);

#define SENT_MAX 16
static struct {
	enum proto_type type;
	uint32_t pgid, jail_pid;
	char run_id[PROTO_ID_MAX + 1];
} sent[SENT_MAX];
static size_t nsent;

static void record(enum proto_type type, const void *msg, void *arg)
{
	if (nsent >= SENT_MAX)
		return;
	sent[nsent].type = type;
	if (type == MSG_PGRP_ADD) {
		const struct msg_PGRP_ADD *a = msg;
		sent[nsent].pgid = a->pgid;
		sent[nsent].jail_pid = a->jail_pid;
		snprintf(sent[nsent].run_id, sizeof(sent[0].run_id), "%s", a->run_id);
	} else {
		sent[nsent].pgid = ((const struct msg_PGRP_DEL *)msg)->pgid;
	}
	nsent++;
}

static struct registry R;

static void setup(void)
{
	registry_init(&R);
	registry_set_mirror(&R, record, NULL);
	nsent = 0;
}

Test(registry, add_find_list_remove, .init = setup)
{
	const struct registry_entry *out[8];
	cr_assert_eq(registry_add(&R, "sbx_a", "run_1", 1000, REG_LEADER, ""), 0);
	cr_assert_eq(registry_add(&R, "sbx_a", "run_2", 2000, REG_LEADER, ""), 0);
	cr_assert_eq(registry_add(&R, "sbx_b", "run_3", 3000, REG_LEADER, ""), 0);
	cr_assert_eq(registry_add(&R, "sbx_a", "run_1", 1001, REG_JAIL, ""), 0);

	const struct registry_entry *e = registry_find(&R, 1001);
	cr_assert_not_null(e);
	cr_assert_eq(e->kind, REG_JAIL);
	cr_assert_str_eq(e->run_id, "run_1");
	cr_assert_null(registry_find(&R, 4000));

	cr_assert_eq(registry_list(&R, "sbx_a", NULL, out, 8), 3);
	cr_assert_eq(registry_list(&R, NULL, "run_1", out, 8), 2);
	cr_assert_eq(out[0]->pgid, 1000);
	cr_assert_eq(out[1]->pgid, 1001);
	cr_assert_eq(registry_list(&R, NULL, NULL, out, 8), 4);
	cr_assert_eq(registry_list(&R, NULL, NULL, out, 1), 4, "the count is not capped by max");
	cr_assert_eq(registry_list(&R, "sbx_c", NULL, out, 8), 0);

	cr_assert_eq(registry_remove(&R, 2000), 0);
	cr_assert_eq(registry_remove(&R, 2000), -ENOENT);
	cr_assert_eq(registry_list(&R, "sbx_a", NULL, out, 8), 2);
}

Test(registry, refusals, .init = setup)
{
	cr_assert_eq(registry_add(&R, "sbx_a", "run_1", 1, REG_LEADER, ""), -EINVAL, "pid 1");
	cr_assert_eq(registry_add(&R, "sbx_a", "run_1", 0, REG_LEADER, ""), -EINVAL);
	cr_assert_eq(registry_add(&R, "sbx_a", "run_1", -5, REG_LEADER, ""), -EINVAL);
	cr_assert_eq(registry_add(&R, "sbx_a", "", 100, REG_LEADER, ""), -EINVAL);
	cr_assert_eq(registry_add(&R, "sbx_a", "run_1", 100, REG_KIND_N_, ""), -EINVAL);
	cr_assert_eq(registry_add(&R, "sbx_a", "run_1", 100, REG_LEADER, ""), 0);
	cr_assert_eq(registry_add(&R, "sbx_b", "run_2", 100, REG_LEADER, ""), -EEXIST);
	cr_assert_eq(nsent, 1, "refusals reach no mirror");
}

Test(registry, what_sbxd_sees, .init = setup)
{
	/* leader, then the jail: sbxd gets the leader again, now with its jail pid */
	cr_assert_eq(registry_add(&R, "sbx_a", "run_1", 1000, REG_LEADER, ""), 0);
	cr_assert_eq(registry_add(&R, "sbx_a", "run_1", 1001, REG_JAIL, ""), 0);
	cr_assert_eq(registry_add(&R, "sbx_a", "run_1", 1002, REG_HELPER, ""), 0);
	cr_assert_eq(nsent, 3);
	cr_assert_eq(sent[0].type, MSG_PGRP_ADD);
	cr_assert_eq(sent[0].pgid, 1000);
	cr_assert_eq(sent[0].jail_pid, 0);
	cr_assert_eq(sent[1].type, MSG_PGRP_ADD);
	cr_assert_eq(sent[1].pgid, 1000);
	cr_assert_eq(sent[1].jail_pid, 1001);
	cr_assert_eq(sent[2].pgid, 1002, "a helper is mirrored as its own group");
	cr_assert_str_eq(sent[2].run_id, "run_1");

	/* the guard: every group of the run goes, and sbxd is told once per entry it has */
	nsent = 0;
	cr_assert_eq(registry_release_run(&R, "run_1"), 3);
	cr_assert_eq(R.n, 0);
	cr_assert_eq(nsent, 2);
	cr_assert_eq(sent[0].type, MSG_PGRP_DEL);
	cr_assert_eq(sent[0].pgid, 1002);
	cr_assert_eq(sent[1].type, MSG_PGRP_DEL);
	cr_assert_eq(sent[1].pgid, 1000);
	cr_assert_eq(registry_release_run(&R, "run_1"), 0, "twice is harmless");
}

Test(registry, per_run_limit_at_and_past, .init = setup)
{
	for (unsigned i = 0; i < REGISTRY_RUN_GROUPS_MAX; i++)
		cr_assert_eq(registry_add(&R, "sbx_a", "run_1", (pid_t)(100 + i), REG_HELPER, ""), 0);
	cr_assert_eq(registry_add(&R, "sbx_a", "run_1", 999, REG_HELPER, ""), -E2BIG);
	cr_assert_eq(registry_add(&R, "sbx_a", "run_2", 999, REG_HELPER, ""), 0);
}

Test(registry, total_limit_at_and_past, .init = setup)
{
	char run[32];
	registry_set_mirror(&R, NULL, NULL);
	for (unsigned i = 0; i < REGISTRY_MAX; i++) {
		snprintf(run, sizeof(run), "run_%u", i);
		cr_assert_eq(registry_add(&R, "sbx_a", run, (pid_t)(10 + i), REG_LEADER, ""), 0);
	}
	cr_assert_eq(R.n, REGISTRY_MAX);
	cr_assert_eq(registry_add(&R, "sbx_a", "run_x", 99999, REG_LEADER, ""), -ENOSPC);
	cr_assert_eq(registry_remove(&R, 10), 0);
	cr_assert_eq(registry_add(&R, "sbx_a", "run_x", 99999, REG_LEADER, ""), 0);
}

Test(registry, cgroup_at_and_past_its_limit, .init = setup)
{
	char at[REGISTRY_CGROUP_MAX + 1], past[REGISTRY_CGROUP_MAX + 2];
	memset(at, 'a', REGISTRY_CGROUP_MAX);
	at[REGISTRY_CGROUP_MAX] = '\0';
	memset(past, 'a', REGISTRY_CGROUP_MAX + 1);
	past[REGISTRY_CGROUP_MAX + 1] = '\0';
	cr_assert_eq(registry_add(&R, "sbx_a", "run_1", 100, REG_LEADER, at), 0);
	cr_assert_eq(strlen(registry_find(&R, 100)->cgroup), REGISTRY_CGROUP_MAX);
	cr_assert_eq(registry_add(&R, "sbx_a", "run_2", 200, REG_LEADER, past), 0);
	cr_assert_str_empty(registry_find(&R, 200)->cgroup, "too long: kept as none");
}

/* A real group of our own: a child that leads its own session and sleeps. */
static pid_t sleeper(void)
{
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		setsid();
		pause();
		_exit(0);
	}
	for (int i = 0; i < 200 && getpgid(pid) != pid; i++)
		usleep(1000);
	return pid;
}

Test(registry, kill_reaches_only_the_right_sandbox, .init = setup)
{
	int st;
	pid_t a = sleeper(), b = sleeper();
	cr_assert_eq(registry_add(&R, "sbx_a", "run_1", a, REG_LEADER, ""), 0);
	cr_assert_eq(registry_add(&R, "sbx_b", "run_2", b, REG_LEADER, ""), 0);

	cr_assert_eq(registry_kill_group(&R, "sbx_b", a, SIGKILL), -EPERM, "another sandbox's group");
	cr_assert_eq(registry_kill_group(&R, "sbx_a", 1, SIGKILL), -ENOENT, "pid 1 is never ours");
	cr_assert_eq(registry_kill_group(&R, "sbx_a", getpgrp(), SIGKILL), -ENOENT);
	cr_assert_eq(waitpid(a, &st, WNOHANG), 0, "a survived the refused kills");

	cr_assert_eq(registry_kill_group(&R, "sbx_a", a, SIGKILL), 0);
	cr_assert_eq(waitpid(a, &st, 0), a);
	cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	cr_assert_eq(waitpid(b, &st, WNOHANG), 0, "b is untouched");

	cr_assert_eq(registry_kill(&R, "sbx_b", NULL, REG_KINDS_ALL, SIGKILL), 1);
	cr_assert_eq(waitpid(b, &st, 0), b);
	cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	cr_assert_eq(registry_kill(&R, NULL, NULL, REG_KINDS_ALL, 0), 0, "both groups are gone");
}

Test(registry, kill_by_kind, .init = setup)
{
	int st;
	pid_t lead = sleeper(), jail = sleeper();
	cr_assert_eq(registry_add(&R, "sbx_a", "run_1", lead, REG_LEADER, ""), 0);
	cr_assert_eq(registry_add(&R, "sbx_a", "run_1", jail, REG_JAIL, ""), 0);
	/* after the leader was reaped the runner signals every kind but the leader */
	cr_assert_eq(registry_kill(&R, NULL, "run_1", REG_KINDS_ALL & ~REG_KIND_BIT(REG_LEADER), SIGKILL), 1);
	cr_assert_eq(waitpid(jail, &st, 0), jail);
	cr_assert_eq(waitpid(lead, &st, WNOHANG), 0);
	cr_assert_eq(registry_kill(&R, NULL, "run_1", REG_KINDS_ALL, SIGKILL), 1);
	cr_assert_eq(waitpid(lead, &st, 0), lead);
}
