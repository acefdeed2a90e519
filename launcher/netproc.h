/* The launcher's side of sbx-net, the unprivileged process that carries "only these
 * websites" traffic (DESIGN.md §9). Synchronous with deadlines: the launcher is one event
 * loop and sbx-net answers at once; a signal never shortens a wait. */
#ifndef SBX_NETPROC_H
#define SBX_NETPROC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "fence/netns_proxy.h"
#include "proto.h"

#define NETPROC_HELLO_TIMEOUT_MS 3000u
#define NETPROC_REPLY_TIMEOUT_MS 2000u
#define NETPROC_DENY_MAX         4u

struct netproc;

struct netproc_opts {
	const char *path;         /* the sbx-net binary */
	uid_t uid;                /* it drops to these when started as root */
	gid_t gid;
	const char *hosts_file;   /* hosts(5) overriding resolution, or NULL */
	const char *const *deny;  /* more destination addresses it refuses (NULL-terminated) */
};

/* fork+exec sbx-net with its channel on fd 3 and wait for its HELLO. 0 or -errno. */
int netproc_start(const struct netproc_opts *o, struct netproc **ret);
pid_t netproc_pid(const struct netproc *np);
/* What it reported about its own confinement. */
void netproc_confinement(const struct netproc *np, uid_t *uid, int *landlock_abi, bool *seccomp);

/* A session for run_id: the allowlist and the sockets made in the jail's namespace (sent,
 * not closed: the caller closes its copies). 0, -EPIPE when sbx-net is gone (restart it),
 * or its -errno. */
int netproc_open(struct netproc *np, const char *run_id, const struct proto_strv *allow,
                 bool allow_private, const struct netns_proxy_fds *fds);

struct net_refusal {
	char kind[8];
	char host[256];
	uint16_t port;
	uint64_t at_ms;
};
/* End run_id's session; its refusals in *ret (malloc'd, free() it), how many were not kept
 * in *ret_dropped. */
int netproc_close(struct netproc *np, const char *run_id, struct net_refusal **ret,
                  size_t *ret_n, uint32_t *ret_dropped);

/* SIGTERM, then SIGKILL after a moment; reaped. NULL is fine. */
void netproc_stop(struct netproc *np);

#endif
