/* The operation table as a client sees it: every route in DESIGN.md §7 that exists today
 * answers at its method, openapi.json lists exactly those routes, MCP tools/list exactly
 * the ones with a tool, and anything else is 404 or 405 with Allow. The list below is the
 * spec; the daemon's own documents are checked against it and against each other. */
#include <stdio.h>
#include <string.h>

#include <criterion/criterion.h>

#include "harness.h"

TestSuite(optable, .init = sbx_it_init, .fini = sbx_it_fini, .timeout = 60);

#define API "/api/sandbox"

static const struct route {
	const char *method, *pattern, *tool; /* tool: NULL = REST only */
	const char *path, *body;             /* a concrete request that must reach the route */
} routes[] = {
	{ "GET", "/health", "sbx_health", "/health", NULL },
	{ "GET", "/caps", "sbx_caps", "/caps", NULL },
	{ "POST", "/caps/recheck", NULL, "/caps/recheck", NULL },
	{ "GET", "/exec-policy", NULL, "/exec-policy", NULL },
	{ "PUT", "/exec-policy", NULL, "/exec-policy", "{}" },
	{ "GET", "/sandboxes", "sbx_list", "/sandboxes", NULL },
	{ "POST", "/sandboxes", "sbx_create", "/sandboxes", "{}" },
	{ "GET", "/sandboxes/{id}", "sbx_get", "/sandboxes/sbx_nosuch", NULL },
	{ "PATCH", "/sandboxes/{id}", "sbx_update", "/sandboxes/sbx_nosuch", "{}" },
	{ "DELETE", "/sandboxes/{id}", "sbx_delete", "/sandboxes/sbx_nosuch", NULL },
	{ "POST", "/sandboxes/{id}/runs", "sbx_run", "/sandboxes/sbx_nosuch/runs", "{\"code\":\"true\"}" },
	{ "GET", "/sandboxes/{id}/runs", "sbx_runs", "/sandboxes/sbx_nosuch/runs", NULL },
	{ "GET", "/sandboxes/{id}/runs/{runId}", "sbx_run_get", "/sandboxes/sbx_nosuch/runs/run_nosuch", NULL },
	{ "GET", "/sandboxes/{id}/profile", "sbx_profile", "/sandboxes/sbx_nosuch/profile", NULL },
	{ "GET", "/sandboxes/{id}/processes", "sbx_ps", "/sandboxes/sbx_nosuch/processes", NULL },
	{ "POST", "/sandboxes/{id}/kill", "sbx_kill", "/sandboxes/sbx_nosuch/kill", "{}" },
	{ "GET", "/sandboxes/{id}/files", "sbx_ls", "/sandboxes/sbx_nosuch/files?path=x", NULL },
	{ "DELETE", "/sandboxes/{id}/files", "sbx_rm", "/sandboxes/sbx_nosuch/files?path=x", NULL },
	{ "GET", "/sandboxes/{id}/files/content", "sbx_read", "/sandboxes/sbx_nosuch/files/content?path=x", NULL },
	{ "PUT", "/sandboxes/{id}/files/content", "sbx_write", "/sandboxes/sbx_nosuch/files/content?path=x", NULL },
	{ "POST", "/sandboxes/{id}/files/dir", "sbx_mkdir", "/sandboxes/sbx_nosuch/files/dir?path=x", NULL },
	{ "GET", "/sandboxes/{id}/trace", "sbx_trace", "/sandboxes/sbx_nosuch/trace", NULL },
	{ "GET", "/sandboxes/{id}/mounts", "sbx_mounts", "/sandboxes/sbx_nosuch/mounts", NULL },
	{ "POST", "/sandboxes/{id}/mounts", "sbx_mount", "/sandboxes/sbx_nosuch/mounts", "{}" },
	{ "DELETE", "/sandboxes/{id}/mounts", "sbx_unmount", "/sandboxes/sbx_nosuch/mounts?target=x", NULL },
	{ "POST", "/exec", "sbx_exec", "/exec", "{}" },
	{ "GET", "/apps", "sbx_apps", "/apps", NULL },
	{ "POST", "/apps", NULL, "/apps", "{}" },
	{ "GET", "/apps/{name}", NULL, "/apps/nosuch", NULL },
	{ "PATCH", "/apps/{name}", NULL, "/apps/nosuch", "{}" },
	{ "DELETE", "/apps/{name}", NULL, "/apps/nosuch", NULL },
	{ "POST", "/apps/{name}/start", NULL, "/apps/nosuch/start", NULL },
	{ "POST", "/apps/{name}/stop", NULL, "/apps/nosuch/stop", NULL },
	{ "POST", "/apps/{name}/restart", NULL, "/apps/nosuch/restart", NULL },
	{ "GET", "/apps/{name}/log", NULL, "/apps/nosuch/log", NULL },
	{ "GET", "/schedules", NULL, "/schedules", NULL },
	{ "POST", "/schedules", NULL, "/schedules", "{}" },
	{ "DELETE", "/schedules/{scheduleId}", NULL, "/schedules/sch_nosuch", NULL },
	{ "GET", "/metrics", NULL, "/metrics", NULL },
	{ "GET", "/openapi.json", NULL, "/openapi.json", NULL },
};
#define NROUTES (sizeof(routes) / sizeof(routes[0]))

