/* The network fence on Linux (DESIGN.md §9): listen ports served to the host's loopback,
 * connect ports to a "website" in a namespace this test makes, network: true that never
 * reaches the host's loopback, loopback ports given back one by one, the API's own port
 * refused, and a resolver only with outbound permission. Traffic goes only to loopback
 * and to the test's own namespace (harness/website.h). */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cleanup.h"
#include "harness.h"
#include "website.h"

TestSuite(network, .init = sbx_it_init, .fini = sbx_it_fini, .timeout = 120);

static const char *s_or_empty(const char *s) { return s ? s : ""; }

static struct http_resp run_py(const char *id, const char *code, unsigned timeout_ms)
{
	_cleanup_free_ char *body = run_body("python", code, NULL, timeout_ms);
	cr_assert(body);
	return sbx_run(&sbx_it, id, body);
}

/* A listener of the test's own on host loopback (v4 or v6), non-blocking. */
static int host_listener(int family, uint16_t *ret_port)
{
	int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	struct sockaddr_storage ss = { 0 };
	socklen_t sl;
	int one = 1;
	cr_assert(fd >= 0);
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (family == AF_INET) {
		struct sockaddr_in *sa = (struct sockaddr_in *)&ss;
		sa->sin_family = AF_INET;
		sa->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		sa->sin_port = htons(*ret_port);
		sl = sizeof(*sa);
	} else {
		struct sockaddr_in6 *sa = (struct sockaddr_in6 *)&ss;
		sa->sin6_family = AF_INET6;
		sa->sin6_addr = in6addr_loopback;
		sa->sin6_port = htons(*ret_port);
		sl = sizeof(*sa);
	}
	cr_assert(bind(fd, (struct sockaddr *)&ss, sl) == 0, "bind: %s", strerror(errno));
	cr_assert(getsockname(fd, (struct sockaddr *)&ss, &sl) == 0);
	cr_assert(listen(fd, 8) == 0);
	*ret_port = ntohs(family == AF_INET ? ((struct sockaddr_in *)&ss)->sin_port
	                                    : ((struct sockaddr_in6 *)&ss)->sin6_port);
	return fd;
}

static bool accepted_any(int lfd)
{
	int c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	if (c >= 0)
		close(c);
	return c >= 0;
}

/* A real HTTP server inside the jail on listen: [18771] answers the host's
 * 127.0.0.1:18771; binding a port not declared fails inside. */
Test(network, a_listen_port_is_served_on_the_host_loopback)
{
	char id[128];
	struct bg_req bg;
	char path[256];
	_cleanup_free_ char *body = NULL;
	const char *code =
		"import socket, http.server\n"
		"try:\n"
		"    s = socket.socket(); s.bind(('0.0.0.0', 18772)); print('BOUND-18772')\n"
		"except OSError as e:\n"
		"    print('bind-18772-refused', e.errno)\n"
		"class H(http.server.BaseHTTPRequestHandler):\n"
		"    def do_GET(self):\n"
		"        b = b'hello from the jail'\n"
		"        self.send_response(200); self.send_header('Content-Length', str(len(b)))\n"
		"        self.end_headers(); self.wfile.write(b)\n"
		"    def log_message(self, *a): pass\n"
		"srv = http.server.HTTPServer(('0.0.0.0', 18771), H)\n"
		"print('serving', flush=True)\n"
		"srv.handle_request()\n"
		"print('served', flush=True)\n"
		"srv.timeout = 3\n"
		"srv.handle_request()  # stays up while the host tries its other address\n";

	sbx_require_bwrap();
	sbx_create(&sbx_it, "{\"name\":\"web\",\"ports\":{\"listen\":[18771]}}", id, sizeof(id));
	body = run_body("python", code, NULL, 30000);
	snprintf(path, sizeof(path), "/api/sandbox/sandboxes/%s/runs", id);
	cr_assert_eq(bg_req_start(&bg, &sbx_it, "POST", path, body, 60), 0);

	/* the host side: 127.0.0.1:18771, retried while the jail starts its server */
	struct http_resp got = { .status = -1 };
	for (int i = 0; i < 200; i++) {
		got = http_send(18771, "GET", "/", (const char *const[]){ "Host: 127.0.0.1", NULL },
		                NULL, 0, 5);
		if (got.status == 200)
			break;
		http_resp_clear(&got);
		sleep_ms(50);
	}
	cr_expect_eq(got.status, 200, "the host could not reach the jail's server");
	cr_expect(got.body && strstr(got.body, "hello from the jail"), "body: %s", s_or_empty(got.body));
	http_resp_clear(&got);

	/* ...on the host's loopback only: an address of the host's own that is not loopback
	 * (the host side of the test website's veth) does not answer on 18771 */
	struct website w;
	if (website_start(&w, (const uint16_t[]){ 18773 }, 1, 0) == 0) {
		struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(18771) };
		int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		inet_pton(AF_INET, w.host_addr, &sa.sin_addr);
		cr_expect(fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0,
		          "the jail's server answered on the host's %s too", w.host_addr);
		if (fd >= 0)
			close(fd);
		website_stop(&w);
	} else {
		printf("SKIP: no website namespace: the non-loopback check of listen ports\n");
	}

	_cleanup_resp_ struct http_resp r = bg_req_join(&bg);
	assert_status(r, 200);
	const char *out = s_or_empty(js_str(r.json, "stdout"));
	cr_log_info("jail said:\n%s%s", out, s_or_empty(js_str(r.json, "stderr")));
	cr_expect(strstr(out, "served"), "the jail's server did not answer: %s", r.body);
	cr_expect(strstr(out, "bind-18772-refused 13"), "an undeclared port was bound: %s", out);
	cr_expect(!strstr(out, "BOUND-18772"));
}

