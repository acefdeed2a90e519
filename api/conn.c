/* Every accepted connection gets a record here (through evhttp's bufferevent callback), so
 * the number of open connections, and with it the descriptors they hold, is bounded:
 *
 *  - at most conn_cap in total (API_CONN_MAX, lowered to fit RLIMIT_NOFILE) and
 *    API_CONN_PER_PEER_MAX per peer address. A connection over a cap closes the oldest
 *    connection in that scope that is not serving an authenticated request (an idle or
 *    unauthenticated one); when there is none, the new connection is closed at once. So
 *    idle sockets cannot lock the door: whoever comes last gets in, and a request that
 *    passed the token check is never cut for a newcomer.
 *  - the read/write timeout is API_IDLE_TIMEOUT_S until a call waits on the engine; that
 *    call alone gets API_WAIT_TIMEOUT_S, and the idle timeout again once it is answered.
 *    A timeout restarts with each byte, so a sweep once a second also closes a connection
 *    that has not delivered an authenticated request within API_REQUEST_DEADLINE_S of
 *    its accept or its last answer (a request trickled in byte by byte).
 *  - accept() failing for want of descriptors pauses the listener for API_ACCEPT_PAUSE_MS
 *    (instead of spinning on a level-triggered listener) after closing the oldest idle
 *    connection; such errors are logged at most once per API_LOG_EVERY_S, with a count.
 *
 * libevent 2.1 answers some requests itself (malformed request line or unknown method:
 * 400, headers or body over the limit: 413) with an HTML page and offers no hook. The
 * page is recognised on the connection's output buffer (a response starting at offset 0
 * whose head says text/html, which this daemon never sends) and replaced, status kept,
 * by the JSON error document every other refusal uses.
 *
 * evhttp hands out its connection object only through the bufferevent's callback argument
 * (bufferevent_getcb), set after our bufferevent callback returns: conn_check picks it up
 * from a deferred event in the same loop pass, before the socket is first read. (Only if
 * evhttp ran out of memory setting the connection up would it free the bufferevent before
 * that; libevent 2.1.12 does nothing else in between.) */
#include "conn.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "api.h"
#include "json.h"
#include "log.h"

#define CONN_PEER_MAX  64u   /* an address as evhttp prints it */
#define CONN_HEAD_MAX  2048u /* libevent's error page head is far shorter */
#define CONN_EMFILE_SLACK 16u /* descriptors freed when accept() found none */
#define CONN_ACCEPT_BATCH 32u /* accepts before the caps are applied to them */

struct conn {
	struct conn *prev, *next; /* oldest first */
	struct bufferevent *bev;
	struct evhttp_connection *evcon; /* NULL until conn_check */
	struct evbuffer_cb_entry *out_cb;
	uint64_t since_ms; /* accepted, or last authenticated request answered */
	char peer[CONN_PEER_MAX];
	bool protected_;  /* an authenticated request is being served */
	bool page_check;  /* a response began at offset 0: maybe libevent's error page */
	bool rewriting;
	void (*on_close)(struct evhttp_connection *, void *);
	void *on_close_arg;
};

/* at most one line per API_LOG_EVERY_S; the rest counted */
struct ratelimit {
	time_t last;
	unsigned long suppressed;
};

static struct {
	struct conn *head, *tail;
	unsigned n, cap;
	unsigned unattached;    /* accepted, not yet seen by conn_check */
	bool batch_paused;      /* listener off until conn_check has applied the caps */
	bool emfile_paused;     /* listener off until conn_resume */
	struct event *check, *resume, *sweep;
	struct evconnlistener *listener;
	struct ratelimit accept_log, cap_log;
} C;

/* ---- records ------------------------------------------------------------------------ */

static void conn_unlink(struct conn *k)
{
	if (k->prev)
		k->prev->next = k->next;
	else
		C.head = k->next;
	if (k->next)
		k->next->prev = k->prev;
	else
		C.tail = k->prev;
	C.n--;
}

static struct conn *conn_find(struct evhttp_connection *evcon)
{
	for (struct conn *k = C.head; k; k = k->next)
		if (k->evcon == evcon)
			return k;
	return NULL;
}

/* evhttp is freeing the connection (any reason: EOF, timeout, error, eviction) */
static void conn_closed(struct evhttp_connection *evcon, void *arg)
{
	struct conn *k = arg;
	if (k->on_close)
		k->on_close(evcon, k->on_close_arg);
	evbuffer_remove_cb_entry(bufferevent_get_output(k->bev), k->out_cb);
	conn_unlink(k);
	free(k);
}

