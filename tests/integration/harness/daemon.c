/* Start and stop a real sbxd for one test, and the runner-side report hooks that print its
 * log when the test did not pass.
 *
 * Layout: $SBX_IT_LOGDIR/<suite>.<test>/{data/, sbxd.log}. SBX_IT_LOGDIR is set by the
 * runner's PRE_ALL hook (workers inherit the environment), so the runner can find a
 * crashed or timed-out worker's log by name. sbxd gets PR_SET_PDEATHSIG(SIGTERM): a worker
 * killed by Criterion's timeout still takes its daemon down. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <criterion/hooks.h>

#include "cleanup.h"
#include "harness.h"

#define SBX_IT_ENV_MAX 256u /* entries of the environment handed to sbxd */

extern char **environ;

struct sbxd sbx_it = { .pid = -1 };

void sleep_ms(unsigned ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

unsigned long long mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000ull + (unsigned long long)ts.tv_nsec / 1000000ull;
}

void rand_alnum(char *buf, size_t n)
{
	static const char abc[] = "abcdefghijklmnopqrstuvwxyz0123456789";
	unsigned char raw[256];
	if (n > sizeof(raw))
		n = sizeof(raw);
	FILE *f = fopen("/dev/urandom", "re");
	if (!f || fread(raw, 1, n, f) != n) {
		for (size_t i = 0; i < n; i++) /* fallback; uniqueness is all a test needs */
			raw[i] = (unsigned char)(rand() ^ (int)getpid() ^ (int)mono_ms());
	}
	if (f)
		fclose(f);
	for (size_t i = 0; i < n; i++)
		buf[i] = abc[raw[i] % (sizeof(abc) - 1)];
	buf[n] = '\0';
}

static int rm_cb(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	remove(path);
	return 0;
}

static void rm_rf(const char *path)
{
	if (path[0])
		nftw(path, rm_cb, 32, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
}

static const char *logdir(void)
{
	const char *d = getenv("SBX_IT_LOGDIR");
	return d && d[0] ? d : "/tmp";
}

static int find_bin_dir(char *buf, size_t bufsz)
{
	const char *env = getenv("SBX_BIN_DIR");
	if (env && env[0]) {
		snprintf(buf, bufsz, "%s", env);
		return 0;
	}
	/* tests live in <build>/tests, binaries in <build>/bin */
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n < 0)
		return -errno;
	exe[n] = '\0';
	char *slash = strrchr(exe, '/');
	if (slash)
		*slash = '\0';
	snprintf(buf, bufsz, "%s/../bin", exe);
	return 0;
}

void sbxd_dump_log(const struct sbxd *d)
{
	if (!d->log_path[0])
		return;
	FILE *f = fopen(d->log_path, "re");
	fprintf(stderr, "----- sbxd log %s -----\n", d->log_path);
	if (f) {
		char line[4096];
		while (fgets(line, sizeof(line), f))
			fputs(line, stderr);
		fclose(f);
	} else {
		fprintf(stderr, "(cannot open: %s)\n", strerror(errno));
	}
	fprintf(stderr, "----- end of sbxd log -----\n");
}

static int read_token(struct sbxd *d)
{
	char path[PATH_MAX + 16];
	snprintf(path, sizeof(path), "%s/api.token", d->data_dir);
	FILE *f = fopen(path, "re");
	if (!f)
		return -errno;
	size_t n = fread(d->token, 1, sizeof(d->token) - 1, f);
	fclose(f);
	d->token[n] = '\0';
	while (n > 0 && (d->token[n - 1] == '\n' || d->token[n - 1] == '\r' ||
			 d->token[n - 1] == ' '))
		d->token[--n] = '\0';
	return n > 0 ? 0 : -EAGAIN;
}

