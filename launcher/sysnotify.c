/* Tracing "syscalls" (sysnotify.h): the launcher side of seccomp user notification. */
#include "sysnotify.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/seccomp.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#include "log.h"
#include "util.h"

#define PAGE 4096u

/* ---- reading the caller's memory ------------------------------------------------------ */

static ssize_t read_mem(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = { buf, len }, remote = { (void *)(uintptr_t)addr, len };
	return process_vm_readv(pid, &local, 1, &remote, 1, 0);
}

/* A NUL-terminated string at addr, page by page (it may end just before an unmapped one). */
static int read_str(pid_t pid, uint64_t addr, char *out, size_t max)
{
	size_t got = 0;
	out[0] = '\0';
	if (!addr)
		return -EFAULT;
	while (got + 1 < max) {
		size_t chunk = PAGE - (size_t)((addr + got) % PAGE);
		ssize_t n;
		if (chunk > max - 1 - got)
			chunk = max - 1 - got;
		if ((n = read_mem(pid, addr + got, out + got, chunk)) <= 0)
			break;
		char *nul = memchr(out + got, '\0', (size_t)n);
		if (nul)
			return 0;
		got += (size_t)n;
	}
	out[got] = '\0';
	return got ? 0 : -EFAULT;
}

/* ---- JSON, written here without a parser: escaped so any bytes stay one line ---------- */

struct jbuf {
	char *p;
	size_t off, size;
};

static void jraw(struct jbuf *b, const char *s)
{
	size_t n = strlen(s);
	if (b->off + n < b->size) {
		memcpy(b->p + b->off, s, n);
		b->off += n;
	}
	b->p[b->off < b->size ? b->off : b->size - 1] = '\0';
}

static void jstr(struct jbuf *b, const char *s)
{
	char esc[8];
	jraw(b, "\"");
	for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
		if (*c == '"' || *c == '\\') {
			esc[0] = '\\';
			esc[1] = (char)*c;
			esc[2] = '\0';
		} else if (*c < 0x20 || *c >= 0x7f) {
			snprintf(esc, sizeof(esc), "\\u%04x", *c); /* bytes, not characters */
		} else {
			esc[0] = (char)*c;
			esc[1] = '\0';
		}
		jraw(b, esc);
	}
	jraw(b, "\"");
}

/* ---- what a call did ------------------------------------------------------------------ */

/* reads of the system's libraries and runtime lookups are noise; writes never are */
static const char *const quiet[] = { "/usr/", "/lib/", "/lib32/", "/lib64/", "/etc/ld.so.cache",
	                             "/etc/localtime", "/proc/", "/sys/", "/dev/", "/run/systemd/",
	                             "/run/userdb/", "/run/host/", "/etc/userdb/" };

static bool is_quiet(const char *path, uint64_t flags)
{
	size_t pl = strlen(path);
	if (flags & O_PATH)
		return true; /* a handle to walk from, not a read of anything */
	for (size_t i = 0; i < sizeof(quiet) / sizeof(quiet[0]); i++) {
		size_t ql = strlen(quiet[i]);
		/* "/usr/..." and the directory "/usr" itself */
		if (strncmp(path, quiet[i], ql) == 0 || (pl + 1 == ql && strncmp(path, quiet[i], pl) == 0))
			return true;
	}
	return strcmp(path, "/") == 0 || strcmp(path, "/etc") == 0 || strcmp(path, "/run") == 0;
}

/* path as the caller named it, made absolute against its cwd or dirfd */
static void absolute(pid_t pid, int dirfd, const char *path, char *out, size_t outsz)
{
	char link[64], base[PATH_MAX];
	ssize_t n;
	if (path[0] == '/' || !path[0]) {
		snprintf(out, outsz, "%s", path);
		return;
	}
	if (dirfd == AT_FDCWD)
		snprintf(link, sizeof(link), "/proc/%d/cwd", (int)pid);
	else
		snprintf(link, sizeof(link), "/proc/%d/fd/%d", (int)pid, dirfd);
	if ((n = readlink(link, base, sizeof(base) - 1)) <= 0) {
		snprintf(out, outsz, "%s", path);
		return;
	}
	base[n] = '\0';
	snprintf(out, outsz, "%s%s%s", base, strcmp(base, "/") ? "/" : "", path);
}

