/* The table, written out: MCP tools/list and openapi.json. The schemas are string
 * literals (schema.h), so both documents are built by concatenation; only descriptions
 * go through the JSON string encoder. */
#include "opdoc.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include "json.h"
#include "schema.h"

/* a malloc'd copy of the buffer's bytes, NUL-terminated */
static char *buf_dup(struct evbuffer *b, size_t *ret_len)
{
	size_t len = evbuffer_get_length(b);
	char *s = malloc(len + 1);
	if (s) {
		evbuffer_copyout(b, s, len);
		s[len] = '\0';
		if (ret_len)
			*ret_len = len;
	}
	return s;
}

static void put_str(struct evbuffer *b, const char *s)
{
	yajl_gen g = json_gen_new();
	const unsigned char *out;
	size_t len;
	json_gen_str(g, s);
	if (yajl_gen_get_buf(g, &out, &len) == yajl_gen_status_ok)
		evbuffer_add(b, out, len);
	yajl_gen_free(g);
}

static void put_input_schema(struct evbuffer *b, const struct op_row *r, bool for_tool)
{
	const struct op_param *params[OP_PARAMS_MAX];
	int n = for_tool ? op_row_params(r, params, OP_PARAMS_MAX) : 0;
	bool any = false;

	evbuffer_add_printf(b, "{\"type\":\"object\",\"properties\":{");
	for (int i = 0; i < n; i++)
		evbuffer_add_printf(b, "%s\"%s\":" S_STR, i ? "," : "", params[i]->tool_arg);
	if (r->body_props)
		evbuffer_add_printf(b, "%s%s", n > 0 ? "," : "", r->body_props);
	evbuffer_add_printf(b, "}");
	for (int i = 0; i < n; i++, any = true)
		evbuffer_add_printf(b, "%s\"%s\"", i ? "," : ",\"required\":[", params[i]->tool_arg);
	if (r->body_required)
		evbuffer_add_printf(b, "%s%s", any ? "," : ",\"required\":[", r->body_required);
	evbuffer_add_printf(b, "%s}", any || r->body_required ? "]" : "");
}

char *opdoc_input_schema(const struct op_row *r, bool for_tool)
{
	struct evbuffer *b = evbuffer_new();
	char *s;
	if (!b)
		return NULL;
	put_input_schema(b, r, for_tool);
	s = buf_dup(b, NULL);
	evbuffer_free(b);
	return s;
}

char *opdoc_tools_list(size_t *ret_len)
{
	struct evbuffer *b = evbuffer_new();
	bool first = true;
	char *s;
	if (!b)
		return NULL;
	evbuffer_add_printf(b, "{\"tools\":[");
	for (size_t i = 0; i < op_table_len; i++) {
		const struct op_row *r = &op_table[i];
		if (!r->tool)
			continue;
		evbuffer_add_printf(b, "%s{\"name\":\"%s\",\"description\":", first ? "" : ",", r->tool);
		put_str(b, r->description);
		evbuffer_add_printf(b, ",\"inputSchema\":");
		put_input_schema(b, r, true);
		evbuffer_add_printf(b, ",\"outputSchema\":%s}", r->output);
		first = false;
	}
	evbuffer_add_printf(b, "]}");
	s = buf_dup(b, ret_len);
	evbuffer_free(b);
	return s;
}

