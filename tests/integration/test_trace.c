/* Tracing at the language layer through REST against a real sbxd (docs/observe.md
 * "Tracing"): one real Python run and one real Node run report a file write and read, a
 * spawn with its argv, a connect to a loopback address from a sandbox without network, and
 * a name lookup; system-library reads are filtered and a write into a system directory is
 * not; a second run never replays the first; tracing off leaves no trace directory; what a
 * jail writes into its event FIFO by hand cannot break or forge the record. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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

TestSuite(trace, .init = setup, .fini = sbx_it_fini, .timeout = 90);

static struct http_resp run_lang(const char *sid, const char *lang, const char *code)
{
	_cleanup_free_ char *body = run_body(lang, code, NULL, 20000);
	return sbx_run(&sbx_it, sid, body);
}

/* The event of `kind` whose `key` (path, host, or argv joined by spaces) contains want. */
static yajl_val find_event(yajl_val events, const char *kind, const char *key, const char *want)
{
	for (size_t i = 0; events && YAJL_IS_ARRAY(events) && i < events->u.array.len; i++) {
		yajl_val e = events->u.array.values[i];
		const char *k = js_str(e, "kind");
		char joined[1024] = "";
		if (!k || strcmp(k, kind) != 0)
			continue;
		if (strcmp(key, "argv") == 0) {
			yajl_val a = js_get(e, "argv");
			size_t n = 0;
			for (size_t j = 0; a && YAJL_IS_ARRAY(a) && j < a->u.array.len; j++)
				n += (size_t)snprintf(joined + n, sizeof(joined) - n, "%s%s", j ? " " : "",
				                      YAJL_GET_STRING(a->u.array.values[j]));
		} else if (js_str(e, key)) {
			snprintf(joined, sizeof(joined), "%s", js_str(e, key));
		}
		if (strstr(joined, want))
			return e;
	}
	return NULL;
}

static void expect_common(const struct http_resp *r, const char *lang, uint16_t port)
{
	yajl_val ev = js_get(r->json, "trace");
	char portstr[16];
	cr_assert(ev && YAJL_IS_ARRAY(ev), "%s: no trace: %s", lang, r->body);
	cr_expect(find_event(ev, "write", "path", "/out.txt"), "%s: the write: %s", lang, r->body);
	cr_expect(find_event(ev, "read", "path", "/out.txt"), "%s: the read: %s", lang, r->body);
	cr_expect(find_event(ev, "spawn", "argv", "echo child-arg"), "%s: the spawn with argv: %s", lang, r->body);
	yajl_val c = find_event(ev, "connect", "host", "127.0.0.1");
	cr_expect(c && js_int(c, "port", 0) == port, "%s: the loopback connect: %s", lang, r->body);
	cr_expect(find_event(ev, "lookup", "host", "name.example.test"), "%s: the lookup: %s", lang, r->body);
	cr_expect(find_event(ev, "write", "path", "/etc/sbx-trace-test"),
	          "%s: a write into a system directory is reported: %s", lang, r->body);
	/* reads of the system's libraries are noise */
	cr_expect_null(find_event(ev, "read", "path", "/usr/lib"), "%s: %s", lang, r->body);
	cr_expect_null(find_event(ev, "read", "path", "/.sbx/run_"), "%s: the engine's own file: %s", lang, r->body);
	for (size_t i = 0; i < ev->u.array.len; i++) {
		cr_expect_str_eq(js_str(ev->u.array.values[i], "run"), js_str(r->json, "id"));
		cr_expect_gt(js_int(ev->u.array.values[i], "pid", 0), 0);
		cr_expect_gt(js_int(ev->u.array.values[i], "t", 0), 0);
	}
	snprintf(portstr, sizeof(portstr), "%u", port);
	(void)portstr;
}

static const char PY[] =
	"import json, os, socket, subprocess\n"
	"open('out.txt', 'w').write('hello')\n"
	"print(open('out.txt').read())\n"
	"subprocess.run(['echo', 'child-arg'])\n"
	"try:\n socket.create_connection(('127.0.0.1', 18799), timeout=1)\n"
	"except OSError as e:\n print('connect refused')\n"
	"try:\n socket.getaddrinfo('name.example.test', 443)\n"
	"except OSError:\n print('no lookup')\n"
	"try:\n open('/etc/sbx-trace-test', 'w')\n"
	"except OSError:\n print('read-only')\n";

