/* See website.h. */
#include "website.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...)
{
	char cmd[512];
	va_list ap;
	int st;
	pid_t pid;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		int devnull = open("/dev/null", O_WRONLY);
		dup2(devnull, 1);
		dup2(devnull, 2);
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -errno;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -EIO;
}

static int bound(int type, const char *addr, uint16_t port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
	int one = 1, fd = socket(AF_INET, type | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	inet_pton(AF_INET, addr, &sa.sin_addr);
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || (type == SOCK_STREAM && listen(fd, 64) < 0)) {
		close(fd);
		return -1;
	}
	return fd;
}

/* The server, inside the namespace: one poll loop, one request per connection. */
static _Noreturn void serve(struct website *w, int ready)
{
	struct pollfd pf[WEBSITE_PORTS_MAX + 1];
	size_t n = 0;
	for (size_t i = 0; i < w->nports; i++)
		if ((pf[n].fd = bound(SOCK_STREAM, w->addr, w->ports[i])) < 0)
			_exit(2);
		else
			pf[n++].events = POLLIN;
	if (w->udp_port) {
		if ((pf[n].fd = bound(SOCK_DGRAM, w->addr, w->udp_port)) < 0)
			_exit(2);
		pf[n++].events = POLLIN;
	}
	if (write(ready, "r", 1) != 1)
		_exit(2);
	close(ready);
	for (;;) {
		if (poll(pf, n, -1) < 0)
			continue;
		for (size_t i = 0; i < n; i++) {
			char buf[4096], resp[256];
			if (!(pf[i].revents & POLLIN))
				continue;
			if (i >= w->nports) { /* the UDP counter */
				if (recv(pf[i].fd, buf, sizeof(buf), MSG_DONTWAIT) >= 0)
					__atomic_add_fetch(w->udp_count, 1, __ATOMIC_SEQ_CST);
				continue;
			}
			int c = accept4(pf[i].fd, NULL, NULL, SOCK_CLOEXEC);
			if (c < 0)
				continue;
			struct timeval tv = { 2, 0 };
			setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
			size_t got = 0;
			ssize_t k;
			while (got < sizeof(buf) - 1 && (k = recv(c, buf + got, sizeof(buf) - 1 - got, 0)) > 0) {
				got += (size_t)k;
				buf[got] = '\0';
				if (strstr(buf, "\r\n\r\n"))
					break;
			}
			char body[64];
			int bl = snprintf(body, sizeof(body), "sbx-website %u\n", w->ports[i]);
			int rl = snprintf(resp, sizeof(resp),
			                  "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n"
			                  "Connection: close\r\n\r\n%s",
			                  bl, body);
			if (send(c, resp, (size_t)rl, MSG_NOSIGNAL) < 0) {
				/* the client went away */
			}
			close(c);
		}
	}
}

int website_start(struct website *w, const uint16_t *ports, size_t n, uint16_t udp_port)
{
	char path[64];
	int p[2], nsfd, r;
	char c;

	memset(w, 0, sizeof(*w));
	w->pid = -1;
	if (geteuid() != 0)
		return -EPERM;
	if (n > WEBSITE_PORTS_MAX)
		return -E2BIG;
	w->k = 20 + (int)(getpid() % 200);
	snprintf(w->ns, sizeof(w->ns), "sbxt-%d", w->k);
	snprintf(w->host_addr, sizeof(w->host_addr), "10.213.%d.1", w->k);
	snprintf(w->addr, sizeof(w->addr), "10.213.%d.2", w->k);
	memcpy(w->ports, ports, n * sizeof(*ports));
	w->nports = n;
	w->udp_port = udp_port;
	w->udp_count = mmap(NULL, sizeof(long), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (w->udp_count == MAP_FAILED) {
		w->udp_count = NULL;
		return -errno;
	}
	*w->udp_count = 0;
	/* a stale namespace or veth of this name, from a killed run, goes first */
	sh("ip netns del %s 2>/dev/null; ip link del %sh 2>/dev/null", w->ns, w->ns);
	if ((r = sh("ip netns add %s", w->ns)) < 0 ||
	    (r = sh("ip link add %sh type veth peer name %sn", w->ns, w->ns)) < 0 ||
	    (r = sh("ip link set %sn netns %s", w->ns, w->ns)) < 0 ||
	    (r = sh("ip addr add %s/30 dev %sh && ip link set %sh up", w->host_addr, w->ns, w->ns)) < 0 ||
	    (r = sh("ip -n %s addr add %s/30 dev %sn && ip -n %s link set %sn up && ip -n %s link set lo up",
	            w->ns, w->addr, w->ns, w->ns, w->ns, w->ns)) < 0) {
		website_stop(w);
		return r;
	}
	snprintf(path, sizeof(path), "/run/netns/%s", w->ns);
	if (pipe2(p, O_CLOEXEC) < 0) {
		r = -errno;
		website_stop(w);
		return r;
	}
	w->pid = fork();
	if (w->pid == 0) {
		close(p[0]);
		nsfd = open(path, O_RDONLY | O_CLOEXEC);
		if (nsfd < 0 || setns(nsfd, CLONE_NEWNET) < 0)
			_exit(2);
		serve(w, p[1]);
	}
	close(p[1]);
	r = w->pid > 0 && read(p[0], &c, 1) == 1 ? 0 : -EIO;
	close(p[0]);
	if (r < 0)
		website_stop(w);
	return r;
}

void website_stop(struct website *w)
{
	if (w->pid > 0) {
		kill(w->pid, SIGKILL);
		while (waitpid(w->pid, NULL, 0) < 0 && errno == EINTR)
			;
		w->pid = -1;
	}
	if (w->ns[0]) {
		sh("ip link del %sh 2>/dev/null; ip netns del %s 2>/dev/null", w->ns, w->ns);
		w->ns[0] = '\0';
	}
	if (w->udp_count) {
		munmap((void *)w->udp_count, sizeof(long));
		w->udp_count = NULL;
	}
}

long website_udp_count(const struct website *w)
{
	return w->udp_count ? __atomic_load_n(w->udp_count, __ATOMIC_SEQ_CST) : -1;
}
