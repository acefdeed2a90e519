/* Per-run cgroups do not outlive their run, whatever way the launcher or sbxd ends: a
 * SIGKILLed launcher (sbxd restarts it), a SIGKILLed sbxd (a new one starts on the same
 * data dir), both at once with the jail still running (the next launcher kills it), and
 * SIGTERM to sbxd mid-run. Two instances on one machine have parent groups of their own,
 * so one's start-up sweep never touches the other's runs.
 *
 * The run's groups are read from the jail's /proc/<pid>/cgroup while it runs, so the test
 * does not depend on how the parent group is named. */
#include <dirent.h>
#include <errno.h>
#include <libgen.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "cleanup.h"
#include "harness.h"

#define CG_MOUNT       "/sys/fs/cgroup"
#define RUN_GROUPS_MAX 4u    /* v2, or v1 memory + pids + the cgroup2 next to them */
#define GONE_WAIT_MS   3000u /* how long the groups and the jail may take to go */
#define START_WAIT_MS  5000u /* until the jail runs */

struct run_groups {
	char path[RUN_GROUPS_MAX][PATH_MAX];
	size_t n;
};

static void setup(void)
{
	sbx_require_bwrap();
	if (geteuid() != 0) {
		printf("SKIP: per-run cgroups need sbxd to run as root\n");
		fflush(stdout);
		cr_skip_test("SKIP: per-run cgroups need sbxd to run as root");
	}
	/* these suites check what a run leaves behind; jails built ahead stay between runs on
	 * purpose and have their own tests (test_warm.c) */
	sbx_it.extra_args[0] = "--no-warm";
	sbx_it_init();
}

TestSuite(cgroup_leftover, .init = setup, .fini = sbx_it_fini, .timeout = 90);

/* The run groups pid is in, as host paths: "8:pids:/sbx-../run_x" -> /sys/fs/cgroup/pids/..;
 * the controller-less "0::" line -> the cgroup2 mount (unified next to v1, else the root). */
static void groups_of(pid_t pid, struct run_groups *ret)
{
	char p[64], line[1024];
	struct stat st;
	bool hybrid = stat(CG_MOUNT "/unified", &st) == 0;
	snprintf(p, sizeof(p), "/proc/%d/cgroup", (int)pid);
	_cleanup_fclose_ FILE *f = fopen(p, "re");
	memset(ret, 0, sizeof(*ret));
	cr_assert(f, "open %s: %s", p, strerror(errno));
	while (fgets(line, sizeof(line), f) && ret->n < RUN_GROUPS_MAX) {
		char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		const char *mount = NULL;
		line[strcspn(line, "\n")] = '\0';
		if (!c2 || !strstr(c2 + 1, "/run_"))
			continue;
		*c2 = '\0';
		if (!c1[1])
			mount = hybrid ? CG_MOUNT "/unified" : CG_MOUNT;
		else if (strstr(c1 + 1, "memory"))
			mount = CG_MOUNT "/memory";
		else if (strstr(c1 + 1, "pids"))
			mount = CG_MOUNT "/pids";
		if (mount)
			snprintf(ret->path[ret->n++], PATH_MAX, "%s%s", mount, c2 + 1);
	}
}

/* The run's groups that still exist, plus any other run_* group under their parents (the
 * instance's own parent groups): 0 when nothing of the instance's runs is left. */
static int groups_left(const struct run_groups *g, char *why, size_t whysz)
{
	int left = 0;
	why[0] = '\0';
	for (size_t i = 0; i < g->n; i++) {
		char parent[PATH_MAX];
		snprintf(parent, sizeof(parent), "%s", g->path[i]);
		if (access(g->path[i], F_OK) == 0 && left++ == 0)
			snprintf(why, whysz, "%s", g->path[i]);
		DIR *d = opendir(dirname(parent));
		if (!d)
			continue;
		for (struct dirent *e; (e = readdir(d));)
			if (strncmp(e->d_name, "run_", 4) == 0 && !strstr(g->path[i], e->d_name) &&
			    left++ == 0)
				snprintf(why, whysz, "%s/%s", parent, e->d_name);
		closedir(d);
	}
	return left;
}

static int wait_groups_gone(const struct run_groups *g, char *why, size_t whysz)
{
	int left = 0;
	for (unsigned long long until = mono_ms() + GONE_WAIT_MS;;) {
		left = groups_left(g, why, whysz);
		if (left == 0 || mono_ms() >= until)
			return left;
		sleep_ms(50);
	}
}

/* Start `path` with a jail that sleeps as ./<marker> (a copy of sleep, so /proc finds
 * it); returns the jail's pid and its groups, which exist while it runs. */
