/* A run's output and input across the process boundary: streamed output that arrives
 * while the program still runs, 20 MiB of output under the 64 MiB cap, and the limits on
 * output, code and stdin at their value and one past, against a real sbxd. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "cleanup.h"
#include "harness.h"
#include "proto_msgs.h"

static void setup(void)
{
	sbx_require_bwrap();
	sbx_it_init();
}

TestSuite(stream, .init = setup, .fini = sbx_it_fini, .timeout = 120);

/* An open request whose response is read bit by bit. */
struct reader {
	int fd;
	char *buf;
	size_t len, cap;
};

static void reader_open(struct reader *rd, const char *path, const char *body)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(sbx_it.port) };
	struct timeval tv = { .tv_sec = 30 };
	_cleanup_free_ char *req = NULL;
	int n;
	memset(rd, 0, sizeof(*rd));
	rd->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	cr_assert_geq(rd->fd, 0);
	setsockopt(rd->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	cr_assert_eq(connect(rd->fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	n = asprintf(&req,
	             "POST %s HTTP/1.1\r\nHost: 127.0.0.1:%u\r\nAuthorization: Bearer %s\r\n"
	             "Content-Type: application/json\r\nAccept: text/event-stream\r\n"
	             "Content-Length: %zu\r\nConnection: close\r\n\r\n%s",
	             path, sbx_it.port, sbx_it.token, strlen(body), body);
	cr_assert_gt(n, 0);
	cr_assert_eq(write(rd->fd, req, (size_t)n), n);
}

/* Read until `needle` is in what arrived (true) or the connection ends (false). */
static bool reader_until(struct reader *rd, const char *needle)
{
	for (;;) {
		if (rd->buf && memmem(rd->buf, rd->len, needle, strlen(needle)))
			return true;
		if (rd->cap - rd->len < 4096) {
			rd->cap = rd->cap ? rd->cap * 2 : 65536;
			rd->buf = realloc(rd->buf, rd->cap + 1);
			cr_assert(rd->buf);
		}
		ssize_t n = read(rd->fd, rd->buf + rd->len, rd->cap - rd->len);
		if (n <= 0)
			return false;
		rd->len += (size_t)n;
		rd->buf[rd->len] = '\0';
	}
}

static void reader_close(struct reader *rd)
{
	close(rd->fd);
	free(rd->buf);
}

Test(stream, rest_sse_first_chunk_arrives_before_the_program_ends)
{
	char id[128], wd[1024], go[1200], path[256];
	struct reader rd;
	sbx_create(&sbx_it, NULL, id, sizeof(id));
	cr_assert_eq(sbx_workdir_path(&sbx_it, id, wd, sizeof(wd)), 0);
	snprintf(go, sizeof(go), "%s/go", wd);
	snprintf(path, sizeof(path), "/api/sandbox/sandboxes/%s/runs", id);
	/* the program cannot end before the test has seen its first line: it waits for a
	 * file the test creates only then, so a reply that arrives whole at the end would
	 * never come (the run's deadline would end it first, and the test fails) */
	reader_open(&rd, path,
	            "{\"language\":\"sh\",\"timeoutMs\":20000,\"code\":\"echo first; "
	            "while [ ! -e go ]; do sleep 0.05; done; echo second >&2; echo third\"}");
	cr_assert(reader_until(&rd, "first"), "no first chunk: %s", rd.buf ? rd.buf : "");
	cr_assert(strstr(rd.buf, "200 OK"), "%s", rd.buf);
	cr_assert(strcasestr(rd.buf, "Content-Type: text/event-stream"), "%s", rd.buf);
	cr_assert(strstr(rd.buf, "event: stdout"), "%s", rd.buf);
	cr_assert_null(strstr(rd.buf, "event: result"), "the result came before the end: %s", rd.buf);
	int fd = open(go, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
	cr_assert_geq(fd, 0);
	close(fd);
	cr_assert(reader_until(&rd, "event: result"), "no result event: %s", rd.buf);
	reader_until(&rd, "\x01never"); /* to the end of the reply */
	cr_expect(strstr(rd.buf, "event: stderr"), "%s", rd.buf);
	cr_expect(strstr(rd.buf, "\"second\\n\""), "%s", rd.buf);
	/* the result event is the whole run, as the JSON reply would be */
	char *res = strstr(rd.buf, "event: result\ndata: ");
	cr_assert(res);
	res += strlen("event: result\ndata: ");
	char *end = strstr(res, "\n\n");
	cr_assert(end);
	*end = '\0';
	yajl_val j = yajl_tree_parse(res, NULL, 0);
	cr_assert(j, "result is not JSON: %s", res);
	cr_expect_str_eq(js_str(j, "stdout"), "first\nthird\n");
	cr_expect_str_eq(js_str(j, "stderr"), "second\n");
	cr_expect_eq(js_int(j, "exitCode", -1), 0);
	yajl_tree_free(j);
	reader_close(&rd);
}

Test(stream, rest_sse_errors_before_the_run_are_plain_json)
{
	struct reader rd;
	reader_open(&rd, "/api/sandbox/sandboxes/sbx_nosuch/runs", "{\"code\":\"true\"}");
	reader_until(&rd, "\x01never");
	cr_assert(strstr(rd.buf, "404"), "%s", rd.buf);
	cr_assert(strstr(rd.buf, "\"not_found\""), "%s", rd.buf);
	reader_close(&rd);
}

Test(stream, twenty_mib_of_output_under_a_64_mib_cap_comes_back_whole)
{
	char id[128], body[256], path[256];
	snprintf(body, sizeof(body), "{\"name\":\"big\",\"limits\":{\"outputBytes\":%u}}",
	         PROTO_RUN_OUTPUT_MAX);
	sbx_create(&sbx_it, body, id, sizeof(id));
	_cleanup_resp_ struct http_resp r = sbx_run(
	        &sbx_it, id,
	        "{\"language\":\"sh\",\"timeoutMs\":60000,"
	        "\"code\":\"head -c 20971520 /dev/zero | tr '\\\\000' a\"}");
	assert_status(r, 200);
	const char *out = js_str(r.json, "stdout");
	cr_assert(out);
	cr_assert_eq(strlen(out), 20u << 20);
	cr_expect(out[0] == 'a' && out[(20u << 20) - 1] == 'a');
	cr_expect(js_is_false(r.json, "stdoutTruncated"));
	/* the record keeps its documented share and says the rest is not stored */
	snprintf(path, sizeof(path), "/api/sandbox/sandboxes/%s/runs/%s", id, js_str(r.json, "id"));
	_cleanup_resp_ struct http_resp g = http_req(&sbx_it, "GET", path, NULL, NULL);
	assert_status(g, 200);
	cr_expect_eq(strlen(js_str(g.json, "stdout")), 256u * 1024u);
	cr_expect(js_is_true(g.json, "stdoutTruncated"));
}

Test(stream, output_limit_at_and_one_past)
{
	char id[128], body[128];
	sbx_create(&sbx_it, "{\"name\":\"cap\",\"limits\":{\"outputBytes\":1000}}", id, sizeof(id));
	_cleanup_resp_ struct http_resp at =
	        sbx_run(&sbx_it, id, "{\"code\":\"head -c 1000 /dev/zero | tr '\\\\000' b\"}");
	assert_status(at, 200);
	cr_expect_eq(strlen(js_str(at.json, "stdout")), 1000);
	cr_expect(js_is_false(at.json, "stdoutTruncated"));
	_cleanup_resp_ struct http_resp past =
	        sbx_run(&sbx_it, id, "{\"code\":\"head -c 1001 /dev/zero | tr '\\\\000' b\"}");
	assert_status(past, 200);
	cr_expect_eq(strlen(js_str(past.json, "stdout")), 1000);
	cr_expect(js_is_true(past.json, "stdoutTruncated"));
	/* the cap itself: the documented maximum is accepted, one more byte is not */
	snprintf(body, sizeof(body), "{\"name\":\"max\",\"limits\":{\"outputBytes\":%u}}",
	         PROTO_RUN_OUTPUT_MAX);
	_cleanup_resp_ struct http_resp mx = http_req(&sbx_it, "POST", "/api/sandbox/sandboxes", body, NULL);
	assert_status(mx, 201);
	snprintf(body, sizeof(body), "{\"name\":\"over\",\"limits\":{\"outputBytes\":%u}}",
	         PROTO_RUN_OUTPUT_MAX + 1);
	_cleanup_resp_ struct http_resp ov = http_req(&sbx_it, "POST", "/api/sandbox/sandboxes", body, NULL);
	assert_status(ov, 400);
	cr_expect(strstr(ov.body, "outputBytes"), "%s", ov.body);
}

/* {"language":"sh","code":"#xxx...\necho ok"} with the code exactly n bytes long */
static char *code_of_len(size_t n, const char *tail)
{
	size_t t = strlen(tail);
	char *code = malloc(n + 1);
	cr_assert(code && n > t + 2);
	code[0] = '#';
	memset(code + 1, 'x', n - t - 2);
	code[n - t - 1] = '\n';
	memcpy(code + n - t, tail, t + 1);
	return code;
}

Test(stream, code_and_stdin_at_their_limit_and_one_past)
{
	char id[128];
	sbx_create(&sbx_it, NULL, id, sizeof(id));
	/* just past one packet, where the old inline path answered 500 */
	_cleanup_free_ char *mid = code_of_len(70000, "echo ok");
	_cleanup_free_ char *b1 = run_body("sh", mid, NULL, 0);
	_cleanup_resp_ struct http_resp r1 = sbx_run(&sbx_it, id, b1);
	assert_status(r1, 200);
	cr_expect_str_eq(js_str(r1.json, "stdout"), "ok\n");

	_cleanup_free_ char *at = code_of_len(PROTO_RUN_CODE_MAX, "wc -c");
	_cleanup_free_ char *in = malloc(PROTO_RUN_STDIN_MAX + 2);
	memset(in, 'y', PROTO_RUN_STDIN_MAX + 1);
	in[PROTO_RUN_STDIN_MAX] = '\0';
	_cleanup_free_ char *b2 = run_body("sh", at, in, 0);
	_cleanup_resp_ struct http_resp r2 = sbx_run(&sbx_it, id, b2);
	assert_status(r2, 200);
	cr_expect_eq(atol(js_str(r2.json, "stdout")), PROTO_RUN_STDIN_MAX, "%s", js_str(r2.json, "stdout"));

	_cleanup_free_ char *past = code_of_len(PROTO_RUN_CODE_MAX + 1, "echo no");
	_cleanup_free_ char *b3 = run_body("sh", past, NULL, 0);
	_cleanup_resp_ struct http_resp r3 = sbx_run(&sbx_it, id, b3);
	assert_status(r3, 413);
	cr_expect(strstr(r3.body, "1048576"), "the limit is named: %s", r3.body);

	in[PROTO_RUN_STDIN_MAX] = 'y';
	in[PROTO_RUN_STDIN_MAX + 1] = '\0';
	_cleanup_free_ char *b4 = run_body("sh", "wc -c", in, 0);
	_cleanup_resp_ struct http_resp r4 = sbx_run(&sbx_it, id, b4);
	assert_status(r4, 413);
	cr_expect(strstr(r4.body, "stdin"), "%s", r4.body);
}

/* Every stdout event's text, concatenated (the events carry {"data": "..."}). */
static char *sse_stdout_text(const char *buf)
{
	size_t cap = strlen(buf) + 1, n = 0;
	char *out = calloc(1, cap);
	const char *p = buf;
	while ((p = strstr(p, "event: stdout\ndata: "))) {
		p += strlen("event: stdout\ndata: ");
		const char *end = strstr(p, "\n\n");
		cr_assert(end);
		char *doc = strndup(p, (size_t)(end - p));
		yajl_val j = yajl_tree_parse(doc, NULL, 0);
		cr_assert(j, "not JSON: %s", doc);
		const char *d = js_str(j, "data");
		cr_assert(d);
		memcpy(out + n, d, strlen(d));
		n += strlen(d);
		yajl_tree_free(j);
		free(doc);
		p = end;
	}
	out[n] = '\0';
	return out;
}

Test(stream, chunk_boundaries_never_split_a_character)
{
	char id[128], path[256];
	struct reader rd;
	sbx_create(&sbx_it, NULL, id, sizeof(id));
	snprintf(path, sizeof(path), "/api/sandbox/sandboxes/%s/runs", id);
	/* 300000 two-byte characters: far more than one 32 KiB chunk, and an odd offset so
	 * chunk edges fall inside characters */
	reader_open(&rd, path,
	            "{\"language\":\"python\",\"code\":\"import sys\\nsys.stdout.write('x' + "
	            "'\\u00e9' * 300000)\\n\"}");
	cr_assert(reader_until(&rd, "event: result"), "%.300s", rd.buf ? rd.buf : "");
	reader_until(&rd, "\x01never");
	_cleanup_free_ char *text = sse_stdout_text(rd.buf);
	cr_assert_eq(strlen(text), 1 + 2 * 300000, "streamed %zu bytes", strlen(text));
	cr_expect_null(strstr(text, "\xef\xbf\xbd"), "a replacement character: a split character");
	cr_expect_eq(text[0], 'x');
	reader_close(&rd);
}

Test(stream, a_client_that_goes_away_mid_stream_leaves_the_run_recorded)
{
	char id[128], path[256];
	struct reader rd;
	sbx_create(&sbx_it, NULL, id, sizeof(id));
	snprintf(path, sizeof(path), "/api/sandbox/sandboxes/%s/runs", id);
	reader_open(&rd, path,
	            "{\"language\":\"sh\",\"code\":\"echo early; sleep 0.5; "
	            "head -c 3000000 /dev/zero | tr '\\\\000' z; echo done\"}");
	cr_assert(reader_until(&rd, "early"));
	reader_close(&rd); /* hang up while the run goes on */
	/* the run still ends and is recorded, and the daemon keeps serving */
	long long count = 0;
	for (int i = 0; i < 100 && count == 0; i++) {
		sleep_ms(100);
		_cleanup_resp_ struct http_resp l = http_req(&sbx_it, "GET", path, NULL, NULL);
		assert_status(l, 200);
		count = js_int(l.json, "count", 0);
	}
	cr_assert_eq(count, 1);
	_cleanup_resp_ struct http_resp h = http_req(&sbx_it, "GET", "/api/sandbox/health", NULL, NULL);
	assert_status(h, 200);
	cr_expect_eq(js_int(h.json, "processes.apiRestarts", -1), 0);
	cr_expect_eq(js_int(h.json, "processes.launcherRestarts", -1), 0);
}
