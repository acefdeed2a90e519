/* Operations shared by the REST and MCP front doors. */
#ifndef SBX_API_OPS_H
#define SBX_API_OPS_H

#include <stdbool.h>
#include <stddef.h>
#include <yajl/yajl_tree.h>

#include "proto.h"

enum op_kind {
	OP_HEALTH,
	OP_CAPS,
	OP_CAPS_RECHECK,
	OP_POLICY_GET,
	OP_POLICY_SET,
	OP_SBX_CREATE,
	OP_SBX_LIST,
	OP_SBX_GET,
	OP_SBX_UPDATE,
	OP_SBX_DELETE,
	OP_RUN,
	OP_RUNS_LIST,
	OP_RUN_GET,
	OP_EXEC,
	OP_PROFILE,
	OP_MOUNTS_LIST,
	OP_MOUNT_ADD,
	OP_MOUNT_DEL,
};

struct op_args {
	enum op_kind kind;
	const char *id;     /* {id} of the route / sandboxId of the tool */
	const char *sub_id; /* {runId}, or the ?target= of DELETE /mounts */
	yajl_val body;      /* the JSON body / the tool's arguments (may be NULL) */
	uint32_t entrance;  /* ENTRANCE_REST | ENTRANCE_MCP */
};

/* body: a malloc'd JSON document the callee frees (NULL only when out of memory). */
typedef void (*op_done_fn)(void *arg, int status, char *body, size_t len);

/* Runs the operation; done is called exactly once, possibly before op_start returns. */
void op_start(const struct op_args *a, op_done_fn done, void *arg);

#endif
