/* Mount source and target checks. */
#include "mounts.h"

#include <errno.h>
#include <limits.h>
#include <linux/magic.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

/* Exactly these paths are refused (their descendants are fine: /usr/share/dict is a
 * reasonable read-only mount, /usr itself is not). */
static const char *const forbidden_exact[] = { "/", "/etc", "/usr", "/System", "/var", NULL };
/* The kernel's and the runtime's trees: refused at and below (with /proc mounted, a jail
 * read the command line of every host process). */
static const char *const forbidden_trees[] = { "/proc", "/sys", "/dev", "/run", "/boot",
	                                       "/var/lib", "/var/run", NULL };
/* ...and by filesystem type wherever they are mounted (statfs f_type). */
static const unsigned long forbidden_fs_types[] = {
	PROC_SUPER_MAGIC, SYSFS_MAGIC,        CGROUP_SUPER_MAGIC, CGROUP2_SUPER_MAGIC,
	DEBUGFS_MAGIC,    TRACEFS_MAGIC,      SECURITYFS_MAGIC,   BPF_FS_MAGIC,
	PSTOREFS_MAGIC,   DEVPTS_SUPER_MAGIC, EFIVARFS_MAGIC,     BINFMTFS_MAGIC,
	NSFS_MAGIC,       0x62656570 /* configfs */, 0x65735543 /* fusectl */,
	0x19800202 /* mqueue */,
};
/* Relative to every home in the password database (and /root): refused at and below. */
static const char *const forbidden_home_trees[] = { ".ssh",         ".aws",  ".gnupg",
	                                            ".config/gcloud", ".kube", ".docker",
	                                            "Library/Keychains", NULL };

static bool path_at_or_below(const char *path, const char *root)
{
	size_t n = strlen(root);
	while (n > 1 && root[n - 1] == '/')
		n--;
	if (strncmp(path, root, n) != 0)
		return false;
	return path[n] == '\0' || path[n] == '/' || (n == 1 && root[0] == '/');
}

/* Canonicalize a root the same way the source was, so /home -> /usr/home style symlinks
 * on either side compare equal; a root that does not exist is compared as given. */
static char *canon_or_copy(const char *p)
{
	char *c = realpath(p, NULL);
	return c ? c : strdup(p);
}

/* Is canon at or below a credential tree of this home? */
static bool in_credential_tree(const char *canon, const char *home)
{
	char *h = canon_or_copy(home);
	bool hit = false;
	for (size_t i = 0; h && !hit && forbidden_home_trees[i]; i++) {
		char tree[PATH_MAX];
		if ((size_t)snprintf(tree, sizeof(tree), "%s/%s", h, forbidden_home_trees[i]) >=
		    sizeof(tree))
			continue;
		char *t = canon_or_copy(tree);
		hit = t && path_at_or_below(canon, t);
		free(t);
	}
	free(h);
	return hit;
}

/* Every user's credentials, not only the daemon user's: a root daemon must not hand
 * /home/alice/.ssh to a jail. */
static bool in_any_credential_tree(const char *canon, const char *home)
{
	struct passwd *pw;
	bool hit = (home && home[0] == '/' && in_credential_tree(canon, home)) ||
	           in_credential_tree(canon, "/root");
	setpwent();
	while (!hit && (pw = getpwent()))
		if (pw->pw_dir && pw->pw_dir[0] == '/' && strcmp(pw->pw_dir, "/") != 0)
			hit = in_credential_tree(canon, pw->pw_dir);
	endpwent();
	return hit;
}

static bool kernel_fs_type(const struct statfs *sf)
{
	for (size_t i = 0; i < sizeof(forbidden_fs_types) / sizeof(forbidden_fs_types[0]); i++)
		if ((unsigned long)sf->f_type == forbidden_fs_types[i])
			return true;
	return false;
}

static bool on_kernel_fs(const char *canon)
{
	struct statfs sf;
	return statfs(canon, &sf) < 0 || kernel_fs_type(&sf); /* cannot tell: refuse */
}

/* a socket or device node is not a directory tree: a mounted docker.sock is root on the host */
static bool special_file(const struct stat *st)
{
	return S_ISSOCK(st->st_mode) || S_ISCHR(st->st_mode) || S_ISBLK(st->st_mode) ||
	       S_ISFIFO(st->st_mode);
}

#define REASON_SPECIAL   "source is a socket, device node or FIFO"
#define REASON_KERNEL_FS "source is on a kernel filesystem (proc, sysfs, cgroup, debugfs, ...)"

