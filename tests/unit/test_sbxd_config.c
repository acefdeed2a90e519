/* sbxd's command line: the loopback rule, defaults, refusals. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sbxd.h"

TestSuite(sbxd_config, .timeout = 10);

static int parse(struct sbxd_config *cfg, const char **why, int argc, char **argv)
{
	return config_parse(argc, argv, cfg, why);
}

#define ARGV(...) ((char *[]){ "sbxd", __VA_ARGS__, NULL })
#define ARGC(...) ((int)(sizeof((char *[]){ "sbxd", __VA_ARGS__ }) / sizeof(char *)))
#define PARSE(cfg, why, ...) parse(cfg, why, ARGC(__VA_ARGS__), ARGV(__VA_ARGS__))

Test(sbxd_config, defaults)
{
	struct sbxd_config cfg;
	const char *why;
	char *argv[] = { "sbxd", NULL };
	cr_assert_eq(config_parse(1, argv, &cfg, &why), 0);
	cr_assert_str_eq(cfg.listen, "127.0.0.1:7420");
	cr_assert_str_eq(cfg.log_level, "info");
	cr_assert_not(cfg.foreground);
	cr_assert_not(cfg.no_auth);
	cr_assert_str_empty(cfg.data_dir);
	cr_assert_str_empty(cfg.libexec);
}

Test(sbxd_config, all_options)
{
	struct sbxd_config cfg;
	const char *why;
	cr_assert_eq(PARSE(&cfg, &why, "--listen", "127.0.0.5:9000", "--data-dir", "/tmp/d",
	                   "--foreground", "--log-level", "debug", "--no-auth", "--libexec",
	                   "/opt/sbx"),
	             0);
	cr_assert_str_eq(cfg.listen, "127.0.0.5:9000");
	cr_assert_str_eq(cfg.data_dir, "/tmp/d");
	cr_assert_str_eq(cfg.libexec, "/opt/sbx");
	cr_assert_str_eq(cfg.log_level, "debug");
	cr_assert(cfg.foreground && cfg.no_auth);
}

Test(sbxd_config, refuses_non_loopback_without_allow_remote)
{
	struct sbxd_config cfg;
	const char *why;
	cr_assert_eq(PARSE(&cfg, &why, "--listen", "0.0.0.0:7420"), -EPERM);
	cr_assert(strstr(why, "--allow-remote"));
	cr_assert_eq(PARSE(&cfg, &why, "--listen", "[::]:7420"), -EPERM);
	cr_assert_eq(PARSE(&cfg, &why, "--listen", "192.168.1.2:7420"), -EPERM);
	/* 128.0.0.1 is one past 127.0.0.0/8 */
	cr_assert_eq(PARSE(&cfg, &why, "--listen", "128.0.0.1:7420"), -EPERM);
	cr_assert_eq(PARSE(&cfg, &why, "--listen", "0.0.0.0:7420", "--allow-remote"), 0);
	/* remote access always needs the token */
	cr_assert_eq(PARSE(&cfg, &why, "--listen", "0.0.0.0:7420", "--allow-remote", "--no-auth"),
	             -EPERM);
	cr_assert(strstr(why, "--no-auth"));
	/* on loopback too: --allow-remote says the token is the boundary, --no-auth removes it */
	cr_assert_eq(PARSE(&cfg, &why, "--allow-remote", "--no-auth"), -EPERM);
	cr_assert_eq(PARSE(&cfg, &why, "--allow-remote"), 0);
	cr_assert(cfg.allow_remote);
}

Test(sbxd_config, remote_forms_pass_the_shared_parser)
{
	struct sbxd_config cfg;
	const char *why;
	cr_assert_eq(PARSE(&cfg, &why, "--listen", "[::]:7420", "--allow-remote"), 0);
	cr_assert_str_eq(cfg.listen, "[::]:7420", "handed to sbx-api as given");
	cr_assert_eq(PARSE(&cfg, &why, "--listen", "192.168.1.2:80", "--allow-remote"), 0);
	cr_assert_eq(PARSE(&cfg, &why, "--listen", "[127.0.0.1]:80"), -EINVAL,
	             "brackets are for v6 only");
}

Test(sbxd_config, loopback_forms)
{
	struct sbxd_config cfg;
	const char *why;
	cr_assert_eq(PARSE(&cfg, &why, "--listen", "127.255.255.254:1"), 0);
	cr_assert_eq(PARSE(&cfg, &why, "--listen", "[::1]:65535"), 0);
	cr_assert_str_eq(cfg.listen, "[::1]:65535");
	cr_assert_eq(PARSE(&cfg, &why, "--listen", "localhost:8080"), 0);
	cr_assert_str_eq(cfg.listen, "127.0.0.1:8080", "the API gets a number, not a name");
}

