/* Per-run cgroups. */
#include "cgroup.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "cleanup.h"
#include "util.h"

#define CG_ROOT      "/sys/fs/cgroup"
#define CG_V1_MEM    CG_ROOT "/memory"
#define CG_V1_PIDS   CG_ROOT "/pids"
#define CG_UNIFIED   CG_ROOT "/unified"
#define CG2_MAGIC    0x63677270
#define CG_KILL_LOOPS 50
#define CG_RMDIR_TRIES 100  /* x CG_RETRY_US: how long a killed group may take to empty */
#define CG_RETRY_US    2000
#define CG_SWEEP_MAX   4096u /* entries looked at per parent group at start-up */
#define CG_MKDIR_TRIES 3     /* a run's mkdir racing a leaving launcher's rmdir of the parent */
#define CG_RUN_NAME_MAX 64u  /* "run_" + the id; longer names are not ours */

/* This instance's parent group name, "sbx-<hash of the data dir>"; "" until set. */
static char cg_instance[CG_INSTANCE_MAX + 1];

static int write_str(const char *dir, const char *file, const char *val)
{
	char p[PATH_MAX + 64];
	_cleanup_close_ int fd = -1;
	snprintf(p, sizeof(p), "%s/%s", dir, file);
	if ((fd = open(p, O_WRONLY | O_CLOEXEC)) < 0)
		return -errno;
	return write_all(fd, val, strlen(val));
}

static int read_str(const char *dir, const char *file, char *buf, size_t bufsz)
{
	char p[PATH_MAX + 64];
	_cleanup_close_ int fd = -1;
	ssize_t n;
	snprintf(p, sizeof(p), "%s/%s", dir, file);
	if ((fd = open(p, O_RDONLY | O_CLOEXEC)) < 0)
		return -errno;
	if ((n = read(fd, buf, bufsz - 1)) < 0)
		return -errno;
	buf[n] = '\0';
	return 0;
}

static bool is_cgroup2(const char *path)
{
	struct statfs sf;
	return statfs(path, &sf) == 0 && (unsigned long)sf.f_type == CG2_MAGIC;
}

static bool v2_has_controllers(const char *root)
{
	char buf[512];
	if (read_str(root, "cgroup.controllers", buf, sizeof(buf)) < 0)
		return false;
	return strstr(buf, "memory") && strstr(buf, "pids");
}

/* The launcher's own group in a hierarchy, from /proc/self/cgroup: "4:memory:/a/b" ->
 * "/a/b". `key` is "memory", "pids" or "" (the v2 line "0::"). */
static int own_group(const char *key, char *buf, size_t bufsz)
{
	_cleanup_fclose_ FILE *f = fopen("/proc/self/cgroup", "re");
	char line[1024];
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		size_t klen;
		bool match = false;
		if (!c2)
			continue;
		klen = (size_t)(c2 - c1 - 1);
		if (!*key)
			match = klen == 0;
		else
			for (char *tok = c1 + 1; tok < c2;) {
				char *comma = memchr(tok, ',', (size_t)(c2 - tok));
				size_t tl = comma ? (size_t)(comma - tok) : (size_t)(c2 - tok);
				if (tl == strlen(key) && strncmp(tok, key, tl) == 0)
					match = true;
				tok += tl + 1;
			}
		if (match) {
			line[strcspn(line, "\n")] = '\0';
			snprintf(buf, bufsz, "%s", c2 + 1);
			return 0;
		}
	}
	return -ENOENT;
}

enum cg_flavour cgroup_detect(void)
{
	if (is_cgroup2(CG_ROOT) && v2_has_controllers(CG_ROOT))
		return CG_V2;
	if (access(CG_V1_MEM "/cgroup.procs", F_OK) == 0 &&
	    access(CG_V1_PIDS "/cgroup.procs", F_OK) == 0)
		return CG_V1;
	return CG_NONE;
}

const char *cgroup_flavour_name(enum cg_flavour f)
{
	return f == CG_V2 ? "v2" : f == CG_V1 ? "v1" : "none";
}

/* FNV-1a, 64 bits: a stable short name for a path, not a secret */
static uint64_t fnv1a64(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	return h;
}

int cgroup_instance_set(const char *data_dir)
{
	_cleanup_free_ char *real = realpath(data_dir, NULL);
	if (!real)
		return -errno;
	snprintf(cg_instance, sizeof(cg_instance), "%s%016llx", CG_INSTANCE_PREFIX,
	         (unsigned long long)fnv1a64(real));
	return 0;
}

const char *cgroup_instance_name(void)
{
	return cg_instance;
}

