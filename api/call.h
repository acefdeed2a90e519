/* One request waiting for its operation, whichever door (REST or MCP) it came in by, and
 * the one in-flight cap both doors count against. */
#ifndef SBX_API_CALL_H
#define SBX_API_CALL_H

#include <event2/http.h>
#include <stddef.h>

#include "ops.h"

#define API_INFLIGHT_MAX 1024u /* operations waiting for an answer, REST and MCP together */

struct inflight {
	unsigned n, max;
};
extern struct inflight api_inflight;

/* 0, or -EBUSY at the limit (nothing taken). */
int inflight_take(struct inflight *f);
void inflight_put(struct inflight *f);

/* How a door turns an operation's result into its reply. body is NULL only when out of
 * memory; rpc_id is the JSON-RPC id (MCP) or NULL (REST). */
typedef void (*call_answer_fn)(struct evhttp_request *req, const char *rpc_id, int status,
                               const char *body, size_t len);

/* Run row's operation for req and answer through `answer`, unless the client went away
 * first. At the in-flight cap it answers at once with 503 engine_unavailable, the same
 * document whichever door asked. */
void call_start(struct evhttp_request *req, const struct op_row *row, const struct op_args *a,
                call_answer_fn answer, const char *rpc_id);

#endif
