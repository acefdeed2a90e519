/* The capability probe. Child probes (bwrap, docker) are fork+exec'd asynchronously: a
 * broken Docker Desktop hangs `docker info` for minutes, so each child has a hard timeout
 * and is SIGKILLed past it, and the event loop never waits on one. */
#include "caps.h"
#include "runner.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <event2/event.h>
#include <linux/landlock.h>

#include "cleanup.h"
#include "fence/netplan.h"
#include "log.h"
#include "privdrop.h"
#include "util.h"

/* the bwrap test runs as a uid of the reserved range that no sandbox is given first */
#define CAPS_PROBE_UID (SBX_JAIL_UID_BASE + SBX_JAIL_UID_COUNT - 1)

struct probe;
typedef void (*probe_done_fn)(bool timed_out, int status, const char *out);

struct probe {
	pid_t pid;
	int fd;
	struct event *rev, *tev;
	bool timed_out;
	size_t len;
	char buf[CAPS_OUTPUT_MAX + sizeof(int32_t) + 1];
	probe_done_fn done;
};

static struct {
	struct launcher *L;
	char direct_backend[16], direct_reason[512], bwrap_version[PROTO_NAME_MAX];
	char cgroup[8], docker_reason[512], net_note[512];
	bool direct_ok, docker_ok, seccomp, seccomp_notify, pasta;
	uint32_t landlock_abi;
	bool direct_valid, docker_valid, direct_running, docker_running;
	uint64_t direct_mono, docker_mono, direct_at, docker_at;
	struct {
		caps_done_fn fn;
		void *arg;
	} waiters[CAPS_WAITERS_MAX];
	unsigned nwaiters;
} C;

/* ---- one probe child -------------------------------------------------------------- */

/* In the intermediate child: run argv with output captured, then report the wait status
 * and output over outfd. The intermediate exists so that the status arrives over a pipe
 * whoever reaps children in the launcher. */
static _Noreturn void probe_intermediate(char *const argv[], bool as_jail, int outfd)
{
	static char *const envp[] = { "PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8", NULL };
	char buf[CAPS_OUTPUT_MAX];
	size_t len = 0;
	int p[2], st = 0, devnull;
	pid_t g;

	if (pipe2(p, O_CLOEXEC) < 0)
		_exit(1);
	g = fork();
	if (g < 0)
		_exit(1);
	if (g == 0) {
		devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
		if (devnull < 0 || dup2(devnull, 0) < 0 || dup2(p[1], 1) < 0 || dup2(p[1], 2) < 0)
			_exit(126);
		close_fds_from(3, NULL, 0);
		if (as_jail && privdrop_to(CAPS_PROBE_UID, CAPS_PROBE_UID) < 0)
			_exit(126);
		prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
		/* after the uid change, which clears it: the probe goes when its parent does */
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() == 1)
			_exit(126);
		if (chdir("/") < 0)
			_exit(126);
		execve(argv[0], argv, envp);
		_exit(127);
	}
	close(p[1]);
	for (;;) {
		char sink[512];
		ssize_t n = len < sizeof(buf) ? read(p[0], buf + len, sizeof(buf) - len)
		                              : read(p[0], sink, sizeof(sink));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		if (len < sizeof(buf))
			len += (size_t)n;
	}
	while (waitpid(g, &st, 0) < 0 && errno == EINTR)
		;
	int32_t st32 = st;
	if (write_all(outfd, &st32, sizeof(st32)) < 0 || write_all(outfd, buf, len) < 0)
		_exit(1);
	_exit(0);
}

/* the process groups of the probes in flight, ended when the launcher stops: a probe's
 * program may have dropped what would make it die with us (pasta changes its credentials,
 * which clears PR_SET_PDEATHSIG) */
#define CAPS_PROBES_MAX 8u
static pid_t live_probes[CAPS_PROBES_MAX];

static void probe_track(pid_t pid, bool on)
{
	for (size_t i = 0; i < CAPS_PROBES_MAX; i++)
		if (on ? live_probes[i] == 0 : live_probes[i] == pid) {
			live_probes[i] = on ? pid : 0;
			return;
		}
}

