/* docker backend argv: flags as DESIGN.md §5, no shell parses a command line. */
#include <criterion/criterion.h>
#include <string.h>

#include "fence/docker_argv.h"

TestSuite(docker_argv, .timeout = 10);

static int idx(const struct proto_strv *sv, const char *s)
{
	for (uint32_t i = 0; i < sv->n; i++)
		if (strcmp(sv->v[i], s) == 0)
			return (int)i;
	return -1;
}

static struct sandbox sb(void)
{
	struct sandbox s = { .id = "sbx_abc", .workdir = "/var/lib/sbx/sandboxes/sbx_abc",
		             .memory_mb = 512, .pids = 256, .jail_uid = 200001,
		             .image = "python:3.12-slim" };
	return s;
}

Test(docker_argv, run_flags)
{
	struct sandbox s = sb();
	struct proto_strv a = { 0 };
	cr_assert_eq(docker_run_argv(&s, "docker", &a), 0);
	cr_assert_str_eq(a.v[0], "docker");
	cr_assert_str_eq(a.v[1], "run");
	cr_assert_geq(idx(&a, "-d"), 0);
	int n = idx(&a, "--network");
	cr_assert_geq(n, 0);
	cr_assert_str_eq(a.v[n + 1], "none");
	int m = idx(&a, "--memory"), ms = idx(&a, "--memory-swap");
	cr_assert_str_eq(a.v[m + 1], "512m");
	cr_assert_str_eq(a.v[ms + 1], "512m");
	cr_assert_str_eq(a.v[idx(&a, "--pids-limit") + 1], "256");
	cr_assert_str_eq(a.v[idx(&a, "--cap-drop") + 1], "ALL");
	cr_assert_str_eq(a.v[idx(&a, "--security-opt") + 1], "no-new-privileges");
	cr_assert_str_eq(a.v[idx(&a, "--user") + 1], "200001:200001");
	cr_assert_geq(idx(&a, "type=bind,source=/var/lib/sbx/sandboxes/sbx_abc,target=/work"), 0);
	cr_assert_str_eq(a.v[idx(&a, "--entrypoint") + 1], "sleep");
	cr_assert_str_eq(a.v[a.n - 2], "python:3.12-slim");
	cr_assert_str_eq(a.v[a.n - 1], "infinity");
	cr_assert_lt(idx(&a, "-c"), 0, "a shell command line appeared");
	proto_strv_clear(&a);
}

Test(docker_argv, network_on_and_mounts)
{
	struct sandbox s = sb();
	char *src[] = { "/home/u/data", "/home/u/out" }, *tgt[] = { "data", "out" };
	uint32_t ro[] = { 1, 0 };
	struct proto_strv a = { 0 };
	s.network = true;
	s.mount_sources = (struct proto_strv){ 2, src };
	s.mount_targets = (struct proto_strv){ 2, tgt };
	s.mount_ro = (struct proto_u32v){ 2, ro };
	cr_assert_eq(docker_run_argv(&s, "docker", &a), 0);
	cr_assert_lt(idx(&a, "--network"), 0);
	cr_assert_geq(idx(&a, "type=bind,source=/home/u/data,target=/work/data,readonly"), 0);
	cr_assert_geq(idx(&a, "type=bind,source=/home/u/out,target=/work/out"), 0);
	proto_strv_clear(&a);
}

Test(docker_argv, bad_image_or_comma_refused)
{
	struct sandbox s = sb();
	struct proto_strv a = { 0 };
	s.image = "--privileged";
	cr_assert_lt(docker_run_argv(&s, "docker", &a), 0);
	s.image = "python";
	s.workdir = "/x,source=/etc";
	cr_assert_lt(docker_run_argv(&s, "docker", &a), 0);
	cr_assert_eq(a.n, 0);
}

Test(docker_argv, exec_is_sh_on_stdin)
{
	struct sandbox s = sb();
	char *env[] = { "A=b c" };
	struct proto_strv a = { 0 };
	s.env = (struct proto_strv){ 1, env };
	cr_assert_eq(docker_exec_argv(&s, "docker", &a), 0);
	cr_assert_str_eq(a.v[1], "exec");
	cr_assert_str_eq(a.v[2], "-i");
	cr_assert_geq(idx(&a, "A=b c"), 0);
	cr_assert_str_eq(a.v[a.n - 3], "sbx-sbx_abc");
	cr_assert_str_eq(a.v[a.n - 2], "sh");
	cr_assert_str_eq(a.v[a.n - 1], "-s");
	proto_strv_clear(&a);
}
