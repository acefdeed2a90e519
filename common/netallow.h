/* The entries of proxy.allow (DESIGN.md §9), one syntax for the launcher, which stores
 * them, and sbx-net, which enforces them: "name:port" or "*.suffix:port", the name a
 * lowercase DNS name. */
#ifndef SBX_NETALLOW_H
#define SBX_NETALLOW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define NETALLOW_ENTRIES_MAX 64u  /* per sandbox (SBX_PROXY_ALLOW_MAX) */
#define NETALLOW_NAME_MAX    253u /* a DNS name, dots included */
#define NETALLOW_LABEL_MAX   63u
#define NETALLOW_ENTRY_MAX   (2u + NETALLOW_NAME_MAX + 6u) /* "*." name ":65535" */

/* 0 when entry is well-formed, else -EINVAL. */
int netallow_check(const char *entry);
/* A host name well-formed as the name part (no wildcard), compared case-insensitively
 * after lowering by the caller. */
bool netallow_name_ok(const char *name, size_t len);
/* Does a well-formed entry allow host:port? "*.x.org" allows "a.x.org" and "a.b.x.org",
 * never "x.org"; host is compared without regard to case. */
bool netallow_match(const char *entry, const char *host, uint16_t port);
/* ...any port: the resolver answers a name when some entry names it. */
bool netallow_match_name(const char *entry, const char *host);

#endif
