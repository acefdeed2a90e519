/* run_code(): the one gate every execution passes, and the life of a run from fork to the
 * recorded result. Each run is a small state machine driven by libevent: the program is
 * written to the child's stdin, both output pipes are drained (capped), the deadline timer
 * ends the whole group, and SIGCHLD reaps it. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/queue.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <event2/event.h>

#include "caps.h"
#include "cleanup.h"
#include "fence/bwrap_argv.h"
#include "fence/cgroup.h"
#include "fence/docker_argv.h"
#include "fence/jail_seccomp.h"
#include "launcher.h"
#include "log.h"
#include "proto_chan.h"
#include "sandbox.h"
#include "store.h"
#include "util.h"

#define RUN_KILL_GRACE_MS   200u  /* SIGTERM, then SIGKILL this much later */
#define RUN_DRAIN_MS        500u  /* after the program ended, wait this long for pipe EOF */
#define RUN_INFO_MAX        1024u /* bwrap --info-fd JSON */
#define RUN_FSIZE_MAX       (1ull << 30)
#define RUN_NOFILE          1024u
#define RUN_CPU_SLACK_S     5u
#define RUN_PATH            "/usr/local/bin:/usr/bin:/bin"
#define RUN_PYTHON          "/usr/bin/python3"
#define RUN_NODE            "/usr/bin/node"
#define RUN_CHILD_FD_INFO   3
#define RUN_CHILD_FD_SECCOMP 4

struct stream {
	struct event *ev;
	int fd;
	char *buf;
	size_t len, cap, limit;
	bool truncated, eof;
};

struct run {
	LIST_ENTRY(run) entry;
	struct launcher *L;
	struct sandbox sb;
	struct run_result res;
	char *code;   /* as requested, for the record */
	char *script; /* what sh -s reads */
	size_t script_off;
	const char *isolation;
	pid_t pid;      /* the child (bwrap, or sh); leads its own group */
	pid_t jail_pid; /* the jail's first process, its own session (bwrap --new-session) */
	int status;
	bool exited, killing, done_called;
	struct event *in_ev, *info_ev, *deadline_ev, *grace_ev, *drain_ev;
	int in_fd, info_fd;
	char info[RUN_INFO_MAX + 1];
	size_t info_len;
	struct stream out, err;
	struct cgroup_run cg;
	bool have_cg;
	uint64_t started_ms;
	run_done_fn done;
	void *done_arg;
};

static LIST_HEAD(run_list, run) runs = LIST_HEAD_INITIALIZER(runs);
static struct event *sigchld_ev;

static void run_maybe_finish(struct run *r);

/* ---- the registry: every live group, mirrored to sbxd -------------------------------- */

static void registry_announce(struct run *r)
{
	struct msg_PGRP_ADD m = { .pgid = (uint32_t)r->pid,
		                  .jail_pid = (uint32_t)(r->jail_pid > 0 ? r->jail_pid : 0),
		                  .sandbox_id = r->sb.id,
		                  .run_id = r->res.id,
		                  .cgroup = r->cg.kill };
	if (r->L->sbxd)
		proto_chan_send(r->L->sbxd, MSG_PGRP_ADD, 0, &m, -1);
}

static void registry_withdraw(struct run *r)
{
	struct msg_PGRP_DEL m = { .pgid = (uint32_t)r->pid };
	if (r->L->sbxd && r->pid > 0)
		proto_chan_send(r->L->sbxd, MSG_PGRP_DEL, 0, &m, -1);
}

static void run_signal_all(struct run *r, int sig)
{
	if (r->pid > 0 && !r->exited)
		kill(-r->pid, sig);
	if (r->jail_pid > 1)
		kill(-r->jail_pid, sig);
	if (sig == SIGKILL && r->have_cg)
		cgroup_run_kill(&r->cg);
}

void runner_kill_all(struct launcher *L)
{
	struct run *r;
	LIST_FOREACH(r, &runs, entry)
		run_signal_all(r, SIGKILL);
}

/* ---- the run's end ------------------------------------------------------------------- */

static void stream_close(struct stream *s)
{
	if (s->ev) {
		event_free(s->ev);
		s->ev = NULL;
	}
	if (s->fd >= 0) {
		close(s->fd);
		s->fd = -1;
	}
	s->eof = true;
}

static void ev_freep(struct event **e)
{
	if (*e) {
		event_free(*e);
		*e = NULL;
	}
}

