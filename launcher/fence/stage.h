/* Staged mounts (DESIGN.md §10, docs/running-code.md "Mounts"): when the launcher is root,
 * jails run as a uid of their own that usually cannot reach a user's project (a 0700
 * home, /root) and does not own it. So every mount source and readPath is opened by the
 * launcher (no symlink followed, the policy checked again on the descriptor), cloned as a
 * detached mount, idmapped so its owner appears as the jail uid (root-owned sources are
 * cloned as they are), and the run's child, still root, attaches the clones in a private
 * mount namespace under STAGE_ROOT, where bwrap binds them from. Nothing is mounted on
 * the host: the namespace ends with the run. */
#ifndef SBX_STAGE_H
#define SBX_STAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "launcher.h"

/* Where the child mounts its staging tmpfs (0711, root-owned): a path that exists on
 * every Linux host, that no mount source can be (/dev is refused) and that bwrap's own
 * --dev /dev covers inside the jail. */
#define STAGE_ROOT        "/dev/shm"
#define STAGE_TMPFS_OPTS  "mode=0711,size=64k,nr_inodes=1024"
#define STAGE_POINT_MAX   32u  /* "/dev/shm/m31" */
#define STAGE_USERNS_MAX  32u  /* distinct owners per run, a user namespace each */
#define STAGE_NOTE_MAX    1024u

struct stage_item {
	int tree;                   /* detached mount (open_tree clone), or -1: skipped */
	bool dir;                   /* the mount point is a directory, else a file */
	char point[STAGE_POINT_MAX];
};

struct stage_owner {
	uid_t uid;
	gid_t gid;
	int userns; /* /proc/<helper>/ns/user mapping uid:gid to the jail's */
};

struct stage_plan {
	struct stage_item *v; /* mounts first, then readPaths */
	size_t n;
	struct proto_strv mount_from; /* per mount: the staging point bwrap binds from */
	struct proto_strv read_from;  /* per readPath: its staging point, "" = missing */
	struct stage_owner owners[STAGE_USERNS_MAX];
	size_t n_owners;
	char note[STAGE_NOTE_MAX]; /* what could not be idmapped, "" when all could */
};

/* In the launcher (root): open, check and clone every mount source (and, in allowlist
 * mode, readPath) of s for a jail running as jail_uid. A mount whose source is gone or no
 * longer passes the policy fails the run (-ENOENT / -EPERM with *ret_reason); a missing
 * readPath is skipped as --ro-bind-try would. A filesystem that cannot be idmapped is
 * bound as it is and named in ret->note. */
int stage_plan_build(const struct sandbox *s, uid_t jail_uid, const char *home,
                     const char *data_dir, struct stage_plan *ret, const char **ret_reason);
void stage_plan_clear(struct stage_plan *p);

/* The note the runs of s will carry about idmapping ("" when every mount and readPath
 * can be idmapped or needs no idmapping), measured now with real clones: for the replies
 * that set mounts (create, update, POST /mounts). */
void stage_probe(const struct sandbox *s, uid_t jail_uid, char *note, size_t notesz);

/* In the run's child, root, before it drops: a private mount namespace, the staging
 * tmpfs on STAGE_ROOT and every clone attached at its point. 0 or -errno. */
int stage_attach(const struct stage_plan *p);

#endif
