/* The connections of the HTTP front door: how many may be open (in total and per peer
 * address), how long one may idle before a request is authenticated, what happens when
 * accept() runs out of descriptors, and libevent's own error pages turned into JSON. */
#ifndef SBX_API_CONN_H
#define SBX_API_CONN_H

#include <event2/http.h>
#include <event2/listener.h>

#define API_CONN_MAX          512u /* open HTTP connections, all peers together */
#define API_CONN_PER_PEER_MAX 128u /* ... from one peer address */
#define API_FD_RESERVE        64u  /* descriptors kept for channels, logs, the listener */
#define API_IDLE_TIMEOUT_S    10   /* read/write timeout until a call waits on the engine */
#define API_REQUEST_DEADLINE_S 30  /* a whole request, from accept or the last answer */
#define API_WAIT_TIMEOUT_S    3700 /* a call waiting on a run: longer than the longest deadline */
#define API_ACCEPT_PAUSE_MS   100u /* the listener rests this long after EMFILE/ENFILE */
#define API_LOG_EVERY_S       1u   /* at most one line per kind of trouble per interval */

struct api;

/* RLIMIT_NOFILE soft up to the hard limit (before confinement). 0 or -errno. */
int conn_raise_nofile(void);
/* Track every connection of A->http accepted through `l`; the caps follow the descriptor
 * budget. 0 or -errno. */
int conn_init(struct api *A, struct evconnlistener *l);
void conn_fini(void);
/* An authenticated request is being served: its connection is not evicted for a new one
 * until the answer has been written. */
void conn_protect(struct evhttp_request *req);
/* The request waits on the engine: the long timeout, and fn(arg) if the connection closes
 * first. conn_unwait drops both (the answer is about to be sent). */
void conn_wait(struct evhttp_request *req, void (*fn)(struct evhttp_connection *, void *),
               void *arg);
void conn_unwait(struct evhttp_connection *evcon);

#endif
