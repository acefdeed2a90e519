/* Background runs, a sandbox's processes, and kill, through REST against a real sbxd:
 * a detached run keeps its deadline and shows its output while it runs; processes are
 * listed with what the kernel gave them; kill reaches only what the engine started for
 * that sandbox, and everything else is refused and receives nothing. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "cleanup.h"
#include "harness.h"

static void setup(void)
{
	sbx_require_bwrap();
	sbx_it.extra_args[0] = "--no-warm";
	sbx_it_init();
}

TestSuite(observe, .init = setup, .fini = sbx_it_fini, .timeout = 90);

/* A number no other process has in its command line: sleep's argument doubles as a marker. */
static void marker_secs(char *buf, size_t sz)
{
	snprintf(buf, sz, "1000.%06u%03u", (unsigned)(mono_ms() % 1000000u), (unsigned)getpid() % 1000u);
}

/* POST a detached run; returns its id in run_id. */
static void detach_run(const char *sid, const char *code, unsigned timeout_ms, char *run_id,
                       size_t sz)
{
	_cleanup_free_ char *q = js_quote(code, strlen(code));
	char body[4096];
	snprintf(body, sizeof(body), "{\"code\":%s,\"detach\":true%s%u}", q,
	         timeout_ms ? ",\"timeoutMs\":" : "", timeout_ms);
	if (!timeout_ms)
		snprintf(body, sizeof(body), "{\"code\":%s,\"detach\":true}", q);
	unsigned long long t0 = mono_ms();
	_cleanup_resp_ struct http_resp r = sbx_run(&sbx_it, sid, body);
	assert_status(r, 200);
	cr_assert(mono_ms() - t0 < 5000, "a detached run answers at once");
	cr_assert_str_eq(js_str(r.json, "status"), "running", "%s", r.body);
	cr_assert(js_get(r.json, "exitCode") && YAJL_IS_NULL(js_get(r.json, "exitCode")));
	snprintf(run_id, sz, "%s", js_str(r.json, "id"));
}

static struct http_resp get_run(const char *sid, const char *rid)
{
	char path[256];
	snprintf(path, sizeof(path), "/api/sandbox/sandboxes/%s/runs/%s", sid, rid);
	return http_req(&sbx_it, "GET", path, NULL, NULL);
}

static struct http_resp kill_req(const char *sid, const char *body)
{
	char path[256];
	snprintf(path, sizeof(path), "/api/sandbox/sandboxes/%s/kill", sid);
	return http_req(&sbx_it, "POST", path, body, NULL);
}

static struct http_resp processes(const char *sid)
{
	char path[256];
	snprintf(path, sizeof(path), "/api/sandbox/sandboxes/%s/processes", sid);
	return http_req(&sbx_it, "GET", path, NULL, NULL);
}

/* The listed process whose command contains marker, or NULL. */
static yajl_val find_proc(yajl_val root, const char *marker)
{
	yajl_val list = js_array(root, "processes");
	for (size_t i = 0; list && i < list->u.array.len; i++) {
		const char *cmd = js_str(list->u.array.values[i], "command");
		if (cmd && strstr(cmd, marker))
			return list->u.array.values[i];
	}
	return NULL;
}

/* Poll GET run until it is done (or timeout_ms); returns the last response. */
static struct http_resp wait_done(const char *sid, const char *rid, unsigned timeout_ms)
{
	unsigned long long end = mono_ms() + timeout_ms;
	for (;;) {
		struct http_resp r = get_run(sid, rid);
		if (r.status != 200 || (js_str(r.json, "status") &&
		                        strcmp(js_str(r.json, "status"), "done") == 0) ||
		    mono_ms() > end)
			return r;
		http_resp_clear(&r);
		sleep_ms(50);
	}
}

