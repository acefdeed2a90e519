/* A proxy jail's session: its allowlist, the names it was handed, its resolver and
 * listeners, and the refusals it collected. */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <sys/socket.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/listener.h>

#include "dns.h"
#include "netd.h"

uint64_t netd_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

void session_refuse(struct session *s, const char *kind, const char *host, uint16_t port)
{
	uint64_t now = netd_now_ms();
	/* a retrying client repeats itself: one entry per name and port a moment */
	for (uint32_t i = 0; i < s->nref; i++)
		if (strcmp(s->ref[i].kind, kind) == 0 && strcmp(s->ref[i].host, host) == 0 &&
		    s->ref[i].port == port && now - s->ref[i].at_ms < NETD_DEDUP_MS)
			return;
	if (s->nref >= NETMSG_REFUSALS_MAX) {
		s->dropped++;
		return;
	}
	snprintf(s->ref[s->nref].kind, sizeof(s->ref[s->nref].kind), "%s", kind);
	snprintf(s->ref[s->nref].host, sizeof(s->ref[s->nref].host), "%s", host);
	s->ref[s->nref].port = port;
	s->ref[s->nref].at_ms = now;
	s->nref++;
}

bool session_allows(const struct session *s, const char *host, uint16_t port)
{
	for (size_t i = 0; i < s->nallow; i++)
		if (netallow_match(s->allow[i], host, port))
			return true;
	return false;
}

static bool name_allowed(const struct session *s, const char *host)
{
	for (size_t i = 0; i < s->nallow; i++)
		if (netallow_match_name(s->allow[i], host))
			return true;
	return false;
}

const char *session_name_at(const struct session *s, uint32_t addr)
{
	if (addr < NETD_FIRST || addr - NETD_FIRST >= s->nnames)
		return NULL;
	return s->names[addr - NETD_FIRST];
}

/* The address handed out for host, assigning the next one the first time. */
static int name_addr(struct session *s, const char *host, uint32_t *ret)
{
	for (size_t i = 0; i < s->nnames; i++)
		if (strcmp(s->names[i], host) == 0) {
			*ret = NETD_FIRST + (uint32_t)i;
			return 0;
		}
	if (s->nnames >= NETD_NAMES_MAX)
		return -ENOSPC;
	if (!s->names && !(s->names = calloc(NETD_NAMES_MAX, sizeof(*s->names))))
		return -ENOMEM;
	snprintf(s->names[s->nnames], sizeof(s->names[s->nnames]), "%s", host);
	*ret = NETD_FIRST + (uint32_t)s->nnames++;
	return 0;
}

/* The jail's resolver: allowed names get an engine address (A) or nothing (AAAA and the
 * rest); every other name does not exist, and is reported. Malformed packets are dropped. */
static void dns_cb(evutil_socket_t fd, short what, void *arg)
{
	struct session *s = arg;
	/* a few packets per wake-up, so one busy jail cannot hold the loop */
	for (int k = 0; k < 16; k++) {
		uint8_t in[DNS_PACKET_MAX + 1], out[DNS_PACKET_MAX + 32];
		struct sockaddr_storage from;
		socklen_t fl = sizeof(from);
		struct dns_query q;
		uint32_t addr = 0;
		unsigned rcode = DNS_RCODE_OK;
		ssize_t n = recvfrom(fd, in, sizeof(in), 0, (struct sockaddr *)&from, &fl);
		int len;

		if (n < 0)
			return; /* EAGAIN: drained */
		if (dns_parse_query(in, (size_t)n, &q) < 0)
			continue;
		if (q.qclass != 1) {
			rcode = DNS_RCODE_NOTIMP;
		} else if (!netallow_name_ok(q.name, strlen(q.name)) || !name_allowed(s, q.name)) {
			for (char *p = q.name; *p; p++) /* printable only: the name came from the jail */
				if (*p <= ' ' || *p > '~')
					*p = '?';
			session_refuse(s, "lookup", q.name[0] ? q.name : ".", 0);
			rcode = DNS_RCODE_NXDOMAIN;
		} else if (q.qtype == DNS_TYPE_A && name_addr(s, q.name, &addr) < 0) {
			rcode = DNS_RCODE_SERVFAIL;
		}
		if ((len = dns_build_answer(in, &q, rcode, addr, NETD_TTL_S, out, sizeof(out))) > 0)
			sendto(fd, out, (size_t)len, MSG_DONTWAIT, (struct sockaddr *)&from, fl);
	}
}

