/* Schedules against a real sbxd: a script runs on its interval through the gate (entrance
 * "scheduler", in the history, in bwrap), the schedulerScript switch takes it out of the
 * sandbox and back, an overlapping time is skipped, cron times land on their minutes, and
 * bad bodies change nothing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "cleanup.h"
#include "harness.h"

#define API "/api/sandbox"

static void setup(void)
{
	sbx_require_bwrap();
	sbx_it_init();
}

TestSuite(schedules, .init = setup, .fini = sbx_it_fini, .timeout = 90);

static void make_schedule(const char *body, char *id, size_t sz)
{
	_cleanup_resp_ struct http_resp r = http_req(&sbx_it, "POST", API "/schedules", body, NULL);
	assert_status(r, 201);
	snprintf(id, sz, "%s", js_str(r.json, "id") ?: "");
}

static yajl_val find_schedule(struct http_resp *r, const char *id)
{
	yajl_val list = js_get(r->json, "schedules");
	for (size_t i = 0; list && YAJL_IS_ARRAY(list) && i < list->u.array.len; i++)
		if (strcmp(js_str(list->u.array.values[i], "id") ?: "", id) == 0)
			return list->u.array.values[i];
	return NULL;
}

/* the runs of a sandbox, newest first */
static struct http_resp runs_of(const char *sid)
{
	char p[256];
	snprintf(p, sizeof(p), API "/sandboxes/%s/runs", sid);
	return http_req(&sbx_it, "GET", p, NULL, NULL);
}

static void policy(const char *body)
{
	_cleanup_resp_ struct http_resp r = http_req(&sbx_it, "PUT", API "/exec-policy", body, NULL);
	assert_status(r, 200);
}

Test(schedules, runs_on_time_through_the_gate_and_obeys_its_switch)
{
	char sid[64], sch[64], body[512];
	sbx_create(&sbx_it, "{\"name\":\"cron\"}", sid, sizeof(sid));
	snprintf(body, sizeof(body),
	         "{\"sandboxId\":\"%s\",\"language\":\"sh\",\"every\":1,\"code\":\"date +%%s.%%N\"}", sid);
	make_schedule(body, sch, sizeof(sch));
	sleep_ms(3600);

	/* three or more runs, each in the history, through the gate, in the sandbox's jail */
	double stamps[64];
	size_t n = 0;
	{
		_cleanup_resp_ struct http_resp r = runs_of(sid);
		yajl_val runs = js_get(r.json, "runs");
		cr_assert(runs && YAJL_IS_ARRAY(runs), "%s", r.body);
		for (size_t i = 0; i < runs->u.array.len && n < 64; i++) {
			yajl_val run = runs->u.array.values[i];
			cr_expect_str_eq(js_str(run, "entrance") ?: "", "scheduler", "%s", r.body);
			cr_expect_str_eq(js_str(run, "isolation") ?: "", "bwrap");
			cr_expect_eq(js_int(run, "exitCode", -1), 0);
			stamps[n++] = strtod(js_str(run, "stdout") ?: "0", NULL);
		}
	}
	cr_assert_geq(n, 3, "%zu scheduled runs in 3.6 s of an every-1-s schedule", n);
	/* on time: one second apart, newest first (a wide margin: this is not a benchmark) */
	for (size_t i = 0; i + 1 < n; i++) {
		double gap = stamps[i] - stamps[i + 1];
		cr_expect(gap > 0.5 && gap < 2.0, "runs %zu and %zu are %.3f s apart", i, i + 1, gap);
	}
	{
		_cleanup_resp_ struct http_resp l = http_req(&sbx_it, "GET", API "/schedules", NULL, NULL);
		yajl_val s = find_schedule(&l, sch);
		cr_assert(s, "%s", l.body);
		cr_expect_geq(js_int(s, "runs", 0), 3);
		cr_expect_str_eq(js_str(s, "lastStatus") ?: "", "exit 0");
		cr_expect(js_str(s, "lastRunId") && js_str(s, "nextAt"), "%s", l.body);
	}

	/* schedulerScript off: the same schedule runs without a sandbox, and says so */
	policy("{\"schedulerScript\":false}");
	sleep_ms(1600);
	{
		_cleanup_resp_ struct http_resp r = runs_of(sid);
		yajl_val runs = js_get(r.json, "runs");
		cr_assert(runs && YAJL_IS_ARRAY(runs) && runs->u.array.len, "%s", r.body);
		yajl_val newest = runs->u.array.values[0];
		cr_expect_str_eq(js_str(newest, "isolation") ?: "", "none", "%s", r.body);
		cr_expect(strstr(js_str(newest, "note") ?: "", "schedulerScript is switched off"), "%s", r.body);
		cr_expect_str_eq(js_str(newest, "entrance") ?: "", "scheduler");
	}
	/* and back on: in the jail again */
	policy("{\"schedulerScript\":true}");
	sleep_ms(1600);
	{
		_cleanup_resp_ struct http_resp r = runs_of(sid);
		yajl_val runs = js_get(r.json, "runs");
		cr_assert(runs && YAJL_IS_ARRAY(runs) && runs->u.array.len, "%s", r.body);
		cr_expect_str_eq(js_str(runs->u.array.values[0], "isolation") ?: "", "bwrap", "%s", r.body);
	}

	/* deleted: no more runs */
	char p[128];
	snprintf(p, sizeof(p), API "/schedules/%s", sch);
	_cleanup_resp_ struct http_resp d = http_req(&sbx_it, "DELETE", p, NULL, NULL);
	assert_status(d, 200);
	sleep_ms(300);
	_cleanup_resp_ struct http_resp before = runs_of(sid);
	sleep_ms(1600);
	_cleanup_resp_ struct http_resp after = runs_of(sid);
	cr_expect_eq(js_int(before.json, "count", -1), js_int(after.json, "count", -2),
	             "a deleted schedule still ran");
	_cleanup_resp_ struct http_resp d2 = http_req(&sbx_it, "DELETE", p, NULL, NULL);
	assert_status(d2, 404);
}

