/* The files API's helper (files.h): the launcher decides which base a path walks into and
 * which uid does the I/O; a child opens the base, drops to that uid and lets openat2 keep
 * every step beneath it. */
#include "files.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/openat2.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <event2/event.h>

#include "cleanup.h"
#include "fence/mounts.h"
#include "log.h"
#include "util.h"

#define FILES_COPY_CHUNK (64u << 10)
#define FILES_TMP_TRIES  8u

/* What the child reports through its pipe. */
struct fres {
	int32_t perr; /* 0 or a PERR_* */
	char why[FILES_WHY_MAX];
	char type; /* f d l o */
	uint8_t truncated;
	uint32_t mode, count;
	uint64_t total, offset, length, mtime;
};

/* What the parent worked out for the child. */
struct fplan {
	uint32_t op;
	const char *base;  /* workdir or a mount's source */
	bool in_mount;
	uid_t jail_uid;
	bool drop;         /* the launcher is root: become the jail's uid */
	char rel[PROTO_STR_MAX + 2]; /* the path beneath base, "." for base itself */
	char parent[PROTO_STR_MAX + 2], name[PROTO_STR_MAX + 2]; /* rel split (WRITE, DELETE, MKDIR) */
	const struct msg_FILE_OP *req;
};

struct fjob {
	files_done_fn done;
	void *arg;
	pid_t pid;
	int res_r, out_fd;
	struct event *ev, *timer;
	uint32_t op;
	char path[PROTO_STR_MAX + 1];
};

static unsigned inflight;

/* ---- paths ---------------------------------------------------------------------------- */

