/* The launcher's shared types: a sandbox's stored settings, a run request and its result,
 * and the few entry points that connect the modules (store, policy, runner, dispatch). */
#ifndef SBX_LAUNCHER_H
#define SBX_LAUNCHER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <event2/event.h>
#include <sqlite3.h>

#include "proto.h"

/* Limits on what a sandbox may ask for; each is checked by launcher validation and has a
 * test at and past it. */
#define SBX_TIMEOUT_MS_DEFAULT    30000u
#define SBX_TIMEOUT_MS_MAX        PROTO_RUN_TIMEOUT_MS_MAX /* one hour; the API waits this long */
#define SBX_MEMORY_MB_DEFAULT     512u
#define SBX_MEMORY_MB_MAX         65536u
#define SBX_PIDS_DEFAULT          256u
#define SBX_PIDS_MAX              32768u
#define SBX_OUTPUT_BYTES_DEFAULT  (1024u * 1024u)
#define SBX_OUTPUT_BYTES_MAX      (64u * 1024u * 1024u)
/* the workdir is its own ext4 image of diskMb MiB (launcher/disk.c); the data dir's
 * filesystem keeps SBX_DISK_RESERVE_MB free beyond all images, for the database */
#define SBX_DISK_MB_DEFAULT       256u
#define SBX_DISK_MB_MIN           8u /* smaller images hold little beyond ext4's own metadata */
#define SBX_DISK_MB_MAX           16384u /* 16 GiB */
#define SBX_DISK_RESERVE_MB       256u
#define SBX_STORED_OUTPUT_MAX     (256u * 1024u) /* per stream, kept in the database */
#define SBX_JAIL_UID_BASE         200000u /* reserved host uid range for jails, when root */
#define SBX_JAIL_UID_COUNT        65536u
#define SBX_CONCURRENT_RUNS_MAX   64u
#define SBX_SANDBOXES_MAX         10000u

enum fs_mode { FS_STRICT = 0, FS_ALLOWLIST, FS_OPEN };

/* A sandbox's stored settings: one member per line of SBX_FIELDS (proto/sbx_fields.h),
 * typed by its kind; mounts are kept as three parallel lists, the shape the fence
 * builders (bwrap, docker, seatbelt) walk. */
#define SBX_SMEMBER_STR(m)  char *m;
#define SBX_SMEMBER_ENUM(m) uint32_t m;
#define SBX_SMEMBER_BOOL(m) bool m;
#define SBX_SMEMBER_U32(m)  uint32_t m;
#define SBX_SMEMBER_U64(m)  uint64_t m;
#define SBX_SMEMBER_STRV(m) struct proto_strv m;
#define SBX_SMEMBER_U32V(m) struct proto_u32v m;
#define SBX_SMEMBER_MNTV(m) struct proto_strv m##_sources, m##_targets; struct proto_u32v m##_ro;
#define SBX_SMEMBER_LEAF_(A, B, sep, cname, smember, kind, json, jkind, column, limit, max, dflt,   \
                          schema, bit)                                                             \
	SBX_SMEMBER_##kind(smember)
#define SBX_SMEMBER_GROUP_(X, A, B, sep, json, MEMBERS, bit) MEMBERS(X, A, B)

struct sandbox {
	char id[PROTO_ID_MAX + 1];
	SBX_FIELDS(SBX_SMEMBER_LEAF_, SBX_SMEMBER_GROUP_, _, _)
	enum fs_mode fs_mode; /* parsed from fs_mode_raw; an unknown value is FS_STRICT */
	char *workdir;
	uint32_t jail_uid; /* host uid (and gid) jails of this sandbox run as, when root */
	uint64_t created_at;
};
void sandbox_clear(struct sandbox *s);

/* What the machine has for the network fence (launcher/fence/netplan.h). */
struct net_machine {
	bool pasta;       /* pasta installed and, once probed, able to attach */
	bool jail_init;   /* sbx-jail-init next to the launcher */
	bool net_proc;    /* sbx-net next to the launcher */
	int landlock_abi; /* 0 = none; 4+ has TCP port rules */
};

struct netproc;

/* What the launcher knows about itself, shared by every module. */
struct launcher {
	struct event_base *base;
	sqlite3 *db;
	char *data_dir;
	char *sandboxes_dir; /* <data>/sandboxes */
	bool root;           /* running as uid 0: jails get their own unprivileged uid */
	struct proto_chan *sbxd; /* events to sbxd (PGRP_ADD/DEL) */
	struct proto_chan *api;
	char *bwrap_path;    /* NULL when bwrap is absent: the degraded backend */
	char *docker_path;   /* --docker: the client to probe; NULL = search the usual places */
	unsigned live_runs;
	bool disk_images;     /* limits.diskMb is enforced by workdir images (disk.c) */
	const char *disk_why; /* why not, when not */
	/* the network fence (launcher/fence/netplan.h, DESIGN.md §9) */
	char *jail_init_path; /* sbx-jail-init next to this binary; NULL when missing */
	char *net_path;       /* sbx-net next to this binary; NULL when missing */
	char *pasta_path;     /* pasta found on the usual paths; NULL when missing */
	char *hosts_file;     /* sbxd --hosts: the proxy resolves these names first */
	char api_host[64];    /* the API's listen address (sbxd --listen), "" if not told */
	uint16_t api_port;    /* its port: never a sandbox's loopback port */
	int landlock_abi;     /* 0 = no Landlock */
	struct net_machine net; /* kept current by main.c and the caps probe */
	struct netproc *netproc; /* sbx-net, started at the first proxy run */
	char *resolv_conf;    /* <data>/net/resolv.conf: the proxy resolver, for proxy.allow */
};

