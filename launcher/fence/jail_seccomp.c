/* The jail's baseline seccomp filter. Default allow: the jail is already in its own user,
 * pid, ipc and uts namespaces with no capabilities; the filter removes the kernel surfaces
 * that have repeatedly been the way out of such a jail (ptrace, keyrings, bpf, io_uring,
 * userfaultfd, perf, module loading, handle-based opens, TIOCSTI injection). */
#include "jail_seccomp.h"

#include <errno.h>
#include <stdio.h>
#include <fcntl.h>
#include <linux/if_ether.h>
#include <seccomp.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cleanup.h"

const char *const jail_seccomp_denied[] = {
	"ptrace", "process_vm_readv", "process_vm_writev", "mount", "umount2", "pivot_root",
	"move_mount", "open_tree", "fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr",
	"bpf", "keyctl", "add_key", "request_key", "kexec_load", "kexec_file_load",
	"init_module", "finit_module", "delete_module", "perf_event_open", "userfaultfd",
	"io_uring_setup", "io_uring_enter", "io_uring_register", "open_by_handle_at",
	"name_to_handle_at", "acct", "swapon", "swapoff", "reboot", "settimeofday",
	"clock_settime", "adjtimex", "clock_adjtime", "syslog", "quotactl", "lookup_dcookie",
	"vhangup", "iopl", "ioperm", "uselib", "personality", "nfsservctl", NULL
};

static void seccomp_releasep(scmp_filter_ctx *c)
{
	if (*c)
		seccomp_release(*c);
}

/* 32-bit x86 and x32 syscalls would otherwise walk around rules written for x86_64. */
static int add_arches(scmp_filter_ctx ctx)
{
#if defined(__x86_64__)
	int r;
	if ((r = seccomp_arch_add(ctx, SCMP_ARCH_X86)) < 0 && r != -EEXIST)
		return r;
	if ((r = seccomp_arch_add(ctx, SCMP_ARCH_X32)) < 0 && r != -EEXIST)
		return r;
#endif
	return 0;
}

static int deny_name(scmp_filter_ctx ctx, const char *name)
{
	int nr = seccomp_syscall_resolve_name(name);
	int r;
	if (nr == __NR_SCMP_ERROR)
		return 0; /* not on this architecture */
	r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 0);
	/* -EDOM/-EINVAL: the name exists on some arch of the filter but not all */
	return (r == -EDOM || r == -EINVAL) ? 0 : r;
}

static int jail_seccomp_build(enum jail_sock socks, int *ret_fd)
{
	static const int families[] = { AF_INET, AF_INET6, AF_PACKET };
	_cleanup_(seccomp_releasep) scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	_cleanup_close_ int fd = -1;
	int r;

	if (!ctx)
		return -ENOMEM;
	if ((r = add_arches(ctx)) < 0)
		return r;
	/* a filter that fails to load must fail the run, never run unfiltered: bwrap exits
	 * when --seccomp cannot be applied */
	for (size_t i = 0; jail_seccomp_denied[i]; i++)
		if ((r = deny_name(ctx, jail_seccomp_denied[i])) < 0)
			return r;
	/* TIOCSTI / TIOCLINUX push keystrokes into a terminal the jail shares */
	if ((r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(ioctl), 1,
	                          SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu, TIOCSTI))) < 0)
		return r;
	if ((r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(ioctl), 1,
	                          SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu, TIOCLINUX))) < 0)
		return r;
	/* AF_PACKET in every jail; the inet families per the network fence */
	for (size_t i = 0; i < sizeof(families) / sizeof(families[0]); i++) {
		struct scmp_arg_cmp fam = { .arg = 0, .op = SCMP_CMP_EQ,
			                    .datum_a = (scmp_datum_t)families[i], .datum_b = 0 };
		struct scmp_arg_cmp dgram = { .arg = 1, .op = SCMP_CMP_MASKED_EQ,
			                      .datum_a = 0xf, .datum_b = SOCK_DGRAM };
		/* one errno per filter: on i386 libseccomp folds every socket rule into one
		 * socketcall rule, and two actions there conflict (EEXIST) */
		if (socks == JAIL_SOCK_NO_UDP && families[i] == AF_PACKET)
			r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EACCES), SCMP_SYS(socket), 1, fam);
		else if (families[i] == AF_PACKET || socks == JAIL_SOCK_NO_INET)
			r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT), SCMP_SYS(socket), 1, fam);
		else if (socks == JAIL_SOCK_NO_UDP) /* the type's low bits; flags ride above */
			r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EACCES), SCMP_SYS(socket), 2, fam, dgram);
		else
			r = 0;
		if (r < 0)
			return r;
	}
	/* i386 multiplexes socket() through socketcall, whose arguments cannot be seen: refused
	 * whole, with the action of the rules above (libseccomp folds those into socketcall on
	 * that arch, and a second action for it would conflict: EEXIST) */
	if (socks != JAIL_SOCK_INET) {
		int e = socks == JAIL_SOCK_NO_INET ? EAFNOSUPPORT : EACCES;
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(e), SCMP_SYS(socketcall), 0);
		if (r < 0 && r != -EDOM && r != -EINVAL && r != -EEXIST)
			return r;
	}
	fd = memfd_create("sbx-seccomp", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return -errno;
	if ((r = seccomp_export_bpf(ctx, fd)) < 0)
		return r;
	if (lseek(fd, 0, SEEK_SET) < 0)
		return -errno;
	/* the jail must not be able to rewrite its own filter through a leaked fd */
	if (fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL) < 0)
		return -errno;
	*ret_fd = steal_fd(&fd);
	return 0;
}

/* The filters (one per enum jail_sock) are compiled once per process (the
 * compile was a sixth of the launcher's time under run load) and each run gets the memfd
 * opened anew through /proc: a file of its own with its own offset at 0, so concurrent
 * runs never share a read position, and read-only over seals that forbid any change. */
int jail_seccomp_fd(enum jail_sock socks, int *ret_fd)
{
	static int cached[JAIL_SOCK_N_] = { -1, -1, -1 };
	int *c;
	char path[40];
	int fd, r;

	if ((unsigned)socks >= JAIL_SOCK_N_)
		return -EINVAL;
	c = &cached[socks];
	if (*c < 0 && (r = jail_seccomp_build(socks, c)) < 0)
		return r;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", *c);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return -errno;
	*ret_fd = fd;
	return 0;
}