/* <mount><own group>/<instance>: the parent of this instance's run groups in one
 * hierarchy. The launcher's own group comes from /proc/self/cgroup. */
static int instance_parent(const char *mount, const char *key, char *ret, size_t retsz)
{
	char own[PATH_MAX], mine[CG_INSTANCE_MAX + 3], *cut;
	int r;
	if (!cg_instance[0])
		return -EINVAL; /* no instance, no groups: never the shared "sbx" of old */
	if ((r = own_group(key, own, sizeof(own))) < 0)
		return r;
	if (strcmp(own, "/") == 0)
		own[0] = '\0';
	/* a launcher restarted inside a group it made itself must not nest deeper */
	snprintf(mine, sizeof(mine), "/%s/", cg_instance);
	if ((cut = strstr(own, mine)))
		*cut = '\0';
	if ((size_t)snprintf(ret, retsz, "%s%s/%s", mount, own, cg_instance) >= retsz)
		return -ENAMETOOLONG;
	return 0;
}

/* mkdir <parent>/<run>; the parent may already exist, or be removed under us by an
 * earlier launcher of this instance leaving (its exit removes the parent when empty). */
static int make_group(const char *mount, const char *key, const char *run_id, char *ret,
                      size_t retsz)
{
	char parent[PATH_MAX];
	int r;
	if ((r = instance_parent(mount, key, parent, sizeof(parent))) < 0)
		return r;
	if ((size_t)snprintf(ret, retsz, "%s/%s", parent, run_id) >= retsz)
		return -ENAMETOOLONG;
	for (int t = 0; t < CG_MKDIR_TRIES; t++) {
		if (mkdir(parent, 0755) < 0 && errno != EEXIST)
			break;
		if (mkdir(ret, 0755) == 0)
			return 0;
		if (errno != ENOENT)
			break;
	}
	r = -errno;
	ret[0] = '\0';
	return r;
}

int cgroup_run_create(const char *run_id, uint32_t memory_mb, uint32_t pids,
                      struct cgroup_run *ret)
{
	struct cgroup_run cg = { .flavour = cgroup_detect() };
	char val[64];
	int r = 0;

	if (strchr(run_id, '/') || strstr(run_id, ".."))
		return -EINVAL;
	if (geteuid() != 0) {
		*ret = (struct cgroup_run){ 0 };
		return -EPERM;
	}
	if (cg.flavour == CG_V2) {
		if ((r = make_group(CG_ROOT, "", run_id, cg.v2, sizeof(cg.v2))) < 0)
			goto fail;
		snprintf(cg.kill, sizeof(cg.kill), "%s", cg.v2);
		if (memory_mb) {
			snprintf(val, sizeof(val), "%llu", (unsigned long long)memory_mb << 20);
			if ((r = write_str(cg.v2, "memory.max", val)) < 0 ||
			    ((r = write_str(cg.v2, "memory.swap.max", "0")) < 0 && r != -ENOENT))
				goto fail;
			cg.memory_limited = true;
		}
		if (pids) {
			snprintf(val, sizeof(val), "%u", pids);
			if ((r = write_str(cg.v2, "pids.max", val)) < 0)
				goto fail;
			cg.pids_limited = true;
		}
	} else if (cg.flavour == CG_V1) {
		if ((r = make_group(CG_V1_MEM, "memory", run_id, cg.mem, sizeof(cg.mem))) < 0 ||
		    (r = make_group(CG_V1_PIDS, "pids", run_id, cg.pids, sizeof(cg.pids))) < 0)
			goto fail;
		if (memory_mb) {
			snprintf(val, sizeof(val), "%llu", (unsigned long long)memory_mb << 20);
			if ((r = write_str(cg.mem, "memory.limit_in_bytes", val)) < 0)
				goto fail;
			/* memory+swap equal to memory: otherwise the group swaps past its cap */
			r = write_str(cg.mem, "memory.memsw.limit_in_bytes", val);
			if (r < 0 && r != -ENOENT)
				goto fail;
			cg.memory_limited = true;
		}
		if (pids) {
			snprintf(val, sizeof(val), "%u", pids);
			if ((r = write_str(cg.pids, "pids.max", val)) < 0)
				goto fail;
			cg.pids_limited = true;
		}
		/* a controller-less cgroup2 next to v1 still offers cgroup.kill */
		if (is_cgroup2(CG_UNIFIED) &&
		    make_group(CG_UNIFIED, "", run_id, cg.kill, sizeof(cg.kill)) < 0)
			cg.kill[0] = '\0';
	}
	*ret = cg;
	return 0;
fail:
	cgroup_run_destroy(&cg);
	*ret = (struct cgroup_run){ 0 };
	return r;
}

