/* A run's lifecycle (DESIGN.md §5), s6-supervise style: an explicit [state][event] table
 * of actions, and one function every transition goes through. An event a state does not
 * allow is logged and ignored, never a crash. The table itself is a pure function,
 * runner_next(), so tests/unit/test_runner.c checks every pair without spawning. */
#ifndef SBX_RUNNER_H
#define SBX_RUNNER_H

#include <stdbool.h>
#include <stddef.h>

#include "capture.h"
#include "launcher.h"
#include "policy.h"

#define RUNNER_KILL_GRACE_MS 200u  /* SIGTERM, then SIGKILL this much later */
#define RUNNER_DRAIN_MS      500u  /* after the program ended, wait this long for pipe EOF */
#define RUNNER_INFO_MAX      1024u /* bwrap --info-fd JSON */
#define RUNNER_READ_CHUNK    16384u /* one read() of an output pipe */
#define RUNNER_READS_PER_EV  16u    /* reads per wake-up, so one run cannot starve others */
#define RUNNER_STOP_REAP_TRIES 25u  /* x RUNNER_STOP_REAP_US: a leader's reap at shutdown */
#define RUNNER_STOP_REAP_US    2000u
#define RUNNER_CG_RETRY_MS   5u     /* a busy run group's rmdir is retried this often */
#define RUNNER_CG_RETRIES    400u   /* ... this many times (2 s) */
#define RUNNER_FAIL_MSG_MAX  512u
#define RUNNER_WARM_MAX      4u     /* jails built ahead, in all (one per sandbox at most) */
#define RUNNER_WARM_IDLE_MS  60000u /* one unused this long is discarded */   /* "starting the run failed: ..." with the backend's why */

enum run_state {
	RS_SPAWNING, /* forked, registered, not yet released to exec */
	RS_RUNNING,  /* the program runs; stdin is written, output drained */
	RS_KILLING,  /* deadline or kill request: SIGTERM sent, SIGKILL after the grace */
	RS_DRAINING, /* the program was reaped; its pipes may still be open */
	RS_DONE,     /* recorded and reported; the run is freed */
	RS_WARM,     /* built ahead: bwrap set up and blocked before the program, no run yet */
	RS_N_
};

enum run_event {
	RE_SPAWNED,        /* the child is in its groups and released */
	RE_STDIN_DONE,     /* the program text is written (or the child stopped reading) */
	RE_OUT_EOF,        /* stdout reached EOF */
	RE_ERR_EOF,        /* stderr reached EOF */
	RE_EXITED,         /* SIGCHLD: the child was reaped */
	RE_DEADLINE,       /* the run's timeout */
	RE_GRACE_EXPIRED,  /* RUNNER_KILL_GRACE_MS after SIGTERM */
	RE_DRAIN_EXPIRED,  /* RUNNER_DRAIN_MS after the exit, pipes still open */
	RE_KILL_REQUESTED, /* someone asked to stop it (shutdown, a later kill route) */
	RE_OUTPUT_CLOSED,  /* both output pipes at EOF after the exit */
	RE_RELEASED,       /* a jail built ahead was given a run and let go */
	RE_N_
};

enum run_action {
	RA_FORBIDDEN = 0,  /* not allowed in this state: logged, state unchanged */
	RA_NONE,           /* allowed, nothing to do */
	RA_START,          /* arm the stdin writer, the info reader and the deadline */
	RA_STREAM_EOF,     /* close the stream; after the exit, maybe all output is in */
	RA_REAPED,         /* kill what the program left, stop the timers, drain or finish */
	RA_TERM_DEADLINE,  /* timedOut; SIGTERM every group; the backend's own kill; grace */
	RA_TERM_REQUESTED, /* SIGTERM every group, grace */
	RA_SIGKILL,        /* SIGKILL every group and the cgroup */
	RA_COMPLETE,       /* build the result, record it, report it, free the run */
	RA_DISCARD,        /* a jail built ahead ended before any run: free it, report nothing */
	RA_N_
};

struct runner_step {
	enum run_state next;
	enum run_action action;
};

/* The table: what event e does in state s. Pure; action RA_FORBIDDEN means refused. */
struct runner_step runner_next(enum run_state s, enum run_event e);
const char *runner_state_name(enum run_state s);
const char *runner_event_name(enum run_event e);

/* Install the SIGCHLD watcher once. 0 or -ENOMEM. */
int runner_init(struct launcher *L);
/* Start an accepted run: takes sb (cleared here on every path) and calls done exactly
 * once, possibly before returning. note is what the result must say ("" = nothing). */
int runner_start(struct launcher *L, const struct run_request *req, struct sandbox *sb,
                 enum isolation iso, const char *note, run_done_fn done, void *arg);
/* Feed kill_requested to a live run of sandbox_id (NULL: any). 0 or -ENOENT. */
int runner_kill(const char *sandbox_id, const char *run_id);
/* End every live run of a sandbox the same way; fills up to max run ids. Returns how many. */
size_t runner_kill_sandbox(const char *sandbox_id, char (*ids)[PROTO_ID_MAX + 1], size_t max);
/* A copy of a live run of sandbox_id as it stands (running = true, the output captured so
 * far, no exit status). 0, -ENOENT (no such live run), -ENOMEM. run_result_clear() it. */
int runner_snapshot(const char *sandbox_id, const char *run_id, struct run_result *ret);
/* Snapshots of every live run of sandbox_id, newest first, through fn. Returns how many. */
size_t runner_foreach_live(const char *sandbox_id, int (*fn)(const struct run_result *, void *),
                           void *arg);
/* Follow a live run of sandbox_id: what it kept of its output so far goes through
 * on_output at once, the rest as it comes, and done is called when it ends (after the
 * run's own done). -ENOENT: no such live run; -EBUSY: its output already has a reader. */
int runner_follow(const char *sandbox_id, const char *run_id, run_output_fn on_output,
                  void *out_arg, run_done_fn done, void *done_arg);
/* Runs by outcome and their durations since the launcher started (GET /metrics). The
 * caller clears m->duration_buckets. */
void runner_metrics(struct msg_METRICS_REP *m);
/* Is run_id a live run given a program (not a jail built ahead and not yet used)? */
bool runner_is_live(const char *run_id);
/* Is run_id live (built ahead or not) with its first process not yet reaped? Only then are
 * its group and session numbers surely its own. */
bool runner_leader_alive(const char *run_id);

/* Jails built ahead (on unless the launcher runs with --no-warm): after a bwrap run of a
 * sandbox, one single-use jail is prepared for its current settings, set up and blocked
 * before its program (bwrap --block-fd), in its cgroups and registered like any run. The
 * next run of that sandbox with the same settings, policy, capabilities and deadline is
 * given to it; anything else runs cold. Discard the ones of a sandbox (NULL: all) when
 * its settings, the policy or the machine's capabilities change. */
void runner_warm_enable(bool on);
void runner_discard_warm(const char *sandbox_id);

#endif
