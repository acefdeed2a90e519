/* sbx-jail-init, the jail's first program (jailinit/main.c), run for real: what a program
 * under it can bind, connect, write and signal, and that it never runs before the
 * launcher says the network is ready. Probes use /usr/bin/python3 on loopback only. */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

TestSuite(jail_init, .timeout = 20);

#define OUT_MAX 8192

static char init_path[PATH_MAX];

static void find_init(void)
{
	const char *dir = getenv("SBX_BIN_DIR");
	snprintf(init_path, sizeof(init_path), "%s/sbx-jail-init", dir ? dir : "build/bin");
	cr_assert(access(init_path, X_OK) == 0, "no %s", init_path);
}

/* Run sbx-jail-init with argv (NULL-terminated, without argv[0]); stdout+stderr into out.
 * ready: -1 = no ready fd; otherwise the byte to send on fd 3 (0 = close without one). */
static int jrun(char *out, int ready, char *const args[])
{
	int op[2], rp[2] = { -1, -1 }, st;
	char *argv[640];
	size_t n = 0, got = 0;
	pid_t pid;

	find_init();
	argv[n++] = init_path;
	for (size_t i = 0; args[i] && n < 639; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	cr_assert_eq(pipe(op), 0);
	if (ready >= 0)
		cr_assert_eq(pipe(rp), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		dup2(op[1], 1);
		dup2(op[1], 2);
		if (ready >= 0) {
			dup2(rp[0], 3);
			close(rp[1]);
		}
		execv(argv[0], argv);
		_exit(99);
	}
	close(op[1]);
	if (ready >= 0) {
		close(rp[0]);
		if (ready > 0)
			cr_assert_eq(write(rp[1], &(char){ (char)ready }, 1), 1);
		close(rp[1]);
	}
	for (ssize_t k; (k = read(op[0], out + got, OUT_MAX - 1 - got)) > 0;)
		got += (size_t)k;
	out[got] = '\0';
	close(op[0]);
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static int listener(uint16_t *port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t sl = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	cr_assert(fd >= 0);
	cr_assert_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	cr_assert_eq(getsockname(fd, (struct sockaddr *)&sa, &sl), 0);
	cr_assert_eq(listen(fd, 8), 0);
	*port = ntohs(sa.sin_port);
	return fd;
}

static const char *py_bind =
	"import socket, sys\n"
	"for p in map(int, sys.argv[1:]):\n"
	"    s = socket.socket()\n"
	"    try:\n"
	"        s.bind(('127.0.0.1', p)); print('bound', p)\n"
	"    except OSError as e:\n"
	"        print('refused', p, e.errno)\n";

static const char *py_connect =
	"import socket, sys\n"
	"for p in map(int, sys.argv[1:]):\n"
	"    try:\n"
	"        socket.create_connection(('127.0.0.1', p), timeout=3); print('connected', p)\n"
	"    except OSError as e:\n"
	"        print('refused', p, e.errno)\n";

Test(jail_init, binds_only_the_listen_ports)
{
	char out[OUT_MAX], want[64];
	uint16_t free_port;
	int fd = listener(&free_port); /* a port number nobody else holds, closed below */
	close(fd);
	char p[16], q[16];
	snprintf(p, sizeof(p), "%u", free_port);
	snprintf(q, sizeof(q), "%u", free_port == 65535 ? 65534 : free_port + 1);
	cr_assert_eq(jrun(out, -1, (char *[]){ "--net-bind", p, "--fs-off", "--", "/usr/bin/python3",
	                                       "-c", (char *)py_bind, p, q, NULL }),
	             0, "%s", out);
	snprintf(want, sizeof(want), "bound %s", p);
	cr_expect(strstr(out, want), "%s", out);
	snprintf(want, sizeof(want), "refused %s 13", q);
	cr_expect(strstr(out, want), "an undeclared port was bound: %s", out);
}

Test(jail_init, connects_only_to_the_connect_ports_unless_any)
{
	char out[OUT_MAX], want[64], p[16], q[16];
	uint16_t pp, qq;
	int a = listener(&pp), b = listener(&qq);
	snprintf(p, sizeof(p), "%u", pp);
	snprintf(q, sizeof(q), "%u", qq);
	cr_assert_eq(jrun(out, -1, (char *[]){ "--net-connect", p, "--fs-off", "--", "/usr/bin/python3",
	                                       "-c", (char *)py_connect, p, q, NULL }),
	             0, "%s", out);
	snprintf(want, sizeof(want), "connected %s", p);
	cr_expect(strstr(out, want), "%s", out);
	snprintf(want, sizeof(want), "refused %s 13", q);
	cr_expect(strstr(out, want), "a second port was reachable: %s", out);

	cr_assert_eq(jrun(out, -1, (char *[]){ "--net-connect-any", "--fs-off", "--", "/usr/bin/python3",
	                                       "-c", (char *)py_connect, p, q, NULL }),
	             0, "%s", out);
	snprintf(want, sizeof(want), "connected %s", q);
	cr_expect(strstr(out, want), "--net-connect-any did not reach %s: %s", q, out);
	/* no options: neither bind nor connect */
	cr_assert_eq(jrun(out, -1, (char *[]){ "--fs-off", "--", "/usr/bin/python3", "-c",
	                                       (char *)py_connect, p, NULL }),
	             0, "%s", out);
	snprintf(want, sizeof(want), "refused %s 13", p);
	cr_expect(strstr(out, want), "no rules, yet connected: %s", out);
	close(a);
	close(b);
}

Test(jail_init, writes_only_under_the_rw_paths_and_signals_nothing_outside)
{
	char out[OUT_MAX], rw[] = "/tmp/sbx-ji-rw.XXXXXX", ro[] = "/tmp/sbx-ji-ro.XXXXXX", cmd[1024];
	cr_assert(mkdtemp(rw) && mkdtemp(ro));
	snprintf(cmd, sizeof(cmd),
	         "echo a > %s/f && echo wrote-rw; echo b > %s/f 2>/dev/null || echo ro-refused; "
	         "cat /etc/hostname >/dev/null && echo read-ok; kill -0 %d 2>/dev/null || echo signal-refused",
	         rw, ro, (int)getpid());
	cr_assert_eq(jrun(out, -1, (char *[]){ "--net-off", "--fs-rw", rw, "--fs-rw", "/dev/null", "--",
	                                       "/bin/sh", "-c", cmd, NULL }),
	             0, "%s", out);
	cr_expect(strstr(out, "wrote-rw"), "%s", out);
	cr_expect(strstr(out, "ro-refused"), "wrote outside the rw paths: %s", out);
	cr_expect(strstr(out, "read-ok"), "%s", out);
	cr_expect(strstr(out, "signal-refused"), "signalled a process outside: %s", out);
	char f[PATH_MAX];
	snprintf(f, sizeof(f), "%s/f", ro);
	cr_expect(access(f, F_OK) < 0, "the file outside the rw paths exists");
	snprintf(f, sizeof(f), "%s/f", rw);
	unlink(f);
	rmdir(rw);
	rmdir(ro);
}

/* The program runs only after the launcher's 'y'; a closed pipe means it never runs. */
Test(jail_init, the_program_waits_for_the_ready_byte)
{
	char out[OUT_MAX], marker[] = "/tmp/sbx-ji-marker.XXXXXX", cmd[256];
	int fd = mkstemp(marker);
	cr_assert(fd >= 0);
	close(fd);
	unlink(marker);
	snprintf(cmd, sizeof(cmd), "touch %s; echo ran", marker);
	cr_assert_eq(jrun(out, 'y', (char *[]){ "--ready-fd", "3", "--net-off", "--fs-off", "--",
	                                        "/bin/sh", "-c", cmd, NULL }),
	             0, "%s", out);
	cr_expect(strstr(out, "ran"));
	unlink(marker);
	cr_assert_eq(jrun(out, 0, (char *[]){ "--ready-fd", "3", "--net-off", "--fs-off", "--",
	                                      "/bin/sh", "-c", cmd, NULL }),
	             125, "%s", out);
	cr_expect(strstr(out, "not made ready"), "%s", out);
	cr_expect(access(marker, F_OK) < 0, "the program ran without the ready byte");
	cr_assert_eq(jrun(out, 'n', (char *[]){ "--ready-fd", "3", "--net-off", "--fs-off", "--",
	                                        "/bin/sh", "-c", cmd, NULL }),
	             125, "%s", out);
	cr_expect(access(marker, F_OK) < 0, "the program ran after a wrong byte");
}

Test(jail_init, bad_command_lines_exit_125)
{
	char out[OUT_MAX];
	char *const *bad[] = {
		(char *[]){ "--bogus", "--", "/bin/true", NULL },
		(char *[]){ "--net-bind", "0", "--", "/bin/true", NULL },
		(char *[]){ "--net-bind", "65536", "--", "/bin/true", NULL },
		(char *[]){ "--net-bind", "80x", "--", "/bin/true", NULL },
		(char *[]){ "--net-connect", "-1", "--", "/bin/true", NULL },
		(char *[]){ "--ready-fd", "1", "--", "/bin/true", NULL },
		(char *[]){ "--fs-rw", "relative", "--", "/bin/true", NULL },
		(char *[]){ "--net-off", "--net-bind", "80", "--", "/bin/true", NULL },
		(char *[]){ "/bin/true", NULL },
		(char *[]){ "--", "true", NULL },
		(char *[]){ "--", NULL },
		(char *[]){ "--net-bind", NULL },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_expect_eq(jrun(out, -1, (char *const *)bad[i]), 125, "case %zu: %s", i, out);
	cr_expect_eq(jrun(out, -1, (char *[]){ "--net-off", "--fs-off", "--", "/nonexistent", NULL }), 126);
}

/* JAILINIT_PORTS_MAX (256) ports are taken, one more is refused */
Test(jail_init, ports_at_the_limit_and_one_past)
{
	char out[OUT_MAX], nums[257][8];
	char *args[2 * 257 + 8];
	size_t n = 0;
	for (int i = 0; i < 256; i++) {
		snprintf(nums[i], sizeof(nums[i]), "%d", 20000 + i);
		args[n++] = "--net-connect";
		args[n++] = nums[i];
	}
	args[n++] = "--fs-off";
	args[n++] = "--";
	args[n++] = "/bin/true";
	args[n] = NULL;
	cr_expect_eq(jrun(out, -1, args), 0, "256 ports: %s", out);
	n -= 3;
	snprintf(nums[256], sizeof(nums[256]), "%d", 20256);
	args[n++] = "--net-bind";
	args[n++] = nums[256];
	args[n++] = "--fs-off";
	args[n++] = "--";
	args[n++] = "/bin/true";
	args[n] = NULL;
	cr_expect_eq(jrun(out, -1, args), 125, "257 ports accepted: %s", out);
}

/* --notify-fd: the listener of a notifying filter arrives on the socket, the program's own
 * exec is the first call reported, and every call goes on once let continue. The test
 * plays the launcher. */
Test(jail_init, notify_fd_hands_out_a_listener_that_reports_the_calls)
{
	int sv[2], op[2], st, listener = -1;
	unsigned execs = 0, opens = 0;
	char out[OUT_MAX], byte;
	size_t got = 0;
	pid_t pid;
	find_init();
	cr_assert_eq(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv), 0);
	cr_assert_eq(pipe(op), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		dup2(op[1], 1);
		dup2(op[1], 2);
		dup2(sv[1], 4);
		execl(init_path, init_path, "--notify-fd", "4", "--net-off", "--fs-off", "--", "/bin/sh",
		      "-c", "cat /etc/hostname > /dev/null; echo done", (char *)NULL);
		_exit(99);
	}
	close(op[1]);
	close(sv[1]);
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = { &byte, 1 };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
		              .msg_controllen = sizeof(u.buf) };
	cr_assert_eq(recvmsg(sv[0], &msg, 0), 1, "no listener came");
	struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
	cr_assert(c && c->cmsg_type == SCM_RIGHTS);
	memcpy(&listener, CMSG_DATA(c), sizeof(int));
	for (;;) {
		struct pollfd p = { .fd = listener, .events = POLLIN };
		struct seccomp_notif req;
		cr_assert_geq(poll(&p, 1, 5000), 1, "the jailed program stalled");
		if (!(p.revents & POLLIN))
			break; /* no task uses the filter any more */
		memset(&req, 0, sizeof(req));
		if (ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, &req) < 0)
			continue;
		execs += req.data.nr == 59;
		opens += req.data.nr == 257;
		struct seccomp_notif_resp resp = { .id = req.id, .flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE };
		ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp);
	}
	for (ssize_t k; (k = read(op[0], out + got, OUT_MAX - 1 - got)) > 0;)
		got += (size_t)k;
	out[got] = '\0';
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s", out);
	cr_expect(strstr(out, "done"), "%s", out);
	cr_expect_geq(execs, 2u, "sh and cat were reported");
	cr_expect_geq(opens, 1u, "the open of /etc/hostname was reported");
	close(listener);
	close(sv[0]);
	close(op[0]);
}
