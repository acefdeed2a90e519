/* sbx-jail-init: the first program of every bwrap jail (DESIGN.md §1). It does what bwrap
 * cannot: waits until the launcher has connected the jail's network (--ready-fd), then
 * puts the jail under Landlock (TCP port rules, a filesystem ruleset as a second wall
 * behind bwrap's mounts, and scoping of signals and abstract sockets), with --notify-fd
 * adds a seccomp filter that reports the file, exec and socket calls to the launcher by
 * user notification (tracing: "syscalls"; the listener goes out on that socket), and execs
 * the program. Static and libc-only: it runs inside a jail whose /usr may be anything.
 *
 *   sbx-jail-init [--ready-fd N] [--net-bind P]... [--net-connect P]... [--net-connect-any]
 *                 [--net-off] [--fs-rw PATH]... [--fs-off] [--notify-fd N] -- PROGRAM [ARG...]
 *
 * Exit 125: a wrong command line, the network was never made ready, or a rule could not
 * be applied (nothing ran); 126: PROGRAM could not be executed. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "landlock_abi.h"

#define JAILINIT_PORTS_MAX 256u /* --net-bind and --net-connect together */
#define JAILINIT_RW_MAX    64u  /* --fs-rw paths */
#define JAILINIT_EXIT      125
#define JAILINIT_EXIT_EXEC 126

struct opts {
	int ready_fd, notify_fd;
	uint16_t bind[JAILINIT_PORTS_MAX], connect[JAILINIT_PORTS_MAX];
	size_t nbind, nconnect;
	bool connect_any, net_off, fs_off;
	const char *rw[JAILINIT_RW_MAX];
	size_t nrw;
	char **prog;
};

static _Noreturn void die(const char *what, int e)
{
	if (e)
		fprintf(stderr, "sbx-jail-init: %s: %s\n", what, strerror(e));
	else
		fprintf(stderr, "sbx-jail-init: %s\n", what);
	_exit(JAILINIT_EXIT);
}

static long number(const char *s, long min, long max, const char *what)
{
	char *end;
	long v;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max || s[0] == '+' || s[0] == '-' || s[0] == ' ')
		die(what, 0);
	return v;
}

static void parse(int argc, char **argv, struct opts *o)
{
	int i;
	*o = (struct opts){ .ready_fd = -1, .notify_fd = -1 };
	for (i = 1; i < argc; i++) {
		const char *a = argv[i];
		bool has_arg = i + 1 < argc;
		if (strcmp(a, "--") == 0) {
			i++;
			break;
		}
		if (strcmp(a, "--ready-fd") == 0 && has_arg) {
			o->ready_fd = (int)number(argv[++i], 3, INT_MAX, "--ready-fd: a descriptor >= 3");
		} else if (strcmp(a, "--notify-fd") == 0 && has_arg) {
			o->notify_fd = (int)number(argv[++i], 3, INT_MAX, "--notify-fd: a descriptor >= 3");
		} else if ((strcmp(a, "--net-bind") == 0 || strcmp(a, "--net-connect") == 0) && has_arg) {
			bool b = a[6] == 'b';
			uint16_t p = (uint16_t)number(argv[++i], 1, 65535, "a port is 1..65535");
			if (o->nbind + o->nconnect >= JAILINIT_PORTS_MAX)
				die("too many ports", 0);
			if (b)
				o->bind[o->nbind++] = p;
			else
				o->connect[o->nconnect++] = p;
		} else if (strcmp(a, "--net-connect-any") == 0) {
			o->connect_any = true;
		} else if (strcmp(a, "--net-off") == 0) {
			o->net_off = true;
		} else if (strcmp(a, "--fs-off") == 0) {
			o->fs_off = true;
		} else if (strcmp(a, "--fs-rw") == 0 && has_arg) {
			const char *p = argv[++i];
			if (p[0] != '/' || strlen(p) >= PATH_MAX)
				die("--fs-rw: an absolute path", 0);
			if (o->nrw >= JAILINIT_RW_MAX)
				die("too many --fs-rw paths", 0);
			o->rw[o->nrw++] = p;
		} else {
			fprintf(stderr, "sbx-jail-init: unknown option or missing value: %s\n", a);
			_exit(JAILINIT_EXIT);
		}
	}
	if (i >= argc || strcmp(argv[i - 1], "--") != 0 || argv[i][0] != '/')
		die("usage: sbx-jail-init [options] -- /PROGRAM [ARG...]", 0);
	if (o->net_off && (o->nbind || o->nconnect || o->connect_any))
		die("--net-off with network rules", 0);
	o->prog = argv + i;
}

/* The launcher writes 'y' once the jail's network is connected; anything else (the pipe
 * closed: the fence failed) means the program never runs. */
static void wait_ready(int fd)
{
	char c = 0;
	ssize_t n;
	do
		n = read(fd, &c, 1);
	while (n < 0 && errno == EINTR);
	if (n != 1 || c != 'y')
		die("the jail's network was not made ready", 0);
	close(fd);
}

static void add_path(int rs, const char *path, uint64_t access)
{
	struct sbx_ll_path_beneath_attr pb = { .allowed_access = access };
	struct stat st;
	pb.parent_fd = open(path, O_PATH | O_CLOEXEC);
	if (pb.parent_fd < 0) {
		if (errno == ENOENT)
			return; /* a mount bwrap made with -try and found nothing for */
		die(path, errno);
	}
	/* a single file bound writable (a file mount) takes only the rights of files */
	if (fstat(pb.parent_fd, &st) == 0 && !S_ISDIR(st.st_mode))
		pb.allowed_access &= SBX_LL_FS_EXECUTE | SBX_LL_FS_WRITE_FILE | SBX_LL_FS_READ_FILE |
		                     SBX_LL_FS_TRUNCATE | SBX_LL_FS_IOCTL_DEV;
	if (syscall(SYS_landlock_add_rule, rs, SBX_LL_RULE_PATH_BENEATH, &pb, 0) < 0)
		die("a Landlock path rule", errno);
	close(pb.parent_fd);
}