/* connect: [P] reaches the test's website on P and not on Q; UDP out is refused. */
Test(network, a_connect_port_reaches_that_port_only_and_no_udp)
{
	struct website w;
	const uint16_t ports[] = { 18780, 18781 };
	char id[128], json[256], code[2048];
	int r = website_start(&w, ports, 2, 18782);
	if (r < 0) {
		printf("SKIP: cannot make the test's website namespace: %s\n", strerror(-r));
		cr_skip_test("no website namespace");
	}
	sbx_require_bwrap();
	snprintf(json, sizeof(json), "{\"name\":\"conn\",\"ports\":{\"connect\":[%u]}}", ports[0]);
	sbx_create(&sbx_it, json, id, sizeof(id));
	snprintf(code, sizeof(code),
	         "import socket, urllib.request\n"
	         "try:\n"
	         "    print(urllib.request.urlopen('http://%s:%u/', timeout=10).read().decode().strip())\n"
	         "except Exception as e:\n"
	         "    print('P-failed', e)\n"
	         "try:\n"
	         "    socket.create_connection(('%s', %u), timeout=3); print('Q-CONNECTED')\n"
	         "except OSError as e:\n"
	         "    print('Q-refused', e.errno)\n"
	         "try:\n"
	         "    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
	         "    u.sendto(b'x', ('%s', %u)); print('UDP-SENT')\n"
	         "except OSError as e:\n"
	         "    print('udp-refused', e.errno)\n"
	         "print(open('/etc/resolv.conf').read().strip() if __import__('os').path.exists('/etc/resolv.conf') else 'no-resolv-conf')\n",
	         w.addr, ports[0], w.addr, ports[1], w.addr, w.udp_port);
	_cleanup_resp_ struct http_resp res = run_py(id, code, 30000);
	assert_status(res, 200);
	const char *out = s_or_empty(js_str(res.json, "stdout"));
	cr_log_info("jail said:\n%s%s", out, s_or_empty(js_str(res.json, "stderr")));
	char want[64];
	snprintf(want, sizeof(want), "sbx-website %u", ports[0]);
	cr_expect(strstr(out, want), "the connect port did not reach the website: %s", out);
	cr_expect(strstr(out, "Q-refused 13"), "a second port was reachable: %s", out);
	cr_expect(strstr(out, "udp-refused 13"), "UDP left the jail: %s", out);
	cr_expect(!strstr(out, "nameserver"), "a ports-only jail got a resolver: %s", out);
	sleep_ms(200);
	cr_expect_eq(website_udp_count(&w), 0, "the website received UDP from the jail");
	website_stop(&w);
}

/* network: true never reaches the host's loopback, by 127.0.0.1, localhost or ::1, nor
 * the daemon's own port; loopback: [P] gives back exactly P, and a second port stays shut. */
