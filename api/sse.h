/* Server-sent events on one evhttp request: the answer to a REST run with
 * `Accept: text/event-stream`, and the MCP answer that carries progress notifications
 * before its result. Each event is written as one chunk; `drained` fires when the
 * connection has written everything out, which is when a streamed run's chunks may be
 * acknowledged to the launcher (so a slow client slows the run's output, never our
 * memory). */
#ifndef SBX_API_SSE_H
#define SBX_API_SSE_H

#include <stdbool.h>
#include <stddef.h>

struct evhttp_request;
struct evhttp_connection;
typedef void (*sse_drained_fn)(struct evhttp_connection *conn, void *arg);

/* Does the client accept an event stream (Accept lists text/event-stream)? */
bool sse_wanted(struct evhttp_request *req);
/* Send the status line and the headers of a 200 event stream. */
void sse_start(struct evhttp_request *req);
/* One event: "event: NAME" (omitted when name is NULL) and one data line (JSON has no raw
 * newline). drained(conn, arg), when given, runs once the connection's output is empty. */
void sse_event(struct evhttp_request *req, const char *name, const char *data, size_t len,
               sse_drained_fn drained, void *arg);
/* The last event has been sent: end the chunked reply. */
void sse_end(struct evhttp_request *req);

#endif
