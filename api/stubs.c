/* Requests to the launcher and sbxd, and the routing of their replies. */
#include "stubs.h"

#include <errno.h>
#include <event2/event.h>
#include <stdio.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api.h"
#include "cleanup.h"
#include "proto_stream.h"
#include "util.h"

struct pending {
	bool used;
	struct proto_chan *ch;
	uint32_t id;
	uint32_t reply;     /* the expected reply type */
	uint32_t item;      /* list requests: the item type, until LIST_END; else 0 */
	stub_cb cb;
	void *arg;
	stub_stream_cb scb; /* a streamed run: its output chunks, as they come */
	struct proto_stream_rx rx;
	uint64_t deadline;  /* now_ms() after which the request fails */
	uint64_t span;      /* its length: a list restarts it with each item */
};

static struct pending pending[STUB_PENDING_MAX];
static size_t npending;
static uint64_t deadline_ms = PROTO_CALL_DEADLINE_S_DEFAULT * 1000ull;
static struct event *sweeper;

static void fail(struct pending *p, enum proto_err e, const char *why);

/* A request whose answer is late fails; a late answer is then dropped as unknown. This
 * keeps the in-flight slots of both doors from filling up with requests nobody will
 * answer (a launcher that is stopped, wedged or lost a reply). */
static void stubs_sweep(evutil_socket_t unused, short what, void *arg)
{
	uint64_t now = now_ms();
	char why[96];
	for (size_t i = 0; i < STUB_PENDING_MAX; i++) {
		struct pending *p = &pending[i];
		if (!p->used || now < p->deadline)
			continue;
		if (p->scb)
			proto_stream_rx_cancel(&p->rx);
		snprintf(why, sizeof(why), "no answer from the launcher within %llu s",
		         (unsigned long long)(p->span / 1000));
		fail(p, PERR_ENGINE_UNAVAILABLE, why);
	}
}

void stubs_init(struct event_base *base, unsigned deadline_s)
{
	const struct timeval tv = { STUB_SWEEP_MS / 1000, (STUB_SWEEP_MS % 1000) * 1000 };
	memset(pending, 0, sizeof(pending));
	npending = 0;
	deadline_ms = (uint64_t)deadline_s * 1000;
	if (sweeper)
		event_free(sweeper);
	if (base && (sweeper = event_new(base, -1, EV_PERSIST, stubs_sweep, NULL)))
		event_add(sweeper, &tv);
}

static struct pending *pending_find(struct proto_chan *ch, uint32_t id)
{
	for (size_t i = 0; i < STUB_PENDING_MAX; i++)
		if (pending[i].used && pending[i].ch == ch && pending[i].id == id)
			return &pending[i];
	return NULL;
}

static void pending_release(struct pending *p)
{
	p->used = false;
	npending--;
}

static void fail(struct pending *p, enum proto_err e, const char *why)
{
	struct stub_reply rep = { .type = MSG_ERROR, .final = true, .err = e, .message = why };
	stub_cb cb = p->cb;
	void *arg = p->arg;
	pending_release(p);
	cb(&rep, arg);
}

void stubs_fail_chan(struct proto_chan *ch, const char *why)
{
	for (size_t i = 0; i < STUB_PENDING_MAX; i++)
		if (pending[i].used && pending[i].ch == ch)
			fail(&pending[i], PERR_ENGINE_UNAVAILABLE, why);
}

static struct pending *pending_slot(void)
{
	for (size_t i = 0; i < STUB_PENDING_MAX; i++)
		if (!pending[i].used)
			return &pending[i];
	return NULL;
}

/* Send a request with a given id (taking fd) and wait for its reply. */
static int send_req_fd(struct proto_chan *ch, uint32_t id, uint32_t type, const void *msg,
                       int fd, uint32_t reply, uint32_t item, stub_cb cb, void *arg)
{
	struct pending *p;
	int r;
	if (!ch || !proto_chan_ready(ch) || npending >= STUB_PENDING_MAX || !(p = pending_slot())) {
		if (fd >= 0)
			close(fd);
		return !ch || !proto_chan_ready(ch) ? -ENOTCONN : -EBUSY;
	}
	if ((r = proto_chan_send(ch, type, id, msg, fd)) < 0)
		return r;
	*p = (struct pending){ .used = true, .ch = ch, .id = id, .reply = reply, .item = item,
		               .cb = cb, .arg = arg };
	p->span = type == MSG_RUN || type == MSG_EXEC ? STUB_RUN_DEADLINE_MS : deadline_ms;
	p->deadline = now_ms() + p->span;
	npending++;
	return 0;
}