Test(network, network_on_keeps_the_host_loopback_out_but_loopback_ports)
{
	uint16_t p4 = 0, p6 = 0, given = 0, other = 0;
	_cleanup_close_ int l4 = host_listener(AF_INET, &p4);
	_cleanup_close_ int l6 = host_listener(AF_INET6, &p6);
	_cleanup_close_ int lg = host_listener(AF_INET, &given);
	_cleanup_close_ int lo = host_listener(AF_INET, &other);
	char id[128], json[256], code[2048];

	sbx_require_bwrap();
	snprintf(json, sizeof(json), "{\"name\":\"neton\",\"network\":true,\"ports\":{\"loopback\":[%u]}}",
	         given);
	sbx_create(&sbx_it, json, id, sizeof(id));
	snprintf(code, sizeof(code),
	         "import socket\n"
	         "def tryc(fam, host, port, tag):\n"
	         "    try:\n"
	         "        s = socket.socket(fam); s.settimeout(3); s.connect((host, port)); print('CONNECTED', tag)\n"
	         "    except OSError as e:\n"
	         "        print('refused', tag, e.errno)\n"
	         "tryc(socket.AF_INET, '127.0.0.1', %u, 'v4')\n"
	         "tryc(socket.AF_INET, 'localhost', %u, 'localhost')\n"
	         "tryc(socket.AF_INET6, '::1', %u, 'v6')\n"
	         "tryc(socket.AF_INET, '127.0.0.1', %u, 'api')\n"
	         "tryc(socket.AF_INET, '127.0.0.1', %u, 'other')\n"
	         "tryc(socket.AF_INET, '127.0.0.1', %u, 'GIVEN')\n",
	         p4, p4, p6, (unsigned)sbx_it.port, other, given);
	_cleanup_resp_ struct http_resp r = run_py(id, code, 30000);
	assert_status(r, 200);
	const char *out = s_or_empty(js_str(r.json, "stdout"));
	cr_log_info("jail said:\n%s%s", out, s_or_empty(js_str(r.json, "stderr")));
	cr_expect(strstr(out, "refused v4"), "%s", out);
	cr_expect(strstr(out, "refused localhost"), "%s", out);
	cr_expect(strstr(out, "refused v6"), "%s", out);
	cr_expect(strstr(out, "refused api"), "the jail reached the daemon's API: %s", out);
	cr_expect(strstr(out, "refused other"), "%s", out);
	cr_expect(strstr(out, "CONNECTED GIVEN"), "the loopback port was not given back: %s", out);
	cr_expect(!strstr(out, "CONNECTED v") && !strstr(out, "CONNECTED l") &&
	          !strstr(out, "CONNECTED a") && !strstr(out, "CONNECTED o"), "%s", out);
	cr_expect(!accepted_any(l4) && !accepted_any(l6) && !accepted_any(lo),
	          "a host listener accepted a connection from the jail");
	cr_expect(accepted_any(lg), "the given-back listener saw nothing");
}

/* The daemon's own port can never be named in loopback: refused when stored (400). */
Test(network, the_api_port_is_refused_as_a_loopback_port)
{
	char json[256], id[128], path[256], patch[128];
	snprintf(json, sizeof(json), "{\"name\":\"sneaky\",\"ports\":{\"loopback\":[%u]}}",
	         (unsigned)sbx_it.port);
	_cleanup_resp_ struct http_resp r = http_req(&sbx_it, "POST", "/api/sandbox/sandboxes", json, NULL);
	assert_status(r, 400);
	cr_expect(strstr(r.body, "API port"), "%s", r.body);
	sbx_create(&sbx_it, "{\"name\":\"later\"}", id, sizeof(id));
	snprintf(path, sizeof(path), "/api/sandbox/sandboxes/%s", id);
	snprintf(patch, sizeof(patch), "{\"ports\":{\"loopback\":[%u]}}", (unsigned)sbx_it.port);
	_cleanup_resp_ struct http_resp p = http_req(&sbx_it, "PATCH", path, patch, NULL);
	assert_status(p, 400);
	_cleanup_resp_ struct http_resp g = http_req(&sbx_it, "GET", path, NULL, NULL);
	assert_status(g, 200);
	cr_expect(!strstr(g.body, patch + 9), "the refused PATCH changed the sandbox: %s", g.body);
}

