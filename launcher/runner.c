/* A run from fork to the recorded result, as the [state][event] table of runner.h. The
 * event sources (pipe readers, timers, SIGCHLD) only turn what happened into an event;
 * runner_event() looks the pair up and runs the one action, so a run's life reads as the
 * table below. The backend (launcher/backend/) builds the argv and the child's last steps;
 * the registry (registry.c) holds the run's process groups. */
#include "runner.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <linux/openat2.h>
#include <linux/sched.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <event2/event.h>

#include "backend/backend.h"
#include "cleanup.h"
#include "disk.h"
#include "fence/cgroup.h"
#include "log.h"
#include "fence/netns_proxy.h"
#include "netproc.h"
#include "netrun.h"
#include "registry.h"
#include "sandbox.h"
#include "store.h"
#include "sysnotify.h"
#include "trace.h"
#include "util.h"

#define RUN_FSIZE_MAX   (1ull << 30)
#define RUN_NOFILE      1024u
#define RUN_CPU_SLACK_S 5u

/* ---- the table ----------------------------------------------------------------------- */

#define T(next, act) { RS_##next, RA_##act }
/* [state][event]; a pair not listed is {0, RA_FORBIDDEN}: refused by construction. */
static const struct runner_step run_fsm[RS_N_][RE_N_] = {
	[RS_SPAWNING] = {
		[RE_SPAWNED] = T(RUNNING, START),
	},
	[RS_RUNNING] = {
		[RE_STDIN_DONE] = T(RUNNING, NONE),
		[RE_OUT_EOF] = T(RUNNING, STREAM_EOF),
		[RE_ERR_EOF] = T(RUNNING, STREAM_EOF),
		[RE_EXITED] = T(DRAINING, REAPED),
		[RE_DEADLINE] = T(KILLING, TERM_DEADLINE),
		[RE_KILL_REQUESTED] = T(KILLING, TERM_REQUESTED),
	},
	[RS_KILLING] = {
		[RE_STDIN_DONE] = T(KILLING, NONE),
		[RE_OUT_EOF] = T(KILLING, STREAM_EOF),
		[RE_ERR_EOF] = T(KILLING, STREAM_EOF),
		[RE_EXITED] = T(DRAINING, REAPED),
		[RE_GRACE_EXPIRED] = T(KILLING, SIGKILL),
		[RE_KILL_REQUESTED] = T(KILLING, NONE),
	},
	[RS_DRAINING] = {
		[RE_STDIN_DONE] = T(DRAINING, NONE),
		[RE_OUT_EOF] = T(DRAINING, STREAM_EOF),
		[RE_ERR_EOF] = T(DRAINING, STREAM_EOF),
		[RE_OUTPUT_CLOSED] = T(DONE, COMPLETE),
		[RE_DRAIN_EXPIRED] = T(DONE, COMPLETE),
		[RE_KILL_REQUESTED] = T(DRAINING, SIGKILL),
	},
	[RS_DONE] = { { 0 } },
	[RS_WARM] = {
		[RE_RELEASED] = T(RUNNING, START),
		[RE_OUT_EOF] = T(WARM, STREAM_EOF),
		[RE_ERR_EOF] = T(WARM, STREAM_EOF),
		[RE_EXITED] = T(DONE, DISCARD),
		[RE_KILL_REQUESTED] = T(WARM, SIGKILL),
	},
};
#undef T

struct runner_step runner_next(enum run_state s, enum run_event e)
{
	if ((unsigned)s >= RS_N_ || (unsigned)e >= RE_N_)
		return (struct runner_step){ s, RA_FORBIDDEN };
	struct runner_step st = run_fsm[s][e];
	if (st.action == RA_FORBIDDEN)
		st.next = s;
	return st;
}

const char *runner_state_name(enum run_state s)
{
	static const char *const names[RS_N_] = {
		[RS_SPAWNING] = "SPAWNING", [RS_RUNNING] = "RUNNING", [RS_KILLING] = "KILLING",
		[RS_DRAINING] = "DRAINING", [RS_DONE] = "DONE",          [RS_WARM] = "WARM",
	};
	return (unsigned)s < RS_N_ ? names[s] : "?";
}

const char *runner_event_name(enum run_event e)
{
	static const char *const names[RE_N_] = {
		[RE_SPAWNED] = "spawned",         [RE_STDIN_DONE] = "stdin_done",
		[RE_OUT_EOF] = "out_eof",         [RE_ERR_EOF] = "err_eof",
		[RE_EXITED] = "exited",           [RE_DEADLINE] = "deadline",
		[RE_GRACE_EXPIRED] = "grace_expired", [RE_DRAIN_EXPIRED] = "drain_expired",
		[RE_KILL_REQUESTED] = "kill_requested", [RE_OUTPUT_CLOSED] = "output_closed",
		[RE_RELEASED] = "released",
	};
	return (unsigned)e < RE_N_ ? names[e] : "?";
}

/* ---- a run --------------------------------------------------------------------------- */

struct stream {
	struct run *run;
	enum run_stream which;
	struct event *ev;
	int fd;
	bool eof;
	struct capture cap;
};

struct run {
	LIST_ENTRY(run) entry;
	struct launcher *L;
	enum run_state state;
	const struct backend_ops *ops;
	enum isolation iso;
	struct sandbox sb;
	struct run_result res;
	char *code;   /* as requested, for the record */
	char *script; /* what sh -s reads */
	char *fail_why; /* why prepare() refused the run, for its error */
	size_t script_off;
	pid_t pid;    /* the child (bwrap, docker client or sh); leads its own group */
	int status;
	bool exited;
	struct event *in_ev, *info_ev, *deadline_ev, *grace_ev, *drain_ev;
	int in_fd, info_fd;
	char info[RUNNER_INFO_MAX + 1];
	size_t info_len;
	struct stream out, err;
	struct cgroup_run cg;
	bool have_cg;
	uint32_t timeout_ms;
	uint64_t started_ms;
	run_output_fn on_output;
	void *on_output_arg;
	run_started_fn on_started;
	void *on_started_arg;
	run_done_fn follow_done; /* a follower (runner_follow), told after done */
	void *follow_arg;
	run_done_fn done;
	void *done_arg;
	/* built ahead (RS_WARM until released) */
	bool warm;
	int block_w;          /* bwrap --block-fd: one byte lets it exec the program */
	uint64_t fingerprint; /* of the sandbox's settings it was built for */
	unsigned gen;         /* warm_gen then (policy, capabilities) */
	uint64_t warm_since;  /* now_ms() when it was built */
	struct netrun net;    /* the network fence (netrun.h) */
	struct trace_run trace; /* tracing (trace.h) */
	struct sysnotify sn;    /* tracing "syscalls" (sysnotify.h) */
	/* a supervised app (run_request.app) */
	bool app;
	char *home;
	int stop_signal;
	uint32_t stop_wait_ms;
};

static LIST_HEAD(run_list, run) runs = LIST_HEAD_INITIALIZER(runs);

/* what GET /metrics reports (runner_metrics) */
static const uint32_t bucket_ms[PROTO_RUN_BUCKETS_N] = PROTO_RUN_BUCKETS_MS;
static struct {
	uint64_t exited, signaled, timed_out, failed, sum_ms;
	uint32_t buckets[PROTO_RUN_BUCKETS_N + 1]; /* the last: above every bound */
} stats;

static void stats_run(const struct run_result *res)
{
	size_t b = 0;
	if (res->timed_out)
		stats.timed_out++;
	else if (res->has_exit_code)
		stats.exited++;
	else
		stats.signaled++;
	while (b < PROTO_RUN_BUCKETS_N && res->duration_ms > bucket_ms[b])
		b++;
	stats.buckets[b]++;
	stats.sum_ms += res->duration_ms;
}
static struct event *sigchld_ev;

static void runner_event(struct run *r, enum run_event ev);
static void act_discard(struct run *r);
static void warm_schedule(struct launcher *L, const char *sandbox_id);

static void ev_freep(struct event **e)
{
	if (*e) {
		event_free(*e);
		*e = NULL;
	}
}

