/* Reading a run's input from a memfd the API passed, trusting nothing about it. */
#include "run_input.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "proto.h"

#define RUN_INPUT_SEALS (F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK)

static int read_exact(int fd, char *buf, size_t len, off_t off)
{
	size_t got = 0;
	while (got < len) {
		ssize_t n = pread(fd, buf + got, len - got, off + (off_t)got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EBADMSG;
		got += (size_t)n;
	}
	buf[len] = '\0';
	return memchr(buf, '\0', len) ? -EBADMSG : 0;
}

int run_input_read(int fd, uint64_t code_len, uint64_t stdin_len, char **ret_code,
                   char **ret_stdin)
{
	_cleanup_free_ char *code = NULL, *in = NULL;
	struct stat st;
	int seals, r;

	if (code_len > PROTO_RUN_CODE_MAX || stdin_len > PROTO_RUN_STDIN_MAX)
		return -E2BIG;
	/* sealed, so the bytes checked here are the bytes the jail will run */
	seals = fcntl(fd, F_GET_SEALS);
	if (seals < 0 || (seals & RUN_INPUT_SEALS) != RUN_INPUT_SEALS)
		return -EPERM;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size != code_len + stdin_len)
		return -EBADMSG;
	if (!(code = malloc(code_len + 1)) || !(in = malloc(stdin_len + 1)))
		return -ENOMEM;
	if ((r = read_exact(fd, code, code_len, 0)) < 0 ||
	    (r = read_exact(fd, in, stdin_len, (off_t)code_len)) < 0)
		return r;
	*ret_code = steal_pointer(&code);
	*ret_stdin = steal_pointer(&in);
	return 0;
}
