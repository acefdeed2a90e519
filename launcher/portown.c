/* Who holds a port, and where it works (portown.h). */
#include "portown.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <dirent.h>
#include <time.h>
#include <unistd.h>

#include "cleanup.h"
#include "util.h"

/* ---- /proc ------------------------------------------------------------------------------ */

static int hexval(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* The listening sockets of one /proc/.../net/tcp{,6} file: fn(port, inode) per line. */
static void tcp_listeners(const char *path, void (*fn)(uint32_t port, unsigned long inode, void *),
                          void *arg)
{
	_cleanup_fclose_ FILE *f = fopen(path, "re");
	char line[512];
	if (!f || !fgets(line, sizeof(line), f)) /* the header */
		return;
	while (fgets(line, sizeof(line), f)) {
		char local[128], rem[128], st[8];
		unsigned long inode;
		char *colon;
		uint32_t port = 0;
		if (sscanf(line, " %*d: %127s %127s %7s %*s %*s %*s %*s %*s %lu", local, rem, st, &inode) != 4)
			continue;
		if (strcmp(st, "0A") != 0 || !(colon = strrchr(local, ':')))
			continue;
		for (char *p = colon + 1; *p; p++) {
			int v = hexval(*p);
			if (v < 0)
				break;
			port = port * 16 + (uint32_t)v;
		}
		fn(port, inode, arg);
	}
}

struct inode_want {
	uint32_t port;
	unsigned long inodes[16];
	size_t n;
};

static void want_inode(uint32_t port, unsigned long inode, void *arg)
{
	struct inode_want *w = arg;
	if (port == w->port && inode && w->n < 16)
		w->inodes[w->n++] = inode;
}

pid_t portown_proc(uint16_t port)
{
	struct inode_want w = { .port = port };
	_cleanup_closedir_ DIR *proc = NULL;
	struct dirent *de;

	tcp_listeners("/proc/net/tcp", want_inode, &w);
	tcp_listeners("/proc/net/tcp6", want_inode, &w);
	if (!w.n)
		return 0;
	if (!(proc = opendir("/proc")))
		return -errno;
	while ((de = readdir(proc))) {
		char fdp[64];
		_cleanup_closedir_ DIR *fds = NULL;
		struct dirent *fe;
		long pid = strtol(de->d_name, NULL, 10);
		if (pid <= 0)
			continue;
		snprintf(fdp, sizeof(fdp), "/proc/%ld/fd", pid);
		if (!(fds = opendir(fdp)))
			continue;
		while ((fe = readdir(fds))) {
			char lp[128], target[64];
			ssize_t n;
			unsigned long ino;
			snprintf(lp, sizeof(lp), "%s/%s", fdp, fe->d_name);
			if ((n = readlink(lp, target, sizeof(target) - 1)) <= 0)
				continue;
			target[n] = '\0';
			if (sscanf(target, "socket:[%lu]", &ino) != 1)
				continue;
			for (size_t i = 0; i < w.n; i++)
				if (w.inodes[i] == ino)
					return (pid_t)pid;
		}
	}
	return 0;
}

struct port_list {
	uint32_t *out;
	size_t n, max;
};

static void add_port(uint32_t port, unsigned long inode, void *arg)
{
	struct port_list *l = arg;
	for (size_t i = 0; i < l->n && i < l->max; i++)
		if (l->out[i] == port)
			return;
	if (l->n < l->max)
		l->out[l->n] = port;
	l->n++;
}

size_t portown_listening(pid_t pid, uint32_t *out, size_t max)
{
	struct port_list l = { out, 0, max };
	char p[64];
	snprintf(p, sizeof(p), "/proc/%d/net/tcp", (int)pid);
	tcp_listeners(p, add_port, &l);
	snprintf(p, sizeof(p), "/proc/%d/net/tcp6", (int)pid);
	tcp_listeners(p, add_port, &l);
	return l.n < max ? l.n : max;
}

/* ---- lsof ------------------------------------------------------------------------------ */

static int line_field(const char *out, char key, char *buf, size_t sz)
{
	for (const char *l = out; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		if (*l != key)
			continue;
		size_t n = strcspn(l + 1, "\n");
		if (n == 0 || n >= sz)
			return -ENOENT;
		memcpy(buf, l + 1, n);
		buf[n] = '\0';
		return 0;
	}
	return -ENOENT;
}

int portown_parse_pid(const char *out, pid_t *ret)
{
	char v[24], *end;
	long pid;
	if (line_field(out, 'p', v, sizeof(v)) < 0)
		return -ENOENT;
	pid = strtol(v, &end, 10);
	if (*end || pid <= 0 || pid > 0x7fffffffL)
		return -ENOENT;
	*ret = (pid_t)pid;
	return 0;
}

int portown_parse_name(const char *out, char *buf, size_t sz)
{
	return line_field(out, 'n', buf, sz);
}

/* Run argv with stdout into out (NUL-terminated), stderr and stdin /dev/null, at most
 * PORTOWN_LSOF_TIMEOUT_MS. 0 (whatever the exit status: lsof exits 1 when nothing
 * matches), or -errno / -ETIMEDOUT. */
static int capture(char *const argv[], char *out, size_t sz)
{
	int p[2], st;
	size_t len = 0;
	pid_t pid;
	uint64_t end = now_ms() + PORTOWN_LSOF_TIMEOUT_MS;
	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	if ((pid = fork()) < 0) {
		int e = errno;
		close(p[0]);
		close(p[1]);
		return -e;
	}
	if (pid == 0) {
		int dn = open("/dev/null", O_RDWR | O_CLOEXEC);
		if (dn < 0 || dup2(dn, 0) < 0 || dup2(p[1], 1) < 0 || dup2(dn, 2) < 0)
			_exit(126);
		execv(argv[0], argv);
		_exit(127);
	}
	close(p[1]);
	for (;;) {
		uint64_t now = now_ms();
		struct pollfd pf = { .fd = p[0], .events = POLLIN };
		if (now >= end || poll(&pf, 1, (int)(end - now)) == 0) {
			kill(pid, SIGKILL);
			close(p[0]);
			while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
				;
			return -ETIMEDOUT;
		}
		ssize_t n = len + 1 < sz ? read(p[0], out + len, sz - 1 - len) : 0;
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	out[len] = '\0';
	close(p[0]);
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	return WIFEXITED(st) && WEXITSTATUS(st) >= 126 ? -ENOEXEC : 0;
}

pid_t portown_lsof(const char *lsof, uint16_t port)
{
	char spec[32], *out = malloc(PORTOWN_LSOF_OUT_MAX);
	pid_t pid = 0;
	int r;
	if (!out)
		return -ENOMEM;
	snprintf(spec, sizeof(spec), "-iTCP:%u", (unsigned)port);
	char *const argv[] = { (char *)lsof, "-nP", spec, "-sTCP:LISTEN", "-Fp", NULL };
	r = capture(argv, out, PORTOWN_LSOF_OUT_MAX);
	if (r == 0 && portown_parse_pid(out, &pid) < 0)
		pid = 0;
	free(out);
	return r < 0 ? r : pid;
}

int portown_lsof_cwd(const char *lsof, pid_t pid, char *buf, size_t sz)
{
	char p[24], *out = malloc(PORTOWN_LSOF_OUT_MAX);
	int r;
	if (!out)
		return -ENOMEM;
	snprintf(p, sizeof(p), "%d", (int)pid);
	char *const argv[] = { (char *)lsof, "-a", "-p", p, "-d", "cwd", "-Fn", NULL };
	if ((r = capture(argv, out, PORTOWN_LSOF_OUT_MAX)) == 0)
		r = portown_parse_name(out, buf, sz);
	free(out);
	return r;
}

int portown_owner(uint16_t port, pid_t *ret_pid, char *cwd, size_t cwdsz)
{
	static const char *const lsofs[] = { "/usr/sbin/lsof", "/usr/bin/lsof" };
	char link[64];
	ssize_t n;
	*ret_pid = 0;
	cwd[0] = '\0';
	if (access("/proc/net/tcp", R_OK) == 0) {
		pid_t pid = portown_proc(port);
		if (pid <= 0)
			return pid;
		*ret_pid = pid;
		snprintf(link, sizeof(link), "/proc/%d/cwd", (int)pid);
		if ((n = readlink(link, cwd, cwdsz - 1)) <= 0)
			return n < 0 ? -errno : -ENOENT;
		cwd[n] = '\0';
		return 0;
	}
	for (size_t i = 0; i < sizeof(lsofs) / sizeof(lsofs[0]); i++) {
		pid_t pid;
		if (access(lsofs[i], X_OK) < 0)
			continue;
		if ((pid = portown_lsof(lsofs[i], port)) <= 0)
			return pid;
		*ret_pid = pid;
		return portown_lsof_cwd(lsofs[i], pid, cwd, cwdsz);
	}
	return -ENOSYS; /* neither /proc nor lsof: nobody can be verified */
}