static void stream_close(struct stream *s)
{
	ev_freep(&s->ev);
	if (s->fd >= 0) {
		close(s->fd);
		s->fd = -1;
	}
	s->eof = true;
}

/* ---- groups that outlive their run for a moment ---------------------------------------- */

/* The inner bwrap can outlive the outer one for a moment (sbxd reaps it as subreaper), so
 * a run's group may still be busy when the run is freed. It is retried from a timer, never
 * by sleeping in the loop; after RUNNER_CG_RETRIES the next start's sweep takes it. */
struct cg_later {
	LIST_ENTRY(cg_later) entry;
	struct cgroup_run cg;
	unsigned tries;
};
static LIST_HEAD(, cg_later) cg_later_list = LIST_HEAD_INITIALIZER(cg_later_list);
static struct event *cg_later_ev;

static void cg_later_arm(void)
{
	const struct timeval tv = { 0, RUNNER_CG_RETRY_MS * 1000 };
	if (cg_later_ev && !LIST_EMPTY(&cg_later_list))
		evtimer_add(cg_later_ev, &tv);
}

static void cg_later_cb(evutil_socket_t unused, short what, void *arg)
{
	struct cg_later *c, *next;
	for (c = LIST_FIRST(&cg_later_list); c; c = next) {
		next = LIST_NEXT(c, entry);
		bool gone = cgroup_run_remove(&c->cg) == 0;
		if (!gone && ++c->tries < RUNNER_CG_RETRIES)
			continue;
		if (!gone)
			log_warnx("a run's cgroup stayed busy; the next start's sweep removes it");
		LIST_REMOVE(c, entry);
		free(c);
	}
	cg_later_arm();
}

static void cg_remove(struct launcher *L, struct cgroup_run *cg)
{
	struct cg_later *c;
	if (cgroup_run_remove(cg) == 0)
		return;
	if (!cg_later_ev)
		cg_later_ev = evtimer_new(L->base, cg_later_cb, NULL);
	if (!cg_later_ev || !(c = calloc(1, sizeof(*c)))) {
		cgroup_run_destroy(cg); /* no memory for later: wait for it now */
		return;
	}
	c->cg = *cg;
	LIST_INSERT_HEAD(&cg_later_list, c, entry);
	cg_later_arm();
}

/* The loop has ended: what is still busy is waited for (briefly) now. */
static void cg_later_flush(void)
{
	struct cg_later *c;
	while ((c = LIST_FIRST(&cg_later_list))) {
		cgroup_run_destroy(&c->cg);
		LIST_REMOVE(c, entry);
		free(c);
	}
	if (cg_later_ev) {
		event_free(cg_later_ev);
		cg_later_ev = NULL;
	}
}

/* The one free path, and the registry's guard: whatever way the run ends, every group it
 * registered is withdrawn here (and from sbxd's mirror). */
static void run_free(struct run *r)
{
	netrun_release(&r->net, NULL); /* a run that never completed: no refusals to keep */
	sysnotify_release(&r->sn);
	trace_finish(&r->trace, NULL);
	registry_release_run(registry_launcher(), r->res.id);
	if (r->have_cg)
		cg_remove(r->L, &r->cg);
	ev_freep(&r->in_ev);
	ev_freep(&r->info_ev);
	ev_freep(&r->deadline_ev);
	ev_freep(&r->grace_ev);
	ev_freep(&r->drain_ev);
	if (r->in_fd >= 0)
		close(r->in_fd);
	if (r->info_fd >= 0)
		close(r->info_fd);
	if (r->block_w >= 0)
		close(r->block_w);
	stream_close(&r->out);
	stream_close(&r->err);
	capture_free(&r->out.cap);
	capture_free(&r->err.cap);
	run_result_clear(&r->res);
	sandbox_clear(&r->sb);
	free(r->code);
	free(r->script);
	free(r->fail_why);
	free(r->home);
	free(r);
}

static void add_limit(struct run *r, const char *k, const char *v)
{
	char kv[64];
	snprintf(kv, sizeof(kv), "%s=%s", k, v);
	proto_strv_push(&r->res.limits, kv);
}

static void append_note(struct run *r, const char *text)
{
	char *n = NULL;
	if (!*text || asprintf(&n, "%s%s%s", r->res.note ? r->res.note : "", r->res.note ? "; " : "",
	                       text) < 0)
		return;
	free(r->res.note);
	r->res.note = n;
}

/* Every group of the run (after the leader was reaped, its pgid is no longer ours to
 * signal), and with SIGKILL the run's cgroup as a whole. */
static void run_signal_all(struct run *r, int sig)
{
	unsigned kinds = REG_KINDS_ALL & ~(r->exited ? REG_KIND_BIT(REG_LEADER) : 0u);
	registry_kill(registry_launcher(), NULL, r->res.id, kinds, sig);
	if (sig == SIGKILL && r->have_cg)
		cgroup_run_kill(&r->cg);
}

static void timer_arm(struct run *r, struct event **ev, event_callback_fn cb, uint32_t ms)
{
	struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };
	if (!*ev)
		*ev = evtimer_new(r->L->base, cb, r);
	if (!*ev || evtimer_add(*ev, &tv) < 0)
		run_signal_all(r, SIGKILL); /* no timer, no waiting: end it now */
}

/* ---- the event sources --------------------------------------------------------------- */

static void stream_read_cb(evutil_socket_t fd, short what, void *arg)
{
	struct stream *s = arg;
	struct run *r = s->run;
	char tmp[RUNNER_READ_CHUNK];

	for (unsigned i = 0; i < RUNNER_READS_PER_EV; i++) {
		ssize_t n = read(fd, tmp, sizeof(tmp));
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		if (n <= 0) {
			runner_event(r, s->which == RUN_STDOUT ? RE_OUT_EOF : RE_ERR_EOF);
			return;
		}
		if (r->app) { /* an app's output is its log's: nothing is kept here */
			if (r->on_output)
				r->on_output(r, s->which, tmp, (size_t)n, r->on_output_arg);
			continue;
		}
		/* the rest is dropped: the child never blocks. The hook sees what was kept, so a
		 * stream of the output is always a prefix of the recorded output. */
		size_t kept = capture_add(&s->cap, tmp, (size_t)n);
		if (kept && r->on_output)
			r->on_output(r, s->which, tmp, kept, r->on_output_arg);
	}
}

static void stdin_write_cb(evutil_socket_t fd, short what, void *arg)
{
	struct run *r = arg;
	size_t left = strlen(r->script) - r->script_off;
	while (left) {
		ssize_t n = write(fd, r->script + r->script_off, left);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		if (n < 0)
			break; /* EPIPE: the child went away; its exit status tells the story */
		r->script_off += (size_t)n;
		left -= (size_t)n;
	}
	ev_freep(&r->in_ev);
	close(r->in_fd);
	r->in_fd = -1;
	runner_event(r, RE_STDIN_DONE);
}

/* bwrap --info-fd writes {"child-pid": N, ...}: the jail's own pid, which leads a session
 * and group of its own, so the deadline and sbxd can kill it directly. */
static void info_read_cb(evutil_socket_t fd, short what, void *arg)
{
	struct run *r = arg;
	ssize_t n = read(fd, r->info + r->info_len, RUNNER_INFO_MAX - r->info_len);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n > 0) {
		char *p;
		r->info_len += (size_t)n;
		r->info[r->info_len] = '\0';
		if ((p = strstr(r->info, "\"child-pid\"")) && (p = strchr(p, ':')) && strchr(p, ',')) {
			long v = strtol(p + 1, NULL, 10);
			if (v > 1 && v < INT32_MAX && !registry_find(registry_launcher(), (pid_t)v))
				registry_add(registry_launcher(), r->sb.id, r->res.id, (pid_t)v, REG_JAIL,
				             r->have_cg ? r->cg.kill : NULL);
		}
		if (r->info_len < RUNNER_INFO_MAX)
			return;
	}
	ev_freep(&r->info_ev);
	close(r->info_fd);
	r->info_fd = -1;
}

