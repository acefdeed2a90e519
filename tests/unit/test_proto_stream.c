/* The stream primitive between two real channels on a socketpair: order, the window,
 * acknowledgement, end with a count, cancel, and chunks the protocol must refuse. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/event.h>

#include "proto_chan.h"
#include "proto_stream.h"

struct side {
	struct proto_stream_tx tx;
	struct proto_stream_rx rx;
	uint8_t *got;
	size_t got_len;
	unsigned chunks, bad, ends, cancels;
	int end_rc;
	uint32_t end_status;
	bool auto_ack;
};

static void on_data(struct proto_chan *ch, const struct proto_hdr *h, void *msg, int fd, void *arg)
{
	struct side *s = arg;
	struct msg_STREAM_DATA *m = msg;
	if (proto_stream_rx_data(&s->rx, m) < 0) {
		s->bad++;
		return;
	}
	s->got = realloc(s->got, s->got_len + m->data.len);
	memcpy(s->got + s->got_len, m->data.p, m->data.len);
	s->got_len += m->data.len;
	s->chunks++;
	if (s->auto_ack)
		proto_stream_rx_ack(&s->rx);
}

static void on_ack(struct proto_chan *ch, const struct proto_hdr *h, void *msg, int fd, void *arg)
{
	struct side *s = arg;
	if (proto_stream_tx_ack(&s->tx, msg) < 0)
		s->bad++;
}

static void on_end(struct proto_chan *ch, const struct proto_hdr *h, void *msg, int fd, void *arg)
{
	struct side *s = arg;
	s->ends++;
	s->end_rc = proto_stream_rx_end(&s->rx, msg);
	s->end_status = ((struct msg_STREAM_END *)msg)->status;
}

static void on_cancel(struct proto_chan *ch, const struct proto_hdr *h, void *msg, int fd,
                      void *arg)
{
	struct side *s = arg;
	s->cancels++;
	s->tx.cancelled = true;
}

static const struct proto_dispatch table[] = {
	{ MSG_STREAM_DATA, ROLE_LAUNCHER | ROLE_API, on_data },
	{ MSG_STREAM_ACK, ROLE_LAUNCHER | ROLE_API, on_ack },
	{ MSG_STREAM_END, ROLE_LAUNCHER | ROLE_API, on_end },
	{ MSG_STREAM_CANCEL, ROLE_LAUNCHER | ROLE_API, on_cancel },
};

struct pair {
	struct event_base *base;
	struct proto_chan *l, *a; /* launcher end, API end */
	struct side ls, as;
};

static void spin(struct pair *p)
{
	for (int i = 0; i < 20; i++)
		event_base_loop(p->base, EVLOOP_NONBLOCK);
}

static void pair_open(struct pair *p)
{
	int sp[2];
	memset(p, 0, sizeof(*p));
	p->base = event_base_new();
	cr_assert_eq(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp), 0);
	p->l = proto_chan_new(p->base, sp[0], ROLE_LAUNCHER, ROLE_API, table, 4, NULL, &p->ls);
	p->a = proto_chan_new(p->base, sp[1], ROLE_API, ROLE_LAUNCHER, table, 4, NULL, &p->as);
	cr_assert(p->l && p->a);
	spin(p);
	cr_assert(proto_chan_ready(p->l) && proto_chan_ready(p->a));
	proto_stream_tx_init(&p->ls.tx, p->l, 7);
	proto_stream_rx_init(&p->as.rx, p->a, 7);
	/* the API end's ACKs reach the launcher end's tx */
}

static void pair_close(struct pair *p)
{
	proto_chan_free(p->l);
	proto_chan_free(p->a);
	event_base_free(p->base);
	free(p->ls.got);
	free(p->as.got);
}

