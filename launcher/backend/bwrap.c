/* bubblewrap (DESIGN.md §5): the argv from fence/bwrap_argv.c, the seccomp baseline from
 * fence/jail_seccomp.c as --seccomp 4, and --info-fd 3 for the jail's own pid. */
#include "backend/backend.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cleanup.h"

#include "fence/bwrap_argv.h"
#include "fence/jail_seccomp.h"
#include "fence/netplan.h"
#include "fence/stage.h"

/* net_ready: the run's leader makes the network namespace (netrun.h). */
static int bwrap_build(struct launcher *L, const struct sandbox *s, const struct stage_plan *st,
                       bool net_ready, struct proto_strv *ret)
{
	_cleanup_(proto_strv_clear) struct proto_strv init = { 0 };
	struct bwrap_opts bo = { .bwrap = L->bwrap_path, .home = launcher_home_dir(),
		                 .data_dir = L->data_dir, .seccomp_fd = BACKEND_CHILD_FD_SECCOMP,
		                 .info_fd = BACKEND_CHILD_FD_INFO,
		                 .mount_from = st ? &st->mount_from : NULL,
		                 .read_from = st ? &st->read_from : NULL,
		                 .net_ready = net_ready,
		                 .resolv_conf = L->resolv_conf,
		                 .jail_init = L->jail_init_path,
		                 .init_args = &init };
	int r;
	if (L->jail_init_path &&
	    (r = net_plan_init_args(s, L->landlock_abi, net_ready ? BACKEND_CHILD_FD_READY : -1,
	                            &init)) < 0)
		return r;
	/* tracing "syscalls": jail-init hands its notifying filter's listener out on this fd */
	if (L->jail_init_path && s->tracing == SBX_TRACING_SYSCALLS) {
		char fd[16];
		snprintf(fd, sizeof(fd), "%d", BACKEND_CHILD_FD_NOTIFY);
		if ((r = proto_strv_push(&init, "--notify-fd")) < 0 || (r = proto_strv_push(&init, fd)) < 0)
			return r;
	}
	return bwrap_argv(s, &bo, ret);
}

static enum jail_sock bwrap_socks(const struct sandbox *s)
{
	switch (net_mode_of(s)) {
	case NET_NONE:
		return JAIL_SOCK_NO_INET;
	case NET_PORTS:
		return JAIL_SOCK_NO_UDP;
	case NET_ANY:
	case NET_PROXY:
		break;
	}
	return JAIL_SOCK_INET;
}

/* As root the jail uid cannot be trusted to reach, or to own, what is mounted: stage it
 * (fence/stage.h). Without root the jail is the daemon's own uid and binds the paths. */
static int bwrap_stage(struct launcher *L, const struct sandbox *s, struct backend_spawn *ret)
{
	const char *why = NULL;
	int r;

	if (!L->root)
		return 0;
	if (!(ret->stage = calloc(1, sizeof(*ret->stage))))
		return -ENOMEM;
	if ((r = stage_plan_build(s, s->jail_uid, launcher_home_dir(), L->data_dir, ret->stage,
	                          &why)) < 0) {
		if (why && asprintf(&ret->note, "a mount could not be staged: %s", why) < 0)
			ret->note = NULL;
		return r;
	}
	if (ret->stage->note[0] && !(ret->note = strdup(ret->stage->note)))
		return -ENOMEM;
	return 0;
}

static int bwrap_child_root(struct backend_child *c)
{
	int r = stage_attach(c->sp->stage);
	if (r < 0) {
		errno = -r;
		backend_child_fail("staging the mounts");
	}
	return 0;
}

/* Fence binds go just before the "--" that ends bwrap's own options (the first one:
 * sbx-jail-init's own "--" follows). */
static int insert_binds(struct proto_strv *argv, const struct proto_strv *binds)
{
	struct proto_strv out = { 0 };
	int at = bwrap_argv_program(argv) - 1, r = 0;
	for (uint32_t i = 0; i < argv->n && r == 0; i++) {
		if ((int)i == at)
			for (uint32_t j = 0; j < binds->n && r == 0; j++)
				r = proto_strv_push(&out, binds->v[j]);
		if (r == 0)
			r = proto_strv_push(&out, argv->v[i]);
	}
	if (r < 0) {
		proto_strv_clear(&out);
		return r;
	}
	proto_strv_clear(argv);
	*argv = out;
	return 0;
}