static void run_free(struct run *r)
{
	ev_freep(&r->in_ev);
	ev_freep(&r->info_ev);
	ev_freep(&r->deadline_ev);
	ev_freep(&r->grace_ev);
	ev_freep(&r->drain_ev);
	if (r->in_fd >= 0)
		close(r->in_fd);
	if (r->info_fd >= 0)
		close(r->info_fd);
	stream_close(&r->out);
	stream_close(&r->err);
	free(r->out.buf);
	free(r->err.buf);
	r->res.out = r->res.err = NULL;
	run_result_clear(&r->res);
	sandbox_clear(&r->sb);
	free(r->code);
	free(r->script);
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
	if (asprintf(&n, "%s%s%s", r->res.note ? r->res.note : "", r->res.note ? "; " : "", text) < 0)
		return;
	free(r->res.note);
	r->res.note = n;
}

static void run_complete(struct run *r)
{
	struct run_result *res = &r->res;
	int st = r->status;
	int e;

	res->duration_ms = now_ms() - r->started_ms;
	if (WIFEXITED(st)) {
		res->has_exit_code = true;
		res->exit_code = (uint32_t)WEXITSTATUS(st);
	} else if (WIFSIGNALED(st)) {
		res->signal = (uint32_t)WTERMSIG(st);
	}
	res->out = r->out.buf;
	res->out_len = r->out.len;
	res->out_truncated = r->out.truncated;
	res->err = r->err.buf;
	res->err_len = r->err.len;
	res->err_truncated = r->err.truncated;
	if (r->have_cg) {
		if (cgroup_run_hit_memory(&r->cg))
			append_note(r, "the memory limit was reached");
		if (cgroup_run_hit_pids(&r->cg))
			append_note(r, "the process limit was reached");
		cgroup_run_destroy(&r->cg);
		r->have_cg = false;
	}
	if (res->out_truncated || res->err_truncated)
		append_note(r, "output beyond limits.outputBytes was dropped");
	if (res->timed_out)
		append_note(r, "killed at its deadline");
	registry_withdraw(r);
	if ((e = store_run_insert(r->L->db, res, r->code)) < 0)
		log_warnx("recording run %s: %s", res->id, strerror(-e));
	LIST_REMOVE(r, entry);
	r->L->live_runs--;
	r->done_called = true;
	r->done(0, NULL, res, r->done_arg);
	run_free(r);
}

static void drain_cb(evutil_socket_t fd, short what, void *arg) { run_complete(arg); }

static void run_maybe_finish(struct run *r)
{
	if (!r->exited)
		return;
	if (!r->out.eof || !r->err.eof) {
		/* the program is gone; something it left holds a pipe. Kill the group and give
		 * the pipes a moment rather than wait for ever. */
		if (!r->drain_ev) {
			struct timeval tv = { 0, RUN_DRAIN_MS * 1000 };
			run_signal_all(r, SIGKILL);
			r->drain_ev = evtimer_new(r->L->base, drain_cb, r);
			if (r->drain_ev)
				evtimer_add(r->drain_ev, &tv);
		}
		return;
	}
	run_complete(r);
}

/* ---- events -------------------------------------------------------------------------- */

static void stream_read_cb(evutil_socket_t fd, short what, void *arg)
{
	struct run *r = arg;
	struct stream *s = fd == r->out.fd ? &r->out : &r->err;
	char tmp[16384];

	for (int i = 0; i < 16; i++) {
		ssize_t n = read(fd, tmp, sizeof(tmp));
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		if (n <= 0) {
			stream_close(s);
			run_maybe_finish(r);
			return;
		}
		size_t keep = s->len < s->limit ? s->limit - s->len : 0;
		if (keep > (size_t)n)
			keep = (size_t)n;
		if (keep < (size_t)n)
			s->truncated = true; /* the rest is read and dropped so the child never blocks */
		if (keep) {
			if (s->len + keep > s->cap) {
				size_t nc = s->cap ? s->cap * 2 : 4096;
				char *nb;
				while (nc < s->len + keep)
					nc *= 2;
				if (nc > s->limit)
					nc = s->limit;
				if (!(nb = realloc(s->buf, nc))) {
					s->truncated = true;
					continue;
				}
				s->buf = nb;
				s->cap = nc;
			}
			memcpy(s->buf + s->len, tmp, keep);
			s->len += keep;
		}
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
}

/* bwrap --info-fd writes {"child-pid": N, ...}: the jail's own pid, which leads a session
 * and group of its own, so the deadline and sbxd can kill it directly. */
static void info_read_cb(evutil_socket_t fd, short what, void *arg)
{
	struct run *r = arg;
	ssize_t n = read(fd, r->info + r->info_len, RUN_INFO_MAX - r->info_len);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n > 0) {
		r->info_len += (size_t)n;
		r->info[r->info_len] = '\0';
		char *p = strstr(r->info, "\"child-pid\"");
		if (p && (p = strchr(p, ':')) && strchr(p, ',') + 0 != NULL && r->jail_pid == 0) {
			long v = strtol(p + 1, NULL, 10);
			if (v > 1 && v < INT32_MAX) {
				r->jail_pid = (pid_t)v;
				registry_announce(r);
			}
		}
		if (r->info_len < RUN_INFO_MAX)
			return;
	}
	ev_freep(&r->info_ev);
	close(r->info_fd);
	r->info_fd = -1;
}