static bool path_arg(pid_t pid, int dirfd, uint64_t addr, char *out, size_t outsz)
{
	char raw[SYSNOTIFY_STR_MAX];
	if (read_str(pid, addr, raw, sizeof(raw)) < 0)
		return false;
	absolute(pid, dirfd, raw, out, outsz);
	return true;
}

static void sockaddr_event(struct jbuf *b, pid_t pid, uint64_t addr, uint64_t len)
{
	struct sockaddr_storage ss = { 0 };
	char host[INET6_ADDRSTRLEN], num[16];
	if (len > sizeof(ss))
		len = sizeof(ss);
	if (len < sizeof(sa_family_t) || read_mem(pid, addr, &ss, (size_t)len) != (ssize_t)len)
		return;
	if (ss.ss_family == AF_INET && len >= sizeof(struct sockaddr_in)) {
		const struct sockaddr_in *in = (const void *)&ss;
		inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
		snprintf(num, sizeof(num), "%u", ntohs(in->sin_port));
	} else if (ss.ss_family == AF_INET6 && len >= sizeof(struct sockaddr_in6)) {
		const struct sockaddr_in6 *in6 = (const void *)&ss;
		inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
		snprintf(num, sizeof(num), "%u", ntohs(in6->sin6_port));
	} else if (ss.ss_family == AF_UNIX) {
		const struct sockaddr_un *un = (const void *)&ss;
		char path[sizeof(un->sun_path) + 2];
		size_t pl = len - offsetof(struct sockaddr_un, sun_path);
		if (pl > sizeof(un->sun_path))
			pl = sizeof(un->sun_path);
		if (pl && un->sun_path[0] == '\0') { /* abstract */
			path[0] = '@';
			memcpy(path + 1, un->sun_path + 1, pl - 1);
			path[pl] = '\0';
		} else {
			memcpy(path, un->sun_path, pl);
			path[pl] = '\0';
		}
		jraw(b, ",\"path\":");
		jstr(b, path);
		return;
	} else {
		return;
	}
	jraw(b, ",\"host\":");
	jstr(b, host);
	jraw(b, ",\"port\":");
	jraw(b, num);
}

static void argv_event(struct jbuf *b, pid_t pid, uint64_t argv, const char *file)
{
	jraw(b, ",\"argv\":[");
	for (unsigned i = 0; i < SYSNOTIFY_ARGV_MAX; i++) {
		uint64_t p = 0;
		char s[SYSNOTIFY_STR_MAX];
		if (!argv || read_mem(pid, argv + 8u * i, &p, sizeof(p)) != sizeof(p) || !p ||
		    read_str(pid, p, s, sizeof(s)) < 0) {
			if (i == 0)
				jstr(b, file); /* no argv: the file at least */
			break;
		}
		if (i)
			jraw(b, ",");
		jstr(b, s);
	}
	jraw(b, "]");
}

