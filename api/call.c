/* The waiting request shared by both doors. If the connection closes before the answer,
 * req is cleared and the answer is dropped; the operation itself runs to its end. */
#include "call.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"

struct inflight api_inflight = { 0, API_INFLIGHT_MAX };

struct call {
	struct evhttp_request *req;
	struct evhttp_connection *conn;
	call_answer_fn answer;
	char *rpc_id;
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
	((struct call *)arg)->req = NULL;
}

static void call_done(void *arg, int status, char *body, size_t len)
{
	struct call *c = arg;
	inflight_put(&api_inflight);
	if (c->req) {
		evhttp_connection_set_closecb(c->conn, NULL, NULL);
		c->answer(c->req, c->rpc_id, status, body, len);
	}
	free(body);
	free(c->rpc_id);
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
                call_answer_fn answer, const char *rpc_id)
{
	struct call *c;

	if (inflight_take(&api_inflight) < 0) {
		call_refuse(req, answer, rpc_id);
		return;
	}
	if (!(c = calloc(1, sizeof(*c))) || (rpc_id && !(c->rpc_id = strdup(rpc_id)))) {
		free(c);
		inflight_put(&api_inflight);
		answer(req, rpc_id, 500, NULL, 0);
		return;
	}
	c->req = req;
	c->conn = evhttp_request_get_connection(req);
	c->answer = answer;
	evhttp_connection_set_closecb(c->conn, call_conn_closed, c);
	op_start(row, a, call_done, c);
}
