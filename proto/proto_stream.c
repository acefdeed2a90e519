/* The two ends of a stream: sequence numbers, the window, end and cancel. */
#include "proto_stream.h"

#include <errno.h>
#include <string.h>

#include "proto_chan.h"

void proto_stream_tx_init(struct proto_stream_tx *tx, struct proto_chan *ch, uint32_t id)
{
	*tx = (struct proto_stream_tx){ .ch = ch, .id = id };
}

size_t proto_stream_tx_room(const struct proto_stream_tx *tx)
{
	uint32_t inflight = tx->sent - tx->acked;
	if (tx->ended || tx->cancelled || inflight >= PROTO_STREAM_WINDOW)
		return 0;
	return (size_t)(PROTO_STREAM_WINDOW - inflight) * PROTO_STREAM_CHUNK_MAX;
}

ssize_t proto_stream_tx_write(struct proto_stream_tx *tx, enum proto_stream_chan chan,
                              const void *data, size_t len)
{
	const uint8_t *p = data;
	size_t done = 0;

	if (tx->ended || tx->cancelled || !proto_chan_ready(tx->ch))
		return -EPIPE;
	if (chan > STREAM_CHAN_MAX_)
		return -EINVAL;
	while (done < len && tx->sent - tx->acked < PROTO_STREAM_WINDOW) {
		size_t n = len - done < PROTO_STREAM_CHUNK_MAX ? len - done : PROTO_STREAM_CHUNK_MAX;
		struct msg_STREAM_DATA m = { .stream = tx->id,
			                     .seq = tx->sent,
			                     .chan = chan,
			                     .data = { (uint32_t)n, (uint8_t *)p + done } };
		int r;
		if (tx->sent == UINT32_MAX)
			return done ? (ssize_t)done : -EOVERFLOW;
		if ((r = proto_chan_send(tx->ch, MSG_STREAM_DATA, 0, &m, -1)) < 0)
			return done ? (ssize_t)done : r;
		tx->sent++;
		done += n;
	}
	return (ssize_t)done;
}

int proto_stream_tx_ack(struct proto_stream_tx *tx, const struct msg_STREAM_ACK *m)
{
	if (m->stream != tx->id || m->consumed > tx->sent || m->consumed < tx->acked)
		return -EBADMSG;
	tx->acked = m->consumed;
	return 0;
}

int proto_stream_tx_end(struct proto_stream_tx *tx, uint32_t status, const char *message)
{
	struct msg_STREAM_END m = { .stream = tx->id,
		                    .chunks = tx->sent,
		                    .status = status,
		                    .message = (char *)(message ? message : "") };
	char cut[PROTO_STR_MAX + 1];
	if (tx->ended || tx->cancelled)
		return 0;
	tx->ended = true;
	if (strlen(m.message) > PROTO_STR_MAX) {
		memcpy(cut, m.message, PROTO_STR_MAX);
		cut[PROTO_STR_MAX] = '\0';
		m.message = cut;
	}
	return proto_chan_send(tx->ch, MSG_STREAM_END, 0, &m, -1);
}

static int send_cancel(struct proto_chan *ch, uint32_t id)
{
	struct msg_STREAM_CANCEL m = { .stream = id };
	return proto_chan_send(ch, MSG_STREAM_CANCEL, 0, &m, -1);
}

int proto_stream_tx_cancel(struct proto_stream_tx *tx)
{
	if (tx->ended || tx->cancelled)
		return 0;
	tx->cancelled = true;
	return send_cancel(tx->ch, tx->id);
}

void proto_stream_rx_init(struct proto_stream_rx *rx, struct proto_chan *ch, uint32_t id)
{
	*rx = (struct proto_stream_rx){ .ch = ch, .id = id };
}

int proto_stream_rx_data(struct proto_stream_rx *rx, const struct msg_STREAM_DATA *m)
{
	if (m->stream != rx->id || rx->ended || m->seq != rx->received ||
	    rx->received - rx->acked >= PROTO_STREAM_WINDOW)
		return -EBADMSG;
	rx->received++;
	return 0;
}

int proto_stream_rx_ack(struct proto_stream_rx *rx)
{
	struct msg_STREAM_ACK m = { .stream = rx->id, .consumed = rx->received };
	if (rx->acked == rx->received || rx->cancelled)
		return 0;
	rx->acked = rx->received;
	return proto_chan_send(rx->ch, MSG_STREAM_ACK, 0, &m, -1);
}

int proto_stream_rx_end(struct proto_stream_rx *rx, const struct msg_STREAM_END *m)
{
	if (m->stream != rx->id || rx->ended)
		return -EBADMSG;
	rx->ended = true;
	return m->chunks == rx->received ? 0 : -EBADMSG;
}

int proto_stream_rx_cancel(struct proto_stream_rx *rx)
{
	if (rx->ended || rx->cancelled)
		return 0;
	rx->cancelled = true;
	return send_cancel(rx->ch, rx->id);
}
