/* Looking at host processes through /proc: what a test uses to prove nothing of a
 * sandbox survived (by a unique marker in the cmdline, or by the jail's uid). */
#include <arpa/inet.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cleanup.h"
#include "harness.h"

#define PROC_CMDLINE_MAX 8192u

static bool is_pid_name(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!isdigit((unsigned char)*s))
			return false;
	return true;
}

/* Read /proc/<pid>/<what> into buf (NULs kept), returns the length or -errno. */
static ssize_t proc_read(const char *pid, const char *what, char *buf, size_t bufsz)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%s/%s", pid, what);
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	size_t len = 0;
	while (len + 1 < bufsz) {
		ssize_t n = read(fd, buf + len, bufsz - 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	buf[len] = '\0';
	return (ssize_t)len;
}

/* State letter and real uid from /proc/<pid>/status. */
static int proc_status(const char *pid, char *ret_state, long *ret_uid)
{
	char buf[4096];
	if (proc_read(pid, "status", buf, sizeof(buf)) < 0)
		return -ESRCH;
	const char *st = strstr(buf, "\nState:");
	const char *uid = strstr(buf, "\nUid:");
	if (!st || !uid)
		return -EINVAL;
	st += 7;
	while (*st == ' ' || *st == '\t')
		st++;
	*ret_state = *st;
	*ret_uid = strtol(uid + 5, NULL, 10);
	return 0;
}

typedef bool (*proc_pred)(const char *pid, const void *arg);

/* How many live processes match; the first one's pid into *ret_first (may be NULL). */
static int proc_scan(proc_pred pred, const void *arg, pid_t *ret_first)
{
	DIR *d = opendir("/proc");
	if (!d)
		return -errno;
	int count = 0;
	unsigned seen = 0;
	for (struct dirent *e; (e = readdir(d)) != NULL && seen < PROC_SCAN_MAX;) {
		if (!is_pid_name(e->d_name))
			continue;
		seen++;
		if (atoi(e->d_name) == getpid())
			continue;
		char state;
		long uid;
		if (proc_status(e->d_name, &state, &uid) < 0 || state == 'Z' || state == 'X')
			continue;
		if (pred(e->d_name, arg) && count++ == 0 && ret_first)
			*ret_first = (pid_t)atoi(e->d_name);
	}
	closedir(d);
	return count;
}

static int proc_count(proc_pred pred, const void *arg)
{
	return proc_scan(pred, arg, NULL);
}

static bool pred_marker(const char *pid, const void *arg)
{
	char buf[PROC_CMDLINE_MAX];
	ssize_t n = proc_read(pid, "cmdline", buf, sizeof(buf));
	if (n <= 0)
		return false;
	for (ssize_t i = 0; i < n; i++) /* argv is NUL-separated; search it as one string */
		if (buf[i] == '\0')
			buf[i] = ' ';
	return strstr(buf, (const char *)arg) != NULL;
}

static bool pred_uid(const char *pid, const void *arg)
{
	char state;
	long uid;
	return proc_status(pid, &state, &uid) == 0 && uid == (long)*(const uid_t *)arg;
}

int proc_count_marker(const char *marker)
{
	return proc_count(pred_marker, marker);
}

pid_t proc_find_marker(const char *marker)
{
	pid_t pid = -ESRCH;
	int n = proc_scan(pred_marker, marker, &pid);
	return n < 0 ? n : pid;
}

int proc_count_uid(uid_t uid)
{
	return proc_count(pred_uid, &uid);
}

int proc_wait_marker_gone(const char *marker, unsigned timeout_ms)
{
	int n = 0;
	for (unsigned waited = 0;; waited += 50) {
		n = proc_count_marker(marker);
		if (n <= 0 || waited >= timeout_ms)
			return n;
		sleep_ms(50);
	}
}

int proc_wait_uid_gone(uid_t uid, unsigned timeout_ms)
{
	int n = 0;
	for (unsigned waited = 0;; waited += 50) {
		n = proc_count_uid(uid);
		if (n <= 0 || waited >= timeout_ms)
			return n;
		sleep_ms(50);
	}
}

pid_t proc_child_by_comm(pid_t ppid, const char *comm)
{
	DIR *d = opendir("/proc");
	if (!d)
		return -errno;
	pid_t found = -ESRCH;
	unsigned seen = 0;
	for (struct dirent *e; (e = readdir(d)) != NULL && seen < PROC_SCAN_MAX;) {
		if (!is_pid_name(e->d_name))
			continue;
		seen++;
		char buf[1024];
		if (proc_read(e->d_name, "stat", buf, sizeof(buf)) <= 0)
			continue;
		/* "pid (comm) S ppid ...": comm may hold spaces and parens, so use the last ')' */
		char *open_p = strchr(buf, '(');
		char *close_p = strrchr(buf, ')');
		if (!open_p || !close_p || close_p < open_p)
			continue;
		*close_p = '\0';
		char state;
		int pp;
		if (sscanf(close_p + 1, " %c %d", &state, &pp) != 2)
			continue;
		if (pp == ppid && state != 'Z' && strcmp(open_p + 1, comm) == 0) {
			found = atoi(e->d_name);
			break;
		}
	}
	closedir(d);
	return found;
}

int free_port(uint16_t *ret)
{
	_cleanup_close_ int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	struct sockaddr_in sa = { .sin_family = AF_INET };
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	socklen_t sl = sizeof(sa);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    getsockname(fd, (struct sockaddr *)&sa, &sl) < 0)
		return -errno;
	*ret = ntohs(sa.sin_port);
	return 0;
}