Test(sbxd_config, malformed_listen)
{
	static const char *const bad[] = { "127.0.0.1",      "127.0.0.1:",    "127.0.0.1:0",
		                           "127.0.0.1:65536", "127.0.0.1:-1",  "127.0.0.1:+80",
		                           "127.0.0.1:80x",   "::1:7420",      "[::1]7420",
		                           ":7420",           "example.com:80", "[::1:80" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct sbxd_config cfg;
		const char *why;
		char *argv[] = { "sbxd", "--listen", (char *)bad[i], NULL };
		cr_assert_eq(config_parse(3, argv, &cfg, &why), -EINVAL, "%s accepted", bad[i]);
		cr_assert_not_null(why);
	}
}

Test(sbxd_config, listen_at_and_past_its_limit)
{
	struct sbxd_config cfg;
	const char *why;
	char at[SBXD_LISTEN_MAX], past[SBXD_LISTEN_MAX + 1];
	/* "[::1]:7420" padded with leading zeros in the port up to the limit */
	memset(at, '0', sizeof(at));
	memcpy(at, "[::1]:", 6);
	memcpy(at + SBXD_LISTEN_MAX - 1 - 4, "7420", 4);
	at[SBXD_LISTEN_MAX - 1] = '\0';
	cr_assert_eq(PARSE(&cfg, &why, "--listen", at), 0);
	memset(past, '0', sizeof(past));
	memcpy(past, "[::1]:", 6);
	memcpy(past + SBXD_LISTEN_MAX - 4, "7420", 4);
	past[SBXD_LISTEN_MAX] = '\0';
	cr_assert_eq(PARSE(&cfg, &why, "--listen", past), -EINVAL);
}

Test(sbxd_config, other_refusals)
{
	struct sbxd_config cfg;
	const char *why;
	cr_assert_eq(PARSE(&cfg, &why, "--data-dir", "relative"), -EINVAL);
	cr_assert_eq(PARSE(&cfg, &why, "--libexec", "relative"), -EINVAL);
	cr_assert_eq(PARSE(&cfg, &why, "--log-level", "loud"), -EINVAL);
	cr_assert_eq(PARSE(&cfg, &why, "--bogus"), -EINVAL);
	cr_assert(strstr(why, "--bogus"));
	cr_assert_eq(PARSE(&cfg, &why, "stray"), -EINVAL);
}

Test(sbxd_config, default_data_dir_order)
{
	char buf[SBXD_PATH_MAX];
	setenv("SBX_DATA_DIR", "/srv/sbx", 1);
	cr_assert_eq(config_default_data_dir(false, buf, sizeof(buf)), 0);
	cr_assert_str_eq(buf, "/srv/sbx");
	unsetenv("SBX_DATA_DIR");
	cr_assert_eq(config_default_data_dir(true, buf, sizeof(buf)), 0);
	cr_assert_str_eq(buf, "/var/lib/sbx");
	setenv("XDG_DATA_HOME", "/home/u/.data", 1);
	cr_assert_eq(config_default_data_dir(false, buf, sizeof(buf)), 0);
	cr_assert_str_eq(buf, "/home/u/.data/sbx");
	setenv("XDG_DATA_HOME", "relative", 1); /* ignored, as the XDG spec says */
	setenv("HOME", "/home/u", 1);
	cr_assert_eq(config_default_data_dir(false, buf, sizeof(buf)), 0);
	cr_assert_str_eq(buf, "/home/u/.local/share/sbx");
	unsetenv("XDG_DATA_HOME");
	unsetenv("HOME");
	cr_assert_eq(config_default_data_dir(false, buf, sizeof(buf)), -ENOENT);
	setenv("HOME", "/home/u", 1);
	cr_assert_eq(config_default_data_dir(false, buf, 8), -ENAMETOOLONG);
}

Test(sbxd_config, version_and_help)
{
	struct sbxd_config cfg;
	const char *why;
	cr_assert_eq(PARSE(&cfg, &why, "--version"), 0);
	cr_expect(cfg.show_version);
	cr_expect_not(cfg.show_help);
	cr_assert_eq(PARSE(&cfg, &why, "--help"), 0);
	cr_expect(cfg.show_help);
	cr_expect_not(cfg.show_version);
	cr_expect_eq(PARSE(&cfg, &why, "--version=1"), -EINVAL);
}
