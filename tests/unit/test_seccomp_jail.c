/* The jail's baseline filter, loaded for real in a child process. */
#include <criterion/criterion.h>
#include <errno.h>
#include <linux/keyctl.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/filter.h>
#include <linux/seccomp.h>

#include "fence/jail_seccomp.h"

TestSuite(seccomp, .timeout = 10);

/* Load the filter from the fd the way bwrap does (a sock_fprog read from it). */
static void load(int fd)
{
	static struct sock_filter prog[4096];
	ssize_t n = read(fd, prog, sizeof(prog));
	struct sock_fprog fp = { .len = (unsigned short)(n / (ssize_t)sizeof(prog[0])), .filter = prog };
	if (n <= 0 || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &fp) < 0)
		_exit(100);
}

/* Runs body in a filtered child; the child's exit code is body's. */
static int in_child(enum jail_sock socks, int (*body)(void))
{
	int fd, status;
	pid_t pid;
	cr_assert_eq(jail_seccomp_fd(socks, &fd), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		load(fd);
		_exit(body());
	}
	close(fd);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status), "child died by signal %d", WTERMSIG(status));
	return WEXITSTATUS(status);
}

static int try_ptrace(void) { return ptrace(PTRACE_TRACEME, 0, 0, 0) < 0 && errno == EPERM ? 0 : 1; }
static int try_keyctl(void)
{
	return syscall(SYS_keyctl, KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 0) < 0 &&
	                       errno == EPERM
	               ? 0
	               : 1;
}
static int try_bpf(void) { return syscall(SYS_bpf, 0, NULL, 0) < 0 && errno == EPERM ? 0 : 1; }
static int try_userfaultfd(void)
{
	return syscall(SYS_userfaultfd, 0) < 0 && errno == EPERM ? 0 : 1;
}
static int try_io_uring(void)
{
	return syscall(SYS_io_uring_setup, 1, NULL) < 0 && errno == EPERM ? 0 : 1;
}
static int try_inet(void)
{
	int s = socket(AF_INET, SOCK_STREAM, 0);
	int s6 = socket(AF_INET6, SOCK_DGRAM, 0);
	return s < 0 && s6 < 0 && errno == EAFNOSUPPORT ? 0 : 1;
}
static int try_unix(void)
{
	int s = socket(AF_UNIX, SOCK_STREAM, 0);
	return s >= 0 ? 0 : 1;
}
/* ports only: TCP yes; UDP and ping (datagram) no, whatever flags ride on the type */
static int try_stream_not_dgram(void)
{
	int t = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int t6 = socket(AF_INET6, SOCK_STREAM, 0);
	int u = socket(AF_INET, SOCK_DGRAM, 0);
	int eu = errno;
	int u6 = socket(AF_INET6, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	int eu6 = errno;
	int ping = socket(AF_INET, SOCK_DGRAM, IPPROTO_ICMP);
	return t >= 0 && t6 >= 0 && u < 0 && eu == EACCES && u6 < 0 && eu6 == EACCES && ping < 0 ? 0 : 1;
}
static int try_udp(void) { return socket(AF_INET, SOCK_DGRAM, 0) >= 0 ? 0 : 1; }
static int try_packet(void)
{
	return socket(AF_PACKET, SOCK_RAW, 0) < 0 && (errno == EAFNOSUPPORT || errno == EACCES) ? 0 : 1;
}
static int try_getpid(void) { return getpid() > 0 ? 0 : 1; }

Test(seccomp, dangerous_calls_refused)
{
	cr_assert_eq(in_child(JAIL_SOCK_INET, try_ptrace), 0, "ptrace was allowed");
	cr_assert_eq(in_child(JAIL_SOCK_INET, try_keyctl), 0, "keyctl was allowed");
	cr_assert_eq(in_child(JAIL_SOCK_INET, try_bpf), 0, "bpf was allowed");
	cr_assert_eq(in_child(JAIL_SOCK_INET, try_userfaultfd), 0, "userfaultfd was allowed");
	cr_assert_eq(in_child(JAIL_SOCK_INET, try_io_uring), 0, "io_uring was allowed");
}

Test(seccomp, inet_sockets_only_without_network)
{
	cr_assert_eq(in_child(JAIL_SOCK_NO_INET, try_inet), 0, "AF_INET sockets allowed without network");
	cr_assert_eq(in_child(JAIL_SOCK_INET, try_inet), 1, "AF_INET refused although network is on");
	cr_assert_eq(in_child(JAIL_SOCK_NO_INET, try_unix), 0, "AF_UNIX refused");
}

Test(seccomp, ports_only_refuses_datagram_sockets)
{
	cr_assert_eq(in_child(JAIL_SOCK_NO_UDP, try_stream_not_dgram), 0,
	             "ports-only filter: TCP refused or UDP/ping allowed");
	cr_assert_eq(in_child(JAIL_SOCK_INET, try_udp), 0, "UDP refused with network on");
}

Test(seccomp, packet_sockets_refused_in_every_mode)
{
	for (int m = 0; m < JAIL_SOCK_N_; m++)
		cr_assert_eq(in_child((enum jail_sock)m, try_packet), 0, "AF_PACKET allowed in mode %d", m);
}

Test(seccomp, ordinary_calls_still_work)
{
	cr_assert_eq(in_child(JAIL_SOCK_NO_INET, try_getpid), 0);
}

Test(seccomp, filter_fd_is_sealed)
{
	int fd;
	cr_assert_eq(jail_seccomp_fd(JAIL_SOCK_NO_INET, &fd), 0);
	cr_assert_lt(write(fd, "x", 1), 0, "the filter memfd is writable");
	close(fd);
}

/* Compiled once, opened per run (issue 11): each fd is a file of its own at offset 0, so
 * reading one (as bwrap does) does not move another run's, and the contents are equal. */
Test(seccomp, each_run_gets_its_own_open_file_of_one_filter)
{
	static char a[65536], b[65536];
	int fa, fb, fc;
	ssize_t na, nb;
	cr_assert_eq(jail_seccomp_fd(JAIL_SOCK_NO_INET, &fa), 0);
	cr_assert_eq(jail_seccomp_fd(JAIL_SOCK_NO_INET, &fb), 0);
	na = read(fa, a, sizeof(a));
	cr_assert_gt(na, 0);
	cr_assert_eq(lseek(fb, 0, SEEK_CUR), 0, "reading one fd moved the other");
	nb = read(fb, b, sizeof(b));
	cr_assert_eq(na, nb);
	cr_assert_eq(memcmp(a, b, (size_t)na), 0);
	cr_assert_eq(jail_seccomp_fd(JAIL_SOCK_INET, &fc), 0);
	nb = read(fc, b, sizeof(b));
	cr_assert(nb > 0 && (nb != na || memcmp(a, b, (size_t)na) != 0),
	          "the filters with and without network are the same");
	cr_assert_lt(write(fc, "x", 1), 0);
	close(fa);
	close(fb);
	close(fc);
}
