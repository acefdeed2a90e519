/* Seatbelt profile generation: rule order (last match wins) and content. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "fence/seatbelt.h"

TestSuite(seatbelt, .timeout = 10);

static char *paths[] = { "/Users/u/data", NULL };
static char *msrc[] = { "/Users/u/src", "/Users/u/out", NULL };
static char *mtgt[] = { "src", "out", NULL };

static struct sandbox base_sandbox(void)
{
	struct sandbox s = { .workdir = "/Users/u/.local/share/sbx/sandboxes/sbx_1",
		             .fs_mode = FS_STRICT };
	return s;
}

static const char *find(const char *hay, const char *needle)
{
	const char *p = strstr(hay, needle);
	cr_assert_not_null(p, "profile lacks: %s\n%s", needle, hay);
	return p;
}

Test(seatbelt, strict_order)
{
	struct sandbox s = base_sandbox();
	char *p = NULL;
	cr_assert_eq(seatbelt_profile(&s, "/Users/u", "/Users/u/.local/share/sbx", &p), 0);
	const char *allow_default = find(p, "(allow default)");
	const char *deny_write = find(p, "(deny file-write*)");
	const char *allow_write = find(p, "(allow file-write* (subpath \"/Users/u/.local/share/sbx/sandboxes/sbx_1\") (subpath \"/dev\"))");
	const char *deny_ssh = find(p, "(subpath \"/Users/u/.ssh\")");
	find(p, "(subpath \"/Users/u/Library/Keychains\")");
	const char *deny_read = find(p, "(deny file-read*)\n");
	const char *meta = find(p, "(allow file-read-metadata)");
	const char *roots = find(p, "(subpath \"/usr\")");
	const char *reopen = find(p, "(allow file-read* (subpath \"/Users/u/.local/share/sbx/sandboxes/sbx_1\"))");
	const char *deny_net = find(p, "(deny network*)");
	const char *deny_lo = find(p, "(deny network-outbound (remote ip \"localhost:*\"))");
	cr_assert(allow_default < deny_write && deny_write < allow_write && allow_write < deny_ssh);
	cr_assert(deny_ssh < deny_read && deny_read < meta && meta < roots && roots < reopen);
	cr_assert(reopen < deny_net && deny_net < deny_lo);
	cr_assert_null(strstr(p, "mDNSResponder"), "resolver given without outbound permission");
	free(p);
}

Test(seatbelt, open_mode_does_not_jail_reads_but_keeps_secrets_denied)
{
	struct sandbox s = base_sandbox();
	char *p = NULL;
	s.fs_mode = FS_OPEN;
	cr_assert_eq(seatbelt_profile(&s, "/Users/u", "/Users/u/.local/share/sbx", &p), 0);
	cr_assert_null(strstr(p, "(deny file-read*)\n"));
	find(p, "(subpath \"/Users/u/.aws\")");
	find(p, "(subpath \"/Users/u/.local/share/sbx\")");
	free(p);
}

Test(seatbelt, allowlist_and_mounts)
{
	struct sandbox s = base_sandbox();
	uint32_t ro[] = { 1, 0 };
	char *p = NULL;
	s.fs_mode = FS_ALLOWLIST;
	s.read_paths = (struct proto_strv){ 1, paths };
	s.mount_sources = (struct proto_strv){ 2, msrc };
	s.mount_targets = (struct proto_strv){ 2, mtgt };
	s.mount_ro = (struct proto_u32v){ 2, ro };
	cr_assert_eq(seatbelt_profile(&s, "/Users/u", "/d", &p), 0);
	const char *deny_read = find(p, "(deny file-read*)\n");
	const char *rp = find(p, "(allow file-read* (subpath \"/Users/u/data\"))");
	const char *ms = find(p, "(allow file-read* (subpath \"/Users/u/src\") (subpath \"/Users/u/out\"))");
	cr_assert(deny_read < rp && deny_read < ms);
	/* only the read-write mount is writable */
	const char *w = find(p, "(allow file-write*");
	const char *wend = strchr(w, '\n');
	cr_assert(strstr(w, "/Users/u/out") && strstr(w, "/Users/u/out") < wend);
	cr_assert(!strstr(w, "/Users/u/src") || strstr(w, "/Users/u/src") > wend);
	free(p);
}

Test(seatbelt, network_ports_and_loopback_last)
{
	struct sandbox s = base_sandbox();
	uint32_t listen[] = { 8000 }, connect[] = { 443 }, lo[] = { 8899 };
	char *p = NULL;
	s.ports_listen = (struct proto_u32v){ 1, listen };
	s.ports_connect = (struct proto_u32v){ 1, connect };
	s.ports_loopback = (struct proto_u32v){ 1, lo };
	cr_assert_eq(seatbelt_profile(&s, "/Users/u", "/d", &p), 0);
	const char *deny = find(p, "(deny network*)");
	const char *out = find(p, "(allow network-outbound (remote ip \"*:443\"))");
	find(p, "(allow network-bind (local ip \"*:8000\"))");
	find(p, "(allow network-inbound (local ip \"*:8000\"))");
	const char *dns = find(p, "mDNSResponder");
	const char *deny_lo = find(p, "(deny network-outbound (remote ip \"localhost:*\"))");
	const char *give = find(p, "(allow network-outbound (remote ip \"localhost:8899\"))");
	cr_assert(deny < out && out < dns && dns < deny_lo && deny_lo < give);
	/* nothing after the loopback give-back */
	cr_assert_str_eq(give + strlen("(allow network-outbound (remote ip \"localhost:8899\"))"), "\n");
	free(p);
}

Test(seatbelt, network_on_still_denies_loopback)
{
	struct sandbox s = base_sandbox();
	char *p = NULL;
	s.network = true;
	cr_assert_eq(seatbelt_profile(&s, "/Users/u", "/d", &p), 0);
	cr_assert_null(strstr(p, "(deny network*)"));
	find(p, "mDNSResponder");
	const char *deny_lo = find(p, "(deny network-outbound (remote ip \"localhost:*\"))\n");
	cr_assert_str_eq(deny_lo + strlen("(deny network-outbound (remote ip \"localhost:*\"))\n"), "");
	free(p);
}

Test(seatbelt, quotes_escaped_and_control_chars_refused)
{
	struct sandbox s = base_sandbox();
	char *p = NULL;
	s.workdir = "/Users/u/we\"ird\\dir";
	cr_assert_eq(seatbelt_profile(&s, "/Users/u", "/d", &p), 0);
	find(p, "(subpath \"/Users/u/we\\\"ird\\\\dir\")");
	free(p);
	s.workdir = "/Users/u/a\nb";
	cr_assert_lt(seatbelt_profile(&s, "/Users/u", "/d", &p), 0);
}
