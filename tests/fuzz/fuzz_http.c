/* libFuzzer target for the HTTP request target: the path (api/http.c http_target_path),
 * its routing onto the operation table (api/route.c route_find) and the query string
 * (http_query_value). Input: a selector byte for the method, then the request target as
 * a client sends it ("/api/sandbox/sandboxes/sbx_1/mounts?target=%2Fdata"). Invariants:
 *   - a decoded path has no NUL inside;
 *   - a route found has the request's method, binds every placeholder of its pattern to a
 *     non-empty segment without '/', and the path rebuilt from the pattern with those
 *     values routes to the same row; a 405 lists allowed methods, never the one asked;
 *   - a query value fits its buffer and has no NUL inside;
 *   - (once) every row of op_table is reached by its own pattern and method. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <event2/http.h>

#include "fuzz_common.h"
#include "http.h"
#include "ops.h"
#include "proto.h"
#include "route.h"

#define FUZZ_PREFIX   "/api/sandbox"
#define FUZZ_QUERY_SMALL 8 /* a second, small buffer, to exercise -E2BIG */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const enum evhttp_cmd_type methods[] = {
	EVHTTP_REQ_GET,    EVHTTP_REQ_POST,  EVHTTP_REQ_PUT,   EVHTTP_REQ_PATCH,
	EVHTTP_REQ_DELETE, EVHTTP_REQ_HEAD,  EVHTTP_REQ_OPTIONS,
};
#define METHODS_N (sizeof(methods) / sizeof(methods[0]))

/* The row's pattern with each placeholder replaced by the bound value. */
static void rebuild(const struct op_row *row, const char *const *vals, char *out, size_t outsz)
{
	size_t used = 0;
	int k = 0;
	for (const char *p = row->path; *p && used + 1 < outsz;) {
		if (*p == '{') {
			const char *v = vals[k++];
			size_t n = strlen(v);
			FUZZ_CHECK(used + n < outsz);
			memcpy(out + used, v, n);
			used += n;
			p = strchr(p, '}') + 1;
		} else {
			out[used++] = *p++;
		}
	}
	out[used] = '\0';
}

static int route(const char *path, enum evhttp_cmd_type m, const struct op_row **row,
                 struct op_args *a, char *allow, size_t allowsz)
{
	char *copy = strdup(path);
	int r;
	FUZZ_CHECK(copy);
	r = route_find(copy, m, row, a, allow, allowsz);
	free(copy); /* the bound values point into it: callers copy what they keep */
	return r;
}

static void check_route(const char *path, enum evhttp_cmd_type m)
{
	char *copy = strdup(path), allow[ROUTE_ALLOW_MAX], again[HTTP_PATH_MAX * 2 + 64];
	const struct op_row *row = NULL, *row2 = NULL;
	const struct op_param *pp[OP_PARAMS_MAX];
	struct op_args a = { 0 }, a2 = { 0 };
	const char *vals[OP_PARAMS_MAX];
	int r, n;

	FUZZ_CHECK(copy);
	r = route_find(copy, m, &row, &a, allow, sizeof(allow));
	FUZZ_CHECK(r == 0 || r == -ENOENT || r == -EOPNOTSUPP);
	if (r == -EOPNOTSUPP) {
		const char *name = op_method_name(m);
		FUZZ_CHECK(allow[0]);
		FUZZ_CHECK(!name || !strstr(allow, name));
	}
	if (r == 0) {
		FUZZ_CHECK(row && row->method == m);
		n = op_row_params(row, pp, OP_PARAMS_MAX);
		FUZZ_CHECK(n >= 0);
		for (int i = 0; i < n; i++) {
			const char *v = *(const char *const *)((const char *)&a + pp[i]->field);
			FUZZ_CHECK(v && v[0] && !strchr(v, '/'));
			vals[i] = v;
		}
		rebuild(row, vals, again, sizeof(again));
		FUZZ_CHECK(route(again, m, &row2, &a2, allow, sizeof(allow)) == 0 && row2 == row);
	}
	free(copy);
}

/* Every row is reached by its own pattern (placeholders filled) and method. */
static void check_table(void)
{
	static const char *const vals[OP_PARAMS_MAX] = { "sbx_1", "run_1" };
	char path[HTTP_PATH_MAX];
	const struct op_row *row = NULL;
	struct op_args a = { 0 };
	char allow[ROUTE_ALLOW_MAX];
	for (size_t i = 0; i < op_table_len; i++) {
		rebuild(&op_table[i], vals, path, sizeof(path));
		FUZZ_CHECK(route(path, op_table[i].method, &row, &a, allow, sizeof(allow)) == 0);
		FUZZ_CHECK(row == &op_table[i]);
	}
}

static void check_query(const char *uri, const char *name)
{
	struct evhttp_uri *u = evhttp_uri_parse(uri);
	char big[PROTO_STR_MAX + 1], small[FUZZ_QUERY_SMALL];
	const char *q = u ? evhttp_uri_get_query(u) : NULL;
	int r = http_query_value(q, name, big, sizeof(big));
	FUZZ_CHECK(r == 0 || r == -ENOENT || r == -E2BIG);
	if (r == 0)
		FUZZ_CHECK(strlen(big) < sizeof(big));
	r = http_query_value(q, name, small, sizeof(small));
	FUZZ_CHECK(r == 0 || r == -ENOENT || r == -E2BIG);
	if (r == 0)
		FUZZ_CHECK(strlen(small) < sizeof(small));
	if (u)
		evhttp_uri_free(u);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool table_checked;
	enum evhttp_cmd_type m;
	char *uri, *path = NULL;
	size_t plen;
	int r;

	if (!table_checked) {
		check_table();
		table_checked = true;
	}
	if (size < 1 || memchr(data + 1, '\0', size - 1))
		return 0; /* a request line holds no NUL */
	m = methods[data[0] % METHODS_N];
	if (!(uri = strndup((const char *)data + 1, size - 1)))
		return 0;
	r = http_target_path(uri, &path);
	FUZZ_CHECK(r == 0 || r == -EINVAL || r == -ENOMEM);
	if (r == 0) {
		plen = strlen(path);
		FUZZ_CHECK(plen <= HTTP_PATH_MAX);
		if (strncmp(path, FUZZ_PREFIX, strlen(FUZZ_PREFIX)) == 0)
			check_route(path + strlen(FUZZ_PREFIX), m);
		check_route(path, m);
		free(path);
	}
	check_query(uri, "target");
	free(uri);
	return 0;
}
