/* MCP (Streamable HTTP) at /mcp. */
#ifndef SBX_API_MCP_H
#define SBX_API_MCP_H

#include <event2/http.h>
#include <stdbool.h>
#include <stddef.h>
#include <yajl/yajl_tree.h>

#include "ops.h"

void mcp_handle(struct evhttp_request *req);

/* What one JSON-RPC request asks for, decided without the network (mcp_handle then does
 * it): an answer now, 202 for a notification, a new session, or a tool call. */
enum mcp_act { MCP_ANSWER, MCP_ACCEPTED, MCP_INITIALIZE, MCP_TOOL_CALL };
struct mcp_plan {
	enum mcp_act act;
	int status;                 /* MCP_ANSWER: the HTTP status */
	char *doc;                  /* MCP_ANSWER: the JSON-RPC document; NULL = out of memory */
	char *id_json;              /* the request's id as JSON, or NULL (none, or refused) */
	const char *version;        /* MCP_INITIALIZE: the protocol version agreed */
	const struct op_row *row;   /* MCP_TOOL_CALL: the tool's operation */
	struct op_args args;        /* MCP_TOOL_CALL: its arguments (pointing into the body) */
	char *tok_json;             /* MCP_TOOL_CALL: the progressToken as JSON, or NULL */
};
/* body: the parsed POST body; sid: the Mcp-Session-Id header or NULL; known: whether a
 * session is live (may mark it used). The caller clears p with mcp_plan_clear(), and keeps
 * body alive while it uses p->args. */
void mcp_plan(yajl_val body, const char *sid, bool (*known)(const char *sid), struct mcp_plan *p);
void mcp_plan_clear(struct mcp_plan *p);
/* A tool's result document: the REST body as text and, below 400, as structuredContent;
 * 4xx/5xx = isError. Malloc'd, NULL when out of memory. */
char *mcp_tool_result_doc(const char *id_json, int status, const char *body, size_t len,
                          size_t *ret_len);

#endif
