/* The bwrap argv builder: the shape of the fence each run gets (DESIGN.md §5). */
#include <criterion/criterion.h>
#include <string.h>

#include "fence/bwrap_argv.h"

TestSuite(bwrap_argv, .timeout = 10);

static const struct bwrap_opts opts = { .bwrap = "/usr/bin/bwrap", .home = "/root",
	                                .data_dir = "/var/lib/sbx", .seccomp_fd = 4,
	                                .info_fd = 3 };

static int idx(const struct proto_strv *a, const char *s, int from)
{
	for (uint32_t i = (uint32_t)from; i < a->n; i++)
		if (strcmp(a->v[i], s) == 0)
			return (int)i;
	return -1;
}

/* index of "flag a b" as three consecutive words */
static int idx3(const struct proto_strv *a, const char *f, const char *x, const char *y)
{
	for (uint32_t i = 0; i + 2 < a->n; i++)
		if (!strcmp(a->v[i], f) && !strcmp(a->v[i + 1], x) && !strcmp(a->v[i + 2], y))
			return (int)i;
	return -1;
}

static struct sandbox sb(void)
{
	struct sandbox s = { .workdir = "/var/lib/sbx/sandboxes/sbx_1", .fs_mode = FS_STRICT };
	return s;
}

Test(bwrap_argv, strict_no_network_shape)
{
	struct sandbox s = sb();
	struct proto_strv a;
	cr_assert_eq(bwrap_argv(&s, &opts, &a), 0);
	cr_assert_str_eq(a.v[0], "/usr/bin/bwrap");
	for (const char *const *f = (const char *const[]){ "--die-with-parent", "--new-session",
		                                            "--unshare-pid", "--unshare-ipc",
		                                            "--unshare-uts", "--unshare-net",
		                                            "--unshare-user", "--disable-userns", NULL };
	     *f; f++)
		cr_expect_geq(idx(&a, *f, 0), 0, "missing %s", *f);
	cr_assert_geq(idx3(&a, "--cap-drop", "ALL", a.v[idx(&a, "--cap-drop", 0) + 2]), 0);
	cr_assert_geq(idx3(&a, "--ro-bind-try", "/usr", "/usr"), 0);
	cr_assert_lt(idx3(&a, "--ro-bind", "/", "/"), 0, "strict must not bind the whole disk");
	cr_assert_lt(idx(&a, "/etc/resolv.conf", 0), 0, "resolver given without network");
	/* the home tmpfs comes before the workdir is bound back */
	int home = idx3(&a, "--tmpfs", "/root", a.v[idx(&a, "/root", 0) + 1]);
	int wd = idx3(&a, "--bind", s.workdir, s.workdir);
	cr_assert_geq(home, 0);
	cr_assert_gt(wd, home);
	/* nothing else is bound writable */
	for (int i = idx(&a, "--bind", 0); i >= 0; i = idx(&a, "--bind", i + 1))
		cr_assert_eq(i, wd, "unexpected writable bind of %s", a.v[i + 1]);
	cr_assert_geq(idx3(&a, "--seccomp", "4", "--info-fd"), 0);
	cr_assert_str_eq(a.v[a.n - 3], "--");
	cr_assert_str_eq(a.v[a.n - 2], "/bin/sh");
	cr_assert_str_eq(a.v[a.n - 1], "-s");
	cr_assert_lt(idx(&a, "-c", 0), 0, "a command line for a shell appeared");
	cr_assert_gt(idx(&a, "--remount-ro", 0), wd);
	proto_strv_clear(&a);
}

Test(bwrap_argv, network_on_keeps_the_leaders_namespace_and_gets_resolver)
{
	struct sandbox s = sb();
	struct proto_strv a;
	struct bwrap_opts o = opts;
	s.network = true;
	o.net_ready = true;
	cr_assert_eq(bwrap_argv(&s, &o, &a), 0);
	cr_assert_lt(idx(&a, "--unshare-net", 0), 0);
	cr_assert_geq(idx3(&a, "--ro-bind-try", "/etc/resolv.conf", "/etc/resolv.conf"), 0);
	proto_strv_clear(&a);
}