static uint64_t mono_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000u + (uint64_t)t.tv_nsec / 1000000u;
}

static bool ratelimit_pass(struct ratelimit *r, unsigned long *ret_suppressed)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	if (r->last && now.tv_sec - r->last < (time_t)API_LOG_EVERY_S) {
		r->suppressed++;
		return false;
	}
	r->last = now.tv_sec;
	*ret_suppressed = r->suppressed;
	r->suppressed = 0;
	return true;
}

/* The oldest connection in scope (peer, or all when NULL) other than `self` that serves
 * no authenticated request. */
static struct conn *conn_oldest_idle(const struct conn *self, const char *peer)
{
	for (struct conn *k = C.head; k; k = k->next)
		if (k != self && k->evcon && !k->protected_ && (!peer || strcmp(k->peer, peer) == 0))
			return k;
	return NULL;
}

static unsigned conn_count_peer(const char *peer)
{
	unsigned n = 0;
	for (struct conn *k = C.head; k; k = k->next)
		if (k->evcon && strcmp(k->peer, peer) == 0)
			n++;
	return n;
}

static void conn_close(struct conn *k, const char *why)
{
	unsigned long sup = 0;
	if (ratelimit_pass(&C.cap_log, &sup))
		log_warnx("closing a connection from %s: %s (%lu more not logged)", k->peer, why, sup);
	evhttp_connection_free(k->evcon); /* conn_closed frees k */
}

/* A new connection: learn its evhttp connection and peer, then hold the caps. */
static void conn_attach(struct conn *k)
{
	void *cbarg = NULL;
	char *addr = NULL;
	uint16_t port = 0;
	struct conn *victim = NULL;
	const char *why = NULL;

	C.unattached--;
	bufferevent_getcb(k->bev, NULL, NULL, NULL, &cbarg);
	k->evcon = cbarg;
	if (!k->evcon || evhttp_connection_get_bufferevent(k->evcon) != k->bev) {
		k->evcon = NULL; /* not evhttp's: leave it uncounted */
		evbuffer_remove_cb_entry(bufferevent_get_output(k->bev), k->out_cb);
		conn_unlink(k);
		free(k);
		return;
	}
	evhttp_connection_get_peer(k->evcon, &addr, &port);
	snprintf(k->peer, sizeof(k->peer), "%s", addr ? addr : "?");
	evhttp_connection_set_closecb(k->evcon, conn_closed, k);
	evhttp_connection_set_timeout(k->evcon, API_IDLE_TIMEOUT_S);
	if (conn_count_peer(k->peer) > API_CONN_PER_PEER_MAX) {
		victim = conn_oldest_idle(k, k->peer);
		why = "per-peer connection limit";
	} else if (C.n > C.cap) {
		victim = conn_oldest_idle(k, NULL);
		why = "connection limit";
	}
	if (why)
		conn_close(victim ? victim : k, why);
}

static void conn_sweep(evutil_socket_t s, short w, void *arg)
{
	uint64_t now = mono_ms();
	struct conn *k, *next;
	for (k = C.head; k; k = next) {
		next = k->next; /* closing k frees only k */
		if (k->evcon && !k->protected_ && now - k->since_ms > API_REQUEST_DEADLINE_S * 1000ull)
			conn_close(k, "no authenticated request in time");
	}
	if (!C.head)
		event_del(C.sweep);
}

static void conn_check(evutil_socket_t s, short w, void *arg)
{
	struct conn *k, *next;
	for (k = C.head; k; k = next) {
		next = k->next; /* victims are attached, hence older than every unattached one */
		if (!k->evcon)
			conn_attach(k);
	}
	if (C.batch_paused) {
		C.batch_paused = false;
		if (!C.emfile_paused)
			evconnlistener_enable(C.listener);
	}
}

/* ---- libevent's error pages ---------------------------------------------------------- */

static const struct conn_page {
	int status;
	const char *reason;
	enum proto_err err;
	const char *msg;
} conn_pages[] = {
	{ 400, "Bad Request", PERR_INVALID_ARGUMENT,
	  "malformed HTTP request (request line, header or size)" },
	{ 413, "Payload Too Large", PERR_PAYLOAD_TOO_LARGE, "the request body is too large" },
	{ 417, "Expectation Failed", PERR_INVALID_ARGUMENT, "unsupported Expect header" },
	{ 501, "Not Implemented", PERR_INVALID_ARGUMENT, "unknown HTTP method" },
};