static void add_port(int rs, uint16_t port, uint64_t access)
{
	struct sbx_ll_net_port_attr np = { .allowed_access = access, .port = port };
	if (syscall(SYS_landlock_add_rule, rs, SBX_LL_RULE_NET_PORT, &np, 0) < 0)
		die("a Landlock port rule", errno);
}

static void landlock(const struct opts *o)
{
	int abi = sbx_ll_abi();
	bool net = !o->net_off;
	struct sbx_ll_ruleset_attr attr = { 0 };
	int rs;

	if (net && abi < 4) {
		fprintf(stderr, "sbx-jail-init: this kernel has no Landlock network rules (ABI %d)\n", abi);
		_exit(JAILINIT_EXIT);
	}
	if (abi < 1)
		return; /* no Landlock: the launcher reports it; nothing was promised here */
	if (!o->fs_off)
		attr.handled_access_fs = sbx_ll_fs_rights(abi);
	if (net)
		attr.handled_access_net = SBX_LL_NET_BIND_TCP | (o->connect_any ? 0 : SBX_LL_NET_CONNECT_TCP);
	if (abi >= 6)
		attr.scoped = SBX_LL_SCOPE_ABSTRACT_UNIX_SOCKET | SBX_LL_SCOPE_SIGNAL;
	if (!attr.handled_access_fs && !attr.handled_access_net && !attr.scoped)
		return;
	rs = (int)syscall(SYS_landlock_create_ruleset, &attr, sbx_ll_attr_size(abi), 0);
	if (rs < 0)
		die("creating the Landlock ruleset", errno);
	if (!o->fs_off) {
		/* read and run everything bwrap shows; write only where it mounted writable */
		add_path(rs, "/", SBX_LL_FS_READ_FILE | SBX_LL_FS_READ_DIR | SBX_LL_FS_EXECUTE);
		for (size_t i = 0; i < o->nrw; i++)
			add_path(rs, o->rw[i], attr.handled_access_fs);
	}
	for (size_t i = 0; net && i < o->nbind; i++)
		add_port(rs, o->bind[i], SBX_LL_NET_BIND_TCP);
	for (size_t i = 0; net && !o->connect_any && i < o->nconnect; i++)
		add_port(rs, o->connect[i], SBX_LL_NET_CONNECT_TCP);
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		die("PR_SET_NO_NEW_PRIVS", errno);
	if (syscall(SYS_landlock_restrict_self, rs, 0) < 0)
		die("applying the Landlock ruleset", errno);
	close(rs);
}

/* The calls reported under tracing "syscalls" (x86_64 numbers; other architectures and
 * the 32-bit ABI are let through unreported, which the docs say). */
static const unsigned notify_nrs[] = {
	2 /* open */,        85 /* creat */,    257 /* openat */, 437 /* openat2 */,
	59 /* execve */,     322 /* execveat */, 42 /* connect */, 49 /* bind */,
	87 /* unlink */,     263 /* unlinkat */, 82 /* rename */,  264 /* renameat */,
	316 /* renameat2 */,
};
#define NOTIFY_N (sizeof(notify_nrs) / sizeof(notify_nrs[0]))

/* Install the notifying filter and hand its listener to the launcher. A filter of bwrap's
 * that refuses a call wins over this one (ERRNO before USER_NOTIF), so nothing refused is
 * ever reported as done. */
static void notify(int sock)
{
	struct sock_filter f[4 + NOTIFY_N + 2];
	size_t n = 0;
	f[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch));
	f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0);
	f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
	f[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr));
	for (size_t i = 0; i < NOTIFY_N; i++) /* a match jumps to the USER_NOTIF at the end */
		f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, notify_nrs[i],
		                                      (unsigned char)(NOTIFY_N - i), 0);
	f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
	f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF);
	struct sock_fprog prog = { .len = (unsigned short)n, .filter = f };
	char byte = 'n';
	struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
		              .msg_controllen = sizeof(u.buf) };
	struct cmsghdr *c;
	int listener;

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		die("PR_SET_NO_NEW_PRIVS", errno);
	listener = (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
	if (listener < 0)
		die("the notifying seccomp filter", errno);
	memset(u.buf, 0, sizeof(u.buf));
	c = CMSG_FIRSTHDR(&msg);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &listener, sizeof(int));
	/* sendmsg is not a reported call: the launcher gets the listener before any report */
	if (sendmsg(sock, &msg, 0) != 1)
		die("handing the listener to the launcher", errno);
	close(listener);
	close(sock);
}

int main(int argc, char **argv)
{
	struct opts o;
	parse(argc, argv, &o);
	if (o.ready_fd >= 0)
		wait_ready(o.ready_fd);
	landlock(&o);
	if (o.notify_fd >= 0)
		notify(o.notify_fd);
	/* the program inherits stdin/stdout/stderr only */
	if (syscall(SYS_close_range, 3, ~0u, 0) < 0)
		for (int fd = 3; fd < 1024; fd++)
			close(fd);
	execv(o.prog[0], o.prog);
	fprintf(stderr, "sbx-jail-init: executing %s: %s\n", o.prog[0], strerror(errno));
	return JAILINIT_EXIT_EXEC;
}
