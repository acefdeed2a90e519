/* sbx-api: the only process that parses untrusted input. It binds its loopback listener,
 * reads the token (sbxd wrote it), then confines itself (chroot + uid drop when root,
 * NO_NEW_PRIVS, Landlock with no filesystem access, a seccomp allow-list) before it
 * serves a single request. What it holds open it got before that. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <event2/event.h>
#include <event2/http.h>

#include "api.h"
#include "cleanup.h"
#include "confine.h"
#include "conn.h"
#include "http.h"
#include "listen.h"
#include "log.h"
#include "proto_chan.h"
#include "stubs.h"
#include "util.h"

#define API_NOBODY 65534

struct api *API;
static struct api api_state;

static _Noreturn void usage(void)
{
	fprintf(stderr, "usage: sbx-api --data-dir DIR --listen 127.0.0.1:PORT [--no-auth] "
	                "[--allow-remote] [--log-level L] [--call-deadline SECONDS]\n");
	exit(2);
}

/* The Host check (http.c host_ok) also accepts this host when --allow-remote was given;
 * NULL on loopback. A wildcard bind accepts any name: then the token, which --allow-remote
 * makes mandatory, is the boundary, and no browser can attach it on its own. */

/* <data>/api.token, written (0600) by sbxd alone before it starts us: this process only
 * reads it, so a confused or hostile API process can never replace the secret. */
