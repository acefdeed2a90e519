/* "Only these websites" (DESIGN.md §9): proxy.allow with the test website's name, mapped
 * by sbxd --hosts. The jail has no route out; the engine's resolver answers allowed names
 * only and sbx-net carries their connections. Traffic goes only to loopback and to the
 * test's own namespace (harness/website.h). */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cleanup.h"
#include "harness.h"
#include "website.h"

#define SITE_PORT  18790
#define OTHER_PORT 18791

struct proxy_env {
	struct website w;
	struct sbxd d;
	char hosts[PATH_MAX];
	char id[128];
};

static const char *s_or_empty(const char *s) { return s ? s : ""; }

/* The website, a hosts file naming it site.test / other.test, and a daemon using it. */
static void proxy_setup(struct proxy_env *e, bool allow_private, const char *allow_extra)
{
	const uint16_t ports[] = { SITE_PORT, OTHER_PORT };
	char json[512], text[256];
	int r, fd;

	memset(e, 0, sizeof(*e));
	sbx_require_bwrap();
	if ((r = website_start(&e->w, ports, 2, 0)) < 0) {
		printf("SKIP: cannot make the test's website namespace: %s\n", strerror(-r));
		cr_skip_test("no website namespace");
	}
	snprintf(e->hosts, sizeof(e->hosts), "/tmp/sbx-proxy-hosts-%d", (int)getpid());
	snprintf(text, sizeof(text), "%s site.test\n%s other.test\n", e->w.addr, e->w.addr);
	fd = open(e->hosts, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	cr_assert(fd >= 0 && write(fd, text, strlen(text)) == (ssize_t)strlen(text));
	close(fd);
	e->d.extra_args[0] = "--hosts";
	e->d.extra_args[1] = e->hosts;
	snprintf(e->d.tag, sizeof(e->d.tag), "proxy");
	cr_assert_eq(sbxd_start(&e->d), 0, "sbxd did not start");
	snprintf(json, sizeof(json),
	         "{\"name\":\"web\",\"proxy\":{\"allow\":[\"site.test:%u\"%s],\"allowPrivate\":%s}}",
	         SITE_PORT, allow_extra ? allow_extra : "", allow_private ? "true" : "false");
	sbx_create(&e->d, json, e->id, sizeof(e->id));
}

static void proxy_teardown(struct proxy_env *e)
{
	sbxd_stop(&e->d);
	website_stop(&e->w);
	unlink(e->hosts);
}

static struct http_resp run_lang(struct proxy_env *e, const char *lang, const char *code)
{
	_cleanup_free_ char *body = run_body(lang, code, NULL, 30000);
	cr_assert(body);
	return sbx_run(&e->d, e->id, body);
}

/* networkRefused has an entry of kind for host */
static bool refused(const struct http_resp *r, const char *kind, const char *host)
{
	yajl_val a = js_get(r->json, "networkRefused");
	for (size_t i = 0; a && YAJL_IS_ARRAY(a) && i < a->u.array.len; i++) {
		const char *k = js_str(a->u.array.values[i], "kind");
		const char *h = js_str(a->u.array.values[i], "host");
		if (k && h && strcmp(k, kind) == 0 && strstr(h, host))
			return true;
	}
	return false;
}

TestSuite(proxy, .timeout = 180);

/* Python's urllib and node's fetch, with every proxy variable removed, reach the allowed
 * name: the capture does not depend on a program honouring HTTPS_PROXY. */
Test(proxy, python_and_node_reach_the_allowed_name_without_proxy_variables)
{
	struct proxy_env e;
	char code[1024], want[64];
	proxy_setup(&e, true, NULL);
	snprintf(want, sizeof(want), "sbx-website %u", SITE_PORT);

	snprintf(code, sizeof(code),
	         "import os, urllib.request\n"
	         "for k in list(os.environ):\n"
	         "    if 'proxy' in k.lower(): del os.environ[k]\n"
	         "print(urllib.request.urlopen('http://site.test:%u/', timeout=10).read().decode().strip())\n",
	         SITE_PORT);
	_cleanup_resp_ struct http_resp py = run_lang(&e, "python", code);
	assert_status(py, 200);
	cr_log_info("python: %s%s", s_or_empty(js_str(py.json, "stdout")), s_or_empty(js_str(py.json, "stderr")));
	cr_expect(strstr(s_or_empty(js_str(py.json, "stdout")), want), "python: %s", py.body);

	snprintf(code, sizeof(code),
	         "for (const k of Object.keys(process.env)) if (k.toLowerCase().includes('proxy')) delete process.env[k];\n"
	         "fetch('http://site.test:%u/').then(r => r.text()).then(t => console.log(t.trim()))"
	         ".catch(e => console.log('fetch-failed', e.cause ? e.cause.code : e.message));\n",
	         SITE_PORT);
	_cleanup_resp_ struct http_resp js = run_lang(&e, "node", code);
	assert_status(js, 200);
	cr_log_info("node: %s%s", s_or_empty(js_str(js.json, "stdout")), s_or_empty(js_str(js.json, "stderr")));
	cr_expect(strstr(s_or_empty(js_str(js.json, "stdout")), want), "node: %s", js.body);
	proxy_teardown(&e);
}

/* A name not allowed does not resolve and is reported; the website's raw address is
 * unreachable; the same port under another name is refused. */
Test(proxy, a_name_not_allowed_does_not_resolve_and_is_reported)
{
	struct proxy_env e;
	char code[1536];
	proxy_setup(&e, true, NULL);
	snprintf(code, sizeof(code),
	         "import socket\n"
	         "try:\n"
	         "    print('RESOLVED', socket.gethostbyname('other.test'))\n"
	         "except OSError as ex:\n"
	         "    print('no-such-name', type(ex).__name__)\n"
	         "try:\n"
	         "    socket.create_connection(('%s', %u), timeout=3); print('RAW-CONNECTED')\n"
	         "except OSError as ex:\n"
	         "    print('raw-refused', ex.errno)\n"
	         "a = socket.gethostbyname('site.test')\n"
	         "print('site-at', a)\n"
	         "try:\n"
	         "    s = socket.create_connection((a, %u), timeout=3); s.sendall(b'GET / HTTP/1.0\\r\\n\\r\\n')\n"
	         "    print('OTHERPORT', s.recv(100))\n"
	         "except OSError as ex:\n"
	         "    print('otherport-refused', ex.errno)\n",
	         e.w.addr, SITE_PORT, OTHER_PORT);
	_cleanup_resp_ struct http_resp r = run_lang(&e, "python", code);
	assert_status(r, 200);
	const char *out = s_or_empty(js_str(r.json, "stdout"));
	cr_log_info("jail said:\n%s%s\n%s", out, s_or_empty(js_str(r.json, "stderr")), r.body);
	cr_expect(strstr(out, "no-such-name"), "other.test resolved: %s", out);
	cr_expect(strstr(out, "raw-refused"), "the raw address was reachable: %s", out);
	cr_expect(strstr(out, "site-at 198.18."), "site.test got no engine address: %s", out);
	cr_expect(!strstr(out, "OTHERPORT b'HTTP"), "a port not allowed was carried: %s", out);
	cr_expect(refused(&r, "lookup", "other.test"), "the refused lookup is not reported: %s", r.body);
	/* the same result in the run's history */
	char path[512];
	snprintf(path, sizeof(path), "/api/sandbox/sandboxes/%s/runs/%s", e.id, s_or_empty(js_str(r.json, "id")));
	_cleanup_resp_ struct http_resp g = http_req(&e.d, "GET", path, NULL, NULL);
	assert_status(g, 200);
	cr_expect(refused(&g, "lookup", "other.test"), "GET /runs/{id} lost the refusals: %s", g.body);
	proxy_teardown(&e);
}

/* Programs that use the proxy variables: curl through HTTPS_PROXY reaches the allowed
 * name and is refused (403, reported) for a name not listed. */
Test(proxy, curl_through_the_proxy_variable_is_held_to_the_allowlist)
{
	struct proxy_env e;
	char code[1024];
	proxy_setup(&e, true, NULL);
	if (access("/usr/bin/curl", X_OK) < 0) {
		proxy_teardown(&e);
		printf("SKIP: /usr/bin/curl is not installed\n");
		cr_skip_test("no curl");
	}
	snprintf(code, sizeof(code),
	         "echo proxy=$HTTPS_PROXY\n"
	         "/usr/bin/curl -s -m 10 -o /dev/null -w 'allowed=%%{http_code}\\n' -x \"$HTTP_PROXY\" http://site.test:%u/\n"
	         "/usr/bin/curl -s -m 10 -o /dev/null -w 'unlisted=%%{http_code}\\n' -x \"$HTTP_PROXY\" http://other.test:%u/\n"
	         "/usr/bin/curl -s -m 10 -o /dev/null -w 'tunnel=%%{http_code}\\n' -p -x \"$HTTPS_PROXY\" http://other.test:%u/ || echo tunnel-refused\n",
	         SITE_PORT, SITE_PORT, SITE_PORT);
	_cleanup_resp_ struct http_resp r = run_lang(&e, "sh", code);
	assert_status(r, 200);
	const char *out = s_or_empty(js_str(r.json, "stdout"));
	cr_log_info("jail said:\n%s%s", out, s_or_empty(js_str(r.json, "stderr")));
	cr_expect(strstr(out, "proxy=http://198.18.0.1:3128"), "%s", out);
	cr_expect(strstr(out, "allowed=200"), "%s", out);
	cr_expect(strstr(out, "unlisted=403"), "%s", out);
	cr_expect(strstr(out, "tunnel-refused") || strstr(out, "tunnel=403"), "%s", out);
	cr_expect(refused(&r, "connect", "other.test"), "the refused CONNECT is not reported: %s", r.body);
	proxy_teardown(&e);
}

/* An allowed name that resolves into a private range is refused unless allowPrivate. */
Test(proxy, a_private_destination_needs_allow_private)
{
	struct proxy_env e;
	char code[512];
	proxy_setup(&e, false, NULL);
	snprintf(code, sizeof(code),
	         "import urllib.request\n"
	         "try:\n"
	         "    print(urllib.request.urlopen('http://site.test:%u/', timeout=10).read())\n"
	         "except Exception as ex:\n"
	         "    print('refused', type(ex).__name__)\n",
	         SITE_PORT);
	_cleanup_resp_ struct http_resp r = run_lang(&e, "python", code);
	assert_status(r, 200);
	const char *out = s_or_empty(js_str(r.json, "stdout"));
	cr_log_info("jail said:\n%s%s\n%s", out, s_or_empty(js_str(r.json, "stderr")), r.body);
	cr_expect(strstr(out, "refused") && !strstr(out, "sbx-website"), "%s", out);
	cr_expect(refused(&r, "connect", "site.test"), "the private destination is not reported: %s", r.body);
	proxy_teardown(&e);
}

/* Stored settings: malformed entries and combinations are refused (400) and change nothing. */
Test(proxy, bad_allow_entries_and_combinations_are_refused)
{
	struct sbxd d = { 0 };
	static const char *const bad[] = {
		"{\"name\":\"a\",\"proxy\":{\"allow\":[\"pypi.org\"]}}",
		"{\"name\":\"a\",\"proxy\":{\"allow\":[\"pypi.org:0\"]}}",
		"{\"name\":\"a\",\"proxy\":{\"allow\":[\"pypi.org:65536\"]}}",
		"{\"name\":\"a\",\"proxy\":{\"allow\":[\"PyPI.org:443\"]}}",
		"{\"name\":\"a\",\"proxy\":{\"allow\":[\"*.:443\"]}}",
		"{\"name\":\"a\",\"proxy\":{\"allow\":[\"a b:443\"]}}",
		"{\"name\":\"a\",\"proxy\":{\"allow\":[\"-x.org:443\"]}}",
		"{\"name\":\"a\",\"proxy\":{\"allow\":[\"x.org:443\"]},\"network\":true}",
		"{\"name\":\"a\",\"proxy\":{\"allow\":[\"x.org:443\"]},\"ports\":{\"connect\":[443]}}",
		"{\"name\":\"a\",\"proxy\":{\"allow\":[\"x.org:443\"]},\"backend\":\"docker\"}",
		"{\"name\":\"a\",\"proxy\":{\"allow\":\"x.org:443\"}}",
		"{\"name\":\"a\",\"proxy\":{\"allowed\":[\"x.org:443\"]}}",
	};
	cr_assert_eq(sbxd_start(&d), 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		_cleanup_resp_ struct http_resp r = http_req(&d, "POST", "/api/sandbox/sandboxes", bad[i], NULL);
		cr_expect_eq(r.status, 400, "%s -> %d %s", bad[i], r.status, s_or_empty(r.body));
	}
	/* at the limit of entries, and one past it */
	char big[8192];
	size_t n = (size_t)snprintf(big, sizeof(big), "{\"name\":\"many\",\"proxy\":{\"allow\":[");
	for (int i = 0; i < 65; i++)
		n += (size_t)snprintf(big + n, sizeof(big) - n, "%s\"h%d.example:443\"", i ? "," : "", i);
	snprintf(big + n, sizeof(big) - n, "]}}");
	_cleanup_resp_ struct http_resp over = http_req(&d, "POST", "/api/sandbox/sandboxes", big, NULL);
	cr_expect_eq(over.status, 400, "65 entries: %d %s", over.status, s_or_empty(over.body));
	char *last = strrchr(big, ',');
	snprintf(last, sizeof(big) - (size_t)(last - big), "]}}");
	_cleanup_resp_ struct http_resp at = http_req(&d, "POST", "/api/sandbox/sandboxes", big, NULL);
	cr_expect(at.status == 200 || at.status == 201, "64 entries: %d %s", at.status, s_or_empty(at.body));
	_cleanup_resp_ struct http_resp list = http_req(&d, "GET", "/api/sandbox/sandboxes", NULL, NULL);
	cr_expect(!strstr(s_or_empty(list.body), "\"a\""), "a refused create left a sandbox: %s", list.body);
	sbxd_stop(&d);
}

/* A hostile jail: malformed DNS packets and garbage on the proxy port do not stop sbx-net;
 * the same run then resolves and fetches the allowed name. */
Test(proxy, hostile_packets_do_not_stop_the_proxy)
{
	struct proxy_env e;
	char code[2048], want[64];
	proxy_setup(&e, true, NULL);
	snprintf(want, sizeof(want), "sbx-website %u", SITE_PORT);
	snprintf(code, sizeof(code),
	         "import os, socket, urllib.request\n"
	         "u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
	         "junk = [b'', b'\\x00', b'\\xff' * 12, b'\\x12\\x34\\x01\\x00\\xff\\xff' + b'\\x00' * 6,\n"
	         "        os.urandom(512), b'\\x00\\x01\\x01\\x00\\x00\\x01\\x00\\x00\\x00\\x00\\x00\\x00' + b'\\x3f' * 300]\n"
	         "for j in junk * 20:\n"
	         "    u.sendto(j, ('198.18.0.1', 53))\n"
	         "for j in [b'\\r\\n\\r\\n', b'GARBAGE / HTTP/1.1\\r\\n\\r\\n', b'CONNECT\\r\\n\\r\\n',\n"
	         "          b'CONNECT site.test:99999 HTTP/1.1\\r\\n\\r\\n', b'GET http://:80/ HTTP/1.1\\r\\n\\r\\n',\n"
	         "          b'A' * 20000]:\n"
	         "    try:\n"
	         "        s = socket.create_connection(('198.18.0.1', 3128), timeout=5); s.sendall(j)\n"
	         "        print('proxy said', s.recv(12))\n"
	         "    except OSError as ex:\n"
	         "        print('proxy closed', ex)\n"
	         "for k in list(os.environ):\n"
	         "    if 'proxy' in k.lower(): del os.environ[k]\n"
	         "print(urllib.request.urlopen('http://site.test:%u/', timeout=10).read().decode().strip())\n",
	         SITE_PORT);
	_cleanup_resp_ struct http_resp r = run_lang(&e, "python", code);
	assert_status(r, 200);
	const char *out = s_or_empty(js_str(r.json, "stdout"));
	cr_log_info("jail said:\n%s%s", out, s_or_empty(js_str(r.json, "stderr")));
	cr_expect(strstr(out, "proxy said b'HTTP/1.1 400") || strstr(out, "proxy said b'HTTP/1.1 431"), "%s", out);
	cr_expect(strstr(out, want), "the proxy did not survive: %s", out);
	/* and the next run too */
	_cleanup_resp_ struct http_resp again = run_lang(&e, "python",
	        "import urllib.request\nprint(urllib.request.urlopen('http://site.test:18790/', timeout=10).read().decode().strip())\n");
	assert_status(again, 200);
	cr_expect(strstr(s_or_empty(js_str(again.json, "stdout")), want), "%s", again.body);
	proxy_teardown(&e);
}

/* NETD_SESSION_CONNS_MAX (256) connections of one run are held; the 257th is closed at
 * once; once they are gone the proxy serves again. Held here as proxy connections that
 * never send a head (sbx-net keeps them NETD_HEAD_TIMEOUT_S). */
Test(proxy, connections_per_run_at_the_limit_and_one_past)
{
	struct proxy_env e;
	char code[2048], want[64];
	proxy_setup(&e, true, NULL);
	snprintf(want, sizeof(want), "sbx-website %u", SITE_PORT);
	snprintf(code, sizeof(code),
	         "import os, resource, socket, time, urllib.request\n"
	         "held = []\n"
	         "for i in range(256):\n"
	         "    held.append(socket.create_connection(('198.18.0.1', 3128), timeout=5))\n"
	         "time.sleep(0.5)\n"
	         "def closed(s):\n"
	         "    s.settimeout(1.0)\n"
	         "    try:\n"
	         "        return s.recv(1) == b''\n"
	         "    except (socket.timeout, TimeoutError):\n"
	         "        return False\n"
	         "    except OSError:\n"
	         "        return True\n"
	         "print('held-open', sum(1 for s in held[-3:] if not closed(s)))\n"
	         "extra = socket.create_connection(('198.18.0.1', 3128), timeout=5)\n"
	         "print('past-limit-closed', closed(extra))\n"
	         "for s in held: s.close()\n"
	         "extra.close()\n"
	         "time.sleep(0.5)\n"
	         "for k in list(os.environ):\n"
	         "    if 'proxy' in k.lower(): del os.environ[k]\n"
	         "print(urllib.request.urlopen('http://site.test:%u/', timeout=10).read().decode().strip())\n",
	         SITE_PORT);
	_cleanup_resp_ struct http_resp r = run_lang(&e, "python", code);
	assert_status(r, 200);
	const char *out = s_or_empty(js_str(r.json, "stdout"));
	cr_log_info("jail said:\n%s%s", out, s_or_empty(js_str(r.json, "stderr")));
	cr_expect(strstr(out, "held-open 3"), "connections under the limit were closed: %s", out);
	cr_expect(strstr(out, "past-limit-closed True"), "the 257th connection was kept: %s", out);
	cr_expect(strstr(out, want), "the proxy did not serve after the limit: %s", out);
	proxy_teardown(&e);
}
