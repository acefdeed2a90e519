/* Privilege drop and self-confinement of the API process (DESIGN.md §1). Each step
 * records in struct confine_report what actually took effect, so /health tells the truth. */
#include "confine.h"
#include "landlock_abi.h"
#include "privdrop.h"

#include <errno.h>
#include <grp.h>
#include <linux/landlock.h>
#include <seccomp.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Debian 12's kernel headers stop at Landlock ABI 3; the running kernel may know more. */
#ifndef LANDLOCK_ACCESS_FS_REFER
#define LANDLOCK_ACCESS_FS_REFER (1ULL << 13)
#endif
#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14)
#endif
#ifndef LANDLOCK_ACCESS_FS_IOCTL_DEV
#define LANDLOCK_ACCESS_FS_IOCTL_DEV (1ULL << 15)
#endif
#ifndef LANDLOCK_ACCESS_NET_BIND_TCP
#define LANDLOCK_ACCESS_NET_BIND_TCP (1ULL << 0)
#endif
#ifndef LANDLOCK_ACCESS_NET_CONNECT_TCP
#define LANDLOCK_ACCESS_NET_CONNECT_TCP (1ULL << 1)
#endif
#ifndef LANDLOCK_CREATE_RULESET_VERSION
#define LANDLOCK_CREATE_RULESET_VERSION (1U << 0)
#endif

/* Our own copy of the ABI 4+ ruleset attribute (old headers lack handled_access_net). */
struct confine_ll_attr {
	uint64_t handled_access_fs;
	uint64_t handled_access_net;
};

static void report_detail(struct confine_report *rep, const char *what, int err)
{
	size_t n = strlen(rep->detail);
	if (n + 2 >= sizeof(rep->detail))
		return;
	snprintf(rep->detail + n, sizeof(rep->detail) - n, "%s%s: %s", n ? "; " : "", what,
	         strerror(err));
}

int confine_drop_privs(const char *chroot_dir, uid_t uid, gid_t gid, struct confine_report *rep)
{
	rep->uid = getuid();
	rep->gid = getgid();
	if (geteuid() != 0) {
		rep->uid_dropped = rep->uid != 0;
		return 0; /* nothing to drop; not an error */
	}
	if (chroot_dir) {
		if (chroot(chroot_dir) < 0 || chdir("/") < 0) {
			int e = errno;
			report_detail(rep, "chroot", e);
			return -e;
		}
		rep->chroot = true;
	}
	int r = privdrop_to(uid, gid); /* verified: a silently failed drop is worse than none */
	if (r < 0) {
		report_detail(rep, "drop uid", -r);
		return r;
	}
	rep->uid = uid;
	rep->gid = gid;
	rep->uid_dropped = uid != 0;
	return 0;
}

int confine_no_new_privs(struct confine_report *rep)
{
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) {
		int e = errno;
		report_detail(rep, "no_new_privs", e);
		return -e;
	}
	rep->no_new_privs = prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) == 1;
	return 0;
}

int confine_landlock_abi(void)
{
	long abi = syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
	return abi < 0 ? 0 : (int)abi;
}

/* Every filesystem right the given ABI knows (landlock_abi.h: one list for the API,
 * sbx-net and sbx-jail-init). */
static uint64_t landlock_fs_rights(int abi) { return sbx_ll_fs_rights(abi); }

int confine_landlock_deny_all(struct confine_report *rep)
{
	return confine_landlock_no_files(rep, false);
}

int confine_landlock_no_files(struct confine_report *rep, bool connect)
{
	int abi = confine_landlock_abi();
	if (abi <= 0) {
		report_detail(rep, "landlock", EOPNOTSUPP);
		return -EOPNOTSUPP;
	}
	struct confine_ll_attr attr = { .handled_access_fs = landlock_fs_rights(abi) };
	size_t attr_size = sizeof(attr.handled_access_fs);
	if (abi >= 4) {
		/* connect: left unhandled, so allowed to any port (sbx-net's whole job) */
		attr.handled_access_net = LANDLOCK_ACCESS_NET_BIND_TCP |
		                          (connect ? 0 : LANDLOCK_ACCESS_NET_CONNECT_TCP);
		attr_size = sizeof(attr);
	}
	int fd = (int)syscall(SYS_landlock_create_ruleset, &attr, attr_size, 0);
	if (fd < 0) {
		int e = errno;
		report_detail(rep, "landlock", e);
		return -e;
	}
	/* no rules added: every handled right is denied everywhere */
	int r = (int)syscall(SYS_landlock_restrict_self, fd, 0);
	int e = errno;
	close(fd);
	if (r < 0) {
		report_detail(rep, "landlock", e);
		return -e;
	}
	rep->landlock = true;
	rep->landlock_abi = abi;
	rep->landlock_net = abi >= 4;
	return 0;
}

