/* Processes of a sandbox, read from /proc, and signals to them (procs.h). Every read and
 * the signal itself go through one /proc/<pid> directory descriptor. */
#include "procs.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysinfo.h>
#include <unistd.h>

#include "cleanup.h"
#include "registry.h"
#include "runner.h"

#define PROC_FILE_MAX 8192u /* bytes of stat / status / cgroup read */

static const char *const ns_kinds[] = { "cgroup", "ipc", "mnt", "net", "pid", "time", "user", "uts" };
_Static_assert(sizeof(ns_kinds) / sizeof(ns_kinds[0]) <= PROTO_NS_MAX, "PROTO_NS_MAX holds them");

static int read_at(int dirfd, const char *name, char *buf, size_t bufsz)
{
	_cleanup_close_ int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);
	size_t len = 0;
	if (fd < 0)
		return -errno;
	while (len + 1 < bufsz) {
		ssize_t n = read(fd, buf + len, bufsz - 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		len += (size_t)n;
	}
	buf[len] = '\0';
	return (int)len;
}

static int parse_stat(const char *buf, struct proc_info *p)
{
	const char *open = strchr(buf, '('), *close = strrchr(buf, ')');
	unsigned long long v[22];
	const char *s;
	size_t clen;
	int n = 0;

	if (!open || !close || close < open)
		return -EBADMSG;
	clen = (size_t)(close - open - 1);
	if (clen >= sizeof(p->comm))
		clen = sizeof(p->comm) - 1;
	memcpy(p->comm, open + 1, clen);
	p->comm[clen] = '\0';
	s = close + 1;
	while (*s == ' ')
		s++;
	p->state = *s ? *s++ : '?';
	/* ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime cutime
	 * cstime priority nice threads itrealvalue starttime vsize rss */
	for (; n < 21; n++) {
		char *end;
		while (*s == ' ')
			s++;
		if (*s == '-') /* priority and nice may be negative */
			s++;
		v[n] = strtoull(s, &end, 10);
		if (end == s)
			return -EBADMSG;
		s = end;
	}
	p->ppid = (pid_t)v[0];
	p->pgid = (pid_t)v[1];
	p->sid = (pid_t)v[2];
	p->utime = v[10];
	p->stime = v[11];
	p->start = v[18];
	p->rss_pages = v[20];
	return 0;
}

