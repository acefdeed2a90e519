/* sbxd, the supervisor: its configuration, the mirror of the launcher's process groups,
 * and the per-child state machine (DESIGN.md §1, §11). */
#ifndef SBX_SBXD_H
#define SBX_SBXD_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <event2/event.h>

#include "proto.h"
#include "proto_chan.h"

#define SBXD_LISTEN_DEFAULT "127.0.0.1:7420"
#define SBXD_LISTEN_MAX     64u  /* "[ipv6]:port" fits with room */
#define SBXD_PATH_MAX       PATH_MAX
#define SBXD_LOG_NAME       "sbxd.log"
#define SBXD_TOKEN_NAME     "api.token"
#define SBXD_LOCK_NAME  "sbxd.lock" /* one sbxd per data directory */
#define SBXD_TOKEN_BYTES    32u  /* random bytes; written as 64 hex characters */

/* Restart policy: 100 ms doubling to 5 s; a child that stayed up 30 s starts over. */
#define SBXD_BACKOFF_MIN_MS    100u
#define SBXD_BACKOFF_MAX_MS    5000u
#define SBXD_BACKOFF_RESET_MS  30000u
/* A child that has not said HELLO by then is wedged: kill it and go through backoff. */
#define SBXD_HELLO_TIMEOUT_MS  10000u
/* Shutdown: one wait between SIGTERM and SIGKILL (DESIGN.md §11). */
#define SBXD_SHUTDOWN_GRACE_MS 300u
/* After it, sbxd's own children get this much longer to finish their cleanup (the
 * launcher unmounts the workdir images of its sandboxes): killing the launcher half-way
 * would leave mounts and loop devices behind. The jails are gone by then. */
#define SBXD_CHILD_STOP_MS     3000u
/* While waiting, how often to look whether everything is already gone. */
#define SBXD_SHUTDOWN_POLL_MS  10u
/* After the final SIGKILL, how long to wait for the children to be reaped. */
#define SBXD_SHUTDOWN_REAP_MS  50u

/* The mirror of the launcher's registry of live process groups. */
#define MIRROR_MAX        4096u
#define MIRROR_CGROUP_MAX 512u /* longer cgroup paths are not kept (the groups still are) */

struct sbxd_config {
	char data_dir[SBXD_PATH_MAX];
	char listen[SBXD_LISTEN_MAX]; /* normalised "host:port" handed to sbx-api */
	char libexec[SBXD_PATH_MAX];  /* "" = next to sbxd's own executable */
	char log_level[16];
	char docker[SBXD_PATH_MAX];
	char bwrap[SBXD_PATH_MAX];    /* the bwrap the launcher uses; "" = search */
	char hosts[SBXD_PATH_MAX];    /* hosts(5) file the proxy resolves with first; "" = none */   /* the docker client the launcher probes; "" = search */
	unsigned call_deadline_s;     /* sbx-api --call-deadline */
	bool foreground;
	bool no_warm;                 /* sbx-launcher --no-warm: no jails built ahead */
	bool no_auth;
	bool allow_remote;
	bool show_help;
	bool show_version;
};

/* ---- config.c: no logging, 0 or -errno ----------------------------------------------- */

/* Parse argv. On -EINVAL, *ret_why says what was wrong (static or in cfg storage). */
int config_parse(int argc, char *argv[], struct sbxd_config *cfg, const char **ret_why);
/* The data directory when none was given: $SBX_DATA_DIR, /var/lib/sbx as root, else
 * $XDG_DATA_HOME/sbx or $HOME/.local/share/sbx. */
int config_default_data_dir(bool root, char *buf, size_t bufsz);
const char *config_usage(void);

/* ---- mirror.c ------------------------------------------------------------------------- */

struct mirror_entry {
	pid_t pgid;
	pid_t jail_pid; /* 0 = not known */
	char sandbox_id[PROTO_ID_MAX + 1];
	char run_id[PROTO_ID_MAX + 1];
	char cgroup[MIRROR_CGROUP_MAX + 1]; /* "" = none */
};

struct mirror {
	struct mirror_entry e[MIRROR_MAX];
	size_t n;
};

/* Insert or update (the launcher re-sends PGRP_ADD once the jail pid is known).
 * -EINVAL for a pgid or jail pid that must never be signalled (<= 1, or one of
 * `protect`: sbxd's own pid and group); -ENOSPC when full. */
int mirror_add(struct mirror *m, const struct msg_PGRP_ADD *a, const pid_t *protect,
               size_t nprotect);
