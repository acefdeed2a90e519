/* MCP over Streamable HTTP (protocol 2025-11-25): JSON-RPC on POST /mcp. The tools are
 * the REST operations (ops.c) by another name: same arguments, same stubs, and their
 * structuredContent is the REST response body. No tool changes the ExecPolicy. */
#include "mcp.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "api.h"
#include "http.h"
#include "json.h"
#include "log.h"
#include "ops.h"
#include "schema.h"
#include "util.h"

#define MCP_SESSIONS_MAX 256 /* the oldest is evicted past this */
#define MCP_SESSION_HEX  32
#define MCP_LATEST       "2025-11-25"

static const char *const mcp_versions[] = { "2025-11-25", "2025-06-18", "2025-03-26", NULL };

static struct {
	char id[MCP_SESSION_HEX + 1];
	uint64_t seq;
} sessions[MCP_SESSIONS_MAX];
static uint64_t session_seq;

/* ---- tools --------------------------------------------------------------------- */

struct mcp_tool {
	const char *name, *description, *input, *output;
	enum op_kind kind;
	bool takes_id;
};

static const struct mcp_tool tools[] = {
	{ "sbx_caps", "What this machine can isolate: the capability probe (cached 20 s).",
	  "{\"type\":\"object\",\"properties\":{}}",
	  "{\"type\":\"object\",\"properties\":{\"direct\":{\"type\":\"object\"},"
	  "\"docker\":{\"type\":\"object\"}}}",
	  OP_CAPS, false },
	{ "sbx_create", "Create a sandbox: a persistent workspace with a fence.",
	  "{\"type\":\"object\",\"properties\":{" SCHEMA_SBX_SPEC_PROPS "},\"required\":[\"name\"]}", SCHEMA_SANDBOX,
	  OP_SBX_CREATE, false },
	{ "sbx_list", "List the sandboxes.", "{\"type\":\"object\",\"properties\":{}}",
	  "{\"type\":\"object\",\"properties\":{\"sandboxes\":{\"type\":\"array\"},\"count\":" S_INT
	  "},\"required\":[\"sandboxes\"]}",
	  OP_SBX_LIST, false },
	{ "sbx_get", "Show one sandbox and its settings.",
	  "{\"type\":\"object\",\"properties\":{\"sandboxId\":" S_STR "},\"required\":[\"sandboxId\"]}",
	  SCHEMA_SANDBOX, OP_SBX_GET, true },
	{ "sbx_update", "Change a sandbox's settings; they apply from the next run.",
	  "{\"type\":\"object\",\"properties\":{\"sandboxId\":" S_STR "," SCHEMA_SBX_SPEC_PROPS
	  "},\"required\":[\"sandboxId\"]}",
	  SCHEMA_SANDBOX, OP_SBX_UPDATE, true },
	{ "sbx_delete", "Delete a sandbox and its workdir.",
	  "{\"type\":\"object\",\"properties\":{\"sandboxId\":" S_STR "},\"required\":[\"sandboxId\"]}",
	  "{\"type\":\"object\",\"properties\":{\"id\":" S_STR ",\"deleted\":" S_BOOL "}}",
	  OP_SBX_DELETE, true },
	{ "sbx_run", "Run sh, python or node code inside a sandbox and return its output.",
	  "{\"type\":\"object\",\"properties\":{\"sandboxId\":" S_STR
	  ",\"language\":{\"type\":\"string\",\"enum\":[\"sh\",\"python\",\"node\"]},\"code\":" S_STR
	  ",\"stdin\":" S_STR ",\"timeoutMs\":" S_INT "},\"required\":[\"sandboxId\",\"code\"]}",
	  SCHEMA_RUN, OP_RUN, true },
	{ "sbx_runs", "The run history of a sandbox, newest first.",
	  "{\"type\":\"object\",\"properties\":{\"sandboxId\":" S_STR "},\"required\":[\"sandboxId\"]}",
	  "{\"type\":\"object\",\"properties\":{\"runs\":{\"type\":\"array\"},\"count\":" S_INT
	  "},\"required\":[\"runs\"]}",
	  OP_RUNS_LIST, true },
	{ "sbx_mount", "Make a host directory appear at <sandbox>/<target>, read-only unless "
	               "readOnly is false. Credential dirs, system roots, home itself and the "
	               "engine's data dir are refused.",
	  "{\"type\":\"object\",\"properties\":{\"sandboxId\":" S_STR ",\"source\":" S_STR
	  ",\"target\":" S_STR ",\"readOnly\":" S_BOOL "},\"required\":[\"sandboxId\",\"source\",\"target\"]}",
	  "{\"type\":\"object\",\"properties\":{\"sandboxId\":" S_STR ",\"mounts\":{\"type\":\"array\"}},"
	  "\"required\":[\"mounts\"]}",
	  OP_MOUNT_ADD, true },
	{ "sbx_unmount", "Remove the mount at target.",
	  "{\"type\":\"object\",\"properties\":{\"sandboxId\":" S_STR ",\"target\":" S_STR
	  "},\"required\":[\"sandboxId\",\"target\"]}",
	  "{\"type\":\"object\",\"properties\":{\"sandboxId\":" S_STR ",\"mounts\":{\"type\":\"array\"}},"
	  "\"required\":[\"mounts\"]}",
	  OP_MOUNT_DEL, true },
	{ "sbx_exec", "Run a shell command (the agent shell), in the given sandbox or the default "
	              "one named \"shell\".",
	  "{\"type\":\"object\",\"properties\":{\"code\":" S_STR ",\"sandboxId\":" S_STR
	  ",\"timeoutMs\":" S_INT "},\"required\":[\"code\"]}",
	  SCHEMA_RUN, OP_EXEC, false },
};