/* ACKs travel API -> launcher: the launcher side's handler updates ls.tx */
Test(proto_stream, bytes_arrive_in_order_and_whole_with_acks)
{
	struct pair p;
	size_t total = 1u << 20, off = 0; /* 32 windows' worth */
	uint8_t *src = malloc(total);
	pair_open(&p);
	for (size_t i = 0; i < total; i++)
		src[i] = (uint8_t)(i * 131 + (i >> 9)); /* NULs included */
	p.as.auto_ack = true;
	for (int rounds = 0; off < total && rounds < 10000; rounds++) {
		ssize_t n = proto_stream_tx_write(&p.ls.tx, STREAM_STDOUT, src + off, total - off);
		cr_assert_geq(n, 0);
		off += (size_t)n;
		spin(&p);
	}
	cr_assert_eq(off, total);
	cr_assert_eq(proto_stream_tx_end(&p.ls.tx, 0, "done"), 0);
	spin(&p);
	cr_assert_eq(p.as.bad, 0);
	cr_assert_eq(p.ls.bad, 0);
	cr_assert_eq(p.as.ends, 1);
	cr_assert_eq(p.as.end_rc, 0);
	cr_assert_eq(p.as.got_len, total);
	cr_assert_eq(memcmp(p.as.got, src, total), 0);
	cr_assert_eq(p.as.chunks, total / PROTO_STREAM_CHUNK_MAX);
	free(src);
	pair_close(&p);
}

Test(proto_stream, window_stops_a_fast_producer_until_acked)
{
	struct pair p;
	size_t big = (size_t)PROTO_STREAM_WINDOW * PROTO_STREAM_CHUNK_MAX * 3;
	uint8_t *src = calloc(1, big);
	pair_open(&p);
	/* at the window: exactly WINDOW chunks go out, then nothing */
	cr_assert_eq(proto_stream_tx_room(&p.ls.tx), (size_t)PROTO_STREAM_WINDOW * PROTO_STREAM_CHUNK_MAX);
	cr_assert_eq(proto_stream_tx_write(&p.ls.tx, STREAM_STDERR, src, big),
	             (ssize_t)PROTO_STREAM_WINDOW * PROTO_STREAM_CHUNK_MAX);
	cr_assert_eq(proto_stream_tx_room(&p.ls.tx), 0);
	cr_assert_eq(proto_stream_tx_write(&p.ls.tx, STREAM_STDERR, src, 1), 0);
	spin(&p);
	cr_assert_eq(p.as.chunks, PROTO_STREAM_WINDOW);
	/* one ACK opens the whole window again */
	cr_assert_eq(proto_stream_rx_ack(&p.as.rx), 0);
	spin(&p);
	cr_assert_eq(p.ls.tx.acked, PROTO_STREAM_WINDOW);
	cr_assert_eq(proto_stream_tx_room(&p.ls.tx), (size_t)PROTO_STREAM_WINDOW * PROTO_STREAM_CHUNK_MAX);
	free(src);
	pair_close(&p);
}

Test(proto_stream, receiver_refuses_gaps_repeats_and_chunks_past_the_window)
{
	struct proto_stream_rx rx;
	uint8_t b = 'x';
	struct msg_STREAM_DATA m = { .stream = 3, .seq = 0, .chan = STREAM_DATA, .data = { 1, &b } };
	proto_stream_rx_init(&rx, NULL, 3);
	cr_assert_eq(proto_stream_rx_data(&rx, &m), 0);
	cr_assert_eq(proto_stream_rx_data(&rx, &m), -EBADMSG); /* a repeat */
	m.seq = 2;
	cr_assert_eq(proto_stream_rx_data(&rx, &m), -EBADMSG); /* a gap */
	m.stream = 4;
	m.seq = 1;
	cr_assert_eq(proto_stream_rx_data(&rx, &m), -EBADMSG); /* another stream */
	m.stream = 3;
	for (uint32_t i = 1; i < PROTO_STREAM_WINDOW; i++, m.seq++)
		cr_assert_eq(proto_stream_rx_data(&rx, &m), 0);
	/* the window is full and nothing was acknowledged: one more is a protocol violation */
	cr_assert_eq(proto_stream_rx_data(&rx, &m), -EBADMSG);
	/* an END that counts a chunk we never saw */
	struct msg_STREAM_END e = { .stream = 3, .chunks = PROTO_STREAM_WINDOW + 1 };
	cr_assert_eq(proto_stream_rx_end(&rx, &e), -EBADMSG);
	cr_assert_eq(proto_stream_rx_data(&rx, &m), -EBADMSG); /* after the end */
}

