/* One run's network fence, launcher side (netrun.h). */
#include "netrun.h"

#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "backend/backend.h"
#include "cleanup.h"
#include "fence/netns_proxy.h"
#include "log.h"
#include "netproc.h"
#include "registry.h"
#include "util.h"

#define NETRUN_SYNC_OK 'k'

/* The leader's message: 'k', then for proxy.allow the port of each listener it passes
 * (SCM_RIGHTS: the DNS socket first, then the listeners in this order). */
struct netrun_sync {
	char ok;
	uint8_t n;
	uint16_t port[NETNS_PROXY_LISTEN_MAX];
};

static void why_set(struct netrun *n, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void why_set(struct netrun *n, const char *fmt, ...)
{
	va_list ap;
	if (n->why[0])
		return; /* the first cause is the one worth reading */
	va_start(ap, fmt);
	vsnprintf(n->why, sizeof(n->why), fmt, ap);
	va_end(ap);
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* The jail may run its program now ('y'), or never (the pipe closes without it). */
static void ready_send(struct netrun *n, bool go)
{
	if (n->ready_w < 0)
		return;
	if (go && write(n->ready_w, "y", 1) != 1)
		why_set(n, "telling the jail its network is ready: %s", strerror(errno));
	close_fd(&n->ready_w);
}

int netrun_prepare(struct netrun *n, struct launcher *L, enum net_mode mode, const char *run_id)
{
	int sp[2], p[2];

	*n = (struct netrun){ .mode = mode, .sync_parent = -1, .sync_child = -1, .ready_r = -1,
		              .ready_w = -1, .fifo_fd = -1, .L = L };
	snprintf(n->run_id, sizeof(n->run_id), "%s", run_id);
	if (mode == NET_NONE)
		return 0;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0)
		return -errno;
	n->sync_parent = sp[0];
	n->sync_child = sp[1];
	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	n->ready_r = p[0];
	n->ready_w = p[1];
	return 0;
}

/* ---- in the leader ------------------------------------------------------------------- */

static int write_proc_self(const char *name, const char *text)
{
	char path[64];
	_cleanup_close_ int fd = -1;
	snprintf(path, sizeof(path), "/proc/self/%s", name);
	if ((fd = open(path, O_WRONLY | O_CLOEXEC)) < 0)
		return -errno;
	return write_all(fd, text, strlen(text));
}

static int lo_up(void)
{
	_cleanup_close_ int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	struct ifreq ifr = { 0 };
	if (s < 0)
		return -errno;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "lo");
	if (ioctl(s, SIOCGIFFLAGS, &ifr) < 0)
		return -errno;
	ifr.ifr_flags |= IFF_UP;
	return ioctl(s, SIOCSIFFLAGS, &ifr) < 0 ? -errno : 0;
}

static _Noreturn void child_fail(const char *what, int e)
{
	errno = e < 0 ? -e : e;
	backend_child_fail(what);
}

void netrun_child(int sync_fd, enum net_mode mode, const struct proto_strv *allow)
{
	char map[64];
	/* before unshare: inside, until mapped, every id reads as the overflow id */
	uid_t uid = getuid();
	gid_t gid = getgid();
	int r;

	/* pasta, as the jail uid, opens /proc/<us>/ns/net and user: that needs a dumpable process, and
	 * the drop from root left us undumpable */
	if (prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) < 0)
		child_fail("PR_SET_DUMPABLE", errno);
	if (unshare(CLONE_NEWUSER | CLONE_NEWNET) < 0)
		child_fail("making the jail's network namespace", errno);
	/* the jail uid maps to itself: the namespace is the jail uid's, and nothing more */
	if ((r = write_proc_self("setgroups", "deny")) < 0)
		child_fail("setgroups deny", r);
	snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)uid, (unsigned)uid);
	if ((r = write_proc_self("uid_map", map)) < 0)
		child_fail("uid_map", r);
	snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)gid, (unsigned)gid);
	if ((r = write_proc_self("gid_map", map)) < 0)
		child_fail("gid_map", r);
	if ((r = lo_up()) < 0)
		child_fail("bringing lo up", r);
	if (mode == NET_PROXY) {
		struct netns_proxy_fds fds;
		char cbuf[CMSG_SPACE(sizeof(int) * (NETNS_PROXY_LISTEN_MAX + 1))];
		int all[NETNS_PROXY_LISTEN_MAX + 1];
		struct netrun_sync msg = { .ok = NETRUN_SYNC_OK };
		struct iovec iov = { .iov_base = &msg, .iov_len = sizeof(msg) };
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf };
		struct cmsghdr *cm;
		size_t k = 0;

		if ((r = netns_proxy_setup(allow, &fds)) < 0)
			child_fail("the proxy's sockets in the jail's namespace", r);
		all[k++] = fds.dns;
		for (size_t i = 0; i < fds.n && i < NETNS_PROXY_LISTEN_MAX; i++) {
			all[k++] = fds.fd[i];
			msg.port[msg.n++] = fds.port[i];
		}
		memset(cbuf, 0, sizeof(cbuf));
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * k);
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int) * k);
		memcpy(CMSG_DATA(cm), all, sizeof(int) * k);
		if (sendmsg(sync_fd, &mh, MSG_NOSIGNAL) != (ssize_t)sizeof(msg))
			child_fail("passing the proxy's sockets", errno);
		netns_proxy_fds_close(&fds);
	} else if (send(sync_fd, (char[]){ NETRUN_SYNC_OK }, 1, MSG_NOSIGNAL) != 1) {
		child_fail("telling the launcher the namespace is made", errno);
	}
	close(sync_fd);
}

