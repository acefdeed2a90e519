/* The run messages: RUN and EXEC go through run_code() (launcher/policy.c), the one gate;
 * the history comes from the store. Every field is checked again here: the API is hostile. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "apps.h"
#include "cleanup.h"
#include "dispatch.h"
#include "dispatch_int.h"
#include "files.h"
#include "log.h"
#include "trace.h"
#include "procs.h"
#include "run_input.h"
#include "run_stream.h"
#include "runner.h"
#include "store.h"
#include "util.h"

/* stdout, stderr, then the trace lines in one memfd: outputs can exceed one packet */
static int output_memfd(const char *out, size_t out_len, const char *err, size_t err_len,
                        const char *trace, size_t trace_len)
{
	int fd = memfd_create("sbx-run-output", MFD_CLOEXEC);
	if (fd < 0)
		return -errno;
	if ((out_len && write_all(fd, out, out_len) < 0) || (err_len && write_all(fd, err, err_len) < 0) ||
	    (trace_len && write_all(fd, trace, trace_len) < 0) || lseek(fd, 0, SEEK_SET) < 0) {
		int e = errno ? errno : EIO;
		close(fd);
		return -e;
	}
	return fd;
}

static void send_run_rep(struct proto_chan *ch, uint32_t id, const struct run_result *r, bool with_output)
{
	struct msg_RUN_REP rep = {
		.id = (char *)r->id,
		.sandbox_id = (char *)r->sandbox_id,
		.language = r->language <= LANG_MAX_ ? r->language : LANG_SH,
		.entrance = r->entrance <= ENTRANCE_MAX_ ? r->entrance : ENTRANCE_REST,
		.has_exit_code = r->has_exit_code,
		.exit_code = r->exit_code,
		.signal = r->signal,
		.timed_out = r->timed_out,
		.stdout_len = with_output ? r->out_len : 0,
		.stderr_len = with_output ? r->err_len : 0,
		.stdout_truncated = r->out_truncated,
		.stderr_truncated = r->err_truncated,
		.duration_ms = r->duration_ms,
		.isolation = (char *)(r->isolation ? r->isolation : "none"),
		.created_at = r->created_at,
		.limits = r->limits,
		.note = r->note ? r->note : (char *)"",
		.refused = r->refused,
		.running = r->running,
		.trace_len = with_output && r->trace ? r->trace_len : 0,
	};
	int mfd = -1;
	if (with_output && (mfd = output_memfd(r->out, r->out_len, r->err, r->err_len, r->trace,
	                                       r->trace ? r->trace_len : 0)) < 0) {
		reply_err(ch, id, PERR_INTERNAL, "passing the output: %s", strerror(-mfd));
		return;
	}
	if (proto_chan_send(ch, MSG_RUN_REP, id, &rep, mfd) < 0)
		log_warnx("run %s: reply %u could not be queued", r->id, id);
}

static void run_done(int err, const char *message, struct run_result *res, void *arg)
{
	struct pending *p = arg;
	struct proto_chan *ch = pending_chan(p);
	run_stream_close(p->stream); /* the stream ends before the reply that completes it */
	if (p->replied) {
		/* detached: the caller has its answer; the run is in the history now */
		if (err)
			log_info("detached run %s: %s", res ? res->id : "?", message ? message : "failed");
	} else if (!ch) {
		log_info("run finished after its API channel went away; reply %u dropped", p->id);
	} else if (err) {
		reply_err(ch, p->id, (unsigned)err >= 1 && (unsigned)err <= PERR_MAX_ ? (enum proto_err)err : PERR_INTERNAL,
		          "%s", message ? message : "run failed");
	} else {
		send_run_rep(ch, p->id, res, true);
	}
	free(p);
}

/* The program text and stdin: inline, or (past one packet) from the sealed memfd the API
 * attached. 0, or replied. */
