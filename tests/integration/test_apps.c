/* Space Apps against a real sbxd (DESIGN.md §11): a real server in a real jail on its
 * port, supervisord's states and restart rules, what the kernel gave the process, port
 * reclaim, shutdown by SIGTERM and by SIGKILL, and sbxctl status byte for byte against
 * supervisorctl's own code. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "cleanup.h"
#include "harness.h"

#define API "/api/sandbox"
/* Debian's supervisor package unpacked by scripts/deps.sh: its own code prints the
 * reference for sbxctl status */
#define SUPERVISOR_PY "/var/cache/sbx-test/supervisor/usr/lib/python3/dist-packages"

static void setup(void)
{
	sbx_require_bwrap();
	sbx_it_init();
}

TestSuite(apps, .init = setup, .fini = sbx_it_fini, .timeout = 180);

static struct http_resp app_post(const char *json)
{
	return http_req(&sbx_it, "POST", API "/apps", json, NULL);
}

static struct http_resp app_get(const char *name)
{
	char p[256];
	snprintf(p, sizeof(p), API "/apps/%s", name);
	return http_req(&sbx_it, "GET", p, NULL, NULL);
}

static struct http_resp app_ctl(const char *name, const char *op)
{
	char p[256];
	snprintf(p, sizeof(p), API "/apps/%s/%s", name, op);
	return http_req(&sbx_it, "POST", p, NULL, NULL);
}

/* Poll until the app is in state want (up to ms); returns whether it got there. seen:
 * states passed on the way, appended comma-separated when not the last one seen. */
static bool wait_state(const char *name, const char *want, unsigned ms, char *seen, size_t seensz)
{
	char last[32] = "";
	for (unsigned long long end = mono_ms() + ms; mono_ms() < end; sleep_ms(50)) {
		_cleanup_resp_ struct http_resp r = app_get(name);
		const char *st = r.json ? js_str(r.json, "state") : NULL;
		if (!st)
			continue;
		if (seen && strcmp(st, last) != 0) {
			snprintf(seen + strlen(seen), seensz - strlen(seen), "%s,", st);
			snprintf(last, sizeof(last), "%s", st);
		}
		if (strcmp(st, want) == 0)
			return true;
	}
	return false;
}

static int count_running(void)
{
	_cleanup_resp_ struct http_resp r = http_req(&sbx_it, "GET", API "/apps", NULL, NULL);
	yajl_val apps = r.json ? js_get(r.json, "apps") : NULL;
	int n = 0;
	for (size_t i = 0; apps && YAJL_IS_ARRAY(apps) && i < apps->u.array.len; i++)
		n += strcmp(js_str(apps->u.array.values[i], "state") ?: "", "RUNNING") == 0;
	return n;
}

/* a plain GET of 127.0.0.1:port/path: the status, the body into buf */
static int page(uint16_t port, const char *path, char *buf, size_t sz)
{
	const char *const hdrs[] = { "Host: 127.0.0.1", NULL };
	_cleanup_resp_ struct http_resp r = http_send(port, "GET", path, hdrs, NULL, 0, 5);
	snprintf(buf, sz, "%s", r.body ? r.body : "");
	return r.status;
}

/* A process of ours listening on 127.0.0.1:port with its cwd in dir, as root: a stale app
 * process (cwd inside the app's directory) or someone else's server (cwd elsewhere). */
static pid_t holder_start(uint16_t port, const char *dir)
{
	char p[16];
	pid_t pid = fork();
	if (pid == 0) {
		int fd = open("/dev/null", O_RDWR);
		dup2(fd, 0);
		dup2(fd, 1);
		dup2(fd, 2);
		if (chdir(dir) < 0)
			_exit(126);
		snprintf(p, sizeof(p), "%u", port);
		execl("/usr/bin/python3", "python3", "-m", "http.server", p, "--bind", "127.0.0.1", (char *)NULL);
		_exit(127);
	}
	/* until it answers */
	for (int i = 0; i < 100; i++) {
		char body[64];
		if (page(port, "/", body, sizeof(body)) > 0)
			break;
		sleep_ms(50);
	}
	return pid;
}

static bool pid_alive(pid_t pid)
{
	return pid > 0 && waitpid(pid, NULL, WNOHANG) == 0 && kill(pid, 0) == 0;
}

/* ---- a real server, confined, with its home kept -------------------------------------- */