/* ---- JSON-RPC replies ---------------------------------------------------------------- */

struct mcp_call {
	struct evhttp_request *req;
	struct evhttp_connection *conn;
	char *id_json; /* the request's id, re-serialized */
};

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

static void rpc_result(struct evhttp_request *req, const char *id_json, const char *result)
{
	char *doc = NULL;
	if (asprintf(&doc, "{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":%s}", id_json, result) < 0) {
		http_error(req, PERR_INTERNAL, "out of memory");
		return;
	}
	send_json(req, 200, doc);
	free(doc);
}

static void rpc_error(struct evhttp_request *req, int status, const char *id_json, int code,
                      const char *msg)
{
	yajl_gen g = json_gen_new();
	size_t len;
	char *m, *doc = NULL;
	json_gen_str(g, msg);
	m = json_gen_dup(g, &len);
	yajl_gen_free(g);
	if (m && asprintf(&doc, "{\"jsonrpc\":\"2.0\",\"id\":%s,\"error\":{\"code\":%d,\"message\":%s}}",
	                  id_json ? id_json : "null", code, m) >= 0)
		send_json(req, status, doc);
	else
		http_error(req, PERR_INTERNAL, "out of memory");
	free(m);
	free(doc);
}

static void call_conn_closed(struct evhttp_connection *conn, void *arg)
{
	((struct mcp_call *)arg)->req = NULL;
}

/* A tool's answer: the REST body as text and as structuredContent; 4xx/5xx = isError. */
static void tool_done(void *arg, int status, char *body, size_t len)
{
	struct mcp_call *c = arg;
	if (c->req) {
		yajl_gen g = json_gen_new();
		size_t tlen;
		char *text, *result = NULL;
		evhttp_connection_set_closecb(c->conn, NULL, NULL);
		json_gen_bytes(g, body ? body : "{}", body ? len : 2);
		text = json_gen_dup(g, &tlen);
		yajl_gen_free(g);
		if (text && status < 400)
			asprintf(&result,
			         "{\"content\":[{\"type\":\"text\",\"text\":%s}],\"structuredContent\":%s,"
			         "\"isError\":false}",
			         text, body);
		else if (text)
			asprintf(&result, "{\"content\":[{\"type\":\"text\",\"text\":%s}],\"isError\":true}",
			         text);
		if (result)
			rpc_result(c->req, c->id_json, result);
		else
			http_error(c->req, PERR_INTERNAL, "out of memory");
		free(text);
		free(result);
	}
	free(body);
	free(c->id_json);
	free(c);
}

/* ---- sessions ------------------------------------------------------------------------ */