static void deadline_cb(evutil_socket_t fd, short what, void *arg) { runner_event(arg, RE_DEADLINE); }
static void grace_cb(evutil_socket_t fd, short what, void *arg) { runner_event(arg, RE_GRACE_EXPIRED); }
static void drain_cb(evutil_socket_t fd, short what, void *arg) { runner_event(arg, RE_DRAIN_EXPIRED); }

static struct launcher *runner_L;

/* A child someone here waits for by its pid (a run's program, its pasta, sbx-net). */
static bool pid_is_awaited(pid_t pid)
{
	struct run *r;
	LIST_FOREACH(r, &runs, entry)
		if ((r->pid == pid && !r->exited) || (r->net.pasta > 0 && r->net.pasta == pid))
			return true;
	return runner_L && runner_L->netproc && netproc_pid(runner_L->netproc) == pid;
}

/* The launcher is a child subreaper (main.c): what a run double-forks out of its group
 * becomes our child when its parent dies, and its zombie is reaped here. Children waited
 * for by pid elsewhere are left to their owners (the synchronous waits, such as the
 * capability probes', never return to the loop with a zombie). */
static void reap_orphans(void)
{
	char path[64], buf[8192];
	_cleanup_close_ int fd = -1;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/self/task/%d/children", (int)getpid());
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0 || (n = read(fd, buf, sizeof(buf) - 1)) <= 0)
		return;
	buf[n] = '\0';
	for (char *p = buf, *end; *p; p = end) {
		long pid = strtol(p, &end, 10);
		char st[512];
		_cleanup_close_ int sfd = -1;
		ssize_t sn;
		char *rp;
		if (end == p)
			break;
		if (pid <= 1 || pid_is_awaited((pid_t)pid))
			continue;
		snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
		if ((sfd = open(path, O_RDONLY | O_CLOEXEC)) < 0 || (sn = read(sfd, st, sizeof(st) - 1)) <= 0)
			continue;
		st[sn] = '\0';
		if ((rp = strrchr(st, ')')) && rp[1] == ' ' && rp[2] == 'Z' &&
		    waitpid((pid_t)pid, NULL, WNOHANG) == (pid_t)pid)
			log_debug("reaped orphan %ld", pid);
	}
}

/* Reap only our own children: caps.c waits for its probe children by pid. */
static void sigchld_cb(evutil_socket_t fd, short what, void *arg)
{
	struct run *r, *next;
	netrun_reap_pending();
	for (r = LIST_FIRST(&runs); r; r = next) {
		int st;
		next = LIST_NEXT(r, entry);
		if (r->net.pasta > 0 && waitpid(r->net.pasta, &st, WNOHANG) == r->net.pasta)
			netrun_reap(&r->net, r->net.pasta, st);
		if (r->exited || waitpid(r->pid, &st, WNOHANG) != r->pid)
			continue;
		r->status = st;
		runner_event(r, RE_EXITED);
	}
	reap_orphans();
}

/* ---- the actions --------------------------------------------------------------------- */

static void act_start(struct run *r)
{
	struct launcher *L = r->L;
	set_nonblock(r->in_fd);
	r->in_ev = event_new(L->base, r->in_fd, EV_WRITE | EV_PERSIST, stdin_write_cb, r);
	if (r->in_ev)
		event_add(r->in_ev, NULL);
	if (r->info_fd >= 0) {
		set_nonblock(r->info_fd);
		r->info_ev = event_new(L->base, r->info_fd, EV_READ | EV_PERSIST, info_read_cb, r);
		if (r->info_ev)
			event_add(r->info_ev, NULL);
	}
	if (!r->app) /* an app runs until it is stopped */
		timer_arm(r, &r->deadline_ev, deadline_cb, r->timeout_ms); /* no deadline, no run */
}

static bool all_output_in(const struct run *r) { return r->out.eof && r->err.eof; }

static void act_stream_eof(struct run *r, enum run_event ev)
{
	stream_close(ev == RE_OUT_EOF ? &r->out : &r->err);
	if (r->state == RS_DRAINING && all_output_in(r))
		runner_event(r, RE_OUTPUT_CLOSED);
}

static void act_reaped(struct run *r)
{
	/* the program ended: whatever it left in its groups goes with it */
	registry_kill(registry_launcher(), NULL, r->res.id, REG_KINDS_ALL, SIGKILL);
	r->exited = true;
	if (r->have_cg)
		cgroup_run_kill(&r->cg);
	ev_freep(&r->deadline_ev);
	ev_freep(&r->grace_ev);
	if (all_output_in(r)) {
		runner_event(r, RE_OUTPUT_CLOSED);
		return;
	}
	/* something it left holds a pipe: kill again and give the pipes a moment, not for ever */
	run_signal_all(r, SIGKILL);
	timer_arm(r, &r->drain_ev, drain_cb, RUNNER_DRAIN_MS);
}

static void act_term(struct run *r, bool deadline)
{
	if (deadline)
		r->res.timed_out = true;
	run_signal_all(r, r->stop_signal ? r->stop_signal : SIGTERM);
	/* the docker client's death does not end what it started in the container */
	if (r->ops->on_deadline)
		r->ops->on_deadline(r->L, &r->sb);
	timer_arm(r, &r->grace_ev, grace_cb, r->stop_wait_ms ? r->stop_wait_ms : RUNNER_KILL_GRACE_MS);
}

static void act_complete(struct run *r)
{
	struct run_result *res = &r->res;
	int st = r->status, e;

	res->duration_ms = now_ms() - r->started_ms;
	if (WIFEXITED(st)) {
		res->has_exit_code = true;
		res->exit_code = (uint32_t)WEXITSTATUS(st);
	} else if (WIFSIGNALED(st)) {
		res->signal = (uint32_t)WTERMSIG(st);
	}
	res->out_truncated = r->out.cap.truncated;
	res->err_truncated = r->err.cap.truncated;
	res->out = capture_steal(&r->out.cap, &res->out_len);
	res->err = capture_steal(&r->err.cap, &res->err_len);
	if (r->have_cg) {
		if (cgroup_run_hit_memory(&r->cg))
			append_note(r, "the memory limit was reached");
		if (cgroup_run_hit_pids(&r->cg))
			append_note(r, "the process limit was reached");
	}
	if (res->out_truncated || res->err_truncated)
		append_note(r, "output beyond limits.outputBytes was dropped");
	if (res->timed_out)
		append_note(r, "killed at its deadline");
	netrun_release(&r->net, res); /* pasta ends; the proxy's refusals join the result */
	sysnotify_release(&r->sn); /* every process is gone: nothing waits on a call */
	if (r->trace.on) { /* the run's range of its sandbox's trace log, and its lines */
		bool cut = false;
		trace_finish(&r->trace, res);
		if (trace_read(r->L, r->sb.id, res->id, res->trace_start, res->trace_end, 0,
		               TRACE_RUN_MAX, &res->trace, &res->trace_len, &cut) == 0 && cut)
			append_note(r, "the run's trace is longer than its result carries: "
			               "GET /sandboxes/{id}/trace?run= has all of it");
	}
	if (r->net.why[0])
		append_note(r, r->net.why);
	LIST_REMOVE(r, entry);
	if (r->app) { /* its supervisor decides what comes next; the history keeps no record */
		r->done(0, NULL, res, r->done_arg);
		run_free(r);
		return;
	}
	r->L->live_runs--;
	stats_run(res);
	/* a run the history cannot show is an error to the client, never a 200 that 404s */
	if ((e = store_run_insert(r->L->db, res, r->code)) < 0) {
		char msg[128];
		log_warnx("recording run %s: %s", res->id, strerror(-e));
		snprintf(msg, sizeof(msg), "the run ended but could not be recorded: %s", strerror(-e));
		r->done(e == -ENOSPC ? PERR_INSUFFICIENT_STORAGE : PERR_INTERNAL, msg, res, r->done_arg);
	} else {
		r->done(0, NULL, res, r->done_arg);
	}
	if (r->follow_done) {
		r->follow_done(e < 0 ? PERR_INTERNAL : 0, e < 0 ? "the run could not be recorded" : NULL,
		               res, r->follow_arg);
		r->follow_done = NULL;
	}
	if (r->iso == ISO_BWRAP)
		warm_schedule(r->L, r->sb.id); /* the next run of this sandbox may find it ready */
	run_free(r);
}