static void docker_kill_runs(const struct sandbox *s);

static void grace_cb(evutil_socket_t fd, short what, void *arg)
{
	run_signal_all(arg, SIGKILL);
}

static void deadline_cb(evutil_socket_t fd, short what, void *arg)
{
	struct run *r = arg;
	struct timeval tv = { 0, RUN_KILL_GRACE_MS * 1000 };
	r->res.timed_out = true;
	r->killing = true;
	run_signal_all(r, SIGTERM);
	if (r->sb.backend == BACKEND_DOCKER && strcmp(r->isolation, "docker") == 0)
		docker_kill_runs(&r->sb);
	r->grace_ev = evtimer_new(r->L->base, grace_cb, r);
	if (r->grace_ev)
		evtimer_add(r->grace_ev, &tv);
	else
		run_signal_all(r, SIGKILL);
}

/* Reap only our own children: caps.c waits for its probe children by pid. */
static void sigchld_cb(evutil_socket_t fd, short what, void *arg)
{
	struct run *r, *next;
	for (r = LIST_FIRST(&runs); r; r = next) {
		int st;
		next = LIST_NEXT(r, entry);
		if (r->exited || waitpid(r->pid, &st, WNOHANG) != r->pid)
			continue;
		r->exited = true;
		r->status = st;
		/* the program ended: whatever it left in its group goes with it */
		kill(-r->pid, SIGKILL);
		if (r->jail_pid > 1)
			kill(-r->jail_pid, SIGKILL);
		if (r->have_cg)
			cgroup_run_kill(&r->cg);
		run_maybe_finish(r);
	}
}

/* ---- the child ----------------------------------------------------------------------- */

/* Write a file into the jail-controlled workdir as the jail uid, never following a link. */
static int child_write_file(int dirfd, const char *name, const char *data)
{
	_cleanup_close_ int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
	                                0600);
	if (fd < 0)
		return -errno;
	return write_all(fd, data, strlen(data));
}

struct child_plan {
	char *const *argv;
	char *const *envp;
	const char *workdir;
	const char *code_name, *code;   /* file for the program, or NULL */
	const char *stdin_name, *stdin_data;
	uid_t uid;
	bool drop;
	char *const *docker_run;     /* docker backend: create the container if missing */
	const char *docker, *container;
	int sync_fd, in_fd, out_fd, err_fd, info_fd, seccomp_fd;
	uint32_t pids, timeout_ms;
};

static _Noreturn void child_fail(int err_fd, const char *what)
{
	dprintf(err_fd, "sbx: %s: %s\n", what, strerror(errno));
	_exit(126);
}

