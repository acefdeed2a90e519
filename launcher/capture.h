/* One output stream's capture, a small object with its own limit (a sandbox's
 * limits.outputBytes): what the runner keeps of stdout and of stderr. */
#ifndef SBX_CAPTURE_H
#define SBX_CAPTURE_H

#include <stdbool.h>
#include <stddef.h>

/* Bytes beyond limit are read and dropped (so the child
 * never blocks on a full pipe) and flagged. */
struct capture {
	char *buf;
	size_t len, cap, limit;
	bool truncated;
};
void capture_init(struct capture *c, size_t limit);
/* Keep what fits under the limit; returns how many bytes were kept. */
size_t capture_add(struct capture *c, const char *data, size_t n);
/* Hand the buffer out (the capture forgets it). */
char *capture_steal(struct capture *c, size_t *ret_len);
void capture_free(struct capture *c);

#endif
