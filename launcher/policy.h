/* The run_code() gate (DESIGN.md §6): the ExecPolicy switches, the refusals, and which
 * isolation a run gets. run_code() itself (launcher.h) is THE one function every entrance
 * (REST, MCP, REPL, scheduler) reaches execution through; the decisions below are pure so
 * their table of cases is unit-testable without a database or a fork. */
#ifndef SBX_POLICY_H
#define SBX_POLICY_H

#include <stdbool.h>
#include <stddef.h>

#include "launcher.h"

enum isolation { ISO_BWRAP = 0, ISO_SEATBELT, ISO_DOCKER, ISO_DEGRADED, ISO_NONE, ISO_N_ };

/* "bwrap" | "seatbelt" | "docker" | "degraded" | "none" (static strings, as in results). */
const char *isolation_name(enum isolation iso);

#define POLICY_WHY_MAX 512u /* a refusal's message */

/* Phase 1, before the sandbox is read: may this request run at all, and sandboxed?
 * Returns 0 with *ret_sandboxed, or a PERR_* (> 0) with why filled. */
int policy_switches(const struct msg_POLICY_REP *pol, const struct run_request *req,
                    bool *ret_sandboxed, char *why, size_t whysz);

/* What the machine can do right now, as the caps probe measured it. */
struct policy_machine {
	bool bwrap;          /* a bwrap binary was found */
	bool engine_broken;  /* no backend can run sandboxes */
	const char *engine_why;
	bool docker_ok;      /* the docker daemon answered and a client exists */
	const char *docker_why;
	const struct net_machine *net; /* the network fence's mechanisms; NULL = none */
	uint16_t api_port;   /* the daemon's own API port: never a loopback port */
};

/* Phase 2, with the sandbox: the isolation of a run (sandboxed from phase 1), or a
 * refusal. A switch that is on while the engine is broken fails, never a raw shell; no
 * bwrap at all is the named degraded state. Returns 0 with *ret_iso, or a PERR_* with why.
 * note gets what the result must say (may be ""). */
int policy_isolation(bool sandboxed, const struct sandbox *s, const struct policy_machine *m,
                     enum isolation *ret_iso, char *why, size_t whysz, char *note,
                     size_t notesz);

/* The isolation GET /profile shows for s: the one a sandboxed run would get now. */
enum isolation policy_profile_isolation(const struct launcher *L, const struct sandbox *s);

#endif