/* THE transition function: every change of a run's life passes here. */
static void runner_event(struct run *r, enum run_event ev)
{
	struct runner_step st = runner_next(r->state, ev);
	enum run_state before = r->state;

	if (st.action == RA_FORBIDDEN) {
		log_warnx("run %s: event %s in state %s is not allowed; ignored", r->res.id,
		          runner_event_name(ev), runner_state_name(before));
		return;
	}
	r->state = st.next;
	if (st.next != before)
		log_debug("run %s: %s --%s--> %s", r->res.id, runner_state_name(before),
		          runner_event_name(ev), runner_state_name(st.next));
	switch (st.action) {
	case RA_START:
		act_start(r);
		break;
	case RA_STREAM_EOF:
		act_stream_eof(r, ev);
		break;
	case RA_REAPED:
		act_reaped(r);
		break;
	case RA_TERM_DEADLINE:
	case RA_TERM_REQUESTED:
		act_term(r, st.action == RA_TERM_DEADLINE);
		break;
	case RA_SIGKILL:
		run_signal_all(r, SIGKILL);
		break;
	case RA_COMPLETE:
		act_complete(r); /* r is gone after this */
		break;
	case RA_DISCARD:
		act_discard(r); /* r is gone after this */
		break;
	case RA_NONE:
	case RA_FORBIDDEN:
	case RA_N_:
		break;
	}
}

/* ---- the child ----------------------------------------------------------------------- */

struct child_fds {
	int sync, in, out, err, info, seccomp;
	const struct cgroup_run *cg; /* NULL: no groups */
	bool in_v2;                  /* created in its cgroup2 group (clone3) */
	int block;                   /* built ahead: bwrap --block-fd, or -1 */
	int ready, netsync;          /* the network fence (netrun.h), or -1 */
	int notify;                  /* tracing "syscalls": the listener's way out, or -1 */
};

static _Noreturn void child_main(const struct backend_ops *ops, struct backend_child *c,
                                 const struct child_fds *f, uint32_t timeout_ms)
{
	struct rlimit rl;
	char ch;
	int keep[6], jr;
	size_t nkeep = 0;

	setsid();
	/* wait until the parent has registered our group */
	if (read(f->sync, &ch, 1) != 1)
		_exit(125);
	if (ops->child_root)
		ops->child_root(c);
	if (dup2(f->in, 0) < 0 || dup2(f->out, 1) < 0 || dup2(f->err, 2) < 0)
		_exit(125);
	/* the child joins its own groups: moving another process costs the mover a wait for
	 * an RCU grace period (~10 ms), moving oneself does not. A run whose limits cannot be
	 * put in place never runs. */
	if (f->cg && (jr = cgroup_run_join_self(f->cg, f->in_v2)) < 0) {
		errno = -jr;
		backend_child_fail("joining the run's cgroups");
	}
	if (f->info >= 0 && dup2(f->info, BACKEND_CHILD_FD_INFO) < 0)
		backend_child_fail("info fd");
	if (f->seccomp >= 0 && dup2(f->seccomp, BACKEND_CHILD_FD_SECCOMP) < 0)
		backend_child_fail("seccomp fd");
	if (f->block >= 0 && dup2(f->block, BACKEND_CHILD_FD_BLOCK) < 0)
		backend_child_fail("block fd");
	if (f->ready >= 0 && dup2(f->ready, BACKEND_CHILD_FD_READY) < 0)
		backend_child_fail("ready fd");
	if (f->netsync >= 0 && dup2(f->netsync, BACKEND_CHILD_FD_NETSYNC) < 0)
		backend_child_fail("network sync fd");
	if (f->notify >= 0 && dup2(f->notify, BACKEND_CHILD_FD_NOTIFY) < 0)
		backend_child_fail("notify fd");
	if (f->info >= 0)
		keep[nkeep++] = BACKEND_CHILD_FD_INFO;
	if (f->seccomp >= 0)
		keep[nkeep++] = BACKEND_CHILD_FD_SECCOMP;
	if (f->block >= 0)
		keep[nkeep++] = BACKEND_CHILD_FD_BLOCK;
	if (f->ready >= 0)
		keep[nkeep++] = BACKEND_CHILD_FD_READY;
	if (f->netsync >= 0)
		keep[nkeep++] = BACKEND_CHILD_FD_NETSYNC;
	if (f->notify >= 0)
		keep[nkeep++] = BACKEND_CHILD_FD_NOTIFY;
	close_fds_from(3, keep, nkeep);

	rl = (struct rlimit){ 0, 0 };
	setrlimit(RLIMIT_CORE, &rl);
	rl = (struct rlimit){ RUN_NOFILE, RUN_NOFILE };
	setrlimit(RLIMIT_NOFILE, &rl);
	rl = (struct rlimit){ RUN_FSIZE_MAX, RUN_FSIZE_MAX };
	setrlimit(RLIMIT_FSIZE, &rl);
	rl.rlim_cur = rl.rlim_max = timeout_ms ? timeout_ms / 1000 + RUN_CPU_SLACK_S : RLIM_INFINITY;
	setrlimit(RLIMIT_CPU, &rl);
	/* the backend's last steps: the jail uid, the files, its own environment */
	ops->child_setup(c);
	execve(c->sp->argv.v[0], c->sp->argv.v, c->envp);
	backend_child_fail("exec");
}

/* ---- building a run ------------------------------------------------------------------ */

static int env_build(const struct sandbox *s, const char *home, const struct backend_fences *f,
                     struct proto_strv *env)
{
	char kv[PATH_MAX + 16];
	int r;
	if ((r = proto_strv_push(env, "PATH=" BACKEND_PATH)) < 0)
		return r;
	snprintf(kv, sizeof(kv), "HOME=%s", home ? home : s->workdir);
	if ((r = proto_strv_push(env, kv)) < 0 || (r = proto_strv_push(env, "LANG=C.UTF-8")) < 0 ||
	    (r = proto_strv_push(env, "TERM=dumb")) < 0 || (r = proto_strv_push(env, "TMPDIR=/tmp")) < 0)
		return r;
	for (uint32_t i = 0; i < s->env.n; i++) {
		/* a key the fence sets is the fence's (tracing merges the sandbox's value in) */
		size_t kl = strcspn(s->env.v[i], "=");
		bool fence_sets = false;
		for (uint32_t j = 0; j < f->env.n && !fence_sets; j++)
			fence_sets = strncmp(f->env.v[j], s->env.v[i], kl + 1) == 0;
		if (!fence_sets && (r = proto_strv_push(env, s->env.v[i])) < 0)
			return r;
	}
	for (uint32_t i = 0; i < f->env.n; i++)
		if ((r = proto_strv_push(env, f->env.v[i])) < 0)
			return r;
	return 0;
}

/* The text sh -s reads: the code itself for plain sh, else a fixed script naming the
 * files the child writes (only run ids, which are ours, are interpolated). */
static int script_build(struct run *r, uint32_t lang, const char *code, const char *stdin_data,
                        char *code_name, char *stdin_name, size_t namesz)
{
	static const char *const ext[] = { "sh", "py", "js" };
	const char *const *interp = r->ops->interpreters;
	bool has_stdin = stdin_data && *stdin_data;

	code_name[0] = stdin_name[0] = '\0';
	if (lang == LANG_SH && !has_stdin) {
		r->script = strdup(code);
		return r->script ? 0 : -ENOMEM;
	}
	snprintf(code_name, namesz, "%s.%s", r->res.id, ext[lang]);
	if (has_stdin)
		snprintf(stdin_name, namesz, "%s.in", r->res.id);
	if (asprintf(&r->script,
	             "%s .sbx/%s < %s%s\nsbx_rc=$?\nrm -f .sbx/%s%s%s\nexit $sbx_rc\n",
	             interp[lang], code_name, has_stdin ? ".sbx/" : "/dev/null",
	             has_stdin ? stdin_name : "", code_name, has_stdin ? " .sbx/" : "",
	             has_stdin ? stdin_name : "") < 0) {
		r->script = NULL;
		return -ENOMEM;
	}
	return 0;
}