static pid_t start_long_run(const struct sbxd *d, const char *path, struct bg_req *bg,
                            char *marker, size_t markersz, struct run_groups *g)
{
	char rnd[13], code[256];
	rand_alnum(rnd, 12);
	snprintf(marker, markersz, "mk_%s", rnd);
	snprintf(code, sizeof(code), "cp /bin/sleep ./%s || exit 9\nexec ./%s 30\n", marker, marker);
	_cleanup_free_ char *body = run_body("sh", code, NULL, 60000);
	cr_assert(bg_req_start(bg, d, "POST", path, body, 15) == 0);
	char sleeper[64];
	pid_t pid = -ESRCH;
	/* the sleep itself, not the cp before it (which may be leaving its groups) */
	snprintf(sleeper, sizeof(sleeper), "%s 30", marker);
	for (unsigned long long until = mono_ms() + START_WAIT_MS; pid <= 0 && mono_ms() < until;) {
		pid = proc_find_marker(sleeper);
		if (pid <= 0)
			sleep_ms(20);
	}
	if (pid <= 0) {
		_cleanup_resp_ struct http_resp early = bg_req_join(bg);
		cr_assert_fail("the run never started: status %d body %s", early.status,
		               early.body ? early.body : "(none)");
	}
	groups_of(pid, g);
	if (g->n == 0) {
		printf("SKIP: the run got no cgroups on this machine\n");
		fflush(stdout);
		cr_skip_test("SKIP: the run got no cgroups on this machine");
	}
	for (size_t i = 0; i < g->n; i++)
		cr_assert(access(g->path[i], F_OK) == 0, "the live run's group %s is missing", g->path[i]);
	return pid;
}

static pid_t start_sandbox_run(const struct sbxd *d, struct bg_req *bg, char *marker,
                               size_t markersz, struct run_groups *g)
{
	char id[128], path[256];
	sbx_create(d, "{\"name\":\"cg\"}", id, sizeof(id));
	snprintf(path, sizeof(path), "/api/sandbox/sandboxes/%s/runs", id);
	return start_long_run(d, path, bg, marker, markersz, g);
}

static pid_t launcher_of(const struct sbxd *d)
{
	pid_t l = proc_child_by_comm(d->pid, "sbx-launcher");
	cr_assert(l > 0, "no sbx-launcher child of sbxd %d", (int)d->pid);
	return l;
}

/* A launcher other than `old` answers, and a run works end to end. */
static void wait_new_launcher(const struct sbxd *d, pid_t old)
{
	bool ok = false;
	for (unsigned long long until = mono_ms() + 10000; mono_ms() < until && !ok;) {
		pid_t l = proc_child_by_comm(d->pid, "sbx-launcher");
		if (l > 0 && l != old) {
			_cleanup_resp_ struct http_resp h =
				http_req(d, "GET", "/api/sandbox/health", NULL, NULL);
			ok = h.status == 200;
		}
		if (!ok)
			sleep_ms(100);
	}
	cr_assert(ok, "no new launcher answering within 10 s");
	char id[128];
	sbx_create(d, "{\"name\":\"after\"}", id, sizeof(id));
	_cleanup_free_ char *body = run_body("sh", "echo alive", NULL, 10000);
	_cleanup_resp_ struct http_resp a = { 0 };
	for (int i = 0; i < 20; i++) { /* the api may need a moment to get the new peer fd */
		http_resp_clear(&a);
		a = sbx_run(d, id, body);
		if (a.status == 200)
			break;
		sleep_ms(250);
	}
	assert_status(a, 200);
}

static void sigkill_and_reap(struct sbxd *d)
{
	int st;
	cr_assert(kill(d->pid, SIGKILL) == 0, "kill sbxd %d: %s", (int)d->pid, strerror(errno));
	cr_assert_eq(waitpid(d->pid, &st, 0), d->pid);
	d->pid = -1;
}

static void expect_nothing_left(const struct run_groups *g, const char *marker, const char *when)
{
	char why[PATH_MAX + 64];
	int left = wait_groups_gone(g, why, sizeof(why));
	cr_expect_eq(left, 0, "%s: %d run group(s) of this instance left %u ms later, e.g. %s", when,
	             left, GONE_WAIT_MS, why);
	int procs = proc_wait_marker_gone(marker, GONE_WAIT_MS);
	cr_expect_eq(procs, 0, "%s: the jail %s still runs", when, marker);
}

Test(cgroup_leftover, launcher_sigkill_then_restart_leaves_no_group)
{
	char marker[24];
	struct run_groups g;
	struct bg_req bg;
	pid_t launcher = launcher_of(&sbx_it);
	start_sandbox_run(&sbx_it, &bg, marker, sizeof(marker), &g);

	cr_assert(kill(launcher, SIGKILL) == 0, "kill launcher: %s", strerror(errno));
	_cleanup_resp_ struct http_resp r = bg_req_join(&bg);
	wait_new_launcher(&sbx_it, launcher);
	expect_nothing_left(&g, marker, "after the launcher's SIGKILL and restart");
}

Test(cgroup_leftover, sbxd_sigkill_then_new_sbxd_leaves_no_group)
{
	char marker[24];
	struct run_groups g;
	struct bg_req bg;
	start_sandbox_run(&sbx_it, &bg, marker, sizeof(marker), &g);

	sigkill_and_reap(&sbx_it);
	_cleanup_resp_ struct http_resp r = bg_req_join(&bg);
	cr_assert_eq(sbxd_restart(&sbx_it), 0, "a new sbxd on the same data dir did not start");
	expect_nothing_left(&g, marker, "after sbxd's SIGKILL and a new sbxd");
}

