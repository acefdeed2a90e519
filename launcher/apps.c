/* Space Apps: supervision, logs, port reclaim and what the kernel says (apps.h). */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/queue.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "apps.h"
#include "caps.h"
#include "cleanup.h"
#include "dispatch_int.h"
#include "log.h"
#include "policy.h"
#include "portown.h"
#include "procs.h"
#include "registry.h"
#include "run_stream.h"
#include "runner.h"
#include "sandbox.h"
#include "store.h"
#include "util.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

struct app {
	LIST_ENTRY(app) entry;
	struct app_conf c;
	enum proto_app_state state;
	char run_id[PROTO_ID_MAX + 1]; /* the live run, "" when none */
	uint64_t start_s, stop_s;      /* unix seconds of the last start / stop, 0: never */
	bool has_exit;
	uint32_t exit_status;
	char spawnerr[PROTO_STR_MAX / 4];
	uint32_t backoff; /* supervisord's: failed starts in a row */
	uint32_t starts;
	bool restart_after_stop; /* restart: start again once stopped */
	bool reclaim_tried;      /* one reclaim per app per launcher run */
	bool gone;               /* deleted while its run was still ending */
	struct event *timer;     /* startsecs, or the backoff delay */
	int log[2];              /* stdout, stderr: append-only log files */
	uint64_t log_size[2];
	/* a follower of one of the logs (APP_LOG follow) */
	struct run_outstream *follow;
	struct pending *follow_p;
	int follow_which;
};

static LIST_HEAD(, app) apps = LIST_HEAD_INITIALIZER(apps);
static struct launcher *apps_L;
static bool stopping;
static char logs_dir[PATH_MAX];

static const char *const state_names[] = { "STOPPED", "STARTING", "RUNNING", "BACKOFF",
	                                   "STOPPING", "EXITED", "FATAL" };

static void app_spawn(struct app *a);
static void follow_end(struct app *a);

/* ---- small parts --------------------------------------------------------------------- */

bool apps_name_valid(const char *name) { return proto_app_name_valid(name); }

