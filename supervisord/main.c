/* sbxd: the supervisor. Creates the socketpairs, fork+execs sbx-launcher and sbx-api,
 * restarts them with backoff, mirrors the launcher's process groups so a dead launcher
 * leaves no orphans, and shuts everything down in parallel on SIGTERM (DESIGN.md §1, §11). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <sys/file.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "cleanup.h"
#include "log.h"
#include "notify.h"
#include "sbxd.h"
#include "util.h"

/* Everything sbxd owns lives here: the group mirror alone is too big for the stack. */
static struct sbxd sbxd;

/* The API token: created once (0600, random), then only checked. Its value is never
 * printed or logged; sbxd says where it is. */
static int token_ensure(const char *data_dir, bool *ret_created)
{
	char path[SBXD_PATH_MAX], hex[SBXD_TOKEN_BYTES * 2 + 1];
	uint8_t rnd[SBXD_TOKEN_BYTES];
	_cleanup_close_ int fd = -1;
	struct stat st;
	int r;

	*ret_created = false;
	if (snprintf(path, sizeof(path), "%s/%s", data_dir, SBXD_TOKEN_NAME) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0 && errno == EEXIST) {
		if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) < 0)
			return -errno;
		if (fstat(fd, &st) < 0)
			return -errno;
		if (!S_ISREG(st.st_mode) || st.st_uid != geteuid())
			return -EPERM;
		if ((st.st_mode & 077) && fchmod(fd, 0600) < 0)
			return -errno;
		return 0;
	}
	if (fd < 0)
		return -errno;
	if ((r = random_bytes(rnd, sizeof(rnd))) < 0)
		goto fail;
	for (size_t i = 0; i < sizeof(rnd); i++)
		snprintf(hex + 2 * i, 3, "%02x", rnd[i]);
	/* no trailing newline: "$(cat api.token)" and a plain read both get exactly it */
	if ((r = write_all(fd, hex, strlen(hex))) < 0)
		goto fail;
	if (fsync(fd) < 0) {
		r = -errno;
		goto fail;
	}
	*ret_created = true;
	return 0;
fail:
	unlink(path);
	return r;
}

static int data_dir_prepare(const char *dir, bool root)
{
	struct stat st;
	/* 0711 as root: the jails' own uids must traverse to their workdirs, not list them */
	int r = mkdir_p(dir, root ? 0711 : 0700);
	if (r < 0)
		return r;
	if (stat(dir, &st) < 0)
		return -errno;
	if (!S_ISDIR(st.st_mode))
		return -ENOTDIR;
	return 0;
}

/* One sbxd per data directory: a second one's launcher would sweep the first's run
 * cgroups (killing its jails) and share its database. The lock is held for sbxd's life
 * (the fd is never closed; O_CLOEXEC keeps it out of the children); the file holds the
 * holder's pid for the message. */
static int data_dir_lock(const char *dir, long *ret_holder)
{
	char path[SBXD_PATH_MAX + 16], buf[24];
	ssize_t n;
	int fd;

	*ret_holder = 0;
	if (snprintf(path, sizeof(path), "%s/%s", dir, SBXD_LOCK_NAME) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	if ((fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600)) < 0)
		return -errno;
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		int e = errno;
		if ((n = pread(fd, buf, sizeof(buf) - 1, 0)) > 0) {
			buf[n] = '\0';
			*ret_holder = strtol(buf, NULL, 10);
		}
		close(fd);
		return e == EWOULDBLOCK ? -EBUSY : -e;
	}
	n = snprintf(buf, sizeof(buf), "%ld\n", (long)getpid());
	if (ftruncate(fd, 0) < 0 || pwrite(fd, buf, (size_t)n, 0) != n)
		log_warn("writing %s", path);
	return 0; /* fd stays open: the lock lives as long as sbxd */
}

static void watchdog_cb(evutil_socket_t fd, short what, void *arg)
{
	notify_send("WATCHDOG=1\n");
}

