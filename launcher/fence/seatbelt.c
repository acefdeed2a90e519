/* Seatbelt profile generation. The order matters: Seatbelt applies the LAST matching rule,
 * so each block below narrows or re-opens what the blocks before it said. */
#include "seatbelt.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "textbuf.h"

const char *const seatbelt_system_roots[] = {
	"/usr", "/bin", "/sbin", "/System", "/Library/Frameworks", "/Library/Apple",
	"/private/etc", "/private/var/db/timezone", "/dev", "/opt/homebrew", "/nix/store", NULL
};

/* Credential stores a run never reads, whatever the fsMode (relative to home). */
static const char *const deny_read_home[] = { ".ssh", ".aws", ".gnupg", ".config/gcloud",
	                                      ".kube", ".docker", "Library/Keychains", NULL };

static bool has_ctl(const char *s)
{
	for (; s && *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return true;
	return false;
}

static void subpath(struct textbuf *b, const char *a, const char *rel)
{
	textbuf_printf(b, " (subpath \"");
	textbuf_sbpl_str(b, a);
	if (rel) {
		textbuf_printf(b, "/");
		textbuf_sbpl_str(b, rel);
	}
	textbuf_printf(b, "\")");
}

int seatbelt_profile(const struct sandbox *s, const char *home, const char *data_dir,
                     char **ret)
{
	struct textbuf b = { 0 };
	bool jail_reads = s->fs_mode != FS_OPEN; /* unknown modes arrive here as FS_STRICT */
	bool outbound = s->network || s->ports_connect.n > 0;
	int err;

	if (has_ctl(s->workdir) || has_ctl(home) || has_ctl(data_dir))
		return -EINVAL;
	for (uint32_t i = 0; i < s->mount_sources.n; i++)
		if (has_ctl(s->mount_sources.v[i]))
			return -EINVAL;
	for (uint32_t i = 0; i < s->read_paths.n; i++)
		if (has_ctl(s->read_paths.v[i]))
			return -EINVAL;

	textbuf_printf(&b, "(version 1)\n");
	/* deny-by-default would also cut off the dozens of mach services every program needs */
	textbuf_printf(&b, "(allow default)\n");

	/* writes: nothing but the workdir, /dev and read-write mounts */
	textbuf_printf(&b, "(deny file-write*)\n(allow file-write*");
	subpath(&b, s->workdir, NULL);
	subpath(&b, "/dev", NULL);
	for (uint32_t i = 0; i < s->mount_sources.n; i++)
		if (i < s->mount_ro.n && !s->mount_ro.v[i])
			subpath(&b, s->mount_sources.v[i], NULL);
	textbuf_printf(&b, ")\n");

	/* secrets are unreadable in every mode, open included */
	textbuf_printf(&b, "(deny file-read*");
	for (size_t i = 0; home && deny_read_home[i]; i++)
		subpath(&b, home, deny_read_home[i]);
	if (data_dir)
		subpath(&b, data_dir, NULL);
	textbuf_printf(&b, ")\n");

	if (jail_reads) {
		textbuf_printf(&b, "(deny file-read*)\n");
		/* stat() of parents must keep working or path resolution breaks */
		textbuf_printf(&b, "(allow file-read-metadata)\n(allow file-read*");
		for (size_t i = 0; seatbelt_system_roots[i]; i++)
			subpath(&b, seatbelt_system_roots[i], NULL);
		textbuf_printf(&b, ")\n");
		if (s->mount_sources.n) {
			textbuf_printf(&b, "(allow file-read*");
			for (uint32_t i = 0; i < s->mount_sources.n; i++)
				subpath(&b, s->mount_sources.v[i], NULL);
			textbuf_printf(&b, ")\n");
		}
		if (s->fs_mode == FS_ALLOWLIST && s->read_paths.n) {
			textbuf_printf(&b, "(allow file-read*");
			for (uint32_t i = 0; i < s->read_paths.n; i++)
				subpath(&b, s->read_paths.v[i], NULL);
			textbuf_printf(&b, ")\n");
		}
	} else if (s->mount_sources.n) {
		/* open mode: the deny list above may cover a mount source's parent */
		textbuf_printf(&b, "(allow file-read*");
		for (uint32_t i = 0; i < s->mount_sources.n; i++)
			subpath(&b, s->mount_sources.v[i], NULL);
		textbuf_printf(&b, ")\n");
	}
	/* the workdir lives under the data dir, which was denied above: re-open it */
	textbuf_printf(&b, "(allow file-read*");
	subpath(&b, s->workdir, NULL);
	textbuf_printf(&b, ")\n");

	/* the network part */
	if (!s->network)
		textbuf_printf(&b, "(deny network*)\n");
	for (uint32_t i = 0; !s->network && i < s->ports_connect.n; i++)
		textbuf_printf(&b, "(allow network-outbound (remote ip \"*:%u\"))\n",
		               s->ports_connect.v[i]);
	for (uint32_t i = 0; i < s->ports_listen.n; i++) {
		textbuf_printf(&b, "(allow network-bind (local ip \"*:%u\"))\n", s->ports_listen.v[i]);
		/* binding alone lets nobody in */
		textbuf_printf(&b, "(allow network-inbound (local ip \"*:%u\"))\n",
		               s->ports_listen.v[i]);
	}
	/* the resolver only for sandboxes that may go out at all */
	if (outbound)
		textbuf_printf(&b, "(allow network-outbound (literal "
		                   "\"/private/var/run/mDNSResponder\"))\n");
	/* LAST, even with the network on: *:443 includes 127.0.0.1:443, and the daemon's own
	 * API lives on loopback. Then each loopback port named is given back, one by one. */
	textbuf_printf(&b, "(deny network-outbound (remote ip \"localhost:*\"))\n");
	for (uint32_t i = 0; i < s->ports_loopback.n; i++)
		textbuf_printf(&b, "(allow network-outbound (remote ip \"localhost:%u\"))\n",
		               s->ports_loopback.v[i]);

	if (!(*ret = textbuf_steal(&b, &err)))
		return err;
	return 0;
}
