/* sbxd's signals, read as events in the main loop (libevent evsignal), and the parallel
 * shutdown of DESIGN.md §11: SIGTERM to both children, then to every group, one wait of
 * 300 ms while the loop keeps reaping, SIGKILL for the groups left, and up to
 * SBXD_CHILD_STOP_MS more for the children to finish their cleanup. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "notify.h"
#include "sbxd.h"
#include "util.h"

int sbxd_log_reopen(struct sbxd *d)
{
	char path[SBXD_PATH_MAX];
	int fd;

	if (d->cfg.foreground)
		return 0;
	if (snprintf(path, sizeof(path), "%s/%s", d->cfg.data_dir, SBXD_LOG_NAME) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY, 0600);
	if (fd < 0)
		return -errno;
	/* on fd 2, without O_CLOEXEC: children started from now on write here too */
	if (fd != STDERR_FILENO) {
		if (dup2(fd, STDERR_FILENO) < 0) {
			int r = -errno;
			close(fd);
			return r;
		}
		close(fd);
	}
	return 0;
}

/* Everything gone before the deadline: no need to sit out the rest of the 300 ms. */
static bool shutdown_done(struct sbxd *d)
{
	return children_all_stopped(d) && (d->groups_killed || mirror_count_alive(&d->mirror) == 0);
}

static void shutdown_finish(struct sbxd *d, bool deadline)
{
	size_t groups = 0;
	int left = 0;

	if (d->shutdown_finished)
		return;
	if (deadline && !d->groups_killed && !children_all_stopped(d)) {
		/* the jails go now; the children may finish cleaning up */
		struct timeval more = { SBXD_CHILD_STOP_MS / 1000, (SBXD_CHILD_STOP_MS % 1000) * 1000 };
		d->groups_killed = true;
		d->groups_sigkilled = mirror_signal_all(&d->mirror, SIGKILL);
		log_info("shutdown: %zu process groups SIGKILLed at the deadline; waiting for the "
		         "children", d->groups_sigkilled);
		evtimer_add(d->shutdown_timer, &more);
		return;
	}
	d->shutdown_finished = true;
	event_del(d->shutdown_poll);
	event_del(d->shutdown_timer);
	groups = d->groups_sigkilled;
	if (deadline) {
		groups += mirror_signal_all(&d->mirror, SIGKILL);
		for (int i = 0; i < CHILD_N_; i++)
			if (d->child[i].pid > 0 && kill(d->child[i].pid, SIGKILL) == 0)
				left++;
		/* SIGKILL cannot be caught: reap, briefly, our children and the orphans handed
		 * to us as subreaper, so none is left a zombie for an init that may not reap */
		uint64_t until = now_ms() + SBXD_SHUTDOWN_REAP_MS;
		while (!shutdown_done(d) && now_ms() < until) {
			struct timespec ts = { 0, 1000000 };
			children_reap(d);
			nanosleep(&ts, NULL);
		}
	}
	log_info("shutdown complete in %llu ms%s (SIGKILL: %d children, %zu groups)",
	         (unsigned long long)(now_ms() - d->shutdown_start_ms),
	         deadline ? " at the deadline" : "", left, groups);
	event_base_loopbreak(d->base);
}

static void shutdown_timer_cb(evutil_socket_t fd, short what, void *arg)
{
	children_reap(arg);
	shutdown_finish(arg, true);
}

static void shutdown_poll_cb(evutil_socket_t fd, short what, void *arg)
{
	struct sbxd *d = arg;
	if (shutdown_done(d))
		shutdown_finish(d, false);
}

void sbxd_shutdown_begin(struct sbxd *d)
{
	struct timeval grace = { 0, SBXD_SHUTDOWN_GRACE_MS * 1000 };
	struct timeval poll = { 0, SBXD_SHUTDOWN_POLL_MS * 1000 };
	size_t groups;

	d->shutting_down = true;
	d->shutdown_start_ms = now_ms();
	/* the children first: the launcher must begin its own shutdown (no restarts, its
	 * runs' cleanup) before the deaths of its runs reach it as SIGCHLD */
	for (int i = 0; i < CHILD_N_; i++)
		children_event(&d->child[i], CE_STOP);
	groups = mirror_signal_all(&d->mirror, SIGTERM);
	log_info("shutting down: SIGTERM to both children and %zu process groups", groups);
	notify_send("STOPPING=1\nSTATUS=stopping: SIGTERM to every run and both children\n");
	evtimer_add(d->shutdown_timer, &grace);
	event_add(d->shutdown_poll, &poll);
}

static void on_sigchld(evutil_socket_t sig, short what, void *arg)
{
	struct sbxd *d = arg;
	children_reap(d);
	if (d->shutting_down)
		shutdown_poll_cb(-1, 0, d);
}

static void on_sigterm(evutil_socket_t sig, short what, void *arg)
{
	struct sbxd *d = arg;
	if (!d->shutting_down) {
		log_info("%s received", sig == SIGINT ? "SIGINT" : "SIGTERM");
		sbxd_shutdown_begin(d);
		return;
	}
	/* asked twice: do not wait out the grace period */
	shutdown_finish(d, true);
}

static void on_sighup(evutil_socket_t sig, short what, void *arg)
{
	struct sbxd *d = arg;
	int r = sbxd_log_reopen(d);
	if (r < 0)
		log_warnx("SIGHUP: reopening %s/%s: %s", d->cfg.data_dir, SBXD_LOG_NAME, strerror(-r));
	else
		log_info("SIGHUP: log reopened");
}

int signals_init(struct sbxd *d)
{
	/* a child closing its channel must be an event, not our death */
	signal(SIGPIPE, SIG_IGN);
	d->sig_chld = evsignal_new(d->base, SIGCHLD, on_sigchld, d);
	d->sig_term = evsignal_new(d->base, SIGTERM, on_sigterm, d);
	d->sig_int = evsignal_new(d->base, SIGINT, on_sigterm, d);
	d->sig_hup = evsignal_new(d->base, SIGHUP, on_sighup, d);
	d->shutdown_timer = evtimer_new(d->base, shutdown_timer_cb, d);
	d->shutdown_poll = event_new(d->base, -1, EV_PERSIST, shutdown_poll_cb, d);
	if (!d->sig_chld || !d->sig_term || !d->sig_int || !d->sig_hup || !d->shutdown_timer ||
	    !d->shutdown_poll)
		return -ENOMEM;
	if (evsignal_add(d->sig_chld, NULL) < 0 || evsignal_add(d->sig_term, NULL) < 0 ||
	    evsignal_add(d->sig_int, NULL) < 0 || evsignal_add(d->sig_hup, NULL) < 0)
		return -EINVAL;
	return 0;
}

void signals_free(struct sbxd *d)
{
	struct event **owned[] = { &d->sig_chld, &d->sig_term,       &d->sig_int,
		                 &d->sig_hup,  &d->shutdown_timer, &d->shutdown_poll };
	for (size_t i = 0; i < sizeof(owned) / sizeof(owned[0]); i++) {
		if (*owned[i])
			event_free(*owned[i]);
		*owned[i] = NULL;
	}
}
