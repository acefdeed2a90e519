/* A message channel over one SOCK_SEQPACKET socket, driven by libevent. */

#include "proto_chan.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <unistd.h>

#ifndef SBX_BUILD_ID
#define SBX_BUILD_ID "unknown"
#endif

struct pkt {
	TAILQ_ENTRY(pkt) entry;
	int fd;
	size_t len;
	uint8_t data[];
};
TAILQ_HEAD(pkt_queue, pkt);

struct proto_chan {
	int sock;
	unsigned self_role, peer_role;
	bool ready, dead, in_dispatch, free_pending;
	uint32_t next_id;
	struct event *rev, *wev;
	struct pkt_queue queue;
	size_t queued;
	const struct proto_dispatch *table;
	size_t ntable;
	proto_chan_event_fn on_event;
	void *arg;
	uint8_t rbuf[PROTO_MSG_MAX + 1];
	/* decoded messages are at most this big; checked against every msgdef at runtime */
	union {
		uint64_t align;
		uint8_t bytes[1024];
	} msg;
};

static void chan_die(struct proto_chan *ch, enum proto_chan_event ev, const char *why)
{
	if (ch->dead)
		return;
	ch->dead = true;
	event_del(ch->rev);
	event_del(ch->wev);
	if (ch->on_event)
		ch->on_event(ch, ev, why, ch->arg);
}

static void chan_flush(struct proto_chan *ch)
{
	struct pkt *p;
	while ((p = TAILQ_FIRST(&ch->queue))) {
		int r = proto_send_packet(ch->sock, p->data, p->len, p->fd);
		if (r == -EAGAIN || r == -EWOULDBLOCK || r == -ENOBUFS) {
			event_add(ch->wev, NULL);
			return;
		}
		TAILQ_REMOVE(&ch->queue, p, entry);
		ch->queued--;
		if (p->fd >= 0)
			close(p->fd);
		free(p);
		if (r < 0) {
			chan_die(ch, PCHAN_CLOSED, "write failed");
			return;
		}
	}
	event_del(ch->wev);
}

static void chan_write_cb(evutil_socket_t fd, short what, void *arg) { chan_flush(arg); }

static const struct proto_dispatch *chan_lookup(struct proto_chan *ch, uint32_t type)
{
	for (size_t i = 0; i < ch->ntable; i++)
		if (ch->table[i].type == type)
			return &ch->table[i];
	return NULL;
}

static void chan_reject(struct proto_chan *ch, const struct proto_hdr *h, const char *why)
{
	char detail[160];
	snprintf(detail, sizeof(detail), "%s %s (id %u)", why, proto_type_name(h->type), h->id);
	/* requests get an ERROR so the sender is not left waiting */
	if (h->id && proto_type_is_request(h->type))
		proto_chan_send_error(ch, h->id, PERR_INVALID_ARGUMENT, detail);
	if (ch->on_event)
		ch->on_event(ch, PCHAN_REJECTED, detail, ch->arg);
}

