/* Sandbox settings: the launcher's own validation of everything the API sends, creation of
 * the workdir, and its removal without following any link the jail may have planted. */
#include "sandbox.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <event2/event.h>

#include "cleanup.h"
#include "store.h"
#include "util.h"

#define SANDBOX_CREATE_ID_TRIES 8

static const char *const fs_mode_names[] = {
	[FS_STRICT] = "strict",
	[FS_ALLOWLIST] = "allowlist",
	[FS_OPEN] = "open",
};

enum fs_mode sandbox_fs_mode_parse(const char *s, bool *ret_unknown)
{
	bool unknown = true;
	enum fs_mode m = FS_STRICT;
	if (s && !*s)
		unknown = false; /* not given: the default */
	for (int i = 0; s && i < 3; i++)
		if (strcmp(s, fs_mode_names[i]) == 0) {
			m = (enum fs_mode)i;
			unknown = false;
		}
	if (ret_unknown)
		*ret_unknown = unknown;
	return m;
}

const char *sandbox_fs_mode_name(enum fs_mode m)
{
	return (unsigned)m < 3 ? fs_mode_names[m] : "strict";
}

bool sandbox_id_valid(const char *id) { return proto_id_valid(id); }

/* Control characters (and DEL) are refused everywhere: list fields are stored
 * newline-joined and names end up in logs and terminals. */
static bool has_ctrl(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || (unsigned char)*s == 0x7f)
			return true;
	return false;
}

static bool env_key_ok(const char *kv, size_t klen)
{
	if (klen == 0 || klen > SANDBOX_ENV_KEY_MAX)
		return false;
	if (!((kv[0] >= 'A' && kv[0] <= 'Z') || (kv[0] >= 'a' && kv[0] <= 'z') || kv[0] == '_'))
		return false;
	for (size_t i = 1; i < klen; i++)
		if (!((kv[i] >= 'A' && kv[i] <= 'Z') || (kv[i] >= 'a' && kv[i] <= 'z') ||
		      (kv[i] >= '0' && kv[i] <= '9') || kv[i] == '_'))
			return false;
	return true;
}

/* Variables that make the dynamic loader run code of the caller's choice in every program
 * of the jail (and in the engine's own helpers bound into it). */
static bool env_key_forbidden(const char *kv, size_t klen)
{
	static const char *const deny[] = { "LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT" };
	for (size_t i = 0; i < sizeof(deny) / sizeof(deny[0]); i++)
		if (strlen(deny[i]) == klen && memcmp(kv, deny[i], klen) == 0)
			return true;
	return false;
}

/* docker image references: no option injection (leading '-'), a plain charset. */
static bool image_ok(const char *s)
{
	if (*s == '-')
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
		      strchr("._-/:@", *s)))
			return false;
	return true;
}

static int check_ports(const struct proto_u32v *uv, const char *what, char *reason, size_t sz)
{
	if (uv->n > PROTO_LIST_MAX) {
		snprintf(reason, sz, "ports.%s: more than %u entries", what, PROTO_LIST_MAX);
		return -EINVAL;
	}
	for (uint32_t i = 0; i < uv->n; i++)
		if (uv->v[i] < 1 || uv->v[i] > 65535) {
			snprintf(reason, sz, "ports.%s: %u is not a port (1..65535)", what, uv->v[i]);
			return -EINVAL;
		}
	return 0;
}

static int check_limit(uint64_t v, uint64_t max, const char *what, char *reason, size_t sz)
{
	if (v > max) {
		snprintf(reason, sz, "limits.%s: %llu is above the maximum %llu", what,
		         (unsigned long long)v, (unsigned long long)max);
		return -EINVAL;
	}
	return 0;
}