static int run_input(struct proto_chan *ch, uint32_t id, int fd, const char *code,
                     const char *in, uint64_t code_len, uint64_t stdin_len, char **ret_code,
                     char **ret_stdin)
{
	int r;
	if (fd < 0) {
		if (code_len || stdin_len) {
			reply_err(ch, id, PERR_INVALID_ARGUMENT, "code_len without the memfd");
			return -EINVAL;
		}
		*ret_code = strdup(code ? code : "");
		*ret_stdin = strdup(in ? in : "");
		if (*ret_code && *ret_stdin)
			return 0;
		reply_err(ch, id, PERR_INTERNAL, "out of memory");
		return -ENOMEM;
	}
	if ((code && *code) || (in && *in)) {
		reply_err(ch, id, PERR_INVALID_ARGUMENT, "inline code together with the memfd");
		return -EINVAL;
	}
	if ((r = run_input_read(fd, code_len, stdin_len, ret_code, ret_stdin)) == 0)
		return 0;
	if (r == -E2BIG)
		reply_err(ch, id, PERR_PAYLOAD_TOO_LARGE, "code: at most %u bytes; stdin: at most %u bytes",
		          PROTO_RUN_CODE_MAX, PROTO_RUN_STDIN_MAX);
	else
		reply_err(ch, id, PERR_INVALID_ARGUMENT, "the run's input memfd: %s",
		          r == -EPERM ? "not sealed" : r == -EBADMSG ? "not what was announced"
		                                     : strerror(-r));
	return r;
}

/* A detached run's program runs: answer now, with its id and state. */
static void run_started(const struct run_result *res, void *arg)
{
	struct pending *p = arg;
	struct proto_chan *ch = pending_chan(p);
	struct run_result now = *res; /* the strings stay the run's */
	now.running = true;
	p->replied = true;
	if (ch)
		send_run_rep(ch, p->id, &now, false);
}

static void start_run(struct proto_chan *ch, uint32_t id, struct run_request *rq, uint32_t stream,
                      bool detach)
{
	struct pending *p;
	int r;

	if (rq->timeout_ms > SBX_TIMEOUT_MS_MAX) {
		reply_err(ch, id, PERR_INVALID_ARGUMENT, "timeoutMs: at most %u", SBX_TIMEOUT_MS_MAX);
		return;
	}
	if (rq->language > LANG_MAX_ || rq->entrance > ENTRANCE_MAX_) {
		reply_err(ch, id, PERR_INVALID_ARGUMENT, "language or entrance out of range");
		return;
	}
	if (!rq->code || strlen(rq->code) > PROTO_RUN_CODE_MAX ||
	    (rq->stdin_data && strlen(rq->stdin_data) > PROTO_RUN_STDIN_MAX)) {
		reply_err(ch, id, PERR_PAYLOAD_TOO_LARGE, "code: at most %u bytes; stdin: at most %u bytes",
		          PROTO_RUN_CODE_MAX, PROTO_RUN_STDIN_MAX);
		return;
	}
	/* a stream is named by its request, so its chunks route without another table */
	if (stream && stream != id) {
		reply_err(ch, id, PERR_INVALID_ARGUMENT, "stream: must be the request's own id");
		return;
	}
	if (stream && detach) {
		reply_err(ch, id, PERR_INVALID_ARGUMENT, "detach: a detached run's output is read "
		          "from the run afterwards, not streamed by the request");
		return;
	}
	if (!(p = pending_new(id))) {
		reply_err(ch, id, PERR_INTERNAL, "out of memory");
		return;
	}
	if (stream && (r = run_stream_open(p, stream, &p->stream)) < 0) {
		if (r == -EEXIST)
			reply_err(ch, id, PERR_CONFLICT, "stream %u is already open", stream);
		else
			reply_err(ch, id, PERR_ENGINE_UNAVAILABLE, "too many streams (%u)", RUN_STREAMS_MAX);
		free(p);
		return;
	}
	if (p->stream) {
		rq->on_output = run_stream_output;
		rq->on_output_arg = p->stream;
	}
	if (detach) {
		rq->on_started = run_started;
		rq->on_started_arg = p;
	}
	snprintf(p->sandbox_id, sizeof(p->sandbox_id), "%s", rq->sandbox_id);
	/* run_code calls run_done exactly once, possibly before it returns */
	if ((r = run_code(dispatch_L, rq, run_done, p)) < 0)
		log_warnx("run_code: %s", strerror(-r));
}

