/* The backend table and what the backends share: writing the program files as the jail
 * uid, the verified drop, detached helpers. */
#include "backend/backend.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cleanup.h"
#include "fence/stage.h"
#include "netrun.h"
#include "privdrop.h"
#include "util.h"

const struct backend_ops *backend_for(enum isolation iso)
{
	switch (iso) {
	case ISO_BWRAP:
		return &backend_bwrap;
	case ISO_DOCKER:
		return &backend_docker;
	case ISO_DEGRADED:
	case ISO_NONE: /* the same plain sh -s; the policy decided why */
		return &backend_degraded;
	default:
		return NULL; /* seatbelt: macOS only */
	}
}

void backend_spawn_clear(struct backend_spawn *sp)
{
	proto_strv_clear(&sp->argv);
	proto_strv_clear(&sp->docker_run);
	if (sp->stage) {
		stage_plan_clear(sp->stage);
		free(sp->stage);
		sp->stage = NULL;
	}
	free(sp->note);
	sp->note = NULL;
	if (sp->seccomp_fd >= 0)
		close(sp->seccomp_fd);
	if (sp->info_r >= 0)
		close(sp->info_r);
	if (sp->info_w >= 0)
		close(sp->info_w);
	sp->seccomp_fd = sp->info_r = sp->info_w = -1;
}

_Noreturn void backend_child_fail(const char *what)
{
	dprintf(2, "sbx: %s: %s\n", what, strerror(errno));
	_exit(126);
}

static int write_file_at(int dirfd, const char *name, const char *data)
{
	_cleanup_close_ int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
	                                0600);
	if (fd < 0)
		return -errno;
	return write_all(fd, data, strlen(data));
}

void backend_child_write_files(const struct backend_child *c)
{
	_cleanup_close_ int dfd = -1;
	if (!c->code_name)
		return;
	/* the workdir belongs to the jail: files go in as the jail uid, no links followed */
	if (mkdir(".sbx", 0700) < 0 && errno != EEXIST)
		backend_child_fail("mkdir .sbx");
	dfd = open(".sbx", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		backend_child_fail("open .sbx");
	if ((errno = -write_file_at(dfd, c->code_name, c->code)) != 0)
		backend_child_fail("writing the program file");
	if (c->stdin_name && (errno = -write_file_at(dfd, c->stdin_name, c->stdin_data)) != 0)
		backend_child_fail("writing the stdin file");
}

void backend_child_drop(const struct backend_child *c)
{
	if (c->drop) {
		/* the jail uid is this sandbox's alone, so NPROC counts exactly its processes */
		struct rlimit rl = { c->pids, c->pids };
		int r;
		if (c->pids)
			setrlimit(RLIMIT_NPROC, &rl);
		if ((r = privdrop_to(c->uid, c->uid)) < 0) {
			errno = -r;
			backend_child_fail("dropping to the jail uid"); /* never a jail as host root */
		}
	}
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		backend_child_fail("PR_SET_NO_NEW_PRIVS");
}

/* images put their interpreters anywhere on PATH; on the host they have fixed paths */
const char *const backend_host_interpreters[] = { "/bin/sh", "/usr/bin/python3", "/usr/bin/node" };

int backend_jail_child_setup(struct backend_child *c)
{
	backend_child_drop(c);
	if (c->net_sync >= 0)
		netrun_child(c->net_sync, (enum net_mode)c->net_mode, c->net_allow);
	if (chdir(c->workdir) < 0)
		backend_child_fail("chdir to the workdir");
	backend_child_write_files(c);
	return 0;
}

void backend_spawn_detached(char *const argv[])
{
	pid_t pid = fork();
	if (pid == 0) {
		static char *const envp[] = { "PATH=" BACKEND_PATH, NULL };
		int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
		setsid();
		if (fork() != 0)
			_exit(0);
		dup2(devnull, 0);
		dup2(devnull, 1);
		dup2(devnull, 2);
		close_fds_from(3, NULL, 0);
		execve(argv[0], argv, envp);
		_exit(127);
	}
	if (pid > 0)
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
}

int run_profile(struct launcher *L, const struct sandbox *s, struct msg_PROFILE_REP *ret)
{
	const struct backend_ops *ops = backend_for(policy_profile_isolation(L, s));
	memset(ret, 0, sizeof(*ret));
	return ops ? ops->profile(L, s, ret) : -EOPNOTSUPP;
}

void run_sandbox_cleanup(struct launcher *L, const struct sandbox *s)
{
	const struct backend_ops *ops = backend_for(policy_profile_isolation(L, s));
	if (ops && ops->cleanup)
		ops->cleanup(L, s);
}