Test(apps, a_static_site_runs_confined_on_its_port_and_keeps_its_home)
{
	uint16_t port;
	char body[8192], sid[64], dir[512], p[512];
	cr_assert_eq(free_port(&port), 0);
	/* a real server package (python3's http.server) serving a page the app writes into
	 * its HOME; every start counts itself in $HOME/starts */
	snprintf(body, sizeof(body),
	         "{\"name\":\"site\",\"port\":%u,\"autostart\":true,\"command\":"
	         "\"n=$(cat $HOME/starts 2>/dev/null || echo 0); echo $((n+1)) > $HOME/starts; "
	         "mkdir -p $HOME/www && echo hello-from-the-app > $HOME/www/index.html && "
	         "cd $HOME/www && exec /usr/bin/python3 -m http.server %u --bind 127.0.0.1\"}",
	         port, port);
	{
		_cleanup_resp_ struct http_resp r = app_post(body);
		assert_status(r, 201);
		cr_expect_str_eq(js_str(r.json, "name") ?: "", "site");
		snprintf(sid, sizeof(sid), "%s", js_str(r.json, "sandboxId") ?: "");
		snprintf(dir, sizeof(dir), "%s", js_str(r.json, "dir") ?: "");
		cr_expect(strstr(dir, sid), "dir %s is not its sandbox %s's workdir", dir, sid);
	}
	cr_assert(wait_state("site", "RUNNING", 15000, NULL, 0), "not RUNNING");
	/* the page, over the host's loopback through the fence's listen port */
	int st = 0;
	for (int i = 0; i < 100 && (st = page(port, "/index.html", body, sizeof(body))) != 200; i++)
		sleep_ms(50);
	cr_expect_eq(st, 200, "GET /index.html: %d %s", st, body);
	cr_expect(strstr(body, "hello-from-the-app"), "%s", body);

	/* what the process got, read from /proc by the daemon, checked against /proc here */
	{
		_cleanup_resp_ struct http_resp r = app_get("site");
		assert_status(r, 200);
		cr_expect(js_is_true(r.json, "confined"), "not confined: %s", r.body);
		long long pid = js_int(r.json, "process.pid", 0), uid = js_int(r.json, "process.uid", 0);
		cr_expect(uid >= 200000, "uid %lld", uid);
		cr_expect(js_is_true(r.json, "process.noNewPrivs"), "%s", r.body);
		cr_expect_str_eq(js_str(r.json, "process.seccomp") ?: "", "filter");
		cr_expect(js_int(r.json, "process.seccompFilters", 0) >= 1, "%s", r.body);
		cr_expect_str_eq(js_str(r.json, "process.capEff") ?: "", "0000000000000000");
		yajl_val ns = js_get(r.json, "process.namespaces");
		char all[256] = ",";
		for (size_t i = 0; ns && YAJL_IS_ARRAY(ns) && i < ns->u.array.len; i++)
			snprintf(all + strlen(all), sizeof(all) - strlen(all), "%s,",
			         YAJL_GET_STRING(ns->u.array.values[i]));
		cr_expect(strstr(all, ",user,") && strstr(all, ",pid,") && strstr(all, ",mnt,") &&
		          strstr(all, ",net,"), "namespaces %s", all);
		yajl_val lp = js_get(r.json, "process.listening");
		cr_expect(lp && YAJL_IS_ARRAY(lp) && lp->u.array.len >= 1 &&
		          YAJL_GET_INTEGER(lp->u.array.values[0]) == port, "listening: %s", r.body);
		/* the same pid, seen here: it is python, it runs as that uid */
		char status[4096] = "";
		snprintf(p, sizeof(p), "/proc/%lld/status", pid);
		_cleanup_fclose_ FILE *f = fopen(p, "re");
		cr_assert(f, "no %s", p);
		size_t n = fread(status, 1, sizeof(status) - 1, f);
		status[n] = '\0';
		char want[64];
		snprintf(want, sizeof(want), "\nUid:\t%lld\t%lld", uid, uid);
		cr_expect(strstr(status, want), "%s", status);
		cr_expect(strstr(status, "\nNoNewPrivs:\t1"), "%s", status);
		cr_expect(strstr(status, "\nSeccomp:\t2"), "%s", status);
		cr_expect(strstr(status, "Name:\tpython3"), "%s", status);
	}
	/* its log has the request */
	{
		_cleanup_resp_ struct http_resp r =
			http_req(&sbx_it, "GET", API "/apps/site/log?stream=stderr&tail=4096", NULL, NULL);
		assert_status(r, 200);
		cr_expect(r.body && strstr(r.body, "GET /index.html"), "log: %s", r.body ? r.body : "");
	}
	/* a restart finds the same HOME: the count is 2 */
	{
		_cleanup_resp_ struct http_resp r = app_ctl("site", "restart");
		assert_status(r, 200);
	}
	cr_assert(wait_state("site", "RUNNING", 15000, NULL, 0), "not RUNNING after restart");
	snprintf(p, sizeof(p), API "/sandboxes/%s/files/content?path=home/starts", sid);
	{
		_cleanup_resp_ struct http_resp r = http_req(&sbx_it, "GET", p, NULL, NULL);
		assert_status(r, 200);
		cr_expect(r.body && strcmp(r.body, "2\n") == 0, "starts: %s", r.body ? r.body : "");
	}
	/* stop: STOPPED, the server gone, the port free */
	{
		_cleanup_resp_ struct http_resp r = app_ctl("site", "stop");
		assert_status(r, 200);
	}
	cr_expect(wait_state("site", "STOPPED", 15000, NULL, 0), "not STOPPED");
	cr_expect_leq(page(port, "/", body, sizeof(body)), 0, "the port still answers after stop");
	/* a stopped app is deleted with its sandbox */
	{
		_cleanup_resp_ struct http_resp r = http_req(&sbx_it, "DELETE", API "/apps/site", NULL, NULL);
		assert_status(r, 200);
		_cleanup_resp_ struct http_resp g = app_get("site");
		assert_status(g, 404);
		snprintf(p, sizeof(p), API "/sandboxes/%s", sid);
		_cleanup_resp_ struct http_resp s = http_req(&sbx_it, "GET", p, NULL, NULL);
		assert_status(s, 404);
	}
}

/* ---- supervisord's restart rules -------------------------------------------------------- */