static void conn_page_rewrite(struct evbuffer *buf, size_t old_len, int status)
{
	static const struct conn_page other = { 0, "Error", PERR_INVALID_ARGUMENT,
		                                "request refused" };
	const struct conn_page *pg = &other;
	size_t dlen = 0;
	char *doc;

	for (size_t i = 0; i < sizeof(conn_pages) / sizeof(conn_pages[0]); i++)
		if (conn_pages[i].status == status)
			pg = &conn_pages[i];
	if (!(doc = json_error_doc(pg->err, pg->msg, &dlen)))
		return; /* out of memory: the page goes out as it is */
	evbuffer_drain(buf, old_len);
	evbuffer_add_printf(buf,
	                    "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\n"
	                    "Cache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\n"
	                    "Connection: close\r\nContent-Length: %zu\r\n\r\n",
	                    status, pg->reason, dlen);
	evbuffer_add(buf, doc, dlen);
	free(doc);
}

static void conn_out_cb(struct evbuffer *buf, const struct evbuffer_cb_info *info, void *arg)
{
	struct conn *k = arg;
	char head[CONN_HEAD_MAX + 1];
	const char *cl;
	struct evbuffer_ptr end, limit;
	size_t len = evbuffer_get_length(buf), head_len;
	unsigned long body_len;
	int status;

	if (k->rewriting || info->n_added == 0)
		return;
	if (info->orig_size == 0)
		k->page_check = true;
	if (!k->page_check)
		return;
	evbuffer_ptr_set(buf, &limit, len < CONN_HEAD_MAX ? len : CONN_HEAD_MAX, EVBUFFER_PTR_SET);
	end = evbuffer_search_range(buf, "\r\n\r\n", 4, NULL, &limit);
	if (end.pos < 0) {
		k->page_check = len < CONN_HEAD_MAX; /* wait for the head's end */
		return;
	}
	head_len = (size_t)end.pos + 4;
	evbuffer_copyout(buf, head, head_len);
	head[head_len] = '\0';
	/* libevent's own pages are errors; it also labels an empty reply of ours (a 202 with
	 * no body) text/html, which must go out untouched */
	if (!strcasestr(head, "\r\nContent-Type: text/html") ||
	    sscanf(head, "HTTP/1.%*d %d", &status) != 1 || status < 400) {
		k->page_check = false; /* one of ours */
		return;
	}
	cl = strcasestr(head, "\r\nContent-Length:");
	body_len = cl ? strtoul(cl + 17, NULL, 10) : 0;
	if (len < head_len + body_len)
		return; /* the page's body comes next */
	k->page_check = false;
	k->rewriting = true;
	conn_page_rewrite(buf, head_len + body_len, status);
	k->rewriting = false;
}

/* ---- accepting ---------------------------------------------------------------------- */

static struct bufferevent *conn_bev(struct event_base *base, void *arg)
{
	struct bufferevent *bev = bufferevent_socket_new(base, -1, 0); /* as evhttp's own */
	struct conn *k;
	if (!bev || !(k = calloc(1, sizeof(*k))))
		return bev; /* NULL: evhttp makes its own, uncounted */
	k->bev = bev;
	k->since_ms = mono_ms();
	if (!(k->out_cb = evbuffer_add_cb(bufferevent_get_output(bev), conn_out_cb, k))) {
		free(k);
		return bev;
	}
	k->prev = C.tail;
	if (C.tail)
		C.tail->next = k;
	else
		C.head = k;
	C.tail = k;
	C.n++;
	event_active(C.check, EV_TIMEOUT, 1);
	/* evconnlistener accepts until EAGAIN before conn_check can run: a backlog of
	 * thousands would open them all (and hit EMFILE) before a cap is applied. Stop the
	 * loop here; conn_check turns the listener on again in this same loop pass. */
	if (++C.unattached >= CONN_ACCEPT_BATCH && !C.batch_paused) {
		C.batch_paused = true;
		evconnlistener_disable(C.listener);
	}
	if (!evtimer_pending(C.sweep, NULL)) {
		const struct timeval every = { 1, 0 };
		evtimer_add(C.sweep, &every);
	}
	return bev;
}

static void conn_resume(evutil_socket_t s, short w, void *arg)
{
	C.emfile_paused = false;
	if (!C.batch_paused)
		evconnlistener_enable(C.listener);
}