static const char *status_field(const char *buf, const char *key)
{
	size_t kl = strlen(key);
	for (const char *l = buf; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
		if (strncmp(l, key, kl) == 0 && l[kl] == ':') {
			l += kl + 1;
			while (*l == '\t' || *l == ' ')
				l++;
			return l;
		}
	return NULL;
}

int proc_read(int dirfd, struct proc_info *ret)
{
	char buf[PROC_FILE_MAX];
	const char *f;
	int r;

	memset(ret, 0, sizeof(*ret));
	if ((r = read_at(dirfd, "stat", buf, sizeof(buf))) < 0)
		return r;
	if ((r = parse_stat(buf, ret)) < 0)
		return r;
	if ((r = read_at(dirfd, "status", buf, sizeof(buf))) < 0)
		return r;
	if ((f = status_field(buf, "Pid")))
		ret->pid = (pid_t)strtol(f, NULL, 10);
	if ((f = status_field(buf, "Uid"))) /* real, effective, saved, fs: the effective one */
		sscanf(f, "%*u %u", &ret->uid);
	if ((f = status_field(buf, "Gid")))
		sscanf(f, "%*u %u", &ret->gid);
	if ((f = status_field(buf, "NoNewPrivs")))
		ret->no_new_privs = *f == '1';
	if ((f = status_field(buf, "Seccomp")))
		ret->seccomp = (unsigned)strtoul(f, NULL, 10);
	if ((f = status_field(buf, "CapEff")))
		sscanf(f, "%31[0-9a-fA-F]", ret->cap_eff);
	if ((r = read_at(dirfd, "cgroup", buf, sizeof(buf))) < 0)
		return r;
	for (const char *l = buf; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
		if (strncmp(l, "0::", 3) == 0) {
			size_t len = strcspn(l + 3, "\n");
			if (len < sizeof(ret->cgroup)) {
				memcpy(ret->cgroup, l + 3, len);
				ret->cgroup[len] = '\0';
			}
		}
	return 0;
}

void proc_cmdline(int dirfd, char *buf, size_t bufsz)
{
	int n = read_at(dirfd, "cmdline", buf, bufsz);
	if (n <= 0) {
		buf[0] = '\0';
		return;
	}
	while (n > 0 && buf[n - 1] == '\0')
		n--;
	for (int i = 0; i < n; i++)
		if (buf[i] == '\0' || buf[i] == '\n')
			buf[i] = ' ';
	buf[n] = '\0';
}

int proc_ns_differ(int dirfd, pid_t ref, struct proto_strv *out)
{
	for (size_t i = 0; i < sizeof(ns_kinds) / sizeof(ns_kinds[0]); i++) {
		char path[64], rel[32];
		struct stat a, b;
		snprintf(path, sizeof(path), "/proc/%d/ns/%s", (int)ref, ns_kinds[i]);
		snprintf(rel, sizeof(rel), "ns/%s", ns_kinds[i]);
		if (stat(path, &a) < 0 || fstatat(dirfd, rel, &b, 0) < 0)
			continue; /* a kind this kernel lacks, or one we may not look at */
		if (a.st_dev != b.st_dev || a.st_ino != b.st_ino) {
			int r = proto_strv_push(out, ns_kinds[i]);
			if (r < 0)
				return r;
		}
	}
	return 0;
}

/* ---- who owns a process ------------------------------------------------------------ */

/* The cgroup2 path of p ("/sbx-.../run_x") is the tail of the run's group directory. */
static bool in_cgroup(const struct proc_info *p, const char *group_dir)
{
	size_t gl = strlen(group_dir), pl = strlen(p->cgroup);
	/* p's path starts with '/', so a match ends on a whole component */
	return pl > 1 && p->cgroup[0] == '/' && gl > pl && strcmp(group_dir + gl - pl, p->cgroup) == 0;
}

static bool same_pidns_as(int dirfd, pid_t jail)
{
	char path[64];
	struct stat a, b, self;
	snprintf(path, sizeof(path), "/proc/%d/ns/pid", (int)jail);
	if (stat(path, &a) < 0 || stat("/proc/self/ns/pid", &self) < 0 ||
	    fstatat(dirfd, "ns/pid", &b, 0) < 0)
		return false;
	/* a jail pid that ended and was reused by a process of ours names our own namespace:
	 * that is nobody's jail */
	if (a.st_dev == self.st_dev && a.st_ino == self.st_ino)
		return false;
	return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

void procs_owner(const struct proc_info *p, int dirfd, struct proc_owner *ret)
{
	const struct registry_entry *e[REGISTRY_MAX];
	size_t n = registry_list(registry_launcher(), NULL, NULL, e, REGISTRY_MAX);

	memset(ret, 0, sizeof(*ret));
	if (n > REGISTRY_MAX)
		n = REGISTRY_MAX;
	for (size_t i = 0; i < n; i++) {
		bool live = runner_leader_alive(e[i]->run_id);
		bool member = false;
		/* the run's own cgroup names only its processes, whatever their group */
		if (e[i]->cgroup[0] && in_cgroup(p, e[i]->cgroup))
			member = true;
		/* a group or session number is only the run's while its leader lives: after
		 * that the number may be reused by anyone */
		else if (live && (p->pgid == e[i]->pgid || p->sid == e[i]->pgid))
			member = true;
		else if (live && e[i]->kind == REG_JAIL && same_pidns_as(dirfd, e[i]->pgid))
			member = true;
		if (!member)
			continue;
		ret->kind = runner_is_live(e[i]->run_id) ? PO_RUN : PO_WARM;
		snprintf(ret->sandbox_id, sizeof(ret->sandbox_id), "%s", e[i]->sandbox_id);
		snprintf(ret->run_id, sizeof(ret->run_id), "%s", e[i]->run_id);
		return;
	}
}

/* ---- listing ----------------------------------------------------------------------- */

static int open_proc(pid_t pid)
{
	char path[32];
	snprintf(path, sizeof(path), "/proc/%d", (int)pid);
	return open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

static void fill_row(int dirfd, const struct proc_info *p, const char *run_id, pid_t sbxd_pid,
                     struct msg_PROC_REP *row, char *cmdline, size_t cmdsz,
                     struct proto_strv *ns)
{
	static long ticks, page;
	struct sysinfo si;
	double up = 0, elapsed, cpu_s;
	char buf[64];
	_cleanup_close_ int ufd = open("/proc/uptime", O_RDONLY | O_CLOEXEC);
	ssize_t un = ufd >= 0 ? read(ufd, buf, sizeof(buf) - 1) : -1;

	if (!ticks)
		ticks = sysconf(_SC_CLK_TCK) > 0 ? sysconf(_SC_CLK_TCK) : 100;
	if (!page)
		page = sysconf(_SC_PAGESIZE) > 0 ? sysconf(_SC_PAGESIZE) : 4096;
	if (un > 0) {
		buf[un] = '\0';
		up = strtod(buf, NULL);
	}
	elapsed = up - (double)p->start / (double)ticks;
	if (elapsed < 0)
		elapsed = 0;
	cpu_s = (double)(p->utime + p->stime) / (double)ticks;
	proc_cmdline(dirfd, cmdline, cmdsz);
	proc_ns_differ(dirfd, sbxd_pid, ns);
	*row = (struct msg_PROC_REP){
		.pid = (uint32_t)p->pid,
		.ppid = (uint32_t)p->ppid,
		.pgid = (uint32_t)p->pgid,
		.run_id = (char *)run_id,
		.cpu_permille = elapsed > 0 ? (uint32_t)(cpu_s / elapsed * 1000.0) : 0,
		.rss_kb = p->rss_pages * (uint64_t)page / 1024,
		.elapsed_ms = (uint64_t)(elapsed * 1000.0),
		.comm = (char *)p->comm,
		.cmdline = cmdline,
		.uid = p->uid,
		.gid = p->gid,
		.no_new_privs = p->no_new_privs,
		.seccomp = p->seccomp,
		.cap_eff = (char *)p->cap_eff,
		.namespaces = *ns,
		.cgroup = (char *)p->cgroup,
	};
	if (sysinfo(&si) == 0 && si.totalram)
		row->mem_permille = (uint32_t)((double)(p->rss_pages * (uint64_t)page) /
		                               ((double)si.totalram * si.mem_unit) * 1000.0);
}

size_t procs_list(const char *sandbox_id, pid_t sbxd_pid,
                  int (*fn)(const struct msg_PROC_REP *row, void *arg), void *arg)
{
	_cleanup_closedir_ DIR *d = opendir("/proc");
	struct dirent *de;
	size_t n = 0;

	if (!d)
		return 0;
	while ((de = readdir(d))) {
		struct proc_info p;
		struct proc_owner o;
		_cleanup_close_ int dfd = -1;
		char *end;
		long pid = strtol(de->d_name, &end, 10);
		if (*end || pid <= 0 || (dfd = openat(dirfd(d), de->d_name,
		                                      O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
			continue;
		if (proc_read(dfd, &p) < 0 || p.state == 'Z')
			continue; /* gone, or a zombie its parent is about to reap */
		procs_owner(&p, dfd, &o);
		if (o.kind != PO_RUN || strcmp(o.sandbox_id, sandbox_id) != 0)
			continue;
		if (n++ < PROCS_LIST_MAX) {
			struct msg_PROC_REP row;
			struct proto_strv ns = { 0 };
			char cmd[PROTO_CMDLINE_MAX + 1];
			fill_row(dfd, &p, o.run_id, sbxd_pid, &row, cmd, sizeof(cmd), &ns);
			fn(&row, arg);
			proto_strv_clear(&ns);
		}
	}
	return n;
}

/* ---- signals ----------------------------------------------------------------------- */

bool procs_signal_allowed(int sig)
{
	switch (sig) {
	case SIGHUP: case SIGINT: case SIGQUIT: case SIGKILL: case SIGUSR1: case SIGUSR2:
	case SIGTERM: case SIGCONT: case SIGSTOP: case SIGTSTP:
		return true;
	default:
		return false;
	}
}

/* Why p may not be signalled for sandbox_id, or NULL when it may. */
static const char *refusal(const struct proc_info *p, const struct proc_owner *o,
                           const char *sandbox_id, pid_t sbxd_pid)
{
	if (o->kind == PO_RUN && strcmp(o->sandbox_id, sandbox_id) == 0)
		return NULL;
	if (p->pid == 1)
		return "pid 1 is never the engine's to signal";
	if (o->kind == PO_RUN)
		return "that process belongs to another sandbox";
	if (o->kind == PO_WARM)
		return "that process is a jail built ahead, not a run";
	if (p->pid == getpid() || p->pid == sbxd_pid || p->ppid == getpid() || p->ppid == sbxd_pid)
		return "that is one of the daemon's own processes";
	return "the engine did not start that process for this sandbox";
}

static int signal_fd(int dirfd, int sig)
{
	return syscall(SYS_pidfd_send_signal, dirfd, sig, NULL, 0) < 0 ? -errno : 0;
}

int procs_kill_pid(const char *sandbox_id, pid_t pid, int sig, pid_t sbxd_pid,
                   struct proto_u32v *pids, char *why, size_t whysz)
{
	_cleanup_close_ int dfd = -1;
	struct proc_info p;
	struct proc_owner o;
	const char *no;
	int r;

	if (pid <= 0 || (dfd = open_proc(pid)) < 0 || proc_read(dfd, &p) < 0 || p.state == 'Z') {
		snprintf(why, whysz, "pid %d: %s", (int)pid,
		         pid == 1 ? "pid 1 is never the engine's to signal"
		                  : "no live process of this sandbox has that pid");
		return -EPERM;
	}
	procs_owner(&p, dfd, &o);
	if ((no = refusal(&p, &o, sandbox_id, sbxd_pid))) {
		snprintf(why, whysz, "pid %d: %s", (int)pid, no);
		return -EPERM;
	}
	if ((r = signal_fd(dfd, sig)) < 0) {
		snprintf(why, whysz, "pid %d: %s", (int)pid,
		         r == -ESRCH ? "it ended before the signal" : strerror(-r));
		return r == -ESRCH ? -EPERM : r;
	}
	return proto_u32v_push(pids, (uint32_t)pid);
}

int procs_kill_pgid(const char *sandbox_id, pid_t pgid, int sig, pid_t sbxd_pid,
                    struct proto_u32v *pids, char *why, size_t whysz)
{
	_cleanup_closedir_ DIR *d = opendir("/proc");
	struct dirent *de;
	struct { int fd; pid_t pid; } *mine = NULL;
	size_t nmine = 0, cap = 0;
	const char *no = NULL;
	int r = 0;

	if (!d)
		return -errno;
	/* every member first: one of them not this sandbox's and nothing is signalled */
	while ((de = readdir(d)) && !no) {
		struct proc_info p;
		struct proc_owner o;
		char *end;
		long pid = strtol(de->d_name, &end, 10);
		int dfd;
		if (*end || pid <= 0 ||
		    (dfd = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
			continue;
		if (proc_read(dfd, &p) < 0 || p.pgid != pgid || p.state == 'Z') {
			close(dfd);
			continue;
		}
		procs_owner(&p, dfd, &o);
		if ((no = refusal(&p, &o, sandbox_id, sbxd_pid))) {
			close(dfd);
			break;
		}
		if (nmine == cap) {
			void *m = realloc(mine, (cap = cap ? cap * 2 : 16) * sizeof(*mine));
			if (!m) {
				close(dfd);
				r = -ENOMEM;
				break;
			}
			mine = m;
		}
		mine[nmine].fd = dfd;
		mine[nmine++].pid = (pid_t)pid;
	}
	if (!no && !r && nmine == 0)
		no = pgid == 1 ? "pid 1 is never the engine's to signal"
		               : "no live process of this sandbox is in that group";
	if (no)
		snprintf(why, whysz, "pgid %d: %s", (int)pgid, no);
	for (size_t i = 0; i < nmine; i++) {
		if (!no && !r && signal_fd(mine[i].fd, sig) == 0)
			proto_u32v_push(pids, (uint32_t)mine[i].pid);
		close(mine[i].fd);
	}
	free(mine);
	return no ? -EPERM : r;
}