static int stream_open(struct run *r, struct stream *s, enum run_stream which, int fd)
{
	s->run = r;
	s->which = which;
	s->fd = fd;
	capture_init(&s->cap, (size_t)r->sb.output_bytes);
	set_nonblock(fd);
	s->ev = event_new(r->L->base, fd, EV_READ | EV_PERSIST, stream_read_cb, s);
	return s->ev && event_add(s->ev, NULL) == 0 ? 0 : -ENOMEM;
}

/* Resource limits: cgroups where the machine allows, rlimits always; a container's limits
 * are the engine's (--memory = --memory-swap, --pids-limit). Reported per run. */
static void limits_apply(struct run *r, const struct backend_spawn *sp)
{
	struct launcher *L = r->L;
	if (sp->syscalls)
		add_limit(r, "syscalls", sp->syscalls);
	if (!sp->engine_limits) {
		add_limit(r, "memory", "docker");
		add_limit(r, "pids", "docker");
	} else if (L->root && cgroup_run_create(r->res.id, r->sb.memory_mb, r->sb.pids, &r->cg) == 0) {
		const char *how = r->cg.flavour == CG_V2 ? "cgroup-v2" : "cgroup-v1";
		r->have_cg = true;
		add_limit(r, "memory", r->cg.memory_limited ? how : "none");
		add_limit(r, "pids", r->cg.pids_limited ? how : "rlimit");
	} else {
		add_limit(r, "memory", "none");
		add_limit(r, "pids", L->root ? "rlimit" : "none");
	}
	if (disk_enforced(L, r->sb.workdir)) {
		add_limit(r, "disk", DISK_MECHANISM);
	} else {
		add_limit(r, "disk", "none");
		append_note(r, "limits.diskMb is not enforced for this sandbox (see its note)");
	}
	add_limit(r, "cpu", "rlimit");
	add_limit(r, "fsize", "rlimit");
	add_limit(r, "nofile", "rlimit");
	add_limit(r, "timeout", "deadline");
	add_limit(r, "output", "capped");
}

static int pipe_pair(int *ret_r, int *ret_w)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	*ret_r = p[0];
	*ret_w = p[1];
	return 0;
}

/* bwrap --block-fd: the jail is set up, then waits for one byte before its program. */
static int argv_insert_block(struct proto_strv *argv)
{
	struct proto_strv out = { 0 };
	char fd[16];
	int r = 0;
	snprintf(fd, sizeof(fd), "%d", BACKEND_CHILD_FD_BLOCK);
	for (uint32_t i = 0; i < argv->n && r == 0; i++) {
		r = proto_strv_push(&out, argv->v[i]);
		if (i == 0 && r == 0 && (r = proto_strv_push(&out, "--block-fd")) == 0)
			r = proto_strv_push(&out, fd);
	}
	if (r < 0) {
		proto_strv_clear(&out);
		return r;
	}
	proto_strv_clear(argv);
	*argv = out;
	return 0;
}

/* fork, or clone3(CLONE_INTO_CGROUP) when the run has a cgroup2 group (cgfd >= 0): the
 * child then starts inside it and nobody has to move it. *ret_in_v2 says which. The
 * launcher is single-threaded, so the raw clone3 child is as safe as a fork's. */
static pid_t spawn_child(int cgfd, bool *ret_in_v2)
{
	pid_t pid;
	*ret_in_v2 = false;
	if (cgfd >= 0) {
		struct clone_args a = { .flags = CLONE_INTO_CGROUP,
			                .exit_signal = SIGCHLD,
			                .cgroup = (uint64_t)cgfd };
		pid = (pid_t)syscall(SYS_clone3, &a, sizeof(a));
		if (pid >= 0) {
			*ret_in_v2 = true;
			return pid;
		}
		/* ENOSYS (old kernel), or a group clone3 cannot enter: fork, and the child
		 * joins the group itself */
	}
	pid = fork();
	return pid < 0 ? -errno : pid;
}

#define PROXY_URL "http://" NETNS_PROXY_ADDR ":3128"
_Static_assert(NETNS_PROXY_PORT == 3128, "PROXY_URL names the proxy port");
static const char *const proxy_env[] = {
	"HTTP_PROXY=" PROXY_URL, "HTTPS_PROXY=" PROXY_URL, "http_proxy=" PROXY_URL,
	"https_proxy=" PROXY_URL, "NO_PROXY=localhost,127.0.0.1,::1", "no_proxy=localhost,127.0.0.1,::1",
};

static int run_spawn(struct run *r, const struct run_request *req)
{
	struct launcher *L = r->L;
	_cleanup_close_ int sync_r = -1, sync_w = -1, in_r = -1, out_r = -1, out_w = -1,
	                    err_r = -1, err_w = -1, cgfd = -1, block_r = -1;
	struct backend_spawn sp = { .seccomp_fd = -1, .info_r = -1, .info_w = -1 };
	struct backend_fences fences = { 0 }; /* tracing and the network fence plug in here */
	enum net_mode nm = r->iso == ISO_BWRAP ? net_mode_of(&r->sb) : NET_NONE;
	struct proto_strv env = { 0 };
	char code_name[96], stdin_name[96];
	struct backend_child c;
	struct child_fds f;
	pid_t pid;
	int e;

	/* programs that prefer a proxy get one, carrying the same allowlist as the capture */
	if (nm == NET_PROXY)
		for (size_t i = 0; i < sizeof(proxy_env) / sizeof(proxy_env[0]); i++)
			if ((e = proto_strv_push(&fences.env, proxy_env[i])) < 0)
				goto out;
	/* tracing binds its shims and FIFO and names them in the environment */
	if (r->sb.tracing && r->iso == ISO_BWRAP) {
		e = trace_prepare(L, &r->sb, r->res.id, L->root ? r->sb.jail_uid : geteuid(), &r->trace,
		                  &fences.binds, &fences.env);
		if (e == -ENOENT)
			append_note(r, "tracing is on but its shims are missing next to the launcher: "
			               "this run is not traced");
		else if (e < 0)
			goto out;
		e = 0;
	} else if (r->sb.tracing) {
		append_note(r, "tracing needs the bwrap backend: this run is not traced");
	}
	if (r->trace.on && r->sb.tracing == SBX_TRACING_SYSCALLS) {
		if (!L->jail_init_path)
			append_note(r, "tracing \"syscalls\" needs sbx-jail-init next to the launcher: "
			               "this run is not traced");
		else if ((e = sysnotify_prepare(&r->sn, L->base, &r->trace)) < 0)
			goto out;
	}
	if ((e = script_build(r, req->language, req->code, req->stdin_data, code_name, stdin_name,
	                      sizeof(code_name))) < 0 ||
	    (e = env_build(&r->sb, r->home, &fences, &env)) < 0 || (e = pipe_pair(&sync_r, &sync_w)) < 0 ||
	    (e = pipe_pair(&in_r, &r->in_fd)) < 0 || (e = pipe_pair(&out_r, &out_w)) < 0 ||
	    (e = pipe_pair(&err_r, &err_w)) < 0)
		goto out;
	if ((e = stream_open(r, &r->out, RUN_STDOUT, steal_fd(&out_r))) < 0 ||
	    (e = stream_open(r, &r->err, RUN_STDERR, steal_fd(&err_r))) < 0)
		goto out;
	if ((e = netrun_prepare(&r->net, L, nm, r->res.id)) < 0)
		goto out;
	fences.net_ready = nm != NET_NONE;
	if ((e = r->ops->prepare(L, &r->sb, &fences, &sp)) < 0) {
		r->fail_why = steal_pointer(&sp.note);
		goto out;
	}
	if (sp.note)
		append_note(r, sp.note);
	limits_apply(r, &sp);
	if (L->root && r->sb.jail_uid < SBX_JAIL_UID_BASE) {
		e = -EPERM; /* a sandbox row without its own uid never runs as root */
		goto out;
	}
	c = (struct backend_child){ .sp = &sp, .envp = env.v, .workdir = r->sb.workdir,
		                    .code_name = code_name[0] ? code_name : NULL, .code = req->code,
		                    .stdin_name = stdin_name[0] ? stdin_name : NULL,
		                    .stdin_data = req->stdin_data, .uid = r->sb.jail_uid,
		                    .drop = L->root, .pids = r->sb.pids ? r->sb.pids : SBX_PIDS_DEFAULT,
		                    .net_mode = nm, .net_allow = &r->sb.proxy_allow,
		                    .net_sync = nm != NET_NONE ? BACKEND_CHILD_FD_NETSYNC : -1 };
	if (r->warm && ((e = pipe_pair(&block_r, &r->block_w)) < 0 ||
	                (e = argv_insert_block(&sp.argv)) < 0))
		goto out;
	f = (struct child_fds){ .sync = sync_r, .in = in_r, .out = out_w, .err = err_w,
		                .info = sp.info_w, .seccomp = sp.seccomp_fd,
		                .cg = r->have_cg ? &r->cg : NULL, .block = block_r,
		                .ready = r->net.ready_r, .netsync = r->net.sync_child,
		                .notify = r->sn.child_end };
	if (r->have_cg)
		cgfd = cgroup_run_clone_fd(&r->cg);
	if ((pid = spawn_child(cgfd, &f.in_v2)) < 0) {
		e = pid;
		goto out;
	}
	if (pid == 0)
		child_main(r->ops, &c, &f, r->timeout_ms);
	r->pid = pid;
	r->info_fd = steal_fd(&sp.info_r);
	sysnotify_spawned(&r->sn); /* the jail has its end */
	/* registered before the program runs: the child waits on sync_r until here */
	if ((e = registry_add(registry_launcher(), r->sb.id, r->res.id, pid, REG_LEADER,
	                      r->have_cg ? r->cg.kill : NULL)) < 0)
		log_warnx("run %s: registering group %d: %s", r->res.id, (int)pid, strerror(-e));
	if (write(sync_w, "g", 1) != 1)
		kill(pid, SIGKILL);
	r->started_ms = now_ms();
	/* the leader makes the jail's namespace now; connect it before the program runs */
	netrun_attach(&r->net, &r->sb, pid);
	e = 0;
out:
	backend_spawn_clear(&sp);
	proto_strv_clear(&env);
	proto_strv_clear(&fences.binds);
	proto_strv_clear(&fences.env);
	return e;
}

