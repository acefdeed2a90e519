/* The launcher <-> sbx-net messages (common/netmsg.h): exact sizes, strings that end
 * inside their arrays, counts within their limits, descriptors that always arrive or are
 * closed. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "netmsg.h"

TestSuite(netmsg, .timeout = 10);

static void pair(int sp[2]) { cr_assert_eq(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sp), 0); }

static union netmsg m, got;

Test(netmsg, open_round_trips_with_its_descriptors)
{
	int sp[2], fds[3], in[NETMSG_LISTEN_MAX + 1];
	size_t n = NETMSG_LISTEN_MAX + 1;
	pair(sp);
	memset(&m, 0, sizeof(m));
	m.open.type = NETMSG_OPEN;
	strcpy(m.open.run_id, "run_abc");
	m.open.nallow = 2;
	strcpy(m.open.allow[0], "pypi.org:443");
	strcpy(m.open.allow[1], "*.pythonhosted.org:443");
	m.open.nports = 2;
	m.open.port[0] = 3128;
	m.open.port[1] = 443;
	for (int i = 0; i < 3; i++)
		fds[i] = open("/dev/null", O_RDONLY | O_CLOEXEC);
	cr_assert_eq(netmsg_send(sp[0], &m, fds, 3), 0);
	cr_assert_eq(netmsg_recv(sp[1], &got, in, &n), 0);
	cr_assert_eq(n, 3);
	cr_assert_str_eq(got.open.allow[1], "*.pythonhosted.org:443");
	cr_assert_eq(got.open.port[1], 443);
	for (size_t i = 0; i < n; i++) {
		cr_assert_geq(fcntl(in[i], F_GETFD), 0);
		close(in[i]);
		close(fds[i]);
	}
	close(sp[0]);
	close(sp[1]);
}

/* each hostile shape is refused, and any descriptors that came with it are closed */
Test(netmsg, malformed_messages_are_refused)
{
	int sp[2], in[4];
	size_t n;
	pair(sp);

	/* one byte short, one byte long */
	memset(&m, 0, sizeof(m));
	m.close.type = NETMSG_CLOSE;
	strcpy(m.close.run_id, "r");
	cr_assert_eq(send(sp[0], &m, sizeof(m.close) - 1, 0), (ssize_t)sizeof(m.close) - 1);
	n = 4;
	cr_assert_eq(netmsg_recv(sp[1], &got, in, &n), -EBADMSG);
	cr_assert_eq(send(sp[0], &m, sizeof(m.close) + 1, 0), (ssize_t)sizeof(m.close) + 1);
	n = 4;
	cr_assert_eq(netmsg_recv(sp[1], &got, in, &n), -EBADMSG);
	/* an unknown type */
	m.type = 99;
	cr_assert_eq(send(sp[0], &m, 64, 0), 64);
	n = 4;
	cr_assert_eq(netmsg_recv(sp[1], &got, in, &n), -EBADMSG);
	/* a run id without its NUL */
	memset(&m, 'x', sizeof(m.close));
	m.close.type = NETMSG_CLOSE;
	cr_assert_eq(send(sp[0], &m, sizeof(m.close), 0), (ssize_t)sizeof(m.close));
	n = 4;
	cr_assert_eq(netmsg_recv(sp[1], &got, in, &n), -EBADMSG);
	/* too many entries, one past the limit, and a malformed entry */
	memset(&m, 0, sizeof(m));
	m.open.type = NETMSG_OPEN;
	strcpy(m.open.run_id, "r");
	m.open.nallow = NETALLOW_ENTRIES_MAX + 1;
	cr_assert_eq(send(sp[0], &m, sizeof(m.open), 0), (ssize_t)sizeof(m.open));
	n = 4;
	cr_assert_eq(netmsg_recv(sp[1], &got, in, &n), -EBADMSG);
	m.open.nallow = NETALLOW_ENTRIES_MAX;
	for (unsigned i = 0; i < NETALLOW_ENTRIES_MAX; i++)
		strcpy(m.open.allow[i], "a.example:1");
	cr_assert_eq(send(sp[0], &m, sizeof(m.open), 0), (ssize_t)sizeof(m.open));
	n = 4;
	cr_assert_eq(netmsg_recv(sp[1], &got, in, &n), 0, "at the limit");
	strcpy(m.open.allow[3], "A.example:1");
	cr_assert_eq(send(sp[0], &m, sizeof(m.open), 0), (ssize_t)sizeof(m.open));
	n = 4;
	cr_assert_eq(netmsg_recv(sp[1], &got, in, &n), -EBADMSG);
	/* refusals one past the limit */
	memset(&m, 0, sizeof(m));
	m.refused.type = NETMSG_REFUSED;
	m.refused.n = NETMSG_REFUSALS_MAX + 1;
	cr_assert_eq(send(sp[0], &m, sizeof(m.refused), 0), (ssize_t)sizeof(m.refused));
	n = 4;
	cr_assert_eq(netmsg_recv(sp[1], &got, in, &n), -EBADMSG);
	/* the peer gone */
	close(sp[0]);
	n = 4;
	cr_assert_eq(netmsg_recv(sp[1], &got, in, &n), -EPIPE);
	close(sp[1]);
}

Test(netmsg, descriptors_with_a_refused_message_are_closed)
{
	int sp[2], in[4], fd = open("/dev/null", O_RDONLY | O_CLOEXEC), before;
	size_t n = 4;
	pair(sp);
	memset(&m, 0, sizeof(m));
	m.close.type = NETMSG_CLOSE; /* no run id: refused */
	struct iovec iov = { .iov_base = &m, .iov_len = sizeof(m.close) };
	char cbuf[CMSG_SPACE(sizeof(int))] = { 0 };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
		             .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	cr_assert_eq(sendmsg(sp[0], &mh, 0), (ssize_t)sizeof(m.close));
	before = dup(0); /* the lowest free number now */
	close(before);
	cr_assert_eq(netmsg_recv(sp[1], &got, in, &n), -EBADMSG);
	int after = dup(0);
	cr_assert_eq(after, before, "the descriptor that came with a refused message leaked");
	close(after);
	close(fd);
	close(sp[0]);
	close(sp[1]);
}