/* accept() failing (EMFILE and the like) would leave the listener readable and the loop
 * spinning: pause that listener a moment */
static void listeners_resume_cb(evutil_socket_t fd, short what, void *arg)
{
	struct session *s = arg;
	for (size_t i = 0; i < s->nlst; i++)
		if (s->lst[i])
			evconnlistener_enable(s->lst[i]);
}

static void accept_error_cb(struct evconnlistener *l, void *arg)
{
	struct session *s = arg;
	struct timeval t = { 0, 100000 };
	evconnlistener_disable(l);
	if (!s->resume_ev)
		s->resume_ev = evtimer_new(D.base, listeners_resume_cb, s);
	if (s->resume_ev)
		evtimer_add(s->resume_ev, &t);
}

static void accept_cb(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa, int len,
                      void *arg)
{
	struct session *s = arg;
	uint16_t port = 0;
	for (size_t i = 0; i < s->nlst; i++)
		if (s->lst[i] == l)
			port = s->lst_port[i];
	relay_accept(s, fd, port);
}

static void session_free(struct session *s)
{
	relay_free_all(s);
	if (s->dns_ev)
		event_free(s->dns_ev);
	if (s->resume_ev)
		event_free(s->resume_ev);
	if (s->dns_fd > 0)
		close(s->dns_fd);
	for (size_t i = 0; i < s->nlst; i++)
		if (s->lst[i])
			evconnlistener_free(s->lst[i]); /* LEV_OPT_CLOSE_ON_FREE */
	free(s->names);
	memset(s, 0, sizeof(*s));
}

int session_open(const struct netmsg_open *m, const int *fds, size_t nfds, char *why, size_t whysz)
{
	struct session *s = NULL;
	size_t i;

	for (i = 0; i < NETD_SESSIONS_MAX; i++)
		if (D.sessions[i].used && strcmp(D.sessions[i].id, m->run_id) == 0) {
			snprintf(why, whysz, "a session for %s is open already", m->run_id);
			return -EEXIST;
		}
	for (i = 0; i < NETD_SESSIONS_MAX && !s; i++)
		if (!D.sessions[i].used)
			s = &D.sessions[i];
	if (!s) {
		snprintf(why, whysz, "too many proxy sessions (at most %u)", NETD_SESSIONS_MAX);
		return -EBUSY;
	}
	if (nfds != (size_t)m->nports + 1u) {
		snprintf(why, whysz, "%zu sockets for %u ports", nfds, m->nports);
		return -EINVAL;
	}
	memset(s, 0, sizeof(*s));
	s->used = true;
	LIST_INIT(&s->relays);
	snprintf(s->id, sizeof(s->id), "%s", m->run_id);
	s->allow_private = m->allow_private;
	s->nallow = m->nallow;
	for (i = 0; i < m->nallow; i++)
		memcpy(s->allow[i], m->allow[i], sizeof(s->allow[i]));
	evutil_make_socket_nonblocking(fds[0]);
	s->dns_fd = fds[0];
	if (!(s->dns_ev = event_new(D.base, fds[0], EV_READ | EV_PERSIST, dns_cb, s)) ||
	    event_add(s->dns_ev, NULL) < 0) {
		for (i = 1; i < nfds; i++)
			close(fds[i]);
		session_free(s);
		snprintf(why, whysz, "the resolver socket was refused");
		return -EINVAL;
	}
	for (i = 0; i < m->nports; i++) {
		s->lst_port[i] = m->port[i];
		s->lst[i] = evconnlistener_new(D.base, accept_cb, s,
		                               LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC, 0, fds[i + 1]);
		s->nlst = i + 1;
		if (s->lst[i])
			evconnlistener_set_error_cb(s->lst[i], accept_error_cb);
		if (!s->lst[i]) {
			for (size_t j = i; j < m->nports; j++)
				close(fds[j + 1]);
			session_free(s);
			snprintf(why, whysz, "a listener was refused");
			return -EINVAL;
		}
	}
	return 0;
}

void session_close(const char *id, struct netmsg_refused *ret)
{
	memset(ret, 0, sizeof(*ret));
	ret->type = NETMSG_REFUSED;
	for (size_t i = 0; i < NETD_SESSIONS_MAX; i++) {
		struct session *s = &D.sessions[i];
		if (!s->used || strcmp(s->id, id) != 0)
			continue;
		ret->n = s->nref;
		ret->dropped = s->dropped;
		memcpy(ret->r, s->ref, sizeof(s->ref[0]) * s->nref);
		session_free(s);
		return;
	}
}
