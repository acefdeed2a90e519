/* See netmsg.h. */
#include "netmsg.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

size_t netmsg_size(uint32_t t)
{
	switch (t) {
	case NETMSG_HELLO:
		return sizeof(struct netmsg_hello);
	case NETMSG_OPEN:
		return sizeof(struct netmsg_open);
	case NETMSG_CLOSE:
		return sizeof(struct netmsg_close);
	case NETMSG_RESULT:
		return sizeof(struct netmsg_result);
	case NETMSG_REFUSED:
		return sizeof(struct netmsg_refused);
	default:
		return 0;
	}
}

static bool terminated(const char *s, size_t n) { return memchr(s, '\0', n) != NULL; }

int netmsg_check(const union netmsg *m, size_t len)
{
	if (len < sizeof(uint32_t) || netmsg_size(m->type) == 0 || len != netmsg_size(m->type))
		return -EBADMSG;
	switch (m->type) {
	case NETMSG_OPEN:
		if (!terminated(m->open.run_id, sizeof(m->open.run_id)) || !m->open.run_id[0] ||
		    m->open.nallow > NETALLOW_ENTRIES_MAX || m->open.nports > NETMSG_LISTEN_MAX ||
		    m->open.allow_private > 1)
			return -EBADMSG;
		for (unsigned i = 0; i < m->open.nallow; i++)
			if (!terminated(m->open.allow[i], sizeof(m->open.allow[i])) ||
			    netallow_check(m->open.allow[i]) < 0)
				return -EBADMSG;
		for (unsigned i = 0; i < m->open.nports; i++)
			if (!m->open.port[i])
				return -EBADMSG;
		return 0;
	case NETMSG_CLOSE:
		return terminated(m->close.run_id, sizeof(m->close.run_id)) && m->close.run_id[0] ? 0 : -EBADMSG;
	case NETMSG_RESULT:
		return terminated(m->result.text, sizeof(m->result.text)) && m->result.err <= 0 ? 0 : -EBADMSG;
	case NETMSG_REFUSED:
		if (m->refused.n > NETMSG_REFUSALS_MAX)
			return -EBADMSG;
		for (unsigned i = 0; i < m->refused.n; i++)
			if (!terminated(m->refused.r[i].kind, sizeof(m->refused.r[i].kind)) ||
			    !terminated(m->refused.r[i].host, sizeof(m->refused.r[i].host)))
				return -EBADMSG;
		return 0;
	case NETMSG_HELLO:
		return m->hello.seccomp <= 1 ? 0 : -EBADMSG;
	}
	return -EBADMSG;
}

int netmsg_send(int sock, const union netmsg *m, const int *fds, size_t n)
{
	char cbuf[CMSG_SPACE(sizeof(int) * (NETMSG_LISTEN_MAX + 1))];
	struct iovec iov = { .iov_base = (void *)m, .iov_len = netmsg_size(m->type) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	ssize_t r;

	if (!iov.iov_len || n > NETMSG_LISTEN_MAX + 1)
		return -EINVAL;
	if (n) {
		struct cmsghdr *cm;
		memset(cbuf, 0, sizeof(cbuf));
		mh.msg_control = cbuf;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * n);
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int) * n);
		memcpy(CMSG_DATA(cm), fds, sizeof(int) * n);
	}
	do
		r = sendmsg(sock, &mh, MSG_NOSIGNAL);
	while (r < 0 && errno == EINTR);
	if (r < 0)
		return errno == ECONNRESET ? -EPIPE : -errno;
	return (size_t)r == iov.iov_len ? 0 : -EIO;
}

int netmsg_recv(int sock, union netmsg *m, int *fds, size_t *nfds)
{
	char cbuf[CMSG_SPACE(sizeof(int) * (NETMSG_LISTEN_MAX + 1))];
	struct iovec iov = { .iov_base = m, .iov_len = sizeof(*m) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
		             .msg_controllen = sizeof(cbuf) };
	size_t cap = nfds ? *nfds : 0, got = 0;
	ssize_t r;
	int e;

	if (nfds)
		*nfds = 0;
	do
		r = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
	while (r < 0 && errno == EINTR);
	if (r < 0)
		return errno == ECONNRESET ? -EPIPE : -errno;
	/* descriptors first: whatever came is ours to close if the message is refused */
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		size_t k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		int *in = (int *)CMSG_DATA(cm);
		for (size_t i = 0; i < k; i++) {
			int fd;
			memcpy(&fd, in + i, sizeof(fd));
			if (got < cap)
				fds[got++] = fd;
			else
				close(fd);
		}
	}
	if (r == 0) {
		e = -EPIPE;
		goto fail;
	}
	if ((mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) || (e = netmsg_check(m, (size_t)r)) < 0) {
		e = -EBADMSG;
		goto fail;
	}
	if (nfds)
		*nfds = got;
	return 0;
fail:
	for (size_t i = 0; i < got; i++)
		close(fds[i]);
	return e;
}