void dispatch_h_run(struct proto_chan *ch, const struct proto_hdr *h, void *m, int fd, void *arg)
{
	_cleanup_close_ int mfd = fd;
	_cleanup_free_ char *code = NULL, *in_text = NULL;
	struct msg_RUN *in = m;
	struct run_request rq = { .language = in->language,
		                  .timeout_ms = in->timeout_ms,
		                  .entrance = in->entrance,
		                  .is_exec = false };
	if (!sandbox_id_valid(in->sandbox_id)) {
		reply_err(ch, h->id, PERR_INVALID_ARGUMENT, "sandbox id: 1..%u of [a-z0-9_]", PROTO_ID_MAX);
		return;
	}
	if (run_input(ch, h->id, mfd, in->code, in->stdin_data, in->code_len, in->stdin_len, &code,
	              &in_text) < 0)
		return;
	rq.code = code;
	rq.stdin_data = in_text;
	snprintf(rq.sandbox_id, sizeof(rq.sandbox_id), "%s", in->sandbox_id);
	start_run(ch, h->id, &rq, in->stream, in->detach);
}

void dispatch_h_exec(struct proto_chan *ch, const struct proto_hdr *h, void *m, int fd, void *arg)
{
	_cleanup_close_ int mfd = fd;
	_cleanup_free_ char *code = NULL, *in_text = NULL;
	struct msg_EXEC *in = m;
	struct run_request rq = { .language = LANG_SH,
		                  .timeout_ms = in->timeout_ms,
		                  .entrance = in->entrance,
		                  .is_exec = true };
	/* "" = the default sandbox "shell", which run_code resolves */
	if (in->sandbox_id[0] && !sandbox_id_valid(in->sandbox_id)) {
		reply_err(ch, h->id, PERR_INVALID_ARGUMENT, "sandbox id: 1..%u of [a-z0-9_]", PROTO_ID_MAX);
		return;
	}
	if (run_input(ch, h->id, mfd, in->code, "", in->code_len, 0, &code, &in_text) < 0)
		return;
	rq.code = code;
	rq.stdin_data = in_text;
	snprintf(rq.sandbox_id, sizeof(rq.sandbox_id), "%s", in->sandbox_id);
	start_run(ch, h->id, &rq, in->stream, false);
}

void dispatch_h_stream_ack(struct proto_chan *ch, const struct proto_hdr *h, void *m, int fd,
                           void *arg)
{
	run_stream_ack(m);
}

void dispatch_h_stream_cancel(struct proto_chan *ch, const struct proto_hdr *h, void *m, int fd,
                              void *arg)
{
	run_stream_cancel(((struct msg_STREAM_CANCEL *)m)->stream);
}

struct runs_ctx {
	struct proto_chan *ch;
	uint32_t id, count, limit;
};

static int runs_one(const struct run_result *r, void *arg)
{
	struct runs_ctx *c = arg;
	if (c->count >= c->limit)
		return 1;
	send_run_rep(c->ch, c->id, r, true); /* history shows what each run printed (as stored, capped) */
	c->count++;
	return 0;
}

void dispatch_h_runs_list(struct proto_chan *ch, const struct proto_hdr *h, void *m, int fd, void *arg)
{
	struct msg_RUNS_LIST *in = m;
	unsigned limit = in->limit ? in->limit : DISPATCH_RUNS_LIST_DEFAULT;
	struct runs_ctx c = { .ch = ch, .id = h->id, .limit = limit };
	struct sandbox s;
	int r;

	if (in->limit > DISPATCH_RUNS_LIST_MAX) {
		reply_err(ch, h->id, PERR_INVALID_ARGUMENT, "limit: at most %u", DISPATCH_RUNS_LIST_MAX);
		return;
	}
	if (load_sandbox(ch, h->id, in->sandbox_id, &s) < 0)
		return;
	sandbox_clear(&s);
	/* the runs still going (detached ones) first: they are the newest */
	runner_foreach_live(in->sandbox_id, runs_one, &c);
	if (c.count < limit &&
	    (r = store_run_foreach(dispatch_L->db, in->sandbox_id, limit - c.count, runs_one, &c)) < 0) {
		reply_err(ch, h->id, PERR_INTERNAL, "database: %s", strerror(-r));
		return;
	}
	struct msg_LIST_END end = { .count = c.count };
	proto_chan_send(ch, MSG_LIST_END, h->id, &end, -1);
}

/* A followed run ended: the stream closes, then its result answers the RUN_GET. */
static void follow_done(int err, const char *message, struct run_result *res, void *arg)
{
	struct pending *p = arg;
	struct proto_chan *ch = pending_chan(p);
	run_stream_close(p->stream);
	if (ch && (err || !res))
		reply_err(ch, p->id, err ? (enum proto_err)err : PERR_INTERNAL, "%s",
		          message ? message : "the run failed");
	else if (ch)
		send_run_rep(ch, p->id, res, true);
	free(p);
}

