/* GET /metrics (metrics.h). */
#include "metrics.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

static struct {
	const char *route; /* a static string: an operationId, "-" or "other" */
	int status;
	unsigned long long n;
} series[METRICS_SERIES_MAX];
static size_t nseries;

void api_metrics_count(const char *route, int status)
{
	size_t i;
	for (i = 0; i < nseries; i++)
		if (series[i].status == status && strcmp(series[i].route, route) == 0)
			break;
	if (i == nseries) {
		if (nseries == METRICS_SERIES_MAX - 1 && strcmp(route, "other") != 0) {
			api_metrics_count("other", status); /* the last slot is for the rest */
			return;
		}
		if (nseries == METRICS_SERIES_MAX)
			return;
		series[nseries].route = route;
		series[nseries].status = status;
		series[nseries++].n = 0;
	}
	series[i].n++;
}

char *api_metrics_render(const struct msg_STATUS_REP *st, const struct msg_METRICS_REP *m,
                         size_t *ret_len)
{
	static const unsigned bounds[PROTO_RUN_BUCKETS_N] = PROTO_RUN_BUCKETS_MS;
	struct evbuffer *b = evbuffer_new();
	size_t len;
	char *out;

	if (!b)
		return NULL;
	evbuffer_add_printf(b, "# HELP sbx_up Whether a process of the engine answered this scrape.\n"
	                       "# TYPE sbx_up gauge\n"
	                       "sbx_up{process=\"sbx-api\"} 1\nsbx_up{process=\"sbxd\"} %d\n"
	                       "sbx_up{process=\"sbx-launcher\"} %d\n",
	                    st != NULL, m != NULL);
	if (st) {
		evbuffer_add_printf(b, "# HELP sbx_child_restarts_total Restarts of sbxd's children.\n"
		                       "# TYPE sbx_child_restarts_total counter\n"
		                       "sbx_child_restarts_total{child=\"sbx-launcher\"} %u\n"
		                       "sbx_child_restarts_total{child=\"sbx-api\"} %u\n"
		                       "# HELP sbx_live_groups Process groups of live runs, as sbxd mirrors them.\n"
		                       "# TYPE sbx_live_groups gauge\nsbx_live_groups %u\n",
		                    st->launcher_restarts, st->api_restarts, st->live_groups);
	}
	if (m) {
		unsigned long long cum = 0, count = 0;
		for (uint32_t i = 0; i < m->duration_buckets.n; i++)
			count += m->duration_buckets.v[i];
		evbuffer_add_printf(b, "# HELP sbx_live_runs Runs going on now (detached ones included).\n"
		                       "# TYPE sbx_live_runs gauge\nsbx_live_runs %u\n"
		                       "# HELP sbx_runs_total Runs since the launcher started, by outcome.\n"
		                       "# TYPE sbx_runs_total counter\n"
		                       "sbx_runs_total{outcome=\"exited\"} %llu\n"
		                       "sbx_runs_total{outcome=\"signaled\"} %llu\n"
		                       "sbx_runs_total{outcome=\"timed_out\"} %llu\n"
		                       "sbx_runs_total{outcome=\"failed\"} %llu\n"
		                       "# HELP sbx_run_duration_seconds How long runs took, start to exit.\n"
		                       "# TYPE sbx_run_duration_seconds histogram\n",
		                    m->live_runs, (unsigned long long)m->runs_exited,
		                    (unsigned long long)m->runs_signaled,
		                    (unsigned long long)m->runs_timed_out,
		                    (unsigned long long)m->runs_failed);
		for (uint32_t i = 0; i < PROTO_RUN_BUCKETS_N; i++) {
			cum += i < m->duration_buckets.n ? m->duration_buckets.v[i] : 0;
			evbuffer_add_printf(b, "sbx_run_duration_seconds_bucket{le=\"%g\"} %llu\n",
			                    bounds[i] / 1000.0, cum);
		}
		evbuffer_add_printf(b, "sbx_run_duration_seconds_bucket{le=\"+Inf\"} %llu\n"
		                       "sbx_run_duration_seconds_sum %.3f\n"
		                       "sbx_run_duration_seconds_count %llu\n",
		                    count, m->duration_sum_ms / 1000.0, count);
	}
	if (m) {
		static const char *const states[] = { "STOPPED", "STARTING", "RUNNING", "BACKOFF",
			                              "STOPPING", "EXITED", "FATAL" };
		_Static_assert(sizeof(states) / sizeof(states[0]) == APP_STATE_MAX_ + 1, "a name per state");
		evbuffer_add_printf(b, "# HELP sbx_apps Space Apps by state.\n# TYPE sbx_apps gauge\n");
		for (uint32_t i = 0; i <= APP_STATE_MAX_; i++)
			evbuffer_add_printf(b, "sbx_apps{state=\"%s\"} %u\n", states[i],
			                    i < m->apps_by_state.n ? m->apps_by_state.v[i] : 0);
	}
	evbuffer_add_printf(b, "# HELP sbx_http_requests_total Requests answered, by operation and status.\n"
	                       "# TYPE sbx_http_requests_total counter\n");
	for (size_t i = 0; i < nseries; i++)
		evbuffer_add_printf(b, "sbx_http_requests_total{route=\"%s\",status=\"%d\"} %llu\n",
		                    series[i].route, series[i].status, series[i].n);
	len = evbuffer_get_length(b);
	if ((out = malloc(len + 1))) {
		evbuffer_copyout(b, out, len);
		out[len] = '\0';
		*ret_len = len;
	}
	evbuffer_free(b);
	return out;
}
