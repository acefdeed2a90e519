/* Documents derived from the operation table: MCP tools/list and openapi.json. */
#ifndef SBX_API_OPDOC_H
#define SBX_API_OPDOC_H

#include <stdbool.h>
#include <stddef.h>

#include "ops.h"

#define OPDOC_OPENAPI_VERSION "3.1.0"

/* A row's input as a JSON Schema object: its body's properties, plus (for_tool) one
 * argument per path placeholder, required. malloc'd, or NULL when out of memory. */
char *opdoc_input_schema(const struct op_row *r, bool for_tool);
/* The result of tools/list: {"tools":[...]} for every row with a tool. */
char *opdoc_tools_list(size_t *ret_len);
/* The OpenAPI 3.1 document of the whole table. */
char *opdoc_openapi(size_t *ret_len);

#endif