/* RUN_GET with a stream: 0 when the run is followed (answered when it ends), -ENOENT when
 * it is not live (answer now), or replied. */
static int follow(struct proto_chan *ch, uint32_t id, const struct msg_RUN_GET *in)
{
	struct pending *p;
	int r;
	if (in->stream != id) {
		reply_err(ch, id, PERR_INVALID_ARGUMENT, "stream: must be the request's own id");
		return -EINVAL;
	}
	if (!runner_is_live(in->run_id))
		return -ENOENT;
	if (!(p = pending_new(id))) {
		reply_err(ch, id, PERR_INTERNAL, "out of memory");
		return -ENOMEM;
	}
	if ((r = run_stream_open(p, id, &p->stream)) < 0) {
		reply_err(ch, id, r == -EEXIST ? PERR_CONFLICT : PERR_ENGINE_UNAVAILABLE,
		          r == -EEXIST ? "stream %u is already open" : "too many streams (%u)",
		          r == -EEXIST ? id : RUN_STREAMS_MAX);
		free(p);
		return r;
	}
	snprintf(p->sandbox_id, sizeof(p->sandbox_id), "%s", in->sandbox_id);
	if ((r = runner_follow(in->sandbox_id, in->run_id, run_stream_output, p->stream, follow_done, p)) < 0) {
		run_stream_close(p->stream);
		free(p);
		if (r == -EBUSY) {
			reply_err(ch, id, PERR_CONFLICT, "run %s: its output already has a reader", in->run_id);
			return r;
		}
		return -ENOENT; /* another sandbox's, or it ended meanwhile: answer from the store */
	}
	return 0;
}

void dispatch_h_run_get(struct proto_chan *ch, const struct proto_hdr *h, void *m, int fd, void *arg)
{
	struct msg_RUN_GET *in = m;
	struct run_result r;
	int rc;

	if (!sandbox_id_valid(in->sandbox_id) || !sandbox_id_valid(in->run_id)) {
		reply_err(ch, h->id, PERR_INVALID_ARGUMENT, "ids: 1..%u of [a-z0-9_]", PROTO_ID_MAX);
		return;
	}
	if (in->stream && follow(ch, h->id, in) != -ENOENT)
		return; /* followed (the answer comes when the run ends), or refused */
	/* a live run answers from the runner (running, its output so far); then the history */
	if ((rc = runner_snapshot(in->sandbox_id, in->run_id, &r)) == -ENOENT)
		rc = store_run_get(dispatch_L->db, in->sandbox_id, in->run_id, &r);
	if (rc < 0) {
		reply_err(ch, h->id, rc == -ENOENT ? PERR_NOT_FOUND : PERR_INTERNAL, "run %s: %s",
		          in->run_id, rc == -ENOENT ? "not found" : strerror(-rc));
		return;
	}
	if (r.trace_end > r.trace_start || (r.running && r.trace_start >= 0)) {
		bool cut;
		free(r.trace);
		r.trace = NULL;
		trace_read(dispatch_L, in->sandbox_id, in->run_id, r.trace_start,
		           r.running ? -1 : r.trace_end, 0, TRACE_RUN_MAX, &r.trace, &r.trace_len, &cut);
	}
	send_run_rep(ch, h->id, &r, true);
	run_result_clear(&r);
}


/* ---- processes and kill --------------------------------------------------------------- */

struct ps_ctx {
	struct proto_chan *ch;
	uint32_t id;
};

static int ps_row(const struct msg_PROC_REP *row, void *arg)
{
	struct ps_ctx *c = arg;
	return proto_chan_send(c->ch, MSG_PROC_REP, c->id, row, -1);
}

void dispatch_h_ps(struct proto_chan *ch, const struct proto_hdr *h, void *m, int fd, void *arg)
{
	struct msg_PS_REQ *in = m;
	struct ps_ctx c = { .ch = ch, .id = h->id };
	struct msg_LIST_END end;
	struct sandbox s;
	size_t n;

	if (load_sandbox(ch, h->id, in->id, &s) < 0)
		return;
	sandbox_clear(&s);
	n = procs_list(in->id, getppid(), ps_row, &c);
	end = (struct msg_LIST_END){ .count = n > PROCS_LIST_MAX ? PROCS_LIST_MAX : (uint32_t)n };
	proto_chan_send(ch, MSG_LIST_END, h->id, &end, -1);
}

