/* api/ops.c's table and what derives from it (route.c, opdoc.c), the in-flight counter
 * (call.c), and the cap at both doors, with the real HTTP server in this process. */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "call.h"
#include "harness.h"
#include "http.h"
#include "opdoc.h"
#include "ops.h"
#include "route.h"
#include "stubs.h"

struct api *API; /* main.c's, which the library does not contain */
static struct api api_state;

TestSuite(api_optable, .timeout = 20);

static yajl_val parse(const char *doc)
{
	char err[256] = "";
	yajl_val v = yajl_tree_parse(doc, err, sizeof(err));
	cr_assert(v, "not JSON (%s): %s", err, doc);
	return v;
}

static bool array_has(yajl_val arr, const char *s)
{
	for (size_t i = 0; arr && YAJL_IS_ARRAY(arr) && i < arr->u.array.len; i++) {
		const char *v = YAJL_GET_STRING(arr->u.array.values[i]);
		if (v && strcmp(v, s) == 0)
			return true;
	}
	return false;
}

Test(api_optable, rows_are_well_formed)
{
	cr_assert_gt(op_table_len, 0);
	for (size_t i = 0; i < op_table_len; i++) {
		const struct op_row *r = &op_table[i];
		const struct op_param *pp[OP_PARAMS_MAX];
		int n = op_row_params(r, pp, OP_PARAMS_MAX);
		cr_expect(r->op && r->path && r->path[0] == '/' && r->description && r->output && r->start,
		          "row %zu is incomplete", i);
		cr_expect_geq(n, 0, "%s: a placeholder no op_param knows", r->path);
		cr_expect(r->status == 200 || r->status == 201, "%s: status %d", r->op, r->status);
		for (size_t k = 0; k < i; k++) {
			cr_expect(!(op_table[k].method == r->method && strcmp(op_table[k].path, r->path) == 0),
			          "%s %s twice", op_method_name(r->method), r->path);
			cr_expect(strcmp(op_table[k].op, r->op) != 0, "operationId %s twice", r->op);
			cr_expect(!r->tool || !op_table[k].tool || strcmp(op_table[k].tool, r->tool) != 0,
			          "tool %s twice", r->tool);
		}
		/* every schema parses, and is an object schema */
		yajl_val out = parse(r->output);
		cr_expect(YAJL_IS_OBJECT(out), "%s: output schema", r->op);
		yajl_tree_free(out);
		for (int tool = 0; tool < 2; tool++) {
			char *in = opdoc_input_schema(r, tool);
			yajl_val v = parse(in);
			const char *type = YAJL_GET_STRING(yajl_tree_get(v, (const char *[]){ "type", NULL },
			                                                 yajl_t_string));
			cr_expect(type && strcmp(type, "object") == 0, "%s: input schema %s", r->op, in);
			yajl_tree_free(v);
			free(in);
		}
	}
}

Test(api_optable, every_id_row_with_a_tool_requires_sandbox_id)
{
	for (size_t i = 0; i < op_table_len; i++) {
		const struct op_row *r = &op_table[i];
		if (!r->tool || !strstr(r->path, "{id}"))
			continue;
		char *in = opdoc_input_schema(r, true);
		yajl_val v = parse(in);
		cr_expect(array_has(yajl_tree_get(v, (const char *[]){ "required", NULL }, yajl_t_array),
		                    "sandboxId"),
		          "%s: sandboxId not required: %s", r->tool, in);
		cr_expect(yajl_tree_get(v, (const char *[]){ "properties", "sandboxId", NULL }, yajl_t_object),
		          "%s: no sandboxId property", r->tool);
		yajl_tree_free(v);
		free(in);
		/* and the REST body does not have it: it is in the path there */
		in = opdoc_input_schema(r, false);
		cr_expect(!strstr(in, "sandboxId"), "%s: REST body names sandboxId: %s", r->op, in);
		free(in);
	}
}

