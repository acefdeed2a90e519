/* See netns_proxy.h. */
#include "fence/netns_proxy.h"

#include <arpa/inet.h>
#include <errno.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cleanup.h"

int netns_proxy_entry_port(const char *entry)
{
	const char *colon = entry ? strrchr(entry, ':') : NULL;
	char *end;
	long v;
	if (!colon || !colon[1])
		return -EINVAL;
	errno = 0;
	v = strtol(colon + 1, &end, 10);
	if (errno || *end || v < 1 || v > 65535 || colon[1] == '+' || colon[1] == '-')
		return -EINVAL;
	return (int)v;
}

/* RTM_NEWADDR: addr/prefix on ifindex. On a loopback device the kernel makes the whole
 * prefix a local route, which is what lands every handed-out address on our listeners. */
static int addr_add(int ifindex, const char *addr, int prefix)
{
	struct {
		struct nlmsghdr nh;
		struct ifaddrmsg ifa;
		char attrs[64];
	} req = { 0 };
	struct {
		struct nlmsghdr nh;
		struct nlmsgerr err;
	} ack;
	struct sockaddr_nl kernel = { .nl_family = AF_NETLINK };
	struct in_addr a;
	struct rtattr *rta;
	_cleanup_close_ int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	ssize_t n;

	if (fd < 0)
		return -errno;
	if (inet_pton(AF_INET, addr, &a) != 1)
		return -EINVAL;
	req.nh.nlmsg_type = RTM_NEWADDR;
	req.nh.nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL;
	req.nh.nlmsg_seq = 1;
	req.ifa.ifa_family = AF_INET;
	req.ifa.ifa_prefixlen = (unsigned char)prefix;
	req.ifa.ifa_scope = RT_SCOPE_HOST;
	req.ifa.ifa_index = (unsigned)ifindex;
	req.nh.nlmsg_len = NLMSG_LENGTH(sizeof(req.ifa));
	for (int t = 0; t < 2; t++) { /* IFA_LOCAL and IFA_ADDRESS */
		rta = (struct rtattr *)((char *)&req + NLMSG_ALIGN(req.nh.nlmsg_len));
		rta->rta_type = t == 0 ? IFA_LOCAL : IFA_ADDRESS;
		rta->rta_len = RTA_LENGTH(sizeof(a));
		memcpy(RTA_DATA(rta), &a, sizeof(a));
		req.nh.nlmsg_len = NLMSG_ALIGN(req.nh.nlmsg_len) + RTA_ALIGN(rta->rta_len);
	}
	if (sendto(fd, &req, req.nh.nlmsg_len, 0, (struct sockaddr *)&kernel, sizeof(kernel)) < 0)
		return -errno;
	do
		n = recv(fd, &ack, sizeof(ack), 0);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	if ((size_t)n < sizeof(ack) || ack.nh.nlmsg_type != NLMSG_ERROR)
		return -EPROTO;
	return ack.err.error; /* 0 or -errno */
}

static int bound(int type, const char *addr, uint16_t port, int *ret)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
	int one = 1;
	_cleanup_close_ int fd = socket(AF_INET, type | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	if (inet_pton(AF_INET, addr, &sa.sin_addr) != 1)
		return -EINVAL;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return -errno;
	if (type == SOCK_STREAM && listen(fd, 128) < 0)
		return -errno;
	*ret = steal_fd(&fd);
	return 0;
}

void netns_proxy_fds_close(struct netns_proxy_fds *f)
{
	if (f->dns >= 0)
		close(f->dns);
	f->dns = -1;
	for (size_t i = 0; i < f->n; i++)
		if (f->fd[i] >= 0)
			close(f->fd[i]);
	f->n = 0;
}

static int add_port(struct netns_proxy_fds *f, uint16_t port)
{
	for (size_t i = 0; i < f->n; i++)
		if (f->port[i] == port)
			return 0;
	if (f->n >= NETNS_PROXY_LISTEN_MAX)
		return -E2BIG;
	f->port[f->n] = port;
	f->fd[f->n] = -1;
	f->n++;
	return 0;
}

int netns_proxy_setup(const struct proto_strv *allow, struct netns_proxy_fds *ret)
{
	struct netns_proxy_fds f = { .dns = -1 };
	int lo = (int)if_nametoindex("lo"), r;

	if (!lo)
		return -ENODEV;
	if (allow->n > NETNS_PROXY_ALLOW_MAX)
		return -E2BIG;
	if ((r = add_port(&f, NETNS_PROXY_PORT)) < 0)
		return r;
	for (uint32_t i = 0; i < allow->n; i++) {
		int p = netns_proxy_entry_port(allow->v[i]);
		if (p < 0 || (r = add_port(&f, (uint16_t)p)) < 0)
			return p < 0 ? p : r;
	}
	if ((r = addr_add(lo, NETNS_PROXY_ADDR, NETNS_PROXY_PREFIX)) < 0)
		return r;
	if ((r = bound(SOCK_DGRAM, NETNS_PROXY_ADDR, NETNS_PROXY_DNS_PORT, &f.dns)) < 0)
		goto fail;
	/* every local address: the engine's block and 127.0.0.1, which sbx-net refuses */
	for (size_t i = 0; i < f.n; i++)
		if ((r = bound(SOCK_STREAM, "0.0.0.0", f.port[i], &f.fd[i])) < 0)
			goto fail;
	*ret = f;
	return 0;
fail:
	netns_proxy_fds_close(&f);
	return r;
}

int netns_proxy_resolv_conf(char *buf, size_t n)
{
	int k = snprintf(buf, n, "# sbx: the engine's resolver answers the names of proxy.allow only\n"
	                         "nameserver %s\noptions attempts:1 timeout:2\n",
	                 NETNS_PROXY_ADDR);
	return k < 0 || (size_t)k >= n ? -ENOSPC : k;
}