Test(apps, an_app_that_exits_at_once_goes_through_backoff_to_fatal)
{
	char seen[512] = "";
	_cleanup_resp_ struct http_resp r = app_post(
		"{\"name\":\"broken\",\"autostart\":true,\"startsecs\":1,\"startretries\":2,"
		"\"command\":\"echo boom >&2; exit 3\"}");
	assert_status(r, 201);
	cr_assert(wait_state("broken", "FATAL", 20000, seen, sizeof(seen)), "never FATAL: %s", seen);
	cr_expect(strstr(seen, "BACKOFF,"), "no BACKOFF on the way: %s", seen);
	_cleanup_resp_ struct http_resp g = app_get("broken");
	cr_expect_eq(js_int(g.json, "starts", 0), 3, "the first start and startretries=2: %s", g.body);
	cr_expect_str_eq(js_str(g.json, "spawnerr") ?: "", "Exited too quickly (process log may have details)");
	cr_expect(js_get(g.json, "confined") && YAJL_IS_NULL(js_get(g.json, "confined")), "%s", g.body);
	_cleanup_resp_ struct http_resp l =
		http_req(&sbx_it, "GET", API "/apps/broken/log?stream=stderr", NULL, NULL);
	assert_status(l, 200);
	cr_expect(l.body && strcmp(l.body, "boom\nboom\nboom\n") == 0, "log: %s", l.body ? l.body : "");
	/* FATAL is a stopped state: start again is allowed, stop is not */
	_cleanup_resp_ struct http_resp s = app_ctl("broken", "stop");
	assert_status(s, 409);
}

Test(apps, autorestart_true_restarts_an_exit_and_unexpected_only_a_bad_code)
{
	_cleanup_resp_ struct http_resp a = app_post(
		"{\"name\":\"always\",\"autostart\":true,\"startsecs\":0,\"autorestart\":true,"
		"\"command\":\"sleep 0.3; exit 0\"}");
	assert_status(a, 201);
	_cleanup_resp_ struct http_resp b = app_post(
		"{\"name\":\"clean\",\"autostart\":true,\"startsecs\":0,\"exitcodes\":[0,7],"
		"\"command\":\"sleep 0.3; exit 7\"}");
	assert_status(b, 201);
	sleep_ms(2500);
	_cleanup_resp_ struct http_resp ga = app_get("always");
	cr_expect(js_int(ga.json, "starts", 0) >= 3, "autorestart true: %s", ga.body);
	_cleanup_resp_ struct http_resp gb = app_get("clean");
	cr_expect_str_eq(js_str(gb.json, "state") ?: "", "EXITED", "%s", gb.body);
	cr_expect_eq(js_int(gb.json, "starts", 0), 1, "an expected exit is not restarted: %s", gb.body);
	cr_expect_eq(js_int(gb.json, "exitStatus", -1), 7, "%s", gb.body);
}

/* ---- bad input changes nothing ------------------------------------------------------- */

Test(apps, bad_requests_are_refused_and_change_nothing)
{
	static const struct { const char *body; int status; } cases[] = {
		{ "{\"name\":\"../x\",\"command\":\"true\"}", 400 },
		{ "{\"name\":\"Upper\",\"command\":\"true\"}", 400 },
		{ "{\"name\":\"nocmd\"}", 400 },
		{ "{\"name\":\"p\",\"command\":\"true\",\"port\":65536}", 400 },
		{ "{\"name\":\"p\",\"command\":\"true\",\"port\":0}", 400 },
		{ "{\"name\":\"p\",\"command\":\"true\",\"bogus\":1}", 400 },
		{ "{\"name\":\"p\",\"command\":\"true\",\"dir\":\"/etc\"}", 400 },
		{ "{\"name\":\"p\",\"command\":\"true\",\"stopsignal\":\"FOO\"}", 400 },
		{ "{\"name\":\"p\",\"command\":\"true\",\"exitcodes\":[256]}", 400 },
		{ "{\"name\":\"p\",\"command\":\"true\",\"autorestart\":\"sometimes\"}", 400 },
		{ "{\"name\":\"p\",\"command\":\"true\",\"startretries\":101}", 400 },
		{ "{\"name\":\"p\",\"command\":\"\"}", 400 },
		{ "[1]", 400 },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		_cleanup_resp_ struct http_resp r = app_post(cases[i].body);
		cr_expect_eq(r.status, cases[i].status, "%s: %d %s", cases[i].body, r.status, r.body);
		cr_expect(r.json && js_str(r.json, "error.message"), "no error body: %s", r.body);
	}
	/* the command's limit, the same constant on both sides: at it, and one past */
	for (int extra = 0; extra <= 1; extra++) {
		size_t n = 16384 + (size_t)extra; /* PROTO_APP_CMD_MAX */
		_cleanup_free_ char *cmd = malloc(n + 1), *body = NULL;
		cr_assert(cmd);
		memset(cmd, ' ', n);
		memcpy(cmd, "true", 4);
		cmd[n] = '\0';
		cr_assert(asprintf(&body, "{\"name\":\"long%d\",\"command\":\"%s\"}", extra, cmd) > 0);
		_cleanup_resp_ struct http_resp r = app_post(body);
		cr_expect_eq(r.status, extra ? 413 : 201, "a %zu-byte command: %d %s", n, r.status, r.body);
		if (!extra) {
			_cleanup_resp_ struct http_resp d = http_req(&sbx_it, "DELETE", API "/apps/long0", NULL, NULL);
			assert_status(d, 200);
		}
	}
	_cleanup_resp_ struct http_resp l = http_req(&sbx_it, "GET", API "/apps", NULL, NULL);
	cr_expect_eq(js_int(l.json, "count", -1), 0, "%s", l.body);

	_cleanup_resp_ struct http_resp ok = app_post("{\"name\":\"one\",\"command\":\"exec sleep 100\"}");
	assert_status(ok, 201);
	char sid[64];
	snprintf(sid, sizeof(sid), "%s", js_str(ok.json, "sandboxId") ?: "");
	_cleanup_resp_ struct http_resp dup = app_post("{\"name\":\"one\",\"command\":\"true\"}");
	assert_status(dup, 409);
	_cleanup_resp_ struct http_resp nf = app_ctl("nosuch", "start");
	assert_status(nf, 404);
	_cleanup_resp_ struct http_resp stop = app_ctl("one", "stop");
	assert_status(stop, 409); /* not running */
	_cleanup_resp_ struct http_resp fence = http_req(&sbx_it, "PATCH", API "/apps/one", "{\"network\":true}", NULL);
	assert_status(fence, 400);
	_cleanup_resp_ struct http_resp ren = http_req(&sbx_it, "PATCH", API "/apps/one", "{\"name\":\"two\"}", NULL);
	assert_status(ren, 400);
	_cleanup_resp_ struct http_resp pt = http_req(&sbx_it, "PATCH", API "/apps/one", "{\"startsecs\":0}", NULL);
	assert_status(pt, 200);
	cr_expect_eq(js_int(pt.json, "startsecs", -1), 0, "%s", pt.body);
	/* the app's sandbox goes only with the app */
	char p[256];
	snprintf(p, sizeof(p), API "/sandboxes/%s", sid);
	_cleanup_resp_ struct http_resp ds = http_req(&sbx_it, "DELETE", p, NULL, NULL);
	assert_status(ds, 409);
	/* a running app is not deleted */
	_cleanup_resp_ struct http_resp st = app_ctl("one", "start");
	assert_status(st, 200);
	cr_assert(wait_state("one", "RUNNING", 15000, NULL, 0));
	_cleanup_resp_ struct http_resp dr = http_req(&sbx_it, "DELETE", API "/apps/one", NULL, NULL);
	assert_status(dr, 409);
	_cleanup_resp_ struct http_resp again = app_ctl("one", "start");
	assert_status(again, 409); /* already started */
}