/* "no such route" is the router's own 404; a 404 for a bogus id has another message */
static bool route_missing(const struct http_resp *r)
{
	const char *msg = js_str(r->json, "error.message");
	return r->status == 405 || (r->status == 404 && msg && strcmp(msg, "no such route") == 0);
}

static void lower(char *dst, const char *src, size_t n)
{
	size_t i;
	for (i = 0; i + 1 < n && src[i]; i++)
		dst[i] = (char)(src[i] | 0x20);
	dst[i] = '\0';
}

static const struct route *find_route(const char *method_lc, const char *pattern)
{
	char m[16];
	for (size_t i = 0; i < NROUTES; i++) {
		lower(m, routes[i].method, sizeof(m));
		if (strcmp(m, method_lc) == 0 && strcmp(routes[i].pattern, pattern) == 0)
			return &routes[i];
	}
	return NULL;
}

Test(optable, every_route_answers_at_its_method)
{
	char path[256];
	for (size_t i = 0; i < NROUTES; i++) {
		snprintf(path, sizeof(path), API "%s", routes[i].path);
		_cleanup_resp_ struct http_resp r =
			http_req(&sbx_it, routes[i].method, path, routes[i].body, NULL);
		cr_expect(r.status > 0 && !route_missing(&r), "%s %s: %d %s", routes[i].method, path,
			  r.status, r.body ? r.body : "(none)");
		if (strcmp(routes[i].pattern, "/metrics") != 0) /* Prometheus text */
			cr_expect(r.json, "%s %s: not JSON: %s", routes[i].method, path, r.body ? r.body : "");
	}
}

Test(optable, openapi_lists_exactly_the_routes)
{
	_cleanup_resp_ struct http_resp r = http_req(&sbx_it, "GET", API "/openapi.json", NULL, NULL);
	assert_status(r, 200);
	cr_assert(r.json && YAJL_IS_OBJECT(r.json), "not a JSON object: %s", r.body);
	const char *ver = js_str(r.json, "openapi");
	cr_expect(ver && strncmp(ver, "3.1.", 4) == 0, "openapi: %s", ver ? ver : "(none)");
	cr_expect(js_get(r.json, "components.schemas.Error.properties.error"), "no shared error schema");

	yajl_val paths = js_get(r.json, "paths");
	cr_assert(paths && YAJL_IS_OBJECT(paths), "no paths object");
	bool seen[NROUTES] = { false };
	size_t nops = 0;
	for (size_t i = 0; i < paths->u.object.len; i++) {
		const char *p = paths->u.object.keys[i];
		yajl_val ops = paths->u.object.values[i];
		cr_assert(YAJL_IS_OBJECT(ops), "%s: not an object", p);
		for (size_t k = 0; k < ops->u.object.len; k++) {
			const char *m = ops->u.object.keys[k];
			yajl_val op = ops->u.object.values[k];
			const struct route *want = find_route(m, p);
			nops++;
			cr_expect(want, "openapi.json has %s %s, which the spec does not", m, p);
			if (!want)
				continue;
			seen[want - routes] = true;
			/* a success response with a schema, and the shared error */
			yajl_val resp = js_get(op, "responses");
			cr_expect(resp && YAJL_IS_OBJECT(resp) && resp->u.object.len >= 2, "%s %s: responses", m, p);
			cr_expect(js_get(op, "responses.default"), "%s %s: no error response", m, p);
			/* every {placeholder} is a path parameter */
			yajl_val params = js_get(op, "parameters");
			size_t nph = 0, npar = 0;
			for (const char *c = strchr(p, '{'); c; c = strchr(c + 1, '{'))
				nph++;
			for (size_t j = 0; params && YAJL_IS_ARRAY(params) && j < params->u.array.len; j++)
				npar += strcmp(js_str(params->u.array.values[j], "in") ?: "", "path") == 0;
			cr_expect_eq(npar, nph, "%s %s: %zu path parameters for %zu placeholders", m, p, npar, nph);
			const char *tool = js_str(op, "x-mcp-tool");
			cr_expect((tool == NULL) == (want->tool == NULL) &&
				  (!tool || strcmp(tool, want->tool) == 0),
				  "%s %s: tool %s, want %s", m, p, tool ?: "none", want->tool ?: "none");
		}
	}
	cr_expect_eq(nops, NROUTES, "openapi.json has %zu operations, the spec %zu", nops, NROUTES);
	for (size_t i = 0; i < NROUTES; i++)
		cr_expect(seen[i], "openapi.json lacks %s %s", routes[i].method, routes[i].pattern);
}