int mirror_del(struct mirror *m, pid_t pgid); /* -ENOENT if absent */
const struct mirror_entry *mirror_find(const struct mirror *m, pid_t pgid);
/* Signal every group (kill(-pgid) and kill(-jail_pid)); with SIGKILL also write the
 * entry's cgroup.kill when it names a cgroup2 directory. Returns how many groups still
 * existed (a kill that did not fail with ESRCH). */
size_t mirror_signal_all(const struct mirror *m, int sig);
/* How many groups still have a live member (kill(-g, 0) != ESRCH). */
size_t mirror_count_alive(const struct mirror *m);
void mirror_clear(struct mirror *m);
/* SIGKILL every process whose parent is `self` (orphans handed to sbxd as subreaper)
 * except those in `keep`, and the group of each that leads its own. This catches what
 * the launcher spawned but had not reported yet when it died. Linux (/proc); returns
 * how many it found, 0 elsewhere. */
size_t orphans_kill(pid_t self, pid_t self_pgid, const pid_t *keep, size_t nkeep);

/* ---- children.c: the state machine ------------------------------------------------------ */

enum child_id { CHILD_LAUNCHER = 0, CHILD_API, CHILD_N_ };

enum child_state {
	CS_STARTING, /* forked, waiting for HELLO */
	CS_RUNNING,  /* HELLO received */
	CS_EXITED,   /* reaped; passes straight on to BACKOFF (or STOPPED at shutdown) */
	CS_BACKOFF,  /* waiting for the restart timer */
	CS_STOPPING, /* shutdown: SIGTERM sent, waiting to be reaped */
	CS_STOPPED,  /* shutdown: gone for good */
	CS_N_
};

enum child_event {
	CE_HELLO,     /* the channel's HELLO arrived */
	CE_CHAN_DOWN, /* the channel closed or broke framing */
	CE_EXIT,      /* reaped */
	CE_TIMER,     /* hello deadline (STARTING) or restart time (BACKOFF) */
	CE_STOP,      /* shutdown begins */
	CE_N_
};

struct sbxd;

struct child {
	enum child_id id;
	const char *name;  /* "sbx-launcher" */
	unsigned role;     /* ROLE_LAUNCHER / ROLE_API */
	char path[SBXD_PATH_MAX];
	char deadline_arg[12];  /* sbx-api's --call-deadline value */
	enum child_state state;
	pid_t pid;              /* 0 when not running */
	struct proto_chan *chan; /* channel on the child's fd 3 */
	bool chan_down;
	int pending_peer;        /* our end of a launcher<->api pair, kept for the next spawn */
	int last_status;         /* from waitpid */
	uint64_t started_ms;     /* now_ms() at the last spawn */
	uint32_t backoff_ms;     /* the last restart delay, 0 = none yet */
	uint32_t restarts;
	uint32_t rejected;       /* messages refused, for rate-limited logging */
	struct event *timer;
	struct sbxd *d;
};

struct sbxd {
	struct sbxd_config cfg;
	struct event_base *base;
	struct child child[CHILD_N_];
	struct mirror mirror;
	pid_t self_pid, self_pgid;
	uint64_t started_at; /* unix seconds */
	bool shutting_down;
	bool shutdown_finished;
	bool groups_killed; /* the 300 ms are over: groups SIGKILLed, children still waited for */
	size_t groups_sigkilled;
	bool notified_ready; /* READY=1 went to $NOTIFY_SOCKET (notify.h) */
	uint64_t shutdown_start_ms;
	struct event *shutdown_timer; /* the one 300 ms wait */
	struct event *shutdown_poll;  /* exits early once everything is gone */
	struct event *sig_chld, *sig_term, *sig_int, *sig_hup;
	int log_fd; /* -1 in the foreground */
	int exit_code;
	char *child_env[8]; /* the explicit environment every child gets */
};

const char *child_state_name(enum child_state s);
int children_init(struct sbxd *d);       /* timers, paths, environment; logs on failure */
void children_start_all(struct sbxd *d); /* first start of both */
void children_event(struct child *c, enum child_event ev);
/* Reap everything waitpid has for us and feed CE_EXIT to our children. */
void children_reap(struct sbxd *d);
bool children_all_stopped(const struct sbxd *d);
void children_free(struct sbxd *d);

/* ---- signals.c ------------------------------------------------------------------------- */

int signals_init(struct sbxd *d);
void signals_free(struct sbxd *d);
void sbxd_shutdown_begin(struct sbxd *d);
int sbxd_log_reopen(struct sbxd *d); /* 0 or -errno; a no-op in the foreground */

#endif
