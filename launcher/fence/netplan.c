/* The network fence of one run, as data (netplan.h). */
#include "fence/netplan.h"
#include "util.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

enum net_mode net_mode_of(const struct sandbox *s)
{
	if (s->proxy_allow.n)
		return NET_PROXY;
	if (s->network)
		return NET_ANY;
	if (s->ports_listen.n || s->ports_connect.n || s->ports_loopback.n)
		return NET_PORTS;
	return NET_NONE;
}

const char *net_mode_name(enum net_mode m)
{
	static const char *const names[] = { "none", "ports", "network", "proxy" };
	return (unsigned)m < sizeof(names) / sizeof(names[0]) ? names[m] : "none";
}

const char *net_plan_missing(const struct sandbox *s, const struct net_machine *m)
{
	enum net_mode mode = net_mode_of(s);
	if (mode == NET_NONE)
		return NULL;
	if (!m->jail_init)
		return "sbx-jail-init is not installed next to sbx-launcher, so a jail cannot wait "
		       "for its network fence; set network: false, no ports and no proxy";
	if (mode == NET_PROXY)
		return m->net_proc ? NULL
		                   : "sbx-net is not installed next to sbx-launcher, so proxy.allow "
		                     "cannot be carried; remove proxy.allow";
	if (!m->pasta)
		return "pasta (passt) is not installed or cannot attach here: ports and network: "
		       "true need it to keep the host's loopback out; set network: false and no ports";
	return NULL;
}

#define PUSH(x)                                                                                    \
	do {                                                                                       \
		int r_ = proto_strv_push(ret, (x));                                                \
		if (r_ < 0)                                                                        \
			return r_;                                                                 \
	} while (0)

int net_plan_pasta_args(const struct sandbox *s, struct proto_strv *ret)
{
	enum net_mode mode = net_mode_of(s);
	char spec[32];

	if (mode != NET_PORTS && mode != NET_ANY)
		return -EINVAL;
	/* pasta's defaults forward every host loopback port and map the gateway address to
	 * the host: all of that off, then each port named given back one by one */
	PUSH("--config-net");
	PUSH("--quiet");
	PUSH("--foreground");
	PUSH("--no-map-gw");
	/* a port list replaces pasta's "auto" default, and cannot be mixed with "none" */
	if (!s->ports_loopback.n) {
		PUSH("-T");
		PUSH("none");
	}
	PUSH("-U");
	PUSH("none");
	PUSH("-u");
	PUSH("none");
	if (!s->ports_listen.n) {
		PUSH("-t");
		PUSH("none");
	}
	for (uint32_t i = 0; i < s->ports_listen.n; i++) {
		/* the host side listens on its loopback only: a sandbox's server is not put on
		 * the machine's other addresses */
		snprintf(spec, sizeof(spec), "127.0.0.1/%u", s->ports_listen.v[i]);
		PUSH("-t");
		PUSH(spec);
	}
	for (uint32_t i = 0; i < s->ports_loopback.n; i++) {
		snprintf(spec, sizeof(spec), "%u", s->ports_loopback.v[i]);
		PUSH("-T");
		PUSH(spec);
	}
	if (mode == NET_PORTS) {
		PUSH("--no-udp");
		PUSH("--no-icmp");
	}
	return 0;
}

int net_plan_init_args(const struct sandbox *s, int landlock_abi, int ready_fd,
                       struct proto_strv *ret)
{
	enum net_mode mode = net_mode_of(s);
	char num[16];

	if (ready_fd >= 0 && mode != NET_NONE) {
		snprintf(num, sizeof(num), "%d", ready_fd);
		PUSH("--ready-fd");
		PUSH(num);
	}
	if (landlock_abi < NET_LANDLOCK_PORTS_ABI) {
		PUSH("--net-off");
		return 0;
	}
	/* TCP bind: the listen ports only, in every mode (none at all without them) */
	for (uint32_t i = 0; mode == NET_PORTS || mode == NET_ANY ? i < s->ports_listen.n : 0; i++) {
		snprintf(num, sizeof(num), "%u", s->ports_listen.v[i]);
		PUSH("--net-bind");
		PUSH(num);
	}
	switch (mode) {
	case NET_NONE:
		break; /* no bind, no connect: a second wall behind the seccomp inet rule */
	case NET_PORTS:
		for (uint32_t i = 0; i < s->ports_connect.n; i++) {
			snprintf(num, sizeof(num), "%u", s->ports_connect.v[i]);
			PUSH("--net-connect");
			PUSH(num);
		}
		for (uint32_t i = 0; i < s->ports_loopback.n; i++) {
			snprintf(num, sizeof(num), "%u", s->ports_loopback.v[i]);
			PUSH("--net-connect");
			PUSH(num);
		}
		break;
	case NET_ANY:
	case NET_PROXY:
		/* network: any remote port. proxy: the namespace routes nowhere but to the
		 * engine's own listeners, which decide per name and port */
		PUSH("--net-connect-any");
		break;
	}
	return 0;
}


void net_plan_note(const struct sandbox *s, const struct net_machine *m, char *buf, size_t n)
{
	enum net_mode mode = net_mode_of(s);
	bool ports = m->landlock_abi >= NET_LANDLOCK_PORTS_ABI;
	const char *missing = net_plan_missing(s, m);
	size_t off = 0;

	buf[0] = '\0';
	if (missing) {
		note_append(buf, n, &off, "runs are refused: %s", missing);
		return;
	}
	switch (mode) {
	case NET_NONE:
		break;
	case NET_PORTS:
		if (!ports)
			note_append(buf, n, &off,
			         "Landlock has no TCP port rules on this kernel (ABI %d < %d): any "
			         "port can be bound and any remote TCP port reached; only the host's "
			         "loopback stays out (pasta)",
			         m->landlock_abi, NET_LANDLOCK_PORTS_ABI);
		if (ports && (s->ports_connect.n || s->ports_loopback.n))
			note_append(buf, n, &off,
			         "connect and loopback ports are TCP port rules (Landlock): a port "
			         "named reaches every remote host on it, not one host");
		if (s->ports_connect.n)
			note_append(buf, n, &off, "no resolver and no UDP: connect to addresses, or use "
			                       "proxy.allow for names");
		break;
	case NET_ANY:
		if (!ports && s->ports_listen.n)
			note_append(buf, n, &off,
			         "Landlock has no TCP port rules on this kernel (ABI %d): any port can "
			         "be bound, not only the listen ports",
			         m->landlock_abi);
		note_append(buf, n, &off,
		         "network: the host's loopback is out except the loopback ports named, "
		         "but the host's other addresses are remote to the jail: a host service "
		         "bound to 0.0.0.0 is reachable through them");
		break;
	case NET_PROXY:
		note_append(buf, n, &off,
		         "proxy.allow: only the names listed resolve and only their ports connect "
		         "(TCP, through sbx-net); refusals the engine sees are in each run's "
		         "networkRefused, a connection to a port with no listener is refused by "
		         "the kernel and not reported");
		break;
	}
	if (mode != NET_NONE && m->landlock_abi < 1)
		note_append(buf, n, &off, "no Landlock on this kernel: the filesystem second wall is off");
}

int net_plan_fences(const struct net_machine *m, struct proto_strv *ret)
{
	PUSH("none");
	if (m->jail_init && m->pasta) {
		PUSH(m->landlock_abi >= NET_LANDLOCK_PORTS_ABI ? "ports" : "ports-unrestricted");
		PUSH("network");
	}
	if (m->jail_init && m->net_proc)
		PUSH("proxy");
	return 0;
}
