/* api/json.c: depth scanner, sandbox spec parser, RUN_REP serializer. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
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
	cr_expect_eq(json_parse(ok, strlen(ok), &v, err, sizeof(err)), 0);
	yajl_tree_free(v);
	cr_expect_eq(json_parse(bad, strlen(bad), &v, err, sizeof(err)), -E2BIG);
	/* brackets inside strings do not count */
	const char *str = "{\"a\":\"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[\\\"[[[[\"}";
	cr_expect_eq(json_parse(str, strlen(str), &v, err, sizeof(err)), 0, "%s", err);
	yajl_tree_free(v);
	free(ok);
	free(bad);
}

/* Issue 7, defect 1: a comment hid a quote from the old depth scanner, and 400000
 * brackets behind it overflowed the stack in yajl_tree. Comments are refused, and the
 * depth is counted by the parser itself. */
Test(json, nesting_behind_a_comment_is_refused_without_recursion)
{
	size_t n = 400000, len = 5 + 2 * n;
	char *buf = malloc(len + 1), err[160];
	yajl_val v = NULL;
	memcpy(buf, "/*\"*/", 5);
	memset(buf + 5, '[', n);
	memset(buf + 5 + n, ']', n);
	buf[len] = '\0';
	cr_expect_lt(json_parse(buf, len, &v, err, sizeof(err)), 0);
	cr_expect_null(v);
	/* without the comment: too deep, found while parsing */
	cr_expect_eq(json_parse(buf + 5, len - 5, &v, err, sizeof(err)), -E2BIG);
	const char *cmt = "{\"a\":1 /* hi */}";
	cr_expect_eq(json_parse(cmt, strlen(cmt), &v, err, sizeof(err)), -EINVAL);
	free(buf);
}

/* Issue 7, defect 6: "ab\u0000cd" was stored as "ab", and overlong UTF-8 was accepted. */
Test(json, nul_and_invalid_utf8_in_strings_and_keys_are_refused)
{
	static const char *const bad[] = {
		"{\"name\":\"ab\\u0000cd\"}",  /* an escaped NUL */
		"{\"ab\\u0000\":1}",            /* in a key */
		"{\"name\":\"\xc0\xaf\"}",        /* overlong '/' */
		"{\"name\":\"\xe0\x80\xaf\"}",    /* overlong, three bytes */
		"{\"name\":\"\xed\xa0\x80\"}",    /* a surrogate */
		"{\"name\":\"\xf4\x90\x80\x80\"}", /* past U+10FFFF */
		"{\"name\":\"\xff\"}",
	};
	char err[160];
	yajl_val v = NULL;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_expect_eq(json_parse(bad[i], strlen(bad[i]), &v, err, sizeof(err)), -EINVAL,
		             "case %zu accepted", i);
		cr_expect_null(v);
	}
	const char *good = "{\"name\":\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \\u00e9\"}";
	cr_expect_eq(json_parse(good, strlen(good), &v, err, sizeof(err)), 0, "%s", err);
	yajl_tree_free(v);
}