int sandbox_spec_check(const struct sandbox_spec *spec, uint32_t mask, char *reason,
                       size_t reasonsz)
{
	int r;

	if (mask & ~SBXF_ALL_) {
		snprintf(reason, reasonsz, "unknown fields in the update mask (0x%x)", mask);
		return -EINVAL;
	}
	if (mask & SBXF_NAME) {
		size_t n = spec->name ? strlen(spec->name) : 0;
		if (n == 0 || n > PROTO_NAME_MAX) {
			snprintf(reason, reasonsz, "name: required, 1..%u bytes", PROTO_NAME_MAX);
			return -EINVAL;
		}
		if (has_ctrl(spec->name) || spec->name[0] == ' ' || spec->name[n - 1] == ' ') {
			snprintf(reason, reasonsz,
			         "name: control characters and leading/trailing spaces are not allowed");
			return -EINVAL;
		}
	}
	if ((mask & SBXF_BACKEND) && spec->backend > BACKEND_MAX_) {
		snprintf(reason, reasonsz, "backend: unknown value %u", spec->backend);
		return -EINVAL;
	}
	if ((mask & SBXF_FS_MODE) && spec->fs_mode &&
	    (strlen(spec->fs_mode) > PROTO_NAME_MAX || has_ctrl(spec->fs_mode))) {
		snprintf(reason, reasonsz, "fsMode: control characters are not allowed");
		return -EINVAL;
	}
	if (mask & SBXF_READ_PATHS) {
		if (spec->read_paths.n > PROTO_LIST_MAX) {
			snprintf(reason, reasonsz, "readPaths: more than %u entries", PROTO_LIST_MAX);
			return -EINVAL;
		}
		for (uint32_t i = 0; i < spec->read_paths.n; i++) {
			const char *p = spec->read_paths.v[i];
			if (p[0] != '/' || strlen(p) > SANDBOX_PATH_MAX || has_ctrl(p)) {
				snprintf(reason, reasonsz,
				         "readPaths[%u]: must be an absolute path without control "
				         "characters, at most %u bytes",
				         i, SANDBOX_PATH_MAX);
				return -EINVAL;
			}
		}
	}
	if (mask & SBXF_PORTS) {
		if ((r = check_ports(&spec->ports_listen, "listen", reason, reasonsz)) < 0 ||
		    (r = check_ports(&spec->ports_connect, "connect", reason, reasonsz)) < 0 ||
		    (r = check_ports(&spec->ports_loopback, "loopback", reason, reasonsz)) < 0)
			return r;
	}
	if (mask & SBXF_ENV) {
		if (spec->env.n > PROTO_LIST_MAX) {
			snprintf(reason, reasonsz, "env: more than %u entries", PROTO_LIST_MAX);
			return -EINVAL;
		}
		for (uint32_t i = 0; i < spec->env.n; i++) {
			const char *kv = spec->env.v[i], *eq = strchr(kv, '=');
			size_t klen = eq ? (size_t)(eq - kv) : 0;
			if (!eq || !env_key_ok(kv, klen) || has_ctrl(kv)) {
				snprintf(reason, reasonsz,
				         "env[%u]: must be KEY=value with KEY [A-Za-z_][A-Za-z0-9_]* "
				         "and no control characters",
				         i);
				return -EINVAL;
			}
			if (env_key_forbidden(kv, klen)) {
				snprintf(reason, reasonsz, "env: %.*s is not allowed", (int)klen, kv);
				return -EINVAL;
			}
			for (uint32_t j = 0; j < i; j++)
				if (strncmp(spec->env.v[j], kv, klen + 1) == 0) {
					snprintf(reason, reasonsz, "env: %.*s is given twice", (int)klen, kv);
					return -EINVAL;
				}
		}
	}
	if (mask & SBXF_LIMITS) {
		if ((r = check_limit(spec->timeout_ms, SBX_TIMEOUT_MS_MAX, "timeoutMs", reason,
		                     reasonsz)) < 0 ||
		    (r = check_limit(spec->memory_mb, SBX_MEMORY_MB_MAX, "memoryMb", reason,
		                     reasonsz)) < 0 ||
		    (r = check_limit(spec->pids, SBX_PIDS_MAX, "pids", reason, reasonsz)) < 0 ||
		    (r = check_limit(spec->output_bytes, SBX_OUTPUT_BYTES_MAX, "outputBytes", reason,
		                     reasonsz)) < 0)
			return r;
	}
	if ((mask & SBXF_IMAGE) && spec->image && !image_ok(spec->image)) {
		snprintf(reason, reasonsz, "image: only [A-Za-z0-9._-/:@], not starting with '-'");
		return -EINVAL;
	}
	return 0;
}

static int strv_copy(struct proto_strv *dst, const struct proto_strv *src)
{
	struct proto_strv n = { 0 };
	int r;
	for (uint32_t i = 0; i < src->n; i++)
		if ((r = proto_strv_push(&n, src->v[i])) < 0) {
			proto_strv_clear(&n);
			return r;
		}
	proto_strv_clear(dst);
	*dst = n;
	return 0;
}

