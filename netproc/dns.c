/* See dns.h. */
#include "dns.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

static uint16_t get16(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }
static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

int dns_parse_query(const uint8_t *p, size_t n, struct dns_query *ret)
{
	size_t off = 12, out = 0;

	memset(ret, 0, sizeof(*ret));
	if (n < 12 + 5 || n > DNS_PACKET_MAX)
		return -EBADMSG;
	ret->id = get16(p);
	ret->flags = get16(p + 2);
	/* a query (QR 0), opcode QUERY, exactly one question and nothing else */
	if ((ret->flags & 0x8000) || ((ret->flags >> 11) & 0xf) != 0 || get16(p + 4) != 1 ||
	    get16(p + 6) != 0 || get16(p + 8) != 0)
		return -EBADMSG;
	/* QNAME: labels only (no compression in a question), within 255 bytes */
	for (;;) {
		uint8_t len;
		if (off >= n)
			return -EBADMSG;
		len = p[off++];
		if (len == 0)
			break;
		if (len > 63 || off + len > n || out + len + 1 > sizeof(ret->name) - 1)
			return -EBADMSG;
		if (out)
			ret->name[out++] = '.';
		for (uint8_t i = 0; i < len; i++) {
			char c = (char)p[off + i];
			ret->name[out++] = c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
		}
		off += len;
	}
	ret->name[out] = '\0';
	if (off + 4 > n)
		return -EBADMSG;
	ret->qtype = get16(p + off);
	ret->qclass = get16(p + off + 2);
	ret->question_len = off + 4 - 12;
	return 0;
}

int dns_build_answer(const uint8_t *p, const struct dns_query *q, unsigned rcode, uint32_t addr,
                     uint32_t ttl, uint8_t *out, size_t outsz)
{
	size_t n = 12 + q->question_len;
	bool answer = addr != 0;
	if (outsz < n + (answer ? 16 : 0))
		return -ENOSPC;
	put16(out, q->id);
	/* QR, AA, RD echoed, RA (we answer for the jail as its only resolver), rcode */
	put16(out + 2, (uint16_t)(0x8000 | 0x0400 | (q->flags & 0x0100) | 0x0080 | (rcode & 0xf)));
	put16(out + 4, 1);
	put16(out + 6, answer ? 1 : 0);
	put16(out + 8, 0);
	put16(out + 10, 0);
	memcpy(out + 12, p + 12, q->question_len);
	if (answer) {
		uint8_t *a = out + n;
		put16(a, 0xC00C); /* the name: a pointer to the question's */
		put16(a + 2, DNS_TYPE_A);
		put16(a + 4, 1); /* IN */
		put16(a + 6, (uint16_t)(ttl >> 16));
		put16(a + 8, (uint16_t)ttl);
		put16(a + 10, 4);
		a[12] = (uint8_t)(addr >> 24);
		a[13] = (uint8_t)(addr >> 16);
		a[14] = (uint8_t)(addr >> 8);
		a[15] = (uint8_t)addr;
		n += 16;
	}
	return (int)n;
}