/* ---- port reclaim -------------------------------------------------------------------- */

Test(apps, a_stale_holder_inside_the_app_dir_is_reclaimed_a_stranger_is_left_alone)
{
	uint16_t p1, p2;
	char body[1024], dir[512], other[600];
	cr_assert_eq(free_port(&p1), 0);
	do
		cr_assert_eq(free_port(&p2), 0);
	while (p2 == p1);
	/* two apps serving their directory's page */
	snprintf(body, sizeof(body),
	         "{\"name\":\"mine\",\"port\":%u,\"startretries\":1,\"command\":\"echo app-page > "
	         "index.html; exec /usr/bin/python3 -m http.server %u --bind 127.0.0.1\"}", p1, p1);
	_cleanup_resp_ struct http_resp a = app_post(body);
	assert_status(a, 201);
	snprintf(dir, sizeof(dir), "%s", js_str(a.json, "dir") ?: "");
	snprintf(body, sizeof(body),
	         "{\"name\":\"theirs\",\"port\":%u,\"startretries\":0,\"command\":\"exec "
	         "/usr/bin/python3 -m http.server %u --bind 127.0.0.1\"}", p2, p2);
	_cleanup_resp_ struct http_resp b = app_post(body);
	assert_status(b, 201);

	/* a process left by an earlier daemon: on the app's port, its cwd inside the app's dir */
	pid_t stale = holder_start(p1, dir);
	cr_assert(pid_alive(stale));
	/* someone's own dev server on the other app's port, elsewhere */
	snprintf(other, sizeof(other), "%s", sbx_it.root);
	pid_t stranger = holder_start(p2, other);
	cr_assert(pid_alive(stranger));

	_cleanup_resp_ struct http_resp s1 = app_ctl("mine", "start");
	assert_status(s1, 200);
	cr_expect(wait_state("mine", "RUNNING", 15000, NULL, 0), "the app was not relaunched");
	for (int i = 0; i < 40 && pid_alive(stale); i++)
		sleep_ms(50);
	cr_expect(!pid_alive(stale), "the stale holder %d still runs", (int)stale);
	int st = 0;
	for (int i = 0; i < 100 && (st = page(p1, "/index.html", body, sizeof(body))) != 200; i++)
		sleep_ms(50);
	cr_expect(st == 200 && strstr(body, "app-page"), "%d %s", st, body);

	_cleanup_resp_ struct http_resp s2 = app_ctl("theirs", "start");
	assert_status(s2, 200);
	cr_expect(wait_state("theirs", "FATAL", 15000, NULL, 0), "not FATAL");
	cr_expect(pid_alive(stranger), "the stranger was killed");
	_cleanup_resp_ struct http_resp g = app_get("theirs");
	const char *why = js_str(g.json, "spawnerr") ?: "";
	cr_expect(strstr(why, "not this app's: left alone"), "spawnerr: %s", why);
	/* the next start does not attack it either */
	_cleanup_resp_ struct http_resp s3 = app_ctl("theirs", "start");
	assert_status(s3, 200);
	cr_expect(wait_state("theirs", "FATAL", 15000, NULL, 0), "not FATAL again");
	cr_expect(pid_alive(stranger), "the stranger was killed at the second start");
	/* and the log says so */
	char log[65536] = "";
	_cleanup_fclose_ FILE *lf = fopen(sbx_it.log_path, "re");
	size_t n = lf ? fread(log, 1, sizeof(log) - 1, lf) : 0;
	log[n] = '\0';
	cr_expect(strstr(log, "left alone"), "nothing logged");
	kill(stranger, SIGKILL);
	waitpid(stranger, NULL, 0);
	waitpid(stale, NULL, WNOHANG);
}

