/* Server-sent events over evhttp's chunked replies. */
#include "sse.h"

#include <string.h>
#include <strings.h>

#include <event2/buffer.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

bool sse_wanted(struct evhttp_request *req)
{
	const char *a = evhttp_find_header(evhttp_request_get_input_headers(req), "Accept");
	return a && strcasestr(a, "text/event-stream") != NULL;
}

void sse_start(struct evhttp_request *req)
{
	struct evkeyvalq *h = evhttp_request_get_output_headers(req);
	evhttp_add_header(h, "Content-Type", "text/event-stream");
	evhttp_add_header(h, "Cache-Control", "no-store");
	evhttp_add_header(h, "X-Content-Type-Options", "nosniff");
	evhttp_send_reply_start(req, 200, "OK");
}

void sse_event(struct evhttp_request *req, const char *name, const char *data, size_t len,
               sse_drained_fn drained, void *arg)
{
	struct evbuffer *b = evbuffer_new();
	if (!b)
		return;
	if (name)
		evbuffer_add_printf(b, "event: %s\n", name);
	evbuffer_add(b, "data: ", 6);
	evbuffer_add(b, data, len);
	evbuffer_add(b, "\n\n", 2);
	/* evhttp keeps one write-done callback per connection and runs it when the output
	 * buffer is empty, which covers every earlier chunk too */
	evhttp_send_reply_chunk_with_cb(req, b, drained, arg);
	evbuffer_free(b);
}

void sse_end(struct evhttp_request *req) { evhttp_send_reply_end(req); }
