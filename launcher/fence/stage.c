/* See stage.h. The launcher half (stage_plan_build, stage_probe) opens and clones; the
 * child half (stage_attach) only mounts what it was handed. */
#include "stage.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cleanup.h"
#include "fence/mounts.h"

#define STAGE_HELPER_STACK (16u * 1024u) /* the namespace holder only calls read and _exit */

/* The holder: it shares the launcher's memory (CLONE_VM, nothing copied) and touches none
 * of it besides its own stack; it waits for the launcher to close the pipe. */
static int userns_holder(void *arg)
{
	const int *hold = arg; /* its own copy of both ends: close the write end first */
	char c;
	close(hold[1]);
	(void)!read(hold[0], &c, 1);
	_exit(0);
}

static int write_map(pid_t pid, const char *file, unsigned inside, unsigned outside)
{
	char path[64], line[64];
	_cleanup_close_ int fd = -1;
	int n;

	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, file);
	if ((fd = open(path, O_WRONLY | O_CLOEXEC)) < 0)
		return -errno;
	n = snprintf(line, sizeof(line), "%u %u 1\n", inside, outside);
	return write(fd, line, (size_t)n) == n ? 0 : -errno;
}

/* A user namespace in which the owner's uid and gid are the jail's: for an idmapped
 * mount, an on-disk id is read as an id inside this namespace and shown as the host id
 * it maps to, so the owner's files appear as the jail uid's, and what the jail creates is
 * written to disk as the owner's. A helper child holds the namespace while its maps are
 * written and the fd is opened, then exits. */
static int userns_open(uid_t uid, gid_t gid, uid_t jail, int *ret)
{
	_cleanup_free_ char *stack = NULL;
	char path[64];
	int hold[2], r = 0, fd = -1;
	pid_t pid;

	if (!(stack = malloc(STAGE_HELPER_STACK)))
		return -ENOMEM;
	if (pipe2(hold, O_CLOEXEC) < 0)
		return -errno;
	pid = clone(userns_holder, stack + STAGE_HELPER_STACK, CLONE_VM | CLONE_NEWUSER | SIGCHLD,
	            hold);
	r = pid < 0 ? -errno : 0;
	close(hold[0]);
	if (r < 0) {
		close(hold[1]);
		return r;
	}
	if ((r = write_map(pid, "uid_map", uid, jail)) == 0 &&
	    (r = write_map(pid, "gid_map", gid, jail)) == 0) {
		snprintf(path, sizeof(path), "/proc/%d/ns/user", (int)pid);
		if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
			r = -errno;
	}
	close(hold[1]);
	/* reaped before its stack is freed */
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
	if (r < 0)
		return r;
	*ret = fd;
	return 0;
}

static int owner_userns(struct stage_plan *p, uid_t uid, gid_t gid, uid_t jail, int *ret)
{
	int r, fd = -1;
	for (size_t i = 0; i < p->n_owners; i++)
		if (p->owners[i].uid == uid && p->owners[i].gid == gid) {
			*ret = p->owners[i].userns;
			return 0;
		}
	if (p->n_owners >= STAGE_USERNS_MAX)
		return -E2BIG;
	if ((r = userns_open(uid, gid, jail, &fd)) < 0)
		return r;
	p->owners[p->n_owners++] = (struct stage_owner){ uid, gid, fd };
	*ret = fd;
	return 0;
}

static void note_add(struct stage_plan *p, const char *label, const char *canon, int err,
                     uid_t jail)
{
	size_t n = strlen(p->note);
	if (n < sizeof(p->note))
		snprintf(p->note + n, sizeof(p->note) - n,
		         "%s%s %s: its filesystem cannot be idmapped (%s), so it is bound as it is: "
		         "its files keep their host owners and the jail (uid %u) reaches them only "
		         "as their permissions allow",
		         n ? "; " : "", label, canon, strerror(err), (unsigned)jail);
}

