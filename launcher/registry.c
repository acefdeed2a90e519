/* See registry.h. A flat array: REGISTRY_MAX is small and lookups are rare next to a fork. */
#include "registry.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

static struct registry launcher_registry;

struct registry *registry_launcher(void) { return &launcher_registry; }

void registry_init(struct registry *r)
{
	memset(r, 0, sizeof(*r));
}

void registry_set_mirror(struct registry *r, registry_mirror_fn fn, void *arg)
{
	r->mirror = fn;
	r->mirror_arg = arg;
}

static struct registry_entry *find(const struct registry *r, pid_t pgid)
{
	for (size_t i = 0; i < r->n; i++)
		if (r->e[i].pgid == pgid)
			return (struct registry_entry *)&r->e[i];
	return NULL;
}

const struct registry_entry *registry_find(const struct registry *r, pid_t pgid)
{
	return find(r, pgid);
}

static const struct registry_entry *run_group(const struct registry *r, const char *run_id,
                                              enum registry_kind kind)
{
	for (size_t i = 0; i < r->n; i++)
		if (r->e[i].kind == kind && strcmp(r->e[i].run_id, run_id) == 0)
			return &r->e[i];
	return NULL;
}

/* sbxd's mirror keys on a pgid and carries one jail pid beside it: a leader is sent with
 * its run's jail group; a jail group re-sends its leader (sbxd updates in place). */
static void mirror_add(const struct registry *r, const struct registry_entry *e)
{
	const struct registry_entry *lead = e, *jail = NULL;
	struct msg_PGRP_ADD m;

	if (!r->mirror)
		return;
	if (e->kind == REG_JAIL && (lead = run_group(r, e->run_id, REG_LEADER)))
		jail = e;
	else if (e->kind == REG_JAIL)
		lead = e; /* no leader (yet): the jail's group stands alone */
	else if (e->kind == REG_LEADER)
		jail = run_group(r, e->run_id, REG_JAIL);
	m = (struct msg_PGRP_ADD){ .pgid = (uint32_t)lead->pgid,
		                   .jail_pid = jail ? (uint32_t)jail->pgid : 0,
		                   .sandbox_id = (char *)lead->sandbox_id,
		                   .run_id = (char *)lead->run_id,
		                   .cgroup = (char *)lead->cgroup };
	r->mirror(MSG_PGRP_ADD, &m, r->mirror_arg);
}

static void mirror_del(const struct registry *r, const struct registry_entry *e)
{
	struct msg_PGRP_DEL m = { .pgid = (uint32_t)e->pgid };
	/* a jail group rides on its leader's entry, which goes with the leader */
	if (!r->mirror || (e->kind == REG_JAIL && run_group(r, e->run_id, REG_LEADER)))
		return;
	r->mirror(MSG_PGRP_DEL, &m, r->mirror_arg);
}

int registry_add(struct registry *r, const char *sandbox_id, const char *run_id, pid_t pgid,
                 enum registry_kind kind, const char *cgroup)
{
	struct registry_entry *e;
	size_t owned = 0;

	if (pgid <= 1 || !run_id || !*run_id || (unsigned)kind >= REG_KIND_N_)
		return -EINVAL;
	if (find(r, pgid))
		return -EEXIST;
	for (size_t i = 0; i < r->n; i++)
		owned += strcmp(r->e[i].run_id, run_id) == 0;
	if (owned >= REGISTRY_RUN_GROUPS_MAX)
		return -E2BIG;
	if (r->n >= REGISTRY_MAX)
		return -ENOSPC;
	e = &r->e[r->n++];
	memset(e, 0, sizeof(*e));
	e->pgid = pgid;
	e->kind = kind;
	snprintf(e->sandbox_id, sizeof(e->sandbox_id), "%s", sandbox_id ? sandbox_id : "");
	snprintf(e->run_id, sizeof(e->run_id), "%s", run_id);
	if (cgroup && strlen(cgroup) <= REGISTRY_CGROUP_MAX)
		snprintf(e->cgroup, sizeof(e->cgroup), "%s", cgroup);
	mirror_add(r, e);
	return 0;
}

int registry_remove(struct registry *r, pid_t pgid)
{
	struct registry_entry *e = find(r, pgid), gone;
	if (!e)
		return -ENOENT;
	gone = *e;
	memmove(e, e + 1, (size_t)(&r->e[r->n] - (e + 1)) * sizeof(*e));
	r->n--;
	mirror_del(r, &gone);
	return 0;
}

size_t registry_release_run(struct registry *r, const char *run_id)
{
	const struct registry_entry *e;
	size_t n = 0;
	/* the other groups first, so that a jail group is covered by its leader's PGRP_DEL */
	for (unsigned k = REG_KIND_N_; k-- > 0;)
		while ((e = run_group(r, run_id, (enum registry_kind)k)))
			n += registry_remove(r, e->pgid) == 0;
	return n;
}

static bool matches(const struct registry_entry *e, const char *sandbox_id, const char *run_id)
{
	return (!sandbox_id || strcmp(e->sandbox_id, sandbox_id) == 0) &&
	       (!run_id || strcmp(e->run_id, run_id) == 0);
}

size_t registry_list(const struct registry *r, const char *sandbox_id, const char *run_id,
                     const struct registry_entry **out, size_t max)
{
	size_t n = 0;
	for (size_t i = 0; i < r->n; i++) {
		if (!matches(&r->e[i], sandbox_id, run_id))
			continue;
		if (n < max)
			out[n] = &r->e[i];
		n++;
	}
	return n;
}

int registry_kill_group(const struct registry *r, const char *sandbox_id, pid_t pgid, int sig)
{
	const struct registry_entry *e = pgid > 1 ? find(r, pgid) : NULL;
	if (!e)
		return -ENOENT;
	if (!sandbox_id || strcmp(e->sandbox_id, sandbox_id) != 0)
		return -EPERM;
	return kill(-e->pgid, sig) < 0 ? -errno : 0;
}

size_t registry_kill(const struct registry *r, const char *sandbox_id, const char *run_id,
                     unsigned kinds, int sig)
{
	size_t alive = 0;
	for (size_t i = 0; i < r->n; i++) {
		const struct registry_entry *e = &r->e[i];
		if (!(kinds & REG_KIND_BIT(e->kind)) || !matches(e, sandbox_id, run_id))
			continue;
		if (kill(-e->pgid, sig) == 0 || errno != ESRCH)
			alive++;
	}
	return alive;
}