static int bwrap_prepare(struct launcher *L, const struct sandbox *s, const struct backend_fences *f,
                         struct backend_spawn *ret)
{
	int p[2], r;
	if ((r = jail_seccomp_fd(bwrap_socks(s), &ret->seccomp_fd)) < 0)
		return r;
	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	ret->info_r = p[0];
	ret->info_w = p[1];
	if ((r = bwrap_stage(L, s, ret)) < 0 ||
	    (r = bwrap_build(L, s, ret->stage, f->net_ready, &ret->argv)) < 0)
		return r;
	if (f->binds.n && (r = insert_binds(&ret->argv, &f->binds)) < 0)
		return r;
	ret->engine_limits = true;
	ret->syscalls = "seccomp";
	return 0;
}

static int bwrap_profile(struct launcher *L, const struct sandbox *s, struct msg_PROFILE_REP *ret)
{
	char note[PROTO_STR_MAX];
	size_t off = 0;
	int e;

	memset(ret, 0, sizeof(*ret));
	if ((e = bwrap_build(L, s, NULL, net_mode_of(s) != NET_NONE, &ret->argv)) < 0)
		return e;
	off += (size_t)snprintf(note + off, sizeof(note) - off,
	                        "runs as host uid %u with NO_NEW_PRIVS; fd %d carries the seccomp "
	                        "baseline (denied: ",
	                        L->root ? s->jail_uid : (unsigned)geteuid(), BACKEND_CHILD_FD_SECCOMP);
	for (size_t i = 0; jail_seccomp_denied[i] && off < sizeof(note) - 64; i++)
		off += (size_t)snprintf(note + off, sizeof(note) - off, "%s%s", i ? " " : "",
		                        jail_seccomp_denied[i]);
	snprintf(note + off, sizeof(note) - off,
	         "%s); limits: %s; timeout %u ms; output %llu bytes per stream%s",
	         bwrap_socks(s) == JAIL_SOCK_NO_INET ? "; AF_INET/AF_INET6/AF_PACKET sockets"
	         : bwrap_socks(s) == JAIL_SOCK_NO_UDP ? "; AF_PACKET and inet datagram sockets"
	                                              : "; AF_PACKET sockets",
	         L->root ? "per-run cgroups (memory, pids) and rlimits" : "rlimits only",
	         s->timeout_ms, (unsigned long long)s->output_bytes,
	         L->root ? "; mount sources and readPaths are staged per run (idmapped to the jail "
	                   "uid when a non-root user owns them) and bound from " STAGE_ROOT
	                 : "");
	ret->kind = strdup("bwrap");
	ret->note = strdup(note);
	/* the network fence's own program, as a run would start it */
	if (net_mode_of(s) == NET_PORTS || net_mode_of(s) == NET_ANY) {
		_cleanup_(proto_strv_clear) struct proto_strv pa = { 0 };
		size_t n = 0;
		char text[PROTO_STR_MAX];
		if ((e = net_plan_pasta_args(s, &pa)) < 0)
			return e;
		n += (size_t)snprintf(text, sizeof(text), "pasta");
		for (uint32_t i = 0; i < pa.n && n < sizeof(text); i++)
			n += (size_t)snprintf(text + n, sizeof(text) - n, " %s", pa.v[i]);
		if (n < sizeof(text))
			snprintf(text + n, sizeof(text) - n,
			         " --netns /proc/<leader>/ns/net --userns /proc/<leader>/ns/user%s",
			         L->root ? " --runas <jail uid>" : "");
		ret->text = strdup(text);
	} else if (net_mode_of(s) == NET_PROXY) {
		ret->text = strdup("proxy.allow: no route out; the engine's resolver and listeners "
		                   "inside the jail's namespace, carried by sbx-net");
	}
	return ret->kind && ret->note ? 0 : -ENOMEM;
}

const struct backend_ops backend_bwrap = {
	.iso = ISO_BWRAP,
	.profile = bwrap_profile,
	.prepare = bwrap_prepare,
	.child_root = bwrap_child_root,
	.child_setup = backend_jail_child_setup,
	.interpreters = backend_host_interpreters,
};