static void make_root(struct sbxd *d)
{
	const char *suite = criterion_current_suite ? criterion_current_suite->name : "suite";
	const char *test = criterion_current_test ? criterion_current_test->name : "test";
	char r[9];
	rand_alnum(r, 8);
	/* logdir-based names are what the runner's hook looks for; /tmp fallback is unique */
	if (getenv("SBX_IT_LOGDIR"))
		snprintf(d->root, sizeof(d->root), "%s/%s.%s%s%s", logdir(), suite, test,
			 d->tag[0] ? "." : "", d->tag);
	else
		snprintf(d->root, sizeof(d->root), "/tmp/sbx-it.%s.%s.%s%s", suite, test, r, d->tag);
}

static int sbxd_spawn(struct sbxd *d);

int sbxd_start(struct sbxd *d)
{
	int r;
	pid_t keep_pid = -1;
	char docker[sizeof(d->docker)], bwrap[sizeof(d->bwrap)], host[sizeof(d->listen_host)];
	const char *extra[SBXD_EXTRA_ARGS_MAX + 1];
	char tag[sizeof(d->tag)];
	memcpy(tag, d->tag, sizeof(tag));
	memcpy(docker, d->docker, sizeof(docker));
	memcpy(bwrap, d->bwrap, sizeof(bwrap));
	memcpy(host, d->listen_host, sizeof(host));
	memcpy(extra, d->extra_args, sizeof(extra));
	memset(d, 0, sizeof(*d));
	/* the settings a caller makes first */
	memcpy(d->docker, docker, sizeof(docker));
	memcpy(d->bwrap, bwrap, sizeof(bwrap));
	memcpy(d->listen_host, host, sizeof(host));
	memcpy(d->extra_args, extra, sizeof(extra));
	memcpy(d->tag, tag, sizeof(tag));
	d->pid = keep_pid;
	if ((r = find_bin_dir(d->bin_dir, sizeof(d->bin_dir))) < 0)
		return r;
	make_root(d);
	rm_rf(d->root); /* a previous crashed run of the same test */
	/* 0711: the jail runs as its own uid and must traverse to its workdir */
	if (mkdir(d->root, 0711) < 0 && errno != EEXIST)
		return -errno;
	chmod(d->root, 0711);
	snprintf(d->data_dir, sizeof(d->data_dir), "%s/data", d->root);
	snprintf(d->log_path, sizeof(d->log_path), "%s/sbxd.log", d->root);
	if (mkdir(d->data_dir, 0711) < 0)
		return -errno;
	char rnd[17];
	rand_alnum(rnd, 16);
	snprintf(d->secret, sizeof(d->secret), "s3cr3t-%s", rnd);
	return sbxd_spawn(d);
}