/* Nobody is left to kill the jail: the launcher and sbxd die together (sbxd stopped
 * first, so it cannot react to the launcher's death), and the run has no bwrap to take
 * it down (execShell off runs plain sh). The next launcher of the instance kills it. */
Test(cgroup_leftover, orphan_of_dead_sbxd_and_launcher_is_killed_at_start)
{
	char marker[24];
	struct run_groups g;
	struct bg_req bg;
	_cleanup_resp_ struct http_resp p =
		http_req(&sbx_it, "PUT", "/api/sandbox/exec-policy", "{\"execShell\":false}", NULL);
	assert_status(p, 200);
	pid_t launcher = launcher_of(&sbx_it);
	pid_t jail = start_long_run(&sbx_it, "/api/sandbox/exec", &bg, marker, sizeof(marker), &g);

	cr_assert(kill(sbx_it.pid, SIGSTOP) == 0);
	cr_assert(kill(launcher, SIGKILL) == 0);
	sigkill_and_reap(&sbx_it);
	_cleanup_resp_ struct http_resp r = bg_req_join(&bg);
	sleep_ms(200);
	cr_assert(proc_count_marker(marker) > 0,
	          "precondition: the jail %d should have outlived its launcher and sbxd", (int)jail);

	cr_assert_eq(sbxd_restart(&sbx_it), 0, "a new sbxd on the same data dir did not start");
	expect_nothing_left(&g, marker, "after a new sbxd started");
}

Test(cgroup_leftover, sbxd_sigterm_mid_run_leaves_no_group)
{
	char marker[24], why[PATH_MAX + 64];
	struct run_groups g;
	struct bg_req bg;
	int st;
	start_sandbox_run(&sbx_it, &bg, marker, sizeof(marker), &g);

	unsigned long long t0 = mono_ms();
	cr_assert(kill(sbx_it.pid, SIGTERM) == 0);
	pid_t w = 0;
	while ((w = waitpid(sbx_it.pid, &st, WNOHANG)) == 0 && mono_ms() - t0 < SBXD_STOP_TIMEOUT_MS)
		sleep_ms(5);
	cr_assert_eq(w, sbx_it.pid, "sbxd did not exit within %u ms of SIGTERM", SBXD_STOP_TIMEOUT_MS);
	sbx_it.pid = -1;
	unsigned long long took = mono_ms() - t0;
	_cleanup_resp_ struct http_resp r = bg_req_join(&bg);
	/* at once: the launcher removed them before it exited, and sbxd waited for it */
	int left = groups_left(&g, why, sizeof(why));
	cr_log_info("sbxd exited %llu ms after SIGTERM; %d group(s) left", took, left);
	cr_expect_eq(left, 0, "%d run group(s) left when sbxd had exited, e.g. %s", left, why);
	cr_expect_eq(proc_count_marker(marker), 0, "the jail %s outlived sbxd", marker);
}

Test(cgroup_leftover, instances_have_parent_groups_of_their_own)
{
	char ma[24], mb[24], pa[PATH_MAX], pb[PATH_MAX], why[PATH_MAX + 64];
	struct run_groups ga, gb;
	struct bg_req bga, bgb;
	struct sbxd b = { .pid = -1, .tag = "second", .extra_args = { "--no-warm" } };
	cr_assert_eq(sbxd_start(&b), 0, "the second sbxd did not start");
	pid_t launcher = launcher_of(&sbx_it);
	start_sandbox_run(&sbx_it, &bga, ma, sizeof(ma), &ga);
	pid_t jb = start_sandbox_run(&b, &bgb, mb, sizeof(mb), &gb);

	cr_assert_eq(ga.n, gb.n);
	for (size_t i = 0; i < ga.n; i++) {
		snprintf(pa, sizeof(pa), "%s", ga.path[i]);
		snprintf(pb, sizeof(pb), "%s", gb.path[i]);
		cr_expect_str_neq(dirname(pa), dirname(pb), "two instances share the parent group %s",
		                  pa);
	}
	/* the first instance's launcher restarts and sweeps its groups: not the second's */
	cr_assert(kill(launcher, SIGKILL) == 0);
	_cleanup_resp_ struct http_resp ra = bg_req_join(&bga);
	wait_new_launcher(&sbx_it, launcher);
	expect_nothing_left(&ga, ma, "the first instance after its launcher's restart");
	cr_expect(kill(jb, 0) == 0, "the second instance's run %d was killed", (int)jb);
	for (size_t i = 0; i < gb.n; i++)
		cr_expect(access(gb.path[i], F_OK) == 0, "the second instance's group %s was removed",
		          gb.path[i]);

	kill(jb, SIGKILL); /* done: the second instance's run ends, and it cleans up after */
	_cleanup_resp_ struct http_resp rb = bg_req_join(&bgb);
	int left = wait_groups_gone(&gb, why, sizeof(why));
	cr_expect_eq(left, 0, "the second instance left %d group(s) after its run, e.g. %s", left, why);
	sbxd_stop(&b);
}
