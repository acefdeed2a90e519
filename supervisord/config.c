/* sbxd's command line and defaults (DESIGN.md §4). Nothing here logs. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "listen.h"
#include "log.h"
#include "sbxd.h"
#include "util.h"

const char *config_usage(void)
{
	return "usage: sbxd [--listen 127.0.0.1:7420] [--data-dir DIR] [--foreground]\n"
	       "            [--log-level error|warn|info|debug] [--no-auth] [--libexec DIR]\n"
	       "            [--docker PATH] [--bwrap PATH]\n"
	       "            [--allow-remote] [--call-deadline SECONDS] [--no-warm] [--version]\n"
	       "            [--hosts FILE]\n";
}

static int copy_str(char *dst, size_t dstsz, const char *src)
{
	size_t n = strlen(src);
	if (n == 0 || n >= dstsz)
		return -ENAMETOOLONG;
	memcpy(dst, src, n + 1);
	return 0;
}

int config_default_data_dir(bool root, char *buf, size_t bufsz)
{
	const char *env = getenv("SBX_DATA_DIR");
	const char *xdg = getenv("XDG_DATA_HOME");
	const char *home = getenv("HOME");
	int n;

	if (env && *env)
		n = snprintf(buf, bufsz, "%s", env);
	else if (root)
		n = snprintf(buf, bufsz, "/var/lib/sbx");
	else if (xdg && xdg[0] == '/') /* the XDG spec: a relative value is to be ignored */
		n = snprintf(buf, bufsz, "%s/sbx", xdg);
	else if (home && home[0] == '/')
		n = snprintf(buf, bufsz, "%s/.local/share/sbx", home);
	else
		return -ENOENT;
	if (n < 0 || (size_t)n >= bufsz)
		return -ENAMETOOLONG;
	return 0;
}

enum { OPT_LISTEN = 1, OPT_DATA, OPT_FG, OPT_LEVEL, OPT_NOAUTH, OPT_LIBEXEC, OPT_REMOTE, OPT_HELP, OPT_DOCKER, OPT_BWRAP, OPT_DEADLINE, OPT_NOWARM, OPT_HOSTS, OPT_VERSION };

