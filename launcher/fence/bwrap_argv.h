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
};

/* System roots bound read-only (each --ro-bind-try: a root missing on this distribution
 * is skipped). /etc/resolv.conf and /etc/hosts only with outbound network. */
extern const char *const bwrap_strict_roots[];

int bwrap_argv(const struct sandbox *s, const struct bwrap_opts *o, struct proto_strv *ret);

#endif