void caps_shutdown(void)
{
	for (size_t i = 0; i < CAPS_PROBES_MAX; i++)
		if (live_probes[i] > 0) {
			kill(-live_probes[i], SIGKILL);
			live_probes[i] = 0;
		}
}

static void probe_finish(struct probe *p)
{
	int32_t st = -1;
	probe_done_fn done = p->done;
	bool to = p->timed_out;

	probe_track(p->pid, false);
	while (waitpid(p->pid, NULL, 0) < 0 && errno == EINTR)
		;
	event_free(p->rev);
	event_free(p->tev);
	close(p->fd);
	if (p->len >= sizeof(st))
		memcpy(&st, p->buf, sizeof(st));
	else if (!to)
		st = -1;
	p->buf[p->len] = '\0';
	/* the output follows the status; it may contain NULs, which simply end it early */
	char *out = p->len >= sizeof(st) ? p->buf + sizeof(st) : p->buf + p->len;
	done(to, p->len >= sizeof(st) ? st : -1, out);
	free(p);
}

static void probe_read_cb(evutil_socket_t fd, short what, void *arg)
{
	struct probe *p = arg;
	char sink[512];
	size_t room = sizeof(p->buf) - 1 - p->len;
	ssize_t n = room ? read(fd, p->buf + p->len, room) : read(fd, sink, sizeof(sink));

	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n > 0) {
		if (room)
			p->len += (size_t)n;
		return;
	}
	probe_finish(p);
}

static void probe_timeout_cb(evutil_socket_t fd, short what, void *arg)
{
	struct probe *p = arg;
	p->timed_out = true;
	/* the intermediate leads its own group; the probe inherited it */
	kill(-p->pid, SIGKILL);
	kill(p->pid, SIGKILL);
}

static int probe_start(char *const argv[], bool as_jail, probe_done_fn done)
{
	struct timeval tv = { CAPS_PROBE_TIMEOUT_MS / 1000, (CAPS_PROBE_TIMEOUT_MS % 1000) * 1000 };
	struct probe *p = calloc(1, sizeof(*p));
	int fds[2];

	if (!p)
		return -ENOMEM;
	if (pipe2(fds, O_CLOEXEC | O_NONBLOCK) < 0) {
		free(p);
		return -errno;
	}
	p->pid = fork();
	if (p->pid < 0) {
		int e = errno;
		close(fds[0]);
		close(fds[1]);
		free(p);
		return -e;
	}
	if (p->pid == 0) {
		close(fds[0]);
		setpgid(0, 0);
		signal(SIGPIPE, SIG_DFL);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (fcntl(fds[1], F_SETFL, 0) < 0)
			_exit(1);
		probe_intermediate(argv, as_jail, fds[1]);
	}
	setpgid(p->pid, p->pid); /* both sides, so the kill below never misses the group */
	probe_track(p->pid, true);
	close(fds[1]);
	p->fd = fds[0];
	p->done = done;
	p->rev = event_new(C.L->base, p->fd, EV_READ | EV_PERSIST, probe_read_cb, p);
	p->tev = evtimer_new(C.L->base, probe_timeout_cb, p);
	if (!p->rev || !p->tev || event_add(p->rev, NULL) < 0 || evtimer_add(p->tev, &tv) < 0) {
		kill(-p->pid, SIGKILL);
		kill(p->pid, SIGKILL);
		probe_track(p->pid, false);
		if (p->rev)
			event_free(p->rev);
		if (p->tev)
			event_free(p->tev);
		close(p->fd);
		while (waitpid(p->pid, NULL, 0) < 0 && errno == EINTR)
			;
		free(p);
		return -ENOMEM;
	}
	return 0;
}

static void first_line(const char *in, char *out, size_t outsz)
{
	size_t n = strcspn(in, "\n");
	if (n >= outsz)
		n = outsz - 1;
	memcpy(out, in, n);
	out[n] = '\0';
	for (size_t i = 0; i < n; i++) /* a probe's output is shown to clients: no controls */
		if ((unsigned char)out[i] < 0x20 || (unsigned char)out[i] == 0x7f)
			out[i] = '?';
}

