/* A run's program text and stdin as the API sent them: inline in the RUN/EXEC message, or
 * (too big for one packet) in a sealed memfd. The API is hostile: the memfd must be sealed
 * against every change, hold exactly what the message announces, and stay within the
 * documented limits, or the run is refused. */
#ifndef SBX_LAUNCHER_RUN_INPUT_H
#define SBX_LAUNCHER_RUN_INPUT_H

#include <stdint.h>

/* Read code_len + stdin_len bytes from fd into two malloc'd NUL-terminated strings.
 * Returns 0; -E2BIG past PROTO_RUN_CODE_MAX / PROTO_RUN_STDIN_MAX; -EPERM when the memfd
 * is not sealed against writes, growth and shrinking; -EBADMSG when its size is not the
 * announced one or the text holds a NUL byte; other -errno on I/O failure. */
int run_input_read(int fd, uint64_t code_len, uint64_t stdin_len, char **ret_code,
                   char **ret_stdin);

#endif
