/* sbxd's two children as explicit state machines, s6-supervise style: a [state][event]
 * table of actions; every change of a child's life goes through children_event(). */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cleanup.h"
#include "log.h"
#include "notify.h"
#include "sbxd.h"
#include "util.h"

#define CHILD_ARGV_MAX 24 /* the longest argv below, with room */

static const struct {
	const char *name;
	unsigned role;
} child_defs[CHILD_N_] = {
	[CHILD_LAUNCHER] = { "sbx-launcher", ROLE_LAUNCHER },
	[CHILD_API] = { "sbx-api", ROLE_API },
};

const char *child_state_name(enum child_state s)
{
	static const char *const names[CS_N_] = {
		[CS_STARTING] = "STARTING", [CS_RUNNING] = "RUNNING",   [CS_EXITED] = "EXITED",
		[CS_BACKOFF] = "BACKOFF",   [CS_STOPPING] = "STOPPING", [CS_STOPPED] = "STOPPED",
	};
	return (unsigned)s < CS_N_ ? names[s] : "?";
}

static const char *child_event_name(enum child_event e)
{
	static const char *const names[CE_N_] = {
		[CE_HELLO] = "hello", [CE_CHAN_DOWN] = "channel-down", [CE_EXIT] = "exit",
		[CE_TIMER] = "timer", [CE_STOP] = "stop",
	};
	return (unsigned)e < CE_N_ ? names[e] : "?";
}

static struct child *other_child(struct child *c) { return &c->d->child[1 - c->id]; }

static bool child_alive(const struct child *c)
{
	return c->pid > 0 && (c->state == CS_STARTING || c->state == CS_RUNNING);
}

static void timer_arm(struct child *c, uint32_t ms)
{
	struct timeval tv = { .tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000 };
	evtimer_add(c->timer, &tv);
}

static void describe_status(int st, char *buf, size_t bufsz)
{
	if (WIFEXITED(st))
		snprintf(buf, bufsz, "exited with status %d", WEXITSTATUS(st));
	else if (WIFSIGNALED(st))
		snprintf(buf, bufsz, "killed by signal %d (%s)%s", WTERMSIG(st), strsignal(WTERMSIG(st)),
		         WCOREDUMP(st) ? ", core dumped" : "");
	else
		snprintf(buf, bufsz, "changed state 0x%x", st);
}

/* ---- what the children may tell us ----------------------------------------------------- */

static void on_error(struct proto_chan *ch, const struct proto_hdr *h, void *msg, int fd,
                     void *arg)
{
	struct child *c = arg;
	struct msg_ERROR *e = msg;
	log_warnx("%s reports error %u (request %u): %s", c->name, e->code, h->id, e->message);
}

static void on_pgrp_add(struct proto_chan *ch, const struct proto_hdr *h, void *msg, int fd,
                        void *arg)
{
	struct child *c = arg;
	struct sbxd *d = c->d;
	struct msg_PGRP_ADD *a = msg;
	/* groups that must never be signalled, whatever the launcher says */
	pid_t protect[] = { d->self_pid, d->self_pgid, d->child[CHILD_LAUNCHER].pid,
		            d->child[CHILD_API].pid };
	int r = mirror_add(&d->mirror, a, protect, sizeof(protect) / sizeof(protect[0]));

	if (r == -ENOSPC)
		log_warnx("group mirror full (%u): pgid %u of %s not mirrored", MIRROR_MAX, a->pgid,
		          a->sandbox_id);
	else if (r < 0)
		log_warnx("refusing to mirror pgid %u / jail pid %u: not a group sbxd may signal",
		          a->pgid, a->jail_pid);
	else
		log_debug("mirror: + pgid %u jail %u sandbox %s run %s (%zu live)", a->pgid,
		          a->jail_pid, a->sandbox_id, a->run_id, d->mirror.n);
}

static void on_pgrp_del(struct proto_chan *ch, const struct proto_hdr *h, void *msg, int fd,
                        void *arg)
{
	struct child *c = arg;
	struct msg_PGRP_DEL *m = msg;
	if (m->pgid > (uint32_t)INT32_MAX || mirror_del(&c->d->mirror, (pid_t)m->pgid) < 0)
		log_debug("mirror: - pgid %u was not mirrored", m->pgid);
	else
		log_debug("mirror: - pgid %u (%zu live)", m->pgid, c->d->mirror.n);
}

