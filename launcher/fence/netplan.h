/* The network fence of one run (DESIGN.md §9), decided from the stored settings and what
 * this machine has: a pure module, so every configuration's mechanisms are unit-tested
 * (tests/unit/test_netplan.c) without a jail.
 *
 *   NET_NONE   no network, no ports: bwrap --unshare-net (lo only) and the seccomp rule
 *              against inet sockets
 *   NET_PORTS  listen / connect / loopback ports: a namespace the run's leader makes,
 *              connected by pasta with its host-loopback defaults off; Landlock port rules
 *              in sbx-jail-init; no UDP (seccomp and pasta --no-udp), no resolver
 *   NET_ANY    network: true: the same, any remote TCP port, UDP and the host's resolver,
 *              never the host's loopback except the loopback ports named
 *   NET_PROXY  proxy.allow: no route at all; a resolver and TCP listeners inside the
 *              namespace, carried by sbx-net to the allowed names only */
#ifndef SBX_NETPLAN_H
#define SBX_NETPLAN_H

#include <stdbool.h>
#include <stddef.h>

#include "launcher.h"

enum net_mode { NET_NONE = 0, NET_PORTS, NET_ANY, NET_PROXY };


#define NET_LANDLOCK_PORTS_ABI 4 /* first ABI with TCP bind/connect rules */
#define NET_PLAN_NOTE_MAX      1024u

enum net_mode net_mode_of(const struct sandbox *s);
const char *net_mode_name(enum net_mode m);

/* Why a run of s cannot get its network fence here (a sentence for a 503), or NULL. */
const char *net_plan_missing(const struct sandbox *s, const struct net_machine *m);

/* pasta's options for a run of s, without the namespace, pid file and user options the
 * runner adds: --config-net with -T none -U none -u none --no-map-gw, one
 * -t 127.0.0.1/P per listen port (else -t none), one -T P per loopback port, and for
 * NET_PORTS --no-udp --no-icmp. Returns 0 or -errno (appends to *ret). */
int net_plan_pasta_args(const struct sandbox *s, struct proto_strv *ret);

/* sbx-jail-init's network options for s (appends): Landlock TCP rules when the kernel has
 * them (--net-off otherwise), --ready-fd FD when ready_fd >= 0. */
int net_plan_init_args(const struct sandbox *s, int landlock_abi, int ready_fd,
                       struct proto_strv *ret);

/* What a run of s is enforced by here, in words, for the sandbox's and each run's note
 * ("" for NET_NONE on a machine with everything). */
void net_plan_note(const struct sandbox *s, const struct net_machine *m, char *buf, size_t n);

/* The fences this machine can build, for GET /caps: "none", "ports", "network", "proxy",
 * each present only when its mechanisms are (appends). */
int net_plan_fences(const struct net_machine *m, struct proto_strv *ret);

#endif