static int send_req(struct proto_chan *ch, uint32_t type, const void *msg, uint32_t reply,
                    uint32_t item, stub_cb cb, void *arg)
{
	if (!ch || !proto_chan_ready(ch))
		return -ENOTCONN;
	return send_req_fd(ch, proto_chan_next_id(ch), type, msg, -1, reply, item, cb, arg);
}

/* RUN_REP output: stdout_len bytes then stderr_len bytes of a memfd, bounded. */
static int read_output(int fd, const struct msg_RUN_REP *r, char **ret_out, char **ret_err,
                       char **ret_trace)
{
	if (fd < 0) {
		*ret_out = *ret_err = *ret_trace = NULL;
		return 0;
	}
	if (r->stdout_len > STUB_RUN_OUTPUT_MAX || r->stderr_len > STUB_RUN_OUTPUT_MAX ||
	    r->stdout_len + r->stderr_len > STUB_RUN_OUTPUT_MAX || r->trace_len > STUB_RUN_TRACE_MAX)
		return -EMSGSIZE;
	size_t lens[3] = { r->stdout_len, r->stderr_len, r->trace_len };
	_cleanup_free_ char *bufs[3] = { NULL, NULL, NULL };
	off_t off = 0;
	for (int i = 0; i < 3; i++) {
		if (!(bufs[i] = malloc(lens[i] + 1)))
			return -ENOMEM;
		size_t got = 0;
		while (got < lens[i]) {
			ssize_t n = pread(fd, bufs[i] + got, lens[i] - got, off);
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0)
				return -errno;
			if (n == 0)
				return -EBADMSG; /* shorter than announced */
			got += (size_t)n;
			off += n;
		}
		bufs[i][lens[i]] = '\0';
	}
	*ret_out = bufs[0];
	*ret_err = bufs[1];
	*ret_trace = r->trace_len ? bufs[2] : NULL;
	bufs[0] = bufs[1] = NULL;
	if (r->trace_len)
		bufs[2] = NULL;
	return 0;
}

