/* The jail's resolver, as bytes: one query in, one answer out (RFC 1035). Written here,
 * not taken from libevent's evdns server, which crashes on an empty datagram (measured,
 * libevent 2.1.12): every packet comes from a jail and is hostile. */
#ifndef SBX_NETD_DNS_H
#define SBX_NETD_DNS_H

#include <stddef.h>
#include <stdint.h>

#define DNS_PACKET_MAX 512u /* a classic UDP message; longer queries are dropped */
#define DNS_TYPE_A     1u
#define DNS_TYPE_AAAA  28u
#define DNS_RCODE_OK       0u
#define DNS_RCODE_FORMERR  1u
#define DNS_RCODE_SERVFAIL 2u
#define DNS_RCODE_NXDOMAIN 3u
#define DNS_RCODE_NOTIMP   4u

struct dns_query {
	uint16_t id, flags, qtype, qclass;
	char name[256];     /* lowercased, no trailing dot; "" for the root */
	size_t question_len; /* bytes of the question section (name, type, class) */
};

/* 0, or -EBADMSG: not a single standard query we can answer (drop it). */
int dns_parse_query(const uint8_t *p, size_t n, struct dns_query *ret);
/* The answer to the query in p (as parsed into q): rcode, and an A record for addr (host
 * order) when addr != 0. Returns its length in out (>= 12) or -ENOSPC. */
int dns_build_answer(const uint8_t *p, const struct dns_query *q, unsigned rcode, uint32_t addr,
                     uint32_t ttl, uint8_t *out, size_t outsz);

#endif