Test(schedules, a_time_that_comes_while_the_last_run_goes_is_skipped)
{
	char sid[64], sch[64], body[512];
	sbx_create(&sbx_it, "{\"name\":\"slow\"}", sid, sizeof(sid));
	snprintf(body, sizeof(body), "{\"sandboxId\":\"%s\",\"every\":1,\"code\":\"sleep 2.5\"}", sid);
	make_schedule(body, sch, sizeof(sch));
	sleep_ms(4500);
	_cleanup_resp_ struct http_resp l = http_req(&sbx_it, "GET", API "/schedules", NULL, NULL);
	yajl_val s = find_schedule(&l, sch);
	cr_assert(s, "%s", l.body);
	cr_expect_geq(js_int(s, "skipped", 0), 1, "%s", l.body);
	_cleanup_resp_ struct http_resp r = runs_of(sid);
	yajl_val runs = js_get(r.json, "runs");
	size_t going = 0;
	for (size_t i = 0; runs && YAJL_IS_ARRAY(runs) && i < runs->u.array.len; i++)
		going += strcmp(js_str(runs->u.array.values[i], "status") ?: "", "running") == 0;
	cr_expect_leq(going, 1, "two runs of one schedule at once: %s", r.body);
}

Test(schedules, cron_times_fall_on_their_minutes_and_bad_bodies_change_nothing)
{
	char sid[64], sch[64], body[512];
	sbx_create(&sbx_it, "{\"name\":\"c\"}", sid, sizeof(sid));
	snprintf(body, sizeof(body), "{\"sandboxId\":\"%s\",\"cron\":\"*/5 * * * *\",\"code\":\"true\"}", sid);
	make_schedule(body, sch, sizeof(sch));
	{
		_cleanup_resp_ struct http_resp l = http_req(&sbx_it, "GET", API "/schedules", NULL, NULL);
		yajl_val s = find_schedule(&l, sch);
		const char *next = js_str(s, "nextAt");
		int min = -1, sec = -1;
		cr_assert(next && sscanf(next, "%*d-%*d-%*dT%*d:%d:%dZ", &min, &sec) == 2, "nextAt %s", next ?: "");
		cr_expect(min % 5 == 0 && sec == 0, "nextAt %s is not on a 5-minute mark", next);
		cr_expect_str_eq(js_str(s, "cron") ?: "", "*/5 * * * *");
		cr_expect(YAJL_IS_NULL(js_get(s, "every")), "%s", l.body);
	}
	static const char *const bad[] = {
		"\"code\":\"true\"}",                            /* neither */
		"\"code\":\"true\",\"every\":5,\"cron\":\"* * * * *\"}", /* both */
		"\"code\":\"true\",\"every\":0}",
		"\"code\":\"true\",\"every\":-1}",
		"\"code\":\"true\",\"every\":31622401}",
		"\"code\":\"true\",\"cron\":\"61 * * * *\"}",
		"\"code\":\"true\",\"cron\":\"@reboot\"}",
		"\"code\":\"\",\"every\":5}",
		"\"code\":\"true\",\"every\":5,\"bogus\":1}",
		"\"code\":\"true\",\"every\":5,\"language\":\"perl\"}",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(body, sizeof(body), "{\"sandboxId\":\"%s\",%s", sid, bad[i]);
		_cleanup_resp_ struct http_resp r = http_req(&sbx_it, "POST", API "/schedules", body, NULL);
		cr_expect_eq(r.status, 400, "%s: %d %s", body, r.status, r.body);
	}
	_cleanup_resp_ struct http_resp nf = http_req(&sbx_it, "POST", API "/schedules",
	                                              "{\"sandboxId\":\"sbx_nosuch\",\"code\":\"true\",\"every\":5}", NULL);
	assert_status(nf, 404);
	_cleanup_resp_ struct http_resp l = http_req(&sbx_it, "GET", API "/schedules", NULL, NULL);
	cr_expect_eq(js_int(l.json, "count", -1), 1, "%s", l.body);
	/* a schedule goes with its sandbox */
	char p[128];
	snprintf(p, sizeof(p), API "/sandboxes/%s", sid);
	_cleanup_resp_ struct http_resp d = http_req(&sbx_it, "DELETE", p, NULL, NULL);
	assert_status(d, 200);
	_cleanup_resp_ struct http_resp l2 = http_req(&sbx_it, "GET", API "/schedules", NULL, NULL);
	cr_expect_eq(js_int(l2.json, "count", -1), 0, "%s", l2.body);
}