static void put_operation(struct evbuffer *b, const struct op_row *r)
{
	const struct op_param *params[OP_PARAMS_MAX];
	int n = op_row_params(r, params, OP_PARAMS_MAX);
	const char *up = op_method_name(r->method);
	char method[8];
	size_t k;

	for (k = 0; up[k] && k < sizeof(method) - 1; k++)
		method[k] = (char)tolower((unsigned char)up[k]); /* OpenAPI keys are lower case */
	method[k] = '\0';
	evbuffer_add_printf(b, "\"%s\":{\"operationId\":\"%s\",\"summary\":", method, r->op);
	put_str(b, r->description);
	if (r->tool)
		evbuffer_add_printf(b, ",\"x-mcp-tool\":\"%s\"", r->tool);
	evbuffer_add_printf(b, ",\"parameters\":[");
	for (int i = 0; i < n; i++)
		evbuffer_add_printf(b, "%s{\"name\":\"%s\",\"in\":\"path\",\"required\":true,\"schema\":" S_STR "}",
		                    i ? "," : "", params[i]->name);
	for (const char *q = r->query; q && *q;) {
		size_t len = strcspn(q, ",");
		bool flag = (len == 7 && strncmp(q, "parents", 7) == 0) ||
		            (len == 9 && strncmp(q, "recursive", 9) == 0);
		bool req = (r->flags & OPF_QUERY_ARGS) && len == 4 && strncmp(q, "path", 4) == 0 &&
		           r->body_required;
		evbuffer_add_printf(b, "%s{\"name\":\"%.*s\",\"in\":\"query\",\"required\":%s,\"schema\":%s}",
		                    n > 0 || q != r->query ? "," : "", (int)len, q, req ? "true" : "false",
		                    flag ? S_BOOL : S_STR);
		q += len + (q[len] == ',');
	}
	if ((r->flags & OPF_RAW_REPLY) && !(r->flags & OPF_TEXT_REPLY)) /* Range, for the bytes */
		evbuffer_add_printf(b, ",{\"name\":\"Range\",\"in\":\"header\",\"required\":false,\"schema\":" S_STR "}");
	evbuffer_add_printf(b, "]");
	if (r->flags & OPF_RAW_BODY) {
		evbuffer_add_printf(b, ",\"requestBody\":{\"required\":true,\"content\":{\"application/octet-stream\":"
		                       "{\"schema\":{\"type\":\"string\",\"format\":\"binary\"}}}}");
	} else if (r->body_props && !(r->flags & OPF_QUERY_ARGS)) {
		/* a route that also reads a query parameter can do without its body */
		evbuffer_add_printf(b, ",\"requestBody\":{\"required\":%s,\"content\":{\"application/json\":{\"schema\":",
		                    r->body_required && !r->query ? "true" : "false");
		put_input_schema(b, r, false);
		evbuffer_add_printf(b, "}}}");
	}
	if (r->flags & OPF_TEXT_REPLY)
		evbuffer_add_printf(b, ",\"responses\":{\"%d\":{\"description\":\"Prometheus text format 0.0.4\","
		                       "\"content\":{\"text/plain\":{\"schema\":%s}}},"
		                       "\"default\":{\"description\":\"an error (DESIGN.md 7)\",\"content\":"
		                       "{\"application/json\":{\"schema\":{\"$ref\":\"#/components/schemas/Error\"}}}}}}",
		                    r->status, r->output);
	else if (r->flags & OPF_RAW_REPLY)
		evbuffer_add_printf(b, ",\"responses\":{\"%d\":{\"description\":\"the bytes\",\"content\":"
		                       "{\"application/octet-stream\":{\"schema\":{\"type\":\"string\",\"format\":\"binary\"}}}},"
		                       "\"206\":{\"description\":\"the range asked for (Content-Range)\",\"content\":"
		                       "{\"application/octet-stream\":{\"schema\":{\"type\":\"string\",\"format\":\"binary\"}}}},"
		                       "\"default\":{\"description\":\"an error (DESIGN.md 7)\",\"content\":"
		                       "{\"application/json\":{\"schema\":{\"$ref\":\"#/components/schemas/Error\"}}}}}}",
		                    r->status);
	else
	evbuffer_add_printf(b, ",\"responses\":{\"%d\":{\"description\":\"success\",\"content\":"
	                       "{\"application/json\":{\"schema\":%s}}},"
	                       "\"default\":{\"description\":\"an error (DESIGN.md 7)\",\"content\":"
	                       "{\"application/json\":{\"schema\":{\"$ref\":\"#/components/schemas/Error\"}}}}}}",
	                    r->status, r->output);
}

char *opdoc_openapi(size_t *ret_len)
{
	struct evbuffer *b = evbuffer_new();
	bool first_path = true;
	char *s;
	if (!b)
		return NULL;
	evbuffer_add_printf(b, "{\"openapi\":\"" OPDOC_OPENAPI_VERSION "\",\"info\":{\"title\":\"sbx\","
	                       "\"version\":");
	put_str(b, SBX_BUILD_ID);
	evbuffer_add_printf(b, "},\"servers\":[{\"url\":\"/api/sandbox\"}],"
	                       "\"security\":[{\"bearer\":[]}],\"components\":{\"schemas\":{\"Error\":"
	                       SCHEMA_ERROR "},\"securitySchemes\":{\"bearer\":{\"type\":\"http\","
	                       "\"scheme\":\"bearer\"}}},\"paths\":{");
	/* one entry per path, its methods in table order */
	for (size_t i = 0; i < op_table_len; i++) {
		bool seen = false, first_op = true;
		for (size_t k = 0; k < i && !seen; k++)
			seen = strcmp(op_table[k].path, op_table[i].path) == 0;
		if (seen)
			continue;
		evbuffer_add_printf(b, "%s\"%s\":{", first_path ? "" : ",", op_table[i].path);
		for (size_t k = i; k < op_table_len; k++) {
			if (strcmp(op_table[k].path, op_table[i].path) != 0)
				continue;
			if (!first_op)
				evbuffer_add_printf(b, ",");
			put_operation(b, &op_table[k]);
			first_op = false;
		}
		evbuffer_add_printf(b, "}");
		first_path = false;
	}
	evbuffer_add_printf(b, "}}");
	s = buf_dup(b, ret_len);
	evbuffer_free(b);
	return s;
}
