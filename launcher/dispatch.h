/* The launcher's receivers: a const dispatch table per peer (sbxd, api) and the handlers. */
#ifndef SBX_DISPATCH_H
#define SBX_DISPATCH_H

#include "launcher.h"

#define DISPATCH_RUNS_LIST_DEFAULT 50u
#define DISPATCH_RUNS_LIST_MAX     1000u
#define DISPATCH_LIST_BATCH        128u   /* SBX_REP rows sent per event-loop turn */
#define DISPATCH_LIST_TICK_US      1000   /* between batches */
#define DISPATCH_LIST_STALL_US     20000  /* after the write queue was full */
#define DISPATCH_LIST_STALLS_MAX   1500u  /* about 30 s of a peer that does not read */

/* Build the channels on the given fds (fd 3 = sbxd, fd 4 = api). */
int dispatch_start(struct launcher *L, int sbxd_fd, int api_fd);
/* True once the sbxd channel is gone: the launcher must exit. */
bool dispatch_sbxd_lost(void);

#endif