/* ---- in the launcher ----------------------------------------------------------------- */

/* The leader's message, waited for with a deadline that a signal does not shorten. */
static int sync_wait(struct netrun *n, struct netrun_sync *msg, int *fds, size_t *nfds)
{
	char cbuf[CMSG_SPACE(sizeof(int) * (NETNS_PROXY_LISTEN_MAX + 1))];
	struct iovec iov = { .iov_base = msg, .iov_len = sizeof(*msg) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
		             .msg_controllen = sizeof(cbuf) };
	ssize_t got;
	int r;

	*nfds = 0;
	memset(msg, 0, sizeof(*msg));
	if ((r = wait_readable(n->sync_parent, NETRUN_NS_TIMEOUT_MS)) < 0)
		return r;
	do
		got = recvmsg(n->sync_parent, &mh, MSG_CMSG_CLOEXEC);
	while (got < 0 && errno == EINTR);
	if (got < 0)
		return -errno;
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm))
		if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS) {
			size_t k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
			if (k > NETNS_PROXY_LISTEN_MAX + 1 - *nfds)
				k = NETNS_PROXY_LISTEN_MAX + 1 - *nfds; /* cannot happen: CTRUNC */
			memcpy(fds + *nfds, CMSG_DATA(cm), sizeof(int) * k);
			*nfds += k;
		}
	if (got == 0)
		return -ECHILD; /* the leader died; its stderr says why */
	if ((size_t)got != (n->mode == NET_PROXY ? sizeof(*msg) : 1) ||
	    msg->ok != NETRUN_SYNC_OK || (mh.msg_flags & MSG_CTRUNC) ||
	    (n->mode == NET_PROXY && (msg->n > NETNS_PROXY_LISTEN_MAX || *nfds != msg->n + 1u)))
		return -EPROTO;
	return 0;
}

static void pasta_done(struct netrun *n, bool ok)
{
	if (n->fifo_ev) {
		event_free(n->fifo_ev);
		n->fifo_ev = NULL;
	}
	if (n->timer_ev) {
		event_free(n->timer_ev);
		n->timer_ev = NULL;
	}
	close_fd(&n->fifo_fd);
	if (n->fifo_path[0]) {
		unlink(n->fifo_path);
		n->fifo_path[0] = '\0';
	}
	ready_send(n, ok);
}

/* pasta writes its pid file once the namespace is configured: the FIFO's data is the
 * signal that the jail's network is up */
