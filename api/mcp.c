/* MCP over Streamable HTTP (protocol 2025-11-25): JSON-RPC on POST /mcp. The tools are
 * the rows of the operation table (ops.c) that name one: same arguments, same stubs, the
 * same waiting call and in-flight cap as REST, and their structuredContent is the REST
 * response body. No tool changes the ExecPolicy. */
#include "mcp.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "api.h"
#include "call.h"
#include "cleanup.h"
#include "http.h"
#include "json.h"
#include "log.h"
#include "opdoc.h"
#include "ops.h"
#include "util.h"

#define MCP_SESSIONS_MAX    256 /* the least recently used is evicted past this */
#define MCP_SESSION_IDLE_MS (60u * 60u * 1000u) /* unused this long: expired */
#define MCP_SESSION_RATE    16u /* new sessions per second, sustained ... */
#define MCP_SESSION_BURST   64u /* ... after a burst of this many */
#define MCP_SESSION_HEX  32
#define MCP_LATEST       "2025-11-25"

static const char *const mcp_versions[] = { "2025-11-25", "2025-06-18", "2025-03-26", NULL };

static struct {
	char id[MCP_SESSION_HEX + 1];
	uint64_t seq;     /* bumped on every use: the lowest is the least recently used */
	uint64_t used_ms; /* last use, for idle expiry */
} sessions[MCP_SESSIONS_MAX];
static uint64_t session_seq;

/* ---- JSON-RPC replies ---------------------------------------------------------------- */

static char *gen_value(yajl_val v)
{
	yajl_gen g = json_gen_new();
	size_t len;
	char *s;
	if (YAJL_IS_STRING(v))
		json_gen_str(g, YAJL_GET_STRING(v));
	else if (YAJL_IS_INTEGER(v))
		yajl_gen_integer(g, YAJL_GET_INTEGER(v));
	else if (YAJL_IS_DOUBLE(v))
		yajl_gen_double(g, YAJL_GET_DOUBLE(v));
	else
		yajl_gen_null(g);
	s = json_gen_dup(g, &len);
	yajl_gen_free(g);
	return s;
}

static void send_json(struct evhttp_request *req, int status, const char *doc)
{
	http_reply(req, status, doc, strlen(doc));
}

