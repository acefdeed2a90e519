/* libFuzzer target for the MCP JSON-RPC layer (api/mcp.c): the body of a POST /mcp is
 * parsed as sbx-api does (json_parse) and planned by mcp_plan, which decides the answer,
 * a notification's 202, a new session or the tool call, without a network. Input: a byte
 * that picks the Mcp-Session-Id (none, a live session, an unknown one), then the body.
 * Invariants:
 *   - every answer is a JSON-RPC 2.0 response by sbx's own strict parser: an object with
 *     "jsonrpc":"2.0", an "id" that is the request's id (or null), and exactly one of
 *     "result" and "error" (an error has an integer code and a string message);
 *   - only initialize and notifications go without a live session;
 *   - a tool call names a row of the operation table that is a tool, its arguments are
 *     an object (or absent), and its progress token is valid JSON; the tool result
 *     document built around a REST body (success and error) is valid JSON. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "json.h"
#include "mcp.h"
#include "ops.h"

#define FUZZ_SID_LIVE    "0123456789abcdef0123456789abcdef"
#define FUZZ_SID_UNKNOWN "ffffffffffffffffffffffffffffffff"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool known(const char *sid)
{
	return strcmp(sid, FUZZ_SID_LIVE) == 0;
}

static void check_answer(const struct mcp_plan *p, const char *id_json)
{
	yajl_val doc = fuzz_check_doc(p->doc, strlen(p->doc)), v, e;
	const char *s;
	size_t len;

	FUZZ_CHECK(YAJL_IS_OBJECT(doc));
	FUZZ_CHECK(json_get_str(doc, "jsonrpc", &s) == 0 && strcmp(s, "2.0") == 0);
	v = json_get(doc, "id");
	if (id_json) {
		char *printed = fuzz_print(v, &len);
		FUZZ_CHECK(strcmp(printed, id_json) == 0);
		free(printed);
	} else {
		FUZZ_CHECK(v && YAJL_IS_NULL(v));
	}
	e = json_get(doc, "error");
	FUZZ_CHECK(!e != !json_get(doc, "result"));
	if (e) {
		FUZZ_CHECK(YAJL_IS_INTEGER(json_get(e, "code")));
		FUZZ_CHECK(json_get_str(e, "message", &s) == 0);
		FUZZ_CHECK(p->status >= 200 && p->status < 600);
	} else {
		FUZZ_CHECK(p->status == 200);
	}
	yajl_tree_free(doc);
}

static void check_tool_call(const struct mcp_plan *p)
{
	size_t blen, dlen;
	FUZZ_CHECK(p->row && p->row->tool && op_by_tool(p->row->tool) == p->row);
	FUZZ_CHECK(p->args.entrance == ENTRANCE_MCP);
	FUZZ_CHECK(!p->args.body || YAJL_IS_OBJECT(p->args.body));
	FUZZ_CHECK(p->id_json);
	if (p->tok_json)
		yajl_tree_free(fuzz_check_doc(p->tok_json, strlen(p->tok_json)));
	/* the answer wraps a REST body: here the arguments themselves stand in for one */
	char *body = p->args.body ? fuzz_print(p->args.body, &blen) : NULL;
	for (int status = 200; status <= 400; status += 200) {
		char *doc = mcp_tool_result_doc(p->id_json, status, body, body ? blen : 0, &dlen);
		FUZZ_CHECK(doc && strlen(doc) == dlen);
		yajl_tree_free(fuzz_check_doc(doc, dlen));
		free(doc);
	}
	free(body);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const sids[] = { NULL, FUZZ_SID_LIVE, FUZZ_SID_UNKNOWN };
	const char *sid, *method = NULL;
	struct mcp_plan p;
	yajl_val body = NULL;
	char err[256];

	if (size < 1)
		return 0;
	sid = sids[data[0] % (sizeof(sids) / sizeof(sids[0]))];
	if (json_parse((const char *)data + 1, size - 1, &body, err, sizeof(err)) < 0)
		return 0; /* sbx-api answers -32700 itself: fuzz_json covers the parser */
	mcp_plan(body, sid, known, &p);
	json_get_str(body, "method", &method);
	switch (p.act) {
	case MCP_ANSWER:
		FUZZ_CHECK(p.doc);
		check_answer(&p, p.id_json);
		break;
	case MCP_ACCEPTED:
		FUZZ_CHECK(!json_get(body, "id") && method);
		FUZZ_CHECK(!sid || known(sid) || strcmp(method, "initialize") == 0);
		break;
	case MCP_INITIALIZE:
		FUZZ_CHECK(method && strcmp(method, "initialize") == 0 && p.id_json && p.version);
		break;
	case MCP_TOOL_CALL:
		FUZZ_CHECK(sid && known(sid));
		check_tool_call(&p);
		break;
	}
	mcp_plan_clear(&p);
	yajl_tree_free(body);
	return 0;
}
