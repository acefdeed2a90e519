/* "A website" for network tests: a network namespace the test makes itself, joined to the
 * host by a veth pair (host 10.213.K.1/30, namespace 10.213.K.2/30), with a small HTTP
 * server inside answering "sbx-website <port>" on each port and counting UDP datagrams on
 * one more. Nothing routes anywhere else: traffic stays on this machine. */
#ifndef SBX_WEBSITE_H
#define SBX_WEBSITE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define WEBSITE_PORTS_MAX 4u

struct website {
	int k;                /* the /30's third octet */
	char ns[32];          /* "sbxt-<k>" */
	char host_addr[16];   /* 10.213.K.1 */
	char addr[16];        /* 10.213.K.2: the website */
	uint16_t ports[WEBSITE_PORTS_MAX];
	size_t nports;
	uint16_t udp_port;    /* 0 = none */
	pid_t pid;            /* the server, inside the namespace */
	volatile long *udp_count; /* shared with the server */
};

/* 0 or -errno (root and iproute2 needed; the caller prints SKIP on failure). */
int website_start(struct website *w, const uint16_t *ports, size_t n, uint16_t udp_port);
/* Kills its server (by pid), removes the veth and the namespace. Safe twice. */
void website_stop(struct website *w);
/* Datagrams the UDP port has received. */
long website_udp_count(const struct website *w);

#endif
