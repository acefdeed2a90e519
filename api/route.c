/* REST routing: a path is matched against each row's pattern segment by segment, "{name}"
 * taking any one segment. Empty segments are skipped, so "//health/" is "/health". */
#include "route.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* Does the pattern match the segments? Placeholders' values go to vals, in order. */
static bool pattern_match(const char *pat, char *const *seg, int n, const char **vals)
{
	int i = 0, nv = 0;
	while (*pat == '/')
		pat++;
	for (; *pat; i++) {
		const char *end = strchr(pat, '/');
		size_t len = end ? (size_t)(end - pat) : strlen(pat);
		if (i == n)
			return false;
		if (pat[0] == '{') {
			if (nv == OP_PARAMS_MAX)
				return false;
			vals[nv++] = seg[i];
		} else if (strlen(seg[i]) != len || strncmp(seg[i], pat, len) != 0) {
			return false;
		}
		pat += len;
		while (*pat == '/')
			pat++;
	}
	return i == n;
}

int route_find(char *path, enum evhttp_cmd_type m, const struct op_row **ret, struct op_args *a,
               char *allow, size_t allowsz)
{
	char *seg[ROUTE_SEGS_MAX], *save = NULL;
	const struct op_row *found = NULL;
	const char *vals[OP_PARAMS_MAX];
	size_t used = 0;
	int n = 0;

	if (allowsz)
		allow[0] = '\0';
	for (char *p = strtok_r(path, "/", &save); p; p = strtok_r(NULL, "/", &save)) {
		if (n == ROUTE_SEGS_MAX)
			return -ENOENT; /* longer than any pattern */
		seg[n++] = p;
	}
	for (size_t i = 0; i < op_table_len; i++) {
		const struct op_row *r = &op_table[i];
		if (!pattern_match(r->path, seg, n, vals))
			continue;
		if (r->method == m && !found) {
			const struct op_param *params[OP_PARAMS_MAX];
			int np = op_row_params(r, params, OP_PARAMS_MAX);
			for (int k = 0; k < np; k++)
				op_param_set(params[k], a, vals[k]);
			found = r;
		}
		if (used < allowsz)
			used += (size_t)snprintf(allow + used, allowsz - used, "%s%s", used ? ", " : "",
			                         op_method_name(r->method));
	}
	if (found) {
		*ret = found;
		return 0;
	}
	return used ? -EOPNOTSUPP : -ENOENT;
}
