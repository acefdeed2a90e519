/* Every request gets exactly one answer, in bounded time (issue 7, defect 2): a launcher
 * that does not answer (stopped here with SIGSTOP, as a wedged or buggy one would be)
 * makes requests fail with a JSON error after sbxd's --call-deadline, and requests whose
 * clients hung up do not hold the in-flight slots for ever. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "cleanup.h"
#include "harness.h"

#define DEADLINE_S "2"
#define HANGUPS    1100 /* more than the API's in-flight slots (API_INFLIGHT_MAX 1024) */

static struct sbxd d = { .pid = -1, .extra_args = { "--call-deadline", DEADLINE_S } };
static pid_t stopped = -1;

static void setup(void)
{
	int r = sbxd_start(&d);
	if (r < 0) {
		sbxd_dump_log(&d);
		cr_assert_fail("sbxd did not start: %s", strerror(-r));
	}
}

static void teardown(void)
{
	if (stopped > 0)
		kill(stopped, SIGCONT);
	sbxd_stop(&d);
}

TestSuite(replies, .init = setup, .fini = teardown, .timeout = 120);

/* Send a whole request and hang up at once, without reading the answer. */
static int hang_up_request(uint16_t port, const char *req, size_t len)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    write(fd, req, len) != (ssize_t)len) {
		int e = -errno;
		close(fd);
		return e;
	}
	close(fd);
	return 0;
}

Test(replies, a_silent_launcher_gives_a_json_error_and_slots_come_back)
{
	char req[512];
	pid_t launcher = proc_child_by_comm(d.pid, "sbx-launcher");
	cr_assert(launcher > 0, "no sbx-launcher child of sbxd %d", (int)d.pid);
	cr_assert(kill(launcher, SIGSTOP) == 0);
	stopped = launcher;

	/* one request: answered with engine_unavailable once the deadline passed */
	unsigned long long t0 = mono_ms();
	{
		_cleanup_resp_ struct http_resp r =
			http_req(&d, "GET", "/api/sandbox/sandboxes", NULL, NULL);
		unsigned long long took = mono_ms() - t0;
		assert_status(r, 503);
		cr_assert_not_null(r.json, "not JSON: %s", r.body);
		cr_assert(strstr(r.body, "no answer from the launcher"), "%s", r.body);
		cr_assert(took >= 1500 && took < 10000, "answered after %llu ms", took);
	}

	/* many clients send a request and hang up: more than there are slots */
	int n = snprintf(req, sizeof(req),
	                 "GET /api/sandbox/sandboxes HTTP/1.1\r\nHost: 127.0.0.1:%u\r\n"
	                 "Authorization: Bearer %s\r\n\r\n",
	                 (unsigned)d.port, d.token);
	for (int i = 0; i < HANGUPS; i++) {
		int r = hang_up_request(d.port, req, (size_t)n);
		cr_assert(r == 0, "request %d: %s", i, strerror(-r));
	}
	/* once their deadline passed, the slots are free again: a new request gets through to
	 * the (still stopped) launcher and times out, instead of "too many requests in flight" */
	sleep_ms(2000 + 1500);
	{
		_cleanup_resp_ struct http_resp r =
			http_req(&d, "GET", "/api/sandbox/sandboxes", NULL, NULL);
		assert_status(r, 503);
		cr_assert(strstr(r.body, "no answer from the launcher"), "%s", r.body);
	}

	/* and the launcher, once it answers again, serves everything; it was never restarted */
	cr_assert(kill(launcher, SIGCONT) == 0);
	stopped = -1;
	{ /* the capability probe's test jail timed out while the launcher was stopped */
		_cleanup_resp_ struct http_resp r =
			http_req(&d, "POST", "/api/sandbox/caps/recheck", NULL, NULL);
		assert_status(r, 200);
	}
	{
		_cleanup_resp_ struct http_resp r =
			http_req(&d, "GET", "/api/sandbox/health", NULL, NULL);
		assert_status(r, 200);
	}
	{
		_cleanup_resp_ struct http_resp r =
			http_req(&d, "GET", "/api/sandbox/sandboxes", NULL, NULL);
		assert_status(r, 200);
	}
	cr_assert_eq(proc_child_by_comm(d.pid, "sbx-launcher"), launcher);
}

/* sbxd refuses a deadline outside 1..3600 s at start, with a reason. */
Test(replies, call_deadline_out_of_range_is_refused)
{
	static const char *bad[] = { "0", "3601", "-1", "2x", "" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct sbxd e = { .pid = -1, .extra_args = { "--call-deadline", bad[i] } };
		int r = sbxd_start(&e);
		cr_expect(r < 0, "--call-deadline '%s' was accepted", bad[i]);
		sbxd_stop(&e);
	}
}
