/* What a jail can and cannot touch, observed from the host: writes land only in the
 * workdir, the jail is not root and cannot read root's files, sbxd's environment does not
 * leak in, and a no-network sandbox cannot reach a host listener. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "cleanup.h"
#include "harness.h"

static void setup(void)
{
	sbx_require_bwrap();
	sbx_it_init();
}

TestSuite(isolation, .init = setup, .fini = sbx_it_fini, .timeout = 60);

static struct http_resp run(const char *id, const char *lang, const char *code)
{
	_cleanup_free_ char *body = run_body(lang, code, NULL, 10000);
	cr_assert(body);
	return sbx_run(&sbx_it, id, body);
}

static const char *s_or_empty(const char *s)
{
	return s ? s : "";
}

Test(isolation, writes_only_inside_workdir)
{
	char id[128], rnd[13];
	sbx_create(&sbx_it, "{\"name\":\"writes\",\"fsMode\":\"strict\",\"network\":false}", id,
		   sizeof(id));
	char workdir[PATH_MAX];
	cr_assert(sbx_workdir_path(&sbx_it, id, workdir, sizeof(workdir)) == 0);
	rand_alnum(rnd, 12);

	char tmp_out[128], data_out[PATH_MAX], sib_out[PATH_MAX], code[3 * PATH_MAX + 1024];
	snprintf(tmp_out, sizeof(tmp_out), "/tmp/outside_%s", rnd);
	snprintf(data_out, sizeof(data_out), "%s/outside_%s", sbx_it.data_dir, rnd);
	snprintf(sib_out, sizeof(sib_out), "%s/sandboxes/outside_%s", sbx_it.data_dir, rnd);
	/* each attempt prints ok/fail so the output explains a failure; the host paths go in
	 * as Python literals (they hold no quote characters) */
	snprintf(code, sizeof(code),
		 "import os\n"
		 "def w(p):\n"
		 "    try:\n"
		 "        with open(p, 'w') as f:\n"
		 "            f.write('x')\n"
		 "        print('ok', p)\n"
		 "    except OSError as e:\n"
		 "        print('fail', p, e.errno)\n"
		 "w('inside_%s.txt')\n"
		 "w('%s')\nw('%s')\nw('%s')\nw('/usr/outside_%s')\nw('/etc/outside_%s')\n"
		 "w(os.path.join(os.getcwd(), '..', 'outside2_%s'))\n",
		 rnd, tmp_out, data_out, sib_out, rnd, rnd, rnd);

	_cleanup_resp_ struct http_resp r = run(id, "python", code);
	assert_status(r, 200);
	const char *out = s_or_empty(js_str(r.json, "stdout"));
	cr_log_info("jail said:\n%s%s", out, s_or_empty(js_str(r.json, "stderr")));

	/* the write inside the workdir is visible on the host */
	char inside[PATH_MAX + 64];
	snprintf(inside, sizeof(inside), "%s/inside_%s.txt", workdir, rnd);
	struct stat st;
	cr_expect(stat(inside, &st) == 0 && st.st_size == 1, "%s missing on the host; jail: %s",
		  inside, out);

	/* nothing outside it reached the host */
	const char *host_paths[] = { tmp_out, data_out, sib_out };
	for (size_t i = 0; i < 3; i++)
		cr_expect(access(host_paths[i], F_OK) < 0, "%s appeared on the host", host_paths[i]);
	char p[PATH_MAX + 64];
	snprintf(p, sizeof(p), "/usr/outside_%s", rnd);
	cr_expect(access(p, F_OK) < 0, "%s appeared on the host", p);
	snprintf(p, sizeof(p), "/etc/outside_%s", rnd);
	cr_expect(access(p, F_OK) < 0, "%s appeared on the host", p);
	snprintf(p, sizeof(p), "%s/sandboxes/outside2_%s", sbx_it.data_dir, rnd);
	cr_expect(access(p, F_OK) < 0, "%s appeared on the host", p);

	/* and the system roots refuse writes inside the jail too */
	char want[128];
	snprintf(want, sizeof(want), "fail /usr/outside_%s", rnd);
	cr_expect(strstr(out, want), "a write to /usr succeeded in the jail: %s", out);
	snprintf(want, sizeof(want), "fail /etc/outside_%s", rnd);
	cr_expect(strstr(out, want), "a write to /etc succeeded in the jail: %s", out);
	unlink(tmp_out);
	unlink(data_out);
	unlink(sib_out);
}