static void mcp_session(char *sid, size_t sidsz)
{
	_cleanup_resp_ struct http_resp r =
		http_req(&sbx_it, "POST", "/mcp",
			 "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":"
			 "{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},"
			 "\"clientInfo\":{\"name\":\"t\",\"version\":\"0\"}}}",
			 NULL);
	assert_status(r, 200);
	cr_assert_eq(http_header(&r, "Mcp-Session-Id", sid, sidsz), 0, "no session id: %s", r.head);
}

Test(optable, tools_list_is_exactly_the_rows_with_a_tool)
{
	char sid[128], hdr[160];
	mcp_session(sid, sizeof(sid));
	snprintf(hdr, sizeof(hdr), "Mcp-Session-Id: %s", sid);
	_cleanup_resp_ struct http_resp r =
		http_req(&sbx_it, "POST", "/mcp", "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}",
			 hdr, NULL);
	assert_status(r, 200);
	yajl_val tools = js_get(r.json, "result.tools");
	cr_assert(tools && YAJL_IS_ARRAY(tools), "no tools: %s", r.body);
	size_t want = 0;
	for (size_t i = 0; i < NROUTES; i++)
		want += routes[i].tool != NULL;
	cr_expect_eq(tools->u.array.len, want, "%zu tools, want %zu", tools->u.array.len, want);
	for (size_t j = 0; j < tools->u.array.len; j++) {
		yajl_val t = tools->u.array.values[j];
		const char *name = js_str(t, "name");
		const struct route *row = NULL;
		for (size_t i = 0; name && i < NROUTES; i++)
			if (routes[i].tool && strcmp(routes[i].tool, name) == 0)
				row = &routes[i];
		cr_expect(row, "tool %s is not in the spec", name ?: "(unnamed)");
		cr_expect_str_eq(js_str(t, "inputSchema.type") ?: "", "object", "%s: inputSchema", name);
		cr_expect_str_eq(js_str(t, "outputSchema.type") ?: "", "object", "%s: outputSchema", name);
		if (!row || !strstr(row->pattern, "{id}"))
			continue;
		/* a route with {id} takes sandboxId, required */
		yajl_val req = js_get(t, "inputSchema.required");
		bool has = false;
		for (size_t k = 0; req && YAJL_IS_ARRAY(req) && k < req->u.array.len; k++) {
			const char *s = YAJL_GET_STRING(req->u.array.values[k]);
			has |= s && strcmp(s, "sandboxId") == 0;
		}
		cr_expect(has, "%s: sandboxId is not a required argument", name);
		cr_expect(js_get(t, "inputSchema.properties.sandboxId"), "%s: no sandboxId property", name);
	}
}

Test(optable, unknown_route_404_wrong_method_405_with_allow)
{
	static const char *const missing[] = { API "/no-such-route", API "/sandboxes/sbx_a/nope",
					       API "/sandboxes/sbx_a/runs/run_b/more", API,
					       API "/openapi.yaml" };
	for (size_t i = 0; i < sizeof(missing) / sizeof(missing[0]); i++) {
		_cleanup_resp_ struct http_resp r = http_req(&sbx_it, "GET", missing[i], NULL, NULL);
		cr_expect_eq(r.status, 404, "%s: %d %s", missing[i], r.status, r.body);
		cr_expect_str_eq(js_str(r.json, "error.code") ?: "", "not_found", "%s: %s", missing[i], r.body);
	}
	static const struct {
		const char *method, *path, *allow;
	} wrong[] = {
		{ "DELETE", API "/health", "GET" },
		{ "POST", API "/exec-policy", "GET, PUT" },
		{ "PUT", API "/sandboxes", "GET, POST" },
		{ "POST", API "/sandboxes/sbx_a", "GET, PATCH, DELETE" },
		{ "GET", API "/exec", "POST" },
		{ "POST", API "/openapi.json", "GET" },
	};
	for (size_t i = 0; i < sizeof(wrong) / sizeof(wrong[0]); i++) {
		char allow[128] = "";
		_cleanup_resp_ struct http_resp r = http_req(&sbx_it, wrong[i].method, wrong[i].path,
							      NULL, NULL);
		cr_expect_eq(r.status, 405, "%s %s: %d %s", wrong[i].method, wrong[i].path, r.status, r.body);
		cr_expect(js_str(r.json, "error.code"), "%s %s: no JSON error", wrong[i].method, wrong[i].path);
		cr_expect_eq(http_header(&r, "Allow", allow, sizeof(allow)), 0, "%s: no Allow", wrong[i].path);
		cr_expect_str_eq(allow, wrong[i].allow, "%s %s", wrong[i].method, wrong[i].path);
	}
}

Test(optable, openapi_is_authenticated_like_every_route)
{
	char host[64];
	snprintf(host, sizeof(host), "Host: 127.0.0.1:%u", sbx_it.port);
	const char *hdrs[] = { host, NULL };
	_cleanup_resp_ struct http_resp r =
		http_send(sbx_it.port, "GET", API "/openapi.json", hdrs, NULL, 0, HTTP_TIMEOUT_S);
	cr_expect_eq(r.status, 401, "without the token: %d %s", r.status, r.body);
}
