/* launcher/portown.c: who holds a port, through /proc (this machine) and through lsof's
 * field output (macOS), the latter up to the OS boundary with fake lsof programs. */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "portown.h"
#include "util.h"

static char dir[64];

static void setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/sbx-portown-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
}

static void teardown(void)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_expect_eq(system(cmd), 0);
}

TestSuite(portown, .init = setup, .fini = teardown, .timeout = 30);

/* a listening socket of ours on 127.0.0.1: its port */
static int listener(uint16_t *port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t n = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	cr_assert(fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 && listen(fd, 1) == 0);
	cr_assert_eq(getsockname(fd, (struct sockaddr *)&a, &n), 0);
	*port = ntohs(a.sin_port);
	return fd;
}

/* a fake lsof: records its arguments in dir/args, prints `out`, exits `rc` */
static void fake_lsof(const char *body, char *path, size_t sz)
{
	snprintf(path, sz, "%s/lsof", dir);
	FILE *f = fopen(path, "w");
	cr_assert(f);
	fprintf(f, "#!/bin/sh\necho \"$@\" > %s/args\n%s\n", dir, body);
	fclose(f);
	cr_assert_eq(chmod(path, 0755), 0);
}

static void args_are(const char *want)
{
	char p[128], got[256] = "";
	snprintf(p, sizeof(p), "%s/args", dir);
	FILE *f = fopen(p, "r");
	cr_assert(f, "the fake lsof did not run");
	cr_assert(fgets(got, sizeof(got), f));
	fclose(f);
	got[strcspn(got, "\n")] = '\0';
	cr_expect_str_eq(got, want);
}

Test(portown, proc_finds_our_own_listener_and_its_cwd)
{
	uint16_t port;
	int fd = listener(&port);
	pid_t pid = 0;
	char cwd[PATH_MAX], here[PATH_MAX];
	cr_expect_eq(portown_proc(port), getpid());
	uint32_t ports[16];
	size_t n = portown_listening(getpid(), ports, 16);
	bool seen = false;
	for (size_t i = 0; i < n; i++)
		seen |= ports[i] == port;
	cr_expect(seen, "%u not among our %zu listening ports", port, n);
	cr_assert_eq(portown_owner(port, &pid, cwd, sizeof(cwd)), 0);
	cr_expect_eq(pid, getpid());
	cr_assert(getcwd(here, sizeof(here)));
	cr_expect_str_eq(cwd, here);
	close(fd);
	cr_expect_eq(portown_proc(port), 0, "a closed port has no owner");
}

Test(portown, lsof_field_output_is_parsed)
{
	pid_t pid = 0;
	char name[64];
	cr_expect_eq(portown_parse_pid("p4242\nf3\n", &pid), 0);
	cr_expect_eq(pid, 4242);
	cr_expect_eq(portown_parse_pid("f3\nn*:8080\n", &pid), -ENOENT);
	cr_expect_eq(portown_parse_pid("pabc\n", &pid), -ENOENT);
	cr_expect_eq(portown_parse_pid("p0\n", &pid), -ENOENT);
	cr_expect_eq(portown_parse_pid("p99999999999\n", &pid), -ENOENT);
	cr_expect_eq(portown_parse_pid("", &pid), -ENOENT);
	cr_expect_eq(portown_parse_name("p1\nfcwd\nn/srv/my app\n", name, sizeof(name)), 0);
	cr_expect_str_eq(name, "/srv/my app");
	cr_expect_eq(portown_parse_name("p1\nfcwd\n", name, sizeof(name)), -ENOENT);
	char longer[200];
	memset(longer, 'x', sizeof(longer) - 1);
	longer[0] = 'n';
	longer[sizeof(longer) - 1] = '\0';
	cr_expect_eq(portown_parse_name(longer, name, sizeof(name)), -ENOENT, "a name longer than the buffer");
}

Test(portown, lsof_is_asked_the_right_questions)
{
	char lsof[128], cwd[128];
	fake_lsof("printf 'p4242\\nf9\\n'", lsof, sizeof(lsof));
	cr_expect_eq(portown_lsof(lsof, 8080), 4242);
	args_are("-nP -iTCP:8080 -sTCP:LISTEN -Fp");
	fake_lsof("printf 'p4242\\nfcwd\\nn/srv/app\\n'", lsof, sizeof(lsof));
	cr_expect_eq(portown_lsof_cwd(lsof, 4242, cwd, sizeof(cwd)), 0);
	cr_expect_str_eq(cwd, "/srv/app");
	args_are("-a -p 4242 -d cwd -Fn");
	fake_lsof("exit 1", lsof, sizeof(lsof)); /* lsof's answer when nothing listens */
	cr_expect_eq(portown_lsof(lsof, 8080), 0);
}

Test(portown, a_hanging_lsof_is_cut_at_its_deadline)
{
	char lsof[128];
	fake_lsof("exec sleep 20", lsof, sizeof(lsof));
	uint64_t t0 = now_ms();
	cr_expect_eq(portown_lsof(lsof, 8080), -ETIMEDOUT);
	uint64_t took = now_ms() - t0;
	cr_expect(took >= PORTOWN_LSOF_TIMEOUT_MS && took < PORTOWN_LSOF_TIMEOUT_MS + 3000,
	          "took %llu ms", (unsigned long long)took);
	cr_expect_lt(portown_lsof("/nonexistent/lsof", 8080), 0);
}
