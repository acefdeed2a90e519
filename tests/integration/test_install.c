/* make install's layout, for real: `cmake --install` into a staging DESTDIR, then the
 * installed sbxd runs a traced Python program in bwrap, which needs every piece the
 * install put in libexec/sbx (the children, sbx-jail-init, the tracing shims). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "cleanup.h"
#include "harness.h"

static char stage[64];
static char prefix[PATH_MAX] = "/usr/local"; /* CMAKE_INSTALL_PREFIX of the build */

static void read_prefix(const char *build)
{
	char path[PATH_MAX + 32], line[PATH_MAX + 64];
	snprintf(path, sizeof(path), "%s/CMakeCache.txt", build);
	FILE *f = fopen(path, "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, "CMAKE_INSTALL_PREFIX:PATH=", 26) == 0) {
			line[strcspn(line, "\n")] = '\0';
			snprintf(prefix, sizeof(prefix), "%s", line + 26);
		}
	fclose(f);
}

static void setup(void)
{
	char build[PATH_MAX], cmd[PATH_MAX * 2], libexec[PATH_MAX];
	const char *bin = getenv("SBX_BIN_DIR");
	sbx_require_bwrap();
	cr_assert(bin && *bin, "SBX_BIN_DIR names the build's bin directory");
	snprintf(build, sizeof(build), "%s/..", bin);
	snprintf(stage, sizeof(stage), "/tmp/sbx-install-XXXXXX");
	cr_assert_not_null(mkdtemp(stage));
	cr_assert(chmod(stage, 0755) == 0); /* the jail uid walks to sbx-jail-init and the shims */
	snprintf(cmd, sizeof(cmd), "DESTDIR=%s cmake --install %s > %s/install.log 2>&1", stage, build, stage);
	cr_assert(system(cmd) == 0, "cmake --install failed (see %s/install.log)", stage);
	read_prefix(build);
	snprintf(libexec, sizeof(libexec), "%s%s/libexec/sbx", stage, prefix);
	setenv("SBX_BIN_DIR", libexec, 1); /* the harness starts the installed sbxd */
	sbx_it.extra_args[0] = "--no-warm";
	sbx_it_init();
}

static void teardown(void)
{
	char cmd[128];
	sbx_it_fini();
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", stage);
	if (stage[0] && system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", stage);
}

TestSuite(install, .init = setup, .fini = teardown, .timeout = 120);

Test(install, the_installed_tree_runs_a_traced_jail)
{
	static const char *const files[] = { "sbxd", "sbx-launcher", "sbx-api", "sbx-net",
		                             "sbx-jail-init", "trace/sitecustomize.py", "trace/preload.js" };
	char p[PATH_MAX], link[PATH_MAX], sid[64], unit[8192] = "";
	struct stat st;
	ssize_t n;
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(p, sizeof(p), "%s%s/libexec/sbx/%s", stage, prefix, files[i]);
		cr_expect(stat(p, &st) == 0, "missing %s", p);
	}
	snprintf(p, sizeof(p), "%s%s/bin/sbxd", stage, prefix);
	n = readlink(p, link, sizeof(link) - 1);
	cr_assert(n > 0, "%s is not a link", p);
	link[n] = '\0';
	cr_expect_str_eq(link, "../libexec/sbx/sbxd");
	snprintf(p, sizeof(p), "%s%s/lib/systemd/system/sbxd.service", stage, prefix);
	FILE *f = fopen(p, "re");
	cr_assert(f, "no unit file at %s", p);
	n = (ssize_t)fread(unit, 1, sizeof(unit) - 1, f);
	fclose(f);
	unit[n > 0 ? n : 0] = '\0';
	char exec_start[PATH_MAX + 32];
	snprintf(exec_start, sizeof(exec_start), "ExecStart=%s/libexec/sbx/sbxd ", prefix);
	cr_expect(strstr(unit, exec_start), "%s", unit);
	cr_expect(!strchr(unit, '@'), "a placeholder was left in the unit: %s", unit);
	/* systemd's own checker, where it is installed, on the unit as staged (ExecStart
	 * pointed at the staged binary, which is the only difference) */
	if (access("/usr/bin/systemd-analyze", X_OK) == 0) {
		char cmd[PATH_MAX * 3];
		snprintf(cmd, sizeof(cmd),
		         "mkdir -p %s/verify && sed 's#^ExecStart=[^ ]*#ExecStart=%s%s/libexec/sbx/sbxd#' %s "
		         "> %s/verify/sbxd.service && timeout 30 systemd-analyze verify %s/verify/sbxd.service "
		         "> %s/verify.log 2>&1", stage, stage, prefix, p, stage, stage, stage);
		cr_expect(system(cmd) == 0, "systemd-analyze verify refused the unit (%s/verify.log)", stage);
	} else {
		printf("SKIP: systemd-analyze is not installed: the unit is not verified\n");
	}
	snprintf(p, sizeof(p), "%s%s/share/doc/sbx/observe.md", stage, prefix);
	cr_expect(stat(p, &st) == 0, "missing %s", p);
	/* the operator's side: sbxctl, its completion, both man pages */
	static const char *const ops[] = { "bin/sbxctl", "share/man/man1/sbxctl.1", "share/man/man8/sbxd.8",
		                           "share/bash-completion/completions/sbxctl", "share/doc/sbx/apps.md" };
	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		snprintf(p, sizeof(p), "%s%s/%s", stage, prefix, ops[i]);
		cr_expect(stat(p, &st) == 0, "missing %s", p);
	}
	snprintf(p, sizeof(p), "%s%s/bin/sbxctl version", stage, prefix);
	{
		FILE *v = popen(p, "r");
		char out[128] = "";
		cr_assert(v);
		size_t got = fread(out, 1, sizeof(out) - 1, v);
		out[got] = '\0';
		cr_expect_eq(pclose(v), 0);
		cr_expect(strncmp(out, "sbxctl ", 7) == 0, "%s", out);
	}

	/* the installed daemon, for real: a jail (sbx-jail-init) with tracing (the shims) */
	sbx_create(&sbx_it, "{\"name\":\"installed\",\"tracing\":true}", sid, sizeof(sid));
	_cleanup_free_ char *body = run_body("python", "open('x.txt','w').write('1')\n", NULL, 20000);
	_cleanup_resp_ struct http_resp r = sbx_run(&sbx_it, sid, body);
	assert_status(r, 200);
	cr_expect_str_eq(js_str(r.json, "isolation"), "bwrap", "%s", r.body);
	cr_expect_eq(js_int(r.json, "exitCode", -1), 0, "%s", r.body);
	cr_expect(r.body && strstr(r.body, "\"kind\":\"write\""), "the shims were found: %s", r.body);
	cr_expect(!strstr(r.body, "shims are missing"), "%s", r.body);
}
