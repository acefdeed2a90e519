/* The API side of the launcher/sbxd protocol (after OpenSSH's mm_* stubs): one function
 * per request; replies are routed back by request id to a callback. Never blocks. */
#ifndef SBX_API_STUBS_H
#define SBX_API_STUBS_H

#include <stdbool.h>
#include <stddef.h>

#include "proto.h"

struct proto_chan;
struct event_base;

#define STUB_PENDING_MAX    1024u        /* requests awaiting a reply */
/* How long a request waits for its answer before it fails (engine_unavailable): runs
 * wait for the longest run deadline plus time to kill, collect and record them, the rest
 * for --call-deadline (PROTO_CALL_DEADLINE_S_*). A list's deadline restarts with each
 * item. */
#define STUB_RUN_DEADLINE_MS    (PROTO_RUN_TIMEOUT_MS_MAX + 120000ull)
#define STUB_SWEEP_MS           250u /* how often the deadlines are checked */
/* bytes read from a RUN_REP memfd: both streams at the launcher's own per-stream cap */
#define STUB_RUN_OUTPUT_MAX (2ull * PROTO_RUN_OUTPUT_MAX)
/* bytes of trace lines a RUN_REP carries (launcher/trace.h TRACE_RUN_MAX) */
#define STUB_RUN_TRACE_MAX PROTO_RUN_TRACE_MAX
/* code plus stdin up to this size go inline in the RUN message, larger in a memfd */
#define STUB_RUN_INLINE_MAX (48u << 10)

/* One reply. For list requests the callback runs once per item (final = false) and once
 * for LIST_END (final = true); otherwise once, final. On error, type = MSG_ERROR and
 * err/message say why (also used when the launcher goes away: PERR_ENGINE_UNAVAILABLE). */
struct stub_reply {
	uint32_t type;
	bool final;
	const void *msg;
	enum proto_err err;
	const char *message;
	const char *out; /* RUN_REP output read from the memfd */
	size_t out_len;
	const char *errout;
	size_t errout_len;
	const char *trace; /* RUN_REP: the run's trace lines, or NULL */
	size_t trace_len;
};
typedef void (*stub_cb)(const struct stub_reply *rep, void *arg);
/* One chunk of a streamed run's output (chan: STREAM_STDOUT | STREAM_STDERR). The chunk is
 * the sender's to resend only after stub_stream_ack() says it was consumed, so a consumer
 * that acknowledges only what it has written out keeps memory bounded end to end. */
typedef void (*stub_stream_cb)(uint32_t chan, const uint8_t *data, size_t len, void *arg);

/* deadline_s: 1..PROTO_CALL_DEADLINE_S_MAX, for every request but runs. */
void stubs_init(struct event_base *base, unsigned deadline_s);
/* The launcher channel went away: fail every request that waits on it. */
void stubs_fail_chan(struct proto_chan *ch, const char *why);
/* Route one reply from a channel. */
void stubs_dispatch(struct proto_chan *ch, const struct proto_hdr *hdr, void *msg, int fd);

int stub_status(stub_cb cb, void *arg);
int stub_health(stub_cb cb, void *arg);
int stub_caps(bool recheck, stub_cb cb, void *arg);
int stub_policy_get(stub_cb cb, void *arg);
int stub_policy_set(const struct msg_POLICY_SET *m, stub_cb cb, void *arg);
int stub_sandbox_create(const struct msg_SBX_CREATE *m, stub_cb cb, void *arg);
int stub_sandbox_get(const char *id, stub_cb cb, void *arg);
int stub_sandbox_list(stub_cb cb, void *arg);
int stub_sandbox_update(const struct msg_SBX_UPDATE *m, stub_cb cb, void *arg);
int stub_sandbox_delete(const char *id, stub_cb cb, void *arg);
/* Runs: code and stdin of any size up to the PROTO_RUN_*_MAX limits (the stub moves large
 * ones into a sealed memfd; the caller fills code/stdin_data and leaves the *_len and fd
 * business to it). With scb, the output also arrives as it is produced; *ret_stream (when
 * not NULL) names the stream for stub_stream_ack / stub_stream_cancel. */
int stub_run(const struct msg_RUN *m, stub_stream_cb scb, stub_cb cb, void *arg,
             uint32_t *ret_stream);
int stub_exec(const struct msg_EXEC *m, stub_stream_cb scb, stub_cb cb, void *arg,
              uint32_t *ret_stream);
/* Every chunk of the stream delivered so far has been consumed: let more come. */
void stub_stream_ack(uint32_t stream);
/* The consumer went away: the launcher stops streaming (the run itself goes on and is
 * recorded; its final reply still reaches cb). */
void stub_stream_cancel(uint32_t stream);
int stub_runs_list(const char *sandbox_id, uint32_t limit, stub_cb cb, void *arg);
int stub_mount_add(const struct msg_MOUNT_ADD *m, stub_cb cb, void *arg);
int stub_mount_del(const char *sandbox_id, const char *target, stub_cb cb, void *arg);
int stub_profile(const char *id, stub_cb cb, void *arg);
/* With scb, a live run is followed: its output so far and as it comes through scb, the
 * reply when it ends (within the run deadline); an ended run answers at once. */
int stub_run_get(const char *sandbox_id, const char *run_id, stub_stream_cb scb, stub_cb cb,
                 void *arg, uint32_t *ret_stream);
/* A sandbox's live processes: one PROC_REP per process, then LIST_END. */
int stub_ps(const char *sandbox_id, stub_cb cb, void *arg);
int stub_kill(const struct msg_KILL *m, stub_cb cb, void *arg);
/* A file operation; a WRITE's content (len bytes, at most PROTO_FILE_MAX) travels in a
 * sealed memfd. The reply's out/out_len carry a READ's bytes or a LIST's records. */
#define STUB_FILE_FD_MAX (16ull << 20) /* a FILE_REP memfd: a read, or 10000 entries */
/* The launcher's half of GET /metrics. */
int stub_metrics(stub_cb cb, void *arg);
/* Apps (launcher/apps.h) */
int stub_app_put(const struct msg_APP_PUT *m, stub_cb cb, void *arg);
int stub_app_get(const char *name, stub_cb cb, void *arg);
int stub_app_list(stub_cb cb, void *arg);
int stub_app_delete(const char *name, stub_cb cb, void *arg);
int stub_app_ctl(const char *name, uint32_t op, stub_cb cb, void *arg);
/* scb != NULL follows the log (STREAM_DATA of *ret_stream) until the app's process ends */
int stub_app_log(const struct msg_APP_LOG *m, stub_stream_cb scb, stub_cb cb, void *arg,
                 uint32_t *ret_stream);
/* Schedules (launcher/schedules.h) */
int stub_sched_put(const struct msg_SCHED_PUT *m, stub_cb cb, void *arg);
int stub_sched_list(stub_cb cb, void *arg);
int stub_sched_delete(const char *id, stub_cb cb, void *arg);
/* A sandbox's trace lines: the reply's out/out_len. */
int stub_trace(const struct msg_TRACE_GET *m, stub_cb cb, void *arg);
int stub_file_op(const struct msg_FILE_OP *m, const char *content, size_t len, stub_cb cb, void *arg);

#endif