int main(int argc, char *argv[])
{
	struct sbxd *d = &sbxd;
	enum log_level lvl;
	const char *why;
	bool root = geteuid() == 0, token_created = false;
	int r;

	if (config_parse(argc, argv, &d->cfg, &why) < 0) {
		fprintf(stderr, "sbxd: %s\n%s", why, config_usage());
		return 2;
	}
	if (d->cfg.show_help) {
		fputs(config_usage(), stdout);
		return 0;
	}
	if (d->cfg.show_version) {
		printf("sbxd %s (wire protocol %d)\n", SBX_BUILD_ID, PROTO_VERSION);
		return 0;
	}
	if (!d->cfg.data_dir[0] &&
	    (r = config_default_data_dir(root, d->cfg.data_dir, sizeof(d->cfg.data_dir))) < 0) {
		fprintf(stderr, "sbxd: no data directory (set --data-dir or SBX_DATA_DIR): %s\n",
		        strerror(-r));
		return 2;
	}
	log_parse_level(d->cfg.log_level, &lvl);
	log_init("sbxd", lvl);
	notify_init(); /* $NOTIFY_SOCKET is sbxd's alone: taken, and cleared for the children */
	if ((r = data_dir_prepare(d->cfg.data_dir, root)) < 0) {
		errno = -r;
		fatal("data directory %s", d->cfg.data_dir);
	}
	{
		long holder;
		if ((r = data_dir_lock(d->cfg.data_dir, &holder)) == -EBUSY)
			fatalx("another sbxd (pid %ld) uses the data directory %s", holder,
			       d->cfg.data_dir);
		if (r < 0) {
			errno = -r;
			fatal("locking the data directory %s", d->cfg.data_dir);
		}
	}
	if ((r = sbxd_log_reopen(d)) < 0) {
		errno = -r;
		fatal("log file %s/%s", d->cfg.data_dir, SBXD_LOG_NAME);
	}
	if (!d->cfg.no_auth && (r = token_ensure(d->cfg.data_dir, &token_created)) < 0) {
		errno = -r;
		fatal("API token %s/%s (it must be a regular file owned by this user)",
		      d->cfg.data_dir, SBXD_TOKEN_NAME);
	}

	d->self_pid = getpid();
	d->self_pgid = getpgrp();
	d->started_at = now_unix_s();
	d->log_fd = d->cfg.foreground ? -1 : STDERR_FILENO;
#ifdef __linux__
	/* orphans of the launcher's spawns come to us, not to init: reaped, never lost */
	if (prctl(PR_SET_CHILD_SUBREAPER, 1) < 0)
		log_warn("PR_SET_CHILD_SUBREAPER");
#endif
	if (!(d->base = event_base_new()))
		fatalx("event_base_new failed");
	if ((r = signals_init(d)) < 0) {
		errno = -r;
		fatal("signal set-up");
	}
	if ((r = children_init(d)) < 0) {
		errno = -r;
		fatal("cannot prepare the children");
	}

	log_info("starting (pid %d): listen %s, data %s, auth %s%s", (int)d->self_pid,
	         d->cfg.listen, d->cfg.data_dir, d->cfg.no_auth ? "off" : "on",
	         token_created ? " (new token)" : "");
	printf("sbxd: listening on http://%s  (data: %s)\n", d->cfg.listen, d->cfg.data_dir);
	if (d->cfg.no_auth)
		printf("sbxd: auth is off (--no-auth): any local process can call "
		       "http://%s/api/sandbox/health\n",
		       d->cfg.listen);
	else
		printf("sbxd: token in %s/%s — curl -H \"Authorization: Bearer $(cat %s/%s)\" "
		       "http://%s/api/sandbox/health\n",
		       d->cfg.data_dir, SBXD_TOKEN_NAME, d->cfg.data_dir, SBXD_TOKEN_NAME,
		       d->cfg.listen);
	if (!d->cfg.foreground)
		printf("sbxd: logging to %s/%s\n", d->cfg.data_dir, SBXD_LOG_NAME);
	fflush(stdout);

	/* WatchdogSec=: WATCHDOG=1 at half the interval, from this loop, so a wedged sbxd is
	 * restarted by the service manager */
	struct event *watchdog = NULL;
	if (notify_watchdog_usec()) {
		uint64_t half = notify_watchdog_usec() / 2;
		struct timeval tv = { (time_t)(half / 1000000), (suseconds_t)(half % 1000000) };
		if (!(watchdog = event_new(d->base, -1, EV_PERSIST, watchdog_cb, NULL)) ||
		    event_add(watchdog, &tv) < 0)
			log_warnx("the service manager's watchdog cannot be served");
	}
	children_start_all(d);
	if (event_base_dispatch(d->base) < 0)
		log_warnx("event loop failed");

	if (watchdog)
		event_free(watchdog);
	children_free(d);
	signals_free(d);
	event_base_free(d->base);
	return d->exit_code;
}