/* The event of one notification as a JSON line in out, or "" for none (a quiet read). */
static void describe(const struct seccomp_notif *req, char *out, size_t outsz)
{
	const __u64 *a = req->data.args;
	pid_t pid = (pid_t)req->pid;
	struct jbuf b = { out, 0, outsz };
	char path[PATH_MAX], to[PATH_MAX], num[24];
	uint64_t flags = 0;
	const char *kind = NULL;
	int nr = req->data.nr;

	out[0] = '\0';
	path[0] = to[0] = '\0';
	switch (nr) {
	case 2:  /* open(path, flags) */
	case 85: /* creat(path, mode) */
		if (!path_arg(pid, AT_FDCWD, a[0], path, sizeof(path)))
			return;
		flags = nr == 85 ? (O_CREAT | O_WRONLY | O_TRUNC) : a[1];
		break;
	case 257: /* openat(dirfd, path, flags) */
		if (!path_arg(pid, (int)a[0], a[1], path, sizeof(path)))
			return;
		flags = a[2];
		break;
	case 437: /* openat2(dirfd, path, how, size): how->flags first */
		if (!path_arg(pid, (int)a[0], a[1], path, sizeof(path)) ||
		    read_mem(pid, a[2], &flags, sizeof(flags)) != sizeof(flags))
			return;
		break;
	case 59:  /* execve(path, argv, envp) */
	case 322: /* execveat(dirfd, path, argv, envp, flags) */
		if (!path_arg(pid, nr == 59 ? AT_FDCWD : (int)a[0], nr == 59 ? a[0] : a[1], path, sizeof(path)))
			return;
		kind = "spawn";
		break;
	case 42: /* connect(fd, addr, len) */
		kind = "connect";
		break;
	case 49: /* bind(fd, addr, len) */
		kind = "bind";
		break;
	case 87:  /* unlink(path) */
	case 263: /* unlinkat(dirfd, path, flags) */
		if (!path_arg(pid, nr == 87 ? AT_FDCWD : (int)a[0], nr == 87 ? a[0] : a[1], path, sizeof(path)))
			return;
		kind = "unlink";
		break;
	case 82:  /* rename(old, new) */
	case 264: /* renameat(olddir, old, newdir, new) */
	case 316: /* renameat2(olddir, old, newdir, new, flags) */
		if (nr == 82 ? !path_arg(pid, AT_FDCWD, a[0], path, sizeof(path)) ||
		                   !path_arg(pid, AT_FDCWD, a[1], to, sizeof(to))
		             : !path_arg(pid, (int)a[0], a[1], path, sizeof(path)) ||
		                   !path_arg(pid, (int)a[2], a[3], to, sizeof(to)))
			return;
		kind = "rename";
		break;
	default:
		return;
	}
	if (!kind) { /* an open: a read or a write by its flags */
		bool write = (flags & (O_WRONLY | O_RDWR | O_CREAT | O_TRUNC | O_APPEND)) != 0;
		if (!write && is_quiet(path, flags))
			return;
		kind = write ? "write" : "read";
	}
	jraw(&b, "{\"kind\":");
	jstr(&b, kind);
	snprintf(num, sizeof(num), "%d", (int)pid);
	jraw(&b, ",\"pid\":");
	jraw(&b, num);
	snprintf(num, sizeof(num), "%llu", (unsigned long long)now_unix_ms());
	jraw(&b, ",\"t\":");
	jraw(&b, num);
	jraw(&b, ",\"source\":\"syscall\"");
	if (nr == 42 || nr == 49) {
		sockaddr_event(&b, pid, a[1], a[2]);
	} else if (nr == 59 || nr == 322) {
		jraw(&b, ",\"path\":");
		jstr(&b, path);
		argv_event(&b, pid, nr == 59 ? a[1] : a[2], path);
	} else {
		jraw(&b, ",\"path\":");
		jstr(&b, path);
		if (to[0]) {
			jraw(&b, ",\"to\":");
			jstr(&b, to);
		}
	}
	jraw(&b, "}");
	if (b.off + 1 >= b.size) /* cut: a line that is not whole JSON is not kept */
		out[0] = '\0';
}

/* ---- the event loop side ----------------------------------------------------------------- */

static void let_go(int listener, uint64_t id)
{
	struct seccomp_notif_resp resp = { .id = id, .flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE };
	/* ENOENT: the caller went away (a signal, the run's end) meanwhile */
	ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp);
}

static void listener_close(struct sysnotify *n)
{
	if (n->ev) {
		event_free(n->ev);
		n->ev = NULL;
	}
	if (n->listener >= 0) {
		close(n->listener);
		n->listener = -1;
	}
}