static int kill_listed(const char *dir)
{
	char p[PATH_MAX + 32], line[32];
	_cleanup_fclose_ FILE *f = NULL;
	int n = 0;
	snprintf(p, sizeof(p), "%s/cgroup.procs", dir);
	if (!(f = fopen(p, "re")))
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		pid_t pid = (pid_t)atoi(line);
		if (pid > 1 && kill(pid, SIGKILL) == 0)
			n++;
	}
	return n;
}

int cgroup_run_kill(const struct cgroup_run *cg)
{
	if (cg->kill[0] && write_str(cg->kill, "cgroup.kill", "1") == 0)
		return 0;
	/* v1 has no cgroup.kill: kill what is listed until nothing is (a fork racing the
	 * loop lands in the same group and is caught on the next pass; pids.max bounds it) */
	for (int i = 0; i < CG_KILL_LOOPS; i++) {
		int a = cg->mem[0] ? kill_listed(cg->mem) : 0;
		int b = cg->pids[0] ? kill_listed(cg->pids) : 0;
		if (a <= 0 && b <= 0)
			return 0;
	}
	return -EBUSY;
}

static long long read_ll(const char *dir, const char *file)
{
	char buf[64];
	if (!dir[0] || read_str(dir, file, buf, sizeof(buf)) < 0)
		return -1;
	return atoll(buf);
}

static long long read_key(const char *dir, const char *file, const char *key)
{
	char buf[1024], *p;
	if (!dir[0] || read_str(dir, file, buf, sizeof(buf)) < 0)
		return -1;
	for (p = buf; (p = strstr(p, key)); p += strlen(key))
		if ((p == buf || p[-1] == '\n') && p[strlen(key)] == ' ')
			return atoll(p + strlen(key) + 1);
	return -1;
}

bool cgroup_run_hit_memory(const struct cgroup_run *cg)
{
	if (cg->v2[0])
		return read_key(cg->v2, "memory.events", "oom_kill") > 0 ||
		       read_key(cg->v2, "memory.events", "max") > 0;
	return read_ll(cg->mem, "memory.failcnt") > 0 || read_ll(cg->mem, "memory.memsw.failcnt") > 0 ||
	       read_key(cg->mem, "memory.oom_control", "oom_kill") > 0;
}

bool cgroup_run_hit_pids(const struct cgroup_run *cg)
{
	const char *d = cg->v2[0] ? cg->v2 : cg->pids;
	return d[0] && read_key(d, "pids.events", "max") > 0;
}

static int count_procs(const char *dir)
{
	char p[PATH_MAX + 32], line[32];
	_cleanup_fclose_ FILE *f = NULL;
	int n = 0;
	if (!dir[0])
		return 0;
	snprintf(p, sizeof(p), "%s/cgroup.procs", dir);
	if (!(f = fopen(p, "re")))
		return 0;
	while (fgets(line, sizeof(line), f))
		n++;
	return n;
}

int cgroup_run_nprocs(const struct cgroup_run *cg)
{
	int a = count_procs(cg->v2), b = count_procs(cg->mem), c = count_procs(cg->pids);
	int d = count_procs(cg->kill);
	int m = a > b ? a : b;
	m = m > c ? m : c;
	return m > d ? m : d;
}

/* the last process may take a moment to leave after SIGKILL */
static int rmdir_retry(const char *dir)
{
	for (int t = 0; t < CG_RMDIR_TRIES; t++) {
		if (rmdir(dir) == 0 || errno == ENOENT)
			return 0;
		if (errno != EBUSY)
			return -errno;
		usleep(CG_RETRY_US);
	}
	return -EBUSY;
}