/* ---- shutdown ------------------------------------------------------------------------ */

static void start_many(int n, const char *marker)
{
	char body[512];
	for (int i = 0; i < n; i++) {
		snprintf(body, sizeof(body),
		         "{\"name\":\"a%02d\",\"autostart\":true,\"command\":\"cp /bin/sleep ./%s && "
		         "exec ./%s 1000\"}", i, marker, marker);
		_cleanup_resp_ struct http_resp r = app_post(body);
		assert_status(r, 201);
	}
	int running = 0;
	for (unsigned long long end = mono_ms() + 60000; mono_ms() < end && running < n; sleep_ms(200))
		running = count_running();
	cr_assert_eq(running, n, "%d of %d apps running", running, n);
	cr_assert_eq(proc_count_marker(marker), n);
}

Test(apps, sigterm_with_50_apps_ends_every_app_and_sbxd_by_itself)
{
	char rnd[13], marker[24];
	int st = 0;
	rand_alnum(rnd, 12);
	snprintf(marker, sizeof(marker), "mk_%s", rnd);
	start_many(50, marker);
	unsigned long long t0 = mono_ms();
	cr_assert_eq(kill(sbx_it.pid, SIGTERM), 0);
	pid_t w = 0;
	while ((w = waitpid(sbx_it.pid, &st, WNOHANG)) == 0 && mono_ms() - t0 < 10000)
		sleep_ms(5);
	cr_assert_eq(w, sbx_it.pid, "sbxd did not exit within 10 s of SIGTERM");
	printf("sbxd exited %llu ms after SIGTERM with 50 apps\n", mono_ms() - t0);
	sbx_it.pid = -1;
	cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "sbxd status 0x%x", st);
	cr_expect_eq(proc_wait_marker_gone(marker, 2000), 0, "app processes outlived sbxd");
}

Test(apps, sigkill_of_sbxd_leaves_no_app)
{
	char rnd[13], marker[24];
	int st;
	rand_alnum(rnd, 12);
	snprintf(marker, sizeof(marker), "mk_%s", rnd);
	start_many(5, marker);
	cr_assert_eq(kill(sbx_it.pid, SIGKILL), 0);
	waitpid(sbx_it.pid, &st, 0);
	sbx_it.pid = -1;
	cr_expect_eq(proc_wait_marker_gone(marker, 5000), 0, "an app outlived a SIGKILLed sbxd");
	/* a new daemon on the same data: the apps come back by autostart, once each, and its
	 * clean stop (the fixture's) unmounts the images the killed one left mounted */
	cr_assert_eq(sbxd_restart(&sbx_it), 0, "sbxd did not start again");
	int running = 0;
	for (unsigned long long end = mono_ms() + 30000; mono_ms() < end && running < 5; sleep_ms(200))
		running = count_running();
	cr_expect_eq(running, 5, "%d of 5 apps back after the restart", running);
	cr_expect_eq(proc_count_marker(marker), 5);
}

/* ---- sbxctl status ---------------------------------------------------------------------- */