Test(isolation, jail_is_not_root)
{
	char id[128];
	sbx_create(&sbx_it, "{\"name\":\"uid\"}", id, sizeof(id));
	char workdir[PATH_MAX], secret_path[PATH_MAX + 32], marker[17];
	cr_assert(sbx_workdir_path(&sbx_it, id, workdir, sizeof(workdir)) == 0);
	rand_alnum(marker, 16);

	/* a root-owned 0600 file placed inside the jail's own workdir after creation */
	snprintf(secret_path, sizeof(secret_path), "%s/rootonly.txt", workdir);
	int fd = open(secret_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	cr_assert(fd >= 0, "create %s: %s", secret_path, strerror(errno));
	cr_assert(write(fd, marker, strlen(marker)) == (ssize_t)strlen(marker));
	close(fd);
	cr_assert(chown(secret_path, 0, 0) == 0 && chmod(secret_path, 0600) == 0);

	_cleanup_resp_ struct http_resp r =
		run(id, "sh",
		    "echo uid=$(id -u)\n"
		    "cat rootonly.txt; echo rc1=$?\n"
		    "cat /etc/shadow; echo rc2=$?\n");
	assert_status(r, 200);
	const char *out = s_or_empty(js_str(r.json, "stdout"));
	cr_log_info("jail said:\n%s%s", out, s_or_empty(js_str(r.json, "stderr")));

	cr_assert(strstr(out, "uid="), "id -u did not run: %s", r.body);
	cr_expect(!strstr(out, "uid=0\n"), "the jail runs as uid 0: %s", out);
	cr_expect(!strstr(out, marker), "the jail read a root-owned 0600 file: %s", out);
	cr_expect(strstr(out, "rc1=") && !strstr(out, "rc1=0"), "cat rootonly.txt succeeded: %s",
		  out);
	cr_expect(strstr(out, "rc2=") && !strstr(out, "rc2=0"), "cat /etc/shadow succeeded: %s",
		  out);
	cr_expect(!strstr(out, "root:"), "shadow content leaked: %s", out);

	/* the root file is still intact on the host */
	char buf[64] = { 0 };
	fd = open(secret_path, O_RDONLY | O_CLOEXEC);
	cr_assert(fd >= 0);
	cr_expect(read(fd, buf, sizeof(buf) - 1) == (ssize_t)strlen(marker));
	close(fd);
	cr_expect_str_eq(buf, marker);
}

Test(isolation, daemon_environment_does_not_leak)
{
	char id[128];
	sbx_create(&sbx_it, "{\"name\":\"env\"}", id, sizeof(id));
	_cleanup_resp_ struct http_resp r = run(id, "sh", "env; cat /proc/self/environ | tr '\\0' '\\n'");
	assert_status(r, 200);
	const char *out = s_or_empty(js_str(r.json, "stdout"));
	cr_assert(strstr(out, "PATH="), "env did not run: %s", r.body);
	cr_expect(!strstr(out, sbx_it.secret), "sbxd's secret is visible in the jail: %s", out);
	cr_expect(!strstr(out, "SBX_TEST_SECRET"), "the variable name leaked: %s", out);

	_cleanup_resp_ struct http_resp p =
		run(id, "python", "import os\nprint(repr(dict(os.environ)))\n");
	assert_status(p, 200);
	out = s_or_empty(js_str(p.json, "stdout"));
	cr_assert(strstr(out, "PATH"), "python did not run: %s", p.body);
	cr_expect(!strstr(out, sbx_it.secret), "sbxd's secret is visible to python: %s", out);
}

Test(isolation, no_network_cannot_reach_host_loopback)
{
	/* the test's own listener on host loopback */
	_cleanup_close_ int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	cr_assert(lfd >= 0);
	struct sockaddr_in sa = { .sin_family = AF_INET };
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	socklen_t sl = sizeof(sa);
	cr_assert(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) == 0);
	cr_assert(getsockname(lfd, (struct sockaddr *)&sa, &sl) == 0);
	cr_assert(listen(lfd, 8) == 0);
	unsigned port = ntohs(sa.sin_port);

	char id[128], code[1024];
	sbx_create(&sbx_it, "{\"name\":\"nonet\",\"network\":false}", id, sizeof(id));
	snprintf(code, sizeof(code),
		 "import socket\n"
		 "for host in ('127.0.0.1', 'localhost'):\n"
		 "    try:\n"
		 "        s = socket.create_connection((host, %u), timeout=2)\n"
		 "        print('CONNECTED', host)\n"
		 "    except Exception as e:\n"
		 "        print('connect-failed', host, type(e).__name__, e)\n",
		 port);
	_cleanup_resp_ struct http_resp r = run(id, "python", code);
	assert_status(r, 200);
	const char *out = s_or_empty(js_str(r.json, "stdout"));
	cr_log_info("jail said:\n%s%s", out, s_or_empty(js_str(r.json, "stderr")));
	cr_expect(strstr(out, "connect-failed 127.0.0.1"), "no failure reported: %s", r.body);
	cr_expect(!strstr(out, "CONNECTED"), "the jail connected to the host: %s", out);

	int c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	cr_expect(c < 0 && (errno == EAGAIN || errno == EWOULDBLOCK),
		  "the host listener accepted a connection from the jail");
	if (c >= 0)
		close(c);
}

Test(isolation, network_on_still_no_host_loopback)
{
	_cleanup_close_ int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	cr_assert(lfd >= 0);
	struct sockaddr_in sa = { .sin_family = AF_INET };
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	socklen_t sl = sizeof(sa);
	cr_assert(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) == 0);
	cr_assert(getsockname(lfd, (struct sockaddr *)&sa, &sl) == 0);
	cr_assert(listen(lfd, 8) == 0);
	unsigned port = ntohs(sa.sin_port);

	char id[128], code[1024];
	sbx_create(&sbx_it, "{\"name\":\"net\",\"network\":true}", id, sizeof(id));
	/* neither the test's listener nor the daemon's own port (DESIGN.md §8, §9) */
	snprintf(code, sizeof(code),
		 "import socket\n"
		 "for port in (%u, %u):\n"
		 "    try:\n"
		 "        s = socket.create_connection(('127.0.0.1', port), timeout=2)\n"
		 "        print('CONNECTED', port)\n"
		 "    except Exception as e:\n"
		 "        print('connect-failed', port, type(e).__name__, e)\n",
		 port, (unsigned)sbx_it.port);
	_cleanup_resp_ struct http_resp r = run(id, "python", code);
	assert_status(r, 200); /* the pasta fence is built here: no refusal */
	const char *out = s_or_empty(js_str(r.json, "stdout"));
	cr_log_info("jail said:\n%s", out);
	cr_expect(strstr(out, "connect-failed"), "python did not report: %s", r.body);
	cr_expect(!strstr(out, "CONNECTED"), "the jail reached host loopback: %s", out);
	int c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	cr_expect(c < 0, "the host listener accepted a connection from a network:true jail");
	if (c >= 0)
		close(c);
}
