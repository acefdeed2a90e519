/* The HTTP front door under connection floods (docs/operations.md, "Connection limits"):
 * idle sockets cannot lock clients out, exhaust sbx-api's descriptors, spin it or flood
 * its log; one peer address holds at most API_CONN_PER_PEER_MAX connections; a socket
 * that sends no complete request is closed after API_IDLE_TIMEOUT_S. And every refusal,
 * also the ones libevent makes on its own, is the JSON error document. */
#include <arpa/inet.h>
#include <dirent.h>
#include <grp.h>
#include <sys/wait.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "api/conn.h"
#include "cleanup.h"
#include "harness.h"

TestSuite(conn_limits, .init = sbx_it_init, .fini = sbx_it_fini, .timeout = 120);

#define HEALTH        "/api/sandbox/health"
#define FLOOD_MAX     2048u /* sockets one test holds */
#define CONNECT_MS    1000  /* a connect that takes longer counts as refused */
#define HOLD_S        3u    /* how long the flood is held while sbx-api is watched */
#define PROMPT_MS     2000u /* /health during a flood must answer within this */
#define LOG_GROWTH_MAX (64u * 1024u) /* bytes of log a whole flood may cost */
#define WAIT_RUN_S    "12"  /* a run longer than API_IDLE_TIMEOUT_S */
#define CPU_TICKS_MAX 50u   /* sbx-api's utime+stime over HOLD_S (a spin costs ~300) */

static int flood[FLOOD_MAX];
static unsigned nflood;

static void raise_own_nofile(void)
{
	struct rlimit rl;
	cr_assert(getrlimit(RLIMIT_NOFILE, &rl) == 0);
	rl.rlim_cur = rl.rlim_max;
	cr_assert(setrlimit(RLIMIT_NOFILE, &rl) == 0);
	cr_assert(rl.rlim_cur > FLOOD_MAX + 64, "the test needs %u descriptors", FLOOD_MAX + 64);
}

/* A TCP connection from `src` (a loopback address) that sends nothing; -errno. */
static int open_idle(const char *src, uint16_t port)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	struct pollfd p;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0), err = 0;
	socklen_t el = sizeof(err);
	if (fd < 0)
		return -errno;
	inet_pton(AF_INET, src, &a.sin_addr);
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0)
		goto fail;
	a.sin_port = htons(port);
	inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0 && errno != EINPROGRESS)
		goto fail;
	p = (struct pollfd){ .fd = fd, .events = POLLOUT };
	if (poll(&p, 1, CONNECT_MS) != 1 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) < 0 || err) {
		errno = err ? err : ETIMEDOUT;
		goto fail;
	}
	return fd;
fail:
	err = errno;
	close(fd);
	return -err;
}

/* Still open from the server's side? (no EOF, no reset) */
static bool still_open(int fd)
{
	char c;
	ssize_t n = recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
	return n > 0 || (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK));
}

static unsigned flood_open(const char *src, unsigned n)
{
	unsigned ok = 0;
	for (unsigned i = 0; i < n && nflood < FLOOD_MAX; i++) {
		int fd = open_idle(src, sbx_it.port);
		if (fd >= 0) {
			flood[nflood++] = fd;
			ok++;
		}
	}
	return ok;
}

static unsigned flood_count_open(void)
{
	unsigned n = 0;
	for (unsigned i = 0; i < nflood; i++)
		n += still_open(flood[i]);
	return n;
}

static void flood_close(void)
{
	for (unsigned i = 0; i < nflood; i++)
		close(flood[i]);
	nflood = 0;
}

static pid_t api_pid(void)
{
	_cleanup_resp_ struct http_resp r = http_req(&sbx_it, "GET", HEALTH, NULL, NULL);
	assert_status(r, 200);
	pid_t pid = (pid_t)js_int(r.json, "processes.api", 0);
	cr_assert_gt(pid, 1, "%s", r.body);
	return pid;
}