/* The program (and stdin) files, in the current directory (the workdir). */
static void child_write_files(const struct child_plan *p)
{
	_cleanup_close_ int dfd = -1;
	if (!p->code_name)
		return;
	/* the workdir belongs to the jail: files go in as the jail uid, no links followed */
	if (mkdir(".sbx", 0700) < 0 && errno != EEXIST)
		child_fail(2, "mkdir .sbx");
	dfd = open(".sbx", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		child_fail(2, "open .sbx");
	if ((errno = -child_write_file(dfd, p->code_name, p->code)) != 0)
		child_fail(2, "writing the program file");
	if (p->stdin_name && (errno = -child_write_file(dfd, p->stdin_name, p->stdin_data)) != 0)
		child_fail(2, "writing the stdin file");
}

static _Noreturn void child_main(const struct child_plan *p)
{
	struct rlimit rl;
	char c;
	int keep[2];
	size_t nkeep = 0;

	setsid();
	/* wait until the parent has put us in our cgroups */
	if (read(p->sync_fd, &c, 1) != 1)
		_exit(125);
	if (dup2(p->in_fd, 0) < 0 || dup2(p->out_fd, 1) < 0 || dup2(p->err_fd, 2) < 0)
		_exit(125);
	if (p->info_fd >= 0 && dup2(p->info_fd, RUN_CHILD_FD_INFO) < 0)
		child_fail(2, "info fd");
	if (p->seccomp_fd >= 0 && dup2(p->seccomp_fd, RUN_CHILD_FD_SECCOMP) < 0)
		child_fail(2, "seccomp fd");
	if (p->info_fd >= 0)
		keep[nkeep++] = RUN_CHILD_FD_INFO;
	if (p->seccomp_fd >= 0)
		keep[nkeep++] = RUN_CHILD_FD_SECCOMP;
	close_fds_from(3, keep, nkeep);

	rl = (struct rlimit){ 0, 0 };
	setrlimit(RLIMIT_CORE, &rl);
	rl = (struct rlimit){ RUN_NOFILE, RUN_NOFILE };
	setrlimit(RLIMIT_NOFILE, &rl);
	rl = (struct rlimit){ RUN_FSIZE_MAX, RUN_FSIZE_MAX };
	setrlimit(RLIMIT_FSIZE, &rl);
	rl.rlim_cur = rl.rlim_max = p->timeout_ms / 1000 + RUN_CPU_SLACK_S;
	setrlimit(RLIMIT_CPU, &rl);
	if (p->docker_run) {
		/* the docker client needs the engine's socket, so this child stays root; the
		 * workdir is the jail's, so the files go in from a grandchild as the jail uid.
		 * The client itself gets a fixed environment: the sandbox's env (which the API
		 * side controls) reaches the container only through --env, never a root client
		 * (DOCKER_HOST, DOCKER_CONFIG, ...). */
		static char *const client_env[] = { "PATH=" RUN_PATH, NULL };
		pid_t w, dc;
		int st = 0;
		if (chdir(p->workdir) < 0)
			child_fail(2, "chdir to the workdir");
		w = fork();
		if (w < 0)
			child_fail(2, "fork");
		if (w == 0) {
			struct child_plan q = *p;
			if (p->drop && (setgroups(0, NULL) < 0 || setresgid(p->uid, p->uid, p->uid) < 0 ||
			                setresuid(p->uid, p->uid, p->uid) < 0))
				child_fail(2, "dropping to the jail uid");
			q.docker_run = NULL;
			q.argv = NULL;
			child_write_files(&q);
			_exit(0);
		}
		if (waitpid(w, &st, 0) != w || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
			_exit(126);
		char *const inspect[] = { (char *)p->docker, "container", "inspect", "--format",
			                  "{{.State.Running}}", (char *)p->container, NULL };
		dc = fork();
		if (dc == 0) {
			int devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
			dup2(devnull, 1);
			dup2(devnull, 2);
			execve(inspect[0], inspect, client_env);
			_exit(127);
		}
		if (dc < 0 || waitpid(dc, &st, 0) != dc)
			child_fail(2, "docker container inspect");
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			dc = fork();
			if (dc == 0) {
				int devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
				dup2(devnull, 1); /* the container id; errors stay on stderr */
				execve(p->docker_run[0], p->docker_run, client_env);
				_exit(127);
			}
			if (dc < 0 || waitpid(dc, &st, 0) != dc || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
				dprintf(2, "sbx: docker run of the sandbox's container failed\n");
				_exit(125);
			}
		}
		execve(p->argv[0], p->argv, client_env);
		child_fail(2, "exec docker");
	}
	if (p->drop) {
		/* the jail uid is this sandbox's alone, so NPROC counts exactly its processes */
		rl = (struct rlimit){ p->pids, p->pids };
		setrlimit(RLIMIT_NPROC, &rl);
		if (setgroups(0, NULL) < 0 || setresgid(p->uid, p->uid, p->uid) < 0 ||
		    setresuid(p->uid, p->uid, p->uid) < 0)
			child_fail(2, "dropping to the jail uid");
		if (getuid() == 0 || geteuid() == 0 || setuid(0) == 0)
			_exit(125); /* never run a jail as host root */
	}
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		child_fail(2, "PR_SET_NO_NEW_PRIVS");
	if (chdir(p->workdir) < 0)
		child_fail(2, "chdir to the workdir");
	child_write_files(p);
	execve(p->argv[0], p->argv, p->envp);
	child_fail(2, "exec");
}

/* ---- building a run ------------------------------------------------------------------ */

static int env_build(const struct sandbox *s, struct proto_strv *env)
{
	char kv[PATH_MAX + 16];
	int r;
	if ((r = proto_strv_push(env, "PATH=" RUN_PATH)) < 0)
		return r;
	snprintf(kv, sizeof(kv), "HOME=%s", s->workdir);
	if ((r = proto_strv_push(env, kv)) < 0 || (r = proto_strv_push(env, "LANG=C.UTF-8")) < 0 ||
	    (r = proto_strv_push(env, "TERM=dumb")) < 0 || (r = proto_strv_push(env, "TMPDIR=/tmp")) < 0)
		return r;
	for (uint32_t i = 0; i < s->env.n; i++)
		if ((r = proto_strv_push(env, s->env.v[i])) < 0)
			return r;
	return 0;
}

/* The text sh -s reads: the code itself for plain sh, else a fixed script naming the
 * files the child writes (only run ids, which are ours, are interpolated). */
static int script_build(struct run *r, uint32_t lang, const char *code, const char *stdin_data,
                        char *code_name, char *stdin_name, size_t namesz)
{
	static const char *const ext[] = { "sh", "py", "js" };
	/* images put their interpreters anywhere on PATH (python:3.12-slim: /usr/local/bin) */
	static const char *const interp_host[] = { "/bin/sh", RUN_PYTHON, RUN_NODE };
	static const char *const interp_image[] = { "sh", "python3", "node" };
	const char *const *interp = r->sb.backend == BACKEND_DOCKER ? interp_image : interp_host;
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

bool sandbox_denies_inet(const struct sandbox *s)
{
	return !s->network && !s->ports_listen.n && !s->ports_connect.n && !s->ports_loopback.n;
}

const char *launcher_home_dir(void)
{
	struct passwd *pw = getpwuid(geteuid());
	return pw && pw->pw_dir && pw->pw_dir[0] == '/' ? pw->pw_dir : geteuid() == 0 ? "/root" : NULL;
}

static int stream_open(struct run *r, struct stream *s, int fd, uint64_t limit)
{
	s->fd = fd;
	s->limit = (size_t)limit;
	set_nonblock(fd);
	s->ev = event_new(r->L->base, fd, EV_READ | EV_PERSIST, stream_read_cb, r);
	return s->ev && event_add(s->ev, NULL) == 0 ? 0 : -ENOMEM;
}

static void refuse(run_done_fn done, void *arg, int code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void refuse(run_done_fn done, void *arg, int code, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	done(code, msg, NULL, arg);
}

static int run_spawn(struct run *r, const struct run_request *req, bool sandboxed)
{
	struct launcher *L = r->L;
	_cleanup_close_ int sync_r = -1, sync_w = -1, in_r = -1, out_w = -1, err_w = -1,
	                    info_w = -1, scfd = -1;
	int p[2];
	struct proto_strv argv = { 0 }, env = { 0 }, drun = { 0 };
	char code_name[96], stdin_name[96], container[PROTO_ID_MAX + 8] = "";
	const char *plan_docker = NULL;
	struct child_plan plan = { 0 };
	struct timeval tv;
	uint32_t timeout = req->timeout_ms ? req->timeout_ms : r->sb.timeout_ms;
	int e;
	pid_t pid;

	if (!timeout)
		timeout = SBX_TIMEOUT_MS_DEFAULT;
	if ((e = script_build(r, req->language, req->code, req->stdin_data, code_name, stdin_name,
	                      sizeof(code_name))) < 0)
		return e;
	if ((e = env_build(&r->sb, &env)) < 0)
		goto out;
	if (pipe2(p, O_CLOEXEC) < 0)
		goto errno_out;
	sync_r = p[0], sync_w = p[1];
	if (pipe2(p, O_CLOEXEC) < 0)
		goto errno_out;
	in_r = p[0], r->in_fd = p[1];
	if (pipe2(p, O_CLOEXEC) < 0)
		goto errno_out;
	out_w = p[1];
	if ((e = stream_open(r, &r->out, p[0], r->sb.output_bytes)) < 0)
		goto out;
	if (pipe2(p, O_CLOEXEC) < 0)
		goto errno_out;
	err_w = p[1];
	if ((e = stream_open(r, &r->err, p[0], r->sb.output_bytes)) < 0)
		goto out;

	if (sandboxed && r->sb.backend == BACKEND_DOCKER) {
		const char *docker = caps_docker_path();
		if (!docker) {
			e = -ENOENT;
			goto out;
		}
		if ((e = docker_run_argv(&r->sb, docker, &drun)) < 0 ||
		    (e = docker_exec_argv(&r->sb, docker, &argv)) < 0 ||
		    (e = docker_container_name(&r->sb, container, sizeof(container))) < 0)
			goto out;
		plan_docker = docker;
		add_limit(r, "syscalls", "docker-default");
	} else if (sandboxed) {
		struct bwrap_opts bo = { .bwrap = L->bwrap_path, .home = launcher_home_dir(),
			                 .data_dir = L->data_dir, .seccomp_fd = RUN_CHILD_FD_SECCOMP,
			                 .info_fd = RUN_CHILD_FD_INFO };
		if ((e = jail_seccomp_fd(sandbox_denies_inet(&r->sb), &scfd)) < 0)
			goto out;
		if (pipe2(p, O_CLOEXEC) < 0)
			goto errno_out;
		r->info_fd = p[0], info_w = p[1];
		if ((e = bwrap_argv(&r->sb, &bo, &argv)) < 0)
			goto out;
		add_limit(r, "syscalls", "seccomp");
	} else {
		if ((e = proto_strv_push(&argv, "/bin/sh")) < 0 || (e = proto_strv_push(&argv, "-s")) < 0)
			goto out;
	}

	/* resource limits: cgroups where the machine allows, rlimits always; a container's
	 * limits are the engine's (--memory = --memory-swap, --pids-limit) */
	if (plan_docker) {
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
	add_limit(r, "cpu", "rlimit");
	add_limit(r, "fsize", "rlimit");
	add_limit(r, "nofile", "rlimit");
	add_limit(r, "timeout", "deadline");
	add_limit(r, "output", "capped");

	plan = (struct child_plan){ .argv = argv.v, .envp = env.v, .workdir = r->sb.workdir,
		                    .code_name = code_name[0] ? code_name : NULL, .code = req->code,
		                    .stdin_name = stdin_name[0] ? stdin_name : NULL,
		                    .stdin_data = req->stdin_data, .uid = r->sb.jail_uid,
		                    .drop = L->root, .sync_fd = sync_r, .in_fd = in_r,
		                    .out_fd = out_w, .err_fd = err_w, .info_fd = info_w,
		                    .seccomp_fd = scfd, .pids = r->sb.pids ? r->sb.pids : SBX_PIDS_DEFAULT,
		                    .timeout_ms = timeout, .docker_run = plan_docker ? drun.v : NULL,
		                    .docker = plan_docker, .container = container };
	if (L->root && (r->sb.jail_uid < SBX_JAIL_UID_BASE)) {
		e = -EPERM; /* a sandbox row without its own uid never runs as root */
		goto out;
	}
	pid = fork();
	if (pid < 0)
		goto errno_out;
	if (pid == 0)
		child_main(&plan);
	r->pid = pid;
	/* registered before the program runs: the child waits on sync_r until here */
	registry_announce(r);
	if (r->have_cg && (e = cgroup_run_attach(&r->cg, pid)) < 0) {
		log_warnx("run %s: attaching to its cgroup: %s", r->res.id, strerror(-e));
		kill(pid, SIGKILL);
		/* reaped by SIGCHLD; the run reports the kill */
	}
	if (write(sync_w, "g", 1) != 1)
		kill(pid, SIGKILL);
	r->started_ms = now_ms();

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
	r->deadline_ev = evtimer_new(L->base, deadline_cb, r);
	tv = (struct timeval){ timeout / 1000, (timeout % 1000) * 1000 };
	if (!r->deadline_ev || evtimer_add(r->deadline_ev, &tv) < 0)
		kill(-pid, SIGKILL); /* a run without a deadline does not run */
	e = 0;
	goto out;
errno_out:
	e = -errno;
out:
	proto_strv_clear(&argv);
	proto_strv_clear(&env);
	proto_strv_clear(&drun);
	return e;
}

int run_code(struct launcher *L, const struct run_request *req, run_done_fn done, void *arg)
{
	struct msg_POLICY_REP pol;
	struct run *r;
	bool sandboxed = true;
	const char *why = NULL;
	int e;

	if (!sigchld_ev) {
		sigchld_ev = evsignal_new(L->base, SIGCHLD, sigchld_cb, NULL);
		if (!sigchld_ev || event_add(sigchld_ev, NULL) < 0)
			return -ENOMEM;
	}
	if (!req->code || req->language > LANG_MAX_) {
		refuse(done, arg, PERR_INVALID_ARGUMENT, "code and a known language are required");
		return 0;
	}
	if ((e = store_policy_get(L->db, &pol)) < 0) {
		refuse(done, arg, PERR_INTERNAL, "reading the exec policy: %s", strerror(-e));
		return 0;
	}
	/* python and node never ran outside a sandbox: off means refused */
	if (req->language == LANG_PYTHON && !pol.run_python) {
		refuse(done, arg, PERR_POLICY_REFUSED,
		       "runPython is switched off (Plugins \u2192 Sandbox)");
		return 0;
	}
	if (req->language == LANG_NODE && !pol.run_node) {
		refuse(done, arg, PERR_POLICY_REFUSED, "runNode is switched off (Plugins \u2192 Sandbox)");
		return 0;
	}
	/* the shell entrance predates the sandbox: off means as before, unsandboxed */
	if (req->is_exec && !pol.exec_shell)
		sandboxed = false;
	if (req->entrance == ENTRANCE_SCHEDULER && !pol.scheduler_script)
		sandboxed = false;
	if (L->live_runs >= SBX_CONCURRENT_RUNS_MAX) {
		refuse(done, arg, PERR_CONFLICT, "too many runs at once (at most %u)",
		       SBX_CONCURRENT_RUNS_MAX);
		return 0;
	}
	if (!(r = calloc(1, sizeof(*r))))
		return -ENOMEM;
	r->L = L;
	r->in_fd = r->info_fd = r->out.fd = r->err.fd = -1;
	r->done = done;
	r->done_arg = arg;
	if (req->sandbox_id[0] == '\0' && req->is_exec)
		e = sandbox_ensure_default(L, &r->sb);
	else
		e = store_sandbox_get(L->db, req->sandbox_id, &r->sb);
	if (e < 0) {
		free(r);
		refuse(done, arg, e == -ENOENT ? PERR_NOT_FOUND : PERR_INTERNAL, "%s",
		       e == -ENOENT ? "no such sandbox" : "reading the sandbox failed");
		return 0;
	}
	if (sandboxed && r->sb.backend == BACKEND_DOCKER) {
		const char *dwhy = NULL;
		if (caps_docker_unavailable(&dwhy) || !caps_docker_path()) {
			sandbox_clear(&r->sb);
			free(r);
			refuse(done, arg, PERR_ENGINE_UNAVAILABLE, "the docker backend is unavailable: %s",
			       dwhy && *dwhy ? dwhy : "no docker client found");
			return 0;
		}
	}
	if (sandboxed && caps_engine_broken(&why)) {
		/* a switch that is on while the engine is broken fails; never a raw shell */
		sandbox_clear(&r->sb);
		free(r);
		refuse(done, arg, PERR_ENGINE_UNAVAILABLE, "no backend can run sandboxes here: %s",
		       why && *why ? why : "the bwrap probe failed");
		return 0;
	}
	if (sandboxed && r->sb.network && r->sb.backend != BACKEND_DOCKER) {
		/* outbound network without the host's loopback needs the pasta fence (DESIGN.md
		 * §9), which this build does not have yet. Sharing the host's network namespace
		 * would hand the jail every local service, the daemon's API included: refuse. */
		sandbox_clear(&r->sb);
		free(r);
		refuse(done, arg, PERR_ENGINE_UNAVAILABLE,
		       "network: true needs the pasta network fence, which this build does not "
		       "have yet; without it the host's loopback services would be reachable. "
		       "Set network: false.");
		return 0;
	}
	if (sandboxed && !L->bwrap_path) {
		/* no bwrap at all: the named, reported degraded state, never silent */
		sandboxed = false;
		r->isolation = "degraded";
	} else {
		r->isolation = !sandboxed ? "none" : r->sb.backend == BACKEND_DOCKER ? "docker" : "bwrap";
	}
	if (sandboxed && r->sb.backend == BACKEND_DOCKER && r->sb.network)
		append_note(r, "docker network: outbound is open and the host's loopback is not "
		               "enforced (host.docker.internal); prefer network: false");
	if (random_id("run_", 12, r->res.id, sizeof(r->res.id)) < 0 ||
	    !(r->code = strdup(req->code))) {
		sandbox_clear(&r->sb);
		free(r->code);
		free(r);
		return -ENOMEM;
	}
	snprintf(r->res.sandbox_id, sizeof(r->res.sandbox_id), "%s", r->sb.id);
	r->res.language = req->language;
	r->res.entrance = req->entrance;
	r->res.isolation = r->isolation;
	r->res.created_at = now_unix_s();
	sandbox_note_run(&r->sb, &r->res.note); /* what the sandbox's settings do not enforce */
	if (!sandboxed && strcmp(r->isolation, "degraded") == 0)
		append_note(r, "bwrap is not installed: this run had no OS barrier");
	else if (!sandboxed)
		append_note(r, "execShell is switched off: this ran without a sandbox");
	LIST_INSERT_HEAD(&runs, r, entry);
	L->live_runs++;
	if ((e = run_spawn(r, req, sandboxed)) < 0) {
		char msg[128];
		LIST_REMOVE(r, entry);
		L->live_runs--;
		if (r->have_cg)
			cgroup_run_destroy(&r->cg);
		snprintf(msg, sizeof(msg), "starting the run failed: %s", strerror(-e));
		run_free(r);
		/* a switch that is on while the engine is broken fails; it never runs raw */
		done(PERR_ENGINE_UNAVAILABLE, msg, NULL, arg);
		return 0;
	}
	return 0;
}

int run_profile(struct launcher *L, const struct sandbox *s, struct msg_PROFILE_REP *ret)
{
	struct bwrap_opts bo = { .bwrap = L->bwrap_path, .home = launcher_home_dir(), .data_dir = L->data_dir,
		                 .seccomp_fd = RUN_CHILD_FD_SECCOMP, .info_fd = RUN_CHILD_FD_INFO };
	char note[PROTO_STR_MAX];
	bool deny_inet = sandbox_denies_inet(s);
	size_t off = 0;
	int e;

	memset(ret, 0, sizeof(*ret));
	if (s->backend == BACKEND_DOCKER) {
		struct proto_strv ex = { 0 };
		const char *docker = caps_docker_path();
		size_t len = 0;
		if (!docker)
			docker = "docker";
		if ((e = docker_run_argv(s, docker, &ret->argv)) < 0 ||
		    (e = docker_exec_argv(s, docker, &ex)) < 0) {
			proto_strv_clear(&ex);
			return e;
		}
		/* argv creates the container (once); text is each run's exec line */
		for (uint32_t i = 0; i < ex.n; i++)
			len += strlen(ex.v[i]) + 1;
		if ((ret->text = malloc(len + 1))) {
			ret->text[0] = '\0';
			for (uint32_t i = 0; i < ex.n; i++) {
				strcat(ret->text, ex.v[i]);
				if (i + 1 < ex.n)
					strcat(ret->text, " ");
			}
		}
		proto_strv_clear(&ex);
		ret->kind = strdup("docker");
		ret->note = strdup("fsMode does not apply to docker; the program arrives on stdin of "
		                   "sh -s in the container; at a deadline every process of the "
		                   "sandbox's uid in the container is killed (other runs of it too)");
		return ret->kind && ret->note && ret->text ? 0 : -ENOMEM;
	}
	if (!L->bwrap_path) {
		ret->kind = strdup("degraded");
		ret->note = strdup("bwrap is not installed: runs get no OS barrier");
		return ret->kind && ret->note ? 0 : -ENOMEM;
	}
	if ((e = bwrap_argv(s, &bo, &ret->argv)) < 0)
		return e;
	off += (size_t)snprintf(note + off, sizeof(note) - off,
	                        "runs as host uid %u with NO_NEW_PRIVS; fd %d carries the seccomp "
	                        "baseline (denied: ",
	                        L->root ? s->jail_uid : (unsigned)geteuid(), RUN_CHILD_FD_SECCOMP);
	for (size_t i = 0; jail_seccomp_denied[i] && off < sizeof(note) - 64; i++)
		off += (size_t)snprintf(note + off, sizeof(note) - off, "%s%s", i ? " " : "",
		                        jail_seccomp_denied[i]);
	snprintf(note + off, sizeof(note) - off,
	         "%s); limits: %s; timeout %u ms; output %llu bytes per stream",
	         deny_inet ? "; AF_INET/AF_INET6/AF_PACKET sockets" : "",
	         L->root ? "per-run cgroups (memory, pids) and rlimits" : "rlimits only",
	         s->timeout_ms, (unsigned long long)s->output_bytes);
	ret->kind = strdup("bwrap");
	ret->note = strdup(note);
	if (s->network)
		ret->text = strdup("network: true is refused until the pasta fence exists");
	return ret->kind && ret->note ? 0 : -ENOMEM;
}

/* Run argv detached (double fork, reparented away from us) so nobody has to reap it. */
static void spawn_detached(char *const argv[])
{
	pid_t pid = fork();
	if (pid == 0) {
		static char *const envp[] = { "PATH=" RUN_PATH, NULL };
		int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
		setsid();
		if (fork() != 0)
			_exit(0);
		dup2(devnull, 0);
		dup2(devnull, 1);
		dup2(devnull, 2);
		close_fds_from(3, NULL, 0);
		execve(argv[0], argv, envp);
		_exit(127);
	}
	if (pid > 0)
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
}

void run_docker_remove(struct launcher *L, const struct sandbox *s)
{
	struct proto_strv argv = { 0 };
	const char *docker = caps_docker_path();
	if (!docker || docker_rm_argv(s, docker, &argv) < 0)
		return;
	spawn_detached(argv.v);
	proto_strv_clear(&argv);
}

/* Killing the docker client does not end what it started in the container: end every
 * process of the jail uid there (the container's own pid 1, sleep, survives). This also
 * ends other runs of the same sandbox that are in flight at that moment. */
static void docker_kill_runs(const struct sandbox *s)
{
	char name[PROTO_ID_MAX + 8];
	const char *docker = caps_docker_path();
	if (!docker || docker_container_name(s, name, sizeof(name)) < 0)
		return;
	char *const argv[] = { (char *)docker, "exec", name, "kill", "-KILL", "-1", NULL };
	spawn_detached(argv);
}