/* network without a namespace made by the leader: no network rather than the host's */
Test(bwrap_argv, network_without_its_namespace_fails_closed)
{
	struct sandbox s = sb();
	struct proto_strv a;
	uint32_t p[] = { 8080 };
	s.network = true;
	cr_assert_eq(bwrap_argv(&s, &opts, &a), 0);
	cr_assert_geq(idx(&a, "--unshare-net", 0), 0);
	proto_strv_clear(&a);
	s = sb();
	s.ports_listen = (struct proto_u32v){ 1, p };
	cr_assert_eq(bwrap_argv(&s, &opts, &a), 0);
	cr_assert_geq(idx(&a, "--unshare-net", 0), 0);
	cr_assert_lt(idx(&a, "/etc/resolv.conf", 0), 0, "ports alone get no resolver");
	proto_strv_clear(&a);
}

/* sbx-jail-init runs first, bound read-only at its own path, with a --fs-rw for every
 * writable mount and nothing else; proxy.allow gets the engine's resolv.conf */
Test(bwrap_argv, jail_init_runs_first_with_the_writable_mounts)
{
	struct sandbox s = sb();
	struct proto_strv a, init = { 0 };
	struct bwrap_opts o = opts;
	char *targets[] = { "data", "ro" }, *sources[] = { "/srv/data", "/srv/ro" };
	uint32_t ro[] = { 0, 1 };
	char *allow[] = { "pypi.org:443" };

	proto_strv_push(&init, "--ready-fd");
	proto_strv_push(&init, "6");
	o.jail_init = "/usr/libexec/sbx/sbx-jail-init";
	o.init_args = &init;
	o.net_ready = true;
	o.resolv_conf = "/var/lib/sbx/net/resolv.conf";
	s.mount_targets = (struct proto_strv){ 2, targets };
	s.mount_sources = (struct proto_strv){ 2, sources };
	s.mount_ro = (struct proto_u32v){ 2, ro };
	s.proxy_allow = (struct proto_strv){ 1, allow };
	cr_assert_eq(bwrap_argv(&s, &o, &a), 0);
	int prog = bwrap_argv_program(&a);
	cr_assert_geq(prog, 0);
	cr_assert_str_eq(a.v[prog], o.jail_init);
	cr_assert_geq(idx3(&a, "--ro-bind", o.jail_init, o.jail_init), 0);
	cr_assert_lt(idx3(&a, "--ro-bind", o.jail_init, o.jail_init), prog);
	cr_assert_geq(idx3(&a, "--ready-fd", "6", "--fs-rw"), prog);
	cr_assert_geq(idx(&a, "/var/lib/sbx/sandboxes/sbx_1/data", prog), 0);
	cr_assert_lt(idx(&a, "/var/lib/sbx/sandboxes/sbx_1/ro", prog), 0, "a read-only mount got --fs-rw");
	cr_assert_geq(idx3(&a, "--fs-rw", "/tmp", "--fs-rw"), prog);
	cr_assert_geq(idx3(&a, "--ro-bind", o.resolv_conf, "/etc/resolv.conf"), 0);
	cr_assert_lt(idx(&a, "--unshare-net", 0), 0);
	cr_assert_str_eq(a.v[a.n - 3], "--");
	cr_assert_str_eq(a.v[a.n - 2], "/bin/sh");
	cr_assert_str_eq(a.v[a.n - 1], "-s");
	proto_strv_clear(&a);
	proto_strv_clear(&init);
}

Test(bwrap_argv, allowlist_binds_exactly_the_paths_read_only)
{
	struct sandbox s = sb();
	char *paths[] = { "/srv/data/a", NULL };
	struct proto_strv a;
	s.fs_mode = FS_ALLOWLIST;
	s.read_paths = (struct proto_strv){ 1, paths };
	cr_assert_eq(bwrap_argv(&s, &opts, &a), 0);
	int p = idx3(&a, "--ro-bind-try", "/srv/data/a", "/srv/data/a");
	cr_assert_geq(p, 0);
	cr_assert_gt(p, idx(&a, "/root", 0), "a read path under home would be covered again");
	cr_assert_lt(idx(&a, "/srv/data", 0), 0, "the neighbour directory was bound");
	proto_strv_clear(&a);
}

