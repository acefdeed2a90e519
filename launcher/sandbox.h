/* Sandbox settings: validation (the API is hostile), creation of the workdir and jail uid. */
#ifndef SBX_SANDBOX_H
#define SBX_SANDBOX_H

#include <stddef.h>

#include "launcher.h"

#define SANDBOX_ID_LEN       10u  /* random [a-z0-9] after "sbx_" */
#define SANDBOX_ENV_KEY_MAX  128u /* bytes of an env key */
#define SANDBOX_PATH_MAX     4096u /* bytes of a readPaths entry */
#define SANDBOX_RM_DEPTH_MAX 256u /* directory depth the workdir removal descends */
#define SANDBOX_NOTE_MAX     2048u
#define SANDBOX_REASON_MAX   512u
#define SANDBOX_DEFAULT_NAME "shell"

/* Parse a fsMode string: known values map to themselves, anything else (or NULL) to
 * FS_STRICT with *ret_unknown set, so the caller can report it. Never FS_OPEN by accident.
 * The empty string is the default (strict) and not unknown. */
enum fs_mode sandbox_fs_mode_parse(const char *s, bool *ret_unknown);
const char *sandbox_fs_mode_name(enum fs_mode m);

/* The settings carried by SBX_CREATE / SBX_UPDATE (borrowed pointers), derived from the
 * one definition in proto_msgs.h so a new field cannot be forgotten here. */
#define SANDBOX_SPEC_MEMBER_(S, KIND, NAME, LIMIT) PROTO_CTYPE_##KIND NAME;
struct sandbox_spec {
	SBX_SPEC_FIELDS(SANDBOX_SPEC_MEMBER_, spec)
};
#define SANDBOX_SPEC_COPY_(S, KIND, NAME, LIMIT) (S)->NAME = spec_src_->NAME;
#define SANDBOX_SPEC_FROM(dst, src)                                                                \
	do {                                                                                       \
		__typeof__(src) spec_src_ = (src);                                                 \
		SBX_SPEC_FIELDS(SANDBOX_SPEC_COPY_, (dst))                                         \
	} while (0)

/* One line of SBX_FIELDS as the launcher walks it: check, apply, clear, reply and the
 * store's columns all loop over sandbox_fields[] instead of naming each setting. */
struct sandbox_field {
	const char *path;     /* JSON path for messages: "name", "limits.timeoutMs" */
	enum proto_kind kind;
	const char *column;   /* the sandboxes column; NULL for mounts (their own table) */
	uint32_t bit;         /* SBXF_* */
	uint32_t limit;       /* wire limit: bytes, entries, largest enum value */
	uint64_t max, dflt;   /* integers: largest accepted value (0: none), what 0 means */
	size_t spec_off;      /* offsetof(struct sandbox_spec, cname) */
	size_t rep_off;       /* offsetof(struct msg_SBX_REP, cname) */
	size_t sb_off;        /* offsetof(struct sandbox, smember) (mounts: mount_sources) */
};
extern const struct sandbox_field sandbox_fields[];
extern const size_t sandbox_fields_n;

/* A request id / sandbox id / run id from the API: 1..PROTO_ID_MAX of [a-z0-9_]. */
bool sandbox_id_valid(const char *id);

/* Check the fields of spec selected by mask (SBXF_*) against the launcher's own rules.
 * Returns 0, or -EINVAL with a human reason in reason. Changes nothing. */
int sandbox_spec_check(const struct sandbox_spec *spec, uint32_t mask, char *reason,
                       size_t reasonsz);
/* Copy the (checked) fields selected by mask into s; limits of 0 keep the current value
 * (or the default when s has none). Returns 0 or -ENOMEM (s then needs sandbox_clear). */
int sandbox_spec_apply(struct sandbox *s, const struct sandbox_spec *spec, uint32_t mask);

/* What a reply about s must say is not (or not as asked) enforced: an unknown fsMode,
 * fsMode under docker, ports and tracing (stored, no fence yet), network on bwrap. "" if
 * none. Cut at bufsz; SANDBOX_NOTE_MAX holds them all. */