/* fork+exec sbxd on d->data_dir with a fresh port, and wait for /health 200 */
static int sbxd_spawn(struct sbxd *d)
{
	int r;
	if ((r = free_port(&d->port)) < 0)
		return r;
	char sbxd_path[PATH_MAX], listen[96], secret_env[96];
	snprintf(sbxd_path, sizeof(sbxd_path), "%s/sbxd", d->bin_dir);
	if (access(sbxd_path, X_OK) < 0) {
		fprintf(stderr, "harness: %s: %s\n", sbxd_path, strerror(errno));
		return -ENOENT;
	}
	snprintf(listen, sizeof(listen), "%s:%u", d->listen_host[0] ? d->listen_host : "127.0.0.1",
		 d->port);
	snprintf(secret_env, sizeof(secret_env), "SBX_TEST_SECRET=%s", d->secret);

	/* sbxd's environment = ours plus the secret that must never reach a jail */
	const char *envp[SBX_IT_ENV_MAX + 2];
	size_t ne = 0;
	for (char **e = environ; *e && ne < SBX_IT_ENV_MAX; e++)
		if (strncmp(*e, "SBX_TEST_SECRET=", 16) != 0)
			envp[ne++] = *e;
	envp[ne++] = secret_env;
	envp[ne] = NULL;
	const char *argv[11 + SBXD_EXTRA_ARGS_MAX] = { sbxd_path, "--foreground", "--listen", listen,
						      "--data-dir", d->data_dir };
	size_t na = 6;
	if (d->docker[0]) {
		argv[na++] = "--docker";
		argv[na++] = d->docker;
	}
	if (d->bwrap[0]) {
		argv[na++] = "--bwrap";
		argv[na++] = d->bwrap;
	}
	for (size_t i = 0; i < SBXD_EXTRA_ARGS_MAX && d->extra_args[i]; i++)
		argv[na++] = d->extra_args[i];
	argv[na] = NULL;

	fflush(NULL);
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		if (getppid() != parent)
			_exit(127);
		int lf = open(d->log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
		int nf = open("/dev/null", O_RDONLY | O_CLOEXEC);
		if (lf < 0 || nf < 0 || dup2(nf, 0) < 0 || dup2(lf, 1) < 0 || dup2(lf, 2) < 0)
			_exit(127);
		/* the test process may hold sockets and pipes; the daemon gets none of them */
		for (int fd = 3; fd < 1024; fd++)
			close(fd);
		sigset_t all;
		sigemptyset(&all);
		sigprocmask(SIG_SETMASK, &all, NULL);
		execve(sbxd_path, (char *const *)argv, (char *const *)envp);
		_exit(127);
	}
	d->pid = pid;

	unsigned long long deadline = mono_ms() + SBXD_START_TIMEOUT_MS;
	int last = -EAGAIN;
	while (mono_ms() < deadline) {
		int st;
		if (waitpid(pid, &st, WNOHANG) == pid) {
			d->pid = -1;
			d->exit_status = st;
			fprintf(stderr, "harness: sbxd exited during start-up (status 0x%x)\n", st);
			return -ECHILD;
		}
		if (read_token(d) == 0) {
			struct http_resp h = http_req(d, "GET", "/api/sandbox/health", NULL, NULL);
			last = h.status;
			http_resp_clear(&h);
			if (last == 200)
				return 0;
		}
		sleep_ms(50);
	}
	fprintf(stderr, "harness: sbxd /health did not answer 200 within %u ms (last %d)\n",
		SBXD_START_TIMEOUT_MS, last);
	return -ETIMEDOUT;
}

int sbxd_restart(struct sbxd *d)
{
	if (d->pid > 0 || !d->data_dir[0])
		return -EBUSY;
	return sbxd_spawn(d);
}

void sbxd_stop(struct sbxd *d)
{
	if (d->pid > 0) {
		kill(d->pid, SIGTERM);
		unsigned long long deadline = mono_ms() + SBXD_STOP_TIMEOUT_MS;
		int st;
		pid_t w = 0;
		while ((w = waitpid(d->pid, &st, WNOHANG)) == 0 && mono_ms() < deadline)
			sleep_ms(20);
		if (w == 0) {
			fprintf(stderr, "harness: sbxd %d ignored SIGTERM for %u ms; SIGKILL\n",
				(int)d->pid, SBXD_STOP_TIMEOUT_MS);
			kill(d->pid, SIGKILL);
			waitpid(d->pid, &st, 0);
		}
		d->pid = -1;
	}
	if (d->data_dir[0])
		rm_rf(d->data_dir);
	if (!getenv("SBX_IT_LOGDIR") && d->log_path[0])
		fprintf(stderr, "harness: sbxd log kept at %s\n", d->log_path);
}

void sbx_it_init(void)
{
	int r = sbxd_start(&sbx_it);
	if (r < 0) {
		sbxd_dump_log(&sbx_it);
		sbxd_stop(&sbx_it);
		cr_assert_fail("sbxd did not start: %s", strerror(-r));
	}
}

void sbx_it_fini(void)
{
	sbxd_stop(&sbx_it);
}

void sbx_require_bwrap(void)
{
	static const char *const paths[] = { "/usr/bin/bwrap", "/usr/local/bin/bwrap", "/bin/bwrap" };
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++)
		if (access(paths[i], X_OK) == 0)
			return;
	printf("SKIP: bwrap not installed\n");
	fflush(stdout);
	cr_skip_test("SKIP: bwrap not installed");
}

/* ---- sandbox helpers ------------------------------------------------------------------ */