static unsigned long long cpu_ticks(pid_t pid)
{
	char path[64], buf[2048], *p;
	unsigned long long ut = 0, st = 0;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	FILE *f = fopen(path, "re");
	cr_assert_not_null(f);
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	p = strrchr(buf, ')'); /* comm may hold spaces; fields 14 and 15 follow */
	cr_assert(p && sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut,
	                      &st) == 2);
	return ut + st;
}

static unsigned count_fds(pid_t pid)
{
	char path[64];
	unsigned n = 0;
	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	DIR *d = opendir(path);
	cr_assert_not_null(d, "%s", path);
	for (struct dirent *e; (e = readdir(d));)
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

static long long log_size(void)
{
	struct stat st;
	return stat(sbx_it.log_path, &st) == 0 ? (long long)st.st_size : 0;
}

/* lines of sbx-api's log (from byte `from` on) holding `what` */
static unsigned log_lines_with(long long from, const char *what)
{
	char line[1024];
	unsigned n = 0;
	FILE *f = fopen(sbx_it.log_path, "re");
	if (!f)
		return 0;
	fseek(f, (long)from, SEEK_SET);
	while (fgets(line, sizeof(line), f))
		n += strstr(line, "sbx-api") && strstr(line, what);
	fclose(f);
	return n;
}

/* /health from 127.0.0.1 answers 200, and how long it took */
static void expect_health_prompt(const char *when)
{
	unsigned long long t0 = mono_ms();
	_cleanup_resp_ struct http_resp r = http_req(&sbx_it, "GET", HEALTH, NULL, NULL);
	unsigned long long ms = mono_ms() - t0;
	cr_expect_eq(r.status, 200, "%s: /health status %d", when, r.status);
	cr_expect_lt(ms, PROMPT_MS, "%s: /health took %llu ms", when, ms);
	printf("%s: /health %d in %llu ms\n", when, r.status, ms);
}

/* prlimit on sbx-api. A different uid needs CAP_SYS_RESOURCE, which a container may not
 * grant; the same uid and gid need nothing, so a child takes sbx-api's. 0 or -errno. */
static int api_set_nofile(pid_t pid, rlim_t n)
{
	char path[64], line[256];
	unsigned uid = 0, gid = 0;
	struct rlimit rl = { n, n };
	int st;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		sscanf(line, "Uid:\t%u", &uid);
		sscanf(line, "Gid:\t%u", &gid);
	}
	fclose(f);
	if (uid == geteuid())
		return prlimit(pid, RLIMIT_NOFILE, &rl, NULL) < 0 ? -errno : 0;
	pid_t c = fork();
	if (c < 0)
		return -errno;
	if (c == 0)
		_exit(setgroups(0, NULL) < 0 || setresgid(gid, gid, gid) < 0 ||
		      setresuid(uid, uid, uid) < 0 || prlimit(pid, RLIMIT_NOFILE, &rl, NULL) < 0
		              ? errno
		              : 0);
	if (waitpid(c, &st, 0) != c || !WIFEXITED(st))
		return -ECHILD;
	return -WEXITSTATUS(st);
}

/* sbx-api with the descriptor limit `nofile` (lowered at run time), then
 * a flood of `per_peer` idle sockets from each of `peers` loopback addresses
 * (127.0.0.2, ...). sbx-api must keep serving, stay within its descriptor budget, not
 * spin and not flood its log. */