Test(api_optable, tools_list_and_openapi_are_the_table)
{
	size_t len, ntools = 0, nops = 0;
	char *doc = opdoc_tools_list(&len);
	yajl_val v = parse(doc), tools = yajl_tree_get(v, (const char *[]){ "tools", NULL }, yajl_t_array);
	cr_assert(tools);
	for (size_t i = 0; i < op_table_len; i++)
		ntools += op_table[i].tool != NULL;
	cr_expect_eq(tools->u.array.len, ntools);
	for (size_t i = 0; i < tools->u.array.len; i++) {
		yajl_val t = tools->u.array.values[i];
		const char *name = YAJL_GET_STRING(yajl_tree_get(t, (const char *[]){ "name", NULL }, yajl_t_string));
		cr_expect(op_by_tool(name), "tools/list has %s, the table does not", name);
		cr_expect(yajl_tree_get(t, (const char *[]){ "inputSchema", NULL }, yajl_t_object), "%s", name);
		cr_expect(yajl_tree_get(t, (const char *[]){ "outputSchema", NULL }, yajl_t_object), "%s", name);
	}
	yajl_tree_free(v);
	free(doc);

	doc = opdoc_openapi(&len);
	v = parse(doc);
	const char *ver = YAJL_GET_STRING(yajl_tree_get(v, (const char *[]){ "openapi", NULL }, yajl_t_string));
	cr_expect(ver && strncmp(ver, "3.1.", 4) == 0);
	yajl_val paths = yajl_tree_get(v, (const char *[]){ "paths", NULL }, yajl_t_object);
	cr_assert(paths);
	for (size_t i = 0; i < paths->u.object.len; i++)
		nops += paths->u.object.values[i]->u.object.len;
	cr_expect_eq(nops, op_table_len, "%zu operations for %zu rows", nops, op_table_len);
	for (size_t i = 0; i < op_table_len; i++) {
		char m[8];
		size_t k;
		for (k = 0; op_method_name(op_table[i].method)[k] && k < sizeof(m) - 1; k++)
			m[k] = (char)(op_method_name(op_table[i].method)[k] | 0x20);
		m[k] = '\0';
		cr_expect(yajl_tree_get(v, (const char *[]){ "paths", op_table[i].path, m, NULL }, yajl_t_object),
		          "openapi.json lacks %s %s", m, op_table[i].path);
	}
	yajl_tree_free(v);
	free(doc);
}

static int find(const char *path, enum evhttp_cmd_type m, const struct op_row **row,
                struct op_args *a, char *allow)
{
	char buf[256];
	snprintf(buf, sizeof(buf), "%s", path);
	*a = (struct op_args){ 0 };
	*row = NULL;
	int r = route_find(buf, m, row, a, allow, ROUTE_ALLOW_MAX);
	/* the bound values point into buf: copy what the test reads */
	static char id[64], sub[64];
	snprintf(id, sizeof(id), "%s", a->id ? a->id : "");
	snprintf(sub, sizeof(sub), "%s", a->sub_id ? a->sub_id : "");
	a->id = id;
	a->sub_id = sub;
	return r;
}

Test(api_optable, route_patterns)
{
	const struct op_row *row;
	struct op_args a;
	char allow[ROUTE_ALLOW_MAX];

	cr_expect_eq(find("/sandboxes/sbx_1/runs/run_2", EVHTTP_REQ_GET, &row, &a, allow), 0);
	cr_expect_str_eq(row->op, "getRun");
	cr_expect_str_eq(a.id, "sbx_1");
	cr_expect_str_eq(a.sub_id, "run_2");
	cr_expect_eq(find("//sandboxes//sbx_1/", EVHTTP_REQ_PATCH, &row, &a, allow), 0);
	cr_expect_str_eq(row->op, "updateSandbox");
	cr_expect_str_eq(a.id, "sbx_1");
	cr_expect_eq(find("/caps/recheck", EVHTTP_REQ_POST, &row, &a, allow), 0);
	cr_expect_str_eq(row->op, "recheckCaps");

	cr_expect_eq(find("/sandboxes/sbx_1", EVHTTP_REQ_POST, &row, &a, allow), -EOPNOTSUPP);
	cr_expect_str_eq(allow, "GET, PATCH, DELETE");
	cr_expect_null(row);
	cr_expect_eq(find("/exec-policy", EVHTTP_REQ_DELETE, &row, &a, allow), -EOPNOTSUPP);
	cr_expect_str_eq(allow, "GET, PUT");

	cr_expect_eq(find("", EVHTTP_REQ_GET, &row, &a, allow), -ENOENT);
	cr_expect_eq(find("/sandboxes/sbx_1/nope", EVHTTP_REQ_GET, &row, &a, allow), -ENOENT);
	cr_expect_eq(find("/healthz", EVHTTP_REQ_GET, &row, &a, allow), -ENOENT);
	/* at the segment limit and past it */
	cr_expect_eq(find("/a/b/c/d/e/f/g/h", EVHTTP_REQ_GET, &row, &a, allow), -ENOENT);
	cr_expect_eq(find("/a/b/c/d/e/f/g/h/i", EVHTTP_REQ_GET, &row, &a, allow), -ENOENT);
}

Test(api_optable, inflight_counter_at_and_past_the_limit)
{
	struct inflight f = { 0, 3 };
	for (int i = 0; i < 3; i++)
		cr_expect_eq(inflight_take(&f), 0);
	cr_expect_eq(f.n, 3);
	cr_expect_eq(inflight_take(&f), -EBUSY, "one past the limit");
	cr_expect_eq(f.n, 3, "a refusal takes nothing");
	inflight_put(&f);
	cr_expect_eq(inflight_take(&f), 0, "room again after one finished");
	for (int i = 0; i < 5; i++)
		inflight_put(&f);
	cr_expect_eq(f.n, 0, "never below zero");
	cr_expect_eq(api_inflight.max, API_INFLIGHT_MAX);
}