int files_split(const char *path, char *buf, size_t bufsz, const char **comp, size_t *ncomp)
{
	char *save = NULL;
	size_t n = 0;
	if (!path || path[0] == '/' || strlen(path) >= bufsz)
		return -EINVAL;
	memcpy(buf, path, strlen(path) + 1);
	for (char *c = strtok_r(buf, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
		if (strcmp(c, ".") == 0)
			continue;
		if (n == FILES_COMPONENTS_MAX)
			return -EINVAL;
		comp[n++] = c;
	}
	*ncomp = n;
	return 0;
}

static void join(const char *const *comp, size_t n, char *out, size_t outsz)
{
	size_t len = 0;
	out[0] = '\0';
	for (size_t i = 0; i < n && len < outsz; i++)
		len += (size_t)snprintf(out + len, outsz - len, "%s%s", i ? "/" : "", comp[i]);
	if (!n)
		snprintf(out, outsz, ".");
}

/* ---- the child ---------------------------------------------------------------------- */

static int beneath(int dirfd, const char *rel, int flags, mode_t mode)
{
	struct open_how how = { .flags = (uint64_t)(flags | O_CLOEXEC), .mode = mode,
		                .resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS };
	int fd = (int)syscall(SYS_openat2, dirfd, rel, &how, sizeof(how));
	return fd < 0 ? -errno : fd;
}

static void fail(struct fres *r, int e, const char *what)
{
	const char *why;
	switch (e) {
	case EXDEV:
		r->perr = PERR_FORBIDDEN;
		why = "the path leads outside the sandbox";
		break;
	case ELOOP:
		r->perr = PERR_FORBIDDEN;
		why = "the path goes through a link that may not be followed here";
		break;
	case ENOENT:
		r->perr = PERR_NOT_FOUND;
		why = "no such file or directory";
		break;
	case ENOTDIR:
		r->perr = PERR_INVALID_ARGUMENT;
		why = "a component of the path is not a directory";
		break;
	case EISDIR:
		r->perr = PERR_CONFLICT;
		why = "a directory is there";
		break;
	case EEXIST:
		r->perr = PERR_CONFLICT;
		why = "it already exists";
		break;
	case ENOTEMPTY:
		r->perr = PERR_CONFLICT;
		why = "the directory is not empty (delete with recursive)";
		break;
	case EACCES:
	case EPERM:
		r->perr = PERR_FORBIDDEN;
		why = "permission denied to the sandbox's uid";
		break;
	case EROFS:
		r->perr = PERR_FORBIDDEN;
		why = "read-only";
		break;
	case ENOSPC:
	case EDQUOT:
		r->perr = PERR_INSUFFICIENT_STORAGE;
		why = "no space left in the sandbox";
		break;
	case EFBIG:
		r->perr = PERR_PAYLOAD_TOO_LARGE;
		why = "the file would be too large";
		break;
	case ENAMETOOLONG:
		r->perr = PERR_INVALID_ARGUMENT;
		why = "a name is too long";
		break;
	default:
		r->perr = PERR_INTERNAL;
		why = strerror(e);
	}
	snprintf(r->why, sizeof(r->why), "%s: %s", what, why);
}

#define FAIL(r, e, what)                                                                           \
	do {                                                                                       \
		fail(r, e, what);                                                                  \
		return;                                                                            \
	} while (0)

static char type_of(mode_t m)
{
	return S_ISREG(m) ? 'f' : S_ISDIR(m) ? 'd' : S_ISLNK(m) ? 'l' : 'o';
}

static void fill_stat(struct fres *r, const struct stat *st)
{
	r->type = type_of(st->st_mode);
	r->total = (uint64_t)st->st_size;
	r->mode = st->st_mode & 07777;
	r->mtime = (uint64_t)st->st_mtime;
}

static int copy_range(int from, uint64_t off, uint64_t len, int to, uint64_t *done)
{
	char buf[FILES_COPY_CHUNK];
	*done = 0;
	while (*done < len) {
		size_t want = len - *done < sizeof(buf) ? (size_t)(len - *done) : sizeof(buf);
		ssize_t n = pread(from, buf, want, (off_t)(off + *done));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break; /* it shrank meanwhile: what there was */
		int w = write_all(to, buf, (size_t)n);
		if (w < 0)
			return w;
		*done += (uint64_t)n;
	}
	return 0;
}

static void do_read(const struct fplan *p, int base, const struct stat *bst, int out, struct fres *r)
{
	const struct msg_FILE_OP *q = p->req;
	_cleanup_close_ int fd = -1;
	struct stat st;
	uint64_t off, len, done;
	bool ranged = q->offset || q->length || q->suffix;
	int e;

	if (S_ISREG(bst->st_mode) && strcmp(p->rel, ".") == 0) {
		char self[64]; /* a file mount: the base is the file */
		snprintf(self, sizeof(self), "/proc/self/fd/%d", base);
		fd = open(self, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
		if (fd < 0)
			fd = -errno;
	} else {
		fd = beneath(base, p->rel, O_RDONLY | O_NONBLOCK | O_NOCTTY, 0);
	}
	if (fd < 0)
		FAIL(r, -fd, "read");
	if (fstat(fd, &st) < 0)
		FAIL(r, errno, "read");
	fill_stat(r, &st);
	if (!S_ISREG(st.st_mode)) {
		r->perr = PERR_INVALID_ARGUMENT;
		snprintf(r->why, sizeof(r->why), "read: not a regular file (%s)",
		         S_ISDIR(st.st_mode) ? "a directory: list it" : "a device, socket or pipe");
		return;
	}
	if (q->suffix)
		off = r->total > q->suffix ? r->total - q->suffix : 0;
	else
		off = q->offset;
	r->offset = off;
	if (off >= r->total) {
		r->length = 0; /* past the end: the API answers 416 for a range */
		return;
	}
	len = q->suffix ? r->total - off : q->length ? q->length : r->total - off;
	if (len > r->total - off)
		len = r->total - off;
	if (len > PROTO_FILE_MAX) {
		if (!ranged) {
			r->perr = PERR_PAYLOAD_TOO_LARGE;
			snprintf(r->why, sizeof(r->why),
			         "read: the file is %llu bytes; read at most %u at a time (a Range, or "
			         "offset and length)", (unsigned long long)r->total, PROTO_FILE_MAX);
			return;
		}
		len = PROTO_FILE_MAX; /* a range is answered with as much as one read carries */
	}
	if ((e = copy_range(fd, off, len, out, &done)) < 0)
		FAIL(r, -e, "read");
	r->length = done;
}

static void do_list(const struct fplan *p, int base, int out, struct fres *r)
{
	int fd = beneath(base, p->rel, O_RDONLY | O_DIRECTORY, 0);
	_cleanup_closedir_ DIR *d = NULL;
	_cleanup_fclose_ FILE *f = NULL;
	struct dirent *de;
	struct stat st;

	if (fd < 0)
		FAIL(r, -fd, "list");
	if (!(d = fdopendir(fd))) {
		close(fd);
		FAIL(r, errno, "list");
	}
	if (fstat(dirfd(d), &st) == 0)
		fill_stat(r, &st);
	if (!(f = fdopen(dup(out), "w")))
		FAIL(r, errno, "list");
	while ((de = readdir(d))) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (r->count == PROTO_FILE_LIST_MAX) {
			r->truncated = 1;
			break;
		}
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue; /* gone meanwhile */
		fprintf(f, "%c %llu %o %llu %s", type_of(st.st_mode), (unsigned long long)st.st_size,
		        (unsigned)(st.st_mode & 07777), (unsigned long long)st.st_mtime, de->d_name);
		fputc('\0', f);
		r->count++;
	}
	if (fflush(f) != 0)
		fail(r, errno, "list");
}

/* mkdir -p of comps (already split) beneath base; returns the last directory as O_PATH. */
static int make_dirs(int base, const char *rel, bool create)
{
	char buf[PROTO_STR_MAX + 2];
	const char *comp[FILES_COMPONENTS_MAX];
	size_t n;
	int cur = dup(base), e;

	if (cur < 0)
		return -errno;
	if (files_split(rel, buf, sizeof(buf), comp, &n) < 0) {
		close(cur);
		return -EINVAL;
	}
	for (size_t i = 0; i < n; i++) {
		int next;
		if (create && strcmp(comp[i], "..") != 0 && mkdirat(cur, comp[i], 0755) < 0 &&
		    errno != EEXIST) {
			e = -errno;
			close(cur);
			return e;
		}
		/* each step beneath the one before, which is beneath base */
		next = beneath(cur, comp[i], O_PATH | O_DIRECTORY, 0);
		close(cur);
		if (next < 0)
			return next;
		cur = next;
	}
	return cur;
}

static int parent_dir(const struct fplan *p, int base, bool create)
{
	if (create)
		return make_dirs(base, p->parent, true);
	return beneath(base, p->parent, O_PATH | O_DIRECTORY, 0);
}

static void do_write(const struct fplan *p, int base, int in, struct fres *r)
{
	_cleanup_close_ int dir = parent_dir(p, base, p->req->parents), fd = -1;
	char tmp[64];
	struct stat st;
	mode_t mode = 0644;
	uint64_t done;
	int e;

	if (dir < 0)
		FAIL(r, -dir, "write");
	if (fstatat(dir, p->name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
		if (S_ISDIR(st.st_mode))
			FAIL(r, EISDIR, "write");
		if (S_ISREG(st.st_mode))
			mode = st.st_mode & 0777;
	}
	for (unsigned t = 0; t < FILES_TMP_TRIES && fd < 0; t++) {
		uint32_t rnd = 0;
		if (getrandom(&rnd, sizeof(rnd), 0) < 0)
			rnd = (uint32_t)getpid() ^ t;
		snprintf(tmp, sizeof(tmp), ".sbx-write-%08x", rnd);
		fd = openat(dir, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
		if (fd < 0 && errno != EEXIST)
			FAIL(r, errno, "write");
	}
	if (fd < 0)
		FAIL(r, EEXIST, "write");
	if ((e = copy_range(in, 0, p->req->size, fd, &done)) < 0 || (e = done == p->req->size ? 0 : -EIO) < 0 ||
	    (fchmod(fd, mode) < 0 && (e = -errno)) || (fsync(fd) < 0 && (e = -errno)) ||
	    (renameat(dir, tmp, dir, p->name) < 0 && (e = -errno))) {
		unlinkat(dir, tmp, 0);
		FAIL(r, -e, "write");
	}
	if (fstat(fd, &st) == 0)
		fill_stat(r, &st);
	r->length = done;
}

static int remove_tree(int dir, const char *name, unsigned depth)
{
	_cleanup_closedir_ DIR *d = NULL;
	struct dirent *de;
	int fd, e = 0;

	if (depth > FILES_DELETE_DEPTH)
		return -ELOOP;
	if ((fd = openat(dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
		return -errno;
	if (!(d = fdopendir(fd))) {
		close(fd);
		return -errno;
	}
	while ((de = readdir(d)) && e == 0) {
		struct stat st;
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (S_ISDIR(st.st_mode))
			e = remove_tree(dirfd(d), de->d_name, depth + 1);
		else if (unlinkat(dirfd(d), de->d_name, 0) < 0)
			e = -errno;
	}
	if (e == 0 && unlinkat(dir, name, AT_REMOVEDIR) < 0)
		e = -errno;
	return e;
}

static void do_delete(const struct fplan *p, int base, struct fres *r)
{
	_cleanup_close_ int dir = parent_dir(p, base, false);
	struct stat st;
	int e;

	if (dir < 0)
		FAIL(r, -dir, "delete");
	if (fstatat(dir, p->name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		FAIL(r, errno, "delete");
	fill_stat(r, &st);
	if (!S_ISDIR(st.st_mode))
		e = unlinkat(dir, p->name, 0) < 0 ? -errno : 0;
	else if (p->req->recursive)
		e = remove_tree(dir, p->name, 0);
	else
		e = unlinkat(dir, p->name, AT_REMOVEDIR) < 0 ? -errno : 0;
	if (e < 0)
		fail(r, -e, "delete");
}

static void do_mkdir(const struct fplan *p, int base, struct fres *r)
{
	_cleanup_close_ int dir = parent_dir(p, base, p->req->parents), fd = -1;
	struct stat st;

	if (dir < 0)
		FAIL(r, -dir, "mkdir");
	if (mkdirat(dir, p->name, 0755) < 0)
		FAIL(r, errno, "mkdir");
	if ((fd = beneath(dir, p->name, O_PATH | O_DIRECTORY, 0)) >= 0 && fstat(fd, &st) == 0)
		fill_stat(r, &st);
}

static _Noreturn void child_main(const struct fplan *p, int res_w, int out, int in)
{
	struct open_how how = { .flags = O_PATH | O_CLOEXEC,
		                .resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS };
	struct fres r = { 0 };
	struct rlimit rl;
	struct stat st;
	const char *reason = NULL;
	uid_t uid;
	gid_t gid;
	int base, e;

	const int keep[3] = { res_w, out, in };
	/* nothing of the launcher's (the database, the channels) stays open here */
	close_fds_from(3, keep, 3);
	signal(SIGPIPE, SIG_DFL);
	umask(022);
	/* the base, as root: the workdir, or a mount's source checked as a run checks it */
	base = (int)syscall(SYS_openat2, AT_FDCWD, p->base, &how, sizeof(how));
	if (base < 0) {
		fail(&r, errno == ELOOP || errno == EXDEV ? EPERM : errno, "opening the base");
		goto out;
	}
	if (p->in_mount && (e = mount_check_opened(base, p->base, &reason)) < 0) {
		r.perr = PERR_FORBIDDEN;
		snprintf(r.why, sizeof(r.why), "the mount's source: %s", reason ? reason : strerror(-e));
		goto out;
	}
	if (fstat(base, &st) < 0) {
		fail(&r, errno, "opening the base");
		goto out;
	}
	/* the uid the jail has there: its own, or for a mount owned by another user the owner
	 * (the jail sees that mount idmapped to itself); root-owned mounts stay root's */
	uid = p->jail_uid;
	gid = p->jail_uid;
	if (p->in_mount && st.st_uid != 0) {
		uid = st.st_uid;
		gid = st.st_gid;
	}
	if (p->drop && (setgroups(0, NULL) < 0 || setresgid(gid, gid, gid) < 0 ||
	                setresuid(uid, uid, uid) < 0 || getuid() == 0 || geteuid() == 0)) {
		r.perr = PERR_INTERNAL;
		snprintf(r.why, sizeof(r.why), "dropping to the sandbox's uid failed");
		goto out;
	}
	prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	rl = (struct rlimit){ PROTO_FILE_MAX, PROTO_FILE_MAX };
	setrlimit(RLIMIT_FSIZE, &rl);
	signal(SIGXFSZ, SIG_IGN); /* EFBIG instead */
	if (S_ISREG(st.st_mode) && p->op != FOP_READ) {
		r.perr = PERR_INVALID_ARGUMENT;
		snprintf(r.why, sizeof(r.why), "a file mount is only read here; change it from inside the sandbox");
		goto out;
	}
	switch (p->op) {
	case FOP_READ:
		do_read(p, base, &st, out, &r);
		break;
	case FOP_LIST:
		do_list(p, base, out, &r);
		break;
	case FOP_WRITE:
		do_write(p, base, in, &r);
		break;
	case FOP_DELETE:
		do_delete(p, base, &r);
		break;
	case FOP_MKDIR:
		do_mkdir(p, base, &r);
		break;
	}
out:
	write_all(res_w, &r, sizeof(r));
	_exit(0);
}

/* ---- the parent ---------------------------------------------------------------------- */

static void job_free(struct fjob *j)
{
	if (j->ev)
		event_free(j->ev);
	if (j->timer)
		event_free(j->timer);
	if (j->res_r >= 0)
		close(j->res_r);
	if (j->out_fd >= 0)
		close(j->out_fd);
	if (j->pid > 0 && waitpid(j->pid, NULL, WNOHANG) == 0) {
		kill(j->pid, SIGKILL); /* a SIGCHLD later reaps it (runner.c reap_orphans) */
	}
	inflight--;
	free(j);
}

static const char *type_name(char t)
{
	return t == 'f' ? "file" : t == 'd' ? "dir" : t == 'l' ? "symlink" : "other";
}

static void job_result(evutil_socket_t fd, short what, void *arg)
{
	struct fjob *j = arg;
	struct fres r;
	size_t got = 0;

	if (what & EV_TIMEOUT) {
		kill(j->pid, SIGKILL);
		j->done(PERR_ENGINE_UNAVAILABLE, "the file operation took too long and was stopped",
		        NULL, -1, j->arg);
		job_free(j);
		return;
	}
	while (got < sizeof(r)) {
		ssize_t n = read(j->res_r, (char *)&r + got, sizeof(r) - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN && got == 0)
			return; /* spurious */
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	if (got != sizeof(r)) {
		j->done(PERR_INTERNAL, "the file helper ended without an answer", NULL, -1, j->arg);
	} else if (r.perr) {
		r.why[sizeof(r.why) - 1] = '\0';
		j->done((unsigned)r.perr <= PERR_MAX_ ? r.perr : PERR_INTERNAL, r.why, NULL, -1, j->arg);
	} else {
		struct msg_FILE_REP rep = { .path = j->path, .type = (char *)type_name(r.type),
			                    .total = r.total, .offset = r.offset, .length = r.length,
			                    .mode = r.mode, .mtime = r.mtime, .count = r.count,
			                    .truncated = r.truncated };
		int out = -1;
		if ((j->op == FOP_READ || j->op == FOP_LIST) && lseek(j->out_fd, 0, SEEK_SET) == 0)
			out = steal_fd(&j->out_fd);
		j->done(0, NULL, &rep, out, j->arg);
	}
	job_free(j);
}

/* The mount a path walks into (the longest target that is a prefix of its components,
 * with no ".." inside that prefix), or -1. *ret_skip: components the target covers. */
static int mount_of(const struct sandbox *sb, const char *const *comp, size_t n, size_t *ret_skip)
{
	int best = -1;
	size_t best_len = 0;
	for (uint32_t i = 0; i < sb->mount_targets.n; i++) {
		char buf[PROTO_STR_MAX + 2];
		const char *tc[FILES_COMPONENTS_MAX];
		size_t tn, k;
		if (files_split(sb->mount_targets.v[i], buf, sizeof(buf), tc, &tn) < 0 || tn == 0 || tn > n)
			continue;
		for (k = 0; k < tn && strcmp(tc[k], comp[k]) == 0 && strcmp(comp[k], "..") != 0; k++)
			;
		if (k == tn && tn > best_len) {
			best = (int)i;
			best_len = tn;
		}
	}
	*ret_skip = best_len;
	return best;
}

static int check_input(int fd, uint64_t size, char *why, size_t whysz)
{
	struct stat st;
	int seals;
	if (fd < 0) {
		snprintf(why, whysz, "write: the content memfd is missing");
		return PERR_INVALID_ARGUMENT;
	}
	if (size > PROTO_FILE_MAX) {
		snprintf(why, whysz, "write: at most %u bytes at once", PROTO_FILE_MAX);
		return PERR_PAYLOAD_TOO_LARGE;
	}
	seals = fcntl(fd, F_GET_SEALS);
	if (seals < 0 || (seals & (F_SEAL_WRITE | F_SEAL_SHRINK | F_SEAL_GROW)) !=
	                     (F_SEAL_WRITE | F_SEAL_SHRINK | F_SEAL_GROW) ||
	    fstat(fd, &st) < 0 || (uint64_t)st.st_size != size) {
		snprintf(why, whysz, "write: the content memfd is not sealed at the announced size");
		return PERR_INVALID_ARGUMENT;
	}
	return 0;
}

void files_start(struct launcher *L, const struct sandbox *sb, const struct msg_FILE_OP *op,
                 int in_fd, files_done_fn done, void *arg)
{
	_cleanup_close_ int in = in_fd, res_r = -1, res_w = -1, out = -1;
	char buf[PROTO_STR_MAX + 2], why[FILES_WHY_MAX];
	const char *comp[FILES_COMPONENTS_MAX];
	struct fplan p = { .op = op->op, .base = sb->workdir, .jail_uid = L->root ? sb->jail_uid : geteuid(),
		           .drop = L->root, .req = op };
	struct timeval tv = { FILES_TIMEOUT_MS / 1000, (FILES_TIMEOUT_MS % 1000) * 1000 };
	size_t n, skip = 0;
	bool needs_name = op->op == FOP_WRITE || op->op == FOP_DELETE || op->op == FOP_MKDIR;
	struct fjob *j;
	int m, e, p2[2];
	pid_t pid;

	if (op->op > FOP_MAX_) {
		done(PERR_INVALID_ARGUMENT, "unknown file operation", NULL, -1, arg);
		return;
	}
	if (files_split(op->path, buf, sizeof(buf), comp, &n) < 0) {
		done(PERR_INVALID_ARGUMENT, "path: relative to the sandbox's workdir, at most "
		     "256 components (an absolute path names nothing here)", NULL, -1, arg);
		return;
	}
	if ((m = mount_of(sb, comp, n, &skip)) >= 0) {
		p.base = sb->mount_sources.v[m];
		p.in_mount = true;
		if (needs_name && (m >= (int)sb->mount_ro.n || sb->mount_ro.v[m])) {
			done(PERR_FORBIDDEN, "the path is inside a read-only mount", NULL, -1, arg);
			return;
		}
	}
	if (needs_name && n - skip == 0) {
		done(PERR_INVALID_ARGUMENT, p.in_mount ? "a mount itself cannot be written, deleted or made"
		                                       : "the workdir itself cannot be written, deleted or made",
		     NULL, -1, arg);
		return;
	}
	if (needs_name && strcmp(comp[n - 1], "..") == 0) {
		done(PERR_INVALID_ARGUMENT, "path: must end in a name, not \"..\"", NULL, -1, arg);
		return;
	}
	join(comp + skip, n - skip, p.rel, sizeof(p.rel));
	if (needs_name) {
		join(comp + skip, n - skip - 1, p.parent, sizeof(p.parent));
		snprintf(p.name, sizeof(p.name), "%s", comp[n - 1]);
	}
	if (op->op == FOP_WRITE && (e = check_input(in, op->size, why, sizeof(why))) != 0) {
		done(e, why, NULL, -1, arg);
		return;
	}
	if (op->op != FOP_WRITE && in >= 0) {
		done(PERR_INVALID_ARGUMENT, "only a write carries content", NULL, -1, arg);
		return;
	}
	if (L->root && sb->jail_uid < SBX_JAIL_UID_BASE) {
		done(PERR_INTERNAL, "the sandbox has no jail uid of its own", NULL, -1, arg);
		return;
	}
	if (inflight >= FILES_INFLIGHT_MAX) {
		done(PERR_ENGINE_UNAVAILABLE, "too many file operations at once", NULL, -1, arg);
		return;
	}
	if ((op->op == FOP_READ || op->op == FOP_LIST) &&
	    (out = memfd_create("sbx-file", MFD_CLOEXEC)) < 0) {
		done(PERR_INTERNAL, "memfd_create failed", NULL, -1, arg);
		return;
	}
	if (pipe2(p2, O_CLOEXEC) < 0) {
		done(PERR_INTERNAL, "pipe failed", NULL, -1, arg);
		return;
	}
	res_r = p2[0];
	res_w = p2[1];
	if ((pid = fork()) < 0) {
		done(PERR_INTERNAL, "fork failed", NULL, -1, arg);
		return;
	}
	if (pid == 0) {
		close(res_r);
		child_main(&p, res_w, out, in);
	}
	close(steal_fd(&res_w));
	if (!(j = calloc(1, sizeof(*j)))) {
		kill(pid, SIGKILL);
		done(PERR_INTERNAL, "out of memory", NULL, -1, arg);
		return;
	}
	inflight++;
	*j = (struct fjob){ .done = done, .arg = arg, .pid = pid, .res_r = steal_fd(&res_r),
		            .out_fd = steal_fd(&out), .op = op->op };
	snprintf(j->path, sizeof(j->path), "%s", op->path);
	set_nonblock(j->res_r);
	j->ev = event_new(L->base, j->res_r, EV_READ | EV_PERSIST, job_result, j);
	j->timer = evtimer_new(L->base, job_result, j);
	if (!j->ev || !j->timer || event_add(j->ev, NULL) < 0 || evtimer_add(j->timer, &tv) < 0) {
		done(PERR_INTERNAL, "out of memory", NULL, -1, arg);
		job_free(j);
	}
}
