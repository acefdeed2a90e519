/* The capability probe (DESIGN.md §5): measured, not guessed. Every probe child runs
 * asynchronously under libevent with a hard timeout and SIGKILL past it. */
#ifndef SBX_CAPS_H
#define SBX_CAPS_H

#include "launcher.h"

#define CAPS_PROBE_TIMEOUT_MS 4000u  /* hard limit per probe child */
#define CAPS_CACHE_MS         20000u /* results are reused this long */
#define CAPS_WAITERS_MAX      64u    /* CAPS_REQs waiting for one probe */
#define CAPS_OUTPUT_MAX       4096u  /* bytes of a probe child's output kept */

/* Called with the current result; strings borrowed for the call. */
typedef void (*caps_done_fn)(const struct msg_CAPS_REP *rep, void *arg);

void caps_init(struct launcher *L);
/* Reply now from the cache, or queue behind the (possibly already running) probes.
 * -ENOBUFS when too many requests are already waiting. */
int caps_get(bool recheck, caps_done_fn done, void *arg);
/* Start probes whose cache is stale, with nobody waiting (start-up). */
void caps_refresh(void);
/* The launcher stops: end every probe in flight, with whatever it started in its group. */
void caps_shutdown(void);
/* Last known results without probing: docker_known is false before the first probe. */
const char *caps_bwrap_version(void);
bool caps_docker_unavailable(const char **ret_reason);
/* No backend can run anything: bwrap is installed but the measured probe failed, and docker
 * does not answer either. (bwrap absent is the named degraded state, not this.) */
bool caps_engine_broken(const char **ret_reason);
/* The docker client to use (--docker, else the usual places), or NULL. */
const char *caps_docker_path(void);

#endif