/* The network settings taken together (DESIGN.md §9): proxy.allow entries well-formed and
 * alone (no network, no ports, the direct backend), and never the API's own port as a
 * loopback port. 0 or -EINVAL with reason. */
struct sandbox_net {
	bool network;
	const struct proto_u32v *listen, *connect, *loopback;
	const struct proto_strv *allow;
	uint32_t backend;
};
#define SANDBOX_NET_OF(x)                                                                          \
	((struct sandbox_net){ .network = (x)->network, .listen = &(x)->ports_listen,              \
	                       .connect = &(x)->ports_connect, .loopback = &(x)->ports_loopback,   \
	                       .allow = &(x)->proxy_allow, .backend = (x)->backend })
int sandbox_net_check(const struct sandbox_net *n, uint16_t api_port, char *reason, size_t sz);

void sandbox_note(const struct sandbox *s, const struct net_machine *m, char *buf, size_t bufsz);
/* The same note for a run of s, appended to *note ("; "-separated); unchanged when there
 * is nothing to say or no memory. */
void sandbox_note_run(const struct sandbox *s, const struct net_machine *m, char **note);

/* Check one mount the way POST /mounts and a create body both must: the target stays in
 * the sandbox, the source exists and is not forbidden (fence/mounts.c). Returns 0 with
 * the canonical source in *ret_canon, -EPERM (forbidden) or -EINVAL with a reason. */
int sandbox_mount_check(struct launcher *L, const char *source, const char *target,
                        char **ret_canon, char *reason, size_t reasonsz);
/* Replace every source of mv by its canonical path after sandbox_mount_check. */
/* readPaths (allowlist) face the same source rules as mounts: a path that exists and is
 * forbidden is refused (-EPERM); one that does not exist is bound with --ro-bind-try and
 * simply absent. */
int sandbox_read_paths_check(struct launcher *L, const struct proto_strv *rp, char *reason,
                             size_t reasonsz);
int sandbox_mounts_resolve(struct launcher *L, struct proto_mountv *mv, char *reason,
                           size_t reasonsz);
/* Append a checked mount to s: -EEXIST (target taken) or -ENOSPC (MOUNTS_MAX) with a
 * reason, -ENOMEM. */
int sandbox_mount_append(struct sandbox *s, const char *canon, const char *target, bool ro,
                         char *reason, size_t reasonsz);

/* Create a new sandbox from a checked spec: id, jail uid (when root), workdir
 * <data>/sandboxes/<id> (0700, owned by the jail uid), row. -EEXIST: name taken;
 * -ENOSPC: too many sandboxes or no jail uid left; -EMSGSIZE: its reply would not fit. */
int sandbox_create(struct launcher *L, const struct sandbox_spec *spec, struct sandbox *ret);

/* The default sandbox for the execShell entrance: the one named "shell", created on first
 * use (strict, no network). */
int sandbox_ensure_default(struct launcher *L, struct sandbox *ret);

/* Remove <data>/sandboxes/<id> recursively without following a symlink, in a forked
 * child (as the jail uid when root, since the tree is jail-controlled). done(err, arg) is
 * called from the event loop when it finishes (never before this returns 0). */
typedef void (*sandbox_rm_done_fn)(int err, void *arg);
int sandbox_workdir_remove(struct launcher *L, const char *id, uint32_t jail_uid,
                           sandbox_rm_done_fn done, void *arg);
/* The removal itself, in the calling process: every entry below dirfd (not dirfd). */
int sandbox_rm_tree_at(int dirfd, unsigned depth);

/* Fill a SBX_REP from a sandbox. Strings are borrowed from s; only the mounts array is
 * the rep's own: release it with sandbox_rep_release, never proto_msg_clear. */
int sandbox_to_rep(const struct sandbox *s, struct msg_SBX_REP *rep);
void sandbox_rep_release(struct msg_SBX_REP *rep);
/* 0 if a SBX_REP of s, with the longest note, fits one packet (PROTO_MSG_MAX), else
 * -EMSGSIZE: such a sandbox is not stored, or no later reply about it could be sent. */
int sandbox_rep_fits(const struct sandbox *s);

#endif
