/* argv of the docker backend (DESIGN.md §5): one long-lived container per sandbox, one
 * `docker exec` per run. Pure functions; the backend runs them. */
#ifndef SBX_DOCKER_ARGV_H
#define SBX_DOCKER_ARGV_H

#include "launcher.h"

#define DOCKER_IMAGE_DEFAULT "python:3.12-slim"
#define DOCKER_WORKDIR       "/work"

/* The container's name for a sandbox: "sbx-<id>". */
int docker_container_name(const struct sandbox *s, char *buf, size_t bufsz);
/* docker run -d ...; the container sleeps until removed. */
int docker_run_argv(const struct sandbox *s, const char *docker, struct proto_strv *ret);
/* docker exec -i ... sh -s: the program arrives on stdin. */
int docker_exec_argv(const struct sandbox *s, const char *docker, struct proto_strv *ret);
/* docker rm -f <name> */
int docker_rm_argv(const struct sandbox *s, const char *docker, struct proto_strv *ret);
/* An image reference: [A-Za-z0-9][A-Za-z0-9._/:@-]*, at most PROTO_NAME_MAX. */
bool docker_image_valid(const char *image);

#endif
