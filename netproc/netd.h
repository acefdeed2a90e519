/* sbx-net: the unprivileged process that carries "only these websites" (DESIGN.md §9).
 * The launcher makes the listening sockets inside each proxy jail's network namespace and
 * passes them here with the sandbox's allowlist (a session per run). Inside the jail a
 * name resolves only when allowed, to an address this process hands out; a connection to
 * such an address (or through the HTTP proxy port) is carried to the real host here, on
 * the host's side, after the destination is checked. It never opens a file or spawns
 * after start-up: its own uid, Landlock without files, a seccomp allow-list. */
#ifndef SBX_NETD_H
#define SBX_NETD_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/queue.h>

#include <event2/event.h>

#include "netallow.h"
#include "netmsg.h"

#define NETD_SESSIONS_MAX      64u   /* one per proxy run: SBX_CONCURRENT_RUNS_MAX */
#define NETD_CONNS_MAX         1024u /* relays at once, all sessions */
#define NETD_SESSION_CONNS_MAX 256u
#define NETD_NAMES_MAX         1024u /* handed-out addresses per session */
#define NETD_BUF_MAX           (64u * 1024u) /* bytes queued per direction */
#define NETD_HEAD_MAX          8192u /* a proxy request's head */
#define NETD_HEAD_TIMEOUT_S    10
#define NETD_CONNECT_TIMEOUT_S 10
#define NETD_IDLE_TIMEOUT_S    300
#define NETD_DEDUP_MS          2000u /* the same refusal again within this is not repeated */
#define NETD_HOSTS_MAX         1024u
/* descriptors: every session's resolver and listeners, two per relay, and slack; raised
 * at start (the default soft limit of 1024 would fail accept() with EMFILE first) */
#define NETD_NOFILE 8192u
_Static_assert(NETD_SESSIONS_MAX * (NETMSG_LISTEN_MAX + 1u) + 2u * NETD_CONNS_MAX + 64u <= NETD_NOFILE,
               "sbx-net's descriptor limit covers its own limits");
#define NETD_DENY_MAX          4u
#define NETD_TTL_S             60u

/* The engine's block (198.18.0.0/15): .1 is the resolver and proxy, .2 up are names. */
#define NETD_BLOCK      0xC6120000u /* 198.18.0.0 */
#define NETD_BLOCK_MASK 0xFFFE0000u /* /15 */
#define NETD_SELF       0xC6120001u /* 198.18.0.1 */
#define NETD_FIRST      0xC6120002u

struct relay;

struct session {
	bool used;
	char id[NETMSG_ID_MAX + 1];
	bool allow_private;
	char allow[NETALLOW_ENTRIES_MAX][NETALLOW_ENTRY_MAX + 1];
	size_t nallow;
	int dns_fd;                /* the jail's resolver socket (DNS_PACKET_MAX datagrams) */
	struct event *dns_ev;
	struct event *resume_ev;   /* listeners paused after an accept() error come back */
	struct evconnlistener *lst[NETMSG_LISTEN_MAX];
	uint16_t lst_port[NETMSG_LISTEN_MAX];
	size_t nlst;
	char (*names)[NETALLOW_NAME_MAX + 1]; /* names[i] is at NETD_FIRST + i */
	size_t nnames;
	struct netmsg_refusal ref[NETMSG_REFUSALS_MAX];
	uint32_t nref, dropped;
	unsigned nconns;
	LIST_HEAD(, relay) relays;
};

struct netd {
	struct event_base *base;
	struct evdns_base *dns; /* the host's resolvers, for names the hosts file lacks */
	struct session sessions[NETD_SESSIONS_MAX];
	unsigned nconns;
	struct {
		char name[NETALLOW_NAME_MAX + 1];
		struct in_addr addr;
	} hosts[NETD_HOSTS_MAX];
	size_t nhosts;
	struct in_addr deny[NETD_DENY_MAX];
	size_t ndeny;
};
extern struct netd D;

/* session.c */
int session_open(const struct netmsg_open *m, const int *fds, size_t nfds, char *why, size_t whysz);
void session_close(const char *id, struct netmsg_refused *ret);
void session_refuse(struct session *s, const char *kind, const char *host, uint16_t port);
bool session_allows(const struct session *s, const char *host, uint16_t port);
/* The name behind a handed-out address, or NULL. */
const char *session_name_at(const struct session *s, uint32_t addr);

/* relay.c */
void relay_accept(struct session *s, int fd, uint16_t port);
void relay_free_all(struct session *s);
/* Is addr a destination the session may reach? (loopback, link-local, our block, the
 * daemon's addresses never; private ranges only when allowed) */
bool relay_dest_ok(const struct session *s, struct in_addr addr);

/* hosts.c: hosts(5), IPv4 lines; names lowered. 0 or -errno. */
int hosts_load(const char *path);
bool hosts_find(const char *name, struct in_addr *ret);

uint64_t netd_now_ms(void);

#endif