static int run_capture(const char *cmd, char *out, size_t sz)
{
	_cleanup_free_ char *full = NULL;
	FILE *p;
	size_t n;
	int st;
	if (asprintf(&full, "%s 2>&1", cmd) < 0 || !(p = popen(full, "r")))
		return -1;
	n = fread(out, 1, sz - 1, p);
	out[n] = '\0';
	st = pclose(p);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static const char status_py[] =
	"import json, sys\n"
	"sys.path.insert(0, sys.argv[1])\n"
	"from supervisor import supervisorctl, rpcinterface\n"
	"codes = {'STOPPED': 0, 'STARTING': 10, 'RUNNING': 20, 'BACKOFF': 30, 'STOPPING': 40,\n"
	"         'EXITED': 100, 'FATAL': 200}\n"
	"infos = []\n"
	"for a in json.load(open(sys.argv[2]))['apps']:\n"
	"    i = dict(name=a['name'], group=a['name'], state=codes[a['state']],\n"
	"             statename=a['state'], start=a['start'], stop=a['stop'], now=a['now'],\n"
	"             pid=a['pid'] or 0, spawnerr=a['spawnerr'], exitstatus=a['exitStatus'] or 0,\n"
	"             logfile='', stdout_logfile='', stderr_logfile='')\n"
	"    i['description'] = rpcinterface.SupervisorNamespaceRPCInterface._interpretProcessInfo(None, i)\n"
	"    infos.append(i)\n"
	"class Sup:\n"
	"    def getAllProcessInfo(self): return infos\n"
	"class Ctl:\n"
	"    exitstatus = 0\n"
	"    def upcheck(self): return True\n"
	"    def get_supervisor(self): return Sup()\n"
	"    def output(self, s): sys.stdout.write(s + '\\n')\n"
	"c = Ctl()\n"
	"supervisorctl.DefaultControllerPlugin(c).do_status(' '.join(sys.argv[3:]))\n"
	"sys.exit(c.exitstatus)\n";

Test(apps, sbxctl_status_is_supervisorctls_layout_and_exit_codes)
{
	char cmd[2048], out[8192], ref[8192], json_path[1100], py_path[1100];
	_cleanup_resp_ struct http_resp a = app_post(
		"{\"name\":\"web\",\"autostart\":true,\"command\":\"exec sleep 1000\"}");
	assert_status(a, 201);
	_cleanup_resp_ struct http_resp b = app_post("{\"name\":\"idle\",\"command\":\"exec sleep 1000\"}");
	assert_status(b, 201);
	_cleanup_resp_ struct http_resp c = app_post(
		"{\"name\":\"a-much-longer-application-name-x\",\"autostart\":true,\"startretries\":0,"
		"\"command\":\"exit 1\"}");
	assert_status(c, 201);
	cr_assert(wait_state("web", "RUNNING", 15000, NULL, 0));
	cr_assert(wait_state("a-much-longer-application-name-x", "FATAL", 15000, NULL, 0));

	char ctl[1500];
	snprintf(ctl, sizeof(ctl), "SBX_URL=http://127.0.0.1:%u SBX_TOKEN=%s %s/sbxctl", sbx_it.port,
	         sbx_it.token, sbx_it.bin_dir);
	/* running: 0; a stopped one listed: 3; an unknown name: 4 (and 3 wins when a listed
	 * one is stopped, as in supervisorctl) */
	snprintf(cmd, sizeof(cmd), "%s status web", ctl);
	cr_expect_eq(run_capture(cmd, out, sizeof(out)), 0, "%s", out);
	cr_expect(strncmp(out, "web                              RUNNING   pid ", 47) == 0, "[%s]", out);
	snprintf(cmd, sizeof(cmd), "%s status idle", ctl);
	cr_expect_eq(run_capture(cmd, out, sizeof(out)), 3, "%s", out);
	cr_expect_str_eq(out, "idle                             STOPPED   Not started\n");
	snprintf(cmd, sizeof(cmd), "%s status nosuch", ctl);
	cr_expect_eq(run_capture(cmd, out, sizeof(out)), 4, "%s", out);
	cr_expect_str_eq(out, "nosuch: ERROR (no such process)\n");
	snprintf(cmd, sizeof(cmd), "%s status nosuch web", ctl);
	cr_expect_eq(run_capture(cmd, out, sizeof(out)), 4, "%s", out);
	snprintf(cmd, sizeof(cmd), "%s status", ctl);
	cr_expect_eq(run_capture(cmd, out, sizeof(out)), 3, "%s", out);
	/* the longest name sets the column: 33 + 3 */
	cr_expect(strstr(out, "a-much-longer-application-name-x   FATAL     Exited too quickly "
	                      "(process log may have details)\n"), "[%s]", out);

	/* byte for byte against supervisorctl's own do_status, fed the same answer */
	if (access(SUPERVISOR_PY "/supervisor/supervisorctl.py", R_OK) != 0) {
		printf("SKIP: supervisor's source is not unpacked at %s (scripts/deps.sh does it): "
		       "the layout was checked by the fixed lines above only\n", SUPERVISOR_PY);
		return;
	}
	snprintf(json_path, sizeof(json_path), "%s/apps.json", sbx_it.root);
	snprintf(py_path, sizeof(py_path), "%s/status.py", sbx_it.root);
	{
		_cleanup_fclose_ FILE *f = fopen(py_path, "we");
		cr_assert(f);
		fputs(status_py, f);
	}
	static const char *const args[] = { "", "web", "idle", "nosuch", "web idle nosuch",
		                            "a-much-longer-application-name-x web" };
	for (size_t k = 0; k < sizeof(args) / sizeof(args[0]); k++) {
		bool compared = false;
		for (int tries = 0; tries < 5 && !compared; tries++) {
			/* the same second on both sides of sbxctl: the uptime cannot differ */
			_cleanup_resp_ struct http_resp before = http_req(&sbx_it, "GET", API "/apps", NULL, NULL);
			snprintf(cmd, sizeof(cmd), "%s status %s", ctl, args[k]);
			int rc = run_capture(cmd, out, sizeof(out));
			_cleanup_resp_ struct http_resp after = http_req(&sbx_it, "GET", API "/apps", NULL, NULL);
			yajl_val b0 = js_get(before.json, "apps"), a0 = js_get(after.json, "apps");
			if (!b0 || !a0 || js_int(b0->u.array.values[0], "now", 0) !=
			                      js_int(a0->u.array.values[0], "now", 1))
				continue;
			_cleanup_fclose_ FILE *f = fopen(json_path, "we");
			cr_assert(f);
			fwrite(before.body, 1, before.body_len, f);
			fflush(f);
			snprintf(cmd, sizeof(cmd), "/usr/bin/python3 %s %s %s %s", py_path, SUPERVISOR_PY,
			         json_path, args[k]);
			int want = run_capture(cmd, ref, sizeof(ref));
			cr_expect_str_eq(out, ref, "sbxctl status %s:\n[%s]\nsupervisorctl:\n[%s]", args[k], out, ref);
			cr_expect_eq(rc, want, "sbxctl status %s: exit %d, supervisorctl %d", args[k], rc, want);
			compared = true;
		}
		cr_expect(compared, "no quiet second to compare status %s in", args[k]);
	}
}

Test(apps, sbxctl_drives_apps_runs_and_the_policy)
{
	char ctl[1500], cmd[2048], out[8192];
	snprintf(ctl, sizeof(ctl), "SBX_URL=http://127.0.0.1:%u SBX_TOKEN=%s %s/sbxctl", sbx_it.port,
	         sbx_it.token, sbx_it.bin_dir);
	_cleanup_resp_ struct http_resp a = app_post("{\"name\":\"svc\",\"command\":\"exec sleep 1000\"}");
	assert_status(a, 201);
	static const struct { const char *args, *want; int rc; } steps[] = {
		{ "start svc", "svc: started\n", 0 },
		{ "start svc", "svc: ERROR (already started)\n", 1 },
		{ "restart svc", "svc: stopped\nsvc: started\n", 0 },
		{ "stop svc", "svc: stopped\n", 0 },
		{ "stop svc", "svc: ERROR (not running)\n", 1 },
		{ "start nosuch", "nosuch: ERROR (no such process)\n", 1 },
		{ "stop", "Error: stop requires a process name\n", 1 },
	};
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		snprintf(cmd, sizeof(cmd), "%s %s", ctl, steps[i].args);
		int rc = run_capture(cmd, out, sizeof(out));
		cr_expect_str_eq(out, steps[i].want, "sbxctl %s", steps[i].args);
		cr_expect_eq(rc, steps[i].rc, "sbxctl %s: exit %d", steps[i].args, rc);
	}
	/* tail: each stream's log */
	_cleanup_resp_ struct http_resp t = app_post(
		"{\"name\":\"talker\",\"autostart\":true,\"command\":\"echo line-one; echo err-one >&2; exec sleep 1000\"}");
	assert_status(t, 201);
	cr_assert(wait_state("talker", "RUNNING", 15000, NULL, 0));
	snprintf(cmd, sizeof(cmd), "%s tail talker", ctl);
	cr_expect_eq(run_capture(cmd, out, sizeof(out)), 0);
	cr_expect_str_eq(out, "line-one\n");
	snprintf(cmd, sizeof(cmd), "%s tail talker stderr", ctl);
	cr_expect_eq(run_capture(cmd, out, sizeof(out)), 0);
	cr_expect_str_eq(out, "err-one\n");
	/* run: by name, the code's output and exit code; the code from stdin */
	char sid[64];
	sbx_create(&sbx_it, "{\"name\":\"box\"}", sid, sizeof(sid));
	snprintf(cmd, sizeof(cmd), "%s run box -- 'echo hi; exit 7'", ctl);
	cr_expect_eq(run_capture(cmd, out, sizeof(out)), 7, "%s", out);
	cr_expect_str_eq(out, "hi\n");
	snprintf(cmd, sizeof(cmd), "echo 'echo from-stdin' | %s run %s", ctl, sid);
	cr_expect_eq(run_capture(cmd, out, sizeof(out)), 0, "%s", out);
	cr_expect_str_eq(out, "from-stdin\n");
	snprintf(cmd, sizeof(cmd), "%s run box --language python -- 'print(6*7)'", ctl);
	cr_expect_eq(run_capture(cmd, out, sizeof(out)), 0, "%s", out);
	cr_expect_str_eq(out, "42\n");
	/* policy: set, refused keys, read back */
	snprintf(cmd, sizeof(cmd), "%s policy runNode=off", ctl);
	cr_expect_eq(run_capture(cmd, out, sizeof(out)), 0, "%s", out);
	_cleanup_resp_ struct http_resp p = http_req(&sbx_it, "GET", API "/exec-policy", NULL, NULL);
	cr_expect(js_is_false(p.json, "runNode") && js_is_true(p.json, "runPython"), "%s", p.body);
	snprintf(cmd, sizeof(cmd), "%s policy bogus=on", ctl);
	cr_expect_eq(run_capture(cmd, out, sizeof(out)), 2, "%s", out);
	snprintf(cmd, sizeof(cmd), "%s policy runNode=maybe", ctl);
	cr_expect_eq(run_capture(cmd, out, sizeof(out)), 2, "%s", out);
	/* --json, caps, sandboxes */
	snprintf(cmd, sizeof(cmd), "%s --json status talker", ctl);
	cr_expect_eq(run_capture(cmd, out, sizeof(out)), 0, "%s", out);
	cr_expect(strstr(out, "\"name\":\"talker\",\"state\":\"RUNNING\""), "%s", out);
	snprintf(cmd, sizeof(cmd), "%s caps", ctl);
	cr_expect_eq(run_capture(cmd, out, sizeof(out)), 0, "%s", out);
	cr_expect(out[0] == '{', "%s", out);
	snprintf(cmd, sizeof(cmd), "%s sandboxes", ctl);
	cr_expect_eq(run_capture(cmd, out, sizeof(out)), 0, "%s", out);
	cr_expect(strstr(out, sid) && strstr(out, " box\n") && strstr(out, "app:talker"), "%s", out);
	/* a wrong token is an error, not an empty status */
	snprintf(cmd, sizeof(cmd), "SBX_URL=http://127.0.0.1:%u SBX_TOKEN=wrong %s/sbxctl status",
	         sbx_it.port, sbx_it.bin_dir);
	cr_expect_eq(run_capture(cmd, out, sizeof(out)), 4, "%s", out);
	cr_expect(strstr(out, "sbxctl:"), "%s", out);
	/* nothing listening */
	snprintf(cmd, sizeof(cmd), "SBX_URL=http://127.0.0.1:1 SBX_TOKEN=x %s/sbxctl status", sbx_it.bin_dir);
	cr_expect_eq(run_capture(cmd, out, sizeof(out)), 4, "%s", out);
	cr_expect(strstr(out, "cannot reach sbxd"), "%s", out);
}

