/* sbxd and a service manager's NOTIFY_SOCKET (sd_notify): READY=1 arrives once both
 * children run, with a STATUS line; STOPPING=1 at SIGTERM; no child inherits the variable. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "cleanup.h"
#include "harness.h"

static char dir[64];
static int sock = -1;

static void setup(void)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	struct timeval tv = { 10, 0 };
	snprintf(dir, sizeof(dir), "/tmp/sbx-notify-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	snprintf(a.sun_path, sizeof(a.sun_path), "%s/notify", dir);
	sock = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	cr_assert(sock >= 0 && bind(sock, (struct sockaddr *)&a, sizeof(a)) == 0, "%s", strerror(errno));
	cr_assert(setsockopt(sock, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) == 0);
	setenv("NOTIFY_SOCKET", a.sun_path, 1); /* the harness hands sbxd our environment */
	sbx_it_init();
	unsetenv("NOTIFY_SOCKET");
}

static void teardown(void)
{
	char p[128];
	sbx_it_fini();
	if (sock >= 0)
		close(sock);
	snprintf(p, sizeof(p), "%s/notify", dir);
	unlink(p);
	rmdir(dir);
}

TestSuite(notify, .init = setup, .fini = teardown, .timeout = 60);

static void recv_msg(char *buf, size_t sz)
{
	ssize_t n = recv(sock, buf, sz - 1, 0);
	cr_assert(n > 0, "nothing arrived on NOTIFY_SOCKET: %s", strerror(errno));
	buf[n] = '\0';
}

/* Does sbx_it's launcher have an environment variable starting with prefix? */
static bool launcher_env_has(const char *prefix)
{
	pid_t launcher = proc_child_by_comm(sbx_it.pid, "sbx-launcher");
	char path[64], env[16384];
	snprintf(path, sizeof(path), "/proc/%d/environ", (int)launcher);
	FILE *f = fopen(path, "re");
	cr_assert(f, "no %s", path);
	size_t n = fread(env, 1, sizeof(env) - 1, f);
	fclose(f);
	env[n] = '\0';
	for (size_t i = 0; i < n; i += strlen(env + i) + 1)
		if (strncmp(env + i, prefix, strlen(prefix)) == 0)
			return true;
	return false;
}

Test(notify, ready_once_both_children_run_and_stopping_at_sigterm)
{
	char msg[512];
	recv_msg(msg, sizeof(msg));
	cr_expect(strncmp(msg, "READY=1\n", 8) == 0, "%s", msg);
	cr_expect(strstr(msg, "STATUS=serving"), "%s", msg);
	/* the daemon answers by then */
	_cleanup_resp_ struct http_resp h = http_req(&sbx_it, "GET", "/api/sandbox/health", NULL, NULL);
	assert_status(h, 200);
	/* no child (nor a jail) sees the variable */
	cr_expect(!launcher_env_has("NOTIFY_SOCKET="), "the launcher got NOTIFY_SOCKET");
	sbxd_stop(&sbx_it);
	recv_msg(msg, sizeof(msg));
	cr_expect(strncmp(msg, "STOPPING=1\n", 11) == 0, "%s", msg);
}

/* WatchdogSec=: with $WATCHDOG_USEC set, WATCHDOG=1 comes at least every half interval,
 * and no child inherits the variable */
static void setup_watchdog(void)
{
	setenv("WATCHDOG_USEC", "200000", 1);
	setup();
	unsetenv("WATCHDOG_USEC");
}

TestSuite(notify_watchdog, .init = setup_watchdog, .fini = teardown, .timeout = 60);

Test(notify_watchdog, pings_at_half_the_interval)
{
	char msg[512];
	int pings = 0;
	unsigned long long t0 = 0, last = 0;
	for (int i = 0; i < 20 && pings < 5; i++) {
		recv_msg(msg, sizeof(msg));
		if (strcmp(msg, "WATCHDOG=1\n") != 0)
			continue;
		unsigned long long now = mono_ms();
		if (!t0)
			t0 = now;
		else
			cr_expect(now - last < 1000, "%llu ms between two pings of a 200 ms watchdog", now - last);
		last = now;
		pings++;
	}
	cr_expect_eq(pings, 5, "%d pings", pings);
	cr_expect(!launcher_env_has("WATCHDOG_"), "the launcher got a WATCHDOG_ variable");
}