static unsigned flood_and_watch(rlim_t nofile, unsigned peers, unsigned per_peer)
{
	pid_t pid;
	int r;
	long long log0;
	unsigned long long cpu0, cpu1;
	unsigned opened = 0, fds;
	char src[32];

	raise_own_nofile();
	pid = api_pid();
	cr_assert((r = api_set_nofile(pid, nofile)) == 0, "prlimit: %s", strerror(-r));
	log0 = log_size();
	for (unsigned p = 0; p < peers; p++) {
		snprintf(src, sizeof(src), "127.0.0.%u", p + 2);
		opened += flood_open(src, per_peer);
	}
	sleep_ms(300);
	cpu0 = cpu_ticks(pid);
	sleep_ms(HOLD_S * 1000u);
	cpu1 = cpu_ticks(pid);
	fds = count_fds(pid);
	unsigned held = flood_count_open();
	printf("flood: %u of %u connects succeeded, %u still open; sbx-api: %u fds, %llu cpu ticks "
	       "in %u s, log +%lld bytes\n",
	       opened, peers * per_peer, held, fds, cpu1 - cpu0, HOLD_S,
	       log_size() - log0);
	expect_health_prompt("during the flood");
	cr_expect_lt(cpu1 - cpu0, CPU_TICKS_MAX, "sbx-api spent %llu ticks in %u s holding idle "
	             "connections", cpu1 - cpu0, HOLD_S);
	cr_expect_leq(fds, (unsigned)nofile, "sbx-api holds %u descriptors", fds);
	cr_expect_leq(held, API_CONN_MAX, "%u flood connections held open", held);
	cr_expect_lt(log_size() - log0, (long long)LOG_GROWTH_MAX, "the log grew by %lld bytes",
	             log_size() - log0);
	flood_close();
	cr_expect_eq(api_pid(), pid, "sbx-api was restarted during the flood");
	return log_lines_with(log0, "Too many open files");
}

/* ~1100 idle sockets against the usual 1024 descriptor limit: the reported lock-out */
Test(conn_limits, idle_flood_does_not_lock_out)
{
	flood_and_watch(1024, 10, 110);
}

/* a limit below the connection cap: accept() does hit EMFILE, and must not spin */
Test(conn_limits, accept_storm_on_emfile_stays_quiet)
{
	unsigned emfile = flood_and_watch(200, 4, 100);
	printf("EMFILE storm: %u log lines name EMFILE\n", emfile);
	cr_expect_gt(emfile, 0, "accept() never hit EMFILE: the test missed its point");
}

Test(conn_limits, one_peer_holds_at_most_its_cap)
{
	raise_own_nofile();
	unsigned opened = flood_open("127.0.0.2", API_CONN_PER_PEER_MAX + 32);
	sleep_ms(300);
	unsigned open = flood_count_open();
	printf("one peer: %u connects, %u still open (cap %u)\n", opened, open,
	       API_CONN_PER_PEER_MAX);
	cr_expect_leq(open, API_CONN_PER_PEER_MAX, "one peer holds %u connections", open);
	/* the newest are the ones kept: a fresh client of the same address gets in */
	int fd = open_idle("127.0.0.2", sbx_it.port);
	cr_assert_geq(fd, 0);
	sleep_ms(100);
	cr_expect(still_open(fd), "the newest connection of a peer at its cap was closed");
	close(fd);
	expect_health_prompt("after a one-peer flood");
	flood_close();
}

Test(conn_limits, idle_unauthenticated_connection_times_out)
{
	int quiet = open_idle("127.0.0.1", sbx_it.port);
	int partial = open_idle("127.0.0.1", sbx_it.port);
	const char head[] = "GET /api/sandbox/health HTTP/1.1\r\nHost: 127.0.0.1\r\n";
	unsigned long long t0 = mono_ms(), closed_quiet = 0, closed_partial = 0;
	cr_assert(quiet >= 0 && partial >= 0);
	cr_assert_eq(send(partial, head, sizeof(head) - 1, MSG_NOSIGNAL), (ssize_t)sizeof(head) - 1);
	while (mono_ms() - t0 < (API_IDLE_TIMEOUT_S + 5) * 1000ull && (!closed_quiet || !closed_partial)) {
		if (!closed_quiet && !still_open(quiet))
			closed_quiet = mono_ms() - t0;
		if (!closed_partial && !still_open(partial))
			closed_partial = mono_ms() - t0;
		sleep_ms(100);
	}
	printf("idle: silent socket closed after %llu ms, half a request after %llu ms\n",
	       closed_quiet, closed_partial);
	cr_expect(closed_quiet, "a silent connection is still open after %d s",
	          API_IDLE_TIMEOUT_S + 5);
	cr_expect(closed_partial, "a half-sent request is still open after %d s",
	          API_IDLE_TIMEOUT_S + 5);
	cr_expect_geq(closed_quiet, (API_IDLE_TIMEOUT_S - 1) * 1000ull, "closed too early");
	close(quiet);
	close(partial);
}

