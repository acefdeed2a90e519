/* sbx-launcher: the only process that spawns jails and owns the database. It receives fixed
 * binary messages on fd 3 (from sbxd) and fd 4 (from sbx-api) and nothing else. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <event2/event.h>

#include "caps.h"
#include "apps.h"
#include "schedules.h"
#include "cleanup.h"
#include "confine.h"
#include "disk.h"
#include "listen.h"
#include "fence/netns_proxy.h"
#include "netrun.h"
#include "dispatch.h"
#include "fence/cgroup.h"
#include "launcher.h"
#include "log.h"
#include "proto_chan.h"
#include "runner.h"
#include "store.h"
#include "trace.h"
#include "util.h"

static _Noreturn void usage(void)
{
	fprintf(stderr, "usage: sbx-launcher --data-dir DIR [--log-level error|warn|info|debug]\n"
	                "       [--bwrap PATH] [--docker PATH] [--no-warm]\n"
	                "       [--api-listen HOST:PORT] [--hosts FILE]\n");
	exit(2);
}

static char *find_bwrap(void)
{
	static const char *const paths[] = { "/usr/bin/bwrap", "/bin/bwrap", "/usr/local/bin/bwrap" };
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++)
		if (access(paths[i], X_OK) == 0)
			return strdup(paths[i]);
	return NULL;
}

/* A helper binary installed next to this one (the libexec dir sbxd started us from). */
static char *find_sibling(const char *name)
{
	char self[PATH_MAX], *slash, *path = NULL;
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		return NULL;
	self[n] = '\0';
	if (!(slash = strrchr(self, '/')))
		return NULL;
	*slash = '\0';
	if (asprintf(&path, "%s/%s", self, name) < 0)
		return NULL;
	if (access(path, X_OK) < 0) {
		free(path);
		return NULL;
	}
	return path;
}

static char *find_pasta(void)
{
	static const char *const paths[] = { "/usr/bin/pasta", "/bin/pasta", "/usr/local/bin/pasta" };
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++)
		if (access(paths[i], X_OK) == 0)
			return strdup(paths[i]);
	return NULL;
}

static void own_dir(const char *path, mode_t mode);

/* <data>/net: pasta's pid FIFOs and the resolv.conf of proxy.allow jails, which name the
 * engine's resolver inside their own namespace (fence/netns_proxy.h). */