/* Zombies whose parent is pid (the launcher reaps what it adopts). */
static int zombies_of(pid_t parent)
{
	char path[64], buf[512];
	int n = 0;
	for (pid_t pid = 2; pid < 4194304 && pid < 200000; pid++) {
		FILE *f;
		snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
		if (!(f = fopen(path, "re")))
			continue;
		if (fgets(buf, sizeof(buf), f)) {
			char *rp = strrchr(buf, ')');
			int ppid = 0;
			char st = 0;
			if (rp && sscanf(rp + 2, "%c %d", &st, &ppid) == 2 && st == 'Z' && ppid == parent)
				n++;
		}
		fclose(f);
	}
	return n;
}

Test(observe, detached_sleep_is_listed_then_killed_without_a_zombie)
{
	char sid[64], rid[64], secs[32], code[128];
	sbx_create(&sbx_it, "{\"name\":\"bg\"}", sid, sizeof(sid));
	marker_secs(secs, sizeof(secs));
	snprintf(code, sizeof(code), "echo started; sleep %s", secs);
	detach_run(sid, code, 0, rid, sizeof(rid));

	/* running, its output readable meanwhile */
	_cleanup_resp_ struct http_resp r = get_run(sid, rid);
	for (int i = 0; i < 100 && r.status == 200 && !strstr(js_str(r.json, "stdout"), "started"); i++) {
		http_resp_clear(&r);
		sleep_ms(50);
		r = get_run(sid, rid);
	}
	assert_status(r, 200);
	cr_expect_str_eq(js_str(r.json, "status"), "running");
	cr_expect_str_eq(js_str(r.json, "stdout"), "started\n");

	/* listed, with what the kernel gave it */
	_cleanup_resp_ struct http_resp p = processes(sid);
	assert_status(p, 200);
	yajl_val sl = find_proc(p.json, secs);
	cr_assert(sl, "the sleep is listed: %s", p.body);
	cr_expect_str_eq(js_str(sl, "runId"), rid);
	cr_expect_gt(js_int(sl, "pid", 0), 1);
	cr_expect(js_is_true(sl, "confinement.noNewPrivs"));
	cr_expect_str_eq(js_str(sl, "confinement.seccomp"), "filter");
	cr_expect_str_eq(js_str(sl, "confinement.capEff"), "0000000000000000");
	if (geteuid() == 0)
		cr_expect_geq(js_int(sl, "confinement.uid", 0), 200000, "a jail uid, not root");
	const char *cg = js_str(sl, "confinement.cgroup");
	cr_expect(cg && strstr(cg, rid), "in the run's own cgroup: %s", cg ? cg : "(none)");
	bool pidns = false, userns = false;
	yajl_val ns = js_get(sl, "confinement.namespaces");
	for (size_t i = 0; ns && YAJL_IS_ARRAY(ns) && i < ns->u.array.len; i++) {
		const char *k = YAJL_GET_STRING(ns->u.array.values[i]);
		pidns |= k && strcmp(k, "pid") == 0;
		userns |= k && strcmp(k, "user") == 0;
	}
	cr_expect(pidns && userns, "its own pid and user namespaces: %s", p.body);
	cr_expect_eq(proc_count_marker(secs), 1);

	/* killed by run: gone, recorded, no zombie left behind */
	char body[128];
	snprintf(body, sizeof(body), "{\"run\":\"%s\"}", rid);
	_cleanup_resp_ struct http_resp k = kill_req(sid, body);
	assert_status(k, 200);
	cr_expect_str_eq(YAJL_GET_STRING(js_get(k.json, "runs")->u.array.values[0]), rid);
	_cleanup_resp_ struct http_resp done = wait_done(sid, rid, 5000);
	cr_assert_str_eq(js_str(done.json, "status"), "done", "%s", done.body);
	cr_expect_eq(proc_wait_marker_gone(secs, 3000), 0, "the sleep is gone");
	_cleanup_resp_ struct http_resp p2 = processes(sid);
	cr_expect_null(find_proc(p2.json, secs), "no longer listed: %s", p2.body);
	pid_t launcher = proc_child_by_comm(sbx_it.pid, "sbx-launcher");
	cr_assert_gt(launcher, 1);
	sleep_ms(200);
	cr_expect_eq(zombies_of(launcher), 0, "the launcher left no zombie");
	cr_expect_eq(zombies_of(sbx_it.pid), 0, "sbxd left no zombie");

	/* the run is in the history, and it can no longer be killed */
	_cleanup_resp_ struct http_resp again = kill_req(sid, body);
	assert_status(again, 409);
}

