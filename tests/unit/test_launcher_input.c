/* run_input_read: a hostile API's memfd is refused unless sealed, exact and in bounds. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "proto.h"
#include "run_input.h"

static int memfd_with(const char *a, size_t alen, const char *b, size_t blen, unsigned seals)
{
	int fd = memfd_create("t", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	cr_assert_geq(fd, 0);
	if (alen)
		cr_assert_eq(write(fd, a, alen), (ssize_t)alen);
	if (blen)
		cr_assert_eq(write(fd, b, blen), (ssize_t)blen);
	if (seals)
		cr_assert_eq(fcntl(fd, F_ADD_SEALS, seals), 0);
	return fd;
}

#define ALL (F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL)

Test(launcher_input, reads_code_then_stdin, .timeout = 10)
{
	char *c = NULL, *s = NULL;
	int fd = memfd_with("echo hi", 7, "in\n", 3, ALL);
	cr_assert_eq(run_input_read(fd, 7, 3, &c, &s), 0);
	cr_assert_str_eq(c, "echo hi");
	cr_assert_str_eq(s, "in\n");
	free(c);
	free(s);
	close(fd);
}

Test(launcher_input, at_the_limit_and_one_past, .timeout = 10)
{
	size_t n = PROTO_RUN_CODE_MAX;
	char *big = malloc(n + 1), *c = NULL, *s = NULL;
	memset(big, 'x', n + 1);
	int fd = memfd_with(big, n, "", 0, ALL);
	cr_assert_eq(run_input_read(fd, n, 0, &c, &s), 0);
	cr_assert_eq(strlen(c), n);
	free(c);
	free(s);
	close(fd);
	fd = memfd_with(big, n + 1, "", 0, ALL);
	cr_assert_eq(run_input_read(fd, n + 1, 0, &c, &s), -E2BIG);
	cr_assert_eq(run_input_read(fd, 0, PROTO_RUN_STDIN_MAX + 1ull, &c, &s), -E2BIG);
	close(fd);
	free(big);
}

Test(launcher_input, unsealed_or_writable_is_refused, .timeout = 10)
{
	char *c = NULL, *s = NULL;
	int fd = memfd_with("true", 4, "", 0, 0);
	cr_assert_eq(run_input_read(fd, 4, 0, &c, &s), -EPERM);
	close(fd);
	/* sealed against growth only: the API could still rewrite it after the check */
	fd = memfd_with("true", 4, "", 0, F_SEAL_GROW | F_SEAL_SHRINK);
	cr_assert_eq(run_input_read(fd, 4, 0, &c, &s), -EPERM);
	close(fd);
	/* a pipe is not a memfd at all */
	int p[2];
	cr_assert_eq(pipe(p), 0);
	cr_assert_eq(run_input_read(p[0], 4, 0, &c, &s), -EPERM);
	close(p[0]);
	close(p[1]);
}

Test(launcher_input, size_must_match_and_no_nul, .timeout = 10)
{
	char *c = NULL, *s = NULL;
	int fd = memfd_with("true", 4, "x", 1, ALL);
	cr_assert_eq(run_input_read(fd, 4, 0, &c, &s), -EBADMSG); /* shorter than the file */
	cr_assert_eq(run_input_read(fd, 4, 2, &c, &s), -EBADMSG); /* longer */
	close(fd);
	fd = memfd_with("tr\0e", 4, "", 0, ALL);
	cr_assert_eq(run_input_read(fd, 4, 0, &c, &s), -EBADMSG);
	close(fd);
	cr_assert_null(c);
	cr_assert_null(s);
}
