/* A sandbox's live processes as the kernel sees them (GET /sandboxes/{id}/processes), and
 * the one way the engine signals them (POST /sandboxes/{id}/kill).
 *
 * A process belongs to a run when it is in the run's cgroup2 group, in one of the run's
 * registered process groups or sessions, or in the pid namespace of the run's jail. The
 * check and the signal go through one open /proc/<pid> directory, which names one
 * process for as long as it is held: if that process ends and its pid is reused, reads
 * through the descriptor fail and pidfd_send_signal(2) on it returns ESRCH, so a recycled
 * pid is never signalled. */
#ifndef SBX_LAUNCHER_PROCS_H
#define SBX_LAUNCHER_PROCS_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "proto.h"

#define PROCS_LIST_MAX   1024u /* processes listed per request; the rest are counted only */
#define PROCS_KILL_MAX   PROTO_LIST_MAX /* pids one kill reports */
#define PROCS_WHY_MAX    160u

/* What /proc/<pid>/{stat,status,cgroup} say about one process. */
struct proc_info {
	pid_t pid, ppid, pgid, sid;
	char comm[PROTO_NAME_MAX + 1];
	char state;
	uint64_t utime, stime, start; /* clock ticks */
	uint64_t rss_pages;
	uid_t uid;
	gid_t gid;
	bool no_new_privs;
	unsigned seccomp; /* 0 off, 1 strict, 2 filter */
	char cap_eff[32];
	char cgroup[PATH_MAX]; /* the cgroup2 path ("0::" line), "" when none */
};

/* Read one process through its /proc directory descriptor. 0 or -errno (-ESRCH: gone). */
int proc_read(int dirfd, struct proc_info *ret);
/* Its command line, NULs as spaces, cut at bufsz - 1. */
void proc_cmdline(int dirfd, char *buf, size_t bufsz);
/* The namespace kinds in which the process differs from pid `ref` (sbxd); names pushed on out. */
int proc_ns_differ(int dirfd, pid_t ref, struct proto_strv *out);

/* Who started a process, from the registry of live groups. */
enum proc_owner_kind {
	PO_NONE = 0,  /* not the engine's */
	PO_RUN,       /* a process of a live run (run_id, sandbox_id filled) */
	PO_WARM,      /* a jail built ahead, given no run yet */
};
struct proc_owner {
	enum proc_owner_kind kind;
	char sandbox_id[PROTO_ID_MAX + 1];
	char run_id[PROTO_ID_MAX + 1];
};
/* Classify p against the live groups (the registry) and their jails' pid namespaces. */
void procs_owner(const struct proc_info *p, int dirfd, struct proc_owner *ret);

/* Send the rows of a sandbox's processes through fn (at most PROCS_LIST_MAX); returns how
 * many processes the sandbox has. */
size_t procs_list(const char *sandbox_id, pid_t sbxd_pid,
                  int (*fn)(const struct msg_PROC_REP *row, void *arg), void *arg);

/* Signal one process (pid) or every process of one group (pgid) of sandbox_id, each
 * through its own /proc descriptor. 0 with the pids signalled pushed on pids; -EPERM with
 * why filled when the target is not this sandbox's (nothing is signalled then); -errno. */
int procs_kill_pid(const char *sandbox_id, pid_t pid, int sig, pid_t sbxd_pid,
                   struct proto_u32v *pids, char *why, size_t whysz);
int procs_kill_pgid(const char *sandbox_id, pid_t pgid, int sig, pid_t sbxd_pid,
                    struct proto_u32v *pids, char *why, size_t whysz);

/* The signals a kill may send (the API offers the same names). */
bool procs_signal_allowed(int sig);

#endif