Test(observe, detached_run_keeps_its_deadline)
{
	char sid[64], rid[64], secs[32], code[128];
	sbx_create(&sbx_it, "{\"name\":\"dl\"}", sid, sizeof(sid));
	marker_secs(secs, sizeof(secs));
	snprintf(code, sizeof(code), "sleep %s", secs);
	detach_run(sid, code, 1500, rid, sizeof(rid));
	_cleanup_resp_ struct http_resp done = wait_done(sid, rid, 10000);
	cr_assert_str_eq(js_str(done.json, "status"), "done", "%s", done.body);
	cr_expect(js_is_true(done.json, "timedOut"), "%s", done.body);
	cr_expect_eq(proc_wait_marker_gone(secs, 3000), 0);
	/* newest first in the history */
	char path[128];
	snprintf(path, sizeof(path), "/api/sandbox/sandboxes/%s/runs", sid);
	_cleanup_resp_ struct http_resp h = http_req(&sbx_it, "GET", path, NULL, NULL);
	yajl_val runs = js_array(h.json, "runs");
	cr_assert(runs && runs->u.array.len >= 1);
	cr_expect_str_eq(js_str(runs->u.array.values[0], "id"), rid);
}

/* While running, the history lists the detached run first, as running. */
Test(observe, running_detached_run_heads_the_history)
{
	char sid[64], rid[64], secs[32], code[128], path[128];
	sbx_create(&sbx_it, "{\"name\":\"hist\"}", sid, sizeof(sid));
	_cleanup_resp_ struct http_resp first = sbx_run(&sbx_it, sid, "{\"code\":\"true\"}");
	assert_status(first, 200);
	marker_secs(secs, sizeof(secs));
	snprintf(code, sizeof(code), "sleep %s", secs);
	detach_run(sid, code, 0, rid, sizeof(rid));
	snprintf(path, sizeof(path), "/api/sandbox/sandboxes/%s/runs", sid);
	_cleanup_resp_ struct http_resp h = http_req(&sbx_it, "GET", path, NULL, NULL);
	yajl_val runs = js_array(h.json, "runs");
	cr_assert(runs && runs->u.array.len == 2, "%s", h.body);
	cr_expect_str_eq(js_str(runs->u.array.values[0], "id"), rid);
	cr_expect_str_eq(js_str(runs->u.array.values[0], "status"), "running");
	cr_expect_str_eq(js_str(runs->u.array.values[1], "status"), "done");
	_cleanup_resp_ struct http_resp k = kill_req(sid, "{}");
	assert_status(k, 200);
	cr_expect_eq(proc_wait_marker_gone(secs, 3000), 0);
}

/* A process that answers SIGTERM by writing a file: "receives nothing" is checked. */
static const char TRAP_CODE[] =
	"trap 'echo got >> $HOME/term.log' TERM; echo ready; while :; do sleep 0.05; done";