int cgroup_run_clone_fd(const struct cgroup_run *cg)
{
	const char *g = cg->v2[0] ? cg->v2 : cg->kill;
	int fd;
	if (!g[0])
		return -ENOENT;
	fd = open(g, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

int cgroup_run_join_self(const struct cgroup_run *cg, bool v2_done)
{
	/* v1: a single-threaded process moving itself through `tasks` skips the wait for the
	 * global threadgroup lock's grace period that moving another process costs */
	const struct {
		const char *dir, *file;
		bool skip;
	} g[] = {
		{ cg->v2, "cgroup.procs", v2_done },
		{ cg->kill, "cgroup.procs", v2_done || strcmp(cg->kill, cg->v2) == 0 },
		{ cg->mem, "tasks", false },
		{ cg->pids, "tasks", false },
	};
	int r;
	for (size_t i = 0; i < sizeof(g) / sizeof(g[0]); i++) {
		if (!g[i].dir[0] || g[i].skip)
			continue;
		if ((r = write_str(g[i].dir, g[i].file, "0")) < 0)
			return r;
	}
	return 0;
}

int cgroup_run_remove(struct cgroup_run *cg)
{
	char *groups[] = { cg->v2, cg->mem, cg->pids, cg->kill };
	int busy = 0;
	if (cgroup_run_nprocs(cg) > 0)
		cgroup_run_kill(cg);
	for (size_t i = 0; i < 4; i++) {
		if (!groups[i][0])
			continue;
		if (rmdir(groups[i]) < 0 && errno == EBUSY) {
			busy++;
			continue;
		}
		groups[i][0] = '\0'; /* gone, or an error a retry cannot mend */
	}
	return busy ? -EBUSY : 0;
}

void cgroup_run_destroy(struct cgroup_run *cg)
{
	char *groups[] = { cg->v2, cg->mem, cg->pids, cg->kill };
	if (cgroup_run_nprocs(cg) > 0)
		cgroup_run_kill(cg);
	for (size_t i = 0; i < 4; i++) {
		if (!groups[i][0])
			continue;
		rmdir_retry(groups[i]);
		groups[i][0] = '\0';
	}
}

/* ---- stale groups of this instance ------------------------------------------------------ */

/* The hierarchies a run's groups live in, in kill order: cgroup.kill (v2, atomic, catches
 * forks) first, then the v1 hierarchies, where the listed pids are killed until none is. */
struct cg_hier {
	const char *mount, *key;
};

static size_t hierarchies(struct cg_hier *ret)
{
	size_t n = 0;
	if (cgroup_detect() == CG_V2) {
		ret[n++] = (struct cg_hier){ CG_ROOT, "" };
		return n;
	}
	if (is_cgroup2(CG_UNIFIED))
		ret[n++] = (struct cg_hier){ CG_UNIFIED, "" };
	ret[n++] = (struct cg_hier){ CG_V1_MEM, "memory" };
	ret[n++] = (struct cg_hier){ CG_V1_PIDS, "pids" };
	return n;
}

/* Only names this launcher makes ("run_" and lowercase alphanumerics) are ever touched. */
static bool is_run_group(const char *name)
{
	if (strncmp(name, "run_", 4) != 0 || !name[4] || strlen(name) > CG_RUN_NAME_MAX)
		return false;
	for (const char *p = name + 4; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9')))
			return false;
	return true;
}

/* Empty a group whose launcher is gone (its jails may still run), then remove it. */
static int group_reap(const char *dir)
{
	bool v2 = write_str(dir, "cgroup.kill", "1") == 0;
	for (int i = 0; i < CG_RMDIR_TRIES; i++) {
		int n = v2 ? count_procs(dir) : kill_listed(dir);
		if (n <= 0)
			return rmdir_retry(dir);
		usleep(CG_RETRY_US);
	}
	return -EBUSY;
}

int cgroup_sweep(void)
{
	struct cg_hier h[3];
	size_t nh = hierarchies(h);
	int removed = 0, err = 0;

	if (geteuid() != 0)
		return 0; /* an unprivileged launcher never made a group */
	for (size_t i = 0; i < nh; i++) {
		char parent[PATH_MAX], dir[PATH_MAX + 32];
		_cleanup_closedir_ DIR *d = NULL;
		struct dirent *e;
		unsigned seen = 0;
		int r;
		if ((r = instance_parent(h[i].mount, h[i].key, parent, sizeof(parent))) < 0)
			return r;
		if (!(d = opendir(parent))) {
			if (errno != ENOENT)
				err = -errno;
			continue;
		}
		while ((e = readdir(d)) && seen++ < CG_SWEEP_MAX) {
			if (e->d_type != DT_DIR || !is_run_group(e->d_name))
				continue;
			snprintf(dir, sizeof(dir), "%s/%s", parent, e->d_name);
			if ((r = group_reap(dir)) < 0)
				err = r;
			else
				removed++;
		}
	}
	return err < 0 ? err : removed;
}

void cgroup_instance_release(void)
{
	struct cg_hier h[3];
	size_t nh = hierarchies(h);
	char parent[PATH_MAX];
	for (size_t i = 0; i < nh; i++)
		if (instance_parent(h[i].mount, h[i].key, parent, sizeof(parent)) == 0)
			rmdir(parent); /* EBUSY: a run group is left; the next start sweeps it */
}
