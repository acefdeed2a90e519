/* One carried connection: from the jail's side (a), through the destination check, to the
 * real host (b). A connection to a handed-out address is carried at once; one to the
 * engine's own address speaks the HTTP proxy protocol first (CONNECT, or an absolute-form
 * request), for programs that honour HTTP(S)_PROXY. Bytes are spliced with bounded
 * buffers both ways; half-closes are passed on. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/dns.h>

#include "netd.h"

enum relay_state { RL_HEAD, RL_RESOLVING, RL_CONNECTING, RL_SPLICE, RL_CLOSING };

struct relay {
	LIST_ENTRY(relay) entry;
	struct session *s;
	enum relay_state state;
	struct bufferevent *a, *b;
	bool a_eof, b_eof;
	bool proxy_connect;          /* CONNECT: answer 200 once connected */
	struct evbuffer *head;       /* an absolute-form request, rewritten, sent first */
	struct evdns_request *dnsreq;
	char host[NETALLOW_NAME_MAX + 1];
	uint16_t port;
};

static void relay_free(struct relay *r)
{
	if (r->dnsreq) {
		struct evdns_request *q = r->dnsreq;
		r->dnsreq = NULL;
		evdns_cancel_request(D.dns, q); /* its callback sees DNS_ERR_CANCEL, not r */
	}
	if (r->a)
		bufferevent_free(r->a);
	if (r->b)
		bufferevent_free(r->b);
	if (r->head)
		evbuffer_free(r->head);
	LIST_REMOVE(r, entry);
	r->s->nconns--;
	D.nconns--;
	free(r);
}

void relay_free_all(struct session *s)
{
	while (!LIST_EMPTY(&s->relays))
		relay_free(LIST_FIRST(&s->relays));
}

bool relay_dest_ok(const struct session *s, struct in_addr addr)
{
	uint32_t a = ntohl(addr.s_addr);
	static const struct {
		uint32_t net, mask;
		bool private_range;
	} ranges[] = {
		{ 0x00000000u, 0xFF000000u, false }, /* 0/8: "this network" */
		{ 0x7F000000u, 0xFF000000u, false }, /* 127/8: the host's loopback */
		{ 0xA9FE0000u, 0xFFFF0000u, false }, /* 169.254/16: link-local, cloud metadata */
		{ 0xE0000000u, 0xE0000000u, false }, /* 224/3: multicast, reserved, broadcast */
		{ NETD_BLOCK, NETD_BLOCK_MASK, false }, /* our own block */
		{ 0x0A000000u, 0xFF000000u, true },  /* 10/8 */
		{ 0xAC100000u, 0xFFF00000u, true },  /* 172.16/12 */
		{ 0xC0A80000u, 0xFFFF0000u, true },  /* 192.168/16 */
		{ 0x64400000u, 0xFFC00000u, true },  /* 100.64/10: carrier-grade NAT */
	};
	for (size_t i = 0; i < sizeof(ranges) / sizeof(ranges[0]); i++)
		if ((a & ranges[i].mask) == ranges[i].net && !(ranges[i].private_range && s->allow_private))
			return false;
	for (size_t i = 0; i < D.ndeny; i++)
		if (D.deny[i].s_addr == addr.s_addr)
			return false;
	return true;
}

/* ---- splice --------------------------------------------------------------------------- */

static struct bufferevent *other(struct relay *r, struct bufferevent *bev)
{
	return bev == r->a ? r->b : r->a;
}

static void maybe_done(struct relay *r)
{
	if (r->a_eof && r->b_eof && evbuffer_get_length(bufferevent_get_output(r->a)) == 0 &&
	    evbuffer_get_length(bufferevent_get_output(r->b)) == 0)
		relay_free(r);
}

static void splice_read_cb(struct bufferevent *src, void *arg)
{
	struct relay *r = arg;
	struct bufferevent *dst = other(r, src);
	if (!dst)
		return;
	evbuffer_add_buffer(bufferevent_get_output(dst), bufferevent_get_input(src));
	/* back-pressure: stop reading until the other side has drained half */
	if (evbuffer_get_length(bufferevent_get_output(dst)) >= NETD_BUF_MAX)
		bufferevent_disable(src, EV_READ);
}