static int set_attr(int tree, uint64_t set, int userns, bool recursive)
{
	struct mount_attr a = { .attr_set = set, .userns_fd = userns >= 0 ? (uint64_t)userns : 0 };
	if (!set)
		return 0;
	return mount_setattr(tree, "", AT_EMPTY_PATH | (recursive ? AT_RECURSIVE : 0), &a,
	                     sizeof(a)) < 0
	               ? -errno
	               : 0;
}

/* Open canon without following any symlink, check it again on the descriptor, clone it
 * (with its submounts when bound as is; alone when idmapped, as the mapping is one owner's)
 * and idmap it when a non-root user owns it. */
static int item_open(struct stage_plan *p, const char *label, const char *canon, bool ro,
                     uid_t jail, struct stage_item *it, const char **ret_reason)
{
	struct open_how how = { .flags = O_PATH | O_CLOEXEC,
		                .resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS };
	_cleanup_close_ int fd = -1, tree = -1;
	struct stat st;
	int r, userns;

	fd = (int)syscall(SYS_openat2, AT_FDCWD, canon, &how, sizeof(how));
	if (fd < 0) {
		if (errno == ELOOP || errno == EXDEV) {
			*ret_reason = "source path now passes through a symlink";
			return -EPERM;
		}
		return -errno;
	}
	if ((r = mount_check_opened(fd, canon, ret_reason)) < 0)
		return r;
	if (fstat(fd, &st) < 0)
		return -errno;
	it->dir = S_ISDIR(st.st_mode);
	if (st.st_uid == 0) {
		/* uid 0 is never mapped into a jail: bound as is, a root-only file stays shut */
		tree = open_tree(fd, "", AT_EMPTY_PATH | OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);
		if (tree < 0)
			return -errno;
		if ((r = set_attr(tree, ro ? MOUNT_ATTR_RDONLY : 0, -1, true)) < 0)
			return r;
		it->tree = steal_fd(&tree);
		return 0;
	}
	if ((tree = open_tree(fd, "", AT_EMPTY_PATH | OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC)) < 0)
		return -errno;
	if ((r = owner_userns(p, st.st_uid, st.st_gid, jail, &userns)) < 0) {
		if (r == -E2BIG)
			*ret_reason = "the mounts and readPaths of one run have more distinct owners "
			              "than STAGE_USERNS_MAX";
		return r;
	}
	r = set_attr(tree, MOUNT_ATTR_IDMAP | (ro ? MOUNT_ATTR_RDONLY : 0), userns, false);
	if (r == -EINVAL || r == -EOPNOTSUPP || r == -ENOSYS || r == -EPERM) {
		note_add(p, label, canon, -r, jail);
		if ((r = set_attr(tree, ro ? MOUNT_ATTR_RDONLY : 0, -1, false)) < 0)
			return r;
	}
	if (r < 0)
		return r;
	it->tree = steal_fd(&tree);
	return 0;
}

/* The policy of add time, again, on the path as the disk has it now. A mount's source was
 * stored canonical and must still canonicalize to itself (a link planted on its path since
 * is refused); a readPath is stored as given and is used as it resolves now. */
static int item_add(struct stage_plan *p, const char *label, char kind, size_t idx,
                    const char *path, bool exact, bool ro, uid_t jail, const char *home,
                    const char *data_dir, const char **ret_reason)
{
	struct stage_item *it = &p->v[p->n];
	_cleanup_free_ char *canon = NULL;
	int r;

	*it = (struct stage_item){ .tree = -1 };
	snprintf(it->point, sizeof(it->point), "%s/%c%zu", STAGE_ROOT, kind, idx);
	if ((r = mount_check_source(path, home, data_dir, &canon, ret_reason)) < 0)
		return r;
	if (exact && strcmp(canon, path) != 0) {
		*ret_reason = "source is no longer the path that was checked";
		return -EPERM;
	}
	if ((r = item_open(p, label, canon, ro, jail, it, ret_reason)) < 0)
		return r;
	p->n++;
	return 0;
}

