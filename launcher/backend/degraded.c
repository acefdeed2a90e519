/* No OS barrier: plain `sh -s` as the jail uid (when root) with NO_NEW_PRIVS and the
 * runner's rlimits and cgroups. Used for the named degraded state (no bwrap on the
 * machine) and for isolation "none" (execShell / schedulerScript switched off). */
#include "backend/backend.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static int degraded_profile(struct launcher *L, const struct sandbox *s,
                            struct msg_PROFILE_REP *ret)
{
	memset(ret, 0, sizeof(*ret));
	ret->kind = strdup("degraded");
	ret->note = strdup("bwrap is not installed: runs get no OS barrier");
	return ret->kind && ret->note ? 0 : -ENOMEM;
}

static int degraded_prepare(struct launcher *L, const struct sandbox *s,
                            const struct backend_fences *f, struct backend_spawn *ret)
{
	int r;
	if (f->binds.n)
		return -EOPNOTSUPP; /* nothing to bind into: there is no jail */
	if ((r = proto_strv_push(&ret->argv, "/bin/sh")) < 0 || (r = proto_strv_push(&ret->argv, "-s")) < 0)
		return r;
	ret->engine_limits = true;
	return 0;
}

const struct backend_ops backend_degraded = {
	.iso = ISO_DEGRADED,
	.profile = degraded_profile,
	.prepare = degraded_prepare,
	.child_setup = backend_jail_child_setup,
	.interpreters = backend_host_interpreters,
};