void sbx_create(const struct sbxd *d, const char *json, char *ret_id, size_t idsz)
{
	const char *body = json ? json : "{\"name\":\"t\"}";
	char *net_body = NULL;
	/* SBX_TEST_NETWORK=1 runs a suite again with the network on (network: true) for every
	 * sandbox that does not choose its network itself: each escape attempt must fail from
	 * a jail with the network on as well */
	const char *net = getenv("SBX_TEST_NETWORK");
	if (net && strcmp(net, "1") == 0 && body[0] == '{' && !strstr(body, "\"network\"") &&
	    !strstr(body, "\"ports\"") && !strstr(body, "\"proxy\"") && !strstr(body, "docker") &&
	    asprintf(&net_body, "{\"network\":true%s%s", body[1] == '}' ? "" : ",", body + 1) < 0)
		net_body = NULL;
	_cleanup_resp_ struct http_resp r =
		http_req(d, "POST", "/api/sandbox/sandboxes", net_body ? net_body : body, NULL);
	free(net_body);
	cr_assert(r.status == 200 || r.status == 201, "create sandbox: status %d body %s",
		  r.status, r.body ? r.body : "(none)");
	const char *id = js_str(r.json, "id");
	cr_assert(id && id[0], "create sandbox: no id in %s", r.body ? r.body : "(none)");
	snprintf(ret_id, idsz, "%s", id);
}

struct http_resp sbx_run(const struct sbxd *d, const char *id, const char *json_body)
{
	char path[256];
	snprintf(path, sizeof(path), "/api/sandbox/sandboxes/%s/runs", id);
	return http_req(d, "POST", path, json_body, NULL);
}

int sbx_workdir_path(const struct sbxd *d, const char *id, char *buf, size_t bufsz)
{
	int n = snprintf(buf, bufsz, "%s/sandboxes/%s", d->data_dir, id);
	return n < 0 || (size_t)n >= bufsz ? -ENAMETOOLONG : 0;
}

long sbx_workdir_uid(const struct sbxd *d, const char *id)
{
	char p[PATH_MAX];
	struct stat st;
	if (sbx_workdir_path(d, id, p, sizeof(p)) < 0)
		return -ENAMETOOLONG;
	if (stat(p, &st) < 0)
		return -errno;
	return (long)st.st_uid;
}

/* ---- the runner's report hooks -------------------------------------------------------- */

static char it_logdir[256];

ReportHook(PRE_ALL)(struct criterion_test_set *set)
{
	(void)set;
	snprintf(it_logdir, sizeof(it_logdir), "/tmp/sbx-it-logs.%d", (int)getpid());
	if (mkdir(it_logdir, 0711) == 0 || errno == EEXIST) {
		chmod(it_logdir, 0711);
		setenv("SBX_IT_LOGDIR", it_logdir, 1);
	}
}

static void report_test(struct criterion_test_stats *stats)
{
	if (!it_logdir[0] || !stats || !stats->test)
		return;
	char root[SBX_IT_ROOT_MAX], log[SBX_IT_ROOT_MAX + 16];
	snprintf(root, sizeof(root), "%s/%s.%s", it_logdir, stats->test->category,
		 stats->test->name);
	snprintf(log, sizeof(log), "%s/sbxd.log", root);
	bool bad = stats->test_status == CR_STATUS_FAILED || stats->crashed || stats->timed_out;
	if (bad && access(log, R_OK) == 0) {
		struct sbxd tmp = { .pid = -1 };
		snprintf(tmp.log_path, sizeof(tmp.log_path), "%s", log);
		fprintf(stderr, "%s::%s did not pass:\n", stats->test->category, stats->test->name);
		sbxd_dump_log(&tmp);
	}
	rm_rf(root);
}

ReportHook(POST_FINI)(struct criterion_test_stats *stats)
{
	report_test(stats);
}

/* a crashed or timed-out worker never reaches its fini; report_test is idempotent */
ReportHook(TEST_CRASH)(struct criterion_test_stats *stats)
{
	report_test(stats);
}

ReportHook(POST_ALL)(struct criterion_global_stats *stats)
{
	(void)stats;
	if (it_logdir[0])
		rm_rf(it_logdir);
}