int config_parse(int argc, char *argv[], struct sbxd_config *cfg, const char **ret_why)
{
	static const struct option opts[] = {
		{ "listen", required_argument, NULL, OPT_LISTEN },
		{ "data-dir", required_argument, NULL, OPT_DATA },
		{ "foreground", no_argument, NULL, OPT_FG },
		{ "log-level", required_argument, NULL, OPT_LEVEL },
		{ "no-auth", no_argument, NULL, OPT_NOAUTH },
		{ "libexec", required_argument, NULL, OPT_LIBEXEC },
		{ "allow-remote", no_argument, NULL, OPT_REMOTE },
		{ "docker", required_argument, NULL, OPT_DOCKER },
		{ "bwrap", required_argument, NULL, OPT_BWRAP },
		{ "call-deadline", required_argument, NULL, OPT_DEADLINE },
		{ "no-warm", no_argument, NULL, OPT_NOWARM },
		{ "hosts", required_argument, NULL, OPT_HOSTS },
		{ "help", no_argument, NULL, OPT_HELP },
		{ "version", no_argument, NULL, OPT_VERSION },
		{ NULL, 0, NULL, 0 },
	};
	char host[LISTEN_HOST_MAX];
	uint16_t port;
	enum log_level lvl;
	int o, r;

	memset(cfg, 0, sizeof(*cfg));
	strcpy(cfg->listen, SBXD_LISTEN_DEFAULT);
	strcpy(cfg->log_level, "info");
	cfg->call_deadline_s = PROTO_CALL_DEADLINE_S_DEFAULT;
	*ret_why = NULL;
	optind = 1;
	opterr = 0;
	while ((o = getopt_long(argc, argv, "+", opts, NULL)) != -1) {
		switch (o) {
		case OPT_LISTEN:
			if (copy_str(cfg->listen, sizeof(cfg->listen), optarg) < 0) {
				*ret_why = "--listen: address too long or empty";
				return -EINVAL;
			}
			break;
		case OPT_DATA:
			if (optarg[0] != '/' || copy_str(cfg->data_dir, sizeof(cfg->data_dir), optarg) < 0) {
				*ret_why = "--data-dir: needs an absolute path";
				return -EINVAL;
			}
			break;
		case OPT_FG:
			cfg->foreground = true;
			break;
		case OPT_LEVEL:
			if (log_parse_level(optarg, &lvl) < 0) {
				*ret_why = "--log-level: one of error, warn, info, debug";
				return -EINVAL;
			}
			snprintf(cfg->log_level, sizeof(cfg->log_level), "%s", optarg);
			break;
		case OPT_NOAUTH:
			cfg->no_auth = true;
			break;
		case OPT_LIBEXEC:
			if (optarg[0] != '/' || copy_str(cfg->libexec, sizeof(cfg->libexec), optarg) < 0) {
				*ret_why = "--libexec: needs an absolute path";
				return -EINVAL;
			}
			break;
		case OPT_REMOTE:
			cfg->allow_remote = true;
			break;
		case OPT_NOWARM:
			cfg->no_warm = true;
			break;
		case OPT_DEADLINE:
			if (parse_uint(optarg, 1, PROTO_CALL_DEADLINE_S_MAX, &cfg->call_deadline_s) < 0) {
				*ret_why = "--call-deadline: seconds, 1-3600";
				return -EINVAL;
			}
			break;
		case OPT_BWRAP:
			if (optarg[0] != '/' || copy_str(cfg->bwrap, sizeof(cfg->bwrap), optarg) < 0) {
				*ret_why = "--bwrap: needs an absolute path";
				return -EINVAL;
			}
			break;
		case OPT_HOSTS:
			if (optarg[0] != '/' || copy_str(cfg->hosts, sizeof(cfg->hosts), optarg) < 0) {
				*ret_why = "--hosts: needs an absolute path";
				return -EINVAL;
			}
			break;
		case OPT_DOCKER:
			if (optarg[0] != '/' || copy_str(cfg->docker, sizeof(cfg->docker), optarg) < 0) {
				*ret_why = "--docker: needs an absolute path";
				return -EINVAL;
			}
			break;
		case OPT_HELP:
			cfg->show_help = true;
			return 0;
		case OPT_VERSION:
			cfg->show_version = true;
			return 0;
		default: {
			static char why[128]; /* start-up only, single-threaded */
			snprintf(why, sizeof(why), "%.64s: unknown option or missing argument",
			         argv[optind - 1]);
			*ret_why = why;
		}
			return -EINVAL;
		}
	}
	if (optind < argc) {
		*ret_why = "unexpected argument";
		return -EINVAL;
	}
	/* the same parser sbx-api binds with: what passes here cannot fail there */
	r = listen_parse(cfg->listen, cfg->allow_remote, host, sizeof(host), &port);
	if (r == -EPERM) {
		*ret_why = "--listen: refusing a non-loopback address without --allow-remote";
		return -EPERM;
	}
	if (r < 0) {
		*ret_why = "--listen: expected HOST:PORT with a numeric address (or localhost), "
		           "port 1-65535, e.g. 127.0.0.1:7420 or [::1]:7420";
		return -EINVAL;
	}
	if (strncmp(cfg->listen, "localhost:", 10) == 0) /* the API binds numbers, not names */
		snprintf(cfg->listen, sizeof(cfg->listen), "%s:%u", host, (unsigned)port);
	if (cfg->allow_remote && cfg->no_auth) {
		*ret_why = "--no-auth cannot be combined with --allow-remote: remote access "
		           "always requires the token";
		return -EPERM;
	}
	return 0;
}