static bool session_known(const char *id)
{
	for (int i = 0; id && i < MCP_SESSIONS_MAX; i++)
		if (sessions[i].id[0] && strcmp(sessions[i].id, id) == 0)
			return true;
	return false;
}

static int session_new(char *ret)
{
	uint8_t raw[MCP_SESSION_HEX / 2];
	int slot = 0;
	if (random_bytes(raw, sizeof(raw)) < 0)
		return -EIO;
	for (size_t i = 0; i < sizeof(raw); i++)
		snprintf(ret + 2 * i, 3, "%02x", raw[i]);
	for (int i = 0; i < MCP_SESSIONS_MAX; i++) {
		if (!sessions[i].id[0]) {
			slot = i;
			break;
		}
		if (sessions[i].seq < sessions[slot].seq)
			slot = i; /* the oldest goes */
	}
	memcpy(sessions[slot].id, ret, MCP_SESSION_HEX + 1);
	sessions[slot].seq = ++session_seq;
	return 0;
}

static void session_end(const char *id)
{
	for (int i = 0; i < MCP_SESSIONS_MAX; i++)
		if (sessions[i].id[0] && strcmp(sessions[i].id, id) == 0)
			memset(&sessions[i], 0, sizeof(sessions[i]));
}

/* ---- methods ------------------------------------------------------------------------- */

static void m_initialize(struct evhttp_request *req, const char *id_json, yajl_val params)
{
	const char *want = NULL, *ver = MCP_LATEST;
	char sid[MCP_SESSION_HEX + 1], *result = NULL;
	json_get_str(params, "protocolVersion", &want);
	for (size_t i = 0; want && mcp_versions[i]; i++)
		if (strcmp(want, mcp_versions[i]) == 0)
			ver = mcp_versions[i];
	if (session_new(sid) < 0) {
		rpc_error(req, 500, id_json, -32603, "no randomness for a session id");
		return;
	}
	evhttp_add_header(evhttp_request_get_output_headers(req), "Mcp-Session-Id", sid);
	if (asprintf(&result,
	             "{\"protocolVersion\":\"%s\",\"capabilities\":{\"tools\":{\"listChanged\":false}},"
	             "\"serverInfo\":{\"name\":\"sbx\",\"version\":\"%s\"},"
	             "\"instructions\":\"Run code in local sandboxes: sbx_create, then sbx_run.\"}",
	             ver, SBX_BUILD_ID) < 0) {
		rpc_error(req, 500, id_json, -32603, "out of memory");
		return;
	}
	rpc_result(req, id_json, result);
	free(result);
}

static void m_tools_list(struct evhttp_request *req, const char *id_json)
{
	struct evbuffer *b = evbuffer_new();
	char *doc;
	size_t len;
	evbuffer_add_printf(b, "{\"tools\":[");
	for (size_t i = 0; i < sizeof(tools) / sizeof(tools[0]); i++) {
		yajl_gen g = json_gen_new();
		char *desc;
		json_gen_str(g, tools[i].description);
		desc = json_gen_dup(g, &len);
		yajl_gen_free(g);
		evbuffer_add_printf(b, "%s{\"name\":\"%s\",\"description\":%s,\"inputSchema\":%s,"
		                       "\"outputSchema\":%s}",
		                    i ? "," : "", tools[i].name, desc ? desc : "\"\"", tools[i].input,
		                    tools[i].output);
		free(desc);
	}
	evbuffer_add_printf(b, "]}");
	len = evbuffer_get_length(b);
	doc = malloc(len + 1);
	if (doc) {
		evbuffer_copyout(b, doc, len);
		doc[len] = '\0';
		rpc_result(req, id_json, doc);
	}
	free(doc);
	evbuffer_free(b);
}