static void splice_write_cb(struct bufferevent *dst, void *arg)
{
	struct relay *r = arg;
	struct bufferevent *src = other(r, dst);
	bool src_eof = dst == r->a ? r->b_eof : r->a_eof;
	if (evbuffer_get_length(bufferevent_get_output(dst)) == 0 && src_eof) {
		shutdown(bufferevent_getfd(dst), SHUT_WR); /* the half-close, passed on */
		maybe_done(r);
		return;
	}
	if (src && !src_eof)
		bufferevent_enable(src, EV_READ);
}

static void splice_event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct relay *r = arg;
	struct bufferevent *dst = other(r, bev);
	if (what & (BEV_EVENT_ERROR | BEV_EVENT_TIMEOUT)) {
		relay_free(r);
		return;
	}
	if (what & BEV_EVENT_EOF) {
		if (bev == r->a)
			r->a_eof = true;
		else
			r->b_eof = true;
		if (dst && evbuffer_get_length(bufferevent_get_input(bev)))
			splice_read_cb(bev, r);
		if (dst && evbuffer_get_length(bufferevent_get_output(dst)) == 0)
			shutdown(bufferevent_getfd(dst), SHUT_WR);
		maybe_done(r);
	}
}

static void splice_start(struct relay *r)
{
	struct timeval idle = { NETD_IDLE_TIMEOUT_S, 0 };
	r->state = RL_SPLICE;
	bufferevent_setcb(r->a, splice_read_cb, splice_write_cb, splice_event_cb, r);
	bufferevent_setcb(r->b, splice_read_cb, splice_write_cb, splice_event_cb, r);
	bufferevent_setwatermark(r->a, EV_WRITE, NETD_BUF_MAX / 2, 0);
	bufferevent_setwatermark(r->b, EV_WRITE, NETD_BUF_MAX / 2, 0);
	bufferevent_set_timeouts(r->a, &idle, NULL);
	bufferevent_set_timeouts(r->b, &idle, NULL);
	bufferevent_enable(r->a, EV_READ | EV_WRITE);
	bufferevent_enable(r->b, EV_READ | EV_WRITE);
	if (evbuffer_get_length(bufferevent_get_input(r->a)))
		splice_read_cb(r->a, r);
}

/* ---- refusing ------------------------------------------------------------------------- */

static void closing_write_cb(struct bufferevent *bev, void *arg)
{
	if (evbuffer_get_length(bufferevent_get_output(bev)) == 0)
		relay_free(arg);
}

static void closing_event_cb(struct bufferevent *bev, short what, void *arg) { relay_free(arg); }

/* An HTTP answer on the jail's side (proxy requests), then close. */
static void answer_and_close(struct relay *r, const char *status, const char *text)
{
	struct timeval t = { NETD_HEAD_TIMEOUT_S, 0 };
	r->state = RL_CLOSING;
	if (r->b) {
		bufferevent_free(r->b);
		r->b = NULL;
	}
	evbuffer_add_printf(bufferevent_get_output(r->a),
	                    "HTTP/1.1 %s\r\nContent-Type: text/plain\r\nConnection: close\r\n"
	                    "Content-Length: %zu\r\n\r\n%s",
	                    status, strlen(text), text);
	bufferevent_disable(r->a, EV_READ);
	bufferevent_setcb(r->a, NULL, closing_write_cb, closing_event_cb, r);
	bufferevent_set_timeouts(r->a, NULL, &t);
	bufferevent_enable(r->a, EV_WRITE);
}

static void refuse(struct relay *r, const char *why)
{
	char text[NETALLOW_NAME_MAX + 160];
	session_refuse(r->s, "connect", r->host, r->port);
	if (r->proxy_connect || r->head) {
		snprintf(text, sizeof(text), "sbx: %s:%u %s\n", r->host, r->port, why);
		answer_and_close(r, "403 Forbidden", text);
		return;
	}
	relay_free(r); /* a captured connection just closes */
}

/* ---- connecting ----------------------------------------------------------------------- */

static void connect_event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct relay *r = arg;
	if (!(what & BEV_EVENT_CONNECTED)) {
		if (r->proxy_connect || r->head)
			answer_and_close(r, "502 Bad Gateway", "sbx: the host could not be reached\n");
		else
			relay_free(r);
		return;
	}
	if (r->proxy_connect)
		evbuffer_add_printf(bufferevent_get_output(r->a), "HTTP/1.1 200 Connection established\r\n\r\n");
	if (r->head) {
		bufferevent_write_buffer(r->b, r->head);
		evbuffer_free(r->head);
		r->head = NULL;
	}
	splice_start(r);
}