static void on_notify(evutil_socket_t fd, short what, void *arg)
{
	struct sysnotify *n = arg;
	for (unsigned i = 0; i < SYSNOTIFY_PER_WAKE && n->listener >= 0; i++) {
		struct pollfd p = { .fd = n->listener, .events = POLLIN };
		struct seccomp_notif req;
		char line[TRACE_LINE_MAX];
		if (poll(&p, 1, 0) <= 0)
			return;
		if (!(p.revents & POLLIN)) { /* POLLHUP: no process uses the filter any more */
			listener_close(n);
			return;
		}
		memset(&req, 0, sizeof(req));
		if (ioctl(n->listener, SECCOMP_IOCTL_NOTIF_RECV, &req) < 0) {
			if (errno == EINTR || errno == ENOENT)
				continue;
			log_warnx("seccomp notification: %s", strerror(errno));
			listener_close(n);
			return;
		}
		describe(&req, line, sizeof(line));
		/* what was read belongs to the caller only if it is still waiting on this call */
		if (line[0] && ioctl(n->listener, SECCOMP_IOCTL_NOTIF_ID_VALID, &req.id) == 0) {
			trace_emit(n->trace, line, strlen(line));
			n->events++;
		}
		let_go(n->listener, req.id);
	}
}

static void on_sock(evutil_socket_t fd, short what, void *arg)
{
	struct sysnotify *n = arg;
	char byte;
	struct iovec iov = { &byte, 1 };
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
		              .msg_controllen = sizeof(u.buf) };
	struct cmsghdr *c;
	ssize_t r = recvmsg(n->sock, &msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
	int listener = -1;

	if (r < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (r == 1 && (c = CMSG_FIRSTHDR(&msg)) && c->cmsg_level == SOL_SOCKET &&
	    c->cmsg_type == SCM_RIGHTS && c->cmsg_len == CMSG_LEN(sizeof(int)))
		memcpy(&listener, CMSG_DATA(c), sizeof(int));
	/* one listener, once: the socket is done either way */
	event_free(n->sock_ev);
	n->sock_ev = NULL;
	close(n->sock);
	n->sock = -1;
	if (listener < 0)
		return;
	n->listener = listener;
	if (!(n->ev = event_new(n->base, listener, EV_READ | EV_PERSIST, on_notify, n)) ||
	    event_add(n->ev, NULL) < 0) {
		/* nobody would answer: the jail would wait for ever on its first call */
		log_warnx("seccomp notification: no event for the listener");
		listener_close(n);
		return;
	}
	on_notify(listener, EV_READ, n);
}

int sysnotify_prepare(struct sysnotify *n, struct event_base *base, struct trace_run *trace)
{
	int sv[2];
	*n = (struct sysnotify){ .sock = -1, .child_end = -1, .listener = -1, .trace = trace,
		                 .base = base };
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return -errno;
	n->sock = sv[0];
	n->child_end = sv[1];
	if (!(n->sock_ev = event_new(base, n->sock, EV_READ | EV_PERSIST, on_sock, n)) ||
	    event_add(n->sock_ev, NULL) < 0) {
		sysnotify_release(n);
		return -ENOMEM;
	}
	return 0;
}

void sysnotify_spawned(struct sysnotify *n)
{
	if (n->child_end >= 0) {
		close(n->child_end);
		n->child_end = -1;
	}
}

void sysnotify_release(struct sysnotify *n)
{
	/* whoever still waits on a call goes on: a closed listener lets every call through */
	if (n->listener >= 0)
		on_notify(n->listener, EV_READ, n);
	listener_close(n);
	if (n->sock_ev) {
		event_free(n->sock_ev);
		n->sock_ev = NULL;
	}
	if (n->sock >= 0) {
		close(n->sock);
		n->sock = -1;
	}
	sysnotify_spawned(n);
}