int mount_check_opened(int fd, const char *canon, const char **ret_reason)
{
	char link[PATH_MAX], self[64];
	struct statfs sf;
	struct stat st;
	ssize_t n;

	*ret_reason = NULL;
	snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
	if ((n = readlink(self, link, sizeof(link) - 1)) < 0)
		return -errno;
	link[n] = '\0';
	if (strcmp(link, canon) != 0) {
		*ret_reason = "source is no longer the path that was checked";
		return -EPERM;
	}
	if (fstat(fd, &st) < 0 || fstatfs(fd, &sf) < 0)
		return -errno;
	if (special_file(&st)) {
		*ret_reason = REASON_SPECIAL;
		return -EPERM;
	}
	if (kernel_fs_type(&sf)) {
		*ret_reason = REASON_KERNEL_FS;
		return -EPERM;
	}
	return 0;
}

int mount_check_source(const char *source, const char *home, const char *data_dir,
                       char **ret_canon, const char **ret_reason)
{
	char *canon, *h = NULL, *d = NULL;
	int r = 0;

	*ret_reason = NULL;
	if (!source || source[0] != '/') {
		*ret_reason = "source must be an absolute path";
		return -EINVAL;
	}
	for (const char *p = source; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f) {
			*ret_reason = "source contains a control character";
			return -EINVAL;
		}
	/* realpath resolves "..", "." and every symlink: ~/./.ssh and a link to ~/.ssh both
	 * arrive here as the real ~/.ssh */
	if (!(canon = realpath(source, NULL))) {
		*ret_reason = errno == ENOENT ? "source does not exist" : "source cannot be resolved";
		return errno == ENOENT ? -ENOENT : -EINVAL;
	}
	for (size_t i = 0; forbidden_exact[i]; i++) {
		char *f = canon_or_copy(forbidden_exact[i]);
		bool hit = f && strcmp(canon, f) == 0;
		free(f);
		if (hit) {
			*ret_reason = "source is a system root (/, /etc, /usr, /System or /var)";
			r = -EPERM;
			goto out;
		}
	}
	{
		struct stat st;
		if (lstat(canon, &st) < 0 || special_file(&st)) {
			*ret_reason = REASON_SPECIAL;
			r = -EPERM;
			goto out;
		}
	}
	for (size_t i = 0; forbidden_trees[i]; i++) {
		char *f = canon_or_copy(forbidden_trees[i]);
		bool hit = f && path_at_or_below(canon, f);
		free(f);
		if (hit) {
			*ret_reason = "source is in a kernel or runtime tree (/proc, /sys, /dev, /run, "
			              "/boot, /var/lib)";
			r = -EPERM;
			goto out;
		}
	}
	if (on_kernel_fs(canon)) {
		*ret_reason = REASON_KERNEL_FS;
		r = -EPERM;
		goto out;
	}
	if (home && home[0] == '/') {
		h = canon_or_copy(home);
		if (h && strcmp(canon, h) == 0) {
			*ret_reason = "source is the home directory itself";
			r = -EPERM;
			goto out;
		}
	}
	if (in_any_credential_tree(canon, home)) {
		*ret_reason = "source is in a credential directory (.ssh, .aws, .gnupg, "
		              ".config/gcloud, .kube, .docker, Library/Keychains) of a home";
		r = -EPERM;
		goto out;
	}
	if (data_dir) {
		d = canon_or_copy(data_dir);
		/* at or below the data dir: one sandbox could edit another's files. Above it
		 * (a parent that contains it) would expose it too. */
		if (d && (path_at_or_below(canon, d) || path_at_or_below(d, canon))) {
			*ret_reason = "source is or contains the engine's data directory";
			r = -EPERM;
			goto out;
		}
	}
out:
	free(h);
	free(d);
	if (r < 0) {
		free(canon);
		return r;
	}
	*ret_canon = canon;
	return 0;
}

int mount_check_target(const char *target, const char **ret_reason)
{
	const char *seg;
	size_t len;

	*ret_reason = NULL;
	if (!target || !*target) {
		*ret_reason = "target must not be empty";
		return -EINVAL;
	}
	len = strlen(target);
	if (len >= PATH_MAX) {
		*ret_reason = "target is too long";
		return -EINVAL;
	}
	if (target[0] == '/') {
		*ret_reason = "target must be relative to the sandbox";
		return -EINVAL;
	}
	for (const char *p = target; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f) {
			*ret_reason = "target contains a control character";
			return -EINVAL;
		}
	seg = target;
	for (;;) {
		const char *end = strchr(seg, '/');
		size_t n = end ? (size_t)(end - seg) : strlen(seg);
		if (n == 0 || (n == 1 && seg[0] == '.') || (n == 2 && seg[0] == '.' && seg[1] == '.')) {
			*ret_reason = "target must stay inside the sandbox (no empty, \".\" or \"..\" "
			              "segments)";
			return -EINVAL;
		}
		if (n == 4 && strncmp(seg, ".sbx", 4) == 0 && seg == target) {
			*ret_reason = "target .sbx is reserved for the engine";
			return -EINVAL;
		}
		if (!end)
			break;
		seg = end + 1;
	}
	return 0;
}
