/* The baseline syscall filter every jail gets (DESIGN.md §5), compiled with libseccomp
 * once per configuration and handed to bwrap as `--seccomp FD`. */
#ifndef SBX_JAIL_SECCOMP_H
#define SBX_JAIL_SECCOMP_H

#include <stdbool.h>

/* System calls the baseline refuses with EPERM (NULL-terminated), for docs and tests. */
extern const char *const jail_seccomp_denied[];

/* The filter as BPF in a sealed memfd, compiled once per configuration; each call returns
 * a new read-only open file of it positioned at 0. deny_inet also refuses AF_INET /
 * AF_INET6 / AF_PACKET sockets (a sandbox with no network and no ports).
 * Returns 0 and the fd (O_CLOEXEC; clear it before handing it to bwrap) or -errno. */
int jail_seccomp_fd(bool deny_inet, int *ret_fd);

#endif
