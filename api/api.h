/* sbx-api: shared state of the unprivileged HTTP/MCP process. */
#ifndef SBX_API_H
#define SBX_API_H

#include <event2/event.h>
#include <event2/http.h>
#include <stdbool.h>
#include <stdint.h>

#include "confine.h"
#include "listen.h"
#include "proto_chan.h"

#define API_TOKEN_HEX_LEN 64 /* 32 random bytes */

struct api {
	struct event_base *base;
	struct evhttp *http;
	struct proto_chan *sbxd;     /* fd 3 */
	struct proto_chan *launcher; /* fd 4, replaced on PEER_FD */
	char host_port[16];          /* the port we listen on, for Host/Origin checks */
	char remote_host[LISTEN_HOST_MAX]; /* --allow-remote: the non-loopback host we bound, or "" */
	bool no_auth;
	char token[API_TOKEN_HEX_LEN + 1];
	struct confine_report confine;
};

extern struct api *API;

#endif
