/* The launcher <-> sbx-net protocol (DESIGN.md §9): one fixed-size message per
 * SOCK_SEQPACKET packet, a u32 type first; a packet whose length is not exactly its type's
 * size is refused, and every string must end inside its array. Descriptors travel with
 * OPEN by SCM_RIGHTS: the DNS socket first, then one listener per port, in order. */
#ifndef SBX_NETMSG_H
#define SBX_NETMSG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "netallow.h"

#define NETMSG_ID_MAX       64u  /* a run id */
#define NETMSG_LISTEN_MAX   (NETALLOW_ENTRIES_MAX + 1u) /* a port per entry + the proxy */
#define NETMSG_REFUSALS_MAX 64u  /* per session; more are counted, not kept */
#define NETMSG_HOST_MAX     255u
#define NETMSG_TEXT_MAX     160u

enum netmsg_type {
	NETMSG_HELLO = 1, /* sbx-net: confined and ready */
	NETMSG_OPEN,      /* launcher: a session, with its sockets */
	NETMSG_CLOSE,     /* launcher: end a session, send its refusals */
	NETMSG_RESULT,    /* sbx-net: OPEN's answer (err 0 = open) */
	NETMSG_REFUSED,   /* sbx-net: CLOSE's answer */
	NETMSG_TYPE_N_
};

struct netmsg_hello {
	uint32_t type;
	uint32_t uid, gid;
	int32_t landlock_abi; /* 0 = none applied */
	uint32_t seccomp;     /* 1 = allow-list loaded */
};

struct netmsg_open {
	uint32_t type;
	char run_id[NETMSG_ID_MAX + 1];
	uint8_t allow_private;
	uint8_t nallow;
	uint8_t nports;
	uint16_t port[NETMSG_LISTEN_MAX];
	char allow[NETALLOW_ENTRIES_MAX][NETALLOW_ENTRY_MAX + 1];
};

struct netmsg_close {
	uint32_t type;
	char run_id[NETMSG_ID_MAX + 1];
};

struct netmsg_result {
	uint32_t type;
	int32_t err; /* 0 or -errno */
	char text[NETMSG_TEXT_MAX];
};

struct netmsg_refusal {
	char kind[8]; /* "lookup" | "connect" */
	char host[NETMSG_HOST_MAX + 1];
	uint16_t port;
	uint64_t at_ms; /* since the epoch */
};

struct netmsg_refused {
	uint32_t type;
	uint32_t n, dropped;
	struct netmsg_refusal r[NETMSG_REFUSALS_MAX];
};

union netmsg {
	uint32_t type;
	struct netmsg_hello hello;
	struct netmsg_open open;
	struct netmsg_close close;
	struct netmsg_result result;
	struct netmsg_refused refused;
};

/* The exact size of a message of type t, 0 for an unknown type. */
size_t netmsg_size(uint32_t t);
/* A received packet of len bytes: its type's size and every field in bounds. 0 or -EBADMSG. */
int netmsg_check(const union netmsg *m, size_t len);
/* Send m (its type's size) with fds (n may be 0); 0 or -errno. EINTR is retried. */
int netmsg_send(int sock, const union netmsg *m, const int *fds, size_t n);
/* Receive one packet into m (checked) and up to *nfds descriptors (O_CLOEXEC); *nfds is
 * set to how many came. 0, -EBADMSG, -EPIPE (peer gone) or -errno. */
int netmsg_recv(int sock, union netmsg *m, int *fds, size_t *nfds);

#endif