static void on_status_req(struct proto_chan *ch, const struct proto_hdr *h, void *msg, int fd,
                          void *arg)
{
	struct child *c = arg;
	struct sbxd *d = c->d;
	struct msg_STATUS_REP rep = {
		.sbxd_pid = (uint32_t)d->self_pid,
		.launcher_pid = (uint32_t)d->child[CHILD_LAUNCHER].pid,
		.api_pid = (uint32_t)d->child[CHILD_API].pid,
		.launcher_restarts = d->child[CHILD_LAUNCHER].restarts,
		.api_restarts = d->child[CHILD_API].restarts,
		.started_at = d->started_at,
		.live_groups = (uint32_t)d->mirror.n,
	};
	int r = proto_chan_send(ch, MSG_STATUS_REP, h->id, &rep, -1);
	if (r < 0) {
		/* a full queue means the API asks without reading: rate-limit like rejections */
		c->rejected++;
		if ((c->rejected & (c->rejected - 1)) == 0)
			log_warnx("STATUS_REP to %s: %s (%u so far)", c->name, strerror(-r),
			          c->rejected);
	}
}

static const struct proto_dispatch launcher_table[] = {
	{ MSG_ERROR, ROLE_LAUNCHER, on_error },
	{ MSG_PGRP_ADD, ROLE_LAUNCHER, on_pgrp_add },
	{ MSG_PGRP_DEL, ROLE_LAUNCHER, on_pgrp_del },
};
static const struct proto_dispatch api_table[] = {
	{ MSG_ERROR, ROLE_API, on_error },
	{ MSG_STATUS_REQ, ROLE_API, on_status_req },
};

/* Never frees the channel here: this can run inside proto_chan_send() of our own. The
 * dead channel is inert and is freed when the child is reaped. */
static void on_chan_event(struct proto_chan *ch, enum proto_chan_event ev, const char *detail,
                          void *arg)
{
	struct child *c = arg;
	switch (ev) {
	case PCHAN_READY:
		children_event(c, CE_HELLO);
		break;
	case PCHAN_REJECTED:
		/* a hostile API could send these in a loop: log the 1st, 2nd, 4th, 8th, ... */
		c->rejected++;
		if ((c->rejected & (c->rejected - 1)) == 0)
			log_warnx("%s (pid %d) sent a message sbxd refuses: %s (%u so far)", c->name,
			          (int)c->pid, detail, c->rejected);
		break;
	case PCHAN_REPLACED:
		log_warnx("to %s: %s; an ERROR was sent instead", c->name, detail);
		break;
	case PCHAN_FRAMING:
	case PCHAN_CLOSED:
		if (!c->d->shutting_down)
			log_warnx("%s (pid %d) channel %s: %s", c->name, (int)c->pid,
			          ev == PCHAN_FRAMING ? "broke framing" : "closed", detail);
		c->chan_down = true;
		children_event(c, CE_CHAN_DOWN);
		break;
	}
}

/* ---- spawning ----------------------------------------------------------------------- */

/* Give the fresh launcher<->api end to the other child: over its channel when it runs,
 * otherwise kept for its next start. Takes ownership of fd. */
static void hand_peer_end(struct child *c, int fd)
{
	struct child *o = other_child(c);
	if (child_alive(o) && o->chan && !o->chan_down) {
		struct msg_PEER_FD m = { .role = c->role };
		int r = proto_chan_send(o->chan, MSG_PEER_FD, 0, &m, fd); /* fd is consumed */
		if (r < 0)
			log_warnx("PEER_FD to %s: %s", o->name, strerror(-r));
		else
			log_info("gave %s a new channel to %s", o->name, c->name);
		return;
	}
	if (o->pending_peer >= 0)
		close(o->pending_peer);
	o->pending_peer = fd;
}

