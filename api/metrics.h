/* GET /metrics (Prometheus text format 0.0.4): the API counts requests by operation and
 * status here; the rest comes from sbxd (children, live groups) and the launcher (runs). */
#ifndef SBX_API_METRICS_H
#define SBX_API_METRICS_H

#include <stddef.h>

#include "proto.h"

#define METRICS_SERIES_MAX 512u /* (route, status) pairs counted; more go to route "other" */

/* One request answered: route is an operationId, or "-" for one refused before any
 * operation (no such route, bad Host, no token, ...). */
void api_metrics_count(const char *route, int status);

/* The whole document, malloc'd (NULL: out of memory). status or launcher may be NULL when
 * that process did not answer; the document says so with sbx_up{process=...} 0. */
char *api_metrics_render(const struct msg_STATUS_REP *status,
                         const struct msg_METRICS_REP *launcher, size_t *ret_len);

#endif
