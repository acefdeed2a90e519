/* The run messages: RUN and EXEC go through run_code() (launcher/policy.c), the one gate;
 * the history comes from the store. Every field is checked again here: the API is hostile. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "dispatch.h"
#include "dispatch_int.h"
#include "log.h"
#include "store.h"
#include "util.h"

/* stdout then stderr in one sealed-size memfd: outputs can exceed one packet */
static int output_memfd(const char *out, size_t out_len, const char *err, size_t err_len)
{
	int fd = memfd_create("sbx-run-output", MFD_CLOEXEC);
	if (fd < 0)
		return -errno;
	if ((out_len && write_all(fd, out, out_len) < 0) || (err_len && write_all(fd, err, err_len) < 0) ||
	    lseek(fd, 0, SEEK_SET) < 0) {
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
	};
	int mfd = -1;
	if (with_output && (mfd = output_memfd(r->out, r->out_len, r->err, r->err_len)) < 0) {
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
	if (!ch) {
		log_info("run finished after its API channel went away; reply %u dropped", p->id);
	} else if (err) {
		reply_err(ch, p->id, (unsigned)err >= 1 && (unsigned)err <= PERR_MAX_ ? (enum proto_err)err : PERR_INTERNAL,
		          "%s", message ? message : "run failed");
	} else {
		send_run_rep(ch, p->id, res, true);
	}
	free(p);
}

static void start_run(struct proto_chan *ch, uint32_t id, struct run_request *rq)
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
	if (!rq->code || strlen(rq->code) > PROTO_CODE_MAX ||
	    (rq->stdin_data && strlen(rq->stdin_data) > PROTO_CODE_MAX)) {
		reply_err(ch, id, PERR_PAYLOAD_TOO_LARGE, "code or stdin: at most %u bytes", PROTO_CODE_MAX);
		return;
	}
	if (!(p = pending_new(id))) {
		reply_err(ch, id, PERR_INTERNAL, "out of memory");
		return;
	}
	snprintf(p->sandbox_id, sizeof(p->sandbox_id), "%s", rq->sandbox_id);
	/* run_code calls run_done exactly once, possibly before it returns */
	if ((r = run_code(dispatch_L, rq, run_done, p)) < 0)
		log_warnx("run_code: %s", strerror(-r));
}

void dispatch_h_run(struct proto_chan *ch, const struct proto_hdr *h, void *m, int fd, void *arg)
{
	struct msg_RUN *in = m;
	struct run_request rq = { .language = in->language,
		                  .code = in->code,
		                  .stdin_data = in->stdin_data,
		                  .timeout_ms = in->timeout_ms,
		                  .entrance = in->entrance,
		                  .is_exec = false };
	if (!sandbox_id_valid(in->sandbox_id)) {
		reply_err(ch, h->id, PERR_INVALID_ARGUMENT, "sandbox id: 1..%u of [a-z0-9_]", PROTO_ID_MAX);
		return;
	}
	snprintf(rq.sandbox_id, sizeof(rq.sandbox_id), "%s", in->sandbox_id);
	start_run(ch, h->id, &rq);
}

void dispatch_h_exec(struct proto_chan *ch, const struct proto_hdr *h, void *m, int fd, void *arg)
{
	struct msg_EXEC *in = m;
	struct run_request rq = { .language = LANG_SH,
		                  .code = in->code,
		                  .stdin_data = "",
		                  .timeout_ms = in->timeout_ms,
		                  .entrance = in->entrance,
		                  .is_exec = true };
	/* "" = the default sandbox "shell", which run_code resolves */
	if (in->sandbox_id[0] && !sandbox_id_valid(in->sandbox_id)) {
		reply_err(ch, h->id, PERR_INVALID_ARGUMENT, "sandbox id: 1..%u of [a-z0-9_]", PROTO_ID_MAX);
		return;
	}
	snprintf(rq.sandbox_id, sizeof(rq.sandbox_id), "%s", in->sandbox_id);
	start_run(ch, h->id, &rq);
}

struct runs_ctx {
	struct proto_chan *ch;
	uint32_t id, count;
};

static int runs_one(const struct run_result *r, void *arg)
{
	struct runs_ctx *c = arg;
	send_run_rep(c->ch, c->id, r, true); /* history shows what each run printed (as stored, capped) */
	c->count++;
	return 0;
}

void dispatch_h_runs_list(struct proto_chan *ch, const struct proto_hdr *h, void *m, int fd, void *arg)
{
	struct msg_RUNS_LIST *in = m;
	struct runs_ctx c = { .ch = ch, .id = h->id };
	struct sandbox s;
	unsigned limit = in->limit ? in->limit : DISPATCH_RUNS_LIST_DEFAULT;
	int r;

	if (in->limit > DISPATCH_RUNS_LIST_MAX) {
		reply_err(ch, h->id, PERR_INVALID_ARGUMENT, "limit: at most %u", DISPATCH_RUNS_LIST_MAX);
		return;
	}
	if (load_sandbox(ch, h->id, in->sandbox_id, &s) < 0)
		return;
	sandbox_clear(&s);
	if ((r = store_run_foreach(dispatch_L->db, in->sandbox_id, limit, runs_one, &c)) < 0) {
		reply_err(ch, h->id, PERR_INTERNAL, "database: %s", strerror(-r));
		return;
	}
	struct msg_LIST_END end = { .count = c.count };
	proto_chan_send(ch, MSG_LIST_END, h->id, &end, -1);
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
	if ((rc = store_run_get(dispatch_L->db, in->sandbox_id, in->run_id, &r)) < 0) {
		reply_err(ch, h->id, rc == -ENOENT ? PERR_NOT_FOUND : PERR_INTERNAL, "run %s: %s",
		          in->run_id, rc == -ENOENT ? "not found" : strerror(-rc));
		return;
	}
	send_run_rep(ch, h->id, &r, true);
	run_result_clear(&r);
}

