/* The registry of live process groups per sandbox (DESIGN.md §10): the ONE place that
 * knows which groups the engine started, that mirrors them to sbxd (PGRP_ADD/PGRP_DEL) so
 * a dead launcher leaves no orphans, and that a processes/kill route reads. A run may own
 * several groups: the program's own (the leader), the jail's (bwrap --new-session, from
 * --info-fd), and later helpers (a pasta network process). Nothing here logs. */
#ifndef SBX_REGISTRY_H
#define SBX_REGISTRY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "proto.h"

#define REGISTRY_MAX            1024u /* live groups; 64 concurrent runs x a few groups */
#define REGISTRY_RUN_GROUPS_MAX 4u    /* groups one run may own */
#define REGISTRY_CGROUP_MAX     512u  /* longer cgroup paths are mirrored as "" */

enum registry_kind {
	REG_LEADER = 0, /* the forked child (bwrap, docker client or sh): its own session */
	REG_JAIL,       /* the jail's first process, a session of its own (bwrap --new-session) */
	REG_HELPER,     /* a helper the run needs (a later pasta network process) */
	REG_KIND_N_
};
#define REG_KIND_BIT(k) (1u << (k))
#define REG_KINDS_ALL   ((1u << REG_KIND_N_) - 1u)

struct registry_entry {
	pid_t pgid;
	enum registry_kind kind;
	char sandbox_id[PROTO_ID_MAX + 1];
	char run_id[PROTO_ID_MAX + 1];
	char cgroup[REGISTRY_CGROUP_MAX + 1]; /* a cgroup2 dir whose cgroup.kill ends it, or "" */
};

/* Where the registry mirrors: msg is a struct msg_PGRP_ADD or msg_PGRP_DEL. */
typedef void (*registry_mirror_fn)(enum proto_type type, const void *msg, void *arg);

struct registry {
	struct registry_entry e[REGISTRY_MAX];
	size_t n;
	registry_mirror_fn mirror;
	void *mirror_arg;
};

/* The launcher's one registry. */
struct registry *registry_launcher(void);
void registry_init(struct registry *r);
void registry_set_mirror(struct registry *r, registry_mirror_fn fn, void *arg);

/* Register a group before its program runs. -EINVAL: pgid <= 1 or an empty run id;
 * -EEXIST: the group is already registered; -ENOSPC: REGISTRY_MAX groups are live;
 * -E2BIG: the run already owns REGISTRY_RUN_GROUPS_MAX groups. Mirrors to sbxd: a jail
 * group travels as the jail pid of its run's leader (the shape sbxd's mirror keeps). */
int registry_add(struct registry *r, const char *sandbox_id, const char *run_id, pid_t pgid,
                 enum registry_kind kind, const char *cgroup);
/* Unregister one group (and tell sbxd). -ENOENT when it is not registered. */
int registry_remove(struct registry *r, pid_t pgid);
/* The guard of a run: every group it owns goes, on whatever path the run ends. Returns
 * how many were removed. Called once from the run's free path. */
size_t registry_release_run(struct registry *r, const char *run_id);

const struct registry_entry *registry_find(const struct registry *r, pid_t pgid);
/* Entries matching sandbox_id and run_id (NULL = any), in registration order; at most max
 * written to out. Returns how many matched (may exceed max). */
size_t registry_list(const struct registry *r, const char *sandbox_id, const char *run_id,
                     const struct registry_entry **out, size_t max);

/* Signal one group, only when it is registered for that sandbox (a kill route must never
 * reach pid 1 or a group of another sandbox). 0, -ENOENT (not ours), -EPERM (another
 * sandbox's), or -errno of kill(). */
int registry_kill_group(const struct registry *r, const char *sandbox_id, pid_t pgid, int sig);
/* Signal every group matching sandbox_id / run_id (NULL = any) whose kind is in kinds
 * (REG_KIND_BIT mask). Returns how many groups still existed. */
size_t registry_kill(const struct registry *r, const char *sandbox_id, const char *run_id,
                     unsigned kinds, int sig);

#endif
