/* Small helpers shared by every process. Return 0 / a count, or -errno. */
#ifndef SBX_UTIL_H
#define SBX_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The fixed descriptors a child role receives (DESIGN.md §1). */
#define SBX_FD_PARENT 3 /* channel to sbxd */
#define SBX_FD_PEER   4 /* channel to the other child */

uint64_t now_ms(void);       /* CLOCK_MONOTONIC */
/* Wait until fd is readable, up to ms; a signal does not shorten the wait (EINTR is
 * retried against the same deadline). 0, -ETIMEDOUT or -errno. */
int wait_readable(int fd, unsigned ms);
uint64_t now_unix_s(void);   /* wall clock, seconds */
uint64_t now_unix_ms(void);  /* wall clock, milliseconds */
int fmt_iso8601(uint64_t unix_s, char *buf, size_t bufsz); /* "2026-12-02T10:00:00Z" */

/* prefix + n random lowercase alphanumerics from getrandom(): "sbx_8f3k2a..." */
int random_id(const char *prefix, size_t n, char *buf, size_t bufsz);
int random_bytes(void *buf, size_t n);

/* A decimal number in min..max, nothing else (no sign, no spaces, no trailing bytes). */
int parse_uint(const char *s, unsigned min, unsigned max, unsigned *ret);
/* Append to a "; "-separated note in buf (bufsz), *off its length so far; cut at bufsz,
 * never past it. */
void note_append(char *buf, size_t bufsz, size_t *off, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

int mkdir_p(const char *path, mode_t mode);
int set_nonblock(int fd);
int set_cloexec(int fd, bool on);

/* Read a whole small file (at most max bytes, NUL-terminated). */
int read_file(const char *path, size_t max, char **ret, size_t *ret_len);
/* Write all of buf to fd, retrying on EINTR / short writes. */
int write_all(int fd, const void *buf, size_t len);

/* fork+exec `argv` with fd_parent on 3 and fd_peer on 4 (either may be -1), every other
 * descriptor above 2 closed, and an environment of exactly `envp`. Returns the pid. */
int spawn_role(char *const argv[], char *const envp[], int fd_parent, int fd_peer,
               pid_t *ret_pid);

/* Close every descriptor >= lowfd except those listed. */
void close_fds_from(int lowfd, const int *keep, size_t nkeep);

/* Directory of the running executable (from /proc/self/exe), for finding siblings. */
int self_exe_dir(char *buf, size_t bufsz);

#endif
