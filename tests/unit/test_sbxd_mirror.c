/* sbxd's mirror of the launcher's process groups: bounds, refusals, and that the groups
 * really die. */
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sbxd.h"

TestSuite(sbxd_mirror, .timeout = 20);

static struct mirror *mirror_new(void)
{
	struct mirror *m = calloc(1, sizeof(*m));
	cr_assert_not_null(m);
	return m;
}

static struct msg_PGRP_ADD add_msg(uint32_t pgid, uint32_t jail)
{
	return (struct msg_PGRP_ADD){ .pgid = pgid, .jail_pid = jail, .sandbox_id = "sbx_a",
		                      .run_id = "run_b", .cgroup = "" };
}

/* A process in a group of its own that only dies by signal. */
static pid_t spawn_group(void)
{
	pid_t p = fork();
	cr_assert_geq(p, 0);
	if (p == 0) {
		setsid();
		for (;;)
			pause();
	}
	/* wait until it leads its own group, so kill(-p) addresses it */
	for (int i = 0; i < 1000 && getpgid(p) != p; i++)
		usleep(1000);
	cr_assert_eq(getpgid(p), p);
	return p;
}

Test(sbxd_mirror, add_update_del)
{
	struct mirror *m = mirror_new();
	struct msg_PGRP_ADD a = add_msg(5000, 0);
	const struct mirror_entry *e;

	cr_assert_eq(mirror_add(m, &a, NULL, 0), 0);
	cr_assert_eq(m->n, 1);
	e = mirror_find(m, 5000);
	cr_assert_not_null(e);
	cr_assert_eq(e->jail_pid, 0);
	cr_assert_str_eq(e->sandbox_id, "sbx_a");
	/* a second PGRP_ADD carries the jail pid once known; it updates, not duplicates */
	a.jail_pid = 5001;
	cr_assert_eq(mirror_add(m, &a, NULL, 0), 0);
	cr_assert_eq(m->n, 1);
	cr_assert_eq(mirror_find(m, 5000)->jail_pid, 5001);
	/* ...and a later one without it does not forget it */
	a.jail_pid = 0;
	cr_assert_eq(mirror_add(m, &a, NULL, 0), 0);
	cr_assert_eq(mirror_find(m, 5000)->jail_pid, 5001);
	cr_assert_eq(mirror_del(m, 5000), 0);
	cr_assert_eq(m->n, 0);
	cr_assert_eq(mirror_del(m, 5000), -ENOENT);
	free(m);
}

Test(sbxd_mirror, refuses_groups_that_must_never_be_signalled)
{
	struct mirror *m = mirror_new();
	pid_t protect[] = { getpid(), getpgrp() };
	struct msg_PGRP_ADD a;

	/* 0 would be our own group, 1 kill(-1): every process we may signal */
	a = add_msg(0, 0);
	cr_assert_eq(mirror_add(m, &a, protect, 2), -EINVAL);
	a = add_msg(1, 0);
	cr_assert_eq(mirror_add(m, &a, protect, 2), -EINVAL);
	a = add_msg(5000, 1);
	cr_assert_eq(mirror_add(m, &a, protect, 2), -EINVAL);
	a = add_msg((uint32_t)getpgrp(), 0);
	cr_assert_eq(mirror_add(m, &a, protect, 2), -EINVAL);
	a = add_msg(5000, (uint32_t)getpid());
	cr_assert_eq(mirror_add(m, &a, protect, 2), -EINVAL);
	a = add_msg(0x80000000u, 0); /* would be negative as a pid_t */
	cr_assert_eq(mirror_add(m, &a, protect, 2), -EINVAL);
	cr_assert_eq(m->n, 0);
	free(m);
}

Test(sbxd_mirror, bounded_at_and_past_the_limit)
{
	struct mirror *m = mirror_new();
	for (uint32_t i = 0; i < MIRROR_MAX; i++) {
		struct msg_PGRP_ADD a = add_msg(100000 + i, 0);
		cr_assert_eq(mirror_add(m, &a, NULL, 0), 0, "entry %u", i);
	}
	cr_assert_eq(m->n, MIRROR_MAX);
	struct msg_PGRP_ADD past = add_msg(100000 + MIRROR_MAX, 0);
	cr_assert_eq(mirror_add(m, &past, NULL, 0), -ENOSPC);
	/* an update of a known group still works when full */
	struct msg_PGRP_ADD upd = add_msg(100000, 7777);
	cr_assert_eq(mirror_add(m, &upd, NULL, 0), 0);
	cr_assert_eq(mirror_find(m, 100000)->jail_pid, 7777);
	cr_assert_eq(mirror_del(m, 100001), 0);
	cr_assert_eq(mirror_add(m, &past, NULL, 0), 0);
	mirror_clear(m);
	cr_assert_eq(m->n, 0);
	free(m);
}

Test(sbxd_mirror, cgroup_paths)
{
	struct mirror *m = mirror_new();
	struct msg_PGRP_ADD a = add_msg(6000, 0);
	char longp[MIRROR_CGROUP_MAX + 2];

	a.cgroup = "/sys/fs/cgroup/sbx/run_1";
	cr_assert_eq(mirror_add(m, &a, NULL, 0), 0);
	cr_assert_str_eq(mirror_find(m, 6000)->cgroup, "/sys/fs/cgroup/sbx/run_1");
	/* a path that climbs out of the cgroup tree is not kept: sbxd would write to it */
	a.cgroup = "/sys/fs/cgroup/../../etc";
	cr_assert_eq(mirror_add(m, &a, NULL, 0), 0);
	cr_assert_str_empty(mirror_find(m, 6000)->cgroup);
	a.cgroup = "/etc/cgroup";
	a.pgid = 6001;
	cr_assert_eq(mirror_add(m, &a, NULL, 0), 0);
	cr_assert_str_empty(mirror_find(m, 6001)->cgroup);
	/* at the limit kept, past it dropped (never truncated into another path) */
	memset(longp, 'a', sizeof(longp));
	memcpy(longp, "/sys/fs/cgroup/", 15);
	longp[MIRROR_CGROUP_MAX] = '\0';
	a.cgroup = longp;
	a.pgid = 6002;
	cr_assert_eq(mirror_add(m, &a, NULL, 0), 0);
	cr_assert_eq(strlen(mirror_find(m, 6002)->cgroup), MIRROR_CGROUP_MAX);
	longp[MIRROR_CGROUP_MAX] = 'a';
	longp[MIRROR_CGROUP_MAX + 1] = '\0';
	a.pgid = 6003;
	cr_assert_eq(mirror_add(m, &a, NULL, 0), 0);
	cr_assert_str_empty(mirror_find(m, 6003)->cgroup);
	free(m);
}

Test(sbxd_mirror, kills_the_group_and_the_jail_group)
{
	struct mirror *m = mirror_new();
	pid_t g = spawn_group(), j = spawn_group();
	struct msg_PGRP_ADD a = add_msg((uint32_t)g, (uint32_t)j);
	int st;

	cr_assert_eq(mirror_add(m, &a, NULL, 0), 0);
	cr_assert_eq(mirror_count_alive(m), 1);
	cr_assert_eq(mirror_signal_all(m, SIGKILL), 1);
	cr_assert_eq(waitpid(g, &st, 0), g);
	cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	cr_assert_eq(waitpid(j, &st, 0), j);
	cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "the jail's own group died too");
	cr_assert_eq(mirror_count_alive(m), 0, "reaped groups are gone");
	cr_assert_eq(mirror_signal_all(m, SIGKILL), 0);
	free(m);
}
