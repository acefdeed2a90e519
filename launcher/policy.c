/* See policy.h. run_code() reads the policy row and the sandbox, asks the two pure
 * decisions, and hands an accepted run to the runner. Refusals go through done. */
#include "policy.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "caps.h"
#include "fence/netplan.h"
#include "runner.h"
#include "sandbox.h"
#include "store.h"

const char *isolation_name(enum isolation iso)
{
	static const char *const names[ISO_N_] = {
		[ISO_BWRAP] = "bwrap", [ISO_SEATBELT] = "seatbelt", [ISO_DOCKER] = "docker",
		[ISO_DEGRADED] = "degraded", [ISO_NONE] = "none",
	};
	return (unsigned)iso < ISO_N_ ? names[iso] : "none";
}

static int fail(int code, char *why, size_t whysz, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int fail(int code, char *why, size_t whysz, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, whysz, fmt, ap);
	va_end(ap);
	return code;
}

int policy_switches(const struct msg_POLICY_REP *pol, const struct run_request *req,
                    bool *ret_sandboxed, char *why, size_t whysz)
{
	if (!req->code || req->language > LANG_MAX_)
		return fail(PERR_INVALID_ARGUMENT, why, whysz, "code and a known language are required");
	/* python and node never ran outside a sandbox: off means refused */
	if (req->language == LANG_PYTHON && !pol->run_python)
		return fail(PERR_POLICY_REFUSED, why, whysz,
		            "runPython is switched off (Plugins \u2192 Sandbox)");
	if (req->language == LANG_NODE && !pol->run_node)
		return fail(PERR_POLICY_REFUSED, why, whysz,
		            "runNode is switched off (Plugins \u2192 Sandbox)");
	/* the shell and scheduler entrances predate the sandbox: off means as before */
	*ret_sandboxed = !((req->is_exec && !pol->exec_shell) ||
	                   (req->entrance == ENTRANCE_SCHEDULER && !pol->scheduler_script));
	return 0;
}

int policy_isolation(bool sandboxed, const struct sandbox *s, const struct policy_machine *m,
                     enum isolation *ret_iso, char *why, size_t whysz, char *note,
                     size_t notesz)
{
	note[0] = '\0';
	if (!sandboxed) {
		snprintf(note, notesz, "execShell is switched off: this ran without a sandbox");
		*ret_iso = ISO_NONE;
		return 0;
	}
	if (s->backend == BACKEND_DOCKER && !m->docker_ok)
		return fail(PERR_ENGINE_UNAVAILABLE, why, whysz, "the docker backend is unavailable: %s",
		            m->docker_why && *m->docker_why ? m->docker_why : "no docker client found");
	/* a switch that is on while the engine is broken fails; never a raw shell */
	if (m->engine_broken)
		return fail(PERR_ENGINE_UNAVAILABLE, why, whysz, "no backend can run sandboxes here: %s",
		            m->engine_why && *m->engine_why ? m->engine_why : "the bwrap probe failed");
	if (s->backend == BACKEND_DOCKER) {
		if (s->network)
			snprintf(note, notesz,
			         "docker network: outbound is open and the host's loopback is not "
			         "enforced (host.docker.internal); prefer network: false");
		*ret_iso = ISO_DOCKER;
		return 0;
	}
	/* a network fence that cannot be built here refuses the run: sharing the host's
	 * network namespace would hand the jail every local service, the API included */
	if (net_mode_of(s) != NET_NONE) {
		static const struct net_machine nothing = { 0 };
		const char *missing = net_plan_missing(s, m->net ? m->net : &nothing);
		if (!m->bwrap)
			return fail(PERR_ENGINE_UNAVAILABLE, why, whysz,
			            "network, ports and proxy.allow need bwrap, which is not installed");
		if (missing)
			return fail(PERR_ENGINE_UNAVAILABLE, why, whysz, "%s", missing);
		/* checked when stored too; the daemon may have moved since */
		for (uint32_t i = 0; m->api_port && i < s->ports_loopback.n; i++)
			if (s->ports_loopback.v[i] == m->api_port)
				return fail(PERR_CONFLICT, why, whysz,
				            "loopback port %u is the daemon's own API port: a sandbox may "
				            "never reach it (remove it from ports.loopback)",
				            m->api_port);
	}
	if (!m->bwrap) {
		/* no bwrap at all: the named, reported degraded state, never silent */
		snprintf(note, notesz, "bwrap is not installed: this run had no OS barrier");
		*ret_iso = ISO_DEGRADED;
		return 0;
	}
	*ret_iso = ISO_BWRAP;
	return 0;
}

enum isolation policy_profile_isolation(const struct launcher *L, const struct sandbox *s)
{
	if (s->backend == BACKEND_DOCKER)
		return ISO_DOCKER;
	return L->bwrap_path ? ISO_BWRAP : ISO_DEGRADED;
}

static void refuse(run_done_fn done, void *arg, int code, const char *msg)
{
	done(code, msg, NULL, arg);
}

int run_code(struct launcher *L, const struct run_request *req, run_done_fn done, void *arg)
{
	struct msg_POLICY_REP pol;
	struct policy_machine m = { .bwrap = L->bwrap_path != NULL, .net = &L->net,
		                    .api_port = L->api_port };
	struct sandbox sb;
	enum isolation iso;
	char why[POLICY_WHY_MAX], note[POLICY_WHY_MAX];
	bool sandboxed = true;
	int e;

	if ((e = runner_init(L)) < 0)
		return e;
	if ((e = store_policy_get(L->db, &pol)) < 0) {
		snprintf(why, sizeof(why), "reading the exec policy: %s", strerror(-e));
		refuse(done, arg, PERR_INTERNAL, why);
		return 0;
	}
	if ((e = policy_switches(&pol, req, &sandboxed, why, sizeof(why))) != 0) {
		refuse(done, arg, e, why);
		return 0;
	}
	if (L->live_runs >= SBX_CONCURRENT_RUNS_MAX) {
		snprintf(why, sizeof(why), "too many runs at once (at most %u)", SBX_CONCURRENT_RUNS_MAX);
		refuse(done, arg, PERR_CONFLICT, why);
		return 0;
	}
	if (req->sandbox_id[0] == '\0' && req->is_exec)
		e = sandbox_ensure_default(L, &sb);
	else
		e = store_sandbox_get(L->db, req->sandbox_id, &sb);
	if (e < 0) {
		refuse(done, arg, e == -ENOENT ? PERR_NOT_FOUND : PERR_INTERNAL,
		       e == -ENOENT ? "no such sandbox" : "reading the sandbox failed");
		return 0;
	}
	/* probe results only where they matter: a direct run never waits on docker */
	if (sandboxed && sb.backend == BACKEND_DOCKER)
		m.docker_ok = !caps_docker_unavailable(&m.docker_why) && caps_docker_path();
	if (sandboxed)
		m.engine_broken = caps_engine_broken(&m.engine_why);
	if ((e = policy_isolation(sandboxed, &sb, &m, &iso, why, sizeof(why), note, sizeof(note))) != 0) {
		sandbox_clear(&sb);
		refuse(done, arg, e, why);
		return 0;
	}
	if (!sandboxed && req->entrance == ENTRANCE_SCHEDULER)
		snprintf(note, sizeof(note), "schedulerScript is switched off: this ran without a sandbox");
	/* the runner owns sb from here and calls done exactly once */
	return runner_start(L, req, &sb, iso, note, done, arg);
}