static int build_argv(struct child *c, char **argv)
{
	const struct sbxd_config *cfg = &c->d->cfg;
	int n = 0;
	argv[n++] = c->path;
	argv[n++] = (char *)"--data-dir";
	argv[n++] = (char *)cfg->data_dir;
	if (c->id == CHILD_API) {
		argv[n++] = (char *)"--listen";
		argv[n++] = (char *)cfg->listen;
	}
	argv[n++] = (char *)"--log-level";
	argv[n++] = (char *)cfg->log_level;
	if (c->id == CHILD_API && cfg->no_auth)
		argv[n++] = (char *)"--no-auth";
	if (c->id == CHILD_API) {
		snprintf(c->deadline_arg, sizeof(c->deadline_arg), "%u", cfg->call_deadline_s);
		argv[n++] = (char *)"--call-deadline";
		argv[n++] = c->deadline_arg;
	}
	/* sbx-api parses --listen with the same listen_parse(): it must be told what sbxd
	 * allowed, or it refuses the address and is restarted for ever */
	if (c->id == CHILD_API && cfg->allow_remote)
		argv[n++] = (char *)"--allow-remote";
	if (c->id == CHILD_LAUNCHER && cfg->no_warm)
		argv[n++] = (char *)"--no-warm";
	if (c->id == CHILD_LAUNCHER && cfg->bwrap[0]) {
		argv[n++] = (char *)"--bwrap";
		argv[n++] = (char *)cfg->bwrap;
	}
	/* the launcher refuses the API's own port as a sandbox's loopback port */
	if (c->id == CHILD_LAUNCHER) {
		argv[n++] = (char *)"--api-listen";
		argv[n++] = (char *)cfg->listen;
	}
	if (c->id == CHILD_LAUNCHER && cfg->hosts[0]) {
		argv[n++] = (char *)"--hosts";
		argv[n++] = (char *)cfg->hosts;
	}
	if (c->id == CHILD_LAUNCHER && cfg->docker[0]) {
		argv[n++] = (char *)"--docker";
		argv[n++] = (char *)cfg->docker;
	}
	argv[n] = NULL;
	return n;
}

static int child_spawn(struct child *c)
{
	_cleanup_close_ int parent_ours = -1, parent_theirs = -1, peer_theirs = -1;
	_cleanup_close_ int peer_other = -1;
	int sp[2];
	char *argv[CHILD_ARGV_MAX];
	sigset_t all, old;
	pid_t pid;
	int r;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0)
		return -errno;
	parent_ours = sp[0];
	parent_theirs = sp[1];
	if (c->pending_peer >= 0) {
		peer_theirs = steal_fd(&c->pending_peer);
	} else {
		if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0)
			return -errno;
		peer_theirs = sp[0];
		peer_other = sp[1];
	}
	build_argv(c, argv);
	/* with signals blocked across fork, none of them runs our (libevent's) handler
	 * in the child before exec resets them */
	sigfillset(&all);
	sigprocmask(SIG_BLOCK, &all, &old);
	r = spawn_role(argv, c->d->child_env, parent_theirs, peer_theirs, &pid);
	sigprocmask(SIG_SETMASK, &old, NULL);
	if (r < 0)
		return r;

	c->pid = pid;
	c->started_ms = now_ms();
	c->chan_down = false;
	c->chan = proto_chan_new(c->d->base, parent_ours, ROLE_SBXD, c->role,
	                         c->id == CHILD_LAUNCHER ? launcher_table : api_table,
	                         c->id == CHILD_LAUNCHER
	                                 ? sizeof(launcher_table) / sizeof(launcher_table[0])
	                                 : sizeof(api_table) / sizeof(api_table[0]),
	                         on_chan_event, c);
	if (c->chan) {
		(void)steal_fd(&parent_ours); /* the channel owns it now */
	} else {
		/* without a channel it cannot be supervised: let it die and go through backoff */
		c->chan_down = true;
		kill(pid, SIGKILL);
	}
	if (peer_other >= 0)
		hand_peer_end(c, steal_fd(&peer_other));
	return 0;
}

/* ---- the actions ------------------------------------------------------------------- */

static void act_ignore(struct child *c) {}

static void act_spawn(struct child *c)
{
	int r;
	if (c->started_ms) /* not the first start */
		c->restarts++;
	if ((r = child_spawn(c)) < 0) {
		/* nothing ran: count it as an instant exit so the backoff still grows */
		log_warnx("cannot start %s: %s", c->name, strerror(-r));
		c->started_ms = now_ms();
		c->backoff_ms = c->backoff_ms ? c->backoff_ms * 2 : SBXD_BACKOFF_MIN_MS;
		if (c->backoff_ms > SBXD_BACKOFF_MAX_MS)
			c->backoff_ms = SBXD_BACKOFF_MAX_MS;
		c->state = CS_BACKOFF;
		timer_arm(c, c->backoff_ms);
		return;
	}
	log_info("started %s (pid %d)%s", c->name, (int)c->pid,
	         c->restarts ? ", restart" : "");
	c->state = CS_STARTING;
	timer_arm(c, SBXD_HELLO_TIMEOUT_MS);
}

