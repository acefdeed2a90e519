/* bubblewrap argv. Order matters: later mounts cover earlier ones, so the home tmpfs comes
 * before the workdir is bound back, and mounts come after the workdir they live in. */
#include "bwrap_argv.h"

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
	/* outbound permission = the resolver; ports-only sandboxes get it in a later issue */
	bool outbound = s->network;
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
	if (!s->network)
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
	for (uint32_t i = 0; i < s->mount_sources.n && i < s->mount_targets.n; i++) {
		bool ro = i < s->mount_ro.n && s->mount_ro.v[i];
		if ((size_t)snprintf(dst, sizeof(dst), "%s/%s", s->workdir, s->mount_targets.v[i]) >=
		    sizeof(dst)) {
			r = -ENAMETOOLONG;
			goto fail;
		}
		PUSH3(ro ? "--ro-bind" : "--bind", staged(o->mount_from, i, s->mount_sources.v[i]), dst);
	}
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
	PUSH("/bin/sh");
	PUSH("-s");
	return 0;
fail:
	proto_strv_clear(ret);
	return r;
}