/* FILE_REP: a read's bytes or a listing's records, the whole memfd, bounded. */
static int read_file_fd(int fd, const struct msg_FILE_REP *r, char **ret, size_t *ret_len)
{
	struct stat st;
	_cleanup_free_ char *buf = NULL;
	size_t got = 0;
	*ret = NULL;
	*ret_len = 0;
	if (fd < 0)
		return 0;
	if (fstat(fd, &st) < 0)
		return -errno;
	if ((uint64_t)st.st_size > STUB_FILE_FD_MAX || (r->count == 0 && (uint64_t)st.st_size != r->length))
		return -EMSGSIZE;
	if (!(buf = malloc((size_t)st.st_size + 1)))
		return -ENOMEM;
	while (got < (size_t)st.st_size) {
		ssize_t n = pread(fd, buf + got, (size_t)st.st_size - got, (off_t)got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EBADMSG;
		got += (size_t)n;
	}
	buf[got] = '\0';
	*ret = steal_pointer(&buf);
	*ret_len = got;
	return 0;
}

/* STREAM_DATA / STREAM_END of a streamed run: the stream id is its request's id. A chunk
 * out of order or past the window is the launcher breaking the protocol: the stream is
 * cancelled and the run's final reply still comes. */
static void stream_dispatch(struct proto_chan *ch, const struct proto_hdr *hdr, void *msg)
{
	uint32_t sid = hdr->type == MSG_STREAM_DATA ? ((struct msg_STREAM_DATA *)msg)->stream
	                                            : ((struct msg_STREAM_END *)msg)->stream;
	struct pending *p = pending_find(ch, sid);
	if (!p || !p->scb)
		return; /* cancelled or finished: late chunks are dropped */
	if (hdr->type == MSG_STREAM_END) {
		proto_stream_rx_end(&p->rx, msg);
		return;
	}
	const struct msg_STREAM_DATA *d = msg;
	if (proto_stream_rx_data(&p->rx, d) < 0) {
		proto_stream_rx_cancel(&p->rx);
		p->scb = NULL;
		return;
	}
	p->scb(d->chan, d->data.p, d->data.len, p->arg);
}

static struct pending *stream_pending(uint32_t stream)
{
	struct pending *p = pending_find(API->launcher, stream);
	return p && p->scb ? p : NULL;
}

void stub_stream_ack(uint32_t stream)
{
	struct pending *p = stream_pending(stream);
	if (p)
		proto_stream_rx_ack(&p->rx);
}

void stub_stream_cancel(uint32_t stream)
{
	struct pending *p = stream_pending(stream);
	if (p) {
		proto_stream_rx_cancel(&p->rx);
		p->scb = NULL;
	}
}

void stubs_dispatch(struct proto_chan *ch, const struct proto_hdr *hdr, void *msg, int fd)
{
	if (hdr->type == MSG_STREAM_DATA || hdr->type == MSG_STREAM_END) {
		if (fd >= 0)
			close(fd);
		stream_dispatch(ch, hdr, msg);
		return;
	}
	_cleanup_close_ int mfd = fd;
	struct pending *p = pending_find(ch, hdr->id);
	if (!p)
		return; /* a reply nobody waits for (its request failed already): drop it */

	if (hdr->type == MSG_ERROR) {
		const struct msg_ERROR *e = msg;
		fail(p, (enum proto_err)e->code, e->message);
		return;
	}
	bool is_item = p->item && hdr->type == p->item;
	if (!is_item && hdr->type != p->reply) {
		/* OpenSSH's monitor makes this fatal; here the launcher is the trusted side
		 * and the request just fails */
		fail(p, PERR_INTERNAL, "unexpected reply type from the launcher");
		return;
	}
	struct stub_reply rep = { .type = hdr->type, .final = !is_item, .msg = msg };
	_cleanup_free_ char *out = NULL, *err = NULL, *trace = NULL;
	if (hdr->type == MSG_RUN_REP) {
		const struct msg_RUN_REP *rr = msg;
		int r = read_output(mfd, rr, &out, &err, &trace);
		if (r < 0) {
			fail(p, PERR_INTERNAL, "could not read the run's output");
			return;
		}
		rep.out = out;
		rep.out_len = out ? rr->stdout_len : 0;
		rep.errout = err;
		rep.errout_len = err ? rr->stderr_len : 0;
		rep.trace = trace;
		rep.trace_len = trace ? rr->trace_len : 0;
	} else if (hdr->type == MSG_TRACE_REP) {
		const struct msg_TRACE_REP *tr = msg;
		struct msg_FILE_REP as_file = { .length = tr->length };
		if (read_file_fd(mfd, &as_file, &out, &rep.out_len) < 0) {
			fail(p, PERR_INTERNAL, "could not read the trace");
			return;
		}
		rep.out = out;
	} else if (hdr->type == MSG_APP_LOG_REP) {
		const struct msg_APP_LOG_REP *lr = msg;
		struct msg_FILE_REP as_file = { .length = lr->length };
		if (lr->length > PROTO_APP_LOG_MAX ||
		    (lr->length && read_file_fd(mfd, &as_file, &out, &rep.out_len) < 0)) {
			fail(p, PERR_INTERNAL, "could not read the log");
			return;
		}
		rep.out = out;
	} else if (hdr->type == MSG_FILE_REP) {
		if (read_file_fd(mfd, msg, &out, &rep.out_len) < 0) {
			fail(p, PERR_INTERNAL, "could not read the file's bytes");
			return;
		}
		rep.out = out;
	}
	stub_cb cb = p->cb;
	void *arg = p->arg;
	if (rep.final)
		pending_release(p);
	else
		p->deadline = now_ms() + p->span;
	cb(&rep, arg);
}

int stub_status(stub_cb cb, void *arg)
{
	struct msg_STATUS_REQ m = { 0 };
	return send_req(API->sbxd, MSG_STATUS_REQ, &m, MSG_STATUS_REP, 0, cb, arg);
}

int stub_health(stub_cb cb, void *arg)
{
	struct msg_HEALTH_REQ m = { 0 };
	return send_req(API->launcher, MSG_HEALTH_REQ, &m, MSG_HEALTH_REP, 0, cb, arg);
}

int stub_caps(bool recheck, stub_cb cb, void *arg)
{
	struct msg_CAPS_REQ m = { .recheck = recheck };
	return send_req(API->launcher, MSG_CAPS_REQ, &m, MSG_CAPS_REP, 0, cb, arg);
}

int stub_policy_get(stub_cb cb, void *arg)
{
	struct msg_POLICY_GET m = { 0 };
	return send_req(API->launcher, MSG_POLICY_GET, &m, MSG_POLICY_REP, 0, cb, arg);
}

int stub_policy_set(const struct msg_POLICY_SET *m, stub_cb cb, void *arg)
{
	return send_req(API->launcher, MSG_POLICY_SET, m, MSG_POLICY_REP, 0, cb, arg);
}

int stub_sandbox_create(const struct msg_SBX_CREATE *m, stub_cb cb, void *arg)
{
	return send_req(API->launcher, MSG_SBX_CREATE, m, MSG_SBX_REP, 0, cb, arg);
}

int stub_sandbox_get(const char *id, stub_cb cb, void *arg)
{
	struct msg_SBX_GET m = { .id = (char *)id };
	return send_req(API->launcher, MSG_SBX_GET, &m, MSG_SBX_REP, 0, cb, arg);
}

int stub_sandbox_list(stub_cb cb, void *arg)
{
	struct msg_SBX_LIST m = { 0 };
	return send_req(API->launcher, MSG_SBX_LIST, &m, MSG_LIST_END, MSG_SBX_REP, cb, arg);
}

int stub_sandbox_update(const struct msg_SBX_UPDATE *m, stub_cb cb, void *arg)
{
	return send_req(API->launcher, MSG_SBX_UPDATE, m, MSG_SBX_REP, 0, cb, arg);
}

int stub_sandbox_delete(const char *id, stub_cb cb, void *arg)
{
	struct msg_SBX_DELETE m = { .id = (char *)id };
	return send_req(API->launcher, MSG_SBX_DELETE, &m, MSG_OK, 0, cb, arg);
}

/* A sealed memfd holding a then b: the launcher checks the seals, so what it validated is
 * what it runs. */
static int input_memfd(const char *a, size_t alen, const char *b, size_t blen, int *ret_fd)
{
	_cleanup_close_ int fd = memfd_create("sbx-run-input", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	int r;
	if (fd < 0)
		return -errno;
	if ((r = write_all(fd, a, alen)) < 0 || (r = write_all(fd, b, blen)) < 0)
		return r;
	if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) < 0)
		return -errno;
	*ret_fd = fd;
	fd = -1;
	return 0;
}