/* ---- entry points -------------------------------------------------------------------- */

int runner_init(struct launcher *L)
{
	runner_L = L;
	if (sigchld_ev)
		return 0;
	sigchld_ev = evsignal_new(L->base, SIGCHLD, sigchld_cb, NULL);
	if (!sigchld_ev || event_add(sigchld_ev, NULL) < 0) {
		ev_freep(&sigchld_ev);
		return -ENOMEM;
	}
	return 0;
}

/* ---- jails built ahead ------------------------------------------------------------- */

static bool warm_on = true;
static unsigned warm_gen;  /* bumped when the policy or the capabilities change */
static unsigned nwarm;
static struct event *warm_idle_ev;

void runner_warm_enable(bool on) { warm_on = on; }

/* What the jail was built from: the settings as the API sees them, hashed (FNV-1a). */
static int sandbox_fingerprint(const struct sandbox *sb, uint64_t *ret)
{
	static uint8_t buf[PROTO_MSG_MAX];
	struct msg_SBX_REP rep;
	uint64_t h = 1469598103934665603ull;
	int n;
	if ((n = sandbox_to_rep(sb, &rep)) < 0)
		return n;
	n = proto_encode(MSG_SBX_REP, 0, false, &rep, buf, sizeof(buf));
	sandbox_rep_release(&rep);
	if (n < 0)
		return n;
	for (int i = 0; i < n; i++)
		h = (h ^ buf[i]) * 1099511628211ull;
	*ret = h ^ sb->jail_uid;
	return 0;
}

static uint32_t effective_timeout(const struct run_request *req, const struct sandbox *sb)
{
	uint32_t t = req && req->timeout_ms ? req->timeout_ms : sb->timeout_ms;
	return t ? t : SBX_TIMEOUT_MS_DEFAULT;
}

static void act_discard(struct run *r)
{
	LIST_REMOVE(r, entry);
	if (r->warm)
		nwarm--;
	registry_kill(registry_launcher(), NULL, r->res.id, REG_KINDS_ALL, SIGKILL);
	if (r->have_cg)
		cgroup_run_kill(&r->cg);
	log_debug("run %s: the jail built ahead for %s was discarded", r->res.id, r->sb.id);
	run_free(r);
}

void runner_discard_warm(const char *sandbox_id)
{
	struct run *r, *next;
	for (r = LIST_FIRST(&runs); r; r = next) {
		next = LIST_NEXT(r, entry);
		if (r->warm && (!sandbox_id || strcmp(r->sb.id, sandbox_id) == 0))
			runner_event(r, RE_KILL_REQUESTED); /* reaped, then RA_DISCARD */
	}
	if (!sandbox_id)
		warm_gen++;
}

static void warm_idle_cb(evutil_socket_t unused, short what, void *arg)
{
	const struct timeval tv = { RUNNER_WARM_IDLE_MS / 4000, 0 };
	uint64_t now = now_ms();
	struct run *r, *next;
	for (r = LIST_FIRST(&runs); r; r = next) {
		next = LIST_NEXT(r, entry);
		if (r->warm && r->state == RS_WARM && now - r->warm_since >= RUNNER_WARM_IDLE_MS)
			runner_event(r, RE_KILL_REQUESTED);
	}
	if (nwarm)
		evtimer_add(warm_idle_ev, &tv);
}

/* Build a jail ahead for a sandbox that just ran (its settings as stored now). */
static void warm_prepare(struct launcher *L, const char *sandbox_id)
{
	const struct timeval tv = { RUNNER_WARM_IDLE_MS / 4000, 0 };
	const struct run_request none = { .language = LANG_SH, .code = "", .stdin_data = "" };
	struct run *r;
	int e;

	if (!warm_on || nwarm >= RUNNER_WARM_MAX)
		return;
	LIST_FOREACH(r, &runs, entry)
		if (r->warm && strcmp(r->sb.id, sandbox_id) == 0)
			return;
	if (!(r = calloc(1, sizeof(*r))))
		return;
	r->L = L;
	r->state = RS_WARM;
	r->ops = backend_for(ISO_BWRAP);
	r->iso = ISO_BWRAP;
	r->warm = true;
	r->gen = warm_gen;
	r->in_fd = r->info_fd = r->out.fd = r->err.fd = r->block_w = -1;
	r->trace.fifo = r->trace.log = -1;
	r->sn.sock = r->sn.child_end = r->sn.listener = -1;
	r->warm_since = now_ms();
	/* a jail with a network fence is built ahead with its fence: pasta attached (its start
	 * is most of such a run's cost) or the proxy's session open, the ready byte waiting in
	 * the pipe behind bwrap's block-fd */
	if (!r->ops || store_sandbox_get(L->db, sandbox_id, &r->sb) < 0 ||
	    sandbox_fingerprint(&r->sb, &r->fingerprint) < 0 ||
	    random_id("run_", 12, r->res.id, sizeof(r->res.id)) < 0) {
		run_free(r);
		return;
	}
	r->timeout_ms = effective_timeout(NULL, &r->sb);
	snprintf(r->res.sandbox_id, sizeof(r->res.sandbox_id), "%s", r->sb.id);
	r->res.isolation = isolation_name(ISO_BWRAP);
	sandbox_note_run(&r->sb, &r->L->net, &r->res.note);
	LIST_INSERT_HEAD(&runs, r, entry);
	nwarm++;
	if ((e = run_spawn(r, &none)) < 0) {
		LIST_REMOVE(r, entry);
		nwarm--;
		log_debug("building a jail ahead for %s: %s", sandbox_id, strerror(-e));
		run_free(r);
		return;
	}
	log_debug("run %s: a jail is built ahead for %s", r->res.id, sandbox_id);
	if (!warm_idle_ev)
		warm_idle_ev = evtimer_new(L->base, warm_idle_cb, NULL);
	if (warm_idle_ev && !evtimer_pending(warm_idle_ev, NULL))
		evtimer_add(warm_idle_ev, &tv);
}

