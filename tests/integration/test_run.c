/* Runs through REST against a real sbxd: code arrives byte-identical, deadlines kill the
 * whole process tree, and every run is recorded. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "cleanup.h"
#include "harness.h"

/* Every character a shell would interpret, plus a backslash and a trailing newline. */
static const char SNIPPET[] = "it's \"quoted\" $(whoami) `id` ; ls | cat & echo \\n $HOME *\n"
			      "second line\ttab\n";

static void setup(void)
{
	sbx_require_bwrap();
	/* these suites check what a run leaves behind; jails built ahead stay between runs on
	 * purpose and have their own tests (test_warm.c) */
	sbx_it.extra_args[0] = "--no-warm";
	sbx_it_init();
}

TestSuite(run, .init = setup, .fini = sbx_it_fini, .timeout = 60);

/* A Python string literal for s that keeps ', \ and control bytes as \x escapes and
 * everything else (", $, backticks, ;|&) raw, so the interesting bytes travel in the code. */
static char *py_literal(const char *s)
{
	size_t cap = strlen(s) * 4 + 3;
	char *out = malloc(cap);
	cr_assert(out);
	size_t n = 0;
	out[n++] = '\'';
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '\'' || *p == '\\' || *p < 0x20 || *p >= 0x7f)
			n += (size_t)snprintf(out + n, cap - n, "\\x%02x", *p);
		else
			out[n++] = (char)*p;
	}
	out[n++] = '\'';
	out[n] = '\0';
	return out;
}

static void expect_stdout(const char *id, const char *lang, const char *code, const char *in,
			  const char *want)
{
	_cleanup_free_ char *body = run_body(lang, code, in, 0);
	_cleanup_resp_ struct http_resp r = sbx_run(&sbx_it, id, body);
	assert_status(r, 200);
	const char *out = js_str(r.json, "stdout");
	cr_assert(out, "no stdout in %s", r.body);
	cr_expect_str_eq(out, want, "%s run: stdout differs (stderr: %s)", lang,
			 js_str(r.json, "stderr") ? js_str(r.json, "stderr") : "");
	cr_expect_eq(js_int(r.json, "exitCode", -1), 0, "%s run: %s", lang, r.body);
	cr_expect_str_eq(js_str(r.json, "isolation") ? js_str(r.json, "isolation") : "", "bwrap");
}

Test(run, snippet_comes_back_unchanged)
{
	char id[128];
	sbx_create(&sbx_it, "{\"name\":\"snippet\"}", id, sizeof(id));

	_cleanup_free_ char *lit = py_literal(SNIPPET);
	char code[1024];
	snprintf(code, sizeof(code), "import sys\nsys.stdout.write(%s)\n", lit);
	expect_stdout(id, "python", code, NULL, SNIPPET);

	/* through the shell's own parser, quoted here-document: must stay literal */
	snprintf(code, sizeof(code), "cat <<'SBX_EOF'\n%sSBX_EOF\n", SNIPPET);
	expect_stdout(id, "sh", code, NULL, SNIPPET);

	/* and through the stdin field */
	expect_stdout(id, "sh", "cat", SNIPPET, SNIPPET);
}