static void connect_to(struct relay *r, struct in_addr addr)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr = addr, .sin_port = htons(r->port) };
	struct timeval t = { NETD_CONNECT_TIMEOUT_S, 0 };
	if (!relay_dest_ok(r->s, addr)) {
		refuse(r, "resolves to an address this sandbox may not reach");
		return;
	}
	r->state = RL_CONNECTING;
	if (!(r->b = bufferevent_socket_new(D.base, -1, BEV_OPT_CLOSE_ON_FREE))) {
		relay_free(r);
		return;
	}
	bufferevent_setcb(r->b, NULL, NULL, connect_event_cb, r);
	bufferevent_set_timeouts(r->b, NULL, &t); /* the connect counts as a write */
	bufferevent_disable(r->a, EV_READ);       /* nothing of the jail's moves until then */
	if (bufferevent_socket_connect(r->b, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		if (r->proxy_connect || r->head)
			answer_and_close(r, "502 Bad Gateway", "sbx: the host could not be reached\n");
		else
			relay_free(r);
	}
}

static void resolved_cb(int result, char type, int count, int ttl, void *addrs, void *arg)
{
	struct relay *r = arg;
	if (result == DNS_ERR_CANCEL)
		return; /* r is gone */
	r->dnsreq = NULL;
	if (result != DNS_ERR_NONE || type != DNS_IPv4_A || count < 1) {
		if (r->proxy_connect || r->head)
			answer_and_close(r, "502 Bad Gateway", "sbx: the name did not resolve\n");
		else
			relay_free(r);
		return;
	}
	/* the first address that passes: a name that resolves to loopback is refused */
	for (int i = 0; i < count; i++) {
		struct in_addr a = ((struct in_addr *)addrs)[i];
		if (relay_dest_ok(r->s, a)) {
			connect_to(r, a);
			return;
		}
	}
	connect_to(r, ((struct in_addr *)addrs)[0]); /* refused there, and reported */
}

/* host:port is allowed: find its address (hosts file first) and connect. */
static void carry(struct relay *r)
{
	struct in_addr a;
	if (!session_allows(r->s, r->host, r->port)) {
		refuse(r, "is not in this sandbox's proxy.allow");
		return;
	}
	if (hosts_find(r->host, &a)) {
		connect_to(r, a);
		return;
	}
	r->state = RL_RESOLVING;
	bufferevent_disable(r->a, EV_READ);
	if (!D.dns || !(r->dnsreq = evdns_base_resolve_ipv4(D.dns, r->host, DNS_QUERY_NO_SEARCH,
	                                                      resolved_cb, r))) {
		if (r->proxy_connect || r->head)
			answer_and_close(r, "502 Bad Gateway", "sbx: no resolver\n");
		else
			relay_free(r);
	}
}

/* ---- the proxy protocol --------------------------------------------------------------- */