int stage_plan_build(const struct sandbox *s, uid_t jail_uid, const char *home,
                     const char *data_dir, struct stage_plan *ret, const char **ret_reason)
{
	uint32_t nm = s->mount_sources.n < s->mount_targets.n ? s->mount_sources.n : s->mount_targets.n;
	uint32_t nr = s->fs_mode == FS_ALLOWLIST ? s->read_paths.n : 0;
	char label[32];
	int r = 0;

	*ret = (struct stage_plan){ 0 };
	*ret_reason = NULL;
	if (nm + nr == 0)
		return 0;
	if (!(ret->v = calloc(nm + nr, sizeof(*ret->v))))
		return -ENOMEM;
	for (uint32_t i = 0; i < nm && r == 0; i++) {
		bool ro = i < s->mount_ro.n && s->mount_ro.v[i];
		snprintf(label, sizeof(label), "mounts[%u]", i);
		if ((r = item_add(ret, label, 'm', i, s->mount_sources.v[i], true, ro, jail_uid, home,
		                  data_dir, ret_reason)) == 0)
			r = proto_strv_push(&ret->mount_from, ret->v[ret->n - 1].point);
	}
	for (uint32_t i = 0; i < nr && r == 0; i++) {
		snprintf(label, sizeof(label), "readPaths[%u]", i);
		r = item_add(ret, label, 'r', i, s->read_paths.v[i], false, true, jail_uid, home,
		             data_dir, ret_reason);
		if (r == -ENOENT) { /* --ro-bind-try: a readPath that is gone is skipped */
			*ret_reason = NULL;
			r = proto_strv_push(&ret->read_from, "");
		} else if (r == 0) {
			r = proto_strv_push(&ret->read_from, ret->v[ret->n - 1].point);
		}
	}
	if (r < 0)
		stage_plan_clear(ret);
	return r;
}

void stage_plan_clear(struct stage_plan *p)
{
	for (size_t i = 0; i < p->n; i++)
		if (p->v[i].tree >= 0)
			close(p->v[i].tree);
	for (size_t i = 0; i < p->n_owners; i++)
		close(p->owners[i].userns);
	free(p->v);
	proto_strv_clear(&p->mount_from);
	proto_strv_clear(&p->read_from);
	*p = (struct stage_plan){ 0 };
}

void stage_probe(const struct sandbox *s, uid_t jail_uid, char *note, size_t notesz)
{
	uint32_t nm = s->mount_sources.n < s->mount_targets.n ? s->mount_sources.n : s->mount_targets.n;
	uint32_t nr = s->fs_mode == FS_ALLOWLIST ? s->read_paths.n : 0;
	struct stage_plan p = { 0 };
	char label[32];

	for (uint32_t i = 0; i < nm + nr; i++) {
		struct stage_item it = { .tree = -1 };
		const char *why = NULL, *path = i < nm ? s->mount_sources.v[i] : s->read_paths.v[i - nm];
		_cleanup_free_ char *canon = realpath(path, NULL);
		bool ro = i >= nm || (i < s->mount_ro.n && s->mount_ro.v[i]);
		snprintf(label, sizeof(label), i < nm ? "mounts[%u]" : "readPaths[%u]", i < nm ? i : i - nm);
		/* what the run will do; a source that cannot be opened now is the run's to report */
		if (canon && item_open(&p, label, canon, ro, jail_uid, &it, &why) == 0 && it.tree >= 0)
			close(it.tree);
	}
	snprintf(note, notesz, "%s", p.note);
	stage_plan_clear(&p);
}

int stage_attach(const struct stage_plan *p)
{
	if (!p || !p->n)
		return 0;
	/* private, so no mount below leaks back into the host's namespace */
	if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
	    mount("sbx-stage", STAGE_ROOT, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
	          STAGE_TMPFS_OPTS) < 0)
		return -errno;
	for (size_t i = 0; i < p->n; i++) {
		const struct stage_item *it = &p->v[i];
		if (it->dir) {
			if (mkdir(it->point, 0700) < 0)
				return -errno;
		} else {
			int fd = open(it->point, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
			if (fd < 0)
				return -errno;
			close(fd);
		}
		if (move_mount(it->tree, "", AT_FDCWD, it->point, MOVE_MOUNT_F_EMPTY_PATH) < 0)
			return -errno;
	}
	return 0;
}
