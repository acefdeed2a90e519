/* Small helpers shared by every process. */
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <poll.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "cleanup.h"

uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

uint64_t now_unix_s(void) { return (uint64_t)time(NULL); }

uint64_t now_unix_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

int fmt_iso8601(uint64_t unix_s, char *buf, size_t bufsz)
{
	time_t t = (time_t)unix_s;
	struct tm tm;
	if (!gmtime_r(&t, &tm) || strftime(buf, bufsz, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
		return -EINVAL;
	return 0;
}

int random_bytes(void *buf, size_t n)
{
	uint8_t *p = buf;
	while (n) {
		ssize_t r = getrandom(p, n, 0);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

int random_id(const char *prefix, size_t n, char *buf, size_t bufsz)
{
	static const char alphabet[] = "abcdefghijklmnopqrstuvwxyz0123456789";
	size_t plen = strlen(prefix);
	uint8_t rnd[64];
	int r;

	if (n > sizeof(rnd) || plen + n + 1 > bufsz)
		return -EINVAL;
	if ((r = random_bytes(rnd, n)) < 0)
		return r;
	memcpy(buf, prefix, plen);
	/* 252 = 7 * 36: reject the top values so every letter is equally likely */
	for (size_t i = 0; i < n; i++) {
		while (rnd[i] >= 252)
			if ((r = random_bytes(&rnd[i], 1)) < 0)
				return r;
		buf[plen + i] = alphabet[rnd[i] % 36];
	}
	buf[plen + n] = '\0';
	return 0;
}

int mkdir_p(const char *path, mode_t mode)
{
	char tmp[PATH_MAX];
	size_t len = strlen(path);
	if (len == 0 || len >= sizeof(tmp))
		return -EINVAL;
	memcpy(tmp, path, len + 1);
	for (char *p = tmp + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(tmp, 0755) < 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(tmp, mode) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

int set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return -errno;
	return 0;
}

int set_cloexec(int fd, bool on)
{
	int fl = fcntl(fd, F_GETFD);
	if (fl < 0)
		return -errno;
	fl = on ? (fl | FD_CLOEXEC) : (fl & ~FD_CLOEXEC);
	if (fcntl(fd, F_SETFD, fl) < 0)
		return -errno;
	return 0;
}

int read_file(const char *path, size_t max, char **ret, size_t *ret_len)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	_cleanup_free_ char *buf = NULL;
	size_t len = 0;

	if (fd < 0)
		return -errno;
	if (!(buf = malloc(max + 1)))
		return -ENOMEM;
	for (;;) {
		ssize_t n = read(fd, buf + len, max + 1 - len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			break;
		len += (size_t)n;
		if (len > max)
			return -EFBIG;
	}
	buf[len] = '\0';
	if (ret_len)
		*ret_len = len;
	*ret = steal_pointer(&buf);
	return 0;
}

int write_all(int fd, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	while (len) {
		ssize_t n = write(fd, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

#define CLOSE_KEEP_MAX 16 /* descriptors close_fds_from can keep in one call */

/* The slow way, for a kernel without close_range(2): scan /proc/self/fd. */
static void close_fds_scan(int lowfd, const int *keep, size_t nkeep)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;

	if (!d) {
		for (int fd = lowfd; fd < 4096; fd++) {
			bool k = false;
			for (size_t i = 0; i < nkeep; i++)
				k |= keep[i] == fd;
			if (!k)
				close(fd);
		}
		return;
	}
	while ((de = readdir(d))) {
		int fd;
		bool k = false;
		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		fd = atoi(de->d_name);
		if (fd < lowfd || fd == dirfd(d))
			continue;
		for (size_t i = 0; i < nkeep; i++)
			k |= keep[i] == fd;
		if (!k)
			close(fd);
	}
	closedir(d);
}

/* close_range(2) over the gaps between the kept descriptors: no allocation and no /proc
 * scan, so it is cheap and safe between fork and exec. */
void close_fds_from(int lowfd, const int *keep, size_t nkeep)
{
	int k[CLOSE_KEEP_MAX];
	unsigned cur = (unsigned)lowfd;
	size_t n = 0;

	if (nkeep > CLOSE_KEEP_MAX) {
		close_fds_scan(lowfd, keep, nkeep);
		return;
	}
	for (size_t i = 0; i < nkeep; i++) { /* insertion sort of the ones at or above lowfd */
		size_t j = n;
		if (keep[i] < lowfd)
			continue;
		while (j > 0 && k[j - 1] > keep[i]) {
			k[j] = k[j - 1];
			j--;
		}
		k[j] = keep[i];
		n++;
	}
	for (size_t i = 0; i <= n; i++) {
		/* the gap before k[i] (or everything from cur on, after the last one) */
		bool tail = i == n;
		if ((tail || (unsigned)k[i] > cur) &&
		    syscall(SYS_close_range, cur, tail ? ~0u : (unsigned)k[i] - 1, 0) < 0) {
			close_fds_scan(lowfd, keep, nkeep);
			return;
		}
		if (!tail && (unsigned)k[i] >= cur)
			cur = (unsigned)k[i] + 1;
	}
}

/* Move fd to target without clobbering the other one we still need. */
static int place_fd(int fd, int target)
{
	if (fd < 0)
		return 0;
	if (fd == target)
		return set_cloexec(fd, false);
	if (dup2(fd, target) < 0)
		return -errno;
	return 0;
}

int spawn_role(char *const argv[], char *const envp[], int fd_parent, int fd_peer,
               pid_t *ret_pid)
{
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		sigset_t all;
		int keep[2] = { SBX_FD_PARENT, SBX_FD_PEER };
		/* sbxd killed outright takes its children along (and the launcher's jails with
		 * them, by bwrap --die-with-parent): nothing the daemon started outlives it */
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
			_exit(127);
		/* get both fds out of the 3..4 range first, so dup2 cannot overwrite one */
		if (fd_parent >= 0 && fd_parent <= SBX_FD_PEER)
			fd_parent = fcntl(fd_parent, F_DUPFD_CLOEXEC, 10);
		if (fd_peer >= 0 && fd_peer <= SBX_FD_PEER)
			fd_peer = fcntl(fd_peer, F_DUPFD_CLOEXEC, 10);
		if (place_fd(fd_parent, SBX_FD_PARENT) < 0 || place_fd(fd_peer, SBX_FD_PEER) < 0)
			_exit(127);
		close_fds_from(SBX_FD_PEER + 1, keep, 2);
		sigemptyset(&all);
		sigprocmask(SIG_SETMASK, &all, NULL);
		signal(SIGPIPE, SIG_DFL);
		execve(argv[0], argv, envp);
		_exit(127);
	}
	*ret_pid = pid;
	return 0;
}

int self_exe_dir(char *buf, size_t bufsz)
{
	ssize_t n = readlink("/proc/self/exe", buf, bufsz - 1);
	char *slash;
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	if (!(slash = strrchr(buf, '/')))
		return -EINVAL;
	*slash = '\0';
	return 0;
}

int parse_uint(const char *s, unsigned min, unsigned max, unsigned *ret)
{
	unsigned long v;
	char *end;
	if (!s || *s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || v < min || v > max)
		return -ERANGE;
	*ret = (unsigned)v;
	return 0;
}

int wait_readable(int fd, unsigned ms)
{
	uint64_t end = now_ms() + ms;
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	for (;;) {
		uint64_t now = now_ms();
		int r;
		if (now >= end)
			return -ETIMEDOUT;
		r = poll(&pfd, 1, (int)(end - now));
		if (r > 0)
			return 0;
		if (r < 0 && errno != EINTR)
			return -errno;
	}
}

void note_append(char *buf, size_t bufsz, size_t *off, const char *fmt, ...)
{
	va_list ap;
	int k;
	if (*off >= bufsz)
		return;
	if (*off && (k = snprintf(buf + *off, bufsz - *off, "; ")) > 0)
		*off += (size_t)k;
	if (*off >= bufsz)
		return;
	va_start(ap, fmt);
	k = vsnprintf(buf + *off, bufsz - *off, fmt, ap);
	va_end(ap);
	if (k > 0)
		*off += (size_t)k;
	if (*off > bufsz)
		*off = bufsz;
}