/* A request trickled in a byte every 2 s never lets the idle timeout fire; the request
 * deadline cuts it all the same. */
Test(conn_limits, trickled_request_is_cut_at_the_deadline)
{
	const char start[] = "GET /api/sandbox/health HTTP/1.1\r\nX-Slow: ";
	int fd = open_idle("127.0.0.1", sbx_it.port);
	unsigned long long t0 = mono_ms(), closed = 0;
	cr_assert_geq(fd, 0);
	cr_assert_eq(send(fd, start, sizeof(start) - 1, MSG_NOSIGNAL), (ssize_t)sizeof(start) - 1);
	while (mono_ms() - t0 < (API_REQUEST_DEADLINE_S + 5) * 1000ull) {
		sleep_ms(2000);
		if (!still_open(fd) || send(fd, "a", 1, MSG_NOSIGNAL) != 1) {
			closed = mono_ms() - t0;
			break;
		}
	}
	printf("trickle: closed after %llu ms\n", closed);
	cr_expect(closed, "a request trickled for %d s is still being read",
	          API_REQUEST_DEADLINE_S + 5);
	cr_expect_geq(closed, (API_REQUEST_DEADLINE_S - 2) * 1000ull, "cut too early");
	close(fd);
	expect_health_prompt("after the trickle");
}

/* A call waiting on a run longer than the idle timeout keeps its connection: it has the
 * long timeout, and a flood over the total cap closes idle sockets, never it. */
Test(conn_limits, waiting_run_outlives_idle_timeout_and_flood)
{
	char id[128], path[256];
	struct bg_req b;
	sbx_require_bwrap();
	raise_own_nofile();
	sbx_create(&sbx_it, NULL, id, sizeof(id));
	snprintf(path, sizeof(path), "/api/sandbox/sandboxes/%s/runs", id);
	_cleanup_free_ char *body =
		run_body("sh", "sleep " WAIT_RUN_S "; echo done", NULL, 60000);
	cr_assert(body);
	cr_assert(bg_req_start(&b, &sbx_it, "POST", path, body, 60) == 0);
	sleep_ms(1000);
	for (unsigned p = 0; p < 6; p++) { /* 600 sockets: over the total cap of 512 */
		char src[32];
		snprintf(src, sizeof(src), "127.0.0.%u", p + 2);
		flood_open(src, 100);
	}
	sleep_ms(300);
	unsigned held = flood_count_open();
	cr_expect_leq(held, API_CONN_MAX, "%u connections held", held);
	_cleanup_resp_ struct http_resp r = bg_req_join(&b);
	printf("waiting run: %d after %llu ms; %u flood sockets held during it\n", r.status,
	       b.finished_ms - b.started_ms, held);
	assert_status(r, 200);
	cr_expect_str_eq(js_str(r.json, "stdout") ? js_str(r.json, "stdout") : "", "done\n", "%s",
	                 r.body);
	cr_expect_geq(b.finished_ms - b.started_ms, (API_IDLE_TIMEOUT_S + 1) * 1000ull);
	flood_close();
}

/* sbx-api raises its soft RLIMIT_NOFILE to the hard limit at start (the caps are sized to
 * it): started with soft 1024 under a higher hard limit, it runs with soft == hard. */