static void warm_prepare_cb(evutil_socket_t unused, short what, void *arg)
{
	struct { struct launcher *L; char id[PROTO_ID_MAX + 1]; } *w = arg;
	warm_prepare(w->L, w->id);
	free(w);
}

/* After the reply went out: the loop builds the next jail when it is otherwise idle. */
static void warm_schedule(struct launcher *L, const char *sandbox_id)
{
	const struct timeval now = { 0, 0 };
	struct { struct launcher *L; char id[PROTO_ID_MAX + 1]; } *w;
	if (!warm_on || nwarm >= RUNNER_WARM_MAX || !(w = calloc(1, sizeof(*w))))
		return;
	w->L = L;
	snprintf(w->id, sizeof(w->id), "%s", sandbox_id);
	if (event_base_once(L->base, -1, EV_TIMEOUT, warm_prepare_cb, w, &now) < 0)
		free(w);
}

/* The program files of a run given to a jail built ahead, written by the launcher into the
 * jail's .sbx as the cold child would (0600, the jail uid's), never through a link. */
static int warm_write_file(int dfd, const char *name, const char *data, uid_t uid, bool chown_it)
{
	_cleanup_close_ int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	int r;
	if (fd < 0)
		return -errno;
	if (chown_it && fchown(fd, uid, uid) < 0)
		return -errno;
	if ((r = write_all(fd, data, strlen(data))) < 0)
		return r;
	return 0;
}

