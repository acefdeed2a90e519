/* The one way a process gives up root for a jail (or the API's) uid (DESIGN.md §1). */
#ifndef SBX_PRIVDROP_H
#define SBX_PRIVDROP_H

#include <sys/types.h>

/* OpenBSD's order: setgroups(0, NULL), setresgid, setresuid; then VERIFY that all three
 * uids and gids are what was asked and, for a non-zero uid, that root cannot be regained.
 * A drop that silently failed is worse than none, so callers never go on after an error.
 * Returns 0, -errno of the failing call, or -EPERM when the check finds anything else. */
int privdrop_to(uid_t uid, gid_t gid);

#endif
