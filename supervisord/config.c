/* sbxd's command line and defaults (DESIGN.md §4). Nothing here logs. */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "sbxd.h"

const char *config_usage(void)
{
	return "usage: sbxd [--listen 127.0.0.1:7420] [--data-dir DIR] [--foreground]\n"
	       "            [--log-level error|warn|info|debug] [--no-auth] [--libexec DIR]\n"
	       "            [--docker PATH] [--bwrap PATH]\n"
	       "            [--allow-remote]\n";
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

int config_parse_listen(const char *s, char *host, size_t hostsz, uint16_t *ret_port,
                        bool *ret_loopback)
{
	const char *colon, *hs, *he;
	char *end;
	unsigned long port;
	struct in_addr a4;
	struct in6_addr a6;
	size_t hl;

	if (s[0] == '[') { /* [v6]:port */
		hs = s + 1;
		if (!(he = strchr(hs, ']')) || he[1] != ':')
			return -EINVAL;
		colon = he + 1;
	} else {
		hs = s;
		if (!(colon = strrchr(s, ':')) || memchr(s, ':', (size_t)(colon - s)))
			return -EINVAL; /* a bare v6 address needs brackets */
		he = colon;
	}
	hl = (size_t)(he - hs);
	if (hl == 0 || hl >= hostsz)
		return -EINVAL;
	memcpy(host, hs, hl);
	host[hl] = '\0';
	errno = 0;
	port = strtoul(colon + 1, &end, 10);
	if (errno || *end || end == colon + 1 || colon[1] == '-' || colon[1] == '+' || port == 0 ||
	    port > 65535)
		return -EINVAL;
	if (strcmp(host, "localhost") == 0) {
		*ret_loopback = true;
	} else if (inet_pton(AF_INET, host, &a4) == 1) {
		*ret_loopback = (ntohl(a4.s_addr) >> 24) == 127;
	} else if (inet_pton(AF_INET6, host, &a6) == 1) {
		*ret_loopback = IN6_IS_ADDR_LOOPBACK(&a6);
	} else {
		return -EINVAL; /* names other than localhost could resolve anywhere */
	}
	*ret_port = (uint16_t)port;
	return 0;
}

enum { OPT_LISTEN = 1, OPT_DATA, OPT_FG, OPT_LEVEL, OPT_NOAUTH, OPT_LIBEXEC, OPT_REMOTE, OPT_HELP, OPT_DOCKER, OPT_BWRAP };

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
		{ "help", no_argument, NULL, OPT_HELP },
		{ NULL, 0, NULL, 0 },
	};
	char host[SBXD_LISTEN_MAX];
	uint16_t port;
	bool loopback;
	enum log_level lvl;
	int o;

	memset(cfg, 0, sizeof(*cfg));
	strcpy(cfg->listen, SBXD_LISTEN_DEFAULT);
	strcpy(cfg->log_level, "info");
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
		case OPT_BWRAP:
			if (optarg[0] != '/' || copy_str(cfg->bwrap, sizeof(cfg->bwrap), optarg) < 0) {
				*ret_why = "--bwrap: needs an absolute path";
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
	if (config_parse_listen(cfg->listen, host, sizeof(host), &port, &loopback) < 0) {
		*ret_why = "--listen: expected HOST:PORT with a numeric address (or localhost), "
		           "port 1-65535, e.g. 127.0.0.1:7420 or [::1]:7420";
		return -EINVAL;
	}
	if (strcmp(host, "localhost") == 0) /* the API binds numbers, not names */
		snprintf(cfg->listen, sizeof(cfg->listen), "127.0.0.1:%u", (unsigned)port);
	if (!loopback && !cfg->allow_remote) {
		*ret_why = "--listen: refusing a non-loopback address without --allow-remote";
		return -EPERM;
	}
	if (!loopback && cfg->no_auth) {
		*ret_why = "--no-auth cannot be combined with a non-loopback --listen: remote "
		           "access always requires the token";
		return -EPERM;
	}
	return 0;
}
