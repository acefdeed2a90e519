/* A libevent-driven channel over one SOCK_SEQPACKET socket: HELLO exchange, a bounded
 * write queue, per-receiver dispatch tables, fd passing. */
#ifndef SBX_PROTO_CHAN_H
#define SBX_PROTO_CHAN_H

#include <event2/event.h>

#include "proto.h"

#define PROTO_CHAN_QUEUE_MAX 4096u /* packets waiting to be written */

struct proto_chan;

/* A handler gets the decoded message (freed after it returns: steal what you keep by
 * setting the pointer to NULL) and the attached fd (-1 if none; the handler owns it and
 * must close it or keep it). */
typedef void (*proto_handler_fn)(struct proto_chan *ch, const struct proto_hdr *hdr, void *msg,
                                 int fd, void *arg);

/* One row of a receiver's dispatch table: the message, who may send it, and the handler.
 * Lengths and the fd policy come from the message's own definition (proto_msgs.h). */
struct proto_dispatch {
	uint32_t type;
	unsigned senders; /* ROLE_* bitmask */
	proto_handler_fn handler;
};

enum proto_chan_event {
	PCHAN_REJECTED, /* a message was refused (not in the table, malformed); chan stays open */
	PCHAN_FRAMING,  /* framing violation; the chan is now dead, free it */
	PCHAN_CLOSED,   /* peer closed or I/O error; the chan is now dead, free it */
	PCHAN_READY,    /* the peer's HELLO arrived and matched */
	PCHAN_REPLACED, /* a reply could not be encoded: an ERROR went out in its place */
};

/* Called for the events above; `detail` is a short human reason. */
typedef void (*proto_chan_event_fn)(struct proto_chan *ch, enum proto_chan_event ev,
                                    const char *detail, void *arg);

/* Takes ownership of sock (made non-blocking). self_role is sent in our HELLO; peer_role
 * is what the peer must announce and is checked against each message's senders. */
struct proto_chan *proto_chan_new(struct event_base *base, int sock, unsigned self_role,
                                  unsigned peer_role, const struct proto_dispatch *table,
                                  size_t ntable, proto_chan_event_fn on_event, void *arg);
void proto_chan_free(struct proto_chan *ch); /* NULL-safe; closes the socket and queued fds */

/* Encode and queue one message; takes ownership of fd (closed after sending or on
 * error). Returns 0, -EINVAL (bad message), -EMSGSIZE (too large), -ENOBUFS (queue full),
 * -EPIPE (chan dead). A reply (odd type, not ERROR) that cannot be encoded is answered
 * with an ERROR of the same id instead, so the requester is never left waiting; the
 * encode error is still returned and PCHAN_REPLACED reported. */
int proto_chan_send(struct proto_chan *ch, uint32_t type, uint32_t id, const void *msg, int fd);
/* Send an ERROR reply. */
int proto_chan_send_error(struct proto_chan *ch, uint32_t id, enum proto_err code,
                          const char *message);
/* A fresh request id (never 0). */
uint32_t proto_chan_next_id(struct proto_chan *ch);
bool proto_chan_ready(const struct proto_chan *ch);
int proto_chan_fd(const struct proto_chan *ch);
void proto_chan_set_arg(struct proto_chan *ch, void *arg);

#endif
