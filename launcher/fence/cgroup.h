/* Per-run cgroups (DESIGN.md §5 resource limits): cgroup v2 when it has the memory and
 * pids controllers, else the v1 memory and pids hierarchies, else none (rlimits alone).
 * A v2 hierarchy without controllers still gives cgroup.kill, used to end a run whole. */
#ifndef SBX_CGROUP_H
#define SBX_CGROUP_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

enum cg_flavour { CG_NONE = 0, CG_V1, CG_V2 };

struct cgroup_run {
	enum cg_flavour flavour;
	char v2[PATH_MAX];   /* v2 group with controllers, or "" */
	char mem[PATH_MAX];  /* v1 memory group, or "" */
	char pids[PATH_MAX]; /* v1 pids group, or "" */
	char kill[PATH_MAX]; /* a v2 group whose cgroup.kill ends the run (may be v2), or "" */
	bool memory_limited, pids_limited;
};

/* The parent of this instance's run groups, below the launcher's own group in every
 * hierarchy: CG_INSTANCE_PREFIX + 16 hex digits of a hash of the data directory's real path,
 * so two sbxd instances on one machine never share one, and a restart on the same data
 * directory finds the groups its predecessor left. */
#define CG_INSTANCE_PREFIX "sbx-"
#define CG_INSTANCE_MAX    64u

/* Name the instance after its data directory (which must exist). 0 or -errno. Until this
 * is called, cgroup_run_create() refuses (-EINVAL). */
int cgroup_instance_set(const char *data_dir);
const char *cgroup_instance_name(void); /* "" when not set */
/* Start-up: every run_* group left under this instance's parent groups (by a launcher or
 * sbxd that was SIGKILLed, or an older launcher still leaving) is emptied first
 * (cgroup.kill, or SIGKILL to every listed pid until none is) and removed. Nothing outside
 * the instance's own parent is touched. Returns how many groups went, or -errno. */
int cgroup_sweep(void);
/* Exit: remove the instance's parent groups when empty (a group still in use stays). */
void cgroup_instance_release(void);

/* What this machine offers, measured (root needed to create groups). */
enum cg_flavour cgroup_detect(void);
const char *cgroup_flavour_name(enum cg_flavour f); /* "v2" | "v1" | "none" */

/* Create the groups of one run below the launcher's own groups and set the limits
 * (memory_mb, pids; 0 = no limit). Fills ret; on failure nothing is left behind. */
int cgroup_run_create(const char *run_id, uint32_t memory_mb, uint32_t pids,
                      struct cgroup_run *ret);
/* SIGKILL everything in the run's groups (cgroup.kill where present). */
int cgroup_run_kill(const struct cgroup_run *cg);
/* Did the memory limit fire (v1 failcnt / oom_control, v2 memory.events oom_kill)? */
bool cgroup_run_hit_memory(const struct cgroup_run *cg);
/* Did the pids limit refuse a fork? */
bool cgroup_run_hit_pids(const struct cgroup_run *cg);
/* Number of processes still in the run's groups. */
int cgroup_run_nprocs(const struct cgroup_run *cg);
/* Kill what is left and remove the groups, waiting (briefly, in a loop) for the last
 * process to leave. For start-up and failure paths; the event loop uses the one below. */
void cgroup_run_destroy(struct cgroup_run *cg);
/* Kill what is left and try each rmdir once: 0 when every group is gone, -EBUSY when some
 * still hold a leaving process (those paths stay set; call again later). Never sleeps. */
int cgroup_run_remove(struct cgroup_run *cg);

/* Spawning without moving another process (which waits ~10 ms for an RCU grace period):
 * the cgroup2 group a child can be created in with clone3(CLONE_INTO_CGROUP) (an fd, or
 * -ENOENT when the run has none), and, in the child, joining the rest itself (v1 through
 * `tasks`; the cgroup2 groups too unless v2_done). 0 or -errno. */
int cgroup_run_clone_fd(const struct cgroup_run *cg);
int cgroup_run_join_self(const struct cgroup_run *cg, bool v2_done);

#endif