static int warm_write_files(struct run *r, const char *code_name, const char *code,
                            const char *stdin_name, const char *stdin_data)
{
	struct open_how how = { .flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC,
		                .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS |
		                           RESOLVE_NO_XDEV };
	_cleanup_close_ int wfd = open(r->sb.workdir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	_cleanup_close_ int dfd = -1;
	bool root = r->L->root;
	uid_t uid = root ? r->sb.jail_uid : geteuid();
	struct stat st;
	int e;

	if (wfd < 0)
		return -errno;
	if (mkdirat(wfd, ".sbx", 0700) < 0 && errno != EEXIST)
		return -errno;
	if ((dfd = (int)syscall(SYS_openat2, wfd, ".sbx", &how, sizeof(how))) < 0)
		return -errno;
	if (root && fstat(dfd, &st) == 0 && st.st_uid == 0 && fchown(dfd, uid, uid) < 0)
		return -errno;
	if (fstat(dfd, &st) < 0)
		return -errno;
	if (st.st_uid != uid || (st.st_mode & 07777) != 0700)
		return -EPERM; /* not the directory the cold child would have used */
	if ((e = warm_write_file(dfd, code_name, code, uid, root)) < 0)
		return e;
	if (stdin_name && (e = warm_write_file(dfd, stdin_name, stdin_data, uid, root)) < 0)
		return e;
	return 0;
}

/* Give the run to a jail built ahead for exactly these settings, if there is one. 0: the
 * run is under way (sb taken, done will be called); otherwise nothing happened. */
static int warm_take(struct launcher *L, const struct run_request *req, struct sandbox *sb,
                     const char *note, run_done_fn done, void *arg)
{
	char code_name[96], stdin_name[96];
	uint64_t fp;
	struct run *w;
	int e;

	LIST_FOREACH(w, &runs, entry)
		if (w->warm && w->state == RS_WARM && strcmp(w->sb.id, sb->id) == 0)
			break;
	if (!w)
		return -ENOENT;
	if (w->gen != warm_gen || sandbox_fingerprint(sb, &fp) < 0 || fp != w->fingerprint ||
	    effective_timeout(req, sb) != w->timeout_ms) {
		runner_event(w, RE_KILL_REQUESTED); /* built for something else: never used */
		return -ESTALE;
	}
	free(w->script);
	w->script = NULL;
	if (!(w->code = strdup(req->code)) ||
	    (e = script_build(w, req->language, req->code, req->stdin_data, code_name, stdin_name,
	                      sizeof(code_name))) < 0 ||
	    (code_name[0] && (e = warm_write_files(w, code_name, req->code,
	                                           stdin_name[0] ? stdin_name : NULL,
	                                           req->stdin_data)) < 0) ||
	    write(w->block_w, "g", 1) != 1) {
		runner_event(w, RE_KILL_REQUESTED);
		return -EIO;
	}
	close(w->block_w);
	w->block_w = -1;
	w->warm = false;
	nwarm--;
	L->live_runs++;
	w->done = done;
	w->done_arg = arg;
	w->on_output = req->on_output;
	w->on_output_arg = req->on_output_arg;
	w->on_started = req->on_started;
	w->on_started_arg = req->on_started_arg;
	w->res.language = req->language;
	w->res.entrance = req->entrance;
	w->res.created_at = now_unix_s();
	append_note(w, note);
	sandbox_clear(sb);
	log_debug("run %s: given a jail built ahead", w->res.id);
	w->started_ms = now_ms();
	runner_event(w, RE_RELEASED);
	if (w->on_started)
		w->on_started(&w->res, w->on_started_arg);
	return 0;
}

int runner_start(struct launcher *L, const struct run_request *req, struct sandbox *sb,
                 enum isolation iso, const char *note, run_done_fn done, void *arg)
{
	const struct backend_ops *ops = backend_for(iso);
	char msg[RUNNER_FAIL_MSG_MAX];
	struct run *r;
	int e;

	if (iso == ISO_BWRAP && !req->app && warm_take(L, req, sb, note, done, arg) == 0)
		return 0;
	if (!ops || !(r = calloc(1, sizeof(*r)))) {
		sandbox_clear(sb);
		done(PERR_ENGINE_UNAVAILABLE, ops ? "out of memory" : "no backend for this isolation",
		     NULL, arg);
		return 0;
	}
	r->L = L;
	r->state = RS_SPAWNING;
	r->ops = ops;
	r->iso = iso;
	r->sb = *sb; /* the run owns the sandbox's strings now */
	memset(sb, 0, sizeof(*sb));
	r->in_fd = r->info_fd = r->out.fd = r->err.fd = r->block_w = -1;
	r->trace.fifo = r->trace.log = -1;
	r->sn.sock = r->sn.child_end = r->sn.listener = -1;
	r->done = done;
	r->done_arg = arg;
	r->on_output = req->on_output;
	r->on_output_arg = req->on_output_arg;
	r->on_started = req->on_started;
	r->on_started_arg = req->on_started_arg;
	r->timeout_ms = req->timeout_ms ? req->timeout_ms : r->sb.timeout_ms;
	if (!r->timeout_ms)
		r->timeout_ms = SBX_TIMEOUT_MS_DEFAULT;
	r->app = req->app;
	r->stop_signal = req->stop_signal;
	r->stop_wait_ms = req->stop_wait_ms;
	if (r->app)
		r->timeout_ms = 0; /* no deadline, no CPU-seconds limit */
	if (random_id("run_", 12, r->res.id, sizeof(r->res.id)) < 0 || !(r->code = strdup(req->code)) ||
	    (req->home && !(r->home = strdup(req->home)))) {
		run_free(r);
		done(PERR_INTERNAL, "out of memory", NULL, arg);
		return 0;
	}
	snprintf(r->res.sandbox_id, sizeof(r->res.sandbox_id), "%s", r->sb.id);
	r->res.language = req->language;
	r->res.entrance = req->entrance;
	r->res.isolation = isolation_name(iso);
	r->res.created_at = now_unix_s();
	sandbox_note_run(&r->sb, &r->L->net, &r->res.note); /* what the sandbox's settings do not enforce */
	append_note(r, note);
	LIST_INSERT_HEAD(&runs, r, entry);
	if (!r->app)
		L->live_runs++;
	if ((e = run_spawn(r, req)) < 0) {
		LIST_REMOVE(r, entry);
		if (!r->app)
			L->live_runs--;
		snprintf(msg, sizeof(msg), "starting the run failed: %s%s%s", strerror(-e),
		         r->fail_why ? ": " : "", r->fail_why ? r->fail_why : "");
		if (!req->app)
			stats.failed++;
		run_free(r);
		/* a switch that is on while the engine is broken fails; it never runs raw */
		done(PERR_ENGINE_UNAVAILABLE, msg, NULL, arg);
		return 0;
	}
	runner_event(r, RE_SPAWNED);
	if (r->on_started)
		r->on_started(&r->res, r->on_started_arg);
	return 0;
}

/* ---- live runs, seen from outside ------------------------------------------------- */

static struct run *live_find(const char *sandbox_id, const char *run_id)
{
	struct run *r;
	LIST_FOREACH(r, &runs, entry)
		if (!r->warm && strcmp(r->res.id, run_id) == 0 &&
		    (!sandbox_id || strcmp(r->sb.id, sandbox_id) == 0))
			return r;
	return NULL;
}

bool runner_is_live(const char *run_id) { return run_id && live_find(NULL, run_id) != NULL; }

void runner_metrics(struct msg_METRICS_REP *m)
{
	m->runs_exited = stats.exited;
	m->runs_signaled = stats.signaled;
	m->runs_timed_out = stats.timed_out;
	m->runs_failed = stats.failed;
	m->duration_sum_ms = stats.sum_ms;
	for (size_t i = 0; i <= PROTO_RUN_BUCKETS_N; i++)
		proto_u32v_push(&m->duration_buckets, stats.buckets[i]);
}

int runner_follow(const char *sandbox_id, const char *run_id, run_output_fn on_output,
                  void *out_arg, run_done_fn done, void *done_arg)
{
	struct run *r = live_find(sandbox_id, run_id);
	if (!r || r->state == RS_DONE)
		return -ENOENT;
	if (r->on_output || r->follow_done)
		return -EBUSY;
	r->on_output = on_output;
	r->on_output_arg = out_arg;
	r->follow_done = done;
	r->follow_arg = done_arg;
	/* what was kept so far first: the stream stays a prefix of the recorded output */
	if (r->out.cap.len)
		on_output(r, RUN_STDOUT, r->out.cap.buf, r->out.cap.len, out_arg);
	if (r->err.cap.len)
		on_output(r, RUN_STDERR, r->err.cap.buf, r->err.cap.len, out_arg);
	return 0;
}

bool runner_leader_alive(const char *run_id)
{
	struct run *r;
	LIST_FOREACH(r, &runs, entry)
		if (strcmp(r->res.id, run_id) == 0)
			return !r->exited;
	return false;
}

int runner_kill(const char *sandbox_id, const char *run_id)
{
	struct run *r = live_find(sandbox_id, run_id);
	if (!r)
		return -ENOENT;
	runner_event(r, RE_KILL_REQUESTED);
	return 0;
}

size_t runner_kill_sandbox(const char *sandbox_id, char (*ids)[PROTO_ID_MAX + 1], size_t max)
{
	struct run *r, *next;
	size_t n = 0;
	for (r = LIST_FIRST(&runs); r; r = next) {
		next = LIST_NEXT(r, entry); /* a kill never completes a run synchronously */
		if (r->warm || strcmp(r->sb.id, sandbox_id) != 0 || r->state == RS_DONE)
			continue;
		if (n < max)
			snprintf(ids[n], sizeof(ids[n]), "%s", r->res.id);
		n++;
		runner_event(r, RE_KILL_REQUESTED);
	}
	return n;
}

static char *dup_bytes(const char *p, size_t n)
{
	char *d = malloc(n + 1);
	if (d) {
		if (n)
			memcpy(d, p, n);
		d[n] = '\0';
	}
	return d;
}

static int snapshot(const struct run *r, struct run_result *ret)
{
	const struct run_result *src = &r->res;
	*ret = (struct run_result){ .language = src->language, .entrance = src->entrance,
		                    .timed_out = src->timed_out, .created_at = src->created_at,
		                    .isolation = src->isolation, .running = true };
	snprintf(ret->id, sizeof(ret->id), "%s", src->id);
	snprintf(ret->sandbox_id, sizeof(ret->sandbox_id), "%s", src->sandbox_id);
	ret->duration_ms = r->started_ms ? now_ms() - r->started_ms : 0;
	ret->trace_start = r->trace.on ? r->trace.start : -1;
	ret->trace_end = -1;
	ret->out_len = r->out.cap.len;
	ret->err_len = r->err.cap.len;
	ret->out_truncated = r->out.cap.truncated;
	ret->err_truncated = r->err.cap.truncated;
	if (!(ret->out = dup_bytes(r->out.cap.buf, r->out.cap.len)) ||
	    !(ret->err = dup_bytes(r->err.cap.buf, r->err.cap.len)) ||
	    (src->note && !(ret->note = strdup(src->note))))
		goto nomem;
	for (uint32_t i = 0; i < src->limits.n; i++)
		if (proto_strv_push(&ret->limits, src->limits.v[i]) < 0)
			goto nomem;
	return 0;
nomem:
	run_result_clear(ret);
	return -ENOMEM;
}

int runner_snapshot(const char *sandbox_id, const char *run_id, struct run_result *ret)
{
	const struct run *r = live_find(sandbox_id, run_id);
	return r ? snapshot(r, ret) : -ENOENT;
}

size_t runner_foreach_live(const char *sandbox_id, int (*fn)(const struct run_result *, void *),
                           void *arg)
{
	struct run *r;
	size_t n = 0;
	LIST_FOREACH(r, &runs, entry) { /* inserted at the head: newest first */
		struct run_result res;
		if (r->warm || strcmp(r->sb.id, sandbox_id) != 0 || snapshot(r, &res) < 0)
			continue;
		n++;
		int stop = fn(&res, arg);
		run_result_clear(&res);
		if (stop)
			break;
	}
	return n;
}

void runner_kill_all(struct launcher *L)
{
	struct run *r;
	/* the loop is ending: no grace timer would fire, so SIGKILL at once */
	LIST_FOREACH(r, &runs, entry)
		run_signal_all(r, SIGKILL);
}

void runner_stop_all(struct launcher *L)
{
	struct run *r;
	runner_kill_all(L);
	/* the loop has ended: nothing will reap or complete these runs. Reap each leader
	 * (briefly; a zombie does not keep a cgroup busy), tell its caller, and free it,
	 * which removes its cgroups; sbxd's grace period is the bound on all of this. */
	while ((r = LIST_FIRST(&runs))) {
		for (unsigned t = 0; !r->exited && t < RUNNER_STOP_REAP_TRIES; t++) {
			if (waitpid(r->pid, &r->status, WNOHANG) != 0)
				r->exited = true;
			else
				usleep(RUNNER_STOP_REAP_US);
		}
		LIST_REMOVE(r, entry);
		if (r->warm) { /* built ahead, never given a run */
			nwarm--;
			run_free(r);
			continue;
		}
		if (!r->app)
			L->live_runs--;
		r->done(PERR_ENGINE_UNAVAILABLE, "the launcher stopped during the run", NULL,
		        r->done_arg);
		if (r->follow_done)
			r->follow_done(PERR_ENGINE_UNAVAILABLE, "the launcher stopped during the run",
			               NULL, r->follow_arg);
		run_free(r);
	}
	cg_later_flush();
	if (warm_idle_ev) {
		event_free(warm_idle_ev);
		warm_idle_ev = NULL;
	}
}
