/* The mirror of the launcher's registry of live process groups: if the launcher dies,
 * sbxd still knows every group it started and kills them, so no jail outlives it
 * (DESIGN.md §1). Nothing here logs; 0 or -errno. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cleanup.h"
#include "sbxd.h"
#include "util.h"

#define CGROUP_ROOT "/sys/fs/cgroup/"

static bool pid_protected(uint32_t p, const pid_t *protect, size_t nprotect)
{
	/* kill(-1) signals every process we may; kill(-0) our own group */
	if (p <= 1 || p > (uint32_t)INT32_MAX)
		return true;
	for (size_t i = 0; i < nprotect; i++)
		if ((pid_t)p == protect[i])
			return true;
	return false;
}

/* Only a cgroup2 directory below the root, with no ".." step out of it. */
static bool cgroup_ok(const char *cg)
{
	size_t n = strlen(cg);
	if (n <= strlen(CGROUP_ROOT) || n > MIRROR_CGROUP_MAX ||
	    strncmp(cg, CGROUP_ROOT, strlen(CGROUP_ROOT)) != 0)
		return false;
	for (const char *p = cg; (p = strstr(p, "..")); p += 2)
		if (p[-1] == '/' && (p[2] == '/' || p[2] == '\0'))
			return false;
	return true;
}

static struct mirror_entry *find(struct mirror *m, pid_t pgid)
{
	for (size_t i = 0; i < m->n; i++)
		if (m->e[i].pgid == pgid)
			return &m->e[i];
	return NULL;
}

const struct mirror_entry *mirror_find(const struct mirror *m, pid_t pgid)
{
	return find((struct mirror *)m, pgid);
}

int mirror_add(struct mirror *m, const struct msg_PGRP_ADD *a, const pid_t *protect,
               size_t nprotect)
{
	struct mirror_entry *e;

	if (pid_protected(a->pgid, protect, nprotect) ||
	    (a->jail_pid != 0 && pid_protected(a->jail_pid, protect, nprotect)))
		return -EINVAL;
	if (!(e = find(m, (pid_t)a->pgid))) {
		if (m->n >= MIRROR_MAX)
			return -ENOSPC;
		e = &m->e[m->n++];
		memset(e, 0, sizeof(*e));
		e->pgid = (pid_t)a->pgid;
	}
	/* an update may add the jail pid; it never forgets one already known */
	if (a->jail_pid)
		e->jail_pid = (pid_t)a->jail_pid;
	snprintf(e->sandbox_id, sizeof(e->sandbox_id), "%s", a->sandbox_id ? a->sandbox_id : "");
	snprintf(e->run_id, sizeof(e->run_id), "%s", a->run_id ? a->run_id : "");
	if (a->cgroup && cgroup_ok(a->cgroup))
		snprintf(e->cgroup, sizeof(e->cgroup), "%s", a->cgroup);
	else if (a->cgroup && *a->cgroup)
		e->cgroup[0] = '\0';
	return 0;
}

int mirror_del(struct mirror *m, pid_t pgid)
{
	struct mirror_entry *e = find(m, pgid);
	if (!e)
		return -ENOENT;
	*e = m->e[--m->n]; /* order does not matter */
	return 0;
}

static void cgroup_kill(const char *cg)
{
	char path[MIRROR_CGROUP_MAX + 32];
	_cleanup_close_ int fd = -1;

	if (snprintf(path, sizeof(path), "%s/cgroup.kill", cg) >= (int)sizeof(path))
		return;
	if ((fd = open(path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW)) < 0)
		return; /* gone already, or cgroup v1: the group kills below still apply */
	(void)write_all(fd, "1", 1); /* best effort: the group kills do the rest */
}

size_t mirror_signal_all(const struct mirror *m, int sig)
{
	size_t alive = 0;
	for (size_t i = 0; i < m->n; i++) {
		const struct mirror_entry *e = &m->e[i];
		bool any = kill(-e->pgid, sig) == 0;
		/* the jail leads a session of its own (bwrap --new-session) */
		if (e->jail_pid && kill(-e->jail_pid, sig) == 0)
			any = true;
		if (sig == SIGKILL && e->cgroup[0])
			cgroup_kill(e->cgroup);
		alive += any;
	}
	return alive;
}

size_t mirror_count_alive(const struct mirror *m)
{
	size_t alive = 0;
	for (size_t i = 0; i < m->n; i++) {
		const struct mirror_entry *e = &m->e[i];
		/* EPERM still means someone is there */
		bool any = kill(-e->pgid, 0) == 0 || errno == EPERM;
		if (!any && e->jail_pid)
			any = kill(-e->jail_pid, 0) == 0 || errno == EPERM;
		alive += any;
	}
	return alive;
}

void mirror_clear(struct mirror *m) { m->n = 0; }

/* The ppid and pgid of a process, from /proc/<pid>/stat (after the ")" of comm, which
 * may itself contain spaces and parentheses). */
static int proc_ppid_pgid(pid_t pid, pid_t *ret_ppid, pid_t *ret_pgid, char *ret_state)
{
	char path[64], buf[512], *p;
	_cleanup_close_ int fd = -1;
	ssize_t n;
	int ppid, pgid;
	char state;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return -errno;
	if ((n = read(fd, buf, sizeof(buf) - 1)) <= 0)
		return n < 0 ? -errno : -EIO;
	buf[n] = '\0';
	if (!(p = strrchr(buf, ')')) || sscanf(p + 1, " %c %d %d", &state, &ppid, &pgid) != 3)
		return -EBADMSG;
	*ret_ppid = ppid;
	*ret_pgid = pgid;
	*ret_state = state;
	return 0;
}

size_t orphans_kill(pid_t self, pid_t self_pgid, const pid_t *keep, size_t nkeep)
{
	DIR *dir = opendir("/proc");
	struct dirent *de;
	size_t killed = 0;

	if (!dir)
		return 0; /* not Linux, or no /proc: the mirror is all there is */
	while ((de = readdir(dir))) {
		char *end;
		long v = strtol(de->d_name, &end, 10);
		pid_t pid, ppid = 0, pgid = 0;
		char state = '?';
		bool kept = false;

		if (*end || v <= 1 || v > INT32_MAX)
			continue;
		pid = (pid_t)v;
		for (size_t i = 0; i < nkeep; i++)
			kept |= keep[i] == pid;
		if (kept || pid == self || proc_ppid_pgid(pid, &ppid, &pgid, &state) < 0 ||
		    ppid != self || state == 'Z') /* a zombie is dead already: reaped by SIGCHLD */
			continue;
		/* its whole group when it leads one of its own; never ours */
		if (pgid == pid && pgid != self_pgid)
			kill(-pgid, SIGKILL);
		kill(pid, SIGKILL);
		killed++;
	}
	closedir(dir);
	return killed;
}
