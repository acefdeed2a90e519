/* REST routing derived from the operation table: method + path pattern. */
#ifndef SBX_API_ROUTE_H
#define SBX_API_ROUTE_H

#include <event2/http.h>
#include <stddef.h>

#include "ops.h"

#define ROUTE_SEGS_MAX  8  /* path segments under /api/sandbox */
#define ROUTE_ALLOW_MAX 64 /* "GET, POST, PUT, PATCH, DELETE" fits */

/* Match `path` (under /api/sandbox; split in place, so the bound values point into it)
 * against the table. 0: *ret is the row and its placeholders are bound in a. -ENOENT: no
 * pattern matches. -EOPNOTSUPP: a pattern matches but not with this method; allow lists
 * the methods that do ("GET, PUT"). */
int route_find(char *path, enum evhttp_cmd_type m, const struct op_row **ret, struct op_args *a,
               char *allow, size_t allowsz);

#endif