/* the last non-empty line: where docker and bwrap put the error that matters */
static void last_line(const char *in, char *out, size_t outsz)
{
	const char *best = in, *p = in;
	while (*p) {
		const char *nl = strchr(p, '\n');
		size_t l = nl ? (size_t)(nl - p) : strlen(p);
		if (strspn(p, " \t\r") < l)
			best = p;
		if (!nl)
			break;
		p = nl + 1;
	}
	while (*best == ' ' || *best == '\t')
		best++;
	first_line(best, out, outsz);
}

static void describe_failure(const char *what, bool timed_out, int st, const char *out,
                             char *buf, size_t bufsz)
{
	char line[256];
	last_line(out, line, sizeof(line));
	if (timed_out)
		snprintf(buf, bufsz, "%s timed out after %u ms (killed)", what, CAPS_PROBE_TIMEOUT_MS);
	else if (st < 0)
		snprintf(buf, bufsz, "%s: the probe could not be run", what);
	else if (WIFEXITED(st))
		snprintf(buf, bufsz, "%s exited %d%s%s", what, WEXITSTATUS(st), *line ? ": " : "",
		         line);
	else
		snprintf(buf, bufsz, "%s killed by signal %d", what, WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}

static bool probe_ok(bool timed_out, int st) { return !timed_out && st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0; }

/* ---- what can be read without a child ---------------------------------------------- */

static uint32_t caps_landlock_abi(void)
{
	long abi = syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
	return abi > 0 ? (uint32_t)abi : 0;
}

static void caps_static_probe(void)
{
	_cleanup_free_ char *actions = NULL;
	size_t alen;
	struct stat st;
	static const char *const pasta_paths[] = { "/usr/bin/pasta", "/bin/pasta",
		                                   "/usr/local/bin/pasta", "/usr/sbin/pasta" };

	C.landlock_abi = caps_landlock_abi();
	/* PR_GET_SECCOMP fails with EINVAL on a kernel without seccomp */
	C.seccomp = prctl(PR_GET_SECCOMP, 0, 0, 0, 0) >= 0;
	C.seccomp_notify = C.seccomp &&
	                   read_file("/proc/sys/kernel/seccomp/actions_avail", 4096, &actions, &alen) >= 0 &&
	                   strstr(actions, "user_notif") != NULL;
	/* installed; the attach probe after the bwrap test decides (pasta_test_done) */
	C.pasta = false;
	for (size_t i = 0; i < sizeof(pasta_paths) / sizeof(pasta_paths[0]); i++)
		if (access(pasta_paths[i], X_OK) == 0)
			C.pasta = true;
	_cleanup_free_ char *ctl = NULL;
	size_t clen;
	if (read_file("/sys/fs/cgroup/cgroup.controllers", 4096, &ctl, &clen) >= 0 && clen > 1)
		snprintf(C.cgroup, sizeof(C.cgroup), "v2");
	else if (stat("/sys/fs/cgroup/memory", &st) == 0 && S_ISDIR(st.st_mode) &&
	         stat("/sys/fs/cgroup/pids", &st) == 0 && S_ISDIR(st.st_mode))
		snprintf(C.cgroup, sizeof(C.cgroup), "v1");
	else
		snprintf(C.cgroup, sizeof(C.cgroup), "none");
}

/* ---- direct and docker ------------------------------------------------------------ */

static void caps_flush_waiters(void)
{
	_cleanup_(proto_strv_clear) struct proto_strv fences = { 0 };
	struct msg_CAPS_REP rep;
	unsigned n = C.nwaiters;

	if (C.direct_running || C.docker_running)
		return;
	net_plan_fences(&C.L->net, &fences);
	rep = (struct msg_CAPS_REP){
		.direct_backend = C.direct_backend,
		.direct_ok = C.direct_ok,
		.direct_reason = C.direct_reason,
		.bwrap_version = C.bwrap_version,
		.landlock_abi = C.landlock_abi,
		.seccomp = C.seccomp,
		.seccomp_notify = C.seccomp_notify,
		.pasta = C.pasta,
		.cgroup = C.cgroup,
		.docker_ok = C.docker_ok,
		.docker_reason = C.docker_reason,
		.direct_probed_at = C.direct_at,
		.docker_probed_at = C.docker_at,
		.net_fences = fences,
		.net_note = C.net_note,
	};
	C.nwaiters = 0; /* a callback may queue again */
	for (unsigned i = 0; i < n; i++)
		C.waiters[i].fn(&rep, C.waiters[i].arg);
}

static void direct_finish(void)
{
	C.direct_running = false;
	C.direct_valid = true;
	C.direct_mono = now_ms();
	C.direct_at = now_unix_s();
	caps_flush_waiters();
}

/* What the network fence can be built from now (L->net, read by policy and the notes). */
static void net_machine_update(void)
{
	struct launcher *L = C.L;
	L->net = (struct net_machine){ .pasta = C.pasta && L->pasta_path,
		                       .jail_init = L->jail_init_path != NULL,
		                       .net_proc = L->net_path != NULL,
		                       .landlock_abi = (int)C.landlock_abi };
	struct stat st;
	char tun[160] = "";
	/* the usual cause: a machine without udev left the tun device root-only */
	if (L->pasta_path && !C.pasta && stat("/dev/net/tun", &st) == 0 &&
	    (st.st_mode & 0006) != 0006)
		snprintf(tun, sizeof(tun), "(/dev/net/tun is mode %03o: the jail uid cannot open "
		                           "it; the distribution default is 0666) ",
		         (unsigned)(st.st_mode & 0777));
	snprintf(C.net_note, sizeof(C.net_note), "%s%s%s%s%s%s",
	         !L->pasta_path ? "pasta is not installed: no ports, no network: true; "
	         : !C.pasta     ? "pasta is installed but could not attach to a namespace here "
	                        : "",
	         L->pasta_path && !C.pasta ? tun : "",
	         L->pasta_path && !C.pasta ? "- no ports, no network: true; " : "",
	         !L->jail_init_path ? "sbx-jail-init is missing: no network fence at all; " : "",
	         !L->net_path ? "sbx-net is missing: no proxy.allow; " : "",
	         C.landlock_abi < NET_LANDLOCK_PORTS_ABI
	                 ? "Landlock has no TCP port rules here (ABI < 4): ports cannot be "
	                   "restricted, only the host's loopback kept out"
	                 : "");
}

/* pasta can attach to a namespace of its own making, as the uid jails run as */
static void pasta_test_done(bool timed_out, int st, const char *out)
{
	C.pasta = probe_ok(timed_out, st);
	if (!C.pasta)
		log_warnx("pasta probe failed: %s", out && *out ? out : "no output");
	net_machine_update();
	direct_finish();
}

static void direct_test_done(bool timed_out, int st, const char *out)
{
	/* --foreground: a pasta that went to the background would outlive the probe (its own
	 * session, out of reach of the probe's group kill) */
	char *const argv[] = { C.L->pasta_path, "--config-net", "--quiet", "--foreground", "--no-map-gw",
		               "-T", "none", "-U", "none", "-u", "none", "-t", "none", "--", "/bin/true",
		               NULL };
	C.direct_ok = probe_ok(timed_out, st);
	if (C.direct_ok)
		snprintf(C.direct_reason, sizeof(C.direct_reason), "bwrap runs a jail");
	else
		describe_failure("bwrap test jail", timed_out, st, out, C.direct_reason,
		                 sizeof(C.direct_reason));
	/* only where jails run at all; before the first probe an installed pasta counts */
	if (C.direct_ok && C.L->pasta_path && probe_start(argv, C.L->root, pasta_test_done) == 0)
		return;
	C.pasta = false;
	net_machine_update();
	direct_finish();
}

static void direct_version_done(bool timed_out, int st, const char *out)
{
	char *const argv[] = { C.L->bwrap_path, "--unshare-user", "--unshare-pid", "--ro-bind",
		               "/", "/", "--dev", "/dev", "--", "/bin/true", NULL };
	if (probe_ok(timed_out, st))
		first_line(out, C.bwrap_version, sizeof(C.bwrap_version));
	else
		C.bwrap_version[0] = '\0';
	/* as the jail uid when root: that is who runs bwrap for real */
	if (probe_start(argv, C.L->root, direct_test_done) < 0) {
		C.direct_ok = false;
		snprintf(C.direct_reason, sizeof(C.direct_reason), "could not start the bwrap test");
		direct_finish();
	}
}

static void direct_start(void)
{
	char *const argv[] = { C.L->bwrap_path, "--version", NULL };
	if (C.direct_running)
		return;
	C.direct_running = true;
	caps_static_probe();
	if (!C.L->bwrap_path) {
		snprintf(C.direct_backend, sizeof(C.direct_backend), "degraded");
		snprintf(C.direct_reason, sizeof(C.direct_reason),
		         "bwrap not found in /usr/bin, /bin, /usr/local/bin: runs have no OS barrier");
		C.direct_ok = false;
		C.bwrap_version[0] = '\0';
		direct_finish();
		return;
	}
	snprintf(C.direct_backend, sizeof(C.direct_backend), "bwrap");
	if (probe_start(argv, false, direct_version_done) < 0) {
		C.direct_ok = false;
		snprintf(C.direct_reason, sizeof(C.direct_reason), "could not start bwrap --version");
		direct_finish();
	}
}

static void docker_finish(void)
{
	C.docker_running = false;
	C.docker_valid = true;
	C.docker_mono = now_ms();
	C.docker_at = now_unix_s();
	caps_flush_waiters();
}

static void docker_done(bool timed_out, int st, const char *out)
{
	C.docker_ok = probe_ok(timed_out, st);
	if (C.docker_ok)
		snprintf(C.docker_reason, sizeof(C.docker_reason), "the docker daemon answers");
	else
		describe_failure("docker info", timed_out, st, out, C.docker_reason,
		                 sizeof(C.docker_reason));
	docker_finish();
}

const char *caps_docker_path(void)
{
	static const char *const paths[] = { "/usr/bin/docker", "/usr/local/bin/docker", "/bin/docker" };
	if (C.L && C.L->docker_path)
		return access(C.L->docker_path, X_OK) == 0 ? C.L->docker_path : NULL;
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++)
		if (access(paths[i], X_OK) == 0)
			return paths[i];
	return NULL;
}

