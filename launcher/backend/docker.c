/* docker (DESIGN.md §5): one long-lived container per sandbox (fence/docker_argv.c), one
 * `docker exec -i ... sh -s` per run. The client needs the engine's socket, so the forked
 * child stays root; only the files it writes into the workdir go in as the jail uid. */
#include "backend/backend.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "caps.h"
#include "fence/docker_argv.h"

/* The client gets a fixed environment: the sandbox's env (which the API side controls)
 * reaches the container only through --env, never a root client (DOCKER_HOST, ...). */
static char *const client_env[] = { "PATH=" BACKEND_PATH, NULL };

static int docker_prepare(struct launcher *L, const struct sandbox *s, const struct backend_fences *f,
                          struct backend_spawn *ret)
{
	const char *docker = caps_docker_path();
	int r;
	if (!docker)
		return -ENOENT;
	if (f->binds.n || f->env.n)
		return -EOPNOTSUPP; /* fences reach a container through its own flags: not yet */
	if ((r = docker_run_argv(s, docker, &ret->docker_run)) < 0 ||
	    (r = docker_exec_argv(s, docker, &ret->argv)) < 0 ||
	    (r = docker_container_name(s, ret->container, sizeof(ret->container))) < 0)
		return r;
	ret->docker = docker;
	ret->engine_limits = false; /* --memory = --memory-swap, --pids-limit */
	ret->syscalls = "docker-default";
	return 0;
}

/* Run a docker client command quietly; its wait status. */
static int client_run(char *const argv[], bool keep_stderr)
{
	int st = 0;
	pid_t pid = fork();
	if (pid == 0) {
		int devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
		dup2(devnull, 1);
		if (!keep_stderr)
			dup2(devnull, 2);
		execve(argv[0], argv, client_env);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		return -1;
	return st;
}

static int docker_child_setup(struct backend_child *c)
{
	const struct backend_spawn *sp = c->sp;
	int st = 0;
	pid_t w;

	if (chdir(c->workdir) < 0)
		backend_child_fail("chdir to the workdir");
	/* the workdir is the jail's: the files go in from a grandchild as the jail uid */
	w = fork();
	if (w < 0)
		backend_child_fail("fork");
	if (w == 0) {
		struct backend_child q = *c;
		q.pids = 0; /* no NPROC limit for a one-shot writer */
		if (c->drop)
			backend_child_drop(&q);
		backend_child_write_files(&q);
		_exit(0);
	}
	if (waitpid(w, &st, 0) != w || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		_exit(126);
	char *const inspect[] = { (char *)sp->docker, "container", "inspect", "--format",
		                  "{{.State.Running}}", (char *)sp->container, NULL };
	st = client_run(inspect, false);
	if (st < 0)
		backend_child_fail("docker container inspect");
	/* the container id goes to /dev/null; errors stay on stderr */
	if ((!WIFEXITED(st) || WEXITSTATUS(st) != 0) &&
	    ((st = client_run(sp->docker_run.v, true)) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)) {
		dprintf(2, "sbx: docker run of the sandbox's container failed\n");
		_exit(125);
	}
	c->envp = client_env;
	return 0;
}

static int docker_profile(struct launcher *L, const struct sandbox *s, struct msg_PROFILE_REP *ret)
{
	struct proto_strv ex = { 0 };
	const char *docker = caps_docker_path();
	size_t len = 0;
	int e;

	memset(ret, 0, sizeof(*ret));
	if (!docker)
		docker = "docker";
	if ((e = docker_run_argv(s, docker, &ret->argv)) < 0 || (e = docker_exec_argv(s, docker, &ex)) < 0) {
		proto_strv_clear(&ex);
		return e;
	}
	/* argv creates the container (once); text is each run's exec line */
	for (uint32_t i = 0; i < ex.n; i++)
		len += strlen(ex.v[i]) + 1;
	if ((ret->text = malloc(len + 1))) {
		ret->text[0] = '\0';
		for (uint32_t i = 0; i < ex.n; i++) {
			strcat(ret->text, ex.v[i]);
			if (i + 1 < ex.n)
				strcat(ret->text, " ");
		}
	}
	proto_strv_clear(&ex);
	ret->kind = strdup("docker");
	ret->note = strdup("fsMode does not apply to docker; the program arrives on stdin of "
	                   "sh -s in the container; at a deadline every process of the "
	                   "sandbox's uid in the container is killed (other runs of it too)");
	return ret->kind && ret->note && ret->text ? 0 : -ENOMEM;
}

/* Killing the docker client does not end what it started in the container: end every
 * process of the jail uid there (the container's own pid 1, sleep, survives). This also
 * ends other runs of the same sandbox that are in flight at that moment. */
static void docker_on_deadline(struct launcher *L, const struct sandbox *s)
{
	char name[BACKEND_CONTAINER_MAX];
	const char *docker = caps_docker_path();
	if (!docker || docker_container_name(s, name, sizeof(name)) < 0)
		return;
	char *const argv[] = { (char *)docker, "exec", name, "kill", "-KILL", "-1", NULL };
	backend_spawn_detached(argv);
}

/* The sandbox was deleted: remove its container (docker rm -f), without waiting. */
static void docker_cleanup(struct launcher *L, const struct sandbox *s)
{
	struct proto_strv argv = { 0 };
	const char *docker = caps_docker_path();
	if (docker && docker_rm_argv(s, docker, &argv) == 0)
		backend_spawn_detached(argv.v);
	proto_strv_clear(&argv);
}

/* images put their interpreters anywhere on PATH (python:3.12-slim: /usr/local/bin) */
static const char *const image_interpreters[] = { "sh", "python3", "node" };

const struct backend_ops backend_docker = {
	.iso = ISO_DOCKER,
	.profile = docker_profile,
	.prepare = docker_prepare,
	.child_setup = docker_child_setup,
	.interpreters = image_interpreters,
	.on_deadline = docker_on_deadline,
	.cleanup = docker_cleanup,
};