/* What an event loop serving descriptors it already holds needs. No open/openat, no
 * socket/bind/connect: everything the API uses was acquired before confinement.
 * memfd_create makes anonymous memory only (a run's large input goes to the launcher in
 * one, sealed); it reaches no file. */
static const char *const api_syscalls[] = {
	"read", "write", "readv", "writev", "pread64", "pwrite64", "recvmsg", "sendmsg",
	"recvfrom", "sendto", "accept", "accept4", "close", "epoll_create", "epoll_create1",
	"epoll_ctl", "epoll_wait", "epoll_pwait", "epoll_pwait2", "poll", "ppoll", "select",
	"pselect6", "fcntl", "ioctl", "getsockopt", "setsockopt", "getsockname", "getpeername",
	"shutdown", "clock_gettime", "clock_getres", "gettimeofday", "time", "nanosleep",
	"clock_nanosleep", "brk", "mmap", "munmap", "mremap", "mprotect", "madvise", "futex",
	"rt_sigreturn", "rt_sigprocmask", "rt_sigaction", "sigaltstack", "lseek", "fstat",
	"newfstatat", "statx", "getrandom", "exit", "exit_group", "sched_yield", "getpid",
	"gettid", "getuid", "geteuid", "getgid", "getegid", "tgkill", "eventfd2", "pipe2",
	"timerfd_create", "timerfd_settime", "restart_syscall", "prlimit64", "getrusage",
	"memfd_create",
#if defined(__SANITIZE_ADDRESS__)
	/* ASan/UBSan runtime: reports, stack traces, shadow memory bookkeeping */
	"prctl", "sched_getaffinity", "readlink", "openat", "getdents64", "wait4", "clone",
	"clone3", "sysinfo", "uname", "pipe", "dup", "dup2", "dup3", "mincore", "rt_sigsuspend",
	"getppid", "setrlimit", "kill", "process_vm_readv",
#endif
	NULL,
};

const char *const *confine_api_syscalls(void)
{
	return api_syscalls;
}

int confine_seccomp_api(struct confine_report *rep)
{
	return confine_seccomp_allow(rep, NULL);
}

int confine_seccomp_allow(struct confine_report *rep, const char *const *extra)
{
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ERRNO(EPERM));
	int r, n = 0;

	if (!ctx)
		return -ENOMEM;
	for (size_t i = 0; extra && extra[i]; i++) {
		int nr = seccomp_syscall_resolve_name(extra[i]);
		if (nr != __NR_SCMP_ERROR && seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nr, 0) == 0)
			n++;
	}
	for (size_t i = 0; api_syscalls[i]; i++) {
		int nr = seccomp_syscall_resolve_name(api_syscalls[i]);
		if (nr == __NR_SCMP_ERROR)
			continue; /* not on this architecture (e.g. "time" on arm64) */
		if (seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nr, 0) == 0)
			n++;
	}
	/* the calls that would undo the confinement kill instead of failing quietly */
	static const int kill_nrs[] = { SCMP_SYS(execve), SCMP_SYS(execveat), SCMP_SYS(ptrace) };
	for (size_t i = 0; i < sizeof(kill_nrs) / sizeof(kill_nrs[0]); i++) {
		if ((r = seccomp_rule_add(ctx, SCMP_ACT_KILL_PROCESS, kill_nrs[i], 0)) < 0)
			goto out;
	}
	if ((r = seccomp_load(ctx)) < 0)
		goto out;
	rep->seccomp = true;
	rep->seccomp_syscalls = n;
out:
	if (r < 0)
		report_detail(rep, "seccomp", -r);
	seccomp_release(ctx);
	return r;
}
