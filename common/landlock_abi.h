/* Landlock as this project uses it, defined here because the build machine's kernel
 * headers predate the network rules (ABI 4) and scoping (ABI 6) the running kernel has.
 * Header only, libc only: sbx-jail-init is a static binary that links nothing else. */
#ifndef SBX_LANDLOCK_ABI_H
#define SBX_LANDLOCK_ABI_H

#include <stddef.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#define SYS_landlock_add_rule       445
#define SYS_landlock_restrict_self  446
#endif

#define SBX_LL_CREATE_RULESET_VERSION (1u << 0)
#define SBX_LL_RULE_PATH_BENEATH      1
#define SBX_LL_RULE_NET_PORT          2

/* filesystem rights, by the ABI that introduced them */
#define SBX_LL_FS_EXECUTE     (1ull << 0)
#define SBX_LL_FS_WRITE_FILE  (1ull << 1)
#define SBX_LL_FS_READ_FILE   (1ull << 2)
#define SBX_LL_FS_READ_DIR    (1ull << 3)
#define SBX_LL_FS_REMOVE_DIR  (1ull << 4)
#define SBX_LL_FS_REMOVE_FILE (1ull << 5)
#define SBX_LL_FS_MAKE_CHAR   (1ull << 6)
#define SBX_LL_FS_MAKE_DIR    (1ull << 7)
#define SBX_LL_FS_MAKE_REG    (1ull << 8)
#define SBX_LL_FS_MAKE_SOCK   (1ull << 9)
#define SBX_LL_FS_MAKE_FIFO   (1ull << 10)
#define SBX_LL_FS_MAKE_BLOCK  (1ull << 11)
#define SBX_LL_FS_MAKE_SYM    (1ull << 12)
#define SBX_LL_FS_REFER       (1ull << 13) /* ABI 2 */
#define SBX_LL_FS_TRUNCATE    (1ull << 14) /* ABI 3 */
#define SBX_LL_FS_IOCTL_DEV   (1ull << 15) /* ABI 5 */

#define SBX_LL_NET_BIND_TCP    (1ull << 0) /* ABI 4 */
#define SBX_LL_NET_CONNECT_TCP (1ull << 1) /* ABI 4 */

#define SBX_LL_SCOPE_ABSTRACT_UNIX_SOCKET (1ull << 0) /* ABI 6 */
#define SBX_LL_SCOPE_SIGNAL               (1ull << 1) /* ABI 6 */

struct sbx_ll_ruleset_attr {
	uint64_t handled_access_fs;
	uint64_t handled_access_net; /* ABI 4 */
	uint64_t scoped;             /* ABI 6 */
};

struct sbx_ll_path_beneath_attr {
	uint64_t allowed_access;
	int32_t parent_fd;
} __attribute__((packed));

struct sbx_ll_net_port_attr {
	uint64_t allowed_access;
	uint64_t port;
};

/* The running kernel's ABI, 0 without Landlock. */
static inline int sbx_ll_abi(void)
{
	long v = syscall(SYS_landlock_create_ruleset, NULL, 0, SBX_LL_CREATE_RULESET_VERSION);
	return v > 0 ? (int)v : 0;
}

/* Every filesystem right an ABI knows. */
static inline uint64_t sbx_ll_fs_rights(int abi)
{
	uint64_t r = (SBX_LL_FS_MAKE_SYM << 1) - 1; /* ABI 1: bits 0..12 */
	if (abi >= 2)
		r |= SBX_LL_FS_REFER;
	if (abi >= 3)
		r |= SBX_LL_FS_TRUNCATE;
	if (abi >= 5)
		r |= SBX_LL_FS_IOCTL_DEV;
	return abi >= 1 ? r : 0;
}

/* The size of the ruleset attribute an ABI accepts (older kernels refuse larger ones
 * with non-zero fields, and E2BIG for unknown sizes). */
static inline size_t sbx_ll_attr_size(int abi)
{
	return abi >= 6   ? sizeof(struct sbx_ll_ruleset_attr)
	       : abi >= 4 ? offsetof(struct sbx_ll_ruleset_attr, scoped)
	                  : offsetof(struct sbx_ll_ruleset_attr, handled_access_net);
}

#endif
