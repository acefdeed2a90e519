/* api/json.c: depth scanner, sandbox spec parser, RUN_REP serializer. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"

TestSuite(json, .timeout = 10);

static char *nest(int depth)
{
	char *s = malloc((size_t)depth * 2 + 1);
	for (int i = 0; i < depth; i++) {
		s[i] = '[';
		s[depth * 2 - 1 - i] = ']';
	}
	s[depth * 2] = '\0';
	return s;
}

Test(json, depth_at_limit_and_past)
{
	char *ok = nest(JSON_DEPTH_MAX), *bad = nest(JSON_DEPTH_MAX + 1);
	char err[128];
	yajl_val v = NULL;
	cr_expect_eq(json_depth_check(ok, strlen(ok)), 0);
	cr_expect_eq(json_parse(ok, strlen(ok), &v, err, sizeof(err)), 0);
	yajl_tree_free(v);
	cr_expect_eq(json_depth_check(bad, strlen(bad)), -E2BIG);
	cr_expect_eq(json_parse(bad, strlen(bad), &v, err, sizeof(err)), -E2BIG);
	/* brackets inside strings do not count */
	const char *str = "{\"a\":\"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[\\\"[[[[\"}";
	cr_expect_eq(json_depth_check(str, strlen(str)), 0);
	free(ok);
	free(bad);
}

Test(json, spec_good_and_wrong_types)
{
	const char *good = "{\"name\":\"x\",\"network\":true,\"ports\":{\"listen\":[8000]},"
	                   "\"env\":{\"A\":\"b\"},\"limits\":{\"memoryMb\":64},\"extra\":1}";
	char err[256];
	yajl_val v;
	cr_assert_eq(json_parse(good, strlen(good), &v, err, sizeof(err)), 0);
	struct msg_SBX_UPDATE m = { 0 };
	cr_expect_eq(json_parse_sbx_spec(v, &m, err, sizeof(err)), 0, "%s", err);
	cr_expect_str_eq(m.name, "x");
	cr_expect(m.network);
	cr_expect_eq(m.ports_listen.n, 1);
	cr_expect_eq(m.ports_listen.v[0], 8000);
	cr_expect_str_eq(m.env.v[0], "A=b");
	cr_expect_eq(m.memory_mb, 64);
	cr_expect(m.set_mask & SBXF_PORTS);
	cr_expect(!(m.set_mask & SBXF_TRACING));
	proto_msg_clear(MSG_SBX_UPDATE, &m);
	yajl_tree_free(v);

	const char *bad[] = { "{\"network\":\"yes\"}", "{\"name\":5}", "{\"ports\":{\"listen\":[0]}}",
		              "{\"limits\":{\"pids\":-1}}", "{\"env\":{\"A\":1}}", "[]" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_assert_eq(json_parse(bad[i], strlen(bad[i]), &v, err, sizeof(err)), 0);
		struct msg_SBX_UPDATE b = { 0 };
		cr_expect_eq(json_parse_sbx_spec(v, &b, err, sizeof(err)), -EINVAL, "%s", bad[i]);
		proto_msg_clear(MSG_SBX_UPDATE, &b);
		yajl_tree_free(v);
	}
}

Test(json, run_rep_invalid_utf8_and_quotes)
{
	struct msg_RUN_REP r = { .id = "run_1", .sandbox_id = "sbx_1", .isolation = "bwrap",
		                 .has_exit_code = true, .note = "" };
	const char out[] = "a\"b\xff\xfe'$(x)";
	yajl_gen g = json_gen_new();
	json_gen_run(g, &r, out, sizeof(out) - 1, "e\n", 2);
	size_t len;
	char *doc = json_gen_dup(g, &len);
	yajl_gen_free(g);
	char err[128];
	yajl_val v;
	cr_assert_eq(json_parse(doc, len, &v, err, sizeof(err)), 0, "%s: %s", err, doc);
	const char *s;
	cr_assert_eq(json_get_str(v, "stdout", &s), 0);
	cr_expect_str_eq(s, "a\"b\xef\xbf\xbd\xef\xbf\xbd'$(x)");
	cr_assert_eq(json_get_str(v, "stderr", &s), 0);
	cr_expect_str_eq(s, "e\n");
	cr_expect(YAJL_IS_NULL(json_get(v, "signal")));
	yajl_tree_free(v);
	free(doc);
}