/* ---- the cap at both doors, over real HTTP ------------------------------------------ */

static void *serve(void *arg)
{
	event_base_dispatch(API->base);
	return NULL;
}

/* This process's own sbx-api server, with no launcher behind it: every operation that
 * gets past the cap fails with "the launcher is not connected". */
static void start_server(struct sbxd *d)
{
	pthread_t t;
	API = &api_state;
	API->no_auth = true;
	cr_assert(API->base = event_base_new());
	stubs_init(NULL, PROTO_CALL_DEADLINE_S_DEFAULT);
	*d = (struct sbxd){ 0 };
	cr_assert_eq(free_port(&d->port), 0);
	cr_assert_eq(http_start(API, "127.0.0.1", d->port), 0);
	/* the loop runs until the test process ends; the test thread only sends requests */
	cr_assert_eq(pthread_create(&t, NULL, serve, NULL), 0);
	pthread_detach(t);
}

static const char *tool_text(const struct http_resp *r)
{
	yajl_val content = js_get(r->json, "result.content");
	if (!content || !YAJL_IS_ARRAY(content) || content->u.array.len == 0)
		return NULL;
	return js_str(content->u.array.values[0], "text");
}

Test(api_optable, the_cap_refuses_rest_and_mcp_alike)
{
	struct sbxd d;
	char sid[128], hdr[160];
	start_server(&d);

	_cleanup_resp_ struct http_resp init = http_req(
		&d, "POST", "/mcp",
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-11-25\"}}",
		NULL);
	assert_status(init, 200);
	cr_assert_eq(http_header(&init, "Mcp-Session-Id", sid, sizeof(sid)), 0);
	snprintf(hdr, sizeof(hdr), "Mcp-Session-Id: %s", sid);
	const char *call = "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":"
	                   "{\"name\":\"sbx_caps\",\"arguments\":{}}}";

	/* below the cap both doors get as far as the (missing) launcher */
	_cleanup_resp_ struct http_resp rest_ok = http_req(&d, "GET", "/api/sandbox/caps", NULL, NULL);
	assert_status(rest_ok, 503);
	cr_expect_str_eq(js_str(rest_ok.json, "error.message"), "the launcher is not connected");
	_cleanup_resp_ struct http_resp mcp_ok = http_req(&d, "POST", "/mcp", call, hdr, NULL);
	assert_status(mcp_ok, 200);
	cr_expect(tool_text(&mcp_ok) && strstr(tool_text(&mcp_ok), "not connected"), "%s", mcp_ok.body);
	cr_expect_eq(api_inflight.n, 0, "a finished call still counts");

	/* at the cap: REST 503 engine_unavailable, MCP a tool error with the same document */
	api_inflight.n = API_INFLIGHT_MAX;
	_cleanup_resp_ struct http_resp rest = http_req(&d, "GET", "/api/sandbox/caps", NULL, NULL);
	assert_status(rest, 503);
	cr_expect_str_eq(js_str(rest.json, "error.code"), "engine_unavailable");
	cr_expect_str_eq(js_str(rest.json, "error.message"), "too many requests in flight");
	_cleanup_resp_ struct http_resp mcp = http_req(&d, "POST", "/mcp", call, hdr, NULL);
	assert_status(mcp, 200);
	cr_expect(js_is_true(mcp.json, "result.isError"), "%s", mcp.body);
	cr_expect(!js_get(mcp.json, "result.structuredContent"), "%s", mcp.body);
	cr_expect_str_eq(tool_text(&mcp) ?: "", rest.body, "MCP and REST refuse differently");
	cr_expect_eq(api_inflight.n, API_INFLIGHT_MAX, "a refusal took or gave back a slot");

	/* one slot free again: the next call goes through */
	api_inflight.n = API_INFLIGHT_MAX - 1;
	_cleanup_resp_ struct http_resp again = http_req(&d, "POST", "/mcp", call, hdr, NULL);
	cr_expect(tool_text(&again) && strstr(tool_text(&again), "not connected"), "%s", again.body);
	cr_expect_eq(api_inflight.n, API_INFLIGHT_MAX - 1);
}

Test(api_optable, openapi_is_served_without_the_launcher)
{
	struct sbxd d;
	start_server(&d);
	_cleanup_resp_ struct http_resp r = http_req(&d, "GET", "/api/sandbox/openapi.json", NULL, NULL);
	assert_status(r, 200);
	cr_expect(js_str(r.json, "openapi"), "%s", r.body);
	cr_expect(js_get(r.json, "paths./sandboxes/{id}/runs/{runId}.get"), "%s", r.body);
}