static void fifo_cb(evutil_socket_t fd, short what, void *arg)
{
	struct netrun *n = arg;
	char buf[32];
	ssize_t got = read(fd, buf, sizeof(buf));
	if (got < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (got <= 0) {
		why_set(n, "pasta closed its pid file without writing it");
		if (n->pasta > 0)
			kill(n->pasta, SIGKILL);
		pasta_done(n, false);
		return;
	}
	pasta_done(n, true);
}

static void pasta_timeout_cb(evutil_socket_t fd, short what, void *arg)
{
	struct netrun *n = arg;
	why_set(n, "pasta did not set up the jail's network within %u ms", NETRUN_PASTA_TIMEOUT_MS);
	if (n->pasta > 0)
		kill(n->pasta, SIGKILL);
	pasta_done(n, false);
}

static int pasta_argv(struct netrun *n, const struct sandbox *s, struct proto_strv *argv)
{
	char buf[64];
	int r;
	if ((r = proto_strv_push(argv, n->L->pasta_path)) < 0 || (r = net_plan_pasta_args(s, argv)) < 0 ||
	    (r = proto_strv_push(argv, "--pid")) < 0 || (r = proto_strv_push(argv, n->fifo_path)) < 0)
		return r;
	snprintf(buf, sizeof(buf), "/proc/%d/ns/net", (int)n->leader);
	if ((r = proto_strv_push(argv, "--netns")) < 0 || (r = proto_strv_push(argv, buf)) < 0)
		return r;
	snprintf(buf, sizeof(buf), "/proc/%d/ns/user", (int)n->leader);
	if ((r = proto_strv_push(argv, "--userns")) < 0 || (r = proto_strv_push(argv, buf)) < 0)
		return r;
	/* as root pasta would drop to nobody, who cannot enter the jail uid's namespace */
	if (n->L->root) {
		snprintf(buf, sizeof(buf), "%u:%u", s->jail_uid, s->jail_uid);
		if ((r = proto_strv_push(argv, "--runas")) < 0 || (r = proto_strv_push(argv, buf)) < 0)
			return r;
	}
	return 0;
}

static int pasta_start(struct netrun *n, const struct sandbox *s)
{
	_cleanup_(proto_strv_clear) struct proto_strv argv = { 0 };
	struct timeval tv = { NETRUN_PASTA_TIMEOUT_MS / 1000, (NETRUN_PASTA_TIMEOUT_MS % 1000) * 1000 };
	char dir[PATH_MAX];
	pid_t pid;
	int r;

	snprintf(dir, sizeof(dir), "%s/net", n->L->data_dir);
	if (mkdir(dir, 0711) < 0 && errno != EEXIST)
		return -errno;
	if ((size_t)snprintf(n->fifo_path, sizeof(n->fifo_path), "%s/pasta-%s", dir, n->run_id) >=
	    sizeof(n->fifo_path))
		return -ENAMETOOLONG;
	unlink(n->fifo_path);
	if (mkfifo(n->fifo_path, 0600) < 0)
		return -errno;
	/* pasta may open it after --runas: the jail uid's own fifo, in a root-owned dir */
	if (n->L->root && chown(n->fifo_path, s->jail_uid, s->jail_uid) < 0)
		return -errno;
	if ((n->fifo_fd = open(n->fifo_path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)) < 0)
		return -errno;
	if ((r = pasta_argv(n, s, &argv)) < 0)
		return r;
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		static char *const envp[] = { "PATH=" BACKEND_PATH, NULL };
		struct sigaction sa = { .sa_handler = SIG_DFL };
		sigset_t all;
		int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
		/* pasta relies on default signal handling (it waits for SIGCHLD of its own) */
		for (int sig = 1; sig < NSIG; sig++)
			sigaction(sig, &sa, NULL);
		sigemptyset(&all);
		sigprocmask(SIG_SETMASK, &all, NULL);
		setsid();
		if (devnull >= 0) {
			dup2(devnull, 0);
			dup2(devnull, 1);
		}
		close_fds_from(3, NULL, 0);
		execve(argv.v[0], argv.v, envp);
		_exit(127);
	}
	n->pasta = pid;
	if ((r = registry_add(registry_launcher(), s->id, n->run_id, pid, REG_HELPER, NULL)) < 0)
		log_warnx("run %s: registering pasta %d: %s", n->run_id, (int)pid, strerror(-r));
	n->fifo_ev = event_new(n->L->base, n->fifo_fd, EV_READ | EV_PERSIST, fifo_cb, n);
	n->timer_ev = evtimer_new(n->L->base, pasta_timeout_cb, n);
	if (!n->fifo_ev || !n->timer_ev || event_add(n->fifo_ev, NULL) < 0 ||
	    evtimer_add(n->timer_ev, &tv) < 0)
		return -ENOMEM;
	return 0;
}

static int proxy_start(struct netrun *n, const struct sandbox *s, const struct netrun_sync *msg,
                       int *fds, size_t nfds)
{
	struct launcher *L = n->L;
	struct netns_proxy_fds pf = { .dns = -1, .n = msg->n };
	int r = 0;

	if (nfds < 1 || nfds != msg->n + 1u)
		return -EPROTO;
	pf.dns = fds[0];
	for (size_t i = 0; i < pf.n && i + 1 < nfds; i++) {
		pf.fd[i] = fds[i + 1];
		pf.port[i] = msg->port[i];
	}
	for (int attempt = 0; attempt < 2; attempt++) {
		if (!L->netproc) {
			const char *deny[2] = { L->api_host[0] ? L->api_host : NULL, NULL };
			struct netproc_opts o = { .path = L->net_path,
				                  .uid = L->root ? SBX_NET_UID : getuid(),
				                  .gid = L->root ? SBX_NET_UID : getgid(),
				                  .hosts_file = L->hosts_file,
				                  .deny = deny };
			if ((r = netproc_start(&o, &L->netproc)) < 0)
				return r;
			log_info("sbx-net started (pid %d)", (int)netproc_pid(L->netproc));
		}
		r = netproc_open(L->netproc, n->run_id, &s->proxy_allow, s->proxy_private, &pf);
		if (r != -EPIPE)
			break;
		/* a dead sbx-net: start a new one once */
		netproc_stop(L->netproc);
		L->netproc = NULL;
	}
	if (r == 0)
		n->proxy_open = true;
	return r;
}