Test(bwrap_argv, open_whites_out_home_run_and_data_dir)
{
	struct sandbox s = sb();
	struct proto_strv a;
	s.fs_mode = FS_OPEN;
	cr_assert_eq(bwrap_argv(&s, &opts, &a), 0);
	int root = idx3(&a, "--ro-bind", "/", "/");
	cr_assert_geq(root, 0);
	int home = idx(&a, "/home", 0), data = idx(&a, "/var/lib/sbx", 0), run = idx(&a, "/run", 0);
	cr_assert(home > root && data > root && run > root);
	cr_assert_str_eq(a.v[data - 1], "--tmpfs");
	cr_assert_gt(idx3(&a, "--bind", s.workdir, s.workdir), data, "workdir not bound back");
	cr_assert_geq(idx3(&a, "--ro-bind", "/dev/null", "/etc/resolv.conf"), 0,
	              "open mode without network must hide the resolver");
	proto_strv_clear(&a);
}

Test(bwrap_argv, mounts_after_workdir)
{
	struct sandbox s = sb();
	char *src[] = { "/srv/in", "/srv/out" }, *tgt[] = { "in", "out/x" };
	uint32_t ro[] = { 1, 0 };
	struct proto_strv a;
	s.mount_sources = (struct proto_strv){ 2, src };
	s.mount_targets = (struct proto_strv){ 2, tgt };
	s.mount_ro = (struct proto_u32v){ 2, ro };
	cr_assert_eq(bwrap_argv(&s, &opts, &a), 0);
	int wd = idx3(&a, "--bind", s.workdir, s.workdir);
	int m1 = idx3(&a, "--ro-bind", "/srv/in", "/var/lib/sbx/sandboxes/sbx_1/in");
	int m2 = idx3(&a, "--bind", "/srv/out", "/var/lib/sbx/sandboxes/sbx_1/out/x");
	cr_assert(m1 > wd && m2 > wd);
	proto_strv_clear(&a);
}

Test(bwrap_argv, relative_workdir_refused)
{
	struct sandbox s = sb();
	struct proto_strv a;
	s.workdir = "relative";
	cr_assert_lt(bwrap_argv(&s, &opts, &a), 0);
}

/* Staged (a root daemon): bwrap binds each staging point at the mount's target and at the
 * readPath; the host paths themselves never appear as a source, and a readPath that was
 * gone at staging time ("") is left out. */
Test(bwrap_argv, staged_sources_replace_the_host_paths)
{
	struct sandbox s = sb();
	char *src[] = { "/home/alice/proj", "/srv/out" }, *tgt[] = { "in", "out" };
	char *paths[] = { "/home/alice/ref", "/srv/gone" };
	char *mfrom[] = { "/dev/shm/m0", "/dev/shm/m1", NULL }, *rfrom[] = { "/dev/shm/r0", "", NULL };
	uint32_t ro[] = { 1, 0 };
	struct proto_strv mf = { 2, mfrom }, rf = { 2, rfrom }, a;
	struct bwrap_opts o = opts;
	o.mount_from = &mf;
	o.read_from = &rf;
	s.fs_mode = FS_ALLOWLIST;
	s.read_paths = (struct proto_strv){ 2, paths };
	s.mount_sources = (struct proto_strv){ 2, src };
	s.mount_targets = (struct proto_strv){ 2, tgt };
	s.mount_ro = (struct proto_u32v){ 2, ro };
	cr_assert_eq(bwrap_argv(&s, &o, &a), 0);
	int wd = idx3(&a, "--bind", s.workdir, s.workdir);
	int m0 = idx3(&a, "--ro-bind", "/dev/shm/m0", "/var/lib/sbx/sandboxes/sbx_1/in");
	int m1 = idx3(&a, "--bind", "/dev/shm/m1", "/var/lib/sbx/sandboxes/sbx_1/out");
	cr_assert(m0 > wd && m1 > wd, "staged mounts missing or before the workdir");
	cr_assert_geq(idx3(&a, "--ro-bind-try", "/dev/shm/r0", "/home/alice/ref"), 0);
	cr_assert_lt(idx(&a, "/home/alice/proj", 0), 0, "a staged mount's host path was bound");
	cr_assert_lt(idx(&a, "/srv/out", 0), 0, "a staged mount's host path was bound");
	cr_assert_lt(idx(&a, "/srv/gone", 0), 0, "a readPath missing at staging was bound");
	cr_assert_lt(idx(&a, "", 0), 0, "an empty source reached bwrap");
	proto_strv_clear(&a);
}
