/* Tracing at the language layer (DESIGN.md §10, docs/observe.md "Tracing").
 *
 * A sandbox with tracing on gets, per run, a FIFO bound into the jail at TRACE_JAIL_FIFO
 * and the shims of <libexec>/trace (a Python sitecustomize.py with an audit hook, a Node
 * preload) bound read-only at TRACE_JAIL_DIR, named by PYTHONPATH and NODE_OPTIONS, so
 * every interpreter of the run, children included, opens the FIFO once and writes one
 * JSON line per event. The launcher reads the FIFO (a jail that writes faster than it is
 * read loses events, it never blocks) and appends each line, prefixed with the run's id and
 * the time it arrived, to <data>/traces/<sandbox>/trace.log: append-only, root's, never
 * visible in the jail. Each run records where its lines start and end in that log, so a
 * later run never replays an earlier one. The launcher does not parse the JSON (the API
 * does, keeping only the known members): a line is kept when it is one line of printable
 * bytes in braces, at most TRACE_LINE_MAX. With tracing off nothing is created. */
#ifndef SBX_LAUNCHER_TRACE_H
#define SBX_LAUNCHER_TRACE_H

#include <stdbool.h>
#include <stdint.h>

#include <event2/event.h>

#include "launcher.h"

#define TRACE_JAIL_DIR   "/tmp/.sbx-trace"        /* the shims, read-only */
#define TRACE_JAIL_FIFO  "/tmp/.sbx-trace-events" /* where the shims write */
#define TRACE_LINE_MAX   4096u  /* PIPE_BUF: a line written at once never interleaves */
#define TRACE_RUN_MAX    PROTO_RUN_TRACE_MAX  /* bytes of a run's lines with its result */
#define TRACE_READ_MAX   PROTO_TRACE_READ_MAX /* bytes of lines one trace request returns */
#define TRACE_LOG_MAX    (64ull << 20) /* a sandbox's log stops growing here (noted) */

struct trace_run {
	bool on;
	int fifo;              /* our read end (O_RDWR: never EOF), or -1 */
	int log;               /* the sandbox's trace.log, O_APPEND, or -1 */
	struct event *ev;
	char fifo_path[512];
	char run_id[PROTO_ID_MAX + 1];
	char partial[TRACE_LINE_MAX + 1]; /* a line not complete yet */
	size_t npartial;
	bool skipping;         /* the current line is over TRACE_LINE_MAX: dropped whole */
	int64_t start;         /* the log's size when the run began */
	uint64_t dropped;      /* lines refused or lost to a full log */
};

/* Is <libexec>/trace there (trace_init found it)? */
bool trace_available(void);
/* Find the shims next to the launcher binary (dir = its directory). */
void trace_init(const char *bin_dir);

/* For a run of sb (tracing on): make the sandbox's trace dir and log, the run's FIFO (owned
 * by uid, the jail's), start reading it, and add the binds and environment to binds/env
 * (bwrap argv pairs, "KEY=value"). The sandbox's own PYTHONPATH / NODE_OPTIONS are kept
 * after ours. 0 (t->on says whether anything was done) or -errno. */
int trace_prepare(struct launcher *L, const struct sandbox *sb, const char *run_id, uid_t uid,
                  struct trace_run *t, struct proto_strv *binds, struct proto_strv *env);
/* Append one event line (checked as a line from the FIFO is) to the run's trace. */
void trace_emit(struct trace_run *t, const char *line, size_t len);
/* The run ended: read what is left, close and remove the FIFO; res gets the run's range
 * and (up to TRACE_RUN_MAX) its lines. NULL res: discard. */
void trace_finish(struct trace_run *t, struct run_result *res);

/* Lines of sandbox_id's log between start and end (end < 0: to the current end) whose run
 * is run_id (NULL: any) and whose arrival is at or after since_ms, at most max bytes
 * (*ret_truncated then). 0 or -errno (-ENOENT: no log). */
int trace_read(struct launcher *L, const char *sandbox_id, const char *run_id, int64_t start,
               int64_t end, uint64_t since_ms, size_t max, char **ret, size_t *ret_len,
               bool *ret_truncated);
/* A deleted sandbox's trace directory goes with it. */
void trace_remove(struct launcher *L, const char *sandbox_id);

#endif