/* A run's output as it arrives, the part kept under limits.outputBytes: the hook that
 * streaming over the wire (run_stream.c) and detached runs plug into. */
struct run;
enum run_stream { RUN_STDOUT = 1, RUN_STDERR = 2 };
typedef void (*run_output_fn)(struct run *run, enum run_stream stream, const char *data,
                              size_t len, void *arg);

struct run_result;
/* A detached run's program was released: res holds its id and what is known so far. */
typedef void (*run_started_fn)(const struct run_result *res, void *arg);

struct run_request {
	char sandbox_id[PROTO_ID_MAX + 1]; /* "" for EXEC = the default sandbox "shell" */
	uint32_t language;                 /* enum proto_lang */
	const char *code;
	const char *stdin_data;
	uint32_t timeout_ms; /* 0 = the sandbox's limit */
	uint32_t entrance;   /* enum proto_entrance */
	bool is_exec;        /* the execShell entrance (POST /exec, sbx_exec) */
	run_output_fn on_output; /* NULL = collect only */
	void *on_output_arg;
	run_started_fn on_started; /* detach: called once the program runs, before done */
	void *on_started_arg;
	/* a supervised app (launcher/apps.h): no deadline and no CPU limit, every byte of
	 * output goes to on_output and none is kept, the end is not recorded in the history */
	bool app;
	const char *home;      /* HOME for the program; NULL: the workdir */
	int stop_signal;       /* a kill's first signal; 0: SIGTERM */
	uint32_t stop_wait_ms; /* SIGKILL this long after it; 0: RUNNER_KILL_GRACE_MS */
};

struct run_result {
	char id[PROTO_ID_MAX + 1];
	char sandbox_id[PROTO_ID_MAX + 1];
	uint32_t language, entrance;
	bool has_exit_code;
	uint32_t exit_code, signal;
	bool timed_out;
	char *out, *err; /* captured, capped at the sandbox's outputBytes */
	size_t out_len, err_len;
	bool out_truncated, err_truncated;
	uint64_t duration_ms, created_at;
	const char *isolation; /* "bwrap" | "degraded" | "none" | ... (static string) */
	struct proto_strv limits; /* "memory=cgroup-v1", ... */
	char *note;
	struct proto_strv refused; /* network refusals, "KIND PORT AT_MS HOST" (RUN_REP) */
	bool running; /* a snapshot of a live run: no exit status yet, the output so far */
	int64_t trace_start, trace_end; /* the run's events in its sandbox's trace log, -1: none */
	char *trace; /* RUN_REP: the run's trace lines (launcher/trace.h), or NULL */
	size_t trace_len;
};
void run_result_clear(struct run_result *r);

/* Completion of run_code(): err is 0 and res filled, or a PERR_* with a message. The
 * result (and its strings) belong to the caller of the callback only during the call. */
typedef void (*run_done_fn)(int err, const char *message, struct run_result *res, void *arg);

/* THE gate (launcher/policy.c): every execution from every entrance goes through here
 * (DESIGN.md §6). It checks the ExecPolicy, resolves the sandbox, decides the isolation
 * and hands the run to the runner, which builds the fence anew from the stored settings,
 * spawns, enforces the deadline, records the run and calls done exactly once (possibly
 * before returning, for refusals). Returns 0 or -errno only for programming errors;
 * refusals are reported through done. */
int run_code(struct launcher *L, const struct run_request *req, run_done_fn done, void *arg);

/* The fence the next run of s would get, for GET /sandboxes/{id}/profile, built by the
 * same backend function a run uses (launcher/backend/): kind ("bwrap" | "degraded" |
 * "docker"), the argv (descriptor numbers as the child sees them), and a note of what is
 * enforced besides the argv. Returns 0 or -errno. */
int run_profile(struct launcher *L, const struct sandbox *s, struct msg_PROFILE_REP *ret);

/* What a deleted sandbox leaves to its backend (docker: rm -f its container), without
 * waiting for it. */
void run_sandbox_cleanup(struct launcher *L, const struct sandbox *s);

/* The daemon user's home (password database; sbxd gives its children no $HOME), or NULL.
 * launcher/home.c */
const char *launcher_home_dir(void);
/* No network and no ports: the jail's seccomp filter also refuses AF_INET/6/PACKET. */
bool sandbox_denies_inet(const struct sandbox *s);

/* SIGKILL every live run at once (launcher shutdown or a lost sbxd; the API channel
 * going away is NOT a reason). */
void runner_kill_all(struct launcher *L);
/* After the event loop: kill every run, answer its caller with an error and free it, so
 * its cgroups are removed before the launcher exits. */
void runner_stop_all(struct launcher *L);

#endif