static void chan_handle(struct proto_chan *ch, size_t len, int fd)
{
	struct proto_hdr h;
	const struct proto_msgdef *d;
	const struct proto_dispatch *row;
	int r;

	if (len < PROTO_HDR_LEN) {
		if (fd >= 0)
			close(fd);
		chan_die(ch, PCHAN_FRAMING, "short packet");
		return;
	}
	memcpy(&h, ch->rbuf, sizeof(h));
	if (h.len != len || (h.flags & ~PROTO_FLAG_FD)) {
		if (fd >= 0)
			close(fd);
		chan_die(ch, PCHAN_FRAMING, "bad header");
		return;
	}
	d = proto_msgdef(h.type);
	if (!ch->ready) {
		struct msg_HELLO *hello = (void *)ch->msg.bytes;
		if (h.type != MSG_HELLO ||
		    proto_decode(ch->rbuf, len, fd >= 0, NULL, hello, sizeof(ch->msg)) < 0) {
			if (fd >= 0)
				close(fd);
			chan_die(ch, PCHAN_FRAMING, "first message is not a valid HELLO");
			return;
		}
		if (hello->version != PROTO_VERSION || hello->role != ch->peer_role) {
			char why[128];
			snprintf(why, sizeof(why), "HELLO mismatch: version %u role %u (want %u/%u)",
			         hello->version, hello->role, PROTO_VERSION, ch->peer_role);
			proto_msg_clear(MSG_HELLO, hello);
			chan_die(ch, PCHAN_FRAMING, why);
			return;
		}
		proto_msg_clear(MSG_HELLO, hello);
		ch->ready = true;
		if (ch->on_event)
			ch->on_event(ch, PCHAN_READY, "hello", ch->arg);
		return;
	}
	row = chan_lookup(ch, h.type);
	if (!d || !row || !(row->senders & ch->peer_role) || !(d->senders & ch->peer_role)) {
		if (fd >= 0)
			close(fd);
		chan_reject(ch, &h, d ? "unexpected message" : "unknown message type");
		return;
	}
	if ((r = proto_decode(ch->rbuf, len, fd >= 0, NULL, ch->msg.bytes, sizeof(ch->msg))) < 0) {
		if (fd >= 0)
			close(fd);
		chan_reject(ch, &h, "malformed");
		return;
	}
	row->handler(ch, &h, ch->msg.bytes, fd, ch->arg);
	proto_msg_clear(h.type, ch->msg.bytes);
}

static void chan_read_cb(evutil_socket_t sock, short what, void *arg)
{
	struct proto_chan *ch = arg;

	ch->in_dispatch = true;
	/* bounded per wake-up so one busy peer cannot starve the loop */
	for (int i = 0; i < 64 && !ch->dead; i++) {
		int fd = -1;
		int n = proto_recv_packet(ch->sock, ch->rbuf, sizeof(ch->rbuf), &fd);
		if (n == -EAGAIN || n == -EWOULDBLOCK)
			break;
		if (n == 0) {
			chan_die(ch, PCHAN_CLOSED, "peer closed");
			break;
		}
		if (n == -EMSGSIZE || n == -EBADMSG) {
			chan_die(ch, PCHAN_FRAMING, n == -EMSGSIZE ? "packet too large" : "bad ancillary data");
			break;
		}
		if (n < 0) {
			chan_die(ch, PCHAN_CLOSED, "read failed");
			break;
		}
		chan_handle(ch, (size_t)n, fd);
		if (ch->free_pending)
			break;
	}
	ch->in_dispatch = false;
	if (ch->free_pending) {
		ch->free_pending = false;
		proto_chan_free(ch);
	}
}

struct proto_chan *proto_chan_new(struct event_base *base, int sock, unsigned self_role,
                                  unsigned peer_role, const struct proto_dispatch *table,
                                  size_t ntable, proto_chan_event_fn on_event, void *arg)
{
	struct proto_chan *ch = calloc(1, sizeof(*ch));
	struct msg_HELLO hello = { .version = PROTO_VERSION, .role = self_role };
	int fl;

	if (!ch)
		return NULL;
	/* every message must fit the decode buffer */
	for (uint32_t t = 0; t < MSG_TYPE_MAX_; t++) {
		const struct proto_msgdef *d = proto_msgdef(t);
		if (d && d->size > sizeof(ch->msg)) {
			free(ch);
			return NULL;
		}
	}
	ch->sock = sock;
	ch->self_role = self_role;
	ch->peer_role = peer_role;
	ch->table = table;
	ch->ntable = ntable;
	ch->on_event = on_event;
	ch->arg = arg;
	ch->next_id = 1;
	TAILQ_INIT(&ch->queue);
	fl = fcntl(sock, F_GETFL);
	if (fl < 0 || fcntl(sock, F_SETFL, fl | O_NONBLOCK) < 0 ||
	    fcntl(sock, F_SETFD, FD_CLOEXEC) < 0) {
		free(ch);
		return NULL;
	}
	ch->rev = event_new(base, sock, EV_READ | EV_PERSIST, chan_read_cb, ch);
	ch->wev = event_new(base, sock, EV_WRITE | EV_PERSIST, chan_write_cb, ch);
	if (!ch->rev || !ch->wev || event_add(ch->rev, NULL) < 0) {
		if (ch->rev)
			event_free(ch->rev);
		if (ch->wev)
			event_free(ch->wev);
		free(ch);
		return NULL;
	}
	hello.build_id = (char *)SBX_BUILD_ID;
	if (proto_chan_send(ch, MSG_HELLO, 0, &hello, -1) < 0) {
		ch->sock = -1;
		proto_chan_free(ch);
		return NULL;
	}
	return ch;
}