Test(conn_limits, soft_nofile_is_raised_to_hard, .init = NULL, .fini = NULL)
{
	struct rlimit own, low;
	struct sbxd e = { .pid = -1 };
	char path[64], line[256];
	unsigned long long soft = 0, hard = 0;
	cr_assert(getrlimit(RLIMIT_NOFILE, &own) == 0);
	if (own.rlim_max <= 1024) {
		printf("SKIP: the hard RLIMIT_NOFILE is %llu: nothing to raise to\n",
		       (unsigned long long)own.rlim_max);
		fflush(stdout);
		cr_skip_test("the hard RLIMIT_NOFILE is %llu: nothing to raise to",
		             (unsigned long long)own.rlim_max);
	}
	low = (struct rlimit){ 1024, own.rlim_max };
	cr_assert(setrlimit(RLIMIT_NOFILE, &low) == 0);
	int r = sbxd_start(&e); /* sbxd and its children inherit soft 1024 */
	cr_assert(setrlimit(RLIMIT_NOFILE, &own) == 0);
	cr_assert(r == 0, "sbxd did not start: %s", strerror(-r));
	_cleanup_resp_ struct http_resp h = http_req(&e, "GET", HEALTH, NULL, NULL);
	snprintf(path, sizeof(path), "/proc/%lld/limits", js_int(h.json, "processes.api", 0));
	FILE *f = fopen(path, "re");
	cr_assert_not_null(f, "%s", path);
	while (fgets(line, sizeof(line), f))
		sscanf(line, "Max open files %llu %llu", &soft, &hard);
	fclose(f);
	sbxd_stop(&e);
	printf("sbx-api RLIMIT_NOFILE: soft %llu, hard %llu\n", soft, hard);
	cr_expect(soft > 1024 && soft == hard, "sbx-api runs with soft %llu, hard %llu", soft, hard);
}

/* ---- libevent's own refusals ---------------------------------------------------------- */

static void expect_json_error(const char *what, const char *req, size_t len, int want)
{
	char ct[128] = "";
	unsigned long long t0 = mono_ms();
	_cleanup_resp_ struct http_resp r = http_raw(sbx_it.port, req, len, 10);
	printf("%s: %d in %llu ms\n", what, r.status, mono_ms() - t0);
	http_header(&r, "Content-Type", ct, sizeof(ct));
	cr_expect_eq(r.status, want, "%s: status %d, want %d: %s", what, r.status, want,
	             r.body ? r.body : "(none)");
	cr_expect(strncmp(ct, "application/json", 16) == 0, "%s: Content-Type '%s': %s", what, ct,
	          r.body ? r.body : "(none)");
	cr_expect(js_str(r.json, "error.message") && js_str(r.json, "error.code"),
	          "%s: not a JSON error document: %s", what, r.body ? r.body : "(none)");
}

Test(conn_limits, libevent_refusals_are_json)
{
	char buf[256];
	const size_t big_hdr = 16384;
	pid_t pid = api_pid();
	_cleanup_free_ char *hdrs = malloc(big_hdr + 256);
	cr_assert(hdrs);

	snprintf(buf, sizeof(buf),
	         "POST /api/sandbox/sandboxes HTTP/1.1\r\nHost: 127.0.0.1:%u\r\n"
	         "Content-Type: application/json\r\nContent-Length: %u\r\n\r\n",
	         sbx_it.port, 64u << 20);
	expect_json_error("oversized body", buf, strlen(buf), 413);

	int n = snprintf(hdrs, 256, "GET " HEALTH " HTTP/1.1\r\nHost: 127.0.0.1:%u\r\nX-Pad: ",
	                 sbx_it.port);
	memset(hdrs + n, 'a', big_hdr);
	memcpy(hdrs + n + big_hdr, "\r\n\r\n", 5);
	expect_json_error("oversized headers", hdrs, strlen(hdrs), 400); /* libevent's choice */

	const char brew[] = "BREW / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
	expect_json_error("unknown method", brew, sizeof(brew) - 1, 501);
	const char line[] = "GET\r\n\r\n";
	expect_json_error("malformed request line", line, sizeof(line) - 1, 400);
	snprintf(buf, sizeof(buf), "TRACE " HEALTH " HTTP/1.1\r\nHost: 127.0.0.1:%u\r\n"
	         "Authorization: Bearer %s\r\nConnection: close\r\n\r\n", sbx_it.port, sbx_it.token);
	expect_json_error("a method no route takes", buf, strlen(buf), 405);

	expect_health_prompt("after the refusals");
	cr_expect_eq(api_pid(), pid, "sbx-api was restarted by the refused requests");
}
