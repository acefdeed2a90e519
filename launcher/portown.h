/* Who holds a listening TCP port on this host, and where that process works (port reclaim,
 * launcher/apps.h). Linux: the socket's inode in /proc/net/tcp{,6} matched to a
 * /proc/<pid>/fd link, and /proc/<pid>/cwd. Where there is no /proc (macOS): lsof(8),
 * `lsof -nP -iTCP:PORT -sTCP:LISTEN -Fp` for the pid and `lsof -a -p PID -d cwd -Fn` for
 * the directory, each under a deadline. */
#ifndef SBX_LAUNCHER_PORTOWN_H
#define SBX_LAUNCHER_PORTOWN_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define PORTOWN_LSOF_TIMEOUT_MS 2000u /* one lsof run; past it lsof is killed */
#define PORTOWN_LSOF_OUT_MAX    65536u /* bytes of lsof output read */

/* The pid holding a listening socket on port (IPv4 or IPv6) in this network namespace;
 * 0 when none is found, or -errno. */
pid_t portown_proc(uint16_t port);
/* The TCP ports process pid listens on in its own network namespace; up to max. */
size_t portown_listening(pid_t pid, uint32_t *out, size_t max);

/* lsof's field output: the first "p<pid>" line, the first "n<name>" line. 0 or -ENOENT. */
int portown_parse_pid(const char *out, pid_t *ret);
int portown_parse_name(const char *out, char *buf, size_t sz);
/* The same questions through the lsof binary at path: the listener's pid (0: none), its
 * cwd. -ETIMEDOUT when lsof does not answer within PORTOWN_LSOF_TIMEOUT_MS. */
pid_t portown_lsof(const char *lsof, uint16_t port);
int portown_lsof_cwd(const char *lsof, pid_t pid, char *buf, size_t sz);

/* Both answers by the host's means: /proc when the kernel has it, else lsof (found in
 * /usr/sbin, /usr/bin). 0 with *ret_pid (0: nobody listens) and cwd filled, or -errno. */
int portown_owner(uint16_t port, pid_t *ret_pid, char *cwd, size_t cwdsz);

#endif