Test(run, runs_are_recorded)
{
	char id[128], marker[17], code[128], want[64];
	sbx_create(&sbx_it, "{\"name\":\"recorded\"}", id, sizeof(id));
	rand_alnum(marker, 16);
	snprintf(code, sizeof(code), "print('recorded %s')", marker);
	snprintf(want, sizeof(want), "recorded %s\n", marker);

	_cleanup_free_ char *body = run_body("python", code, NULL, 0);
	_cleanup_resp_ struct http_resp r = sbx_run(&sbx_it, id, body);
	assert_status(r, 200);
	const char *run_id = js_str(r.json, "id");
	cr_assert(run_id && run_id[0], "no run id: %s", r.body);
	cr_assert_str_eq(js_str(r.json, "stdout") ? js_str(r.json, "stdout") : "", want);
	cr_expect_str_eq(js_str(r.json, "sandboxId") ? js_str(r.json, "sandboxId") : "", id);
	cr_expect_str_eq(js_str(r.json, "entrance") ? js_str(r.json, "entrance") : "", "rest");

	char path[512];
	snprintf(path, sizeof(path), "/api/sandbox/sandboxes/%s/runs", id);
	_cleanup_resp_ struct http_resp list = http_req(&sbx_it, "GET", path, NULL, NULL);
	assert_status(list, 200);
	yajl_val runs = js_array(list.json, "runs");
	cr_assert(runs, "runs list is not an array: %s", list.body);
	bool found = false;
	for (size_t i = 0; i < YAJL_GET_ARRAY(runs)->len; i++) {
		const char *rid = js_str(YAJL_GET_ARRAY(runs)->values[i], "id");
		if (rid && strcmp(rid, run_id) == 0)
			found = true;
	}
	cr_expect(found, "run %s not in %s", run_id, list.body);

	snprintf(path, sizeof(path), "/api/sandbox/sandboxes/%s/runs/%s", id, run_id);
	_cleanup_resp_ struct http_resp one = http_req(&sbx_it, "GET", path, NULL, NULL);
	assert_status(one, 200);
	cr_expect_str_eq(js_str(one.json, "id") ? js_str(one.json, "id") : "", run_id);
	cr_expect_str_eq(js_str(one.json, "stdout") ? js_str(one.json, "stdout") : "", want,
			 "stored output differs: %s", one.body);
	cr_expect_eq(js_int(one.json, "exitCode", -1), 0);

	snprintf(path, sizeof(path), "/api/sandbox/sandboxes/%s/runs/run_doesnotexist", id);
	_cleanup_resp_ struct http_resp none = http_req(&sbx_it, "GET", path, NULL, NULL);
	assert_status(none, 404);
}

Test(run, deadline_kills_the_whole_tree)
{
	char id[128], marker[24], rnd[13], code[512];
	sbx_create(&sbx_it, "{\"name\":\"deadline\"}", id, sizeof(id));
	long uid = sbx_workdir_uid(&sbx_it, id);
	cr_assert(uid >= 0, "no workdir for %s", id);
	rand_alnum(rnd, 12);
	snprintf(marker, sizeof(marker), "mk_%s", rnd);
	/* a copy of sleep named after the marker, so its cmdline on the host is findable;
	 * a background child plus a busy loop in the shell itself */
	snprintf(code, sizeof(code),
		 "cp /bin/sleep ./%s || exit 9\n./%s 1000 &\nwhile :; do :; done\n", marker,
		 marker);
	_cleanup_free_ char *body = run_body("sh", code, NULL, 1000);
	char path[512];
	snprintf(path, sizeof(path), "/api/sandbox/sandboxes/%s/runs", id);

	struct bg_req bg;
	cr_assert(bg_req_start(&bg, &sbx_it, "POST", path, body, 20) == 0);
	/* proof the child really ran: its marker shows up on the host */
	bool seen = false;
	for (int i = 0; i < 100 && !seen && !bg.finished_ms; i++) {
		seen = proc_count_marker(marker) > 0;
		if (!seen)
			sleep_ms(20);
	}
	_cleanup_resp_ struct http_resp r = bg_req_join(&bg);
	assert_status(r, 200);
	unsigned long long took = bg.finished_ms - bg.started_ms;
	cr_expect(seen, "the marker process %s never appeared", marker);
	cr_expect(js_is_true(r.json, "timedOut"), "timedOut not true: %s", r.body);
	cr_expect(took < 5000, "the 1000 ms deadline took %llu ms to answer", took);

	int left = proc_wait_marker_gone(marker, 3000);
	cr_expect_eq(left, 0, "%d process(es) named %s survived the deadline", left, marker);
	if (uid != 0) {
		left = proc_wait_uid_gone((uid_t)uid, 3000);
		cr_expect_eq(left, 0, "%d process(es) of jail uid %ld survived", left, uid);
	}
}

Test(run, exit_code_and_stderr)
{
	char id[128];
	sbx_create(&sbx_it, NULL, id, sizeof(id));
	_cleanup_free_ char *body = run_body("sh", "echo out; echo err >&2; exit 3", NULL, 0);
	_cleanup_resp_ struct http_resp r = sbx_run(&sbx_it, id, body);
	assert_status(r, 200);
	cr_expect_eq(js_int(r.json, "exitCode", -1), 3, "%s", r.body);
	cr_expect_str_eq(js_str(r.json, "stdout") ? js_str(r.json, "stdout") : "", "out\n");
	cr_expect_str_eq(js_str(r.json, "stderr") ? js_str(r.json, "stderr") : "", "err\n");
	cr_expect(js_is_false(r.json, "timedOut"), "%s", r.body);
}