/* The common half of RUN and EXEC: inline or memfd, stream or not. */
static int send_run(uint32_t type, void *m, char **code, char **stdin_data, uint64_t *code_len,
                    uint64_t *stdin_len, uint32_t *stream, stub_stream_cb scb, stub_cb cb,
                    void *arg, uint32_t *ret_stream)
{
	struct proto_chan *ch = API->launcher;
	size_t clen = *code ? strlen(*code) : 0, slen = stdin_data && *stdin_data ? strlen(*stdin_data) : 0;
	char *keep_code = *code, *keep_stdin = stdin_data ? *stdin_data : NULL;
	int fd = -1, r;
	uint32_t id;

	if (clen > PROTO_RUN_CODE_MAX || slen > PROTO_RUN_STDIN_MAX)
		return -E2BIG;
	if (!ch || !proto_chan_ready(ch))
		return -ENOTCONN;
	if (clen + slen > STUB_RUN_INLINE_MAX) {
		if ((r = input_memfd(*code, clen, keep_stdin ? keep_stdin : "", slen, &fd)) < 0)
			return r;
		*code = "";
		if (stdin_data)
			*stdin_data = "";
		*code_len = clen;
		if (stdin_len)
			*stdin_len = slen;
	}
	id = proto_chan_next_id(ch);
	*stream = scb ? id : 0;
	r = send_req_fd(ch, id, type, m, fd, MSG_RUN_REP, 0, cb, arg);
	*code = keep_code;
	if (stdin_data)
		*stdin_data = keep_stdin;
	if (r < 0)
		return r;
	if (scb) {
		struct pending *p = pending_find(ch, id);
		p->scb = scb;
		proto_stream_rx_init(&p->rx, ch, id);
	}
	if (ret_stream)
		*ret_stream = *stream;
	return 0;
}

