/* Mount validation (DESIGN.md §10): a source is canonicalized by the kernel before it is
 * compared with the forbidden roots; a target is a plain relative path inside the sandbox. */
#ifndef SBX_MOUNTS_H
#define SBX_MOUNTS_H

#define MOUNTS_MAX 32u /* mounts per sandbox */

/* Canonicalize source (it must exist) and refuse it when it is, or for the descendant
 * rules lies at or below, a forbidden place. home and data_dir are the daemon user's home
 * and the engine's data directory. Returns 0 with *ret_canon (malloc'd), -ENOENT /
 * -EINVAL with *ret_reason, or -EPERM with *ret_reason (a static string). */
int mount_check_source(const char *source, const char *home, const char *data_dir,
                       char **ret_canon, const char **ret_reason);

/* The run-time half of the source check, on a descriptor opened (O_PATH, no symlinks
 * followed) from the canonical path stored at add time: it must still name canon
 * (/proc/self/fd), be no socket, device node or FIFO and lie on no kernel filesystem.
 * Returns 0, -EPERM with *ret_reason, or -errno. */
int mount_check_opened(int fd, const char *canon, const char **ret_reason);

/* A target: relative, non-empty, at most PATH_MAX, no "." / ".." / empty segments, no
 * control characters. Returns 0 or -EINVAL with *ret_reason. */
int mount_check_target(const char *target, const char **ret_reason);

#endif