void proto_chan_free(struct proto_chan *ch)
{
	struct pkt *p;
	if (!ch)
		return;
	if (ch->in_dispatch) { /* freed from inside a handler: finish after the read loop */
		ch->free_pending = true;
		ch->dead = true;
		event_del(ch->rev);
		event_del(ch->wev);
		return;
	}
	while ((p = TAILQ_FIRST(&ch->queue))) {
		TAILQ_REMOVE(&ch->queue, p, entry);
		if (p->fd >= 0)
			close(p->fd);
		free(p);
	}
	event_free(ch->rev);
	event_free(ch->wev);
	if (ch->sock >= 0)
		close(ch->sock);
	free(ch);
}

/* The reply to request id could not be encoded (err): the requester gets an ERROR in its
 * place, so every request has exactly one answer, and the owner hears of it. */
static void chan_replace_reply(struct proto_chan *ch, uint32_t type, uint32_t id, int err)
{
	char detail[160];
	snprintf(detail, sizeof(detail), "%s (id %u) could not be encoded: %s", proto_type_name(type),
	         id, strerror(-err));
	proto_chan_send_error(ch, id, PERR_INTERNAL, detail);
	if (ch->on_event)
		ch->on_event(ch, PCHAN_REPLACED, detail, ch->arg);
}

int proto_chan_send(struct proto_chan *ch, uint32_t type, uint32_t id, const void *msg, int fd)
{
	uint8_t buf[PROTO_MSG_MAX];
	struct pkt *p;
	int n;

	if (!ch || ch->dead) {
		if (fd >= 0)
			close(fd);
		return -EPIPE;
	}
	if (ch->queued >= PROTO_CHAN_QUEUE_MAX) {
		if (fd >= 0)
			close(fd);
		return -ENOBUFS;
	}
	n = proto_encode(type, id, fd >= 0, msg, buf, sizeof(buf));
	if (n < 0) {
		if (fd >= 0)
			close(fd);
		if (proto_type_is_reply(type) && id)
			chan_replace_reply(ch, type, id, n);
		return n;
	}
	if (!(p = malloc(sizeof(*p) + (size_t)n))) {
		if (fd >= 0)
			close(fd);
		return -ENOMEM;
	}
	p->fd = fd;
	p->len = (size_t)n;
	memcpy(p->data, buf, (size_t)n);
	TAILQ_INSERT_TAIL(&ch->queue, p, entry);
	ch->queued++;
	if (ch->queued == 1)
		chan_flush(ch);
	return 0;
}

int proto_chan_send_error(struct proto_chan *ch, uint32_t id, enum proto_err code,
                          const char *message)
{
	struct msg_ERROR e = { .code = code, .message = (char *)message };
	char cut[PROTO_STR_MAX + 1];
	if (message && strlen(message) > PROTO_STR_MAX) {
		memcpy(cut, message, PROTO_STR_MAX);
		cut[PROTO_STR_MAX] = '\0';
		e.message = cut;
	}
	return proto_chan_send(ch, MSG_ERROR, id, &e, -1);
}

uint32_t proto_chan_next_id(struct proto_chan *ch)
{
	uint32_t id = ch->next_id++;
	if (ch->next_id == 0)
		ch->next_id = 1;
	return id;
}

bool proto_chan_ready(const struct proto_chan *ch) { return ch && ch->ready && !ch->dead; }
int proto_chan_fd(const struct proto_chan *ch) { return ch ? ch->sock : -1; }
void proto_chan_set_arg(struct proto_chan *ch, void *arg) { ch->arg = arg; }
