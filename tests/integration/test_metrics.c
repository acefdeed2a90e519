/* GET /metrics against a real sbxd: Prometheus text with runs by outcome, a cumulative run
 * latency histogram, live groups, child restarts and requests by operation and status,
 * behind the token like every route; and sbxd --version. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "cleanup.h"
#include "harness.h"

static void setup(void)
{
	sbx_require_bwrap();
	sbx_it.extra_args[0] = "--no-warm";
	sbx_it_init();
}

TestSuite(metrics, .init = setup, .fini = sbx_it_fini, .timeout = 60);

/* The value of the sample line that starts with `name` (exactly, then a space). */
static double sample(const char *doc, const char *name)
{
	size_t n = strlen(name);
	for (const char *l = doc; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
		if (strncmp(l, name, n) == 0 && l[n] == ' ')
			return strtod(l + n + 1, NULL);
	return -1;
}

Test(metrics, runs_requests_and_the_histogram)
{
	char sid[64], path[128];
	sbx_create(&sbx_it, "{\"name\":\"m\"}", sid, sizeof(sid));
	_cleanup_resp_ struct http_resp app =
		http_req(&sbx_it, "POST", "/api/sandbox/apps", "{\"name\":\"idle\",\"command\":\"true\"}", NULL);
	assert_status(app, 201);
	_cleanup_resp_ struct http_resp ok = sbx_run(&sbx_it, sid, "{\"code\":\"true\"}");
	_cleanup_resp_ struct http_resp bad = sbx_run(&sbx_it, sid, "{\"code\":\"exit 3\"}");
	_cleanup_resp_ struct http_resp slow = sbx_run(&sbx_it, sid, "{\"code\":\"sleep 5\",\"timeoutMs\":300}");
	assert_status(ok, 200);
	assert_status(slow, 200);
	cr_assert(js_is_true(slow.json, "timedOut"));
	_cleanup_resp_ struct http_resp miss = http_req(&sbx_it, "GET", "/api/sandbox/nosuch", NULL, NULL);
	assert_status(miss, 404);

	_cleanup_resp_ struct http_resp m = http_req(&sbx_it, "GET", "/api/sandbox/metrics", NULL, NULL);
	assert_status(m, 200);
	char ct[96] = "";
	http_header(&m, "Content-Type", ct, sizeof(ct));
	cr_expect(strncmp(ct, "text/plain; version=0.0.4", 25) == 0, "%s", ct);
	cr_expect_eq(sample(m.body, "sbx_up{process=\"sbx-launcher\"}"), 1);
	cr_expect_eq(sample(m.body, "sbx_up{process=\"sbxd\"}"), 1);
	cr_expect_eq(sample(m.body, "sbx_runs_total{outcome=\"exited\"}"), 2, "%s", m.body);
	cr_expect_eq(sample(m.body, "sbx_runs_total{outcome=\"timed_out\"}"), 1, "%s", m.body);
	cr_expect_eq(sample(m.body, "sbx_run_duration_seconds_count"), 3);
	cr_expect_eq(sample(m.body, "sbx_run_duration_seconds_bucket{le=\"+Inf\"}"), 3);
	cr_expect_geq(sample(m.body, "sbx_run_duration_seconds_sum"), 0.3, "the timed-out run counts");
	/* cumulative: never decreasing */
	static const char *const le[] = { "0.01", "0.025", "0.05", "0.1", "0.25", "0.5", "1", "2.5",
		                           "5", "10", "30", "60", "+Inf" };
	double prev = 0;
	for (size_t i = 0; i < sizeof(le) / sizeof(le[0]); i++) {
		char name[64];
		snprintf(name, sizeof(name), "sbx_run_duration_seconds_bucket{le=\"%s\"}", le[i]);
		double v = sample(m.body, name);
		cr_expect_geq(v, prev, "%s", name);
		prev = v;
	}
	cr_expect_eq(sample(m.body, "sbx_http_requests_total{route=\"runCode\",status=\"200\"}"), 3, "%s", m.body);
	cr_expect_eq(sample(m.body, "sbx_http_requests_total{route=\"createSandbox\",status=\"201\"}"), 1);
	cr_expect_eq(sample(m.body, "sbx_http_requests_total{route=\"createApp\",status=\"201\"}"), 1);
	cr_expect_geq(sample(m.body, "sbx_http_requests_total{route=\"-\",status=\"404\"}"), 1);
	cr_expect_eq(sample(m.body, "sbx_child_restarts_total{child=\"sbx-launcher\"}"), 0);
	cr_expect_geq(sample(m.body, "sbx_live_groups"), 0);
	cr_expect_eq(sample(m.body, "sbx_apps{state=\"STOPPED\"}"), 1, "%s", m.body);
	cr_expect_eq(sample(m.body, "sbx_apps{state=\"RUNNING\"}"), 0, "%s", m.body);
	cr_expect_eq(sample(m.body, "sbx_apps{state=\"FATAL\"}"), 0, "%s", m.body);

	/* authenticated like every route */
	char host[64];
	snprintf(host, sizeof(host), "Host: 127.0.0.1:%u", sbx_it.port);
	const char *hdrs[] = { host, NULL };
	snprintf(path, sizeof(path), "/api/sandbox/metrics");
	_cleanup_resp_ struct http_resp anon = http_send(sbx_it.port, "GET", path, hdrs, NULL, 0, 10);
	assert_status(anon, 401);
}

Test(metrics, sbxd_version)
{
	char cmd[SBX_IT_ROOT_MAX + 64], out[256] = "";
	snprintf(cmd, sizeof(cmd), "%s/sbxd --version", sbx_it.bin_dir);
	FILE *p = popen(cmd, "r");
	cr_assert(p);
	size_t n = fread(out, 1, sizeof(out) - 1, p);
	out[n] = '\0';
	cr_expect_eq(pclose(p), 0);
	cr_expect(strncmp(out, "sbxd ", 5) == 0 && strstr(out, "wire protocol 7"), "%s", out);
}
