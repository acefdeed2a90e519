/* The bubblewrap command line of one run (DESIGN.md §5), built anew from the stored
 * settings every time. A pure function: tests/unit/test_bwrap_argv.c checks its shape. */
#ifndef SBX_BWRAP_ARGV_H
#define SBX_BWRAP_ARGV_H

#include "launcher.h"

struct bwrap_opts {
	const char *bwrap;    /* path of the bwrap binary */
	const char *home;     /* the daemon user's home, whited out */
	const char *data_dir; /* the engine's data dir, whited out in open mode */
	int seccomp_fd;       /* --seccomp FD, or -1 */
	int info_fd;          /* --info-fd FD, or -1 */
	/* Staged sources (fence/stage.h), or NULL: bwrap binds the stored paths themselves.
	 * mount_from: per mount, the staging point bound at its target. read_from: per
	 * readPath, the staging point bound at the readPath, "" = gone, left out. */
	const struct proto_strv *mount_from, *read_from;
	/* The network fence (fence/netplan.h). net_ready: the run's leader made the jail's
	 * network namespace, so bwrap must not make another; without it every jail gets
	 * --unshare-net (no network rather than the host's). resolv_conf: the file bound
	 * at /etc/resolv.conf for proxy.allow, or NULL. */
	bool net_ready;
	const char *resolv_conf;
	/* sbx-jail-init (bound read-only at its own path) and its options before "--", or
	 * NULL: bwrap runs sh directly. bwrap_argv adds one --fs-rw per writable mount. */
	const char *jail_init;
	const struct proto_strv *init_args;
};

/* System roots bound read-only (each --ro-bind-try: a root missing on this distribution
 * is skipped). /etc/resolv.conf and /etc/hosts only with outbound network. */
extern const char *const bwrap_strict_roots[];

int bwrap_argv(const struct sandbox *s, const struct bwrap_opts *o, struct proto_strv *ret);

/* The jail's own first program and its arguments in argv: the index of the element after
 * bwrap's "--" (sbx-jail-init or /bin/sh), or -1. */
int bwrap_argv_program(const struct proto_strv *argv);

#endif
