/* What the launcher's handler files share (dispatch.c, dispatch_runs.c); not for other
 * modules: they talk to the API only through replies the handlers send. */
#ifndef SBX_DISPATCH_INT_H
#define SBX_DISPATCH_INT_H

#include "launcher.h"
#include "proto_chan.h"
#include "sandbox.h"

extern struct launcher *dispatch_L;

/* A request answered later (runs, caps, deletes): reply only on the channel it came from. */
struct run_outstream;
struct pending {
	uint32_t id;
	uint64_t gen;
	char sandbox_id[PROTO_ID_MAX + 1];
	struct run_outstream *stream; /* a run whose output streams while it runs, or NULL */
	bool replied; /* a detached run: answered when it started */
};
struct pending *pending_new(uint32_t id);
/* The channel to reply on, or NULL when the API process was replaced meanwhile. */
struct proto_chan *pending_chan(const struct pending *p);

void reply_err(struct proto_chan *ch, uint32_t id, enum proto_err code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* Load a sandbox named by an API-supplied id; replies on failure. */
int load_sandbox(struct proto_chan *ch, uint32_t id, const char *sid, struct sandbox *ret);

/* Remove a sandbox: its row (with its runs), its backend's leftovers, trace log, disk image
 * and workdir; done (NULL: only logged) when the workdir is gone. 0 or -errno (nothing
 * removed). */
int dispatch_sandbox_remove(const struct sandbox *s, void (*done)(int err, void *arg), void *arg);

/* dispatch_runs.c: RUN, EXEC (both through run_code()), RUNS_LIST, RUN_GET. */
void dispatch_h_run(struct proto_chan *ch, const struct proto_hdr *h, void *m, int fd, void *arg);
void dispatch_h_exec(struct proto_chan *ch, const struct proto_hdr *h, void *m, int fd, void *arg);
void dispatch_h_runs_list(struct proto_chan *ch, const struct proto_hdr *h, void *m, int fd,
                          void *arg);
void dispatch_h_run_get(struct proto_chan *ch, const struct proto_hdr *h, void *m, int fd,
                        void *arg);
/* PS_REQ and KILL: a sandbox's processes (launcher/procs.h) */
void dispatch_h_ps(struct proto_chan *ch, const struct proto_hdr *h, void *m, int fd, void *arg);
void dispatch_h_kill(struct proto_chan *ch, const struct proto_hdr *h, void *m, int fd, void *arg);
/* FILE_OP: the files API (launcher/files.h) */
void dispatch_h_file_op(struct proto_chan *ch, const struct proto_hdr *h, void *m, int fd, void *arg);
/* TRACE_GET: a sandbox's trace lines (launcher/trace.h) */
void dispatch_h_trace_get(struct proto_chan *ch, const struct proto_hdr *h, void *m, int fd, void *arg);
/* METRICS_REQ: the launcher's half of GET /metrics */
void dispatch_h_metrics(struct proto_chan *ch, const struct proto_hdr *h, void *m, int fd, void *arg);
/* STREAM_ACK / STREAM_CANCEL of a streamed run's output */
void dispatch_h_stream_ack(struct proto_chan *ch, const struct proto_hdr *h, void *m, int fd,
                           void *arg);
void dispatch_h_stream_cancel(struct proto_chan *ch, const struct proto_hdr *h, void *m, int fd,
                              void *arg);

#endif
