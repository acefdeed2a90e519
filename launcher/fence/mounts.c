/* Mount source and target checks. */
#include "mounts.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Exactly these paths are refused (their descendants are fine: /usr/share/dict is a
 * reasonable read-only mount, /usr itself is not). */
static const char *const forbidden_exact[] = { "/", "/etc", "/usr", "/System", "/var", NULL };
/* Relative to home: refused at and below. */
static const char *const forbidden_home_trees[] = { ".ssh",         ".aws",  ".gnupg",
	                                            ".config/gcloud", ".kube", ".docker",
	                                            "Library/Keychains", NULL };

static bool path_at_or_below(const char *path, const char *root)
{
	size_t n = strlen(root);
	while (n > 1 && root[n - 1] == '/')
		n--;
	if (strncmp(path, root, n) != 0)
		return false;
	return path[n] == '\0' || path[n] == '/' || (n == 1 && root[0] == '/');
}

/* Canonicalize a root the same way the source was, so /home -> /usr/home style symlinks
 * on either side compare equal; a root that does not exist is compared as given. */
static char *canon_or_copy(const char *p)
{
	char *c = realpath(p, NULL);
	return c ? c : strdup(p);
}

int mount_check_source(const char *source, const char *home, const char *data_dir,
                       char **ret_canon, const char **ret_reason)
{
	char *canon, *h = NULL, *d = NULL;
	int r = 0;

	*ret_reason = NULL;
	if (!source || source[0] != '/') {
		*ret_reason = "source must be an absolute path";
		return -EINVAL;
	}
	for (const char *p = source; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f) {
			*ret_reason = "source contains a control character";
			return -EINVAL;
		}
	/* realpath resolves "..", "." and every symlink: ~/./.ssh and a link to ~/.ssh both
	 * arrive here as the real ~/.ssh */
	if (!(canon = realpath(source, NULL))) {
		*ret_reason = errno == ENOENT ? "source does not exist" : "source cannot be resolved";
		return errno == ENOENT ? -ENOENT : -EINVAL;
	}
	for (size_t i = 0; forbidden_exact[i]; i++) {
		char *f = canon_or_copy(forbidden_exact[i]);
		bool hit = f && strcmp(canon, f) == 0;
		free(f);
		if (hit) {
			*ret_reason = "source is a system root (/, /etc, /usr, /System or /var)";
			r = -EPERM;
			goto out;
		}
	}
	if (home && home[0] == '/') {
		h = canon_or_copy(home);
		if (h && strcmp(canon, h) == 0) {
			*ret_reason = "source is the home directory itself";
			r = -EPERM;
			goto out;
		}
		for (size_t i = 0; h && forbidden_home_trees[i]; i++) {
			char tree[PATH_MAX];
			char *t;
			bool hit;
			if ((size_t)snprintf(tree, sizeof(tree), "%s/%s", h, forbidden_home_trees[i]) >=
			    sizeof(tree))
				continue;
			t = canon_or_copy(tree);
			hit = t && path_at_or_below(canon, t);
			free(t);
			if (hit) {
				*ret_reason = "source is in a credential directory (~/.ssh, ~/.aws, "
				              "~/.gnupg, ~/.config/gcloud, ~/.kube, ~/.docker, "
				              "~/Library/Keychains)";
				r = -EPERM;
				goto out;
			}
		}
	}
	if (data_dir) {
		d = canon_or_copy(data_dir);
		/* at or below the data dir: one sandbox could edit another's files. Above it
		 * (a parent that contains it) would expose it too. */
		if (d && (path_at_or_below(canon, d) || path_at_or_below(d, canon))) {
			*ret_reason = "source is or contains the engine's data directory";
			r = -EPERM;
			goto out;
		}
	}
out:
	free(h);
	free(d);
	if (r < 0) {
		free(canon);
		return r;
	}
	*ret_canon = canon;
	return 0;
}

int mount_check_target(const char *target, const char **ret_reason)
{
	const char *seg;
	size_t len;

	*ret_reason = NULL;
	if (!target || !*target) {
		*ret_reason = "target must not be empty";
		return -EINVAL;
	}
	len = strlen(target);
	if (len >= PATH_MAX) {
		*ret_reason = "target is too long";
		return -EINVAL;
	}
	if (target[0] == '/') {
		*ret_reason = "target must be relative to the sandbox";
		return -EINVAL;
	}
	for (const char *p = target; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f) {
			*ret_reason = "target contains a control character";
			return -EINVAL;
		}
	seg = target;
	for (;;) {
		const char *end = strchr(seg, '/');
		size_t n = end ? (size_t)(end - seg) : strlen(seg);
		if (n == 0 || (n == 1 && seg[0] == '.') || (n == 2 && seg[0] == '.' && seg[1] == '.')) {
			*ret_reason = "target must stay inside the sandbox (no empty, \".\" or \"..\" "
			              "segments)";
			return -EINVAL;
		}
		if (n == 4 && strncmp(seg, ".sbx", 4) == 0 && seg == target) {
			*ret_reason = "target .sbx is reserved for the engine";
			return -EINVAL;
		}
		if (!end)
			break;
		seg = end + 1;
	}
	return 0;
}
