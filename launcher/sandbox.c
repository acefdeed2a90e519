/* Sandbox settings: the launcher's own validation of everything the API sends, creation of
 * the workdir, and its removal without following any link the jail may have planted. */
#include "sandbox.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <event2/event.h>

#include "cleanup.h"
#include "disk.h"
#include "privdrop.h"
#include "fence/mounts.h"
#include "fence/netplan.h"
#include "netallow.h"
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

/* ---- the field table ------------------------------------------------------------ */

#define SB_COL_(c)      #c
#define SB_COL_STR      SB_COL_
#define SB_COL_ENUM     SB_COL_
#define SB_COL_BOOL     SB_COL_
#define SB_COL_U32      SB_COL_
#define SB_COL_U64      SB_COL_
#define SB_COL_STRV     SB_COL_
#define SB_COL_U32V     SB_COL_
#define SB_COL_MNTV(c)  NULL
#define SB_OFF_(m)      offsetof(struct sandbox, m)
#define SB_OFF_STR      SB_OFF_
#define SB_OFF_ENUM     SB_OFF_
#define SB_OFF_BOOL     SB_OFF_
#define SB_OFF_U32      SB_OFF_
#define SB_OFF_U64      SB_OFF_
#define SB_OFF_STRV     SB_OFF_
#define SB_OFF_U32V     SB_OFF_
#define SB_OFF_MNTV(m)  offsetof(struct sandbox, m##_sources)
#define SANDBOX_FIELD_LEAF_(A, PREFIX, sep, cname, smember, kind, json, jkind, column, limit, max, \
                            dflt, schema, bit)                                                    \
	{ PREFIX json,                                                                             \
	  PK_##kind,                                                                               \
	  SB_COL_##kind(column),                                                                   \
	  SBXF_##bit,                                                                              \
	  limit,                                                                                   \
	  max,                                                                                     \
	  dflt,                                                                                    \
	  offsetof(struct sandbox_spec, cname),                                                    \
	  offsetof(struct msg_SBX_REP, cname),                                                     \
	  SB_OFF_##kind(smember) },
#define SANDBOX_FIELD_GROUP_(X, A, PREFIX, sep, json, MEMBERS, bit) MEMBERS(X, A, json ".")
const struct sandbox_field sandbox_fields[] = { SBX_FIELDS(SANDBOX_FIELD_LEAF_,
	                                                   SANDBOX_FIELD_GROUP_, _, "") };
const size_t sandbox_fields_n = sizeof(sandbox_fields) / sizeof(sandbox_fields[0]);

_Static_assert(MOUNTS_MAX == SBX_MOUNTS_MAX, "one limit on mounts, on the wire and here");

/* The size of a kind's C type (struct sandbox and the messages use the same types). */
static size_t sandbox_kind_size(enum proto_kind k)
{
	static const size_t sizes[] = {
		[PK_U32] = sizeof(PROTO_CTYPE_U32),   [PK_U64] = sizeof(PROTO_CTYPE_U64),
		[PK_BOOL] = sizeof(PROTO_CTYPE_BOOL), [PK_ENUM] = sizeof(PROTO_CTYPE_ENUM),
		[PK_STR] = sizeof(PROTO_CTYPE_STR),   [PK_STRV] = sizeof(PROTO_CTYPE_STRV),
		[PK_U32V] = sizeof(PROTO_CTYPE_U32V), [PK_MNTV] = sizeof(PROTO_CTYPE_MNTV),
	};
	return sizes[k];
}

#define AT(base, off) ((void *)((char *)(base) + (off)))
#define CAT(base, off) ((const void *)((const char *)(base) + (off)))

/* The rules every field of a kind obeys; the named rules of single fields follow. */
static int check_generic(const struct sandbox_field *f, const void *at, char *reason, size_t sz)
{
	switch (f->kind) {
	case PK_STR: {
		const char *v = *(char *const *)at;
		if (v && (strlen(v) > f->limit || has_ctrl(v))) {
			snprintf(reason, sz, "%s: at most %u bytes, no control characters", f->path,
			         f->limit);
			return -EINVAL;
		}
		return 0;
	}
	case PK_ENUM:
		if (*(const uint32_t *)at > f->limit) {
			snprintf(reason, sz, "%s: unknown value %u", f->path, *(const uint32_t *)at);
			return -EINVAL;
		}
		return 0;
	case PK_U32:
	case PK_U64: {
		uint64_t v = f->kind == PK_U32 ? *(const uint32_t *)at : *(const uint64_t *)at;
		if (f->max && v > f->max) {
			snprintf(reason, sz, "%s: %llu is above the maximum %llu", f->path,
			         (unsigned long long)v, (unsigned long long)f->max);
			return -EINVAL;
		}
		return 0;
	}
	case PK_BOOL:
		return 0;
	case PK_STRV: {
		const struct proto_strv *sv = at;
		if (sv->n > f->limit) {
			snprintf(reason, sz, "%s: more than %u entries", f->path, f->limit);
			return -EINVAL;
		}
		for (uint32_t i = 0; i < sv->n; i++)
			if (has_ctrl(sv->v[i])) { /* stored newline-joined */
				snprintf(reason, sz, "%s[%u]: control characters are not allowed",
				         f->path, i);
				return -EINVAL;
			}
		return 0;
	}
	case PK_U32V: { /* port lists: the only U32V settings */
		const struct proto_u32v *uv = at;
		if (uv->n > f->limit) {
			snprintf(reason, sz, "%s: more than %u entries", f->path, f->limit);
			return -EINVAL;
		}
		for (uint32_t i = 0; i < uv->n; i++)
			if (uv->v[i] < 1 || uv->v[i] > 65535) {
				snprintf(reason, sz, "%s: %u is not a port (1..65535)", f->path, uv->v[i]);
				return -EINVAL;
			}
		return 0;
	}
	case PK_MNTV: {
		const struct proto_mountv *mv = at;
		const char *why = NULL;
		if (mv->n > f->limit) {
			snprintf(reason, sz, "%s: at most %u mounts per sandbox", f->path, f->limit);
			return -EINVAL;
		}
		for (uint32_t i = 0; i < mv->n; i++) {
			if (mount_check_target(mv->v[i].target, &why) < 0) {
				snprintf(reason, sz, "%s[%u].target: %s", f->path, i, why ? why : "invalid");
				return -EINVAL;
			}
			for (uint32_t j = 0; j < i; j++)
				if (strcmp(mv->v[j].target, mv->v[i].target) == 0) {
					snprintf(reason, sz, "%s: target \"%s\" is given twice", f->path,
					         mv->v[i].target);
					return -EINVAL;
				}
		}
		return 0;
	}
	case PK_BYTES: /* stream data, never a sandbox setting */
		break;
	}
	return -EINVAL;
}

static int check_name(const char *name, char *reason, size_t reasonsz)
{
	size_t n = name ? strlen(name) : 0;
	if (n == 0 || n > PROTO_NAME_MAX) {
		snprintf(reason, reasonsz, "name: required, 1..%u bytes", PROTO_NAME_MAX);
		return -EINVAL;
	}
	if (has_ctrl(name) || name[0] == ' ' || name[n - 1] == ' ') {
		snprintf(reason, reasonsz,
		         "name: control characters and leading/trailing spaces are not allowed");
		return -EINVAL;
	}
	return 0;
}

static int check_read_paths(const struct proto_strv *rp, char *reason, size_t reasonsz)
{
	for (uint32_t i = 0; i < rp->n; i++) {
		const char *p = rp->v[i];
		if (p[0] != '/' || strlen(p) > SANDBOX_PATH_MAX) {
			snprintf(reason, reasonsz,
			         "readPaths[%u]: must be an absolute path without control characters, "
			         "at most %u bytes",
			         i, SANDBOX_PATH_MAX);
			return -EINVAL;
		}
	}
	return 0;
}

static int check_env(const struct proto_strv *env, char *reason, size_t reasonsz)
{
	for (uint32_t i = 0; i < env->n; i++) {
		const char *kv = env->v[i], *eq = strchr(kv, '=');
		size_t klen = eq ? (size_t)(eq - kv) : 0;
		if (!eq || !env_key_ok(kv, klen)) {
			snprintf(reason, reasonsz,
			         "env[%u]: must be KEY=value with KEY [A-Za-z_][A-Za-z0-9_]* and no "
			         "control characters",
			         i);
			return -EINVAL;
		}
		if (env_key_forbidden(kv, klen)) {
			snprintf(reason, reasonsz, "env: %.*s is not allowed", (int)klen, kv);
			return -EINVAL;
		}
		for (uint32_t j = 0; j < i; j++)
			if (strncmp(env->v[j], kv, klen + 1) == 0) {
				snprintf(reason, reasonsz, "env: %.*s is given twice", (int)klen, kv);
				return -EINVAL;
			}
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
	for (size_t i = 0; i < sandbox_fields_n; i++) {
		const struct sandbox_field *f = &sandbox_fields[i];
		if ((mask & f->bit) && (r = check_generic(f, CAT(spec, f->spec_off), reason, reasonsz)) < 0)
			return r;
	}
	if ((mask & SBXF_NAME) && (r = check_name(spec->name, reason, reasonsz)) < 0)
		return r;
	if ((mask & SBXF_READ_PATHS) && (r = check_read_paths(&spec->read_paths, reason, reasonsz)) < 0)
		return r;
	if ((mask & SBXF_ENV) && (r = check_env(&spec->env, reason, reasonsz)) < 0)
		return r;
	if ((mask & SBXF_LIMITS) && spec->disk_mb && spec->disk_mb < SBX_DISK_MB_MIN) {
		snprintf(reason, reasonsz, "limits.diskMb: %u is below the minimum %u", spec->disk_mb,
		         SBX_DISK_MB_MIN);
		return -EINVAL;
	}
	if ((mask & SBXF_IMAGE) && spec->image && !image_ok(spec->image)) {
		snprintf(reason, reasonsz, "image: only [A-Za-z0-9._-/:@], not starting with '-'");
		return -EINVAL;
	}
	return 0;
}

int sandbox_net_check(const struct sandbox_net *n, uint16_t api_port, char *reason, size_t sz)
{
	for (uint32_t i = 0; n->allow && i < n->allow->n; i++)
		if (netallow_check(n->allow->v[i]) < 0) {
			snprintf(reason, sz,
			         "proxy.allow[%u]: \"%.64s\" is not name:port or *.suffix:port (a "
			         "lowercase DNS name, a port 1..65535)",
			         i, n->allow->v[i]);
			return -EINVAL;
		}
	if (n->allow && n->allow->n) {
		if (n->network || (n->listen && n->listen->n) || (n->connect && n->connect->n) ||
		    (n->loopback && n->loopback->n)) {
			snprintf(reason, sz, "proxy.allow cannot be combined with network or ports: "
			                     "its jail has no other way out");
			return -EINVAL;
		}
		if (n->backend == BACKEND_DOCKER) {
			snprintf(reason, sz, "proxy.allow needs the direct backend");
			return -EINVAL;
		}
	}
	for (uint32_t i = 0; api_port && n->loopback && i < n->loopback->n; i++)
		if (n->loopback->v[i] == api_port) {
			snprintf(reason, sz,
			         "ports.loopback: %u is the daemon's own API port; a sandbox may never "
			         "reach it",
			         api_port);
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

/* The spec's mounts (sources already canonical) become the sandbox's mount lists. */
static int mounts_set(struct sandbox *s, const struct proto_mountv *mv)
{
	struct sandbox n = { 0 };
	char reason[SANDBOX_REASON_MAX];
	int r = 0;
	for (uint32_t i = 0; i < mv->n && r == 0; i++)
		r = sandbox_mount_append(&n, mv->v[i].source, mv->v[i].target, mv->v[i].read_only,
		                         reason, sizeof(reason));
	if (r == 0) {
		proto_strv_clear(&s->mount_sources);
		proto_strv_clear(&s->mount_targets);
		proto_u32v_clear(&s->mount_ro);
		s->mount_sources = n.mount_sources;
		s->mount_targets = n.mount_targets;
		s->mount_ro = n.mount_ro;
		return 0;
	}
	proto_strv_clear(&n.mount_sources);
	proto_strv_clear(&n.mount_targets);
	proto_u32v_clear(&n.mount_ro);
	return r;
}

static int apply_one(const struct sandbox_field *f, void *dst, const void *src, struct sandbox *s)
{
	switch (f->kind) {
	case PK_STR:
		return str_set(dst, *(char *const *)src);
	case PK_ENUM:
	case PK_U32: /* an integer with a default: 0 = keep the current value */
		if (!f->dflt || *(const uint32_t *)src)
			*(uint32_t *)dst = *(const uint32_t *)src;
		return 0;
	case PK_U64:
		if (!f->dflt || *(const uint64_t *)src)
			*(uint64_t *)dst = *(const uint64_t *)src;
		return 0;
	case PK_BOOL:
		*(bool *)dst = *(const bool *)src;
		return 0;
	case PK_STRV:
		return strv_copy(dst, src);
	case PK_U32V:
		return u32v_copy(dst, src);
	case PK_MNTV:
		return mounts_set(s, src);
	case PK_BYTES:
		break;
	}
	return -EINVAL;
}

int sandbox_spec_apply(struct sandbox *s, const struct sandbox_spec *spec, uint32_t mask)
{
	int r;
	for (size_t i = 0; i < sandbox_fields_n; i++) {
		const struct sandbox_field *f = &sandbox_fields[i];
		void *dst = AT(s, f->sb_off);
		if ((mask & f->bit) && (r = apply_one(f, dst, CAT(spec, f->spec_off), s)) < 0)
			return r;
		/* a sandbox never holds 0 where 0 means "the default" */
		if (f->dflt && f->kind == PK_U32 && !*(uint32_t *)dst)
			*(uint32_t *)dst = (uint32_t)f->dflt;
		if (f->dflt && f->kind == PK_U64 && !*(uint64_t *)dst)
			*(uint64_t *)dst = f->dflt;
	}
	if (mask & SBXF_FS_MODE) {
		if (!s->fs_mode_raw[0] && (r = str_set(&s->fs_mode_raw, "strict")) < 0)
			return r;
		s->fs_mode = sandbox_fs_mode_parse(s->fs_mode_raw, NULL);
	}
	return 0;
}

void sandbox_clear(struct sandbox *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < sandbox_fields_n; i++) {
		const struct sandbox_field *f = &sandbox_fields[i];
		void *at = AT(s, f->sb_off);
		if (f->kind == PK_STR)
			free(*(char **)at);
		else if (f->kind == PK_STRV)
			proto_strv_clear(at);
		else if (f->kind == PK_U32V)
			proto_u32v_clear(at);
	}
	proto_strv_clear(&s->mount_sources);
	proto_strv_clear(&s->mount_targets);
	proto_u32v_clear(&s->mount_ro);
	free(s->workdir);
	memset(s, 0, sizeof(*s));
}

/* ---- mounts ------------------------------------------------------------------------ */

int sandbox_mount_check(struct launcher *L, const char *source, const char *target,
                        char **ret_canon, char *reason, size_t reasonsz)
{
	const char *why = NULL;
	int r;

	if (mount_check_target(target, &why) < 0) {
		snprintf(reason, reasonsz, "target: %s", why ? why : "invalid");
		return -EINVAL;
	}
	if ((r = mount_check_source(source, launcher_home_dir(), L->data_dir, ret_canon, &why)) < 0) {
		snprintf(reason, reasonsz, "source: %s", why ? why : strerror(-r));
		return r == -EPERM ? -EPERM : -EINVAL;
	}
	return 0;
}

int sandbox_read_paths_check(struct launcher *L, const struct proto_strv *rp, char *reason,
                             size_t reasonsz)
{
	for (uint32_t i = 0; i < rp->n; i++) {
		char *canon = NULL;
		const char *why = NULL;
		int r = mount_check_source(rp->v[i], launcher_home_dir(), L->data_dir, &canon, &why);
		free(canon);
		if (r == -EPERM) {
			snprintf(reason, reasonsz, "readPaths[%u]: %s", i, why ? why : "forbidden");
			return -EPERM;
		}
	}
	return 0;
}

int sandbox_mounts_resolve(struct launcher *L, struct proto_mountv *mv, char *reason,
                           size_t reasonsz)
{
	for (uint32_t i = 0; i < mv->n; i++) {
		char *canon = NULL, why[SANDBOX_REASON_MAX];
		int r = sandbox_mount_check(L, mv->v[i].source, mv->v[i].target, &canon, why,
		                            sizeof(why));
		if (r < 0) {
			snprintf(reason, reasonsz, "mounts[%u].%s", i, why);
			return r;
		}
		free(mv->v[i].source);
		mv->v[i].source = canon;
	}
	return 0;
}

int sandbox_mount_append(struct sandbox *s, const char *canon, const char *target, bool ro,
                         char *reason, size_t reasonsz)
{
	int r;
	for (uint32_t i = 0; i < s->mount_targets.n; i++)
		if (strcmp(s->mount_targets.v[i], target) == 0) {
			snprintf(reason, reasonsz, "target \"%s\" is already mounted", target);
			return -EEXIST;
		}
	if (s->mount_targets.n >= MOUNTS_MAX) {
		snprintf(reason, reasonsz, "at most %u mounts per sandbox", MOUNTS_MAX);
		return -ENOSPC;
	}
	if ((r = proto_strv_push(&s->mount_sources, canon)) < 0 ||
	    (r = proto_strv_push(&s->mount_targets, target)) < 0 ||
	    (r = proto_u32v_push(&s->mount_ro, ro)) < 0) {
		snprintf(reason, reasonsz, "out of memory");
		return r;
	}
	return 0;
}

/* ---- notes ------------------------------------------------------------------------- */


void sandbox_note(const struct sandbox *s, const struct net_machine *m, char *buf, size_t bufsz)
{
	char net[NET_PLAN_NOTE_MAX];
	bool unknown = false;
	size_t n = 0;

	buf[0] = '\0';
	sandbox_fs_mode_parse(s->fs_mode_raw, &unknown);
	if (unknown && s->fs_mode_raw)
		note_append(buf, bufsz, &n, "fsMode \"%s\" is not recognised; treated as strict",
		         s->fs_mode_raw);
	if (s->backend == BACKEND_DOCKER)
		note_append(buf, bufsz, &n, "fsMode does not apply to the docker backend");
	/* what the network fence enforces here, and what it cannot (fence/netplan.c) */
	if (s->backend != BACKEND_DOCKER && m) {
		net_plan_note(s, m, net, sizeof(net));
		if (net[0])
			note_append(buf, bufsz, &n, "%s", net);
	}
	if (s->backend == BACKEND_DOCKER && (s->ports_listen.n || s->ports_connect.n ||
	                                     s->ports_loopback.n || s->proxy_allow.n))
		note_append(buf, bufsz, &n,
		         "ports and proxy.allow are not enforced by the docker backend: it runs with "
		         "--network none, or the engine's open network with network: true");
	if (s->tracing == SBX_TRACING_SYSCALLS)
		note_append(buf, bufsz, &n,
		         "tracing \"syscalls\" observes the file, exec and socket calls of every "
		         "program by seccomp user notification: it records the arguments as read "
		         "just before the call (another thread may change them), it is no fence, and "
		         "each reported call costs a round trip to the engine");
	else if (s->tracing)
		note_append(buf, bufsz, &n,
		         "tracing observes Python and Node programs through hooks inside them: a "
		         "program can evade or forge its events, and other programs are not traced");
}

void sandbox_note_run(const struct sandbox *s, const struct net_machine *m, char **note)
{
	char buf[SANDBOX_NOTE_MAX];
	char *n = NULL;

	sandbox_note(s, m, buf, sizeof(buf));
	if (!buf[0] || asprintf(&n, "%s%s%s", *note ? *note : "", *note ? "; " : "", buf) < 0)
		return;
	free(*note);
	*note = n;
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
	if ((r = sandbox_rep_fits(&s)) < 0)
		goto fail_dir;
	/* without loop devices the sandbox is made all the same; its note says diskMb is not
	 * enforced (disk_why). The first create finds out whether the mechanism works here
	 * (no probe at start: the launcher answers sooner); no room (-EDQUOT) is only that. */
	if (L->disk_images && (r = disk_image_create(L, s.id, s.workdir, s.disk_mb, s.jail_uid)) < 0) {
		if (r == -EDQUOT || r == -ENOMEM)
			goto fail_dir;
		L->disk_images = false;
		L->disk_why = "a workdir image could not be allocated, formatted and loop-mounted "
		              "on this host";
		r = 0;
	}
	if ((r = store_sandbox_insert(L->db, &s)) < 0) {
		disk_image_release(L, s.id, s.workdir);
		goto fail_dir;
	}
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

int sandbox_to_rep(const struct sandbox *s, struct msg_SBX_REP *rep)
{
	memset(rep, 0, sizeof(*rep));
	rep->id = (char *)s->id;
	for (size_t i = 0; i < sandbox_fields_n; i++) {
		const struct sandbox_field *f = &sandbox_fields[i];
		const void *at = CAT(s, f->sb_off);
		void *dst = AT(rep, f->rep_off);
		switch (f->kind) {
		case PK_STR:
			*(const char **)dst = *(char *const *)at ? *(char *const *)at : "";
			break;
		case PK_ENUM:
		case PK_U32:
		case PK_U64:
		case PK_BOOL:
		case PK_STRV: /* lists are borrowed: the reply is sent before s goes */
		case PK_U32V:
			memcpy(dst, at, sandbox_kind_size(f->kind));
			break;
		case PK_MNTV: {
			struct proto_mountv *mv = dst;
			uint32_t n = s->mount_sources.n < s->mount_targets.n ? s->mount_sources.n
			                                                     : s->mount_targets.n;
			if (n && !(mv->v = calloc(n, sizeof(*mv->v))))
				return -ENOMEM;
			for (uint32_t k = 0; k < n; k++)
				mv->v[k] = (struct proto_mount){ s->mount_sources.v[k], s->mount_targets.v[k],
					                         k < s->mount_ro.n ? s->mount_ro.v[k] != 0
					                                           : true };
			mv->n = n;
			break;
		}
		case PK_BYTES:
			break;
		}
	}
	/* the mode in force; the note names an unrecognised stored value */
	rep->fs_mode = (char *)sandbox_fs_mode_name(s->fs_mode);
	rep->workdir = s->workdir ? s->workdir : (char *)"";
	rep->created_at = s->created_at;
	rep->note = (char *)"";
	return 0;
}

int sandbox_rep_fits(const struct sandbox *s)
{
	static uint8_t buf[PROTO_MSG_MAX];
	static char note[SANDBOX_NOTE_MAX];
	struct msg_SBX_REP rep;
	int r;

	if ((r = sandbox_to_rep(s, &rep)) < 0)
		return r;
	memset(note, 'n', sizeof(note) - 1); /* the longest note send_sbx_rep can add */
	rep.note = note;
	r = proto_encode(MSG_SBX_REP, 0, false, &rep, buf, sizeof(buf));
	sandbox_rep_release(&rep);
	return r < 0 ? r : 0;
}

void sandbox_rep_release(struct msg_SBX_REP *rep)
{
	free(rep->mounts.v); /* the strings are the sandbox's */
	rep->mounts.v = NULL;
	rep->mounts.n = 0;
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
		else if (L->root && jail_uid && privdrop_to(jail_uid, jail_uid) < 0)
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
