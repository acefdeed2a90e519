/* One run's network fence, launcher side (DESIGN.md §9; the plan is fence/netplan.h).
 *
 * For every mode but NET_NONE the run's leader, once it has dropped to the jail uid, makes
 * a user and network namespace of its own (bwrap then runs inside it without
 * --unshare-net: bwrap's own namespaces are not dumpable and pasta could not enter them),
 * brings lo up and, for proxy.allow, creates the engine's listening sockets in it. It
 * tells the launcher over a socketpair (passing those sockets), then execs bwrap. The
 * launcher connects the namespace (pasta, or the sockets handed to sbx-net) and only
 * then writes the byte sbx-jail-init waits for before it runs the program; any failure
 * closes that pipe instead, and the jail ends without running anything. */
#ifndef SBX_NETRUN_H
#define SBX_NETRUN_H

#include <stdbool.h>
#include <sys/types.h>

#include "fence/netplan.h"
#include "launcher.h"

#define NETRUN_NS_TIMEOUT_MS    3000u /* the leader's namespace, after the launcher released it */
#define NETRUN_PASTA_TIMEOUT_MS 5000u /* pasta's namespace set-up */
#define NETRUN_WHY_MAX          256u
#define SBX_NET_UID             199999u /* sbx-net's uid when root: below the jail range */

struct netrun {
	enum net_mode mode;
	int sync_parent, sync_child; /* SOCK_SEQPACKET: the leader says its namespace is made */
	int ready_r, ready_w;        /* sbx-jail-init --ready-fd */
	pid_t leader;
	pid_t pasta;                 /* > 0 until reaped */
	int pasta_status;
	int fifo_fd;                 /* pasta --pid: its pid arrives once the namespace is set */
	struct event *fifo_ev, *timer_ev;
	char fifo_path[256];
	bool proxy_open;
	char run_id[PROTO_ID_MAX + 1];
	char why[NETRUN_WHY_MAX];    /* why the fence failed, for the run's note; "" */
	struct launcher *L;
};

/* Before the fork: the descriptors of mode (NET_NONE: nothing). 0 or -errno. */
int netrun_prepare(struct netrun *n, struct launcher *L, enum net_mode mode, const char *run_id);

/* In the leader (forked, dropped to the jail uid, NO_NEW_PRIVS): make the namespaces, tell
 * the launcher on sync_fd and close it. _exits 126 with a message on failure. */
void netrun_child(int sync_fd, enum net_mode mode, const struct proto_strv *allow);

/* In the launcher once the leader runs: connect its namespace. Asynchronous for pasta
 * (the ready byte goes out from the event loop). On failure n->why says why and the jail
 * is told to give up. */
void netrun_attach(struct netrun *n, const struct sandbox *s, pid_t leader);

/* SIGCHLD: true when pid was this run's pasta (reaped here). */
bool netrun_reap(struct netrun *n, pid_t pid, int status);

/* The run is over: stop pasta, close the proxy session and collect its refusals into res
 * (res->refused; dropped ones noted). Safe on a netrun never prepared (zeroed). */
void netrun_release(struct netrun *n, struct run_result *res);

/* SIGCHLD: reap the pasta processes of runs already gone. */
void netrun_reap_pending(void);

/* The launcher's sbx-net, started at the first proxy run; stopped at exit. */
void netrun_shutdown(struct launcher *L);

#endif
