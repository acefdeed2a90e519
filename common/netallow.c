/* See netallow.h. */
#include "netallow.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

bool netallow_name_ok(const char *name, size_t len)
{
	size_t label = 0;
	if (len == 0 || len > NETALLOW_NAME_MAX || name[0] == '.' || name[len - 1] == '.')
		return false;
	for (size_t i = 0; i < len; i++) {
		char c = name[i];
		if (c == '.') {
			if (label == 0 || name[i - 1] == '-')
				return false;
			label = 0;
			continue;
		}
		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'))
			return false;
		if (c == '-' && label == 0)
			return false;
		if (++label > NETALLOW_LABEL_MAX)
			return false;
	}
	return name[len - 1] != '-';
}

/* Split "name:port": the name's length and the port, or -EINVAL. */
static int split(const char *entry, size_t *ret_len, uint16_t *ret_port)
{
	const char *colon = strrchr(entry, ':');
	char *end;
	long v;
	if (!colon || colon == entry || !colon[1] || colon[1] == '+' || colon[1] == '-' ||
	    colon[1] == ' ')
		return -EINVAL;
	errno = 0;
	v = strtol(colon + 1, &end, 10);
	if (errno || *end || v < 1 || v > 65535 || end - (colon + 1) > 5)
		return -EINVAL;
	*ret_len = (size_t)(colon - entry);
	*ret_port = (uint16_t)v;
	return 0;
}

int netallow_check(const char *entry)
{
	size_t len;
	uint16_t port;
	if (!entry || strlen(entry) > NETALLOW_ENTRY_MAX || split(entry, &len, &port) < 0)
		return -EINVAL;
	if (len > 2 && entry[0] == '*' && entry[1] == '.')
		return netallow_name_ok(entry + 2, len - 2) ? 0 : -EINVAL;
	return netallow_name_ok(entry, len) ? 0 : -EINVAL;
}

bool netallow_match_name(const char *entry, const char *host)
{
	size_t len, hl = strlen(host);
	uint16_t port;
	if (split(entry, &len, &port) < 0 || hl == 0)
		return false;
	if (hl && host[hl - 1] == '.') /* the root's dot: "pypi.org." is "pypi.org" */
		hl--;
	if (len > 2 && entry[0] == '*' && entry[1] == '.') {
		size_t sl = len - 1; /* ".suffix" */
		return hl > sl && strncasecmp(host + hl - sl, entry + 1, sl) == 0;
	}
	return hl == len && strncasecmp(host, entry, len) == 0;
}

bool netallow_match(const char *entry, const char *host, uint16_t port)
{
	size_t len;
	uint16_t p;
	return split(entry, &len, &p) == 0 && p == port && netallow_match_name(entry, host);
}