static int u32v_copy(struct proto_u32v *dst, const struct proto_u32v *src)
{
	struct proto_u32v n = { 0 };
	int r;
	for (uint32_t i = 0; i < src->n; i++)
		if ((r = proto_u32v_push(&n, src->v[i])) < 0) {
			proto_u32v_clear(&n);
			return r;
		}
	proto_u32v_clear(dst);
	*dst = n;
	return 0;
}

static int str_set(char **dst, const char *src)
{
	char *n = strdup(src ? src : "");
	if (!n)
		return -ENOMEM;
	free(*dst);
	*dst = n;
	return 0;
}

int sandbox_spec_apply(struct sandbox *s, const struct sandbox_spec *spec, uint32_t mask)
{
	int r;
	if ((mask & SBXF_NAME) && (r = str_set(&s->name, spec->name)) < 0)
		return r;
	if (mask & SBXF_BACKEND)
		s->backend = spec->backend;
	if (mask & SBXF_FS_MODE) {
		const char *raw = spec->fs_mode && *spec->fs_mode ? spec->fs_mode : "strict";
		if ((r = str_set(&s->fs_mode_raw, raw)) < 0)
			return r;
		s->fs_mode = sandbox_fs_mode_parse(raw, NULL);
	}
	if ((mask & SBXF_READ_PATHS) && (r = strv_copy(&s->read_paths, &spec->read_paths)) < 0)
		return r;
	if (mask & SBXF_NETWORK)
		s->network = spec->network;
	if ((mask & SBXF_PORTS) && ((r = u32v_copy(&s->ports_listen, &spec->ports_listen)) < 0 ||
	                            (r = u32v_copy(&s->ports_connect, &spec->ports_connect)) < 0 ||
	                            (r = u32v_copy(&s->ports_loopback, &spec->ports_loopback)) < 0))
		return r;
	if ((mask & SBXF_ENV) && (r = strv_copy(&s->env, &spec->env)) < 0)
		return r;
	if (mask & SBXF_LIMITS) { /* only the non-zero ones: 0 = keep (or the default) */
		if (spec->timeout_ms)
			s->timeout_ms = spec->timeout_ms;
		if (spec->memory_mb)
			s->memory_mb = spec->memory_mb;
		if (spec->pids)
			s->pids = spec->pids;
		if (spec->output_bytes)
			s->output_bytes = spec->output_bytes;
	}
	if (!s->timeout_ms)
		s->timeout_ms = SBX_TIMEOUT_MS_DEFAULT;
	if (!s->memory_mb)
		s->memory_mb = SBX_MEMORY_MB_DEFAULT;
	if (!s->pids)
		s->pids = SBX_PIDS_DEFAULT;
	if (!s->output_bytes)
		s->output_bytes = SBX_OUTPUT_BYTES_DEFAULT;
	if (mask & SBXF_TRACING)
		s->tracing = spec->tracing;
	if ((mask & SBXF_IMAGE) && (r = str_set(&s->image, spec->image)) < 0)
		return r;
	return 0;
}

void sandbox_note(const struct sandbox *s, char *buf, size_t bufsz)
{
	bool unknown = false;
	size_t n = 0;

	buf[0] = '\0';
	sandbox_fs_mode_parse(s->fs_mode_raw, &unknown);
	if (unknown && s->fs_mode_raw)
		n += (size_t)snprintf(buf, bufsz, "fsMode \"%s\" is not recognised; treated as strict",
		                      s->fs_mode_raw);
	if (s->backend == BACKEND_DOCKER && n < bufsz)
		snprintf(buf + n, bufsz - n, "%sfsMode does not apply to the docker backend",
		         n ? "; " : "");
}