void netrun_attach(struct netrun *n, const struct sandbox *s, pid_t leader)
{
	int fds[NETNS_PROXY_LISTEN_MAX + 1] = { 0 };
	struct netrun_sync msg;
	size_t nfds = 0;
	int r;

	if (n->mode == NET_NONE)
		return;
	n->leader = leader;
	close_fd(&n->sync_child);
	close_fd(&n->ready_r);
	r = sync_wait(n, &msg, fds, &nfds);
	close_fd(&n->sync_parent);
	if (r == 0 && n->mode == NET_PROXY)
		r = proxy_start(n, s, &msg, fds, nfds);
	for (size_t i = 0; i < nfds; i++)
		close(fds[i]); /* sbx-net holds its own copies */
	if (r == 0 && n->mode == NET_PROXY) {
		ready_send(n, true);
		return;
	}
	if (r == 0 && (r = pasta_start(n, s)) == 0)
		return; /* the ready byte goes out from fifo_cb */
	if (r == -ECHILD)
		why_set(n, "the jail's leader failed before its network namespace was made");
	else
		why_set(n, "the network fence could not be built: %s", strerror(-r));
	if (n->pasta > 0)
		kill(n->pasta, SIGKILL);
	pasta_done(n, false);
}

bool netrun_reap(struct netrun *n, pid_t pid, int status)
{
	if (n->pasta <= 0 || pid != n->pasta)
		return false;
	n->pasta = 0;
	n->pasta_status = status;
	if (n->ready_w >= 0) { /* it died before the namespace was ready */
		why_set(n, "pasta exited (status %d) before the jail's network was ready",
		        WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
		pasta_done(n, false);
	}
	return true;
}

static void refusals_collect(struct netrun *n, struct run_result *res)
{
	struct net_refusal *rf = NULL;
	size_t nrf = 0;
	uint32_t dropped = 0;
	int r = netproc_close(n->L->netproc, n->run_id, &rf, &nrf, &dropped);
	if (r < 0) {
		why_set(n, "the proxy's refusals could not be collected: %s", strerror(-r));
		return;
	}
	for (size_t i = 0; i < nrf && res->refused.n < PROTO_REFUSED_MAX; i++) {
		char line[320];
		/* the host came from the jail (a name it looked up): only printable ASCII kept */
		for (char *p = rf[i].host; *p; p++)
			if (*p <= ' ' || *p > '~')
				*p = '?';
		snprintf(line, sizeof(line), "%s %u %llu %s", rf[i].kind, rf[i].port,
		         (unsigned long long)rf[i].at_ms, rf[i].host[0] ? rf[i].host : "?");
		proto_strv_push(&res->refused, line);
	}
	if (dropped)
		why_set(n, "%u more network refusals were not kept", dropped);
	free(rf);
}

/* A killed pasta tears down a large address space (tens of ms, measured): the run's
 * answer does not wait for that; SIGCHLD reaps it (netrun_reap_pending). */
#define NETRUN_REAP_LATER_MAX 128u
static pid_t later[NETRUN_REAP_LATER_MAX];
static size_t nlater;

static void reap_later(pid_t pid)
{
	if (nlater < NETRUN_REAP_LATER_MAX) {
		later[nlater++] = pid;
		return;
	}
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
}

void netrun_release(struct netrun *n, struct run_result *res)
{
	if (n->mode == NET_NONE || !n->L)
		return;
	pasta_done(n, false);
	close_fd(&n->sync_parent);
	close_fd(&n->sync_child);
	close_fd(&n->ready_r);
	if (n->proxy_open && n->L->netproc) {
		if (res)
			refusals_collect(n, res);
		else {
			struct net_refusal *rf = NULL;
			size_t nrf = 0;
			uint32_t dropped = 0;
			netproc_close(n->L->netproc, n->run_id, &rf, &nrf, &dropped);
			free(rf);
		}
		n->proxy_open = false;
	}
	if (n->pasta > 0) {
		kill(n->pasta, SIGKILL);
		reap_later(n->pasta);
		n->pasta = 0;
	}
	n->mode = NET_NONE;
}

void netrun_reap_pending(void)
{
	for (size_t i = 0; i < nlater;) {
		pid_t w = waitpid(later[i], NULL, WNOHANG);
		if (w == later[i] || (w < 0 && errno == ECHILD))
			later[i] = later[--nlater];
		else
			i++;
	}
}

void netrun_shutdown(struct launcher *L)
{
	netproc_stop(L->netproc);
	L->netproc = NULL;
}
