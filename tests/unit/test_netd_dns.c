/* sbx-net's resolver bytes (netproc/dns.c): every packet comes from a jail. */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "dns.h"

TestSuite(netd_dns, .timeout = 10);

/* a query for name (dotted), type t */
static size_t query(uint8_t *p, const char *name, uint16_t t)
{
	size_t off = 12;
	memset(p, 0, 12);
	p[0] = 0xab, p[1] = 0xcd, p[2] = 0x01; /* id, RD */
	p[5] = 1;                            /* one question */
	while (*name) {
		const char *dot = strchr(name, '.');
		size_t l = dot ? (size_t)(dot - name) : strlen(name);
		p[off++] = (uint8_t)l;
		memcpy(p + off, name, l);
		off += l;
		name += l + (dot ? 1 : 0);
	}
	p[off++] = 0;
	p[off++] = (uint8_t)(t >> 8), p[off++] = (uint8_t)t;
	p[off++] = 0, p[off++] = 1;
	return off;
}

Test(netd_dns, a_query_and_its_answer)
{
	uint8_t p[600], out[600];
	struct dns_query q;
	size_t n = query(p, "Site.Test", DNS_TYPE_A);
	cr_assert_eq(dns_parse_query(p, n, &q), 0);
	cr_assert_str_eq(q.name, "site.test");
	cr_assert_eq(q.qtype, DNS_TYPE_A);
	int len = dns_build_answer(p, &q, DNS_RCODE_OK, 0xC6120002u, 60, out, sizeof(out));
	cr_assert_eq(len, (int)n + 16);
	cr_assert_eq(out[0], 0xab);
	cr_assert(out[2] & 0x80, "not a response");
	cr_assert_eq(out[7], 1, "one answer");
	cr_assert_eq(memcmp(out + len - 4, (uint8_t[]){ 198, 18, 0, 2 }, 4), 0);
	len = dns_build_answer(p, &q, DNS_RCODE_NXDOMAIN, 0, 60, out, sizeof(out));
	cr_assert_eq(len, (int)n);
	cr_assert_eq(out[3] & 0xf, DNS_RCODE_NXDOMAIN);
	cr_assert_eq(out[7], 0);
	cr_assert_eq(dns_build_answer(p, &q, 0, 1, 60, out, n), -ENOSPC);
}

Test(netd_dns, hostile_packets_are_refused)
{
	uint8_t p[700];
	struct dns_query q;
	size_t n = query(p, "a.b", DNS_TYPE_A);
	cr_assert_eq(dns_parse_query(p, 0, &q), -EBADMSG, "empty");
	cr_assert_eq(dns_parse_query(p, 12, &q), -EBADMSG, "header only");
	cr_assert_eq(dns_parse_query(p, n - 1, &q), -EBADMSG, "short by one");
	p[2] |= 0x80;
	cr_assert_eq(dns_parse_query(p, n, &q), -EBADMSG, "a response");
	p[2] &= 0x7f;
	p[5] = 2;
	cr_assert_eq(dns_parse_query(p, n, &q), -EBADMSG, "two questions");
	p[5] = 1;
	p[12] = 0xC0; /* a compression pointer in the question */
	cr_assert_eq(dns_parse_query(p, n, &q), -EBADMSG);
	p[12] = 64; /* a label past 63 */
	cr_assert_eq(dns_parse_query(p, n, &q), -EBADMSG);
	/* a name of 255 bytes and past it; a packet past 512 */
	char name[300];
	memset(name, 0, sizeof(name));
	for (int i = 0; i < 4; i++)
		memset(name + i * 64, 'a', 63), name[i * 64 + 63] = i < 3 ? '.' : '\0';
	n = query(p, name, DNS_TYPE_A);
	cr_assert_eq(dns_parse_query(p, n, &q), 0, "255 bytes of name");
	name[strlen(name)] = 'b';
	name[256] = '\0';
	n = query(p, name, DNS_TYPE_A);
	cr_assert_eq(dns_parse_query(p, n, &q), -EBADMSG, "256 bytes of name");
	cr_assert_eq(dns_parse_query(p, DNS_PACKET_MAX + 1, &q), -EBADMSG);
}
