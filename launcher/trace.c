/* Language-level tracing (trace.h): a FIFO per run, read into an append-only log per
 * sandbox, with each run's range recorded. */
#include "trace.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "cleanup.h"
#include "log.h"
#include "util.h"

#define TRACE_DIR "traces"
#define TRACE_LOG "trace.log"

static char shim_dir[PATH_MAX];

void trace_init(const char *bin_dir)
{
	char p[PATH_MAX + 32];
	snprintf(p, sizeof(p), "%s/trace/sitecustomize.py", bin_dir);
	if (strlen(bin_dir) + 7 < sizeof(shim_dir) && access(p, R_OK) == 0)
		snprintf(shim_dir, sizeof(shim_dir), "%s/trace", bin_dir);
}

bool trace_available(void) { return shim_dir[0] != '\0'; }

/* <data>/traces/<sandbox_id>, made 0711 root when create (bwrap, as the jail uid, must
 * reach the FIFO inside); an fd of it, never through a link. */
static int sandbox_dir(struct launcher *L, const char *sandbox_id, bool create)
{
	_cleanup_close_ int data = open(L->data_dir, O_PATH | O_DIRECTORY | O_CLOEXEC), top = -1;
	int fd;
	if (data < 0)
		return -errno;
	if (create && mkdirat(data, TRACE_DIR, 0711) < 0 && errno != EEXIST)
		return -errno;
	if ((top = openat(data, TRACE_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
		return -errno;
	if (create && mkdirat(top, sandbox_id, 0711) < 0 && errno != EEXIST)
		return -errno;
	fd = openat(top, sandbox_id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	/* whatever the umask: bwrap, as the jail uid, walks through both to the FIFO */
	if (create && (fchmod(top, 0711) < 0 || fchmod(fd, 0711) < 0)) {
		int e = -errno;
		close(fd);
		return e;
	}
	return fd;
}

static bool line_ok(const char *s, size_t n)
{
	if (n < 2 || s[0] != '{' || s[n - 1] != '}')
		return false;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return false;
	return true;
}

void trace_emit(struct trace_run *t, const char *s, size_t n)
{
	char head[PROTO_ID_MAX + 32];
	struct iovec iov[3];
	struct stat st;
	int hl;

	if (!line_ok(s, n) || fstat(t->log, &st) < 0 || (uint64_t)st.st_size > TRACE_LOG_MAX) {
		t->dropped++;
		return;
	}
	hl = snprintf(head, sizeof(head), "%s %llu ", t->run_id, (unsigned long long)now_unix_ms());
	iov[0] = (struct iovec){ head, (size_t)hl };
	iov[1] = (struct iovec){ (void *)s, n };
	iov[2] = (struct iovec){ "\n", 1 };
	if (writev(t->log, iov, 3) != (ssize_t)(hl + n + 1))
		t->dropped++;
}

/* Split what arrived into lines; a line longer than TRACE_LINE_MAX is dropped whole. */
static void take(struct trace_run *t, const char *buf, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		char c = buf[i];
		if (c == '\n') {
			if (!t->skipping)
				trace_emit(t, t->partial, t->npartial);
			else
				t->dropped++;
			t->npartial = 0;
			t->skipping = false;
		} else if (!t->skipping) {
			if (t->npartial == TRACE_LINE_MAX)
				t->skipping = true;
			else
				t->partial[t->npartial++] = c;
		}
	}
}

static void drain(struct trace_run *t)
{
	char buf[16384];
	for (int i = 0; i < 64; i++) { /* a bounded share of the loop per wake-up */
		ssize_t n = read(t->fifo, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return;
		take(t, buf, (size_t)n);
	}
}

static void fifo_cb(evutil_socket_t fd, short what, void *arg) { drain(arg); }

static int env_merge(struct proto_strv *env, const struct sandbox *sb, const char *key,
                     const char *ours, const char *sep)
{
	char kv[PROTO_STR_MAX + 64];
	size_t kl = strlen(key);
	const char *theirs = NULL;
	for (uint32_t i = 0; i < sb->env.n; i++)
		if (strncmp(sb->env.v[i], key, kl) == 0 && sb->env.v[i][kl] == '=')
			theirs = sb->env.v[i] + kl + 1;
	snprintf(kv, sizeof(kv), "%s=%s%s%s", key, ours, theirs && *theirs ? sep : "",
	         theirs ? theirs : "");
	return proto_strv_push(env, kv);
}

int trace_prepare(struct launcher *L, const struct sandbox *sb, const char *run_id, uid_t uid,
                  struct trace_run *t, struct proto_strv *binds, struct proto_strv *env)
{
	_cleanup_close_ int dir = -1;
	char name[PROTO_ID_MAX + 8], kv[PROTO_ID_MAX + 32];
	struct stat st;
	int r;

	*t = (struct trace_run){ .fifo = -1, .log = -1 };
	if (!sb->tracing)
		return 0;
	if (sb->tracing != SBX_TRACING_SYSCALLS && !trace_available())
		return -ENOENT;
	snprintf(t->run_id, sizeof(t->run_id), "%s", run_id);
	snprintf(name, sizeof(name), "%s.fifo", run_id);
	if ((dir = sandbox_dir(L, sb->id, true)) < 0)
		return dir;
	if ((t->log = openat(dir, TRACE_LOG, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC,
	                     0600)) < 0 ||
	    fstat(t->log, &st) < 0) {
		r = -errno;
		goto fail;
	}
	t->start = st.st_size;
	if (sb->tracing == SBX_TRACING_SYSCALLS) { /* the launcher writes the events itself */
		t->on = true;
		return 0;
	}
	unlinkat(dir, name, 0);
	if (mkfifoat(dir, name, 0600) < 0 || (L->root && fchownat(dir, name, uid, uid, AT_SYMLINK_NOFOLLOW) < 0) ||
	    (t->fifo = openat(dir, name, O_RDWR | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC)) < 0) {
		r = -errno;
		goto fail;
	}
	snprintf(t->fifo_path, sizeof(t->fifo_path), "%s/" TRACE_DIR "/%s/%s", L->data_dir, sb->id, name);
	if (!(t->ev = event_new(L->base, t->fifo, EV_READ | EV_PERSIST, fifo_cb, t)) ||
	    event_add(t->ev, NULL) < 0) {
		r = -ENOMEM;
		goto fail;
	}
	snprintf(kv, sizeof(kv), "SBX_RUN_ID=%s", run_id);
	if ((r = proto_strv_push(binds, "--ro-bind")) < 0 || (r = proto_strv_push(binds, shim_dir)) < 0 ||
	    (r = proto_strv_push(binds, TRACE_JAIL_DIR)) < 0 || (r = proto_strv_push(binds, "--bind")) < 0 ||
	    (r = proto_strv_push(binds, t->fifo_path)) < 0 ||
	    (r = proto_strv_push(binds, TRACE_JAIL_FIFO)) < 0 ||
	    (r = proto_strv_push(env, "SBX_TRACE=" TRACE_JAIL_FIFO)) < 0 || (r = proto_strv_push(env, kv)) < 0 ||
	    (r = env_merge(env, sb, "PYTHONPATH", TRACE_JAIL_DIR, ":")) < 0 ||
	    (r = env_merge(env, sb, "NODE_OPTIONS", "--require " TRACE_JAIL_DIR "/preload.js", " ")) < 0)
		goto fail;
	t->on = true;
	return 0;
fail:
	trace_finish(t, NULL);
	return r;
}

void trace_finish(struct trace_run *t, struct run_result *res)
{
	struct stat st;
	if (t->fifo >= 0) {
		drain(t);
		if (t->npartial && !t->skipping) /* a last line without its newline */
			trace_emit(t, t->partial, t->npartial);
		t->npartial = 0;
	}
	if (t->ev) {
		event_free(t->ev);
		t->ev = NULL;
	}
	if (t->fifo >= 0) {
		close(t->fifo);
		t->fifo = -1;
	}
	if (t->fifo_path[0]) {
		unlink(t->fifo_path);
		t->fifo_path[0] = '\0';
	}
	if (t->log >= 0) {
		if (res && fstat(t->log, &st) == 0) {
			res->trace_start = t->start;
			res->trace_end = st.st_size;
		}
		close(t->log);
		t->log = -1;
	}
	if (t->dropped)
		log_info("run %s: %llu trace lines refused or lost", t->run_id,
		         (unsigned long long)t->dropped);
	t->on = false;
}

int trace_read(struct launcher *L, const char *sandbox_id, const char *run_id, int64_t start,
               int64_t end, uint64_t since_ms, size_t max, char **ret, size_t *ret_len,
               bool *ret_truncated)
{
	_cleanup_close_ int dir = sandbox_dir(L, sandbox_id, false), fd = -1;
	_cleanup_fclose_ FILE *f = NULL;
	_cleanup_free_ char *out = NULL, *line = NULL;
	size_t cap = 0, len = 0, rl = strlen(run_id ? run_id : "");
	int64_t pos = start < 0 ? 0 : start;
	ssize_t n;

	*ret = NULL;
	*ret_len = 0;
	*ret_truncated = false;
	if (dir < 0)
		return dir == -ENOENT ? -ENOENT : dir;
	if ((fd = openat(dir, TRACE_LOG, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) < 0)
		return -errno;
	if (lseek(fd, pos, SEEK_SET) < 0 || !(f = fdopen(fd, "re")))
		return -errno;
	fd = -1;
	while ((end < 0 || pos < end) && (n = getline(&line, &cap, f)) > 0) {
		char *sp = strchr(line, ' ');
		pos += n;
		if (!sp || (run_id && ((size_t)(sp - line) != rl || strncmp(line, run_id, rl) != 0)))
			continue;
		if (since_ms && strtoull(sp + 1, NULL, 10) < since_ms)
			continue;
		if (len + (size_t)n > max) {
			*ret_truncated = true;
			break;
		}
		char *grown = realloc(out, len + (size_t)n + 1);
		if (!grown)
			return -ENOMEM;
		out = grown;
		memcpy(out + len, line, (size_t)n);
		len += (size_t)n;
		out[len] = '\0';
	}
	*ret = steal_pointer(&out);
	*ret_len = len;
	return 0;
}

void trace_remove(struct launcher *L, const char *sandbox_id)
{
	_cleanup_close_ int data = open(L->data_dir, O_PATH | O_DIRECTORY | O_CLOEXEC), top = -1;
	int dir = sandbox_dir(L, sandbox_id, false);
	_cleanup_closedir_ DIR *d = dir >= 0 ? fdopendir(dir) : NULL;
	struct dirent *de;
	if (!d) {
		if (dir >= 0)
			close(dir);
		return;
	}
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			unlinkat(dirfd(d), de->d_name, 0);
	if (data >= 0 && (top = openat(data, TRACE_DIR, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) >= 0)
		unlinkat(top, sandbox_id, AT_REMOVEDIR);
}
