/* See capture.h. */
#include "capture.h"

#include <stdlib.h>
#include <string.h>

void capture_init(struct capture *c, size_t limit)
{
	*c = (struct capture){ .limit = limit };
}

size_t capture_add(struct capture *c, const char *data, size_t n)
{
	size_t keep = c->len < c->limit ? c->limit - c->len : 0;
	if (keep > n)
		keep = n;
	if (keep < n)
		c->truncated = true;
	if (!keep)
		return 0;
	if (c->len + keep > c->cap) {
		size_t nc = c->cap ? c->cap * 2 : 4096;
		char *nb;
		while (nc < c->len + keep)
			nc *= 2;
		if (nc > c->limit)
			nc = c->limit;
		if (!(nb = realloc(c->buf, nc))) {
			c->truncated = true;
			return 0;
		}
		c->buf = nb;
		c->cap = nc;
	}
	memcpy(c->buf + c->len, data, keep);
	c->len += keep;
	return keep;
}

char *capture_steal(struct capture *c, size_t *ret_len)
{
	char *b = c->buf;
	*ret_len = c->len;
	c->buf = NULL;
	c->len = c->cap = 0;
	return b;
}

void capture_free(struct capture *c)
{
	size_t n;
	free(capture_steal(c, &n));
}