static int token_load(const char *data_dir, char *token)
{
	_cleanup_free_ char *buf = NULL;
	char path[4096];
	size_t len;
	int r;

	if (snprintf(path, sizeof(path), "%s/api.token", data_dir) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	if ((r = read_file(path, 256, &buf, &len)) < 0)
		return r;
	while (len && (buf[len - 1] == '\n' || buf[len - 1] == '\r' || buf[len - 1] == ' '))
		buf[--len] = '\0';
	if (len < 16 || len > API_TOKEN_HEX_LEN)
		return -EINVAL;
	memcpy(token, buf, len + 1);
	return 0;
}

static void on_launcher_msg(struct proto_chan *ch, const struct proto_hdr *h, void *msg, int fd,
                            void *arg)
{
	stubs_dispatch(ch, h, msg, fd);
}

static const struct proto_dispatch launcher_table[] = {
	{ MSG_ERROR, ROLE_LAUNCHER, on_launcher_msg },      { MSG_HEALTH_REP, ROLE_LAUNCHER, on_launcher_msg },
	{ MSG_CAPS_REP, ROLE_LAUNCHER, on_launcher_msg },   { MSG_POLICY_REP, ROLE_LAUNCHER, on_launcher_msg },
	{ MSG_SBX_REP, ROLE_LAUNCHER, on_launcher_msg },    { MSG_LIST_END, ROLE_LAUNCHER, on_launcher_msg },
	{ MSG_OK, ROLE_LAUNCHER, on_launcher_msg },         { MSG_RUN_REP, ROLE_LAUNCHER, on_launcher_msg },
	{ MSG_PROFILE_REP, ROLE_LAUNCHER, on_launcher_msg },
	{ MSG_PROC_REP, ROLE_LAUNCHER, on_launcher_msg },
	{ MSG_KILL_REP, ROLE_LAUNCHER, on_launcher_msg },
	{ MSG_FILE_REP, ROLE_LAUNCHER, on_launcher_msg },
	{ MSG_TRACE_REP, ROLE_LAUNCHER, on_launcher_msg },
	{ MSG_METRICS_REP, ROLE_LAUNCHER, on_launcher_msg },
	{ MSG_APP_REP, ROLE_LAUNCHER, on_launcher_msg },
	{ MSG_APP_LOG_REP, ROLE_LAUNCHER, on_launcher_msg },
	{ MSG_SCHED_REP, ROLE_LAUNCHER, on_launcher_msg },
	{ MSG_STREAM_DATA, ROLE_LAUNCHER, on_launcher_msg }, { MSG_STREAM_END, ROLE_LAUNCHER, on_launcher_msg },
};

static void launcher_event(struct proto_chan *ch, enum proto_chan_event ev, const char *d, void *arg);

static void attach_launcher(int fd)
{
	API->launcher = proto_chan_new(API->base, fd, ROLE_API, ROLE_LAUNCHER, launcher_table,
	                               sizeof(launcher_table) / sizeof(launcher_table[0]),
	                               launcher_event, NULL);
	if (!API->launcher) {
		close(fd);
		log_warnx("cannot set up the launcher channel");
	}
}

static void launcher_event(struct proto_chan *ch, enum proto_chan_event ev, const char *d, void *arg)
{
	if (ev == PCHAN_READY) {
		log_info("launcher connected");
		return;
	}
	if (ev == PCHAN_REJECTED || ev == PCHAN_REPLACED) {
		log_warnx("launcher message %s: %s", ev == PCHAN_REJECTED ? "rejected" : "replaced", d);
		return;
	}
	log_warnx("launcher channel lost: %s", d);
	stubs_fail_chan(ch, "the launcher went away");
	if (API->launcher == ch)
		API->launcher = NULL;
	proto_chan_free(ch);
}

static void on_sbxd_msg(struct proto_chan *ch, const struct proto_hdr *h, void *msg, int fd,
                        void *arg)
{
	stubs_dispatch(ch, h, msg, fd);
}

/* sbxd restarted the launcher: here is the channel to the new one */
static void on_peer_fd(struct proto_chan *ch, const struct proto_hdr *h, void *msg, int fd,
                       void *arg)
{
	struct msg_PEER_FD *m = msg;
	if (m->role != ROLE_LAUNCHER) {
		close(fd);
		return;
	}
	if (API->launcher) {
		struct proto_chan *old = API->launcher;
		API->launcher = NULL;
		stubs_fail_chan(old, "the launcher was restarted");
		proto_chan_free(old);
	}
	attach_launcher(fd);
}

static const struct proto_dispatch sbxd_table[] = {
	{ MSG_STATUS_REP, ROLE_SBXD, on_sbxd_msg },
	{ MSG_ERROR, ROLE_SBXD, on_sbxd_msg },
	{ MSG_PEER_FD, ROLE_SBXD, on_peer_fd },
};

static void sbxd_event(struct proto_chan *ch, enum proto_chan_event ev, const char *d, void *arg)
{
	if (ev == PCHAN_READY || ev == PCHAN_REJECTED || ev == PCHAN_REPLACED) {
		if (ev != PCHAN_READY)
			log_warnx("sbxd message %s: %s", ev == PCHAN_REJECTED ? "rejected" : "replaced", d);
		return;
	}
	/* without the supervisor there is nobody to restart us or kill orphans: stop */
	log_warnx("sbxd channel lost (%s): exiting", d);
	event_base_loopexit(API->base, NULL);
}

static void on_term(evutil_socket_t s, short w, void *arg)
{
	log_info("SIGTERM: exiting");
	event_base_loopexit(API->base, NULL);
}

static void confine(const char *data_dir)
{
	struct confine_report *c = &API->confine;
	char empty[4096];
	int r;

	if (geteuid() == 0) {
		/* an empty, root-owned directory to chroot into */
		snprintf(empty, sizeof(empty), "%s/empty", data_dir);
		if (mkdir(empty, 0555) < 0 && errno != EEXIST)
			fatal("mkdir %s", empty);
		chmod(empty, 0555);
		if ((r = confine_drop_privs(empty, API_NOBODY, API_NOBODY, c)) < 0)
			fatalx("dropping privileges: %s", strerror(-r));
	} else {
		confine_drop_privs(NULL, getuid(), getgid(), c);
	}
	if ((r = confine_no_new_privs(c)) < 0)
		fatalx("PR_SET_NO_NEW_PRIVS: %s", strerror(-r));
	if ((r = confine_landlock_deny_all(c)) < 0)
		log_warnx("Landlock not applied: %s", strerror(-r));
	if ((r = confine_seccomp_api(c)) < 0)
		fatalx("seccomp allow-list: %s", strerror(-r));
	log_info("confined: chroot %s, uid %u, no_new_privs %s, landlock abi %d%s, seccomp %d calls",
	         c->chroot ? "yes" : "no", (unsigned)c->uid, c->no_new_privs ? "yes" : "no",
	         c->landlock_abi, c->landlock ? "" : " (not applied)", c->seccomp_syscalls);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "data-dir", required_argument, NULL, 'd' }, { "listen", required_argument, NULL, 'L' },
		{ "no-auth", no_argument, NULL, 'n' },        { "log-level", required_argument, NULL, 'l' },
		{ "allow-remote", no_argument, NULL, 'R' },   { "call-deadline", required_argument, NULL, 'D' },
		{ NULL, 0, NULL, 0 },
	};
	const char *data_dir = NULL, *listen = "127.0.0.1:7420";
	enum log_level lvl = LOG_LVL_INFO;
	char host[LISTEN_HOST_MAX];
	uint16_t port;
	struct event *term;
	bool allow_remote = false;
	unsigned deadline_s = PROTO_CALL_DEADLINE_S_DEFAULT;
	int c, r;

	API = &api_state;
	log_init("sbx-api", lvl);
	while ((c = getopt_long(argc, argv, "d:L:nl:RD:", opts, NULL)) != -1) {
		switch (c) {
		case 'D':
			if (parse_uint(optarg, 1, PROTO_CALL_DEADLINE_S_MAX, &deadline_s) < 0)
				usage();
			break;
		case 'd':
			data_dir = optarg;
			break;
		case 'L':
			listen = optarg;
			break;
		case 'n':
			API->no_auth = true;
			break;
		case 'R':
			allow_remote = true;
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
	if ((r = listen_parse(listen, allow_remote, host, sizeof(host), &port)) < 0)
		fatalx("--listen %s: %s", listen,
		       r == -EPERM ? "a non-loopback address needs --allow-remote" : "expected HOST:PORT");
	if (allow_remote && API->no_auth)
		fatalx("--allow-remote and --no-auth together: remote access always needs the token");
	if (!listen_host_is_loopback(host)) {
		snprintf(API->remote_host, sizeof(API->remote_host), "%s", host);
	}
	signal(SIGPIPE, SIG_IGN);
	if (!API->no_auth && (r = token_load(data_dir, API->token)) < 0)
		fatalx("%s/api.token: %s (sbxd creates it before it starts sbx-api)", data_dir,
		       r == -ENOENT ? "missing" : strerror(-r));
	if (!(API->base = event_base_new()))
		fatalx("event_base_new");
	stubs_init(API->base, deadline_s);
	API->sbxd = proto_chan_new(API->base, SBX_FD_PARENT, ROLE_API, ROLE_SBXD, sbxd_table,
	                           sizeof(sbxd_table) / sizeof(sbxd_table[0]), sbxd_event, NULL);
	if (!API->sbxd)
		fatalx("no sbxd channel on fd %d", SBX_FD_PARENT);
	attach_launcher(SBX_FD_PEER);
	/* before confinement: the descriptor budget the connection caps are sized to */
	if ((r = conn_raise_nofile()) < 0)
		log_warnx("raising RLIMIT_NOFILE: %s", strerror(-r));
	if ((r = http_start(API, host, port)) < 0)
		fatalx("cannot listen on %s:%u: %s", host, (unsigned)port, strerror(-r));
	if ((r = http_control_start(API, data_dir)) < 0)
		log_warnx("no control socket %s/%s: %s (sbxctl uses the token over TCP)", data_dir,
		          API_CONTROL_SOCKET, strerror(-r));
	term = evsignal_new(API->base, SIGTERM, on_term, NULL);
	event_add(term, NULL);
	confine(data_dir);
	log_info("serving http://%s%s%s:%u (auth %s)", strchr(host, ':') ? "[" : "", host,
	         strchr(host, ':') ? "]" : "", (unsigned)port,
	         API->no_auth ? "off" : "bearer token");
	event_base_dispatch(API->base);
	evhttp_free(API->http);
	conn_fini();
	event_free(term);
	proto_chan_free(API->launcher);
	proto_chan_free(API->sbxd);
	event_base_free(API->base);
	return 0;
}
