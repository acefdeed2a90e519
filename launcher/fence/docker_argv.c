#include "docker_argv.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#define PUSH(sv, s)                                                                                \
	do {                                                                                       \
		int r_ = proto_strv_push((sv), (s));                                               \
		if (r_ < 0) {                                                                      \
			proto_strv_clear(sv);                                                      \
			return r_;                                                                 \
		}                                                                                  \
	} while (0)

bool docker_image_valid(const char *image)
{
	size_t n = image ? strlen(image) : 0;
	if (n == 0 || n > PROTO_NAME_MAX || image[0] == '-')
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = image[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      strchr("._/:@-", c)))
			return false;
	}
	return true;
}

int docker_container_name(const struct sandbox *s, char *buf, size_t bufsz)
{
	if ((size_t)snprintf(buf, bufsz, "sbx-%s", s->id) >= bufsz)
		return -ENAMETOOLONG;
	return 0;
}

int docker_run_argv(const struct sandbox *s, const char *docker, struct proto_strv *ret)
{
	char name[PROTO_ID_MAX + 8], buf[4352];
	const char *image = s->image && *s->image ? s->image : DOCKER_IMAGE_DEFAULT;
	int r;

	if (!docker_image_valid(image))
		return -EINVAL;
	if ((r = docker_container_name(s, name, sizeof(name))) < 0)
		return r;
	PUSH(ret, docker);
	PUSH(ret, "run");
	PUSH(ret, "-d");
	PUSH(ret, "--name");
	PUSH(ret, name);
	snprintf(buf, sizeof(buf), "sbx.sandbox=%s", s->id);
	PUSH(ret, "--label");
	PUSH(ret, buf);
	if (!s->network) {
		PUSH(ret, "--network");
		PUSH(ret, "none");
	}
	/* --memory-swap equal to --memory: otherwise the container swaps past the cap and the
	 * limit means almost nothing */
	if (s->memory_mb) {
		snprintf(buf, sizeof(buf), "%um", s->memory_mb);
		PUSH(ret, "--memory");
		PUSH(ret, buf);
		PUSH(ret, "--memory-swap");
		PUSH(ret, buf);
	}
	if (s->pids) {
		snprintf(buf, sizeof(buf), "%u", s->pids);
		PUSH(ret, "--pids-limit");
		PUSH(ret, buf);
	}
	PUSH(ret, "--cap-drop");
	PUSH(ret, "ALL");
	PUSH(ret, "--security-opt");
	PUSH(ret, "no-new-privileges");
	/* the container's processes run as the sandbox's own uid, never as root */
	if (s->jail_uid) {
		snprintf(buf, sizeof(buf), "%u:%u", s->jail_uid, s->jail_uid);
		PUSH(ret, "--user");
		PUSH(ret, buf);
	}
	if ((size_t)snprintf(buf, sizeof(buf), "type=bind,source=%s,target=%s", s->workdir,
	                     DOCKER_WORKDIR) >= sizeof(buf) ||
	    strchr(s->workdir, ',')) {
		proto_strv_clear(ret);
		return -EINVAL;
	}
	PUSH(ret, "--mount");
	PUSH(ret, buf);
	for (uint32_t i = 0; i < s->mount_sources.n && i < s->mount_targets.n; i++) {
		bool ro = i < s->mount_ro.n && s->mount_ro.v[i];
		/* --mount, not -v: a ':' in a path cannot be misread as an option separator */
		if (strchr(s->mount_sources.v[i], ',') || strchr(s->mount_targets.v[i], ',') ||
		    (size_t)snprintf(buf, sizeof(buf), "type=bind,source=%s,target=%s/%s%s",
		                     s->mount_sources.v[i], DOCKER_WORKDIR, s->mount_targets.v[i],
		                     ro ? ",readonly" : "") >= sizeof(buf)) {
			proto_strv_clear(ret);
			return -EINVAL;
		}
		PUSH(ret, "--mount");
		PUSH(ret, buf);
	}
	PUSH(ret, "--workdir");
	PUSH(ret, DOCKER_WORKDIR);
	/* the images' own entrypoints (python, node) would swallow the command; override it
	 * with sleep itself so no shell parses a command line */
	PUSH(ret, "--entrypoint");
	PUSH(ret, "sleep");
	PUSH(ret, "--");
	PUSH(ret, image);
	PUSH(ret, "infinity");
	return 0;
}

int docker_exec_argv(const struct sandbox *s, const char *docker, struct proto_strv *ret)
{
	char name[PROTO_ID_MAX + 8], buf[PROTO_STR_MAX + 8];
	int r;
	if ((r = docker_container_name(s, name, sizeof(name))) < 0)
		return r;
	PUSH(ret, docker);
	PUSH(ret, "exec");
	PUSH(ret, "-i");
	PUSH(ret, "--workdir");
	PUSH(ret, DOCKER_WORKDIR);
	PUSH(ret, "--env");
	PUSH(ret, "HOME=" DOCKER_WORKDIR);
	for (uint32_t i = 0; i < s->env.n; i++) {
		if ((size_t)snprintf(buf, sizeof(buf), "%s", s->env.v[i]) >= sizeof(buf)) {
			proto_strv_clear(ret);
			return -EINVAL;
		}
		PUSH(ret, "--env");
		PUSH(ret, buf);
	}
	PUSH(ret, name);
	PUSH(ret, "sh");
	PUSH(ret, "-s");
	return 0;
}

int docker_rm_argv(const struct sandbox *s, const char *docker, struct proto_strv *ret)
{
	char name[PROTO_ID_MAX + 8];
	int r;
	if ((r = docker_container_name(s, name, sizeof(name))) < 0)
		return r;
	PUSH(ret, docker);
	PUSH(ret, "rm");
	PUSH(ret, "-f");
	PUSH(ret, name);
	return 0;
}