/* No resolver without outbound permission; a PATCH of network changes the next run. */
Test(network, a_resolver_only_with_outbound_and_patch_applies_to_the_next_run)
{
	char id[128], path[256];
	const char *code =
		"import os, socket\n"
		"rc = open('/etc/resolv.conf').read() if os.path.exists('/etc/resolv.conf') else ''\n"
		"print('RESOLVER' if 'nameserver' in rc else 'no-resolver')\n"
		"print('IFACES', sorted(n for _, n in socket.if_nameindex()))\n";

	sbx_require_bwrap();
	sbx_create(&sbx_it, "{\"name\":\"flip\",\"network\":false}", id, sizeof(id));
	_cleanup_resp_ struct http_resp a = run_py(id, code, 20000);
	assert_status(a, 200);
	const char *out = s_or_empty(js_str(a.json, "stdout"));
	cr_expect(strstr(out, "no-resolver"), "no network, yet a resolver: %s", out);
	cr_expect(strstr(out, "IFACES ['lo']"), "no network, yet an interface: %s", out);

	snprintf(path, sizeof(path), "/api/sandbox/sandboxes/%s", id);
	_cleanup_resp_ struct http_resp p = http_req(&sbx_it, "PATCH", path, "{\"network\":true}", NULL);
	assert_status(p, 200);
	_cleanup_resp_ struct http_resp b = run_py(id, code, 20000);
	assert_status(b, 200);
	out = s_or_empty(js_str(b.json, "stdout"));
	cr_log_info("after PATCH:\n%s%s", out, s_or_empty(js_str(b.json, "stderr")));
	cr_expect(!strstr(out, "IFACES ['lo']") && strstr(out, "IFACES"),
	          "network: true did not give the next run an interface: %s", out);

	_cleanup_resp_ struct http_resp q = http_req(&sbx_it, "PATCH", path, "{\"network\":false}", NULL);
	assert_status(q, 200);
	_cleanup_resp_ struct http_resp c = run_py(id, code, 20000);
	assert_status(c, 200);
	out = s_or_empty(js_str(c.json, "stdout"));
	cr_expect(strstr(out, "no-resolver") && strstr(out, "IFACES ['lo']"),
	          "turning the network off did not take: %s", out);
}

/* GET /caps lists the fences this machine builds; a sandbox's note is honest about ports. */
Test(network, caps_lists_the_fences_and_notes_say_what_ports_mean)
{
	_cleanup_resp_ struct http_resp c = http_req(&sbx_it, "GET", "/api/sandbox/caps", NULL, NULL);
	assert_status(c, 200);
	yajl_val f = js_get(c.json, "network.fences");
	cr_assert(f && YAJL_IS_ARRAY(f), "no network.fences: %s", c.body);
	bool none = false;
	for (size_t i = 0; i < f->u.array.len; i++)
		if (YAJL_IS_STRING(f->u.array.values[i]) &&
		    strcmp(f->u.array.values[i]->u.string, "none") == 0)
			none = true;
	cr_expect(none, "%s", c.body);

	_cleanup_resp_ struct http_resp s = http_req(&sbx_it, "POST", "/api/sandbox/sandboxes",
	                                              "{\"name\":\"n\",\"ports\":{\"connect\":[443]}}", NULL);
	cr_assert(s.status == 200 || s.status == 201, "%s", s.body);
	cr_expect(strstr(s_or_empty(js_str(s.json, "note")), "port"), "%s", s.body);
}

/* A jail built ahead for a network sandbox (pasta attached before the run is asked for)
 * keeps the whole fence: the second run, given such a jail, still reaches only the
 * loopback port named, and its interface is there. */
Test(network, a_jail_built_ahead_keeps_its_network_fence)
{
	uint16_t given = 0, other = 0;
	_cleanup_close_ int lg = host_listener(AF_INET, &given);
	_cleanup_close_ int lo = host_listener(AF_INET, &other);
	char id[128], json[256], code[1024];

	sbx_require_bwrap();
	snprintf(json, sizeof(json), "{\"name\":\"ahead\",\"network\":true,\"ports\":{\"loopback\":[%u]}}",
	         given);
	sbx_create(&sbx_it, json, id, sizeof(id));
	snprintf(code, sizeof(code),
	         "import socket\n"
	         "def tryc(port, tag):\n"
	         "    try:\n"
	         "        socket.create_connection(('127.0.0.1', port), timeout=3); print('CONNECTED', tag)\n"
	         "    except OSError as e:\n"
	         "        print('refused', tag, e.errno)\n"
	         "tryc(%u, 'other'); tryc(%u, 'GIVEN')\n"
	         "print('IFACES', len(socket.if_nameindex()))\n",
	         other, given);
	for (int i = 0; i < 2; i++) {
		_cleanup_resp_ struct http_resp r = run_py(id, code, 20000);
		assert_status(r, 200);
		const char *out = s_or_empty(js_str(r.json, "stdout"));
		cr_log_info("run %d:\n%s%s", i, out, s_or_empty(js_str(r.json, "stderr")));
		cr_expect(strstr(out, "refused other") && strstr(out, "CONNECTED GIVEN"), "run %d: %s", i, out);
		cr_expect(strstr(out, "IFACES 2"), "run %d: %s", i, out);
		cr_expect(accepted_any(lg), "run %d: the given-back listener saw nothing", i);
		sleep_ms(500); /* the next jail is built ahead meanwhile, pasta and all */
	}
	cr_expect(!accepted_any(lo), "a host listener accepted a connection from the jail");
}