void dispatch_h_kill(struct proto_chan *ch, const struct proto_hdr *h, void *m, int fd, void *arg)
{
	struct msg_KILL *in = m;
	struct msg_KILL_REP rep = { 0 };
	char why[PROCS_WHY_MAX] = "";
	char ids[PROTO_LIST_MAX][PROTO_ID_MAX + 1];
	unsigned targets = (in->pid != 0) + (in->pgid != 0) + (in->run_id[0] != '\0') + in->all;
	struct sandbox s;
	int sig = in->signal ? (int)in->signal : SIGTERM, r = 0;

	if (targets != 1) {
		reply_err(ch, h->id, PERR_INVALID_ARGUMENT, "name exactly one of pid, pgid, run or all");
		return;
	}
	if (in->signal && (in->run_id[0] || in->all)) {
		reply_err(ch, h->id, PERR_INVALID_ARGUMENT,
		          "signal: only with pid or pgid (a run ends by SIGTERM, then SIGKILL)");
		return;
	}
	if (!procs_signal_allowed(sig)) {
		reply_err(ch, h->id, PERR_INVALID_ARGUMENT, "signal %u: not one a kill may send", in->signal);
		return;
	}
	if (in->pid > INT32_MAX || in->pgid > INT32_MAX) {
		reply_err(ch, h->id, PERR_FORBIDDEN, "no process of this sandbox has that number");
		return;
	}
	if (in->run_id[0] && !sandbox_id_valid(in->run_id)) {
		reply_err(ch, h->id, PERR_INVALID_ARGUMENT, "run: 1..%u of [a-z0-9_]", PROTO_ID_MAX);
		return;
	}
	if (load_sandbox(ch, h->id, in->sandbox_id, &s) < 0)
		return;
	sandbox_clear(&s);
	rep.signal = (uint32_t)sig;
	if (in->pid)
		r = procs_kill_pid(in->sandbox_id, (pid_t)in->pid, sig, getppid(), &rep.pids, why,
		                   sizeof(why));
	else if (in->pgid)
		r = procs_kill_pgid(in->sandbox_id, (pid_t)in->pgid, sig, getppid(), &rep.pids, why,
		                    sizeof(why));
	else if (in->run_id[0]) {
		struct run_result old;
		if (runner_kill(in->sandbox_id, in->run_id) == 0) {
			proto_strv_push(&rep.runs, in->run_id);
		} else if (runner_is_live(in->run_id)) {
			snprintf(why, sizeof(why), "run %s belongs to another sandbox", in->run_id);
			r = -EPERM;
		} else if (store_run_get(dispatch_L->db, in->sandbox_id, in->run_id, &old) == 0) {
			run_result_clear(&old);
			reply_err(ch, h->id, PERR_CONFLICT, "run %s has already ended", in->run_id);
			return;
		} else {
			reply_err(ch, h->id, PERR_NOT_FOUND, "run %s: not found", in->run_id);
			return;
		}
	} else {
		size_t n = runner_kill_sandbox(in->sandbox_id, ids, PROTO_LIST_MAX);
		for (size_t i = 0; i < n && i < PROTO_LIST_MAX; i++)
			proto_strv_push(&rep.runs, ids[i]);
	}
	if (r == -EPERM)
		reply_err(ch, h->id, PERR_FORBIDDEN, "%s", why);
	else if (r < 0)
		reply_err(ch, h->id, PERR_INTERNAL, "%s", why[0] ? why : strerror(-r));
	else
		proto_chan_send(ch, MSG_KILL_REP, h->id, &rep, -1);
	proto_u32v_clear(&rep.pids);
	proto_strv_clear(&rep.runs);
}

/* ---- files ----------------------------------------------------------------------------- */

static void file_done(int err, const char *why, const struct msg_FILE_REP *rep, int fd, void *arg)
{
	struct pending *p = arg;
	struct proto_chan *ch = pending_chan(p);
	if (!ch || err) {
		if (fd >= 0)
			close(fd);
		if (ch)
			reply_err(ch, p->id, (enum proto_err)err, "%s", why ? why : "file operation failed");
	} else if (proto_chan_send(ch, MSG_FILE_REP, p->id, rep, fd) < 0) { /* takes fd */
		log_warnx("FILE_REP %u could not be queued", p->id);
	}
	free(p);
}