int stub_run(const struct msg_RUN *m, stub_stream_cb scb, stub_cb cb, void *arg,
             uint32_t *ret_stream)
{
	struct msg_RUN c = *m;
	return send_run(MSG_RUN, &c, &c.code, &c.stdin_data, &c.code_len, &c.stdin_len, &c.stream,
	                scb, cb, arg, ret_stream);
}

int stub_exec(const struct msg_EXEC *m, stub_stream_cb scb, stub_cb cb, void *arg,
              uint32_t *ret_stream)
{
	struct msg_EXEC c = *m;
	return send_run(MSG_EXEC, &c, &c.code, NULL, &c.code_len, NULL, &c.stream, scb, cb, arg,
	                ret_stream);
}

int stub_runs_list(const char *sandbox_id, uint32_t limit, stub_cb cb, void *arg)
{
	struct msg_RUNS_LIST m = { .sandbox_id = (char *)sandbox_id, .limit = limit };
	return send_req(API->launcher, MSG_RUNS_LIST, &m, MSG_LIST_END, MSG_RUN_REP, cb, arg);
}

/* A request just sent whose answer follows a stream: its chunks go to scb, and it may
 * wait as long as the longest run (the run deadline) for its final reply. */
static void follow_pending(struct proto_chan *ch, uint32_t id, stub_stream_cb scb)
{
	struct pending *p = pending_find(ch, id);
	p->scb = scb;
	p->span = STUB_RUN_DEADLINE_MS;
	p->deadline = now_ms() + p->span;
	proto_stream_rx_init(&p->rx, ch, id);
}

int stub_run_get(const char *sandbox_id, const char *run_id, stub_stream_cb scb, stub_cb cb,
                 void *arg, uint32_t *ret_stream)
{
	struct proto_chan *ch = API->launcher;
	struct msg_RUN_GET m = { .sandbox_id = (char *)sandbox_id, .run_id = (char *)run_id };
	uint32_t id;
	int r;
	if (!ch || !proto_chan_ready(ch))
		return -ENOTCONN;
	id = proto_chan_next_id(ch);
	m.stream = scb ? id : 0;
	if ((r = send_req_fd(ch, id, MSG_RUN_GET, &m, -1, MSG_RUN_REP, 0, cb, arg)) < 0)
		return r;
	if (scb) /* a followed run answers when it ends */
		follow_pending(ch, id, scb);
	if (ret_stream)
		*ret_stream = m.stream;
	return 0;
}

int stub_profile(const char *id, stub_cb cb, void *arg)
{
	struct msg_PROFILE_GET m = { .id = (char *)id };
	return send_req(API->launcher, MSG_PROFILE_GET, &m, MSG_PROFILE_REP, 0, cb, arg);
}

int stub_mount_add(const struct msg_MOUNT_ADD *m, stub_cb cb, void *arg)
{
	return send_req(API->launcher, MSG_MOUNT_ADD, m, MSG_SBX_REP, 0, cb, arg);
}

int stub_mount_del(const char *sandbox_id, const char *target, stub_cb cb, void *arg)
{
	struct msg_MOUNT_DEL m = { .sandbox_id = (char *)sandbox_id, .target = (char *)target };
	return send_req(API->launcher, MSG_MOUNT_DEL, &m, MSG_SBX_REP, 0, cb, arg);
}

int stub_ps(const char *sandbox_id, stub_cb cb, void *arg)
{
	struct msg_PS_REQ m = { .id = (char *)sandbox_id };
	return send_req(API->launcher, MSG_PS_REQ, &m, MSG_LIST_END, MSG_PROC_REP, cb, arg);
}

