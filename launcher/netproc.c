/* See netproc.h. */
#include "netproc.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cleanup.h"
#include "netmsg.h"
#include "util.h"

struct netproc {
	pid_t pid;
	int sock;
	struct netmsg_hello hello;
};

pid_t netproc_pid(const struct netproc *np) { return np ? np->pid : -1; }

void netproc_confinement(const struct netproc *np, uid_t *uid, int *landlock_abi, bool *seccomp)
{
	*uid = np->hello.uid;
	*landlock_abi = np->hello.landlock_abi;
	*seccomp = np->hello.seccomp != 0;
}

/* One reply of type want within ms; a signal does not shorten the wait. */
static int wait_reply(struct netproc *np, uint32_t want, union netmsg *m, unsigned ms)
{
	int r;
	if ((r = wait_readable(np->sock, ms)) < 0)
		return r;
	if ((r = netmsg_recv(np->sock, m, NULL, NULL)) < 0)
		return r;
	return m->type == want ? 0 : -EPROTO;
}

int netproc_start(const struct netproc_opts *o, struct netproc **ret)
{
	_cleanup_free_ struct netproc *np = calloc(1, sizeof(*np));
	char uid[16], gid[16];
	char *argv[8 + 2 * NETPROC_DENY_MAX + 1];
	union netmsg m;
	size_t n = 0;
	int sp[2], r;

	if (!np)
		return -ENOMEM;
	if (!o->path)
		return -ENOENT;
	snprintf(uid, sizeof(uid), "%u", (unsigned)o->uid);
	snprintf(gid, sizeof(gid), "%u", (unsigned)o->gid);
	argv[n++] = (char *)o->path;
	argv[n++] = "--uid";
	argv[n++] = uid;
	argv[n++] = "--gid";
	argv[n++] = gid;
	if (o->hosts_file) {
		argv[n++] = "--hosts";
		argv[n++] = (char *)o->hosts_file;
	}
	for (size_t i = 0; o->deny && o->deny[i] && i < NETPROC_DENY_MAX; i++) {
		argv[n++] = "--deny";
		argv[n++] = (char *)o->deny[i];
	}
	argv[n] = NULL;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0)
		return -errno;
	np->pid = fork();
	if (np->pid < 0) {
		r = -errno;
		close(sp[0]);
		close(sp[1]);
		return r;
	}
	if (np->pid == 0) {
		static char *const envp[] = { "PATH=/usr/bin:/bin", NULL };
		struct sigaction sa = { .sa_handler = SIG_DFL };
		sigset_t none;
		int keep = 3;
		for (int sig = 1; sig < NSIG; sig++)
			sigaction(sig, &sa, NULL);
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		if (dup2(sp[1], 3) < 0)
			_exit(127);
		close_fds_from(3, &keep, 1);
		execve(argv[0], argv, envp);
		_exit(127);
	}
	close(sp[1]);
	np->sock = sp[0];
	if ((r = wait_reply(np, NETMSG_HELLO, &m, NETPROC_HELLO_TIMEOUT_MS)) < 0) {
		netproc_stop(steal_pointer(&np));
		return r;
	}
	np->hello = m.hello;
	*ret = steal_pointer(&np);
	return 0;
}

int netproc_open(struct netproc *np, const char *run_id, const struct proto_strv *allow,
                 bool allow_private, const struct netns_proxy_fds *fds)
{
	_cleanup_free_ union netmsg *m = calloc(1, sizeof(*m));
	int all[NETMSG_LISTEN_MAX + 1];
	size_t k = 0;
	int r;

	if (!m)
		return -ENOMEM;
	if (!np)
		return -EPIPE;
	if (strlen(run_id) > NETMSG_ID_MAX || allow->n > NETALLOW_ENTRIES_MAX ||
	    fds->n > NETMSG_LISTEN_MAX || fds->dns < 0)
		return -EINVAL;
	m->open.type = NETMSG_OPEN;
	snprintf(m->open.run_id, sizeof(m->open.run_id), "%s", run_id);
	m->open.allow_private = allow_private;
	m->open.nallow = (uint8_t)allow->n;
	for (uint32_t i = 0; i < allow->n; i++) {
		if (strlen(allow->v[i]) > NETALLOW_ENTRY_MAX)
			return -EINVAL;
		snprintf(m->open.allow[i], sizeof(m->open.allow[i]), "%s", allow->v[i]);
	}
	m->open.nports = (uint8_t)fds->n;
	all[k++] = fds->dns;
	for (size_t i = 0; i < fds->n; i++) {
		m->open.port[i] = fds->port[i];
		all[k++] = fds->fd[i];
	}
	if ((r = netmsg_send(np->sock, m, all, k)) < 0 ||
	    (r = wait_reply(np, NETMSG_RESULT, m, NETPROC_REPLY_TIMEOUT_MS)) < 0)
		return r == -ETIMEDOUT ? -EPIPE : r; /* an sbx-net that does not answer is replaced */
	return m->result.err;
}

int netproc_close(struct netproc *np, const char *run_id, struct net_refusal **ret,
                  size_t *ret_n, uint32_t *ret_dropped)
{
	_cleanup_free_ union netmsg *m = calloc(1, sizeof(*m));
	struct net_refusal *out;
	int r;

	*ret = NULL;
	*ret_n = 0;
	*ret_dropped = 0;
	if (!m)
		return -ENOMEM;
	if (!np)
		return -EPIPE;
	m->close.type = NETMSG_CLOSE;
	snprintf(m->close.run_id, sizeof(m->close.run_id), "%s", run_id);
	if ((r = netmsg_send(np->sock, m, NULL, 0)) < 0 ||
	    (r = wait_reply(np, NETMSG_REFUSED, m, NETPROC_REPLY_TIMEOUT_MS)) < 0)
		return r;
	if (!(out = calloc(m->refused.n + 1, sizeof(*out))))
		return -ENOMEM;
	for (uint32_t i = 0; i < m->refused.n; i++) {
		snprintf(out[i].kind, sizeof(out[i].kind), "%s", m->refused.r[i].kind);
		snprintf(out[i].host, sizeof(out[i].host), "%s", m->refused.r[i].host);
		out[i].port = m->refused.r[i].port;
		out[i].at_ms = m->refused.r[i].at_ms;
	}
	*ret = out;
	*ret_n = m->refused.n;
	*ret_dropped = m->refused.dropped;
	return 0;
}

void netproc_stop(struct netproc *np)
{
	int st;
	if (!np)
		return;
	if (np->sock >= 0)
		close(np->sock); /* sbx-net exits when its channel closes */
	if (np->pid > 0) {
		kill(np->pid, SIGTERM);
		for (int i = 0; i < 50; i++) {
			pid_t w = waitpid(np->pid, &st, WNOHANG);
			if (w == np->pid || (w < 0 && errno == ECHILD))
				goto done;
			usleep(10000);
		}
		kill(np->pid, SIGKILL);
		while (waitpid(np->pid, &st, 0) < 0 && errno == EINTR)
			;
	}
done:
	free(np);
}