Test(observe, kill_refuses_what_is_not_this_sandboxs)
{
	char a[64], b[64], ra[64], rb[64], body[128];
	sbx_create(&sbx_it, "{\"name\":\"a\"}", a, sizeof(a));
	sbx_create(&sbx_it, "{\"name\":\"b\"}", b, sizeof(b));
	detach_run(b, TRAP_CODE, 0, rb, sizeof(rb));
	detach_run(a, "sleep 300", 0, ra, sizeof(ra));
	sleep_ms(300);

	/* b's shell (the loop), as the processes route names it */
	_cleanup_resp_ struct http_resp pb = processes(b);
	assert_status(pb, 200);
	yajl_val list = js_array(pb.json, "processes");
	long long bsh = 0, bpgid = 0;
	for (size_t i = 0; list && i < list->u.array.len; i++) {
		const char *comm = js_str(list->u.array.values[i], "comm");
		if (comm && strcmp(comm, "sh") == 0) {
			bsh = js_int(list->u.array.values[i], "pid", 0);
			bpgid = js_int(list->u.array.values[i], "pgid", 0);
		}
	}
	cr_assert_gt(bsh, 1, "b's shell is listed: %s", pb.body);

	pid_t launcher = proc_child_by_comm(sbx_it.pid, "sbx-launcher");
	struct { long long pid; const char *field; const char *why; } cases[] = {
		{ 1, "pid", "pid 1" },
		{ sbx_it.pid, "pid", "daemon" },
		{ launcher, "pid", "daemon" },
		{ getpid(), "pid", "did not start" },
		{ bsh, "pid", "another sandbox" },
		{ bpgid, "pgid", "another sandbox" },
		{ 1, "pgid", "pid 1" },
		{ 2147483647, "pid", "" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(body, sizeof(body), "{\"%s\":%lld,\"signal\":\"KILL\"}", cases[i].field,
		         cases[i].pid);
		_cleanup_resp_ struct http_resp r = kill_req(a, body);
		assert_status(r, 403);
		cr_expect_str_eq(js_str(r.json, "error.code"), "forbidden");
		cr_expect(strstr(js_str(r.json, "error.message"), cases[i].why), "%s -> %s", body, r.body);
	}
	/* another sandbox's run, by id */
	snprintf(body, sizeof(body), "{\"run\":\"%s\"}", rb);
	_cleanup_resp_ struct http_resp rr = kill_req(a, body);
	assert_status(rr, 403);

	/* nothing received anything: the daemon answers, b's shell lives and wrote nothing */
	_cleanup_resp_ struct http_resp health = http_req(&sbx_it, "GET", "/api/sandbox/health", NULL, NULL);
	assert_status(health, 200);
	cr_expect_eq(kill((pid_t)bsh, 0), 0, "b's shell is alive");
	_cleanup_resp_ struct http_resp log = sbx_run(&sbx_it, b, "{\"code\":\"cat $HOME/term.log 2>/dev/null; echo end\"}");
	cr_expect_str_eq(js_str(log.json, "stdout"), "end\n", "b's shell got no signal");

	/* its own sandbox may: TERM to b's group by pgid reaches the trap */
	snprintf(body, sizeof(body), "{\"pgid\":%lld}", bpgid);
	_cleanup_resp_ struct http_resp own = kill_req(b, body);
	assert_status(own, 200);
	cr_expect_eq(js_get(own.json, "signaled")->u.array.len >= 1, 1, "%s", own.body);
	sleep_ms(300);
	_cleanup_resp_ struct http_resp log2 = sbx_run(&sbx_it, b, "{\"code\":\"cat $HOME/term.log\"}");
	cr_expect(strstr(js_str(log2.json, "stdout"), "got"), "the trap ran: %s", log2.body);

	_cleanup_resp_ struct http_resp ka = kill_req(a, "{}");
	_cleanup_resp_ struct http_resp kb = kill_req(b, "{}");
	assert_status(ka, 200);
	assert_status(kb, 200);
}

/* What a run double-forks into a new session is still its own: listed, killed, reaped. */
Test(observe, double_forked_setsid_process_stays_the_runs)
{
	char sid[64], rid[64], secs[32], code[256];
	sbx_create(&sbx_it, "{\"name\":\"df\"}", sid, sizeof(sid));
	marker_secs(secs, sizeof(secs));
	snprintf(code, sizeof(code), "(setsid sleep %s > /dev/null 2>&1 &) ; sleep 300", secs);
	detach_run(sid, code, 0, rid, sizeof(rid));
	sleep_ms(300);
	_cleanup_resp_ struct http_resp p = processes(sid);
	yajl_val sl = find_proc(p.json, secs);
	cr_assert(sl, "the escaped sleep is listed: %s", p.body);
	long long pid = js_int(sl, "pid", 0);
	char body[64];
	snprintf(body, sizeof(body), "{\"pid\":%lld,\"signal\":9}", pid);
	_cleanup_resp_ struct http_resp k = kill_req(sid, body);
	assert_status(k, 200);
	cr_expect_eq(proc_wait_marker_gone(secs, 3000), 0);
	_cleanup_resp_ struct http_resp all = kill_req(sid, "{}");
	assert_status(all, 200);
	_cleanup_resp_ struct http_resp done = wait_done(sid, rid, 5000);
	cr_expect_str_eq(js_str(done.json, "status"), "done");
}

Test(observe, bad_kill_bodies_are_refused)
{
	char sid[64];
	sbx_create(&sbx_it, "{\"name\":\"bad\"}", sid, sizeof(sid));
	const char *bad[] = {
		"{\"pid\":0}", "{\"pid\":-5}", "{\"pid\":\"12\"}", "{\"pid\":1099511627776}",
		"{\"pid\":5,\"pgid\":5}", "{\"pid\":5,\"signal\":\"SEGV\"}", "{\"pid\":5,\"signal\":9999}",
		"{\"signal\":\"TERM\"}", "{\"run\":\"../x\"}", "{\"what\":1}", "[]",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		_cleanup_resp_ struct http_resp r = kill_req(sid, bad[i]);
		assert_status(r, 400);
		cr_expect_str_eq(js_str(r.json, "error.code"), "invalid_argument", "%s", bad[i]);
	}
	_cleanup_resp_ struct http_resp nf = kill_req(sid, "{\"run\":\"run_000000000000\"}");
	assert_status(nf, 404);
	_cleanup_resp_ struct http_resp ns = http_req(&sbx_it, "POST", "/api/sandbox/sandboxes/sbx_nope/kill", "{}", NULL);
	assert_status(ns, 404);
	_cleanup_resp_ struct http_resp np = http_req(&sbx_it, "GET", "/api/sandbox/sandboxes/sbx_nope/processes", NULL, NULL);
	assert_status(np, 404);
	/* a detached run that also asks to stream is answered plainly, at once */
	_cleanup_resp_ struct http_resp ds = http_req(&sbx_it, "POST", "/api/sandbox/sandboxes/sbx_nope/runs",
	                                              "{\"code\":\"true\",\"detach\":\"yes\"}", NULL);
	assert_status(ds, 400);
}

/* A detached run is followed with the stream primitive: GET run with Accept:
 * text/event-stream gives what it printed so far, then the rest as it comes, then the
 * result; a second reader of the same run is refused while the first follows. */
Test(observe, a_detached_run_is_followed_to_its_end)
{
	char sid[64], rid[64], path[256];
	sbx_create(&sbx_it, "{\"name\":\"follow\"}", sid, sizeof(sid));
	detach_run(sid, "echo one; sleep 1; echo two; sleep 1; echo three", 0, rid, sizeof(rid));
	sleep_ms(300);
	snprintf(path, sizeof(path), "/api/sandbox/sandboxes/%s/runs/%s", sid, rid);
	struct bg_req first;
	cr_assert_eq(bg_req_start_hdr(&first, &sbx_it, "GET", path, NULL, 30, "Accept: text/event-stream"), 0);
	sleep_ms(300);
	/* the run is followed: another follower is refused, a plain GET still answers */
	_cleanup_resp_ struct http_resp second = http_req(&sbx_it, "GET", path, NULL,
	                                                  "Accept: text/event-stream", NULL);
	cr_expect(second.status == 409 || (second.body && strstr(second.body, "already has a reader")),
	          "%d %s", second.status, second.body);
	_cleanup_resp_ struct http_resp plain = http_req(&sbx_it, "GET", path, NULL, NULL);
	assert_status(plain, 200);
	cr_expect_str_eq(js_str(plain.json, "status"), "running");
	_cleanup_resp_ struct http_resp r = bg_req_join(&first);
	cr_assert(r.body, "no answer");
	const char *one = strstr(r.body, "one"), *three = strstr(r.body, "three");
	cr_expect(one && strstr(r.body, "two") && three, "%s", r.body);
	cr_expect(strstr(r.body, "event: result") && strstr(r.body, "\"status\":\"done\""), "%s", r.body);
	/* the chunks came while the run went on, not all at the end */
	cr_expect(first.finished_ms - first.started_ms >= 1000, "followed for %llu ms",
	          first.finished_ms - first.started_ms);
}
