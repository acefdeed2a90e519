/* bubblewrap argv. Order matters: later mounts cover earlier ones, so the home tmpfs comes
 * before the workdir is bound back, and mounts come after the workdir they live in. */
#include "bwrap_argv.h"
#include "fence/netplan.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

const char *const bwrap_strict_roots[] = {
	"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
	/* /etc: only what programs need to start, find libraries and verify TLS */
	"/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/alternatives",
	"/etc/ssl", "/etc/ca-certificates", "/etc/pki", "/etc/localtime", "/etc/nsswitch.conf",
	"/etc/passwd", "/etc/group", "/etc/mime.types", "/etc/python3", "/etc/python3.11",
	"/nix/store", NULL
};

static const char *const network_files[] = { "/etc/resolv.conf", "/etc/hosts", NULL };

#define PUSH(s)                                                                                    \
	do {                                                                                       \
		int r_ = proto_strv_push(ret, (s));                                                \
		if (r_ < 0)                                                                        \
			goto fail;                                                                 \
	} while (0)
#define PUSH3(a, b, c)                                                                             \
	do {                                                                                       \
		PUSH(a);                                                                           \
		PUSH(b);                                                                           \
		PUSH(c);                                                                           \
	} while (0)

/* What bwrap binds from: the staging point when the source was staged, else the path. */
static const char *staged(const struct proto_strv *from, uint32_t i, const char *path)
{
	return from && i < from->n ? from->v[i] : path;
}