static const char JS[] =
	"const fs = require('fs'), cp = require('child_process'), net = require('net'), dns = require('dns');\n"
	"fs.writeFileSync('out.txt', 'hello');\n"
	"console.log(fs.readFileSync('out.txt', 'utf8'));\n"
	"cp.execFileSync('echo', ['child-arg']);\n"
	"try { fs.writeFileSync('/etc/sbx-trace-test', 'x'); } catch { console.log('read-only'); }\n"
	"dns.lookup('name.example.test', () => {\n"
	"  const s = net.connect(18799, '127.0.0.1');\n"
	"  s.on('error', () => console.log('connect refused'));\n"
	"});\n";

Test(trace, python_run_reports_what_it_touched)
{
	char sid[64];
	sbx_create(&sbx_it, "{\"name\":\"py\",\"tracing\":true}", sid, sizeof(sid));
	_cleanup_resp_ struct http_resp r = run_lang(sid, "python", PY);
	assert_status(r, 200);
	cr_expect_eq(js_int(r.json, "exitCode", -1), 0, "%s", r.body);
	expect_common(&r, "python", 18799);
}

Test(trace, node_run_reports_what_it_touched)
{
	char sid[64];
	sbx_create(&sbx_it, "{\"name\":\"js\",\"tracing\":true}", sid, sizeof(sid));
	_cleanup_resp_ struct http_resp r = run_lang(sid, "node", JS);
	assert_status(r, 200);
	cr_expect_eq(js_int(r.json, "exitCode", -1), 0, "%s", r.body);
	expect_common(&r, "node", 18799);
}

Test(trace, a_second_run_never_replays_the_first)
{
	char sid[64], path[256];
	sbx_create(&sbx_it, "{\"name\":\"two\",\"tracing\":true}", sid, sizeof(sid));
	_cleanup_resp_ struct http_resp a = run_lang(sid, "python", "open('first.txt','w').write('1')");
	_cleanup_resp_ struct http_resp b = run_lang(sid, "python", "open('second.txt','w').write('2')");
	assert_status(a, 200);
	assert_status(b, 200);
	yajl_val ea = js_get(a.json, "trace"), eb = js_get(b.json, "trace");
	cr_assert(ea && eb);
	cr_expect(find_event(ea, "write", "path", "first.txt"));
	cr_expect(find_event(eb, "write", "path", "second.txt"));
	cr_expect_null(find_event(eb, "write", "path", "first.txt"), "the second run replays the first: %s", b.body);

	/* the trace route: by run, all, and since */
	snprintf(path, sizeof(path), "/api/sandbox/sandboxes/%s/trace?run=%s", sid, js_str(a.json, "id"));
	_cleanup_resp_ struct http_resp ta = http_req(&sbx_it, "GET", path, NULL, NULL);
	assert_status(ta, 200);
	cr_expect(find_event(js_get(ta.json, "events"), "write", "path", "first.txt"));
	cr_expect_null(find_event(js_get(ta.json, "events"), "write", "path", "second.txt"));
	snprintf(path, sizeof(path), "/api/sandbox/sandboxes/%s/trace", sid);
	_cleanup_resp_ struct http_resp all = http_req(&sbx_it, "GET", path, NULL, NULL);
	cr_expect(find_event(js_get(all.json, "events"), "write", "path", "first.txt") &&
	          find_event(js_get(all.json, "events"), "write", "path", "second.txt"), "%s", all.body);
	snprintf(path, sizeof(path), "/api/sandbox/sandboxes/%s/trace?since=99999999999999", sid);
	_cleanup_resp_ struct http_resp none = http_req(&sbx_it, "GET", path, NULL, NULL);
	assert_status(none, 200);
	cr_expect_eq(js_int(none.json, "count", -1), 0, "%s", none.body);
	/* the run as recorded carries its own events */
	snprintf(path, sizeof(path), "/api/sandbox/sandboxes/%s/runs/%s", sid, js_str(b.json, "id"));
	_cleanup_resp_ struct http_resp rb = http_req(&sbx_it, "GET", path, NULL, NULL);
	cr_expect(find_event(js_get(rb.json, "trace"), "write", "path", "second.txt"), "%s", rb.body);
	cr_expect_null(find_event(js_get(rb.json, "trace"), "write", "path", "first.txt"));
	/* bad arguments */
	snprintf(path, sizeof(path), "/api/sandbox/sandboxes/%s/trace?since=-1", sid);
	_cleanup_resp_ struct http_resp bad = http_req(&sbx_it, "GET", path, NULL, NULL);
	assert_status(bad, 400);
	snprintf(path, sizeof(path), "/api/sandbox/sandboxes/%s/trace?run=run_000000000000", sid);
	_cleanup_resp_ struct http_resp nf = http_req(&sbx_it, "GET", path, NULL, NULL);
	assert_status(nf, 404);
}