static void act_running(struct child *c)
{
	struct sbxd *d = c->d;
	char msg[192];
	bool all = true;
	evtimer_del(c->timer);
	c->state = CS_RUNNING;
	log_info("%s (pid %d) is running", c->name, (int)c->pid);
	for (int i = 0; i < CHILD_N_; i++)
		all &= d->child[i].state == CS_RUNNING;
	if (!all || d->shutting_down)
		return;
	/* the service manager hears once that sbxd is ready, and after that each recovery */
	snprintf(msg, sizeof(msg), "%sSTATUS=serving; restarts: sbx-launcher %u, sbx-api %u\n",
	         d->notified_ready ? "" : "READY=1\n", d->child[CHILD_LAUNCHER].restarts,
	         d->child[CHILD_API].restarts);
	if (notify_send(msg) < 0)
		log_warnx("telling the service manager we are ready failed");
	d->notified_ready = true;
}

/* A child that broke or closed its channel cannot be supervised: kill it; the exit
 * then takes the ordinary restart path. */
static void act_kill(struct child *c)
{
	if (c->pid > 0)
		kill(c->pid, SIGKILL);
}

static void act_hello_timeout(struct child *c)
{
	log_warnx("%s (pid %d) sent no HELLO within %u ms: killing it", c->name, (int)c->pid,
	          SBXD_HELLO_TIMEOUT_MS);
	act_kill(c);
}

/* What every exit does, shutdown or not. */
static void child_gone(struct child *c)
{
	struct child *o = other_child(c);
	evtimer_del(c->timer);
	proto_chan_free(c->chan);
	c->chan = NULL;
	c->pid = 0;
	/* the other child's stashed end was paired with the one this child held */
	if (o->pending_peer >= 0) {
		close(o->pending_peer);
		o->pending_peer = -1;
	}
}

static void act_exited(struct child *c)
{
	struct sbxd *d = c->d;
	uint64_t up = now_ms() - c->started_ms;
	char why[128];

	describe_status(c->last_status, why, sizeof(why));
	c->state = CS_EXITED;
	log_warnx("%s (pid %d) %s after %llu ms", c->name, (int)c->pid, why,
	          (unsigned long long)up);
	child_gone(c);
	if (c->id == CHILD_LAUNCHER) {
		/* a dead launcher must not leave orphans: every group it started dies now, and
		 * so does anything it spawned without reporting it yet (its children are ours
		 * now, as subreaper) */
		pid_t keep[] = { d->child[CHILD_API].pid };
		size_t n = d->mirror.n, alive = mirror_signal_all(&d->mirror, SIGKILL);
		size_t orphans = orphans_kill(d->self_pid, d->self_pgid, keep, 1);
		if (n || orphans)
			log_warnx("killed %zu of %zu mirrored process groups and %zu unreported "
			          "orphans the launcher left behind",
			          alive, n, orphans);
		mirror_clear(&d->mirror);
	}
	if (up >= SBXD_BACKOFF_RESET_MS)
		c->backoff_ms = 0;
	c->backoff_ms = c->backoff_ms ? c->backoff_ms * 2 : SBXD_BACKOFF_MIN_MS;
	if (c->backoff_ms > SBXD_BACKOFF_MAX_MS)
		c->backoff_ms = SBXD_BACKOFF_MAX_MS;
	log_info("restarting %s in %u ms", c->name, c->backoff_ms);
	c->state = CS_BACKOFF;
	timer_arm(c, c->backoff_ms);
}

static void act_stop(struct child *c)
{
	evtimer_del(c->timer);
	if (c->pid > 0) {
		kill(c->pid, SIGTERM);
		c->state = CS_STOPPING;
	} else {
		c->state = CS_STOPPED;
	}
}

static void act_stopped(struct child *c)
{
	char why[128];
	describe_status(c->last_status, why, sizeof(why));
	log_info("%s (pid %d) %s", c->name, (int)c->pid, why);
	child_gone(c);
	c->state = CS_STOPPED;
}

typedef void (*child_action_fn)(struct child *c);

/* [state][event]: NULL never happens by construction and is logged if it does. */
static const child_action_fn child_fsm[CS_N_][CE_N_] = {
	/*               HELLO         CHAN_DOWN   EXIT          TIMER              STOP */
	[CS_STARTING] = { act_running, act_kill, act_exited, act_hello_timeout, act_stop },
	[CS_RUNNING] = { act_ignore, act_kill, act_exited, act_ignore, act_stop },
	[CS_EXITED] = { NULL, NULL, NULL, NULL, act_stop },
	[CS_BACKOFF] = { act_ignore, act_ignore, NULL, act_spawn, act_stop },
	[CS_STOPPING] = { act_ignore, act_ignore, act_stopped, act_ignore, act_ignore },
	[CS_STOPPED] = { act_ignore, act_ignore, NULL, act_ignore, act_ignore },
};