static void m_tools_call(struct evhttp_request *req, const char *id_json, yajl_val params)
{
	const char *name = NULL, *sid = NULL;
	const struct mcp_tool *t = NULL;
	yajl_val args = json_get(params, "arguments");
	struct op_args a = { .entrance = ENTRANCE_MCP };
	struct mcp_call *c;

	if (json_get_str(params, "name", &name) < 0) {
		rpc_error(req, 200, id_json, -32602, "params.name: a tool name is required");
		return;
	}
	for (size_t i = 0; i < sizeof(tools) / sizeof(tools[0]); i++)
		if (strcmp(tools[i].name, name) == 0)
			t = &tools[i];
	if (!t) {
		rpc_error(req, 200, id_json, -32602, "unknown tool");
		return;
	}
	if (args && !YAJL_IS_OBJECT(args)) {
		rpc_error(req, 200, id_json, -32602, "params.arguments must be an object");
		return;
	}
	if (t->takes_id && json_get_str(args, "sandboxId", &sid) < 0)
		sid = "";
	if (!t->takes_id && t->kind == OP_EXEC)
		sid = NULL;
	if (!(c = calloc(1, sizeof(*c))) || !(c->id_json = strdup(id_json))) {
		free(c);
		rpc_error(req, 500, id_json, -32603, "out of memory");
		return;
	}
	c->req = req;
	c->conn = evhttp_request_get_connection(req);
	evhttp_connection_set_closecb(c->conn, call_conn_closed, c);
	a.kind = t->kind;
	a.id = sid;
	a.body = args;
	op_start(&a, tool_done, c);
}

void mcp_handle(struct evhttp_request *req)
{
	enum evhttp_cmd_type m = evhttp_request_get_command(req);
	struct evkeyvalq *in = evhttp_request_get_input_headers(req);
	const char *sid = evhttp_find_header(in, "Mcp-Session-Id");
	const char *method = NULL;
	yajl_val body = NULL, idv, params;
	char *id_json = NULL;

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
	{
		struct evbuffer *b = evhttp_request_get_input_buffer(req);
		size_t len = evbuffer_get_length(b);
		char err[256], *buf = malloc(len + 1);
		if (!buf) {
			rpc_error(req, 500, NULL, -32603, "out of memory");
			return;
		}
		evbuffer_copyout(b, buf, len);
		buf[len] = '\0';
		if (json_parse(buf, len, &body, err, sizeof(err)) < 0) {
			free(buf);
			rpc_error(req, 400, NULL, -32700, err[0] ? err : "parse error");
			return;
		}
		free(buf);
	}
	if (!YAJL_IS_OBJECT(body) || json_get_str(body, "method", &method) < 0) {
		rpc_error(req, 400, NULL, -32600,
		          YAJL_IS_ARRAY(body) ? "batches are not supported" : "invalid request");
		goto out;
	}
	idv = json_get(body, "id");
	params = json_get(body, "params");
	if (params && !YAJL_IS_OBJECT(params)) {
		rpc_error(req, 400, NULL, -32602, "params must be an object");
		goto out;
	}
	if (!idv) {
		/* a notification (or a response to us): accepted, nothing to answer */
		if (strcmp(method, "initialize") != 0 && sid && !session_known(sid)) {
			rpc_error(req, 404, NULL, -32001, "unknown session");
			goto out;
		}
		evhttp_send_reply(req, 202, "Accepted", NULL);
		goto out;
	}
	if (!YAJL_IS_STRING(idv) && !YAJL_IS_INTEGER(idv)) {
		rpc_error(req, 400, NULL, -32600, "id must be a string or an integer");
		goto out;
	}
	if (!(id_json = gen_value(idv))) {
		rpc_error(req, 500, NULL, -32603, "out of memory");
		goto out;
	}
	if (strcmp(method, "initialize") == 0) {
		m_initialize(req, id_json, params);
		goto out;
	}
	/* every request after initialize carries the session it was given */
	if (!sid) {
		rpc_error(req, 400, id_json, -32000, "missing Mcp-Session-Id");
		goto out;
	}
	if (!session_known(sid)) {
		rpc_error(req, 404, id_json, -32001, "unknown session");
		goto out;
	}
	if (strcmp(method, "ping") == 0)
		rpc_result(req, id_json, "{}");
	else if (strcmp(method, "tools/list") == 0)
		m_tools_list(req, id_json);
	else if (strcmp(method, "tools/call") == 0)
		m_tools_call(req, id_json, params);
	else
		rpc_error(req, 200, id_json, -32601, "method not found");
out:
	free(id_json);
	yajl_tree_free(body);
}
