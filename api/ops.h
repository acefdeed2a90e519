/* The operation table: one row per operation, from which REST routing (route.c), the MCP
 * tools (mcp.c), openapi.json (opdoc.c) and the per-operation start logic (ops.c) all
 * derive, so an operation is described once. */
#ifndef SBX_API_OPS_H
#define SBX_API_OPS_H

#include <event2/http.h>
#include <stdbool.h>
#include <stddef.h>
#include <yajl/yajl_tree.h>

#include "proto.h"

#define OP_PARAMS_MAX 2   /* {placeholders} in one path pattern */
#define OP_WHY_MAX    256 /* the reason a request is refused */

/* One piece of a streamed run's output as it arrives (chan: STREAM_STDOUT | STREAM_STDERR;
 * text ends on a whole UTF-8 character). The door writes it out and then calls
 * stub_stream_ack(stream), which lets the launcher send more. */
typedef void (*op_chunk_fn)(void *arg, uint32_t stream, uint32_t chan, const char *text,
                            size_t len);

/* A REST answer made of raw bytes (OPF_RAW_REPLY rows): which range of what total they are. */
struct op_raw {
	bool used;     /* the success body is raw bytes, not JSON */
	bool partial;  /* a range was asked for: 206 with Content-Range */
	const char *content_type; /* NULL: application/octet-stream */
	uint64_t offset, length, total;
};

struct op_args {
	const char *id;     /* {id} of the route / sandboxId of the tool */
	const char *sub_id; /* {runId} */
	const char *query;  /* the value of the row's query parameter (REST only), or NULL */
	yajl_val body;      /* the JSON body / the tool's arguments (may be NULL) */
	uint32_t entrance;  /* ENTRANCE_REST | ENTRANCE_MCP */
	op_chunk_fn chunk;  /* stream a run's output through this (same arg as done), or NULL.
	                     * The final body still carries the whole output, and every byte
	                     * of it has gone through chunk before done is called. */
	const char *raw;    /* OPF_RAW_BODY rows over REST: the body's bytes (body is NULL) */
	size_t raw_len;
	const char *range;  /* REST: the Range header, or NULL */
	struct op_raw *raw_out; /* OPF_RAW_REPLY rows over REST: filled before done, else NULL */
};

/* Row flags. */
#define OPF_QUERY_ARGS 0x1u /* REST: the arguments are the query parameters named in `query`
                             * (comma-separated), "true"/"false" as booleans, digits as
                             * numbers, the rest strings; MCP passes the same names */
#define OPF_RAW_BODY   0x2u /* REST: the body is raw bytes (application/octet-stream) */
#define OPF_RAW_REPLY  0x4u /* REST: the success body is raw bytes (op_args.raw_out) */
#define OPF_TEXT_REPLY 0x8u /* with OPF_RAW_REPLY: the bytes are text/plain (metrics) */

struct op; /* one operation in flight (ops.c) */

/* How a request becomes a launcher request: 0, or -errno with `why` saying what is wrong
 * (-EINVAL: 400, -E2BIG: 413); on 0 the reply callback finishes the operation. */
typedef int (*op_start_fn)(struct op *o, const struct op_args *a, char *why, size_t whysz);

struct op_row {
	const char *op;                /* operationId in openapi.json */
	enum evhttp_cmd_type method;
	const char *path;              /* under /api/sandbox; "{name}" matches one segment */
	const char *query;             /* a query parameter REST reads, or NULL */
	const char *tool;              /* MCP tool name, or NULL: REST only */
	const char *description;
	const char *body_props;        /* the body's JSON Schema properties; NULL = no body */
	const char *body_required;     /* members of its "required" array, or NULL */
	const char *output;            /* JSON Schema of the success body */
	int status;                    /* the success status */
	op_start_fn start;
	unsigned flags;                /* OPF_* */
};

/* A path placeholder: where it lands in op_args, its MCP argument, and the 404 for an
 * id we would never issue. */
struct op_param {
	const char *name;
	const char *tool_arg;
	const char *not_found;
	size_t field; /* offsetof(struct op_args, ...) */
	bool (*valid)(const char *value); /* false: a value we would never issue (404) */
};

extern const struct op_row op_table[];
extern const size_t op_table_len;

const struct op_row *op_by_tool(const char *name);
/* The placeholders of a row's path, in order; returns how many (at most max), or -EINVAL
 * for a placeholder no op_param knows. */
int op_row_params(const struct op_row *r, const struct op_param **ret, size_t max);
/* Bind a placeholder's value into a. */
void op_param_set(const struct op_param *p, struct op_args *a, const char *value);
const char *op_method_name(enum evhttp_cmd_type m);

/* body: a malloc'd JSON document the callee frees (NULL only when out of memory). */
typedef void (*op_done_fn)(void *arg, int status, char *body, size_t len);

/* Runs the row's operation; done is called exactly once, possibly before op_start returns. */
void op_start(const struct op_row *row, const struct op_args *a, op_done_fn done, void *arg);

#endif