/* {"jsonrpc":"2.0","id":ID,"result":RESULT}, malloc'd; NULL when out of memory. */
static char *rpc_result_doc(const char *id_json, const char *result)
{
	char *doc = NULL;
	if (asprintf(&doc, "{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":%s}", id_json, result) < 0)
		return NULL;
	return doc;
}

/* {"jsonrpc":"2.0","id":ID or null,"error":{"code":C,"message":M}}, malloc'd; NULL when out
 * of memory. */
static char *rpc_error_doc(const char *id_json, int code, const char *msg)
{
	yajl_gen g = json_gen_new();
	size_t len;
	_cleanup_free_ char *m = NULL;
	char *doc = NULL;
	json_gen_str(g, msg);
	m = json_gen_dup(g, &len);
	yajl_gen_free(g);
	if (!m || asprintf(&doc, "{\"jsonrpc\":\"2.0\",\"id\":%s,\"error\":{\"code\":%d,"
	                         "\"message\":%s}}",
	                   id_json ? id_json : "null", code, m) < 0)
		return NULL;
	return doc;
}

static void send_doc(struct evhttp_request *req, int status, char *doc)
{
	if (doc)
		send_json(req, status, doc);
	else
		http_error(req, PERR_INTERNAL, "out of memory");
	free(doc);
}

static void rpc_result(struct evhttp_request *req, const char *id_json, const char *result)
{
	send_doc(req, 200, rpc_result_doc(id_json, result));
}

static void rpc_error(struct evhttp_request *req, int status, const char *id_json, int code,
                      const char *msg)
{
	send_doc(req, status, rpc_error_doc(id_json, code, msg));
}

char *mcp_tool_result_doc(const char *id_json, int status, const char *body, size_t len,
                          size_t *ret_len)
{
	yajl_gen g = json_gen_new();
	size_t tlen;
	_cleanup_free_ char *text = NULL;
	char *doc = NULL;
	int r = -1;

	json_gen_bytes(g, body ? body : "{}", body ? len : 2);
	text = json_gen_dup(g, &tlen);
	yajl_gen_free(g);
	if (text && body && status < 400)
		r = asprintf(&doc,
		             "{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"content\":[{\"type\":"
		             "\"text\",\"text\":%s}],\"structuredContent\":%.*s,\"isError\":false}}",
		             id_json, text, (int)len, body);
	else if (text)
		r = asprintf(&doc,
		             "{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"content\":[{\"type\":"
		             "\"text\",\"text\":%s}],\"isError\":true}}",
		             id_json, text);
	if (r < 0)
		return NULL;
	*ret_len = (size_t)r;
	return doc;
}

static void tool_answer(struct evhttp_request *req, const char *id_json, int status,
                        const char *body, size_t len)
{
	size_t dlen = 0;
	_cleanup_free_ char *doc = mcp_tool_result_doc(id_json, status, body, len, &dlen);
	if (doc)
		http_reply(req, 200, doc, dlen);
	else
		http_error(req, PERR_INTERNAL, "out of memory");
}

/* With a progressToken, a run's output arrives as notifications/progress (progress =
 * bytes so far, message = the text) on an event stream, and the result ends it. */
static char *tool_chunk_event(const char *id_json, const char *token, uint64_t progress,
                              uint32_t chan, const char *text, size_t len, const char **ret_name,
                              size_t *ret_len)
{
	yajl_gen g = json_gen_new();
	_cleanup_free_ char *msg = NULL;
	size_t mlen;
	char *doc = NULL;
	int r;
	json_gen_bytes(g, text, len);
	msg = json_gen_dup(g, &mlen);
	yajl_gen_free(g);
	if (!msg)
		return NULL;
	r = asprintf(&doc,
	             "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":"
	             "{\"progressToken\":%s,\"progress\":%llu,\"message\":%s}}",
	             token, (unsigned long long)progress, msg);
	*ret_name = NULL;
	*ret_len = r < 0 ? 0 : (size_t)r;
	return r < 0 ? NULL : doc;
}

static char *tool_final_event(const char *id_json, int status, const char *body, size_t len,
                              const char **ret_name, size_t *ret_len)
{
	*ret_name = NULL;
	return mcp_tool_result_doc(id_json, status, body, len, ret_len);
}

static const struct call_door mcp_door = { tool_answer, tool_chunk_event, tool_final_event };

/* ---- sessions ------------------------------------------------------------------------ */

static bool session_idle(int i, uint64_t now)
{
	return now - sessions[i].used_ms > MCP_SESSION_IDLE_MS;
}

/* A live session: marked as just used. An idle one past its time is expired here. */
static bool session_known(const char *id)
{
	uint64_t now = now_ms();
	for (int i = 0; id && i < MCP_SESSIONS_MAX; i++) {
		if (!sessions[i].id[0] || strcmp(sessions[i].id, id) != 0)
			continue;
		if (session_idle(i, now)) {
			memset(&sessions[i], 0, sizeof(sessions[i]));
			return false;
		}
		sessions[i].seq = ++session_seq;
		sessions[i].used_ms = now;
		return true;
	}
	return false;
}

/* A token bucket on session creation, so a client cannot churn the table (and evict
 * everyone else) faster than MCP_SESSION_RATE per second. */
static bool session_rate_ok(uint64_t now)
{
	static uint64_t tokens_milli = (uint64_t)MCP_SESSION_BURST * 1000u, last;
	tokens_milli += (now - last) * MCP_SESSION_RATE;
	if (tokens_milli > (uint64_t)MCP_SESSION_BURST * 1000u)
		tokens_milli = (uint64_t)MCP_SESSION_BURST * 1000u;
	last = now;
	if (tokens_milli < 1000u)
		return false;
	tokens_milli -= 1000u;
	return true;
}

/* 0, -EAGAIN (created too fast), -EIO (no randomness). */
static int session_new(char *ret)
{
	uint8_t raw[MCP_SESSION_HEX / 2];
	uint64_t now = now_ms();
	int slot = 0;
	if (!session_rate_ok(now))
		return -EAGAIN;
	if (random_bytes(raw, sizeof(raw)) < 0)
		return -EIO;
	for (size_t i = 0; i < sizeof(raw); i++)
		snprintf(ret + 2 * i, 3, "%02x", raw[i]);
	/* a free slot, else an expired one, else the least recently used */
	for (int i = 0; i < MCP_SESSIONS_MAX; i++) {
		if (!sessions[i].id[0] || session_idle(i, now)) {
			slot = i;
			break;
		}
		if (sessions[i].seq < sessions[slot].seq)
			slot = i;
	}
	memcpy(sessions[slot].id, ret, MCP_SESSION_HEX + 1);
	sessions[slot].seq = ++session_seq;
	sessions[slot].used_ms = now;
	return 0;
}

static void session_end(const char *id)
{
	for (int i = 0; i < MCP_SESSIONS_MAX; i++)
		if (sessions[i].id[0] && strcmp(sessions[i].id, id) == 0)
			memset(&sessions[i], 0, sizeof(sessions[i]));
}

/* ---- methods ------------------------------------------------------------------------- */

static void plan_answer(struct mcp_plan *p, int status, char *doc)
{
	p->act = MCP_ANSWER;
	p->status = status;
	p->doc = doc;
}

static void plan_error(struct mcp_plan *p, int status, int code, const char *msg)
{
	plan_answer(p, status, rpc_error_doc(p->id_json, code, msg));
}

static void plan_initialize(struct mcp_plan *p, yajl_val params)
{
	const char *want = NULL;
	json_get_str(params, "protocolVersion", &want);
	p->act = MCP_INITIALIZE;
	p->version = MCP_LATEST;
	for (size_t i = 0; want && mcp_versions[i]; i++)
		if (strcmp(want, mcp_versions[i]) == 0)
			p->version = mcp_versions[i];
}

/* Arguments = the REST body's fields plus one per path placeholder (sandboxId for {id});
 * a missing one binds "", which names nothing and is answered not_found. */
static void plan_tools_call(struct mcp_plan *p, yajl_val params)
{
	const char *name = NULL;
	const struct op_param *pp[OP_PARAMS_MAX];
	yajl_val args = json_get(params, "arguments");
	int n;

	if (json_get_str(params, "name", &name) < 0) {
		plan_error(p, 200, -32602, "params.name: a tool name is required");
		return;
	}
	if (!(p->row = op_by_tool(name))) {
		plan_error(p, 200, -32602, "unknown tool");
		return;
	}
	if (args && !YAJL_IS_OBJECT(args)) {
		plan_error(p, 200, -32602, "params.arguments must be an object");
		return;
	}
	p->args = (struct op_args){ .entrance = ENTRANCE_MCP, .body = args };
	n = op_row_params(p->row, pp, OP_PARAMS_MAX);
	for (int i = 0; i < n; i++) {
		const char *v = NULL;
		if (json_get_str(args, pp[i]->tool_arg, &v) < 0)
			v = "";
		op_param_set(pp[i], &p->args, v);
	}
	/* a progressToken (string or integer) asks for progress notifications */
	yajl_val tok = json_get(json_get(params, "_meta"), "progressToken");
	if (tok && (YAJL_IS_STRING(tok) || YAJL_IS_INTEGER(tok)))
		p->tok_json = gen_value(tok); /* NULL when out of memory: no progress then */
	p->act = MCP_TOOL_CALL;
}

void mcp_plan(yajl_val body, const char *sid, bool (*known)(const char *sid), struct mcp_plan *p)
{
	const char *method = NULL;
	yajl_val idv, params;

	*p = (struct mcp_plan){ 0 };
	if (!YAJL_IS_OBJECT(body) || json_get_str(body, "method", &method) < 0) {
		plan_error(p, 400, -32600,
		           YAJL_IS_ARRAY(body) ? "batches are not supported" : "invalid request");
		return;
	}
	idv = json_get(body, "id");
	params = json_get(body, "params");
	if (params && !YAJL_IS_OBJECT(params)) {
		plan_error(p, 400, -32602, "params must be an object");
		return;
	}
	if (!idv) {
		/* a notification (or a response to us): accepted, nothing to answer */
		if (strcmp(method, "initialize") != 0 && sid && !known(sid))
			plan_error(p, 404, -32001, "unknown session");
		else
			p->act = MCP_ACCEPTED;
		return;
	}
	if (!YAJL_IS_STRING(idv) && !YAJL_IS_INTEGER(idv)) {
		plan_error(p, 400, -32600, "id must be a string or an integer");
		return;
	}
	if (!(p->id_json = gen_value(idv))) {
		plan_error(p, 500, -32603, "out of memory");
		return;
	}
	if (strcmp(method, "initialize") == 0) {
		plan_initialize(p, params);
		return;
	}
	/* every request after initialize carries the session it was given */
	if (!sid) {
		plan_error(p, 400, -32000, "missing Mcp-Session-Id");
		return;
	}
	if (!known(sid)) {
		plan_error(p, 404, -32001, "unknown session");
		return;
	}
	if (strcmp(method, "ping") == 0) {
		plan_answer(p, 200, rpc_result_doc(p->id_json, "{}"));
	} else if (strcmp(method, "tools/list") == 0) {
		_cleanup_free_ char *doc = opdoc_tools_list(NULL);
		if (doc)
			plan_answer(p, 200, rpc_result_doc(p->id_json, doc));
		else
			plan_error(p, 500, -32603, "out of memory");
	} else if (strcmp(method, "tools/call") == 0) {
		plan_tools_call(p, params);
	} else {
		plan_error(p, 200, -32601, "method not found");
	}
}

void mcp_plan_clear(struct mcp_plan *p)
{
	free(p->doc);
	free(p->id_json);
	free(p->tok_json);
	*p = (struct mcp_plan){ 0 };
}

static void do_initialize(struct evhttp_request *req, const struct mcp_plan *p)
{
	char sid[MCP_SESSION_HEX + 1], *result = NULL;
	int r;
	if ((r = session_new(sid)) < 0) {
		if (r == -EAGAIN)
			rpc_error(req, 429, p->id_json, -32000, "sessions are being created too fast; retry");
		else
			rpc_error(req, 500, p->id_json, -32603, "no randomness for a session id");
		return;
	}
	evhttp_add_header(evhttp_request_get_output_headers(req), "Mcp-Session-Id", sid);
	if (asprintf(&result,
	             "{\"protocolVersion\":\"%s\",\"capabilities\":{\"tools\":{\"listChanged\":false}},"
	             "\"serverInfo\":{\"name\":\"sbx\",\"version\":\"%s\"},"
	             "\"instructions\":\"Run code in local sandboxes: sbx_create, then sbx_run.\"}",
	             p->version, SBX_BUILD_ID) < 0) {
		rpc_error(req, 500, p->id_json, -32603, "out of memory");
		return;
	}
	rpc_result(req, p->id_json, result);
	free(result);
}

void mcp_handle(struct evhttp_request *req)
{
	enum evhttp_cmd_type m = evhttp_request_get_command(req);
	struct evkeyvalq *in = evhttp_request_get_input_headers(req);
	const char *sid = evhttp_find_header(in, "Mcp-Session-Id");
	yajl_val body = NULL;
	struct mcp_plan p;
	char why[HTTP_WHY_MAX];
	int r;

	if (m == EVHTTP_REQ_DELETE) {
		if (!session_known(sid)) {
			rpc_error(req, 404, NULL, -32001, "unknown session");
			return;
		}
		session_end(sid);
		send_json(req, 200, "{}");
		return;
	}
	if (m != EVHTTP_REQ_POST) {
		/* no server-initiated stream: every answer comes with its POST */
		evhttp_add_header(evhttp_request_get_output_headers(req), "Allow", "POST, DELETE");
		rpc_error(req, 405, NULL, -32000, "use POST for MCP requests");
		return;
	}
	if (evbuffer_get_length(evhttp_request_get_input_buffer(req)) == 0) {
		rpc_error(req, 400, NULL, -32700, "empty body");
		return;
	}
	if ((r = http_body_json(req, HTTP_BODY_MAX, &body, why, sizeof(why))) < 0) {
		if (r == -ENOMEM)
			rpc_error(req, 500, NULL, -32603, why);
		else
			rpc_error(req, r == -EMSGSIZE ? 413 : 400, NULL, -32700, why);
		return;
	}
	mcp_plan(body, sid, session_known, &p);
	switch (p.act) {
	case MCP_ANSWER:
		send_doc(req, p.status, p.doc);
		p.doc = NULL;
		break;
	case MCP_ACCEPTED:
		evhttp_send_reply(req, 202, "Accepted", NULL);
		break;
	case MCP_INITIALIZE:
		do_initialize(req, &p);
		break;
	case MCP_TOOL_CALL:
		call_start(req, p.row, &p.args, &mcp_door, p.id_json, p.tok_json);
		break;
	}
	mcp_plan_clear(&p);
	yajl_tree_free(body);
}