/* <data>/sandboxes/<id>, created beneath an fd so a planted link cannot redirect it. */
static int workdir_create(struct launcher *L, const char *id, uint32_t jail_uid)
{
	_cleanup_close_ int dfd = -1, fd = -1;

	dfd = open(L->sandboxes_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	if (mkdirat(dfd, id, 0700) < 0)
		return -errno;
	fd = openat(dfd, id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (L->root && fchown(fd, jail_uid, jail_uid) < 0)
		return -errno;
	if (fchmod(fd, 0700) < 0)
		return -errno;
	return 0;
}

int sandbox_create(struct launcher *L, const struct sandbox_spec *spec, struct sandbox *ret)
{
	struct sandbox s = { 0 };
	struct sandbox other;
	int r, n;

	if ((n = store_sandbox_count(L->db)) < 0)
		return n;
	if ((unsigned)n >= SBX_SANDBOXES_MAX)
		return -ENOSPC;
	if (store_sandbox_get_by_name(L->db, spec->name, &other) == 0) {
		sandbox_clear(&other);
		return -EEXIST;
	}
	if ((r = sandbox_spec_apply(&s, spec, SBXF_ALL_)) < 0)
		goto fail;
	s.created_at = now_unix_s();
	if (L->root && (r = store_jail_uid_next(L->db, &s.jail_uid)) < 0)
		goto fail;
	for (int i = 0;; i++) {
		if ((r = random_id("sbx_", SANDBOX_ID_LEN, s.id, sizeof(s.id))) < 0)
			goto fail;
		if ((r = store_sandbox_get(L->db, s.id, &other)) == 0) {
			sandbox_clear(&other);
			r = -EEXIST;
		} else if (r == -ENOENT) {
			r = workdir_create(L, s.id, s.jail_uid);
		}
		if (r == 0)
			break;
		if (r != -EEXIST || i + 1 >= SANDBOX_CREATE_ID_TRIES)
			goto fail;
	}
	free(s.workdir);
	if (asprintf(&s.workdir, "%s/%s", L->sandboxes_dir, s.id) < 0) {
		s.workdir = NULL;
		r = -ENOMEM;
		goto fail_dir;
	}
	if ((r = store_sandbox_insert(L->db, &s)) < 0)
		goto fail_dir;
	*ret = s;
	return 0;
fail_dir: {
	/* freshly made and empty: nothing of the jail's can be in it yet */
	_cleanup_close_ int dfd = open(L->sandboxes_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0)
		unlinkat(dfd, s.id, AT_REMOVEDIR);
}
fail:
	sandbox_clear(&s);
	return r;
}

int sandbox_ensure_default(struct launcher *L, struct sandbox *ret)
{
	struct sandbox_spec spec = { .name = (char *)SANDBOX_DEFAULT_NAME,
		                     .backend = BACKEND_DIRECT,
		                     .fs_mode = (char *)"strict",
		                     .network = false };
	int r = store_sandbox_get_by_name(L->db, SANDBOX_DEFAULT_NAME, ret);
	if (r != -ENOENT)
		return r;
	return sandbox_create(L, &spec, ret);
}

void sandbox_to_rep(const struct sandbox *s, struct msg_SBX_REP *rep)
{
	memset(rep, 0, sizeof(*rep));
	rep->id = (char *)s->id;
	rep->name = s->name;
	rep->backend = s->backend;
	/* the mode in force; the note names an unrecognised stored value */
	rep->fs_mode = (char *)sandbox_fs_mode_name(s->fs_mode);
	rep->read_paths = s->read_paths;
	rep->network = s->network;
	rep->ports_listen = s->ports_listen;
	rep->ports_connect = s->ports_connect;
	rep->ports_loopback = s->ports_loopback;
	rep->env = s->env;
	rep->timeout_ms = s->timeout_ms;
	rep->memory_mb = s->memory_mb;
	rep->pids = s->pids;
	rep->output_bytes = s->output_bytes;
	rep->tracing = s->tracing;
	rep->image = s->image ? s->image : (char *)"";
	rep->mount_sources = s->mount_sources;
	rep->mount_targets = s->mount_targets;
	rep->mount_ro = s->mount_ro;
	rep->workdir = s->workdir ? s->workdir : (char *)"";
	rep->created_at = s->created_at;
	rep->note = (char *)"";
}

/* ---- removal -------------------------------------------------------------------- */

int sandbox_rm_tree_at(int dirfd, unsigned depth)
{
	struct stat top;
	DIR *d;
	struct dirent *e;
	int r = 0, dup_fd;

	if (depth > SANDBOX_RM_DEPTH_MAX)
		return -ELOOP;
	if (fstat(dirfd, &top) < 0)
		return -errno;
	if ((dup_fd = fcntl(dirfd, F_DUPFD_CLOEXEC, 3)) < 0)
		return -errno;
	if (!(d = fdopendir(dup_fd))) {
		close(dup_fd);
		return -errno;
	}
	while ((errno = 0, e = readdir(d))) {
		struct stat st;
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		if (fstatat(dirfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			r = -errno;
			continue;
		}
		if (S_ISDIR(st.st_mode)) {
			int sub;
			if (st.st_dev != top.st_dev) { /* something mounted here: never descend */
				r = -EXDEV;
				continue;
			}
			sub = openat(dirfd, e->d_name,
			             O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
			if (sub < 0 && errno == EACCES && fchmodat(dirfd, e->d_name, 0700, 0) == 0)
				sub = openat(dirfd, e->d_name,
				             O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
			if (sub < 0) {
				r = -errno;
				continue;
			}
			if (!(st.st_mode & S_IWUSR) || !(st.st_mode & S_IXUSR))
				fchmod(sub, 0700);
			int rr = sandbox_rm_tree_at(sub, depth + 1);
			close(sub);
			if (rr < 0)
				r = rr;
			if (unlinkat(dirfd, e->d_name, AT_REMOVEDIR) < 0 && rr == 0)
				r = -errno;
		} else if (unlinkat(dirfd, e->d_name, 0) < 0) {
			r = -errno;
		}
	}
	if (errno && r == 0)
		r = -errno;
	closedir(d);
	return r;
}

struct rm_job {
	struct launcher *L;
	pid_t pid;
	int fd;
	struct event *ev;
	char id[PROTO_ID_MAX + 1];
	sandbox_rm_done_fn done;
	void *arg;
};

static void rm_job_cb(evutil_socket_t fd, short what, void *arg)
{
	struct rm_job *j = arg;
	int32_t status = -EIO;
	ssize_t n = read(fd, &status, sizeof(status));
	int r = n == (ssize_t)sizeof(status) ? status : -EIO;

	if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
		event_add(j->ev, NULL);
		return;
	}
	/* the child writes its status then exits: this wait is short. ECHILD when another
	 * part of the launcher reaped it first is fine; the status came over the pipe. */
	while (waitpid(j->pid, NULL, 0) < 0 && errno == EINTR)
		;
	if (r == 0) {
		_cleanup_close_ int dfd = open(j->L->sandboxes_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (dfd < 0 || unlinkat(dfd, j->id, AT_REMOVEDIR) < 0)
			r = errno == ENOENT ? 0 : -errno;
	}
	event_free(j->ev);
	close(j->fd);
	j->done(r, j->arg);
	free(j);
}

int sandbox_workdir_remove(struct launcher *L, const char *id, uint32_t jail_uid,
                           sandbox_rm_done_fn done, void *arg)
{
	_cleanup_free_ struct rm_job *j = NULL;
	int p[2];
	pid_t pid;

	if (!sandbox_id_valid(id))
		return -EINVAL;
	if (!(j = calloc(1, sizeof(*j))))
		return -ENOMEM;
	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	pid = fork();
	if (pid < 0) {
		int e = errno;
		close(p[0]);
		close(p[1]);
		return -e;
	}
	if (pid == 0) {
		int32_t st = 0;
		int dfd = -1, wd;
		close(p[0]);
		signal(SIGPIPE, SIG_DFL);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dfd = open(L->sandboxes_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		wd = dfd < 0 ? -1
		             : openat(dfd, id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (wd < 0)
			st = errno == ENOENT ? 0 : -errno;
		else if (L->root && jail_uid &&
		         (setgroups(0, NULL) < 0 || setresgid(jail_uid, jail_uid, jail_uid) < 0 ||
		          setresuid(jail_uid, jail_uid, jail_uid) < 0))
			st = -EPERM; /* never fall back to removing as root */
		else
			st = sandbox_rm_tree_at(wd, 0);
		if (write(p[1], &st, sizeof(st)) < 0)
			_exit(1);
		_exit(0);
	}
	close(p[1]);
	j->L = L;
	j->pid = pid;
	j->fd = p[0];
	j->done = done;
	j->arg = arg;
	snprintf(j->id, sizeof(j->id), "%s", id);
	if (!(j->ev = event_new(L->base, p[0], EV_READ, rm_job_cb, j)) || event_add(j->ev, NULL) < 0) {
		if (j->ev)
			event_free(j->ev);
		close(p[0]);
		kill(pid, SIGKILL);
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
		return -ENOMEM;
	}
	steal_pointer(&j);
	return 0;
}