Test(trace, tracing_off_leaves_no_trace_directory)
{
	char sid[64], dir[1024], path[256];
	struct stat st;
	sbx_create(&sbx_it, "{\"name\":\"off\"}", sid, sizeof(sid));
	_cleanup_resp_ struct http_resp r = run_lang(sid, "python",
		"import os\nprint(os.environ.get('SBX_TRACE'), os.path.exists('/tmp/.sbx-trace'), "
		"os.path.exists('/tmp/.sbx-trace-events'))\nopen('x.txt','w').write('x')\n");
	assert_status(r, 200);
	cr_expect_str_eq(js_str(r.json, "stdout"), "None False False\n", "%s", r.body);
	cr_expect_null(js_get(r.json, "trace"), "%s", r.body);
	snprintf(dir, sizeof(dir), "%s/traces/%s", sbx_it.data_dir, sid);
	cr_expect(stat(dir, &st) < 0, "%s exists with tracing off", dir);

	/* switched on: the directory appears; the sandbox deleted: it goes */
	snprintf(path, sizeof(path), "/api/sandbox/sandboxes/%s", sid);
	_cleanup_resp_ struct http_resp p = http_req(&sbx_it, "PATCH", path, "{\"tracing\":true}", NULL);
	assert_status(p, 200);
	_cleanup_resp_ struct http_resp r2 = run_lang(sid, "python", "open('x.txt','w').write('x')\n");
	cr_expect(find_event(js_get(r2.json, "trace"), "write", "path", "x.txt"), "%s", r2.body);
	cr_expect(stat(dir, &st) == 0 && (st.st_mode & 0777) == 0711 && st.st_uid == geteuid());
	_cleanup_resp_ struct http_resp d = http_req(&sbx_it, "DELETE", path, NULL, NULL);
	assert_status(d, 200);
	cr_expect(stat(dir, &st) < 0, "%s outlived its sandbox", dir);
}

/* A jail that writes its own lines into the FIFO: malformed, over-long, unknown kinds and
 * mistyped members are dropped; a forged run id is replaced by the engine's. */
Test(trace, hand_written_event_lines_cannot_break_or_forge_the_record)
{
	char sid[64];
	sbx_create(&sbx_it, "{\"name\":\"hostile\",\"tracing\":true}", sid, sizeof(sid));
	_cleanup_resp_ struct http_resp r = run_lang(sid, "sh",
		"f=/tmp/.sbx-trace-events\n"
		"printf 'not json\\n{\"kind\":\"read\",\"path\":1}\\n{\"kind\":\"evil\",\"path\":\"/x\"}\\n' > $f\n"
		"printf '{\"kind\":\"read\",\"path\":\"/forged\",\"run\":\"run_other\"}\\n' > $f\n"
		"head -c 9000 /dev/zero | tr '\\\\0' a | sed 's/^/{\"kind\":\"read\",\"path\":\"/;s/$/\"}/' > $f\n"
		"printf '{\"kind\":\"write\",\\001\"path\":\"/ctl\"}\\n' > $f\n"
		"printf '{\"kind\":\"read\",\"path\":\"/after\"}\\n' > $f\n");
	assert_status(r, 200);
	yajl_val ev = js_get(r.json, "trace");
	cr_assert(ev && YAJL_IS_ARRAY(ev), "%s", r.body);
	yajl_val forged = find_event(ev, "read", "path", "/forged");
	cr_assert(forged, "%s", r.body);
	cr_expect_str_eq(js_str(forged, "run"), js_str(r.json, "id"), "the engine names the run");
	cr_expect(find_event(ev, "read", "path", "/after"), "the log goes on after the junk: %s", r.body);
	cr_expect_null(find_event(ev, "evil", "path", "/x"));
	cr_expect_null(find_event(ev, "write", "path", "/ctl"));
	size_t pathless = 0;
	for (size_t i = 0; i < ev->u.array.len; i++) {
		yajl_val p = js_get(ev->u.array.values[i], "path");
		const char *ps = p && YAJL_IS_STRING(p) ? YAJL_GET_STRING(p) : NULL;
		cr_expect(!p || (ps && strlen(ps) < 4096), "an over-long line or a mistyped path was kept");
		pathless += p == NULL;
	}
	/* kept: the read whose path was a number (without it), /forged, /after */
	cr_expect_eq(ev->u.array.len, 3u, "%s", r.body);
	cr_expect_eq(pathless, 1u, "%s", r.body);
}

/* tracing "syscalls": any program, no hooks inside it. A shell's cat of a file, its
 * spawns with argv, a compiled C program's connect and a file's unlink all appear; reads
 * of system libraries do not. The ports fence gives the jail inet sockets but no route
 * out: the connect reaches only the jail's own loopback. */