int bwrap_argv(const struct sandbox *s, const struct bwrap_opts *o, struct proto_strv *ret)
{
	char num[32], dst[PATH_MAX];
	enum net_mode mode = net_mode_of(s);
	/* outbound permission = a resolver: the host's with network on, the engine's own
	 * for proxy.allow; ports alone reach addresses, not names */
	bool outbound = mode == NET_ANY || (mode == NET_PROXY && o->resolv_conf);
	bool own_ns = mode != NET_NONE && o->net_ready;
	const char *rw[4 + SBX_MOUNTS_MAX];
	size_t nrw = 0;
	int r = -ENOMEM;

	*ret = (struct proto_strv){ 0 };
	if (!s->workdir || s->workdir[0] != '/')
		return -EINVAL;
	PUSH(o->bwrap);
	PUSH("--die-with-parent");
	PUSH("--new-session");
	PUSH("--unshare-pid");
	PUSH("--unshare-ipc");
	PUSH("--unshare-uts");
	PUSH("--unshare-cgroup-try");
	if (!own_ns)
		PUSH("--unshare-net");
	PUSH("--unshare-user");
	/* no nested user namespace: it would hand the jail a fresh set of capabilities */
	PUSH("--disable-userns");
	PUSH("--cap-drop");
	PUSH("ALL");

	if (s->fs_mode == FS_OPEN) {
		PUSH3("--ro-bind", "/", "/");
	} else {
		/* strict and allowlist; an unrecognised value arrives here as FS_STRICT */
		for (size_t i = 0; bwrap_strict_roots[i]; i++)
			PUSH3("--ro-bind-try", bwrap_strict_roots[i], bwrap_strict_roots[i]);
	}
	for (size_t i = 0; outbound && s->fs_mode != FS_OPEN && network_files[i]; i++)
		PUSH3("--ro-bind-try", network_files[i], network_files[i]);
	rw[nrw++] = "/dev";
	rw[nrw++] = "/tmp";

	PUSH("--dev");
	PUSH("/dev");
	PUSH("--proc");
	PUSH("/proc");
	PUSH("--tmpfs");
	PUSH("/tmp");
	if (s->fs_mode == FS_OPEN) {
		/* the whole disk is readable, so cover what must not be: every home, service
		 * sockets in /run, and the engine's own data (token, database, other sandboxes) */
		PUSH("--tmpfs");
		PUSH("/home");
		PUSH("--tmpfs");
		PUSH("/run");
		if (o->data_dir) {
			PUSH("--tmpfs");
			PUSH(o->data_dir);
		}
		/* no resolver without outbound permission: the files read as empty */
		for (size_t i = 0; !outbound && network_files[i]; i++)
			PUSH3("--ro-bind", "/dev/null", network_files[i]);
	}
	/* whiting out home hides every secret dotfile */
	if (o->home && o->home[0] == '/') {
		PUSH("--tmpfs");
		PUSH(o->home);
	}
	/* allowlist: exactly these paths, read-only, not their neighbours; after the home
	 * tmpfs so a path under home is not covered again */
	if (s->fs_mode == FS_ALLOWLIST)
		for (uint32_t i = 0; i < s->read_paths.n; i++) {
			const char *from = staged(o->read_from, i, s->read_paths.v[i]);
			if (*from)
				PUSH3("--ro-bind-try", from, s->read_paths.v[i]);
		}
	/* the workdir bound back AFTER the tmpfs layers above */
	PUSH3("--bind", s->workdir, s->workdir);
	rw[nrw++] = s->workdir;
	for (uint32_t i = 0; i < s->mount_sources.n && i < s->mount_targets.n; i++) {
		bool ro = i < s->mount_ro.n && s->mount_ro.v[i];
		if ((size_t)snprintf(dst, sizeof(dst), "%s/%s", s->workdir, s->mount_targets.v[i]) >=
		    sizeof(dst)) {
			r = -ENAMETOOLONG;
			goto fail;
		}
		PUSH3(ro ? "--ro-bind" : "--bind", staged(o->mount_from, i, s->mount_sources.v[i]), dst);
		if (!ro && nrw < sizeof(rw) / sizeof(rw[0]))
			rw[nrw++] = s->mount_targets.v[i]; /* relative: made absolute below */
	}
	/* the engine's resolver for proxy.allow: over the host's file in open mode too */
	if (mode == NET_PROXY && o->resolv_conf)
		PUSH3("--ro-bind", o->resolv_conf, "/etc/resolv.conf");
	/* sbx-jail-init at its own path: bwrap makes the mount point in its tmpfs root (or
	 * finds the file where a read-only bind already shows it) */
	if (o->jail_init)
		PUSH3("--ro-bind", o->jail_init, o->jail_init);
	/* bwrap's own root is a tmpfs: make it read-only, so nothing outside the workdir,
	 * /tmp and read-write mounts accepts a write, not even the jail's scratch root */
	PUSH("--remount-ro");
	PUSH("/");
	PUSH("--chdir");
	PUSH(s->workdir);
	if (o->seccomp_fd >= 0) {
		snprintf(num, sizeof(num), "%d", o->seccomp_fd);
		PUSH("--seccomp");
		PUSH(num);
	}
	if (o->info_fd >= 0) {
		snprintf(num, sizeof(num), "%d", o->info_fd);
		PUSH("--info-fd");
		PUSH(num);
	}
	PUSH("--");
	if (o->jail_init) {
		PUSH(o->jail_init);
		for (uint32_t i = 0; o->init_args && i < o->init_args->n; i++)
			PUSH(o->init_args->v[i]);
		/* Landlock's second wall: writes only where bwrap mounted something writable */
		for (size_t i = 0; i < nrw; i++) {
			if (rw[i][0] != '/') {
				if ((size_t)snprintf(dst, sizeof(dst), "%s/%s", s->workdir, rw[i]) >= sizeof(dst))
					continue; /* refused above already */
				PUSH("--fs-rw");
				PUSH(dst);
				continue;
			}
			PUSH("--fs-rw");
			PUSH(rw[i]);
		}
		PUSH("--");
	}
	PUSH("/bin/sh");
	PUSH("-s");
	return 0;
fail:
	proto_strv_clear(ret);
	return r;
}

int bwrap_argv_program(const struct proto_strv *argv)
{
	for (uint32_t i = 0; i + 1 < argv->n; i++)
		if (strcmp(argv->v[i], "--") == 0)
			return (int)i + 1;
	return -1;
}