Test(proto_stream, sender_refuses_acks_it_cannot_have_earned)
{
	struct proto_stream_tx tx;
	struct msg_STREAM_ACK a = { .stream = 1, .consumed = 1 };
	proto_stream_tx_init(&tx, NULL, 1);
	cr_assert_eq(proto_stream_tx_ack(&tx, &a), -EBADMSG); /* nothing was sent */
	tx.sent = 5;
	a.consumed = 3;
	cr_assert_eq(proto_stream_tx_ack(&tx, &a), 0);
	a.consumed = 2;
	cr_assert_eq(proto_stream_tx_ack(&tx, &a), -EBADMSG); /* backwards */
	a.stream = 2;
	a.consumed = 4;
	cr_assert_eq(proto_stream_tx_ack(&tx, &a), -EBADMSG); /* another stream */
	/* a dead channel: writing is over */
	cr_assert_eq(proto_stream_tx_write(&tx, STREAM_STDOUT, "a", 1), -EPIPE);
}

Test(proto_stream, cancel_from_the_receiver_stops_the_sender)
{
	struct pair p;
	pair_open(&p);
	cr_assert_eq(proto_stream_tx_write(&p.ls.tx, STREAM_STDOUT, "hello", 5), 5);
	spin(&p);
	cr_assert_eq(proto_stream_rx_cancel(&p.as.rx), 0);
	spin(&p);
	cr_assert_eq(p.ls.cancels, 1);
	cr_assert_eq(proto_stream_tx_write(&p.ls.tx, STREAM_STDOUT, "more", 4), -EPIPE);
	cr_assert_eq(proto_stream_tx_end(&p.ls.tx, 0, NULL), 0); /* nothing more is sent */
	spin(&p);
	cr_assert_eq(p.as.ends, 0);
	pair_close(&p);
}

Test(proto_stream, bytes_field_limit_at_and_past)
{
	uint8_t buf[PROTO_MSG_MAX];
	static uint8_t data[PROTO_STREAM_CHUNK_MAX + 1];
	struct msg_STREAM_DATA m = { .stream = 1, .data = { PROTO_STREAM_CHUNK_MAX, data } }, out;
	int n = proto_encode(MSG_STREAM_DATA, 0, false, &m, buf, sizeof(buf));
	cr_assert_gt(n, 0);
	cr_assert_eq(proto_decode(buf, (size_t)n, false, NULL, &out, sizeof(out)), 0);
	cr_assert_eq(out.data.len, PROTO_STREAM_CHUNK_MAX);
	proto_msg_clear(MSG_STREAM_DATA, &out);
	m.data.len = PROTO_STREAM_CHUNK_MAX + 1;
	cr_assert_eq(proto_encode(MSG_STREAM_DATA, 0, false, &m, buf, sizeof(buf)), -EINVAL);
	/* a hand-made packet that claims more bytes than the limit is refused on decode */
	m.data.len = 4;
	n = proto_encode(MSG_STREAM_DATA, 0, false, &m, buf, sizeof(buf));
	uint32_t claim = PROTO_STREAM_CHUNK_MAX + 1;
	memcpy(buf + PROTO_HDR_LEN + 4 + 4 + 1, &claim, 4);
	cr_assert_eq(proto_decode(buf, (size_t)n, false, NULL, &out, sizeof(out)), -EBADMSG);
	/* and one whose length runs past the packet */
	claim = 5;
	memcpy(buf + PROTO_HDR_LEN + 4 + 4 + 1, &claim, 4);
	cr_assert_eq(proto_decode(buf, (size_t)n, false, NULL, &out, sizeof(out)), -EBADMSG);
}