Test(apps, a_log_is_followed_until_the_process_ends_by_one_reader)
{
	_cleanup_resp_ struct http_resp a = app_post(
		"{\"name\":\"tick\",\"autostart\":true,\"startsecs\":0,\"command\":\"echo first; i=0; "
		"while [ $i -lt 6 ]; do i=$((i+1)); echo tick $i; sleep 0.3; done\"}");
	assert_status(a, 201);
	cr_assert(wait_state("tick", "RUNNING", 15000, NULL, 0));
	struct bg_req bg;
	cr_assert_eq(bg_req_start_hdr(&bg, &sbx_it, "GET", API "/apps/tick/log", NULL, 20,
	                              "Accept: text/event-stream"), 0);
	sleep_ms(300);
	/* one follower per app */
	_cleanup_resp_ struct http_resp second =
		http_req(&sbx_it, "GET", API "/apps/tick/log", NULL, "Accept: text/event-stream", NULL);
	_cleanup_resp_ struct http_resp r = bg_req_join(&bg);
	cr_expect_eq(second.status, 409, "second: %s; first: %d %s", second.body, r.status, r.body);
	assert_status(r, 200);
	cr_expect(r.body && strstr(r.body, "event: stdout") && strstr(r.body, "first") &&
	          strstr(r.body, "tick 6") && strstr(r.body, "event: result"), "%s", r.body ? r.body : "");
	/* ended with the process: a follow of an app that does not run is refused */
	cr_expect(wait_state("tick", "EXITED", 5000, NULL, 0));
	_cleanup_resp_ struct http_resp none =
		http_req(&sbx_it, "GET", API "/apps/tick/log", NULL, "Accept: text/event-stream", NULL);
	assert_status(none, 409);
	/* the plain read still answers all of it */
	_cleanup_resp_ struct http_resp all = http_req(&sbx_it, "GET", API "/apps/tick/log", NULL, NULL);
	assert_status(all, 200);
	cr_expect(all.body && strcmp(all.body, "first\ntick 1\ntick 2\ntick 3\ntick 4\ntick 5\ntick 6\n") == 0,
	          "%s", all.body ? all.body : "");
}