Test(json, spec_good_and_wrong_types)
{
	const char *good = "{\"name\":\"x\",\"network\":true,\"ports\":{\"listen\":[8000]},"
	                   "\"env\":{\"A\":\"b\"},\"limits\":{\"memoryMb\":64},"
	                   "\"mounts\":[{\"source\":\"/srv/d\",\"target\":\"d\"}]}";
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
	cr_expect(m.set_mask & SBXF_MOUNTS);
	cr_expect_eq(m.mounts.n, 1);
	cr_expect_str_eq(m.mounts.v[0].source, "/srv/d");
	cr_expect(m.mounts.v[0].read_only, "a mount is read-only unless readOnly is false");
	proto_msg_clear(MSG_SBX_UPDATE, &m);
	yajl_tree_free(v);

	const char *bad[] = { "{\"network\":\"yes\"}", "{\"name\":5}", "{\"ports\":{\"listen\":[0]}}",
		              "{\"limits\":{\"pids\":-1}}", "{\"env\":{\"A\":1}}", "[]",
		              "{\"mounts\":[{\"source\":\"/a\"}]}", "{\"mounts\":{}}",
		              "{\"mounts\":[{\"source\":\"/a\",\"target\":\"t\",\"readOnly\":1}]}" };
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

/* A key the sandbox object does not have is refused by name, wherever it is; so is a
 * read-only one. The API's answer must name it so a typo is not mistaken for a setting. */
Test(json, unknown_and_read_only_fields_named)
{
	static const struct {
		const char *body, *extra, *want;
	} cases[] = {
		{ "{\"name\":\"x\",\"foo\":1}", NULL, "unknown field: foo" },
		{ "{\"ports\":{\"listen\":[80],\"lisen\":[81]}}", NULL, "unknown field: ports.lisen" },
		{ "{\"limits\":{\"timeout\":5}}", NULL, "unknown field: limits.timeout" },
		{ "{\"mounts\":[{\"source\":\"/a\",\"target\":\"t\",\"ro\":true}]}", NULL,
		  "unknown field: mounts[0].ro" },
		{ "{\"sandboxId\":\"sbx_1\"}", NULL, "unknown field: sandboxId" },
		{ "{\"id\":\"sbx_1\"}", NULL, "read-only field: id" },
		{ "{\"workdir\":\"/x\"}", "sandboxId", "read-only field: workdir" },
		{ "{\"createdAt\":\"x\"}", NULL, "read-only field: createdAt" },
		{ "{\"note\":\"x\"}", NULL, "read-only field: note" },
		{ "{\"ports\":5}", NULL, "ports: must be an object" },
	};
	char err[256];
	yajl_val v;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct msg_SBX_UPDATE m = { 0 };
		cr_assert_eq(json_parse(cases[i].body, strlen(cases[i].body), &v, err, sizeof(err)), 0);
		err[0] = '\0';
		cr_expect_eq(json_parse_sbx_fields(v, cases[i].extra, &m, err, sizeof(err)), -EINVAL,
		             "%s accepted", cases[i].body);
		cr_expect_str_eq(err, cases[i].want, "%s", cases[i].body);
		proto_msg_clear(MSG_SBX_UPDATE, &m);
		yajl_tree_free(v);
	}
	/* the one extra argument a front door allows (MCP's sandboxId) */
	const char *ok = "{\"sandboxId\":\"sbx_1\",\"tracing\":true}";
	struct msg_SBX_UPDATE m = { 0 };
	cr_assert_eq(json_parse(ok, strlen(ok), &v, err, sizeof(err)), 0);
	cr_expect_eq(json_parse_sbx_fields(v, "sandboxId", &m, err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(m.set_mask, SBXF_TRACING);
	proto_msg_clear(MSG_SBX_UPDATE, &m);
	yajl_tree_free(v);
}

/* More mounts than SBX_MOUNTS_MAX are refused by the API already (the launcher again). */
Test(json, mounts_at_limit_and_past)
{
	for (uint32_t n = SBX_MOUNTS_MAX; n <= SBX_MOUNTS_MAX + 1; n++) {
		char body[8192] = "{\"mounts\":[", err[256];
		size_t off = strlen(body);
		yajl_val v;
		for (uint32_t i = 0; i < n; i++)
			off += (size_t)snprintf(body + off, sizeof(body) - off,
			                        "%s{\"source\":\"/s\",\"target\":\"t%u\"}", i ? "," : "", i);
		snprintf(body + off, sizeof(body) - off, "]}");
		cr_assert_eq(json_parse(body, strlen(body), &v, err, sizeof(err)), 0);
		struct msg_SBX_UPDATE m = { 0 };
		cr_expect_eq(json_parse_sbx_spec(v, &m, err, sizeof(err)), n <= SBX_MOUNTS_MAX ? 0 : -EINVAL,
		             "%u mounts", n);
		proto_msg_clear(MSG_SBX_UPDATE, &m);
		yajl_tree_free(v);
	}
}

/* Every member of the sandbox object is printed, nested where DESIGN.md §5 nests it. */
Test(json, sandbox_printed_in_full)
{
	uint32_t listen[] = { 8000 };
	char *env[] = { "A=b", NULL };
	struct proto_mount mnt[] = { { "/srv/d", "d", false } };
	struct msg_SBX_REP r = { .id = "sbx_1", .name = "n", .backend = BACKEND_DOCKER,
		                 .fs_mode = "strict", .ports_listen = { 1, listen },
		                 .mounts = { 1, mnt }, .env = { 1, env }, .timeout_ms = 5,
		                 .output_bytes = 1ull << 33, .image = "python", .workdir = "/w",
		                 .note = "n1" };
	yajl_gen g = json_gen_new();
	json_gen_sbx(g, &r);
	size_t len;
	char *doc = json_gen_dup(g, &len), err[128];
	yajl_gen_free(g);
	yajl_val v;
	cr_assert_eq(json_parse(doc, len, &v, err, sizeof(err)), 0, "%s", doc);
	const char *keys[] = { "id", "name", "backend", "fsMode", "readPaths", "network", "ports",
		               "mounts", "env", "limits", "tracing", "image", "workdir", "createdAt",
		               "note" };
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		cr_expect_not_null(json_get(v, keys[i]), "%s missing: %s", keys[i], doc);
	cr_expect_str_eq(json_get(v, "backend")->u.string, "docker");
	cr_expect_eq(YAJL_GET_INTEGER(json_get(json_get(v, "ports"), "listen")->u.array.values[0]), 8000);
	cr_expect_eq(YAJL_GET_INTEGER(json_get(json_get(v, "limits"), "outputBytes")), 1ll << 33);
	yajl_val m0 = json_get(v, "mounts")->u.array.values[0];
	cr_expect(YAJL_IS_FALSE(json_get(m0, "readOnly")));
	cr_expect_str_eq(json_get(json_get(v, "env"), "A")->u.string, "b");
	yajl_tree_free(v);
	free(doc);
}

Test(json_base64, round_trip_and_refusals)
{
	const char bytes[] = { 0, 1, 2, (char)255, (char)254, 0, 10 };
	size_t elen = 0, dlen = 0;
	char *enc = json_base64_encode(bytes, sizeof(bytes), &elen), *dec = NULL;
	cr_assert(enc);
	cr_expect_str_eq(enc, "AAEC//4ACg==");
	cr_assert_eq(json_base64_decode(enc, elen, &dec, &dlen), 0);
	cr_expect_eq(dlen, sizeof(bytes));
	cr_expect(memcmp(dec, bytes, sizeof(bytes)) == 0);
	free(enc);
	free(dec);
	static const char *const bad[] = { "AAE", "AA=A", "A===", "AAE!", "=AAA", "AA==AA==" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		dec = NULL;
		cr_expect_eq(json_base64_decode(bad[i], strlen(bad[i]), &dec, &dlen), -EINVAL, "%s", bad[i]);
		cr_expect_null(dec);
	}
	cr_expect(json_utf8_valid("h\xc3\xa9llo", 6));
	cr_expect(!json_utf8_valid("\xff", 1));
	cr_expect(!json_utf8_valid("a\0b", 3), "a NUL is not text");
}
