/* The one parser of a listen address, shared by sbxd (which checks it before anything
 * starts) and sbx-api (which binds it), so the two can never disagree (DESIGN.md §4, §8). */
#ifndef SBX_LISTEN_H
#define SBX_LISTEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LISTEN_HOST_MAX 64u /* a numeric host, brackets stripped, with its NUL */

/* Parse "127.0.0.1:7420" / "[::1]:7420" / "localhost:7420" into a numeric host (no
 * brackets; localhost becomes 127.0.0.1) and a port 1..65535. Names other than localhost
 * are refused: they could resolve anywhere. Returns 0; -EINVAL for anything unparsable or
 * a host longer than hostsz; -EPERM for a non-loopback host unless allow_remote. host and
 * port are untouched on failure. */
int listen_parse(const char *s, bool allow_remote, char *host, size_t hostsz, uint16_t *ret_port);

/* 127.0.0.0/8 or ::1 (a numeric host as listen_parse returns it). */
bool listen_host_is_loopback(const char *host);
/* 0.0.0.0 or :: — every address of the machine. */
bool listen_host_is_wildcard(const char *host);

#endif
