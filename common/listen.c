/* See listen.h. Nothing here logs. */
#include "listen.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

bool listen_host_is_loopback(const char *host)
{
	struct in_addr a4;
	struct in6_addr a6;
	if (inet_pton(AF_INET, host, &a4) == 1)
		return (ntohl(a4.s_addr) >> 24) == 127;
	return inet_pton(AF_INET6, host, &a6) == 1 && IN6_IS_ADDR_LOOPBACK(&a6);
}

bool listen_host_is_wildcard(const char *host)
{
	struct in_addr a4;
	struct in6_addr a6;
	if (inet_pton(AF_INET, host, &a4) == 1)
		return a4.s_addr == htonl(INADDR_ANY);
	return inet_pton(AF_INET6, host, &a6) == 1 && IN6_IS_ADDR_UNSPECIFIED(&a6);
}

int listen_parse(const char *s, bool allow_remote, char *host, size_t hostsz, uint16_t *ret_port)
{
	const char *colon, *hs, *he;
	char h[LISTEN_HOST_MAX], *end;
	unsigned long port;
	struct in_addr a4;
	struct in6_addr a6;
	size_t hl;

	if (s[0] == '[') { /* [v6]:port */
		hs = s + 1;
		if (!(he = strchr(hs, ']')) || he[1] != ':')
			return -EINVAL;
		colon = he + 1;
	} else {
		hs = s;
		if (!(colon = strrchr(s, ':')) || memchr(s, ':', (size_t)(colon - s)))
			return -EINVAL; /* a bare v6 address needs brackets */
		he = colon;
	}
	hl = (size_t)(he - hs);
	if (hl == 0 || hl >= sizeof(h))
		return -EINVAL;
	memcpy(h, hs, hl);
	h[hl] = '\0';
	errno = 0;
	port = strtoul(colon + 1, &end, 10);
	if (errno || *end || end == colon + 1 || colon[1] == '-' || colon[1] == '+' || port == 0 ||
	    port > 65535)
		return -EINVAL;
	if (strcmp(h, "localhost") == 0) /* the API binds numbers, not names */
		strcpy(h, "127.0.0.1");
	else if (s[0] == '[' ? inet_pton(AF_INET6, h, &a6) != 1 : inet_pton(AF_INET, h, &a4) != 1)
		return -EINVAL; /* names other than localhost could resolve anywhere */
	if (strlen(h) >= hostsz)
		return -EINVAL;
	if (!allow_remote && !listen_host_is_loopback(h))
		return -EPERM;
	strcpy(host, h);
	*ret_port = (uint16_t)port;
	return 0;
}