int stub_kill(const struct msg_KILL *m, stub_cb cb, void *arg)
{
	return send_req(API->launcher, MSG_KILL, m, MSG_KILL_REP, 0, cb, arg);
}

int stub_file_op(const struct msg_FILE_OP *m, const char *content, size_t len, stub_cb cb, void *arg)
{
	struct proto_chan *ch = API->launcher;
	struct msg_FILE_OP c = *m;
	int fd = -1, r;
	if (!ch || !proto_chan_ready(ch))
		return -ENOTCONN;
	if (m->op == FOP_WRITE) {
		if (len > PROTO_FILE_MAX)
			return -E2BIG;
		if ((r = input_memfd(content ? content : "", len, "", 0, &fd)) < 0)
			return r;
		c.size = len;
	}
	return send_req_fd(ch, proto_chan_next_id(ch), MSG_FILE_OP, &c, fd, MSG_FILE_REP, 0, cb, arg);
}

int stub_trace(const struct msg_TRACE_GET *m, stub_cb cb, void *arg)
{
	return send_req(API->launcher, MSG_TRACE_GET, m, MSG_TRACE_REP, 0, cb, arg);
}

int stub_app_put(const struct msg_APP_PUT *m, stub_cb cb, void *arg)
{
	return send_req(API->launcher, MSG_APP_PUT, m, MSG_APP_REP, 0, cb, arg);
}

int stub_app_get(const char *name, stub_cb cb, void *arg)
{
	struct msg_APP_GET m = { .app = (char *)name };
	return send_req(API->launcher, MSG_APP_GET, &m, MSG_APP_REP, 0, cb, arg);
}

int stub_app_list(stub_cb cb, void *arg)
{
	struct msg_APP_LIST m = { 0 };
	return send_req(API->launcher, MSG_APP_LIST, &m, MSG_LIST_END, MSG_APP_REP, cb, arg);
}

int stub_app_delete(const char *name, stub_cb cb, void *arg)
{
	struct msg_APP_DELETE m = { .app = (char *)name };
	return send_req(API->launcher, MSG_APP_DELETE, &m, MSG_OK, 0, cb, arg);
}

int stub_app_ctl(const char *name, uint32_t op, stub_cb cb, void *arg)
{
	struct msg_APP_CTL m = { .app = (char *)name, .op = op };
	return send_req(API->launcher, MSG_APP_CTL, &m, MSG_APP_REP, 0, cb, arg);
}

int stub_app_log(const struct msg_APP_LOG *m, stub_stream_cb scb, stub_cb cb, void *arg,
                 uint32_t *ret_stream)
{
	struct proto_chan *ch = API->launcher;
	struct msg_APP_LOG c = *m;
	uint32_t id;
	int r;
	if (!ch || !proto_chan_ready(ch))
		return -ENOTCONN;
	id = proto_chan_next_id(ch);
	c.follow = scb ? id : 0;
	if ((r = send_req_fd(ch, id, MSG_APP_LOG, &c, -1, MSG_APP_LOG_REP, 0, cb, arg)) < 0)
		return r;
	if (scb) /* a followed log answers when the app's process ends */
		follow_pending(ch, id, scb);
	if (ret_stream)
		*ret_stream = c.follow;
	return 0;
}

int stub_sched_put(const struct msg_SCHED_PUT *m, stub_cb cb, void *arg)
{
	return send_req(API->launcher, MSG_SCHED_PUT, m, MSG_SCHED_REP, 0, cb, arg);
}

int stub_sched_list(stub_cb cb, void *arg)
{
	struct msg_SCHED_LIST m = { 0 };
	return send_req(API->launcher, MSG_SCHED_LIST, &m, MSG_LIST_END, MSG_SCHED_REP, cb, arg);
}

int stub_sched_delete(const char *id, stub_cb cb, void *arg)
{
	struct msg_SCHED_DELETE m = { .id = (char *)id };
	return send_req(API->launcher, MSG_SCHED_DELETE, &m, MSG_OK, 0, cb, arg);
}

int stub_metrics(stub_cb cb, void *arg)
{
	struct msg_METRICS_REQ m = { 0 };
	return send_req(API->launcher, MSG_METRICS_REQ, &m, MSG_METRICS_REP, 0, cb, arg);
}