/* "host:port" or "host" (default port) into r; false when malformed. */
static bool parse_authority(struct relay *r, const char *s, size_t n, uint16_t dflt)
{
	const char *colon = memchr(s, ':', n);
	size_t hl = colon ? (size_t)(colon - s) : n;
	long port = dflt;
	if (hl == 0 || hl > NETALLOW_NAME_MAX)
		return false;
	if (colon) {
		char num[8];
		size_t pl = n - hl - 1;
		char *end;
		if (pl == 0 || pl > 5)
			return false;
		memcpy(num, colon + 1, pl);
		num[pl] = '\0';
		port = strtol(num, &end, 10);
		if (*end || port < 1 || port > 65535)
			return false;
	}
	for (size_t i = 0; i < hl; i++) {
		char c = s[i];
		if (c <= ' ' || c > '~' || c == '/' || c == '@')
			return false;
		r->host[i] = (char)(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
	}
	r->host[hl] = '\0';
	r->port = (uint16_t)port;
	return true;
}

static void head_read_cb(struct bufferevent *bev, void *arg)
{
	struct relay *r = arg;
	struct evbuffer *in = bufferevent_get_input(bev);
	struct evbuffer_ptr end = evbuffer_search(in, "\r\n\r\n", 4, NULL);
	char *line, *sp1, *sp2, *target;
	size_t len;

	if (end.pos < 0) {
		if (evbuffer_get_length(in) > NETD_HEAD_MAX)
			answer_and_close(r, "431 Request Header Fields Too Large", "sbx: request head too large\n");
		return;
	}
	if ((size_t)end.pos + 4 > NETD_HEAD_MAX) {
		answer_and_close(r, "431 Request Header Fields Too Large", "sbx: request head too large\n");
		return;
	}
	line = evbuffer_readln(in, &len, EVBUFFER_EOL_CRLF_STRICT);
	if (!line || !(sp1 = strchr(line, ' ')) || !(sp2 = strchr(sp1 + 1, ' ')) ||
	    strncmp(sp2 + 1, "HTTP/1.", 7) != 0) {
		free(line);
		answer_and_close(r, "400 Bad Request", "sbx: not an HTTP proxy request\n");
		return;
	}
	*sp1 = *sp2 = '\0';
	target = sp1 + 1;
	if (strcmp(line, "CONNECT") == 0) {
		r->proxy_connect = true;
		if (!parse_authority(r, target, strlen(target), 443)) {
			free(line);
			answer_and_close(r, "400 Bad Request", "sbx: CONNECT needs host:port\n");
			return;
		}
		/* the rest of the head is the proxy's: drop it */
		evbuffer_drain(in, (size_t)end.pos + 4 - len - 2);
	} else if (strncasecmp(target, "http://", 7) == 0) {
		const char *auth = target + 7, *path = strchr(auth, '/');
		size_t al = path ? (size_t)(path - auth) : strlen(auth);
		if (!parse_authority(r, auth, al, 80) || !(r->head = evbuffer_new())) {
			free(line);
			answer_and_close(r, "400 Bad Request", "sbx: a proxy request needs http://host[:port]/path\n");
			return;
		}
		/* origin-form for the server; the rest of the head and any body follow as sent */
		evbuffer_add_printf(r->head, "%s %s %s\r\n", line, path ? path : "/", sp2 + 1);
		evbuffer_remove_buffer(in, r->head, (size_t)end.pos + 4 - len - 2);
	} else {
		free(line);
		answer_and_close(r, "400 Bad Request", "sbx: only CONNECT and http:// requests are proxied\n");
		return;
	}
	free(line);
	carry(r);
}

static void head_event_cb(struct bufferevent *bev, short what, void *arg) { relay_free(arg); }

/* ---- accepting ------------------------------------------------------------------------ */

void relay_accept(struct session *s, int fd, uint16_t port)
{
	struct sockaddr_in local;
	socklen_t sl = sizeof(local);
	struct relay *r;
	uint32_t dst;

	if (D.nconns >= NETD_CONNS_MAX || s->nconns >= NETD_SESSION_CONNS_MAX ||
	    getsockname(fd, (struct sockaddr *)&local, &sl) < 0 || local.sin_family != AF_INET ||
	    !(r = calloc(1, sizeof(*r)))) {
		close(fd);
		return;
	}
	evutil_make_socket_nonblocking(fd);
	r->s = s;
	r->port = port;
	LIST_INSERT_HEAD(&s->relays, r, entry);
	s->nconns++;
	D.nconns++;
	if (!(r->a = bufferevent_socket_new(D.base, fd, BEV_OPT_CLOSE_ON_FREE))) {
		close(fd);
		relay_free(r);
		return;
	}
	bufferevent_setwatermark(r->a, EV_READ, 0, NETD_BUF_MAX);
	dst = ntohl(local.sin_addr.s_addr);
	if (dst == NETD_SELF) { /* the proxy: a request head first */
		struct timeval t = { NETD_HEAD_TIMEOUT_S, 0 };
		snprintf(r->host, sizeof(r->host), "%s", "(proxy)");
		r->state = RL_HEAD;
		bufferevent_setcb(r->a, head_read_cb, NULL, head_event_cb, r);
		bufferevent_set_timeouts(r->a, &t, NULL);
		bufferevent_enable(r->a, EV_READ);
		return;
	}
	const char *name = session_name_at(s, dst);
	if (!name) { /* not an address the resolver gave out: 127.0.0.1, a literal, ... */
		inet_ntop(AF_INET, &local.sin_addr, r->host, sizeof(r->host));
		session_refuse(s, "connect", r->host, port);
		relay_free(r);
		return;
	}
	snprintf(r->host, sizeof(r->host), "%s", name);
	carry(r);
}
