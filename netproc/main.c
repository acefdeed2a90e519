/* sbx-net: see netd.h. Started by sbx-launcher with its channel on fd 3:
 *   sbx-net --uid U --gid G [--hosts FILE] [--deny ADDR]...
 * It reads what it needs (the hosts file, the host's resolv.conf) first, then confines
 * itself for good: its own uid, no new privileges, Landlock with no files (TCP connect
 * stays open, bind is denied), a seccomp allow-list without open or exec. */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <event2/dns.h>
#include <event2/event.h>

#include "confine.h"
#include "log.h"
#include "netd.h"
#include "util.h"

#define NETD_FD 3

struct netd D;

/* What it needs beyond the API's event-loop list: outbound sockets of its own. */
static const char *const netd_syscalls[] = { "socket", "connect", "getsockname", "getpeername",
	                                     "setsockopt", "getsockopt", "shutdown", "sendmmsg",
	                                     "recvmmsg", NULL };

static void channel_cb(evutil_socket_t fd, short what, void *arg)
{
	static union netmsg m, out;
	int fds[NETMSG_LISTEN_MAX + 1];
	size_t nfds = NETMSG_LISTEN_MAX + 1;
	int r = netmsg_recv(fd, &m, fds, &nfds);

	if (r == -EPIPE) { /* the launcher is gone: so is every jail we served */
		event_base_loopbreak(D.base);
		return;
	}
	if (r == -EAGAIN)
		return;
	memset(&out, 0, sizeof(out));
	if (r < 0) {
		log_warnx("a message from the launcher was refused: %s", strerror(-r));
		out.result.type = NETMSG_RESULT;
		out.result.err = r;
		snprintf(out.result.text, sizeof(out.result.text), "malformed message");
	} else if (m.type == NETMSG_OPEN) {
		out.result.type = NETMSG_RESULT;
		out.result.err = session_open(&m.open, fds, nfds, out.result.text, sizeof(out.result.text));
	} else if (m.type == NETMSG_CLOSE) {
		for (size_t i = 0; i < nfds; i++)
			close(fds[i]);
		session_close(m.close.run_id, &out.refused);
	} else {
		for (size_t i = 0; i < nfds; i++)
			close(fds[i]);
		out.result.type = NETMSG_RESULT;
		out.result.err = -EPROTO;
		snprintf(out.result.text, sizeof(out.result.text), "unexpected message %u", m.type);
	}
	if ((r = netmsg_send(fd, &out, NULL, 0)) < 0) {
		log_warnx("answering the launcher: %s", strerror(-r));
		event_base_loopbreak(D.base);
	}
}

static _Noreturn void usage(void)
{
	fprintf(stderr, "usage: sbx-net --uid UID --gid GID [--hosts FILE] [--deny ADDR]... (channel on fd 3)\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "uid", required_argument, NULL, 'u' }, { "gid", required_argument, NULL, 'g' },
		{ "hosts", required_argument, NULL, 'H' }, { "deny", required_argument, NULL, 'D' },
		{ NULL, 0, NULL, 0 },
	};
	struct confine_report rep = { 0 };
	union netmsg hello = { 0 };
	struct event *ch;
	const char *hosts = NULL;
	unsigned uid = 0, gid = 0;
	bool have_uid = false, have_gid = false;
	int c, r;

	log_init("sbx-net", LOG_LVL_INFO);
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'u':
			if (parse_uint(optarg, 1, 0x7fffffff, &uid) < 0)
				usage();
			have_uid = true;
			break;
		case 'g':
			if (parse_uint(optarg, 1, 0x7fffffff, &gid) < 0)
				usage();
			have_gid = true;
			break;
		case 'H':
			hosts = optarg;
			break;
		case 'D':
			if (D.ndeny < NETD_DENY_MAX && inet_pton(AF_INET, optarg, &D.deny[D.ndeny]) == 1)
				D.ndeny++;
			break;
		default:
			usage();
		}
	}
	if (!have_uid || !have_gid || optind != argc)
		usage();
	signal(SIGPIPE, SIG_IGN);
	{
		struct rlimit rl = { NETD_NOFILE, NETD_NOFILE };
		if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
			log_warnx("raising RLIMIT_NOFILE to %u: %s", NETD_NOFILE, strerror(errno));
	}
	if (hosts && (r = hosts_load(hosts)) < 0)
		log_warnx("--hosts %s: %s (names resolve through the host's resolvers)", hosts, strerror(-r));
	if (!(D.base = event_base_new()))
		fatalx("event_base_new");
	/* the host's resolv.conf is read now: nothing is opened after confinement */
	if (!(D.dns = evdns_base_new(D.base, EVDNS_BASE_INITIALIZE_NAMESERVERS |
	                                             EVDNS_BASE_DISABLE_WHEN_INACTIVE)))
		log_warnx("no resolver configured: only --hosts names can be reached");
	if (D.dns)
		evdns_base_set_option(D.dns, "timeout:", "3");
	if ((r = confine_drop_privs(NULL, (uid_t)uid, (gid_t)gid, &rep)) < 0)
		fatalx("dropping to uid %u: %s", uid, strerror(-r));
	if ((r = confine_no_new_privs(&rep)) < 0)
		fatalx("no_new_privs: %s", strerror(-r));
	if ((r = confine_landlock_no_files(&rep, true)) < 0 && r != -EOPNOTSUPP)
		fatalx("landlock: %s", strerror(-r));
	if ((r = confine_seccomp_allow(&rep, netd_syscalls)) < 0)
		fatalx("seccomp: %s", strerror(-r));
	hello.hello = (struct netmsg_hello){ .type = NETMSG_HELLO, .uid = (uint32_t)getuid(),
		                             .gid = (uint32_t)getgid(),
		                             .landlock_abi = rep.landlock ? rep.landlock_abi : 0,
		                             .seccomp = rep.seccomp };
	evutil_make_socket_nonblocking(NETD_FD);
	if (!(ch = event_new(D.base, NETD_FD, EV_READ | EV_PERSIST, channel_cb, NULL)) ||
	    event_add(ch, NULL) < 0)
		fatalx("watching the launcher's channel");
	if ((r = netmsg_send(NETD_FD, &hello, NULL, 0)) < 0)
		fatalx("greeting the launcher: %s", strerror(-r));
	log_info("confined: uid %u, landlock abi %d, seccomp %s; %zu hosts names",
	         (unsigned)getuid(), hello.hello.landlock_abi, rep.seccomp ? "on" : "off", D.nhosts);
	event_base_dispatch(D.base);
	return 0;
}
