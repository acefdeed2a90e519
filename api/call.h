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

/* How a door words a streamed answer as server-sent events: one event per output chunk,
 * then one for the end. Each returns a malloc'd data line (NULL: out of memory) and the
 * event's name (NULL: the default "message"). progress counts the bytes so far. */
struct call_door {
	call_answer_fn answer; /* the plain answer, and a streamed one that never started */
	char *(*chunk_event)(const char *rpc_id, const char *token, uint64_t progress,
	                     uint32_t chan, const char *text, size_t len, const char **ret_name,
	                     size_t *ret_len);
	char *(*final_event)(const char *rpc_id, int status, const char *body, size_t len,
	                     const char **ret_name, size_t *ret_len);
};

/* Run row's operation for req and answer through the door, unless the client went away
 * first. stream_token non-NULL asks for a streamed answer (REST: "" when the client
 * accepts text/event-stream; MCP: the progressToken as JSON); operations that do not
 * stream answer plainly anyway. At the in-flight cap it answers at once with 503
 * engine_unavailable, the same document whichever door asked. */
void call_start(struct evhttp_request *req, const struct op_row *row, const struct op_args *a,
                const struct call_door *door, const char *rpc_id, const char *stream_token);

#endif
