/* One interface for every way a run is isolated (DESIGN.md §5): bwrap, docker, and the
 * degraded/none path (plain sh -s). The runner and GET /profile only ever talk to a
 * backend through these operations, so the profile a user sees is built by the SAME
 * function that builds a run's command line. Fence builders stay in launcher/fence/;
 * backends call them. */
#ifndef SBX_BACKEND_H
#define SBX_BACKEND_H

#include <stdbool.h>
#include <sys/types.h>

#include "launcher.h"
#include "policy.h"

struct stage_plan;

/* Descriptors as the forked child sees them (bwrap --info-fd / --seccomp). */
#define BACKEND_CHILD_FD_INFO    3
#define BACKEND_CHILD_FD_SECCOMP 4
#define BACKEND_CHILD_FD_BLOCK   5 /* bwrap --block-fd of a jail built ahead */
#define BACKEND_CHILD_FD_READY   6 /* sbx-jail-init --ready-fd: the network fence is up */
#define BACKEND_CHILD_FD_NETSYNC 7 /* the leader tells the launcher its namespace is made */
#define BACKEND_CHILD_FD_NOTIFY  8 /* sbx-jail-init --notify-fd: tracing "syscalls" */
#define BACKEND_PATH             "/usr/local/bin:/usr/bin:/bin"
#define BACKEND_CONTAINER_MAX    (PROTO_ID_MAX + 8u) /* "sbx-<id>" */

/* What fences add to a run besides the backend's own argv: extra binds (bwrap argument
 * triples such as "--ro-bind SRC DST") and environment ("KEY=value"). Tracing and the
 * network fence fill these later; today they are empty. */
struct backend_fences {
	struct proto_strv binds;
	struct proto_strv env;
	/* the network fence (fence/netplan.h): the run's leader makes the jail's network
	 * namespace, and the jail waits on BACKEND_CHILD_FD_READY until it is connected */
	bool net_ready;
};

/* What prepare() builds for one run; released with backend_spawn_clear(). */
struct backend_spawn {
	struct proto_strv argv;       /* what the child execs */
	int seccomp_fd;               /* becomes BACKEND_CHILD_FD_SECCOMP, or -1 */
	int info_r, info_w;           /* bwrap --info-fd pipe (we read info_r), or -1 */
	bool engine_limits;           /* the runner's cgroups/rlimits apply (not in a container) */
	const char *syscalls;         /* the "syscalls=" limit reported, or NULL */
	struct stage_plan *stage;     /* bwrap as root: the staged mounts (fence/stage.h) */
	char *note;                   /* for the run's note (what could not be idmapped) */
	/* docker: create the container if it is missing, then exec the client */
	struct proto_strv docker_run;
	const char *docker;
	char container[BACKEND_CONTAINER_MAX];
};
void backend_spawn_clear(struct backend_spawn *sp);

/* What the forked child knows; child_setup() runs in it after its descriptors and rlimits
 * are in place and before it execs argv with envp (which it may replace). */
struct backend_child {
	const struct backend_spawn *sp;
	char *const *envp;
	const char *workdir;
	const char *code_name, *code;     /* the program file to write in .sbx/, or NULL */
	const char *stdin_name, *stdin_data;
	uid_t uid;                        /* the jail uid */
	bool drop;                        /* root: drop to uid before exec */
	uint32_t pids;                    /* RLIMIT_NPROC of the jail uid; 0 = leave it */
	/* the network fence (netrun.h): after the drop the leader makes the jail's network
	 * namespace and reports on net_sync (-1 = none) */
	int net_mode;                     /* enum net_mode */
	const struct proto_strv *net_allow;
	int net_sync;
};

struct backend_ops {
	enum isolation iso;
	/* GET /sandboxes/{id}/profile: kind, argv and a note of what else is enforced. */
	int (*profile)(struct launcher *L, const struct sandbox *s, struct msg_PROFILE_REP *ret);
	/* Build the argv and extra descriptors of one run. */
	int (*prepare)(struct launcher *L, const struct sandbox *s, const struct backend_fences *f,
	               struct backend_spawn *ret);
	/* In the forked child, first, still with the launcher's privileges and descriptors
	 * (NULL = nothing). Returns only on success (0); failures _exit. */
	int (*child_root)(struct backend_child *c);
	/* In the forked child. Returns only on success (0); failures _exit. */
	int (*child_setup)(struct backend_child *c);
	/* The interpreter each language runs with: "sh", "python3", "node" as paths or names. */
	const char *const *interpreters;
	/* At the deadline, besides signalling the run's groups (NULL = nothing more). */
	void (*on_deadline)(struct launcher *L, const struct sandbox *s);
	/* When the sandbox is deleted (NULL = nothing to clean). */
	void (*cleanup)(struct launcher *L, const struct sandbox *s);
};

/* The backend of an isolation; NULL for one this build cannot run (seatbelt on Linux). */
const struct backend_ops *backend_for(enum isolation iso);

extern const struct backend_ops backend_bwrap, backend_docker, backend_degraded;

/* ---- shared by the backends (backend.c) ---- */

/* The program (and stdin) files, written in .sbx/ of the current directory as whoever
 * runs this, never following a link; _exits 126 with a message on stderr on failure. */
void backend_child_write_files(const struct backend_child *c);
_Noreturn void backend_child_fail(const char *what);
/* The jail side of bwrap and degraded: drop, chdir to the workdir, write the files. */
int backend_jail_child_setup(struct backend_child *c);
/* sh, python3 and node by their host paths, indexed by enum proto_lang. */
extern const char *const backend_host_interpreters[];
/* Run argv detached (double fork) with a fixed PATH, so nobody has to reap it. */
void backend_spawn_detached(char *const argv[]);
/* Drop to the jail uid (verified, common/privdrop.c) and set NO_NEW_PRIVS; _exits. */
void backend_child_drop(const struct backend_child *c);

#endif
