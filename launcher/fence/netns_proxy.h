/* "Only these websites" inside a jail's own network namespace (DESIGN.md §9): run by the
 * process that made the namespace (it holds CAP_NET_ADMIN there), before the jail's
 * program exists. The namespace gets no route anywhere; lo carries the engine's address
 * block, so every address the engine's resolver hands out is local, and the sockets made
 * here (a DNS socket and one TCP listener per allowed port) are passed to sbx-net, which
 * answers and carries them from outside. Nothing of the engine runs inside the jail. */
#ifndef SBX_NETNS_PROXY_H
#define SBX_NETNS_PROXY_H

#include <stddef.h>
#include <stdint.h>

#include "proto.h"

#define NETNS_PROXY_ADDR     "198.18.0.1" /* resolver and HTTP(S)_PROXY host */
#define NETNS_PROXY_NET      "198.18.0.0" /* handed-out addresses: 198.18.0.2 .. */
#define NETNS_PROXY_PREFIX   15           /* 198.18.0.0/15, reserved for benchmarks (RFC 2544) */
#define NETNS_PROXY_PORT     3128         /* the HTTP proxy's port */
#define NETNS_PROXY_DNS_PORT 53
#define NETNS_PROXY_ALLOW_MAX 64u /* proxy.allow entries (SBX_PROXY_ALLOW_MAX) */
#define NETNS_PROXY_LISTEN_MAX (NETNS_PROXY_ALLOW_MAX + 1u) /* a port per entry + the proxy */

struct netns_proxy_fds {
	int dns;                                 /* UDP, NETNS_PROXY_ADDR:53 */
	size_t n;
	int fd[NETNS_PROXY_LISTEN_MAX];          /* TCP listeners on 0.0.0.0:port[i] */
	uint16_t port[NETNS_PROXY_LISTEN_MAX];
};

/* The port of an allow entry "name:port", or -EINVAL. */
int netns_proxy_entry_port(const char *entry);

/* In the namespace: lo up with NETNS_PROXY_ADDR/NETNS_PROXY_PREFIX, the DNS socket and a
 * listener per distinct port of allow plus NETNS_PROXY_PORT (O_CLOEXEC | O_NONBLOCK).
 * 0 or -errno (nothing left open on failure). */
int netns_proxy_setup(const struct proto_strv *allow, struct netns_proxy_fds *ret);
void netns_proxy_fds_close(struct netns_proxy_fds *f);

/* The jail's /etc/resolv.conf text. Returns its length or -ENOSPC. */
int netns_proxy_resolv_conf(char *buf, size_t n);

#endif