void dispatch_h_file_op(struct proto_chan *ch, const struct proto_hdr *h, void *m, int fd, void *arg)
{
	struct msg_FILE_OP *in = m;
	struct pending *p;
	struct sandbox s;

	if (load_sandbox(ch, h->id, in->sandbox_id, &s) < 0) {
		if (fd >= 0)
			close(fd);
		return;
	}
	if (!(p = pending_new(h->id))) {
		sandbox_clear(&s);
		if (fd >= 0)
			close(fd);
		reply_err(ch, h->id, PERR_INTERNAL, "out of memory");
		return;
	}
	/* files_start takes fd and answers through file_done exactly once */
	files_start(dispatch_L, &s, in, fd, file_done, p);
	sandbox_clear(&s);
}

/* ---- trace ------------------------------------------------------------------------------ */

void dispatch_h_trace_get(struct proto_chan *ch, const struct proto_hdr *h, void *m, int fd, void *arg)
{
	struct msg_TRACE_GET *in = m;
	struct msg_TRACE_REP rep = { 0 };
	_cleanup_free_ char *buf = NULL;
	struct run_result run;
	struct sandbox s;
	int64_t start = 0, end = -1;
	size_t len = 0;
	int mfd = -1, r;

	if (in->run_id[0] && !sandbox_id_valid(in->run_id)) {
		reply_err(ch, h->id, PERR_INVALID_ARGUMENT, "run: 1..%u of [a-z0-9_]", PROTO_ID_MAX);
		return;
	}
	if (load_sandbox(ch, h->id, in->sandbox_id, &s) < 0)
		return;
	rep.tracing = s.tracing;
	sandbox_clear(&s);
	if (in->run_id[0]) { /* a run's own range; a live one up to now */
		if ((r = runner_snapshot(in->sandbox_id, in->run_id, &run)) == -ENOENT)
			r = store_run_get(dispatch_L->db, in->sandbox_id, in->run_id, &run);
		if (r < 0) {
			reply_err(ch, h->id, r == -ENOENT ? PERR_NOT_FOUND : PERR_INTERNAL, "run %s: %s",
			          in->run_id, r == -ENOENT ? "not found" : strerror(-r));
			return;
		}
		start = run.trace_start;
		end = run.running ? -1 : run.trace_end;
		if (!run.running && run.trace_end <= run.trace_start)
			start = end = 0; /* the run recorded nothing */
		run_result_clear(&run);
	}
	r = start == 0 && end == 0 ? 0
	                           : trace_read(dispatch_L, in->sandbox_id, in->run_id[0] ? in->run_id : NULL,
	                                        start, end, in->since_ms, TRACE_READ_MAX, &buf, &len,
	                                        (bool *)&rep.truncated);
	if (r < 0 && r != -ENOENT) {
		reply_err(ch, h->id, PERR_INTERNAL, "reading the trace: %s", strerror(-r));
		return;
	}
	if (len && (mfd = output_memfd(buf, len, NULL, 0, NULL, 0)) < 0) {
		reply_err(ch, h->id, PERR_INTERNAL, "passing the trace: %s", strerror(-mfd));
		return;
	}
	rep.length = len;
	proto_chan_send(ch, MSG_TRACE_REP, h->id, &rep, mfd);
}

/* ---- metrics ---------------------------------------------------------------------------- */

void dispatch_h_metrics(struct proto_chan *ch, const struct proto_hdr *h, void *m, int fd, void *arg)
{
	struct msg_METRICS_REP rep = { .live_runs = dispatch_L->live_runs };
	uint32_t apps[APP_STATE_MAX_ + 1] = { 0 };
	runner_metrics(&rep);
	apps_count_states(apps);
	for (size_t i = 0; i <= APP_STATE_MAX_; i++)
		proto_u32v_push(&rep.apps_by_state, apps[i]);
	proto_chan_send(ch, MSG_METRICS_REP, h->id, &rep, -1);
	proto_u32v_clear(&rep.duration_buckets);
	proto_u32v_clear(&rep.apps_by_state);
}