static void docker_start(void)
{
	const char *docker = NULL;

	if (C.docker_running)
		return;
	C.docker_running = true;
	docker = caps_docker_path();
	if (!docker) {
		C.docker_ok = false;
		snprintf(C.docker_reason, sizeof(C.docker_reason), "docker not found");
		docker_finish();
		return;
	}
	/* ask the daemon, not just the binary */
	char *const argv[] = { (char *)docker, "info", NULL };
	if (probe_start(argv, false, docker_done) < 0) {
		C.docker_ok = false;
		snprintf(C.docker_reason, sizeof(C.docker_reason), "could not start docker info");
		docker_finish();
	}
}

static bool stale(bool valid, uint64_t mono) { return !valid || now_ms() - mono >= CAPS_CACHE_MS; }

void caps_init(struct launcher *L)
{
	memset(&C, 0, sizeof(C));
	C.L = L;
	snprintf(C.cgroup, sizeof(C.cgroup), "none");
	snprintf(C.direct_backend, sizeof(C.direct_backend), L->bwrap_path ? "bwrap" : "degraded");
}

void caps_refresh(void)
{
	if (stale(C.direct_valid, C.direct_mono)) {
		runner_discard_warm(NULL); /* the machine may have changed under them */
		direct_start();
	}
	if (stale(C.docker_valid, C.docker_mono))
		docker_start();
}

int caps_get(bool recheck, caps_done_fn done, void *arg)
{
	if (C.nwaiters >= CAPS_WAITERS_MAX)
		return -ENOBUFS;
	C.waiters[C.nwaiters].fn = done;
	C.waiters[C.nwaiters].arg = arg;
	C.nwaiters++;
	if (recheck) {
		direct_start();
		docker_start();
	} else {
		caps_refresh();
	}
	caps_flush_waiters(); /* answers now when nothing is running */
	return 0;
}

const char *caps_bwrap_version(void) { return C.bwrap_version; }

bool caps_docker_unavailable(const char **ret_reason)
{
	if (ret_reason)
		*ret_reason = C.docker_reason;
	return C.docker_valid && !C.docker_ok;
}

bool caps_engine_broken(const char **ret_reason)
{
	bool broken = C.L && C.L->bwrap_path && C.direct_valid && !C.direct_ok &&
	              !(C.docker_valid && C.docker_ok);
	if (ret_reason)
		*ret_reason = C.direct_reason;
	return broken;
}
