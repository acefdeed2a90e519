/* The waiting request shared by both doors. If the connection closes before the answer,
 * req is cleared and the answer is dropped; the operation itself runs to its end. */
#include "call.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "conn.h"
#include "http.h"
#include "json.h"
#include "metrics.h"
#include "sse.h"
#include "stubs.h"

struct inflight api_inflight = { 0, API_INFLIGHT_MAX };

struct call {
	const struct op_row *row;
	struct evhttp_request *req;
	struct evhttp_connection *conn;
	const struct call_door *door;
	char *rpc_id;
	char *token;     /* a streamed answer was asked for (see call_start) */
	uint32_t stream; /* the launcher's stream, once output arrived */
	bool sse;        /* events have been sent: the answer is an event stream now */
	struct op_raw raw; /* a REST answer of raw bytes (OPF_RAW_REPLY) */
	uint64_t progress;
};

int inflight_take(struct inflight *f)
{
	if (f->n >= f->max)
		return -EBUSY;
	f->n++;
	return 0;
}

void inflight_put(struct inflight *f)
{
	if (f->n > 0)
		f->n--;
}

static void call_conn_closed(struct evhttp_connection *conn, void *arg)
{
	struct call *c = arg;
	c->req = NULL;
	if (c->stream)
		stub_stream_cancel(c->stream); /* nobody reads it any more; the run goes on */
}

static void sse_send(struct call *c, const char *name, char *doc, size_t len,
                     sse_drained_fn drained)
{
	if (!c->sse) {
		sse_start(c->req);
		c->sse = true;
	}
	sse_event(c->req, name ? name : "message", doc, len, drained, c);
	free(doc);
}

/* The connection wrote every event out: the launcher may send the next chunks. */
static void call_drained(struct evhttp_connection *conn, void *arg)
{
	struct call *c = arg;
	if (c->stream)
		stub_stream_ack(c->stream);
}

static void call_chunk(void *arg, uint32_t stream, uint32_t chan, const char *text, size_t len)
{
	struct call *c = arg;
	const char *name = NULL;
	size_t dlen = 0;
	char *doc;

	c->stream = stream;
	if (!c->req) {
		stub_stream_cancel(stream);
		return;
	}
	c->progress += len;
	doc = c->door->chunk_event(c->rpc_id, c->token, c->progress, chan, text, len, &name, &dlen);
	if (doc)
		sse_send(c, name, doc, dlen, call_drained);
}

static void call_done(void *arg, int status, char *body, size_t len)
{
	struct call *c = arg;
	inflight_put(&api_inflight);
	api_metrics_count(c->row->op, status);
	if (c->req) {
		conn_unwait(c->conn);
		if (c->sse) {
			const char *name = NULL;
			size_t dlen = 0;
			char *doc = body ? c->door->final_event(c->rpc_id, status, body, len, &name, &dlen)
			                 : NULL;
			if (doc)
				sse_send(c, name, doc, dlen, NULL);
			sse_end(c->req);
		} else if (c->raw.used && status < 300) {
			http_reply_raw(c->req, status, body, len, &c->raw);
		} else {
			c->door->answer(c->req, c->rpc_id, status, body, len);
		}
	}
	free(body);
	free(c->rpc_id);
	free(c->token);
	free(c);
}

static void call_refuse(struct evhttp_request *req, call_answer_fn answer, const char *rpc_id)
{
	size_t len = 0;
	char *doc = json_error_doc(PERR_ENGINE_UNAVAILABLE, "too many requests in flight", &len);
	answer(req, rpc_id, json_err_status(PERR_ENGINE_UNAVAILABLE), doc, len);
	free(doc);
}

void call_start(struct evhttp_request *req, const struct op_row *row, const struct op_args *a,
                const struct call_door *door, const char *rpc_id, const char *stream_token)
{
	struct op_args sa = *a;
	struct call *c;

	if (inflight_take(&api_inflight) < 0) {
		call_refuse(req, door->answer, rpc_id);
		return;
	}
	if (!(c = calloc(1, sizeof(*c))) || (rpc_id && !(c->rpc_id = strdup(rpc_id))) ||
	    (stream_token && !(c->token = strdup(stream_token)))) {
		if (c)
			free(c->rpc_id);
		free(c);
		inflight_put(&api_inflight);
		door->answer(req, rpc_id, 500, NULL, 0);
		return;
	}
	c->row = row;
	c->req = req;
	c->conn = evhttp_request_get_connection(req);
	c->door = door;
	conn_wait(req, call_conn_closed, c);
	sa.chunk = stream_token ? call_chunk : NULL;
	/* REST alone answers a file's bytes raw; MCP gets the JSON document */
	sa.raw_out = (row->flags & OPF_RAW_REPLY) && !rpc_id ? &c->raw : NULL;
	op_start(row, &sa, call_done, c);
}
