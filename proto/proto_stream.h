/* Streams on the wire: data bigger than one packet, or data that arrives over time (a
 * run's output, later file transfers, app logs, a terminal), as numbered chunks with a
 * window. The sender never has more than PROTO_STREAM_WINDOW chunks unacknowledged, so
 * a slow receiver makes the producer wait instead of growing a queue without bound.
 *
 * These objects are the bookkeeping of one end; the caller maps stream ids to them and
 * routes STREAM_* messages here. All functions return 0 (or a count) or -errno. */
#ifndef SBX_PROTO_STREAM_H
#define SBX_PROTO_STREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "proto.h"

struct proto_chan;

struct proto_stream_tx {
	struct proto_chan *ch;
	uint32_t id;
	uint32_t sent;  /* chunks sent; the next chunk's seq */
	uint32_t acked; /* chunks the receiver said it consumed */
	bool ended, cancelled;
};

struct proto_stream_rx {
	struct proto_chan *ch;
	uint32_t id;
	uint32_t received; /* chunks received in order; the next expected seq */
	uint32_t acked;    /* what we last acknowledged */
	bool ended, cancelled;
};

void proto_stream_tx_init(struct proto_stream_tx *tx, struct proto_chan *ch, uint32_t id);
/* Bytes that can go out now without passing the window (0: wait for an ACK). */
size_t proto_stream_tx_room(const struct proto_stream_tx *tx);
/* Send up to len bytes as chunks of at most PROTO_STREAM_CHUNK_MAX, no more than the
 * window allows. Returns the bytes taken (less than len, even 0, when the window fills),
 * -EPIPE when the stream is over (ended, cancelled, channel gone), or the channel's error. */
ssize_t proto_stream_tx_write(struct proto_stream_tx *tx, enum proto_stream_chan chan,
                              const void *data, size_t len);
/* The receiver's ACK: -EBADMSG when it claims chunks never sent or goes backwards. */
int proto_stream_tx_ack(struct proto_stream_tx *tx, const struct msg_STREAM_ACK *m);
/* Close the stream with a status (0 or a PERR_*) and a message; idempotent. */
int proto_stream_tx_end(struct proto_stream_tx *tx, uint32_t status, const char *message);
/* Either side may cancel: send CANCEL and stop; tx_write then returns -EPIPE. */
int proto_stream_tx_cancel(struct proto_stream_tx *tx);

void proto_stream_rx_init(struct proto_stream_rx *rx, struct proto_chan *ch, uint32_t id);
/* A chunk arrived: 0 when it is the next one in order and inside the window; -EBADMSG for
 * a gap, a repeat, a chunk past the window or after the end. */
int proto_stream_rx_data(struct proto_stream_rx *rx, const struct msg_STREAM_DATA *m);
/* Tell the sender every chunk received so far has been consumed (no-op if nothing new). */
int proto_stream_rx_ack(struct proto_stream_rx *rx);
/* The END arrived: 0 when its chunk count matches what arrived, else -EBADMSG. */
int proto_stream_rx_end(struct proto_stream_rx *rx, const struct msg_STREAM_END *m);
int proto_stream_rx_cancel(struct proto_stream_rx *rx);

#endif
