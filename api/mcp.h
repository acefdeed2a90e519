/* MCP (Streamable HTTP) at /mcp. */
#ifndef SBX_API_MCP_H
#define SBX_API_MCP_H

#include <event2/http.h>

void mcp_handle(struct evhttp_request *req);

#endif
