/* Streaming a run's output to the API: a backlog in front of the stream's window. */
#include "run_stream.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>

#include "dispatch_int.h"
#include "proto_stream.h"

struct chunk {
	STAILQ_ENTRY(chunk) entry;
	uint32_t chan;
	size_t len, off;
	char data[];
};

struct run_outstream {
	LIST_ENTRY(run_outstream) entry;
	struct pending *p; /* its channel generation: a replaced API process ends the stream */
	struct proto_stream_tx tx;
	STAILQ_HEAD(, chunk) backlog;
	size_t backlog_bytes;
	bool over; /* ended, cancelled or dropped: nothing more goes out */
};

static LIST_HEAD(, run_outstream) streams = LIST_HEAD_INITIALIZER(streams);
static unsigned nstreams;

static void backlog_free(struct run_outstream *s)
{
	struct chunk *c;
	while ((c = STAILQ_FIRST(&s->backlog))) {
		STAILQ_REMOVE_HEAD(&s->backlog, entry);
		free(c);
	}
	s->backlog_bytes = 0;
}

/* Stop streaming; the final reply carries the rest. status 0 = the normal end. */
static void stream_stop(struct run_outstream *s, uint32_t status, const char *why)
{
	if (s->over)
		return;
	s->over = true;
	backlog_free(s);
	if (pending_chan(s->p) == s->tx.ch)
		proto_stream_tx_end(&s->tx, status, why);
}

static void pump(struct run_outstream *s)
{
	struct chunk *c;
	if (s->over)
		return;
	if (pending_chan(s->p) != s->tx.ch) { /* the API process went away: nobody reads */
		s->over = true;
		backlog_free(s);
		return;
	}
	while ((c = STAILQ_FIRST(&s->backlog))) {
		ssize_t n = proto_stream_tx_write(&s->tx, c->chan, c->data + c->off, c->len - c->off);
		if (n < 0) {
			s->over = true;
			backlog_free(s);
			return;
		}
		c->off += (size_t)n;
		s->backlog_bytes -= (size_t)n;
		if (c->off < c->len)
			return; /* the window is full: the next ACK goes on */
		STAILQ_REMOVE_HEAD(&s->backlog, entry);
		free(c);
	}
}

int run_stream_open(struct pending *p, uint32_t id, struct run_outstream **ret)
{
	struct run_outstream *s;
	LIST_FOREACH(s, &streams, entry)
		if (s->tx.id == id)
			return -EEXIST;
	if (nstreams >= RUN_STREAMS_MAX)
		return -ENOSPC;
	if (!(s = calloc(1, sizeof(*s))))
		return -ENOMEM;
	s->p = p;
	proto_stream_tx_init(&s->tx, pending_chan(p), id);
	STAILQ_INIT(&s->backlog);
	LIST_INSERT_HEAD(&streams, s, entry);
	nstreams++;
	*ret = s;
	return 0;
}

void run_stream_output(struct run *run, enum run_stream which, const char *data, size_t len,
                       void *arg)
{
	struct run_outstream *s = arg;
	struct chunk *c;
	if (s->over || !len)
		return;
	if (s->backlog_bytes + len > RUN_STREAM_BACKLOG_MAX) {
		stream_stop(s, PERR_PAYLOAD_TOO_LARGE,
		            "the reader fell behind; the rest of the output comes with the result");
		return;
	}
	if (!(c = malloc(sizeof(*c) + len))) {
		stream_stop(s, PERR_INTERNAL, "out of memory; the output comes with the result");
		return;
	}
	c->chan = which == RUN_STDERR ? STREAM_STDERR : STREAM_STDOUT;
	c->len = len;
	c->off = 0;
	memcpy(c->data, data, len);
	STAILQ_INSERT_TAIL(&s->backlog, c, entry);
	s->backlog_bytes += len;
	pump(s);
}

void run_stream_close(struct run_outstream *s)
{
	if (!s)
		return;
	stream_stop(s, 0, "");
	LIST_REMOVE(s, entry);
	nstreams--;
	free(s);
}

static struct run_outstream *find(uint32_t id)
{
	struct run_outstream *s;
	LIST_FOREACH(s, &streams, entry)
		if (s->tx.id == id && pending_chan(s->p) == s->tx.ch)
			return s;
	return NULL;
}

void run_stream_ack(const struct msg_STREAM_ACK *m)
{
	struct run_outstream *s = find(m->stream);
	if (!s || s->over)
		return;
	if (proto_stream_tx_ack(&s->tx, m) < 0) {
		/* an ACK for chunks never sent: the API breaks the protocol; stop this stream */
		stream_stop(s, PERR_INVALID_ARGUMENT, "bad acknowledgement");
		return;
	}
	pump(s);
}

bool run_stream_over(const struct run_outstream *s) { return !s || s->over; }

void run_stream_cancel(uint32_t id)
{
	struct run_outstream *s = find(id);
	if (s && !s->over) {
		s->over = true;
		s->tx.cancelled = true;
		backlog_free(s);
	}
}