bool apps_path_inside(const char *path, const char *dir)
{
	size_t n = strlen(dir);
	while (n > 1 && dir[n - 1] == '/')
		n--;
	return strncmp(path, dir, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

static struct app *app_find(const char *name)
{
	struct app *a;
	LIST_FOREACH(a, &apps, entry)
		if (!a->gone && strcmp(a->c.name, name) == 0)
			return a;
	return NULL;
}

const char *apps_owner_of(const char *sandbox_id)
{
	struct app *a;
	LIST_FOREACH(a, &apps, entry)
		if (!a->gone && strcmp(a->c.sandbox_id, sandbox_id) == 0)
			return a->c.name;
	return NULL;
}

void apps_count_states(uint32_t *counts)
{
	struct app *a;
	LIST_FOREACH(a, &apps, entry)
		if (!a->gone)
			counts[a->state]++;
}

static void app_set_state(struct app *a, enum proto_app_state s)
{
	if (a->state != s)
		log_info("app %s: %s -> %s", a->c.name, state_names[a->state], state_names[s]);
	a->state = s;
}

static void app_spawnerr(struct app *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void app_spawnerr(struct app *a, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(a->spawnerr, sizeof(a->spawnerr), fmt, ap);
	va_end(ap);
	log_warnx("app %s: %s", a->c.name, a->spawnerr);
}

static void timer_set(struct app *a, uint32_t ms, event_callback_fn cb)
{
	struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };
	if (a->timer)
		event_free(a->timer);
	a->timer = evtimer_new(apps_L->base, cb, a);
	if (a->timer)
		evtimer_add(a->timer, &tv);
}

static void timer_clear(struct app *a)
{
	if (a->timer) {
		event_free(a->timer);
		a->timer = NULL;
	}
}

/* ---- logs ---------------------------------------------------------------------------- */

static void log_path(const struct app *a, int which, unsigned gen, char *buf, size_t sz)
{
	if (gen)
		snprintf(buf, sz, "%s/%s.%s.log.%u", logs_dir, a->c.name, which ? "err" : "out", gen);
	else
		snprintf(buf, sz, "%s/%s.%s.log", logs_dir, a->c.name, which ? "err" : "out");
}

static int log_open(struct app *a, int which)
{
	char p[PATH_MAX];
	struct stat st;
	log_path(a, which, 0, p, sizeof(p));
	a->log[which] = open(p, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (a->log[which] < 0)
		return -errno;
	a->log_size[which] = fstat(a->log[which], &st) == 0 ? (uint64_t)st.st_size : 0;
	return 0;
}

static void log_rotate(struct app *a, int which)
{
	char from[PATH_MAX], to[PATH_MAX];
	close(a->log[which]);
	a->log[which] = -1;
	for (unsigned g = APPS_LOG_BACKUPS; g > 0; g--) {
		log_path(a, which, g - 1, from, sizeof(from));
		log_path(a, which, g, to, sizeof(to));
		rename(from, to); /* a missing one is fine */
	}
	if (log_open(a, which) < 0)
		log_warnx("app %s: reopening its log: %s", a->c.name, strerror(errno));
}

static void app_output(struct run *run, enum run_stream stream, const char *data, size_t len,
                       void *arg)
{
	struct app *a = arg;
	int which = stream == RUN_STDERR ? 1 : 0;
	if (a->follow && run_stream_over(a->follow))
		follow_end(a); /* the reader went away */
	if (a->follow && a->follow_which == which)
		run_stream_output(run, stream, data, len, a->follow);
	if (a->log[which] < 0 && log_open(a, which) < 0)
		return;
	/* a full disk drops the bytes, never blocks the app */
	if (write_all(a->log[which], data, len) == 0)
		a->log_size[which] += len;
	if (a->log_size[which] >= APPS_LOG_ROTATE_BYTES)
		log_rotate(a, which);
}

static void log_remove(const struct app *a)
{
	char p[PATH_MAX];
	for (int w = 0; w < 2; w++)
		for (unsigned g = 0; g <= APPS_LOG_BACKUPS; g++) {
			log_path(a, w, g, p, sizeof(p));
			unlink(p);
		}
}

/* ---- what the kernel says ------------------------------------------------------------ */


/* Does something answer on 127.0.0.1:port (or [::1]:port) on the host? */
static bool port_answers(uint16_t port)
{
	struct sockaddr_in a4 = { .sin_family = AF_INET, .sin_port = htons(port),
		                  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct sockaddr_in6 a6 = { .sin6_family = AF_INET6, .sin6_port = htons(port),
		                   .sin6_addr = IN6ADDR_LOOPBACK_INIT };
	for (int i = 0; i < 2; i++) {
		_cleanup_close_ int fd = socket(i ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd >= 0 && connect(fd, i ? (struct sockaddr *)&a6 : (struct sockaddr *)&a4,
		                       i ? sizeof(a6) : sizeof(a4)) == 0)
			return true;
	}
	return false;
}

/* The jail's program: the first child of the jail's first process (bwrap's own init in a
 * new pid namespace), or the jail process itself when it has none. 0 when not running. */
static pid_t app_program_pid(const struct app *a)
{
	const struct registry_entry *e[REGISTRY_RUN_GROUPS_MAX];
	size_t n;
	pid_t jail = 0;
	if (!a->run_id[0])
		return 0;
	n = registry_list(registry_launcher(), a->c.sandbox_id, a->run_id, e, REGISTRY_RUN_GROUPS_MAX);
	for (size_t i = 0; i < n && i < REGISTRY_RUN_GROUPS_MAX; i++)
		if (e[i]->kind == REG_JAIL)
			jail = e[i]->pgid;
	if (!jail) /* bwrap has not reported its jail yet: nothing to judge */
		return 0;
	char p[96], buf[256];
	_cleanup_close_ int fd = -1;
	ssize_t r;
	snprintf(p, sizeof(p), "/proc/%d/task/%d/children", (int)jail, (int)jail);
	if ((fd = open(p, O_RDONLY | O_CLOEXEC)) >= 0 && (r = read(fd, buf, sizeof(buf) - 1)) > 0) {
		buf[r] = '\0';
		long c = strtol(buf, NULL, 10);
		if (c > 1)
			return (pid_t)c;
	}
	return jail;
}

static unsigned seccomp_filters(int dirfd)
{
	_cleanup_close_ int fd = openat(dirfd, "status", O_RDONLY | O_CLOEXEC);
	char buf[4096], *p;
	ssize_t n;
	if (fd < 0 || (n = read(fd, buf, sizeof(buf) - 1)) <= 0)
		return 0;
	buf[n] = '\0';
	return (p = strstr(buf, "\nSeccomp_filters:")) ? (unsigned)strtoul(p + 17, NULL, 10) : 0;
}

/* Fill the confinement block from /proc for the running program, and judge it: confined
 * means an unprivileged uid, no_new_privs, a seccomp filter, no effective capabilities
 * and its own user, pid and mount namespaces. */
static void app_confinement(const struct app *a, struct msg_APP_REP *rep, char *why, size_t whysz)
{
	struct proc_info pi;
	char p[32];
	pid_t pid = app_program_pid(a);
	_cleanup_close_ int dfd = -1;
	bool user = false, pidns = false, mnt = false;

	if (pid <= 0)
		return;
	snprintf(p, sizeof(p), "/proc/%d", (int)pid);
	if ((dfd = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0 || proc_read(dfd, &pi) < 0)
		return;
	rep->pid = (uint32_t)pid;
	rep->checked = true;
	rep->uid = pi.uid;
	rep->gid = pi.gid;
	rep->no_new_privs = pi.no_new_privs;
	rep->seccomp = pi.seccomp;
	rep->seccomp_filters = seccomp_filters(dfd);
	rep->cap_eff = strdup(pi.cap_eff);
	rep->cgroup = strdup(pi.cgroup);
	proc_ns_differ(dfd, getppid(), &rep->namespaces);
	for (uint32_t i = 0; i < rep->namespaces.n; i++) {
		user |= strcmp(rep->namespaces.v[i], "user") == 0;
		pidns |= strcmp(rep->namespaces.v[i], "pid") == 0;
		mnt |= strcmp(rep->namespaces.v[i], "mnt") == 0;
	}
	{
		uint32_t ports[PROTO_LIST_MAX];
		size_t n = portown_listening(pid, ports, PROTO_LIST_MAX);
		for (size_t i = 0; i < n; i++)
			proto_u32v_push(&rep->listening, ports[i]);
	}
	why[0] = '\0';
	if (pi.uid == 0)
		snprintf(why, whysz, "runs as uid 0");
	else if (!pi.no_new_privs)
		snprintf(why, whysz, "no_new_privs is not set");
	else if (pi.seccomp != 2)
		snprintf(why, whysz, "no seccomp filter");
	else if (strspn(pi.cap_eff, "0") != strlen(pi.cap_eff))
		snprintf(why, whysz, "effective capabilities %s", pi.cap_eff);
	else if (!user || !pidns || !mnt)
		snprintf(why, whysz, "shares a user, pid or mount namespace with sbxd");
	rep->confined = why[0] == '\0';
	if (!rep->confined)
		log_warnx("app %s: its process %d is NOT confined: %s", a->c.name, (int)pid, why);
}

/* ---- port reclaim -------------------------------------------------------------------- */

static bool wait_gone(int pidfd, unsigned ms)
{
	struct pollfd pf = { .fd = pidfd, .events = POLLIN };
	return poll(&pf, 1, (int)ms) == 1;
}

/* 0: the port is free (or was freed); -EADDRINUSE: held by someone left alone (spawnerr
 * says who). */
static int app_reclaim_port(struct app *a, const char *dir)
{
	char p[64], cwd[PATH_MAX];
	ssize_t n;
	pid_t owner;
	_cleanup_close_ int pidfd = -1;

	if (!a->c.port || !port_answers((uint16_t)a->c.port))
		return 0;
	int e = portown_owner((uint16_t)a->c.port, &owner, cwd, sizeof(cwd));
	if (e < 0 && owner > 0) {
		app_spawnerr(a, "port %u is held by pid %d, whose directory cannot be read: left alone",
		             a->c.port, (int)owner);
		return -EADDRINUSE;
	}
	if (e < 0 || owner <= 0) {
		app_spawnerr(a, "port %u answers and its owner could not be found: left alone",
		             a->c.port);
		return -EADDRINUSE;
	}
	if (!apps_path_inside(cwd, dir)) {
		app_spawnerr(a, "port %u is held by pid %d (cwd %s), not this app's: left alone",
		             a->c.port, (int)owner, cwd);
		return -EADDRINUSE;
	}
	if (a->reclaim_tried) {
		app_spawnerr(a, "port %u is held again by pid %d (cwd %s) after one reclaim: left alone",
		             a->c.port, (int)owner, cwd);
		return -EADDRINUSE;
	}
	a->reclaim_tried = true;
	/* the check and the signals go to one process, even if its pid is reused meanwhile */
	if ((pidfd = (int)syscall(SYS_pidfd_open, owner, 0)) < 0) {
		app_spawnerr(a, "port %u: pid %d: %s", a->c.port, (int)owner, strerror(errno));
		return -EADDRINUSE;
	}
	snprintf(p, sizeof(p), "/proc/%d/cwd", (int)owner);
	if ((n = readlink(p, cwd, sizeof(cwd) - 1)) <= 0 || (cwd[n] = '\0', !apps_path_inside(cwd, dir))) {
		app_spawnerr(a, "port %u: pid %d changed under the check: left alone", a->c.port, (int)owner);
		return -EADDRINUSE;
	}
	log_warnx("app %s: port %u is held by a stale process of this app (pid %d, cwd %s): "
	          "reclaiming it", a->c.name, a->c.port, (int)owner, cwd);
	syscall(SYS_pidfd_send_signal, pidfd, SIGTERM, NULL, 0);
	if (!wait_gone(pidfd, APPS_RECLAIM_WAIT_MS)) {
		syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
		wait_gone(pidfd, APPS_RECLAIM_WAIT_MS);
	}
	for (int i = 0; i < 50 && port_answers((uint16_t)a->c.port); i++)
		usleep(10000); /* its socket closes with its last holder */
	if (port_answers((uint16_t)a->c.port)) {
		app_spawnerr(a, "port %u still answers after its stale holder was ended", a->c.port);
		return -EADDRINUSE;
	}
	return 0;
}

/* ---- the state machine --------------------------------------------------------------- */

static void backoff_cb(evutil_socket_t fd, short what, void *arg)
{
	struct app *a = arg;
	timer_clear(a);
	if (a->state == APP_BACKOFF && !stopping)
		app_spawn(a);
}

static void startsecs_cb(evutil_socket_t fd, short what, void *arg)
{
	struct app *a = arg;
	timer_clear(a);
	if (a->state == APP_STARTING) {
		a->backoff = 0;
		a->spawnerr[0] = '\0';
		app_set_state(a, APP_RUNNING);
	}
}

static void restart_cb(evutil_socket_t fd, short what, void *arg)
{
	struct app *a = arg;
	timer_clear(a);
	if (a->state == APP_EXITED && !stopping)
		app_spawn(a);
}

/* A start that failed or ended too soon: BACKOFF, or FATAL past startretries. */
static void app_failed_start(struct app *a)
{
	a->backoff++;
	a->run_id[0] = '\0';
	if (a->backoff > a->c.startretries) {
		app_set_state(a, APP_FATAL);
		log_warnx("app %s: gave up after %u tries: %s", a->c.name, a->backoff, a->spawnerr);
		return;
	}
	app_set_state(a, APP_BACKOFF);
	timer_set(a, a->backoff * 1000u, backoff_cb);
}

/* The follow ends: its stream, then the reply its request waits for. */
static void follow_end(struct app *a)
{
	struct proto_chan *ch;
	if (!a->follow)
		return;
	run_stream_close(a->follow);
	if ((ch = pending_chan(a->follow_p))) {
		struct msg_APP_LOG_REP rep = { .size = a->log_size[a->follow_which] };
		proto_chan_send(ch, MSG_APP_LOG_REP, a->follow_p->id, &rep, -1);
	}
	free(a->follow_p);
	a->follow = NULL;
	a->follow_p = NULL;
}

static void app_free(struct app *a)
{
	follow_end(a);
	timer_clear(a);
	for (int w = 0; w < 2; w++)
		if (a->log[w] >= 0)
			close(a->log[w]);
	LIST_REMOVE(a, entry);
	app_conf_clear(&a->c);
	free(a);
}

static bool exit_expected(const struct app *a, const struct run_result *res)
{
	if (!res->has_exit_code)
		return false;
	for (uint32_t i = 0; i < a->c.exitcodes.n; i++)
		if (a->c.exitcodes.v[i] == res->exit_code)
			return true;
	return false;
}

static void app_started(const struct run_result *res, void *arg)
{
	struct app *a = arg;
	snprintf(a->run_id, sizeof(a->run_id), "%s", res->id);
}

static void app_done(int err, const char *message, struct run_result *res, void *arg)
{
	struct app *a = arg;
	enum proto_app_state was = a->state;

	a->run_id[0] = '\0';
	a->stop_s = now_unix_s();
	timer_clear(a);
	follow_end(a); /* a follow lasts as long as the process it follows */
	if (a->gone) {
		app_free(a);
		return;
	}
	if (stopping)
		return;
	if (err) { /* the jail could not be made */
		app_spawnerr(a, "%s", message ? message : "the start failed");
		if (!stopping)
			app_failed_start(a);
		return;
	}
	a->has_exit = res && res->has_exit_code;
	a->exit_status = res && res->has_exit_code ? res->exit_code : 0;
	if (stopping)
		return;
	if (was == APP_STOPPING) {
		app_set_state(a, APP_STOPPED);
		if (a->restart_after_stop) {
			a->restart_after_stop = false;
			a->backoff = 0;
			app_spawn(a);
		}
		return;
	}
	if (was == APP_STARTING) { /* ended within startsecs */
		app_spawnerr(a, "Exited too quickly (process log may have details)");
		app_failed_start(a);
		return;
	}
	/* RUNNING, and it ended by itself */
	bool expected = res && exit_expected(a, res);
	log_info("app %s: exited (%s%u; %s)", a->c.name, res && res->has_exit_code ? "exit status " : "signal ",
	         res ? (res->has_exit_code ? res->exit_code : res->signal) : 0,
	         expected ? "expected" : "not expected");
	app_set_state(a, APP_EXITED);
	/* not from inside this callback: when sbxd's shutdown has just signalled every group,
	 * the launcher's own SIGTERM must get its turn before anything is started again */
	if (a->c.autorestart == APP_RESTART_ALWAYS ||
	    (a->c.autorestart == APP_RESTART_UNEXPECTED && !expected))
		timer_set(a, APPS_RESTART_DELAY_MS, restart_cb);
}

/* <workdir>/home, made as the jail's uid, never through a link */
static int home_make(const struct sandbox *sb, bool root, char *home, size_t sz)
{
	_cleanup_close_ int wfd = open(sb->workdir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	_cleanup_close_ int hfd = -1;
	struct stat st;
	if (wfd < 0)
		return -errno;
	if (mkdirat(wfd, APPS_HOME, 0700) == 0) {
		if ((hfd = openat(wfd, APPS_HOME, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
			return -errno;
		if (root && fchown(hfd, sb->jail_uid, sb->jail_uid) < 0)
			return -errno;
	} else if (errno != EEXIST) {
		return -errno;
	} else if (fstatat(wfd, APPS_HOME, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode)) {
		return -ENOTDIR; /* the app made something else of it: its HOME stays the workdir */
	}
	snprintf(home, sz, "%s/" APPS_HOME, sb->workdir);
	return 0;
}

static void app_spawn(struct app *a)
{
	struct launcher *L = apps_L;
	struct policy_machine m = { .bwrap = L->bwrap_path != NULL, .net = &L->net,
		                    .api_port = L->api_port };
	struct sandbox sb;
	enum isolation iso;
	char why[POLICY_WHY_MAX], note[POLICY_WHY_MAX], home[PATH_MAX];
	struct run_request req;
	int e;

	timer_clear(a);
	a->has_exit = false;
	app_set_state(a, APP_STARTING);
	a->start_s = now_unix_s();
	a->starts++;
	if ((e = store_sandbox_get(L->db, a->c.sandbox_id, &sb)) < 0) {
		app_spawnerr(a, "its sandbox %s cannot be read: %s", a->c.sandbox_id, strerror(-e));
		app_failed_start(a);
		return;
	}
	if (sb.backend == BACKEND_DOCKER)
		m.docker_ok = !caps_docker_unavailable(&m.docker_why) && caps_docker_path();
	m.engine_broken = caps_engine_broken(&m.engine_why);
	if (policy_isolation(true, &sb, &m, &iso, why, sizeof(why), note, sizeof(note)) != 0 ||
	    iso == ISO_DEGRADED || iso == ISO_NONE) {
		/* an app never runs unconfined: no jail, no start */
		app_spawnerr(a, "no jail can be built on this machine: %s",
		             iso == ISO_DEGRADED ? "bwrap is missing (degraded)" : why);
		sandbox_clear(&sb);
		app_failed_start(a);
		return;
	}
	if (app_reclaim_port(a, sb.workdir) < 0) {
		sandbox_clear(&sb);
		app_failed_start(a);
		return;
	}
	if ((e = home_make(&sb, L->root, home, sizeof(home))) < 0) {
		log_warnx("app %s: its home directory: %s (HOME is its directory)", a->c.name, strerror(-e));
		snprintf(home, sizeof(home), "%s", sb.workdir);
	}
	req = (struct run_request){ .language = LANG_SH, .code = a->c.command, .stdin_data = "",
		                    .entrance = ENTRANCE_REST, .on_output = app_output,
		                    .on_output_arg = a, .on_started = app_started,
		                    .on_started_arg = a, .app = true, .home = home,
		                    .stop_signal = (int)a->c.stopsignal,
		                    .stop_wait_ms = a->c.stopwaitsecs ? a->c.stopwaitsecs * 1000u : 1u };
	snprintf(req.sandbox_id, sizeof(req.sandbox_id), "%s", a->c.sandbox_id);
	a->spawnerr[0] = '\0';
	runner_start(L, &req, &sb, iso, note, app_done, a); /* takes sb; done may run inside */
	if (a->state == APP_STARTING && a->run_id[0]) {
		if (a->c.startsecs == 0)
			startsecs_cb(-1, 0, a);
		else
			timer_set(a, a->c.startsecs * 1000u, startsecs_cb);
	}
}

static int app_stop(struct app *a)
{
	switch (a->state) {
	case APP_STARTING:
	case APP_RUNNING:
		timer_clear(a);
		app_set_state(a, APP_STOPPING);
		if (runner_kill(a->c.sandbox_id, a->run_id) < 0) /* already ending */
			log_debug("app %s: its run was already ending", a->c.name);
		return 0;
	case APP_BACKOFF:
		timer_clear(a);
		a->backoff = 0;
		app_set_state(a, APP_STOPPED);
		return 0;
	case APP_STOPPING:
		return 0;
	default:
		return -ESRCH; /* not running */
	}
}

static int app_start(struct app *a)
{
	switch (a->state) {
	case APP_STOPPED:
	case APP_EXITED:
	case APP_FATAL:
		a->backoff = 0;
		app_spawn(a);
		return 0;
	default:
		return -EALREADY;
	}
}

/* ---- load and shut down ----------------------------------------------------------- */

static struct app *app_new(const struct app_conf *c)
{
	struct app *a = calloc(1, sizeof(*a));
	if (!a)
		return NULL;
	a->c = *c;
	a->c.command = strdup(c->command);
	a->c.exitcodes = (struct proto_u32v){ 0 };
	for (uint32_t i = 0; i < c->exitcodes.n; i++)
		proto_u32v_push(&a->c.exitcodes, c->exitcodes.v[i]);
	a->log[0] = a->log[1] = -1;
	if (!a->c.command) {
		free(a);
		return NULL;
	}
	LIST_INSERT_HEAD(&apps, a, entry);
	return a;
}

static int load_one(const struct app_conf *c, void *arg)
{
	if (!app_new(c))
		log_warnx("app %s: out of memory loading it", c->name);
	return 0;
}

static void autostart_cb(evutil_socket_t fd, short what, void *arg)
{
	struct app *a;
	LIST_FOREACH(a, &apps, entry)
		if (a->c.autostart && a->state == APP_STOPPED && !stopping)
			app_spawn(a);
}

int apps_init(struct launcher *L)
{
	const struct timeval now = { 0, 0 };
	int r;
	apps_L = L;
	snprintf(logs_dir, sizeof(logs_dir), "%s/logs", L->data_dir);
	if (mkdir(logs_dir, 0700) < 0 && errno != EEXIST)
		return -errno;
	snprintf(logs_dir, sizeof(logs_dir), "%s/logs/apps", L->data_dir);
	if (mkdir(logs_dir, 0700) < 0 && errno != EEXIST)
		return -errno;
	if ((r = store_app_foreach(L->db, load_one, NULL)) < 0)
		return r;
	/* started from the loop, once the launcher answers */
	return event_base_once(L->base, -1, EV_TIMEOUT, autostart_cb, NULL, &now) < 0 ? -ENOMEM : 0;
}

void apps_shutdown(void)
{
	struct app *a;
	stopping = true;
	LIST_FOREACH(a, &apps, entry)
		timer_clear(a);
}

/* ---- the wire -------------------------------------------------------------------------- */

int apps_check(const struct msg_APP_PUT *in, char *reason, size_t sz)
{
	uint32_t m = in->app_mask;
	if (!apps_name_valid(in->app)) {
		snprintf(reason, sz, "name: 1..%u of [a-z0-9_.-], starting with a letter or digit",
		         PROTO_APP_NAME_MAX);
		return -EINVAL;
	}
	if (in->create && !(m & APPF_COMMAND)) {
		snprintf(reason, sz, "command: required");
		return -EINVAL;
	}
	if ((m & APPF_COMMAND) && (!in->command[0] || strlen(in->command) > PROTO_APP_CMD_MAX)) {
		snprintf(reason, sz, "command: 1..%u bytes", PROTO_APP_CMD_MAX);
		return -EINVAL;
	}
	if ((m & APPF_PORT) && (in->port == 0 || in->port > 65535)) {
		snprintf(reason, sz, "port: 1..65535");
		return -EINVAL;
	}
	if ((m & APPF_STARTSECS) && in->startsecs > APPS_STARTSECS_MAX) {
		snprintf(reason, sz, "startsecs: at most %u", APPS_STARTSECS_MAX);
		return -EINVAL;
	}
	if ((m & APPF_STARTRETRIES) && in->startretries > APPS_STARTRETRIES_MAX) {
		snprintf(reason, sz, "startretries: at most %u", APPS_STARTRETRIES_MAX);
		return -EINVAL;
	}
	if ((m & APPF_STOPWAITSECS) && in->stopwaitsecs > APPS_STOPWAITSECS_MAX) {
		snprintf(reason, sz, "stopwaitsecs: at most %u", APPS_STOPWAITSECS_MAX);
		return -EINVAL;
	}
	if ((m & APPF_STOPSIGNAL) && !procs_signal_allowed((int)in->stopsignal)) {
		snprintf(reason, sz, "stopsignal: not one of the signals sbx sends");
		return -EINVAL;
	}
	if (m & APPF_EXITCODES)
		for (uint32_t i = 0; i < in->exitcodes.n; i++)
			if (in->exitcodes.v[i] > 255) {
				snprintf(reason, sz, "exitcodes: each 0..255");
				return -EINVAL;
			}
	return 0;
}

static void conf_apply(struct app_conf *c, const struct msg_APP_PUT *in)
{
	uint32_t m = in->app_mask;
	if (m & APPF_COMMAND) {
		char *cmd = strdup(in->command);
		if (cmd) {
			free(c->command);
			c->command = cmd;
		}
	}
	if (m & APPF_PORT)
		c->port = in->port;
	if (m & APPF_AUTOSTART)
		c->autostart = in->autostart;
	if (m & APPF_AUTORESTART)
		c->autorestart = in->autorestart;
	if (m & APPF_STARTSECS)
		c->startsecs = in->startsecs;
	if (m & APPF_STARTRETRIES)
		c->startretries = in->startretries;
	if (m & APPF_STOPSIGNAL)
		c->stopsignal = in->stopsignal;
	if (m & APPF_STOPWAITSECS)
		c->stopwaitsecs = in->stopwaitsecs;
	if (m & APPF_EXITCODES) {
		proto_u32v_clear(&c->exitcodes);
		for (uint32_t i = 0; i < in->exitcodes.n; i++)
			proto_u32v_push(&c->exitcodes, in->exitcodes.v[i]);
	}
}

static void send_app(struct proto_chan *ch, uint32_t id, const struct app *a)
{
	struct msg_APP_REP rep = { 0 };
	char why[PROTO_STR_MAX / 4] = "", dir[PATH_MAX] = "";
	struct sandbox sb;

	if (store_sandbox_get(apps_L->db, a->c.sandbox_id, &sb) == 0) {
		snprintf(dir, sizeof(dir), "%s", sb.workdir);
		sandbox_clear(&sb);
	}
	rep.app = (char *)a->c.name;
	rep.sandbox_id = (char *)a->c.sandbox_id;
	rep.command = a->c.command;
	rep.port = a->c.port;
	rep.dir = dir;
	rep.autostart = a->c.autostart;
	rep.autorestart = a->c.autorestart;
	rep.startsecs = a->c.startsecs;
	rep.startretries = a->c.startretries;
	rep.exitcodes = a->c.exitcodes;
	rep.stopsignal = a->c.stopsignal;
	rep.stopwaitsecs = a->c.stopwaitsecs;
	rep.created_at = a->c.created_at;
	rep.state = a->state;
	rep.start_s = a->start_s;
	rep.stop_s = a->stop_s;
	rep.now_s = now_unix_s();
	rep.has_exit = a->has_exit;
	rep.exit_status = a->exit_status;
	rep.spawnerr = (char *)a->spawnerr;
	rep.starts = a->starts;
	rep.cap_eff = rep.cgroup = NULL;
	if (a->state == APP_RUNNING || a->state == APP_STARTING || a->state == APP_STOPPING)
		app_confinement(a, &rep, why, sizeof(why));
	char *cap = rep.cap_eff, *cg = rep.cgroup; /* strdup'd or NULL */
	rep.unconfined_why = why;
	rep.cap_eff = cap ? cap : (char *)"";
	rep.cgroup = cg ? cg : (char *)"";
	rep.note = (char *)"";
	proto_chan_send(ch, MSG_APP_REP, id, &rep, -1);
	free(cap);
	free(cg);
	proto_strv_clear(&rep.namespaces);
	proto_u32v_clear(&rep.listening);
}

static struct app *load_app(struct proto_chan *ch, uint32_t id, const char *name)
{
	struct app *a;
	if (!apps_name_valid(name)) {
		reply_err(ch, id, PERR_INVALID_ARGUMENT, "app name: 1..%u of [a-z0-9_.-]", PROTO_APP_NAME_MAX);
		return NULL;
	}
	if (!(a = app_find(name)))
		reply_err(ch, id, PERR_NOT_FOUND, "no app %s", name);
	return a;
}

static unsigned app_count(void)
{
	struct app *a;
	unsigned n = 0;
	LIST_FOREACH(a, &apps, entry)
		n += !a->gone;
	return n;
}

void apps_h_put(struct proto_chan *ch, const struct proto_hdr *h, void *m, int fd, void *arg)
{
	struct msg_APP_PUT *in = m;
	char reason[SANDBOX_REASON_MAX];
	struct app *a;
	int r;

	if ((r = apps_check(in, reason, sizeof(reason))) < 0) {
		reply_err(ch, h->id, PERR_INVALID_ARGUMENT, "%s", reason);
		return;
	}
	if (!in->create) {
		struct app_conf c = { 0 };
		if (!(a = load_app(ch, h->id, in->app)))
			return;
		if (in->set_mask) {
			reply_err(ch, h->id, PERR_INVALID_ARGUMENT,
			          "an app's fence is its sandbox %s: change it with PATCH /sandboxes/%s",
			          a->c.sandbox_id, a->c.sandbox_id);
			return;
		}
		c = a->c;
		c.command = strdup(a->c.command);
		c.exitcodes = (struct proto_u32v){ 0 };
		for (uint32_t i = 0; i < a->c.exitcodes.n; i++)
			proto_u32v_push(&c.exitcodes, a->c.exitcodes.v[i]);
		conf_apply(&c, in);
		if (!c.command || (r = store_app_update(apps_L->db, &c)) < 0) {
			app_conf_clear(&c);
			reply_err(ch, h->id, PERR_INTERNAL, "updating the app: %s", strerror(c.command ? -r : ENOMEM));
			return;
		}
		app_conf_clear(&a->c);
		a->c = c; /* takes effect at the next start */
		send_app(ch, h->id, a);
		return;
	}
	if (app_find(in->app)) {
		reply_err(ch, h->id, PERR_CONFLICT, "an app named \"%s\" already exists", in->app);
		return;
	}
	if (app_count() >= APPS_MAX) {
		reply_err(ch, h->id, PERR_CONFLICT, "no room for another app (at most %u)", APPS_MAX);
		return;
	}
	/* the fence: a sandbox of its own, "app:NAME"; the app's port is one it listens on */
	struct sandbox_spec spec;
	struct sandbox s;
	char sname[PROTO_APP_NAME_MAX + 8];
	bool have_port = false;
	SANDBOX_SPEC_FROM(&spec, in);
	snprintf(sname, sizeof(sname), "app:%s", in->app);
	spec.name = sname;
	for (uint32_t i = 0; i < in->ports_listen.n; i++)
		have_port |= in->ports_listen.v[i] == in->port;
	if ((in->app_mask & APPF_PORT) && !have_port) {
		if (in->ports_listen.n >= PROTO_LIST_MAX) {
			reply_err(ch, h->id, PERR_INVALID_ARGUMENT, "ports.listen: too many entries");
			return;
		}
		proto_u32v_push(&in->ports_listen, in->port);
		spec.ports_listen = in->ports_listen;
	}
	if ((r = sandbox_spec_check(&spec, SBXF_ALL_, reason, sizeof(reason))) < 0 ||
	    (r = sandbox_net_check(&SANDBOX_NET_OF(&spec), apps_L->api_port, reason, sizeof(reason))) < 0) {
		reply_err(ch, h->id, PERR_INVALID_ARGUMENT, "%s", reason);
		return;
	}
	if ((r = sandbox_mounts_resolve(apps_L, &in->mounts, reason, sizeof(reason))) < 0 ||
	    (r = sandbox_read_paths_check(apps_L, &in->read_paths, reason, sizeof(reason))) < 0) {
		reply_err(ch, h->id, r == -EPERM ? PERR_FORBIDDEN : PERR_INVALID_ARGUMENT, "%s", reason);
		return;
	}
	spec.mounts = in->mounts;
	if ((r = sandbox_create(apps_L, &spec, &s)) < 0) {
		reply_err(ch, h->id, r == -EEXIST || r == -ENOSPC ? PERR_CONFLICT
		                     : r == -EDQUOT             ? PERR_INSUFFICIENT_STORAGE
		                                                : PERR_INTERNAL,
		          "creating the app's sandbox %s: %s", sname,
		          r == -EEXIST ? "a sandbox of that name exists" : strerror(-r));
		return;
	}
	struct app_conf c = { .autorestart = APP_RESTART_UNEXPECTED,
		              .startsecs = APPS_DEFAULT_STARTSECS,
		              .startretries = APPS_DEFAULT_STARTRETRIES,
		              .stopsignal = APPS_DEFAULT_STOPSIGNAL,
		              .stopwaitsecs = APPS_DEFAULT_STOPWAITSECS,
		              .created_at = now_unix_s() };
	snprintf(c.name, sizeof(c.name), "%s", in->app);
	snprintf(c.sandbox_id, sizeof(c.sandbox_id), "%s", s.id);
	proto_u32v_push(&c.exitcodes, 0);
	conf_apply(&c, in);
	if (!c.command || (r = store_app_insert(apps_L->db, &c)) < 0 || !(a = app_new(&c))) {
		reply_err(ch, h->id, PERR_INTERNAL, "recording the app: %s",
		          strerror(!c.command || r == 0 ? ENOMEM : -r));
		store_app_delete(apps_L->db, c.name);
		if (dispatch_sandbox_remove(&s, NULL, NULL) < 0)
			log_warnx("app %s: its sandbox %s is left behind", c.name, s.id);
		app_conf_clear(&c);
		sandbox_clear(&s);
		return;
	}
	log_info("app %s created (sandbox %s, jail uid %u)", c.name, s.id, s.jail_uid);
	app_conf_clear(&c);
	sandbox_clear(&s);
	if (a->c.autostart)
		app_spawn(a);
	send_app(ch, h->id, a);
}

void apps_h_get(struct proto_chan *ch, const struct proto_hdr *h, void *m, int fd, void *arg)
{
	struct msg_APP_GET *in = m;
	struct app *a = load_app(ch, h->id, in->app);
	if (a)
		send_app(ch, h->id, a);
}

static int by_name(const void *x, const void *y)
{
	return strcmp((*(struct app *const *)x)->c.name, (*(struct app *const *)y)->c.name);
}

void apps_h_list(struct proto_chan *ch, const struct proto_hdr *h, void *m, int fd, void *arg)
{
	struct app *a, *v[APPS_MAX];
	struct msg_LIST_END end = { 0 };
	size_t n = 0;
	LIST_FOREACH(a, &apps, entry)
		if (!a->gone && n < APPS_MAX)
			v[n++] = a;
	qsort(v, n, sizeof(v[0]), by_name); /* supervisorctl lists by name */
	for (size_t i = 0; i < n; i++)
		send_app(ch, h->id, v[i]);
	end.count = (uint32_t)n;
	proto_chan_send(ch, MSG_LIST_END, h->id, &end, -1);
}

static void app_sandbox_gone(int err, void *arg)
{
	if (err < 0)
		log_warnx("an app's sandbox directory: %s", strerror(-err));
}

void apps_h_delete(struct proto_chan *ch, const struct proto_hdr *h, void *m, int fd, void *arg)
{
	struct msg_APP_DELETE *in = m;
	struct app *a = load_app(ch, h->id, in->app);
	struct msg_OK ok;
	struct sandbox s;
	int r;

	if (!a)
		return;
	if (a->state == APP_STARTING || a->state == APP_RUNNING || a->state == APP_STOPPING) {
		reply_err(ch, h->id, PERR_CONFLICT, "app %s is %s: stop it first", a->c.name,
		          state_names[a->state]);
		return;
	}
	if ((r = store_app_delete(apps_L->db, a->c.name)) < 0) {
		reply_err(ch, h->id, PERR_INTERNAL, "deleting the app: %s", strerror(-r));
		return;
	}
	if (store_sandbox_get(apps_L->db, a->c.sandbox_id, &s) == 0) {
		if ((r = dispatch_sandbox_remove(&s, app_sandbox_gone, NULL)) < 0)
			log_warnx("app %s: removing its sandbox %s: %s", a->c.name, s.id, strerror(-r));
		sandbox_clear(&s);
	}
	log_remove(a);
	log_info("app %s deleted", a->c.name);
	ok.id = a->c.name;
	proto_chan_send(ch, MSG_OK, h->id, &ok, -1);
	app_free(a);
}

void apps_h_ctl(struct proto_chan *ch, const struct proto_hdr *h, void *m, int fd, void *arg)
{
	struct msg_APP_CTL *in = m;
	struct app *a = load_app(ch, h->id, in->app);
	int r = 0;

	if (!a)
		return;
	if (stopping) {
		reply_err(ch, h->id, PERR_CONFLICT, "the daemon is shutting down");
		return;
	}
	switch (in->op) {
	case APP_OP_START:
		r = app_start(a);
		break;
	case APP_OP_STOP:
		r = app_stop(a);
		break;
	case APP_OP_RESTART:
		if (a->state == APP_STARTING || a->state == APP_RUNNING || a->state == APP_STOPPING) {
			a->restart_after_stop = true;
			r = app_stop(a);
		} else {
			r = app_start(a);
		}
		break;
	}
	if (r == -EALREADY) {
		reply_err(ch, h->id, PERR_CONFLICT, "app %s is already started (%s)", a->c.name,
		          state_names[a->state]);
		return;
	}
	if (r == -ESRCH) {
		reply_err(ch, h->id, PERR_CONFLICT, "app %s is not running (%s)", a->c.name,
		          state_names[a->state]);
		return;
	}
	send_app(ch, h->id, a);
}

void apps_h_log(struct proto_chan *ch, const struct proto_hdr *h, void *m, int fd, void *arg)
{
	struct msg_APP_LOG *in = m;
	struct app *a = load_app(ch, h->id, in->app);
	struct msg_APP_LOG_REP rep = { 0 };
	char p[PATH_MAX];
	_cleanup_close_ int lfd = -1, mfd = -1;
	struct stat st;
	uint64_t want;
	char *buf = NULL;
	ssize_t n = 0;

	if (!a)
		return;
	if (a->follow && run_stream_over(a->follow))
		follow_end(a);
	if (in->follow && in->follow != h->id) {
		reply_err(ch, h->id, PERR_INVALID_ARGUMENT, "follow: the request's own id");
		return;
	}
	if (in->follow && a->follow) {
		reply_err(ch, h->id, PERR_CONFLICT, "app %s's log already has a follower", a->c.name);
		return;
	}
	if (in->follow && !a->run_id[0]) {
		reply_err(ch, h->id, PERR_CONFLICT, "app %s is not running: nothing to follow (%s)",
		          a->c.name, state_names[a->state]);
		return;
	}
	want = in->tail && in->tail < PROTO_APP_LOG_MAX ? in->tail : PROTO_APP_LOG_MAX;
	log_path(a, (int)in->stream, 0, p, sizeof(p));
	/* no log yet (nothing written so far) reads as empty */
	if ((lfd = open(p, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) < 0 && errno != ENOENT) {
		reply_err(ch, h->id, PERR_INTERNAL, "reading the log: %s", strerror(errno));
		return;
	}
	if (lfd >= 0 && fstat(lfd, &st) < 0) {
		reply_err(ch, h->id, PERR_INTERNAL, "reading the log: %s", strerror(errno));
		return;
	}
	rep.size = lfd >= 0 ? (uint64_t)st.st_size : 0;
	if (want > rep.size)
		want = rep.size;
	if (want && (!(buf = malloc(want)) ||
	             (n = pread(lfd, buf, want, (off_t)(rep.size - want))) < 0)) {
		free(buf);
		reply_err(ch, h->id, PERR_INTERNAL, "reading the log: %s", strerror(buf ? errno : ENOMEM));
		return;
	}
	rep.length = (uint64_t)n;
	if (in->follow) { /* what is there first, then the rest as it comes */
		struct pending *pend = pending_new(h->id);
		int e = pend ? run_stream_open(pend, in->follow, &a->follow) : -ENOMEM;
		if (e < 0) {
			free(pend);
			free(buf);
			reply_err(ch, h->id, e == -ENOSPC ? PERR_CONFLICT : PERR_INVALID_ARGUMENT,
			          "following the log: %s", strerror(-e));
			return;
		}
		a->follow_p = pend;
		a->follow_which = (int)in->stream;
		if (n)
			run_stream_output(NULL, in->stream ? RUN_STDERR : RUN_STDOUT, buf, (size_t)n, a->follow);
		free(buf);
		return;
	}
	if ((mfd = memfd_create("sbx-app-log", MFD_CLOEXEC)) < 0 || (n && write_all(mfd, buf, (size_t)n) < 0) ||
	    lseek(mfd, 0, SEEK_SET) < 0) {
		free(buf);
		reply_err(ch, h->id, PERR_INTERNAL, "passing the log: %s", strerror(errno));
		return;
	}
	free(buf);
	proto_chan_send(ch, MSG_APP_LOG_REP, h->id, &rep, mfd);
}