static void net_dir_init(struct launcher *L)
{
	char dir[PATH_MAX], text[256];
	_cleanup_close_ int fd = -1;
	int r;

	snprintf(dir, sizeof(dir), "%s/net", L->data_dir);
	own_dir(dir, L->root ? 0711 : 0700);
	if (asprintf(&L->resolv_conf, "%s/resolv.conf", dir) < 0)
		fatalx("out of memory");
	netns_proxy_resolv_conf(text, sizeof(text));
	unlink(L->resolv_conf);
	fd = open(L->resolv_conf, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	/* every jail uid reads it (the launcher's umask is 077) */
	if (fd < 0 || fchmod(fd, 0644) < 0 || (r = write_all(fd, text, strlen(text))) < 0)
		fatal("writing %s", L->resolv_conf);
}

/* A directory the launcher owns: created if missing, never a symlink, given `mode`. */
static void own_dir(const char *path, mode_t mode)
{
	struct stat st;
	_cleanup_close_ int fd = -1;

	if (mkdir(path, mode) < 0 && errno != EEXIST)
		fatal("mkdir %s", path);
	fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		fatal("open %s", path);
	if (fstat(fd, &st) < 0)
		fatal("stat %s", path);
	if (st.st_uid != geteuid())
		fatalx("%s is owned by uid %u, not by us", path, (unsigned)st.st_uid);
	if (fchmod(fd, mode) < 0)
		fatal("chmod %s", path);
}

/* SIGTERM (sbxd's shutdown fan-out) and SIGINT end the loop; main then stops every run
 * and removes its cgroups before exiting, inside sbxd's grace period. */
static void on_stop_signal(evutil_socket_t sig, short what, void *arg)
{
	struct launcher *L = arg;
	log_info("%s received: stopping every run", sig == SIGINT ? "SIGINT" : "SIGTERM");
	event_base_loopbreak(L->base);
}

/* Per-run cgroups of this instance: whatever a SIGKILLed predecessor left is killed and
 * removed before any new run starts; at exit the instance's parent groups go too. */
static void cgroups_start(struct launcher *L)
{
	int r;
	if (!L->root)
		return;
	if ((r = cgroup_instance_set(L->data_dir)) < 0)
		fatalx("naming the cgroup instance after %s: %s", L->data_dir, strerror(-r));
	atexit(cgroup_instance_release);
	if ((r = cgroup_sweep()) < 0)
		log_warnx("removing stale run cgroups of %s: %s", cgroup_instance_name(), strerror(-r));
	else
		log_info("run cgroups under parent %s; %d stale group(s) removed, their processes "
		         "killed first", cgroup_instance_name(), r);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "data-dir", required_argument, NULL, 'd' },
		{ "log-level", required_argument, NULL, 'l' },
		{ "docker", required_argument, NULL, 'D' },
		{ "bwrap", required_argument, NULL, 'B' },
		{ "no-warm", no_argument, NULL, 'W' },
		{ "api-listen", required_argument, NULL, 'A' },
		{ "hosts", required_argument, NULL, 'H' },
		{ NULL, 0, NULL, 0 },
	};
	struct launcher L = { 0 };
	struct event *sig_term = NULL, *sig_int = NULL;
	enum log_level lvl = LOG_LVL_INFO;
	const char *data_dir = NULL, *bwrap_opt = NULL;
	_cleanup_free_ char *db_path = NULL;
	int c, r;

	log_init("sbx-launcher", lvl);
	while ((c = getopt_long(argc, argv, "d:l:D:B:WA:H:", opts, NULL)) != -1) {
		switch (c) {
		case 'd':
			data_dir = optarg;
			break;
		case 'W':
			runner_warm_enable(false);
			break;
		case 'A':
			if (listen_parse(optarg, true, L.api_host, sizeof(L.api_host), &L.api_port) < 0)
				usage();
			break;
		case 'H':
			if (optarg[0] != '/' || !(L.hosts_file = strdup(optarg)))
				usage();
			break;
		case 'B':
			if (optarg[0] != '/')
				usage();
			bwrap_opt = optarg;
			break;
		case 'D':
			if (optarg[0] != '/')
				usage();
			L.docker_path = optarg;
			break;
		case 'l':
			if (log_parse_level(optarg, &lvl) < 0)
				usage();
			log_set_level(lvl);
			break;
		default:
			usage();
		}
	}
	if (!data_dir || data_dir[0] != '/' || optind != argc)
		usage();
	/* a dead peer must surface as EPIPE on the channel, not kill us */
	signal(SIGPIPE, SIG_IGN);
	umask(077);

	L.root = geteuid() == 0;
	if (!(L.data_dir = strdup(data_dir)) || asprintf(&L.sandboxes_dir, "%s/sandboxes", data_dir) < 0 ||
	    asprintf(&db_path, "%s/sbx.db", data_dir) < 0)
		fatalx("out of memory");
	/* jails run as other uids and must be able to traverse to their workdir */
	own_dir(L.data_dir, L.root ? 0711 : 0700);
	own_dir(L.sandboxes_dir, L.root ? 0711 : 0700);
	if ((r = store_open(db_path, &L.db)) < 0)
		fatalx("opening %s: %s", db_path, strerror(-r));
	if (chmod(db_path, 0600) < 0)
		fatal("chmod %s", db_path);
	L.bwrap_path = bwrap_opt ? strdup(bwrap_opt) : find_bwrap();
	if (!L.bwrap_path)
		log_warnx("bwrap not found: runs are DEGRADED (no OS barrier)");
	L.jail_init_path = find_sibling("sbx-jail-init");
	L.net_path = find_sibling("sbx-net");
	if (L.jail_init_path) { /* the tracing shims sit beside the binaries */
		char *slash, dir[PATH_MAX];
		snprintf(dir, sizeof(dir), "%s", L.jail_init_path);
		if ((slash = strrchr(dir, '/'))) {
			*slash = '\0';
			trace_init(dir);
		}
	}
	L.pasta_path = find_pasta();
	L.landlock_abi = confine_landlock_abi();
	if (L.landlock_abi < 0)
		L.landlock_abi = 0;
	if (!L.jail_init_path)
		log_warnx("sbx-jail-init not found next to sbx-launcher: no Landlock second wall, "
		          "and runs that need the network fence are refused");
	if (!L.pasta_path)
		log_warnx("pasta not found: sandboxes with ports or network: true are refused");
	L.net = (struct net_machine){ .pasta = L.pasta_path != NULL,
		                      .jail_init = L.jail_init_path != NULL,
		                      .net_proc = L.net_path != NULL,
		                      .landlock_abi = L.landlock_abi };
	net_dir_init(&L);

	cgroups_start(&L);

	if (!(L.base = event_base_new()))
		fatalx("event_base_new");
	/* two priorities: the stop signals (0) run before anything else that is ready (1), so
	 * a shutdown is not queued behind a hundred runs ending at once */
	if (event_base_priority_init(L.base, 2) < 0)
		fatalx("event_base_priority_init");
	sig_term = evsignal_new(L.base, SIGTERM, on_stop_signal, &L);
	sig_int = evsignal_new(L.base, SIGINT, on_stop_signal, &L);
	if (!sig_term || !sig_int || event_priority_set(sig_term, 0) < 0 ||
	    event_priority_set(sig_int, 0) < 0 || evsignal_add(sig_term, NULL) < 0 ||
	    evsignal_add(sig_int, NULL) < 0)
		fatalx("installing the SIGTERM/SIGINT handlers");
	/* what a run double-forks out of its groups becomes our child, not sbxd's or init's,
	 * and is reaped by the runner's SIGCHLD handler */
	if (prctl(PR_SET_CHILD_SUBREAPER, 1) < 0)
		log_warn("PR_SET_CHILD_SUBREAPER");
	if (runner_init(&L) < 0)
		fatalx("installing the SIGCHLD handler");
	if ((r = dispatch_start(&L, SBX_FD_PARENT, SBX_FD_PEER)) < 0)
		fatalx("building the channels on fds %d and %d failed", SBX_FD_PARENT, SBX_FD_PEER);
	caps_init(&L);
	caps_refresh(); /* the first probe runs while the rest of the daemon starts */
	/* before the loop serves anything: images of existing sandboxes back on their
	 * workdirs (after the caps probe has started, so the two run side by side) */
	disk_init(&L);
	if (L.disk_why)
		log_warnx("limits.diskMb is not enforced: %s", L.disk_why);
	disk_mount_all(&L);
	log_info("started: data %s, schema %d, %s, bwrap %s", L.data_dir, store_schema_version(L.db),
	         L.root ? "root (per-sandbox jail uids)" : "unprivileged",
	         L.bwrap_path ? L.bwrap_path : "absent");

	if ((r = apps_init(&L)) < 0)
		log_warnx("loading the apps: %s", strerror(-r));
	if ((r = sched_init(&L)) < 0)
		log_warnx("loading the schedules: %s", strerror(-r));

	event_base_dispatch(L.base);

	apps_shutdown(); /* no restarts while everything stops */
	caps_shutdown();
	sched_shutdown();
	runner_stop_all(&L); /* every exit path: a lost sbxd, SIGTERM, SIGINT */
	log_debug("shutdown: every run stopped");
	netrun_shutdown(&L);
	disk_unmount_all(&L);
	log_debug("shutdown: images unmounted");
	event_free(sig_term);
	event_free(sig_int);
	proto_chan_free(L.api);
	proto_chan_free(L.sbxd);
	store_close(L.db);
	event_base_free(L.base);
	free(L.bwrap_path);
	free(L.jail_init_path);
	free(L.net_path);
	free(L.pasta_path);
	free(L.hosts_file);
	free(L.resolv_conf);
	free(L.sandboxes_dir);
	free(L.data_dir);
	log_info("exiting");
	return 0;
}