Test(trace, syscall_tracing_sees_a_shell_and_a_c_program)
{
	char sid[64], src[] = "/tmp/sbx-conn-XXXXXX.c", bin[64], cmd[256], path[256];
	int fd = mkstemps(src, 2);
	cr_assert(fd >= 0);
	static const char prog[] =
		"#include <arpa/inet.h>\n#include <sys/socket.h>\n#include <stdio.h>\n#include <unistd.h>\n"
		"int main(void) { struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(18799) };\n"
		"  int s = socket(AF_INET, SOCK_STREAM, 0); inet_pton(AF_INET, \"127.0.0.1\", &a.sin_addr);\n"
		"  printf(\"%d\\n\", connect(s, (struct sockaddr *)&a, sizeof(a))); return 0; }\n";
	cr_assert(write(fd, prog, sizeof(prog) - 1) == (ssize_t)sizeof(prog) - 1);
	close(fd);
	snprintf(bin, sizeof(bin), "%.*s", (int)(strlen(src) - 2), src);
	snprintf(cmd, sizeof(cmd), "cc -o %s %s 2>&1", bin, src);
	if (system(cmd) != 0) {
		unlink(src);
		printf("SKIP: no C compiler to build the connecting program\n");
		cr_skip_test("no C compiler");
	}
	unlink(src);

	sbx_create(&sbx_it, "{\"name\":\"sys\",\"tracing\":\"syscalls\",\"ports\":{\"connect\":[18799]}}",
	           sid, sizeof(sid));
	/* the program goes in through the files API */
	FILE *f = fopen(bin, "rb");
	cr_assert(f);
	static char bytes[1 << 20];
	size_t n = fread(bytes, 1, sizeof(bytes), f);
	fclose(f);
	unlink(bin);
	char host[64], auth[SBX_TOKEN_MAX + 32];
	const char *hdrs[] = { host, auth, "Content-Type: application/octet-stream", NULL };
	snprintf(host, sizeof(host), "Host: 127.0.0.1:%u", sbx_it.port);
	snprintf(auth, sizeof(auth), "Authorization: Bearer %s", sbx_it.token);
	snprintf(path, sizeof(path), "/api/sandbox/sandboxes/%s/files/content?path=conn", sid);
	_cleanup_resp_ struct http_resp up = http_send(sbx_it.port, "PUT", path, hdrs, bytes, n, 30);
	assert_status(up, 200);

	_cleanup_resp_ struct http_resp r = run_lang(sid, "sh",
		"echo hi > f.txt; cat f.txt; cat /etc/hostname 2>/dev/null; sh -c 'echo child'; "
		"chmod +x conn; ./conn; rm f.txt");
	assert_status(r, 200);
	cr_expect_str_eq(js_str(r.json, "stdout"), "hi\nchild\n-1\n", "%s", r.body);
	yajl_val ev = js_get(r.json, "trace");
	cr_assert(ev && YAJL_IS_ARRAY(ev), "%s", r.body);
	cr_expect(find_event(ev, "spawn", "argv", "cat /etc/hostname"), "%s", r.body);
	cr_expect(find_event(ev, "read", "path", "/etc/hostname"), "%s", r.body);
	cr_expect(find_event(ev, "write", "path", "/f.txt"), "%s", r.body);
	cr_expect(find_event(ev, "read", "path", "/f.txt"), "%s", r.body);
	cr_expect(find_event(ev, "spawn", "argv", "sh -c echo child"), "%s", r.body);
	cr_expect(find_event(ev, "spawn", "argv", "./conn"), "%s", r.body);
	yajl_val c = find_event(ev, "connect", "host", "127.0.0.1");
	cr_expect(c && js_int(c, "port", 0) == 18799, "the C program's connect: %s", r.body);
	cr_expect(find_event(ev, "unlink", "path", "/f.txt"), "%s", r.body);
	cr_expect_null(find_event(ev, "read", "path", "/usr/lib"), "library reads are filtered: %s", r.body);
	cr_expect_str_eq(js_str(c, "source"), "syscall");
	for (size_t i = 0; i < ev->u.array.len; i++)
		cr_expect_str_eq(js_str(ev->u.array.values[i], "run"), js_str(r.json, "id"));
	/* no shims, no FIFO: nothing inside the jail */
	_cleanup_resp_ struct http_resp in = run_lang(sid, "sh", "ls -a /tmp | grep -c sbx-trace; echo ${SBX_TRACE:-none}");
	cr_expect_str_eq(js_str(in.json, "stdout"), "0\nnone\n", "%s", in.body);
	cr_expect(strstr(js_str(in.json, "note"), "seccomp user notification"), "%s", in.body);
	printf("syscall trace: %zu events\n", ev->u.array.len);
}