static void conn_accept_error(struct evconnlistener *l, void *arg)
{
	int err = EVUTIL_SOCKET_ERROR();
	unsigned long sup = 0;
	const struct timeval pause = { 0, (suseconds_t)API_ACCEPT_PAUSE_MS * 1000 };
	bool out_of_fds = err == EMFILE || err == ENFILE || err == ENOBUFS || err == ENOMEM;

	if (out_of_fds) {
		struct conn *victim;
		/* the budget was smaller than RLIMIT_NOFILE said (descriptors held elsewhere, or
		 * the limit lowered under us): the cap becomes what fit, less some slack, so
		 * from now on a newcomer replaces the oldest idle connection */
		unsigned fit = C.n > CONN_EMFILE_SLACK + 1u ? C.n - CONN_EMFILE_SLACK : 1u;
		if (fit < C.cap)
			C.cap = fit;
		while (C.n > C.cap && (victim = conn_oldest_idle(NULL, NULL)))
			evhttp_connection_free(victim->evcon);
		evconnlistener_disable(l);
		C.emfile_paused = true;
		evtimer_add(C.resume, &pause);
	}
	if (ratelimit_pass(&C.accept_log, &sup))
		log_warnx("accept: %s: %s%u (%lu more not logged)", strerror(err),
		          out_of_fds ? "listener paused, connection cap " : "cap ", C.cap, sup);
}

int conn_raise_nofile(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return -errno;
	if (rl.rlim_cur == rl.rlim_max)
		return 0;
	rl.rlim_cur = rl.rlim_max;
	return setrlimit(RLIMIT_NOFILE, &rl) < 0 ? -errno : 0;
}

int conn_init(struct api *A, struct evconnlistener *l)
{
	struct rlimit rl;
	C.cap = API_CONN_MAX;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
	    rl.rlim_cur < (rlim_t)API_CONN_MAX + API_FD_RESERVE)
		C.cap = rl.rlim_cur > 2u * API_FD_RESERVE ? (unsigned)rl.rlim_cur - API_FD_RESERVE
		                                          : (unsigned)rl.rlim_cur / 2u;
	if (!(C.check = event_new(A->base, -1, 0, conn_check, NULL)) ||
	    !(C.resume = evtimer_new(A->base, conn_resume, NULL)) ||
	    !(C.sweep = event_new(A->base, -1, EV_PERSIST, conn_sweep, NULL)))
		return -ENOMEM;
	C.listener = l;
	evconnlistener_set_error_cb(l, conn_accept_error);
	evhttp_set_bevcb(A->http, conn_bev, NULL);
	evhttp_set_timeout(A->http, API_IDLE_TIMEOUT_S);
	return 0;
}

void conn_fini(void)
{
	while (C.head) {
		struct conn *k = C.head;
		conn_unlink(k);
		free(k);
	}
	if (C.check)
		event_free(C.check);
	if (C.resume)
		event_free(C.resume);
	if (C.sweep)
		event_free(C.sweep);
	C.check = C.resume = C.sweep = NULL;
}

/* ---- serving ------------------------------------------------------------------------ */

static void conn_request_done(struct evhttp_request *req, void *arg)
{
	struct conn *k = conn_find(evhttp_request_get_connection(req));
	if (k) {
		k->protected_ = false;
		k->since_ms = mono_ms();
	}
}

void conn_protect(struct evhttp_request *req)
{
	struct conn *k = conn_find(evhttp_request_get_connection(req));
	if (!k)
		return;
	k->protected_ = true;
	evhttp_request_set_on_complete_cb(req, conn_request_done, NULL);
}

void conn_wait(struct evhttp_request *req, void (*fn)(struct evhttp_connection *, void *),
               void *arg)
{
	struct evhttp_connection *evcon = evhttp_request_get_connection(req);
	struct conn *k = conn_find(evcon);
	evhttp_connection_set_timeout(evcon, API_WAIT_TIMEOUT_S);
	if (!k) { /* uncounted (out of memory at accept): evhttp's own callback */
		evhttp_connection_set_closecb(evcon, fn, arg);
		return;
	}
	k->on_close = fn;
	k->on_close_arg = arg;
}

void conn_unwait(struct evhttp_connection *evcon)
{
	struct conn *k = conn_find(evcon);
	evhttp_connection_set_timeout(evcon, API_IDLE_TIMEOUT_S);
	if (!k) {
		evhttp_connection_set_closecb(evcon, NULL, NULL);
		return;
	}
	k->on_close = NULL;
	k->on_close_arg = NULL;
}