void children_event(struct child *c, enum child_event ev)
{
	child_action_fn fn = child_fsm[c->state][ev];
	enum child_state before = c->state;

	if (!fn) {
		log_warnx("%s: event %s in state %s has no action", c->name, child_event_name(ev),
		          child_state_name(c->state));
		return;
	}
	fn(c);
	if (c->state != before)
		log_debug("%s: %s --%s--> %s", c->name, child_state_name(before),
		          child_event_name(ev), child_state_name(c->state));
}

/* ---- set-up, reaping ----------------------------------------------------------------- */

static void child_timer_cb(evutil_socket_t fd, short what, void *arg)
{
	children_event(arg, CE_TIMER);
}

static int env_add(char **env, size_t *n, size_t max, const char *name, const char *value)
{
	char *s;
	if (*n + 1 >= max)
		return -E2BIG;
	if (asprintf(&s, "%s=%s", name, value) < 0)
		return -ENOMEM;
	env[(*n)++] = s;
	env[*n] = NULL;
	return 0;
}

int children_init(struct sbxd *d)
{
	/* sanitizer settings pass through so test runs keep their options; nothing else
	 * of sbxd's environment reaches a child (DESIGN.md §4) */
	/* and JOURNAL_STREAM, so children that share sbxd's stderr log with priorities too */
	static const char *const passthrough[] = { "ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS",
		                                   "JOURNAL_STREAM" };
	const size_t envmax = sizeof(d->child_env) / sizeof(d->child_env[0]);
	const char *path = getenv("PATH");
	char dir[SBXD_PATH_MAX];
	size_t n = 0;
	int r;

	if (d->cfg.libexec[0]) {
		snprintf(dir, sizeof(dir), "%s", d->cfg.libexec);
	} else if ((r = self_exe_dir(dir, sizeof(dir))) < 0) {
		log_warnx("cannot find sbxd's own directory: %s", strerror(-r));
		return r;
	}
	d->child_env[0] = NULL;
	if ((r = env_add(d->child_env, &n, envmax, "PATH",
	                 path && *path ? path : "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")) < 0)
		return r;
	for (size_t i = 0; i < sizeof(passthrough) / sizeof(passthrough[0]); i++) {
		const char *v = getenv(passthrough[i]);
		if (v && (r = env_add(d->child_env, &n, envmax, passthrough[i], v)) < 0)
			return r;
	}
	for (int i = 0; i < CHILD_N_; i++) {
		struct child *c = &d->child[i];
		c->id = (enum child_id)i;
		c->name = child_defs[i].name;
		c->role = child_defs[i].role;
		c->d = d;
		c->pending_peer = -1;
		c->state = CS_BACKOFF; /* the first start is a restart timer that fires at once */
		if (snprintf(c->path, sizeof(c->path), "%s/%s", dir, c->name) >= (int)sizeof(c->path))
			return -ENAMETOOLONG;
		if (access(c->path, X_OK) < 0) {
			r = -errno;
			log_warnx("%s: not an executable (%s); use --libexec DIR", c->path, strerror(-r));
			return r;
		}
		if (!(c->timer = evtimer_new(d->base, child_timer_cb, c)))
			return -ENOMEM;
	}
	return 0;
}

void children_start_all(struct sbxd *d)
{
	for (int i = 0; i < CHILD_N_; i++)
		children_event(&d->child[i], CE_TIMER);
}

void children_reap(struct sbxd *d)
{
	for (;;) {
		int st;
		pid_t pid = waitpid(-1, &st, WNOHANG);
		bool ours = false;
		if (pid <= 0)
			break;
		for (int i = 0; i < CHILD_N_; i++) {
			struct child *c = &d->child[i];
			if (c->pid == pid) {
				c->last_status = st;
				children_event(c, CE_EXIT);
				ours = true;
			}
		}
		if (!ours) /* an orphan handed to us as subreaper */
			log_debug("reaped orphan pid %d", (int)pid);
	}
}

bool children_all_stopped(const struct sbxd *d)
{
	for (int i = 0; i < CHILD_N_; i++)
		if (d->child[i].state != CS_STOPPED)
			return false;
	return true;
}

void children_free(struct sbxd *d)
{
	for (int i = 0; i < CHILD_N_; i++) {
		struct child *c = &d->child[i];
		proto_chan_free(c->chan);
		c->chan = NULL;
		if (c->timer)
			event_free(c->timer);
		c->timer = NULL;
		if (c->pending_peer >= 0)
			close(c->pending_peer);
		c->pending_peer = -1;
	}
	for (char **e = d->child_env; *e; e++)
		free(*e);
	d->child_env[0] = NULL;
}
