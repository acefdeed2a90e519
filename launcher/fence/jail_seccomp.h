/* The baseline syscall filter every jail gets (DESIGN.md §5), compiled with libseccomp
 * once per configuration and handed to bwrap as `--seccomp FD`. */
#ifndef SBX_JAIL_SECCOMP_H
#define SBX_JAIL_SECCOMP_H

#include <stdbool.h>

/* System calls the baseline refuses with EPERM (NULL-terminated), for docs and tests. */
extern const char *const jail_seccomp_denied[];

/* Which sockets the filter allows (the network fence, launcher/fence/netplan.h). */
enum jail_sock {
	JAIL_SOCK_NO_INET = 0, /* no AF_INET / AF_INET6 / AF_PACKET at all (no network) */
	JAIL_SOCK_NO_UDP,      /* ports only: inet stream sockets, no datagram (UDP, ping) */
	JAIL_SOCK_INET,        /* network / proxy: inet sockets, no AF_PACKET */
	JAIL_SOCK_N_
};

/* The filter as BPF in a sealed memfd, compiled once per configuration; each call returns
 * a new read-only open file of it positioned at 0.
 * Returns 0 and the fd (O_CLOEXEC; clear it before handing it to bwrap) or -errno. */
int jail_seccomp_fd(enum jail_sock socks, int *ret_fd);

#endif
