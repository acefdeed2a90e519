/* The files API (DESIGN.md §10): list, read, write, delete and mkdir inside a sandbox's
 * workdir and its mounts.
 *
 * The I/O is done by a short-lived child of the launcher that holds a descriptor of its
 * base directory (the workdir, or the source of the mount the path walks into), then
 * drops to the uid the jail would have there (the sandbox's jail uid; a mount's owner for
 * a non-root-owned mount, which the jail sees idmapped), sets NO_NEW_PRIVS, and resolves
 * the rest of the path with openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS): the kernel
 * refuses every step out of the base, absolute symlinks and ".." beyond it included, in
 * the one resolution the operation uses. Bytes travel in memfds, never through the
 * launcher's memory beyond a descriptor. Never as root. */
#ifndef SBX_LAUNCHER_FILES_H
#define SBX_LAUNCHER_FILES_H

#include <stdbool.h>
#include <stdint.h>

#include "launcher.h"
#include "proto.h"

#define FILES_TIMEOUT_MS   30000u /* a helper still busy this long is killed */
#define FILES_DELETE_DEPTH 64u    /* a recursive delete goes this deep at most */
#define FILES_INFLIGHT_MAX 32u    /* helpers at once; more get engine_unavailable */
#define FILES_WHY_MAX      200u

/* The outcome: err 0 and rep filled (fd: a memfd for READ and LIST, else -1; the callee
 * owns it), or a PERR_* with why. rep's strings live during the call only. */
typedef void (*files_done_fn)(int err, const char *why, const struct msg_FILE_REP *rep, int fd,
                              void *arg);

/* Check op against sb and start the helper. in_fd: WRITE's sealed memfd (taken, closed on
 * every path). done is called exactly once, possibly before this returns. */
void files_start(struct launcher *L, const struct sandbox *sb, const struct msg_FILE_OP *op,
                 int in_fd, files_done_fn done, void *arg);

/* Split a request path into its components: "" and "." dropped, ".." kept (the kernel
 * judges it against the base). -EINVAL: absolute, a NUL-free but empty component list for
 * an operation that needs a name, or too many components. Exposed for unit tests. */
#define FILES_COMPONENTS_MAX 256u
int files_split(const char *path, char *buf, size_t bufsz, const char **comp, size_t *ncomp);

#endif