/* sbxctl with no URL and no token talks through <data>/sbxd.sock: 0600, its peer's uid
 * checked by sbx-api (root or sbxd's user), no Host or token needed on it */
Test(apps, control_socket)
{
	char sock[1200], cmd[4096], out[8192];
	struct stat st;
	snprintf(sock, sizeof(sock), "%s/sbxd.sock", sbx_it.data_dir);
	if (strlen(sock) >= 108) { /* sizeof(sockaddr_un.sun_path) */
		printf("SKIP: the data dir path is too long for a Unix socket here: %s\n", sock);
		return;
	}
	cr_assert_eq(lstat(sock, &st), 0, "no control socket %s", sock);
	cr_expect(S_ISSOCK(st.st_mode) && (st.st_mode & 0777) == 0600 && st.st_uid == geteuid(),
	          "mode %o uid %u", st.st_mode & 0777, st.st_uid);
	_cleanup_resp_ struct http_resp a = app_post("{\"name\":\"viasock\",\"command\":\"exec sleep 1000\"}");
	assert_status(a, 201);
	snprintf(cmd, sizeof(cmd), "env -u SBX_URL -u SBX_TOKEN %s/sbxctl --data-dir %s start viasock",
	         sbx_it.bin_dir, sbx_it.data_dir);
	cr_expect_eq(run_capture(cmd, out, sizeof(out)), 0, "%s", out);
	cr_expect_str_eq(out, "viasock: started\n");
	snprintf(cmd, sizeof(cmd), "env -u SBX_URL -u SBX_TOKEN %s/sbxctl --data-dir %s status",
	         sbx_it.bin_dir, sbx_it.data_dir);
	cr_expect_eq(run_capture(cmd, out, sizeof(out)), 0, "%s", out);
	cr_expect(strncmp(out, "viasock                          RUNNING   pid ", 47) == 0, "%s", out);
	/* no token and a Host of no port: fine on the socket */
	snprintf(cmd, sizeof(cmd), "curl -s --unix-socket %s http://x/api/sandbox/apps/viasock", sock);
	cr_expect_eq(run_capture(cmd, out, sizeof(out)), 0, "%s", out);
	cr_expect(strstr(out, "\"state\":\"RUNNING\""), "%s", out);
	/* a peer that is neither root nor sbxd's user is refused even when the mode lets it in */
	cr_assert_eq(chmod(sock, 0666), 0);
	snprintf(cmd, sizeof(cmd), "setpriv --reuid=65534 --regid=65534 --clear-groups curl -s "
	         "--unix-socket %s http://x/api/sandbox/apps", sock);
	run_capture(cmd, out, sizeof(out));
	cr_expect(strstr(out, "\"forbidden\"") && !strstr(out, "viasock"), "%s", out);
	chmod(sock, 0600);
}
