#include "textbuf.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int textbuf_reserve(struct textbuf *b, size_t extra)
{
	size_t want = b->len + extra + 1;
	char *np;
	if (want > TEXTBUF_MAX)
		return -E2BIG;
	if (want <= b->cap)
		return 0;
	if (want < b->cap * 2)
		want = b->cap * 2;
	if (want > TEXTBUF_MAX)
		want = TEXTBUF_MAX;
	if (!(np = realloc(b->p, want)))
		return -ENOMEM;
	b->p = np;
	b->cap = want;
	return 0;
}

void textbuf_printf(struct textbuf *b, const char *fmt, ...)
{
	va_list ap;
	int n;
	if (b->err)
		return;
	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0 || (b->err = textbuf_reserve(b, (size_t)n)) < 0) {
		if (!b->err)
			b->err = -EINVAL;
		return;
	}
	va_start(ap, fmt);
	vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}

void textbuf_sbpl_str(struct textbuf *b, const char *s)
{
	for (; s && *s && !b->err; s++) {
		if (*s == '\\' || *s == '"')
			textbuf_printf(b, "\\%c", *s);
		else
			textbuf_printf(b, "%c", *s);
	}
}

char *textbuf_steal(struct textbuf *b, int *ret_err)
{
	char *p;
	if (b->err || !b->p) {
		*ret_err = b->err ? b->err : -EINVAL;
		textbuf_clear(b);
		return NULL;
	}
	p = b->p;
	b->p = NULL;
	b->len = b->cap = 0;
	return p;
}

void textbuf_clear(struct textbuf *b)
{
	free(b->p);
	b->p = NULL;
	b->len = b->cap = 0;
	b->err = 0;
}
