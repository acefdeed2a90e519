/* The service manager's readiness protocol (sd_notify(3)), without libsystemd: one
 * datagram of "KEY=value" lines to the AF_UNIX socket named by $NOTIFY_SOCKET (a path, or
 * "@name" for an abstract one). sbxd takes the variable at start and clears it, so no
 * child ever sees it. Without it every call does nothing. */
#include "notify.h"

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static struct sockaddr_un addr;
static socklen_t addr_len;
static uint64_t watchdog_usec;

void notify_init(void)
{
	const char *s = getenv("NOTIFY_SOCKET");
	const char *wd = getenv("WATCHDOG_USEC"), *wpid = getenv("WATCHDOG_PID");
	size_t n;
	addr_len = 0;
	watchdog_usec = 0;
	/* the watchdog is ours when no pid is named or ours is */
	if (wd && (!wpid || strtol(wpid, NULL, 10) == (long)getpid())) {
		char *end;
		unsigned long long v = strtoull(wd, &end, 10);
		if (!*end && v > 0)
			watchdog_usec = v;
	}
	unsetenv("WATCHDOG_USEC");
	unsetenv("WATCHDOG_PID");
	if (!s || (s[0] != '/' && s[0] != '@') || (n = strlen(s)) >= sizeof(addr.sun_path) || n < 2)
		goto out;
	memset(&addr, 0, sizeof(addr));
	addr.sun_family = AF_UNIX;
	memcpy(addr.sun_path, s, n);
	if (s[0] == '@')
		addr.sun_path[0] = '\0'; /* abstract */
	addr_len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n);
out:
	unsetenv("NOTIFY_SOCKET");
}

bool notify_enabled(void) { return addr_len != 0; }

uint64_t notify_watchdog_usec(void) { return addr_len ? watchdog_usec : 0; }

int notify_send(const char *text)
{
	int fd, r = 0;
	if (!addr_len)
		return 0;
	if ((fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0)) < 0)
		return -errno;
	if (sendto(fd, text, strlen(text), MSG_NOSIGNAL, (struct sockaddr *)&addr, addr_len) < 0)
		r = -errno;
	close(fd);
	return r;
}
