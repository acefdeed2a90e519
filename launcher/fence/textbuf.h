/* A bounded growing text buffer for generated profiles. */
#ifndef SBX_TEXTBUF_H
#define SBX_TEXTBUF_H

#include <stddef.h>

#define TEXTBUF_MAX (256u * 1024u)

struct textbuf {
	char *p;
	size_t len, cap;
	int err; /* first error (-ENOMEM, -E2BIG); appends after an error do nothing */
};

void textbuf_printf(struct textbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Append s as the inside of an SBPL string literal: backslash and quote escaped. */
void textbuf_sbpl_str(struct textbuf *b, const char *s);
/* Returns the text (caller frees) or NULL with *ret_err. */
char *textbuf_steal(struct textbuf *b, int *ret_err);
void textbuf_clear(struct textbuf *b);

#endif
