/* The message set of the sbx wire protocol: the one definition of every message.
 *
 * Each message is a line of PROTO_MESSAGES(X):
 *     X(NAME, number, fd policy, allowed senders, FIELDS-macro)
 * and each FIELDS-macro lists its payload as F(S, kind, name, limit), where S is the
 * struct being described (passed through so offsetof can name it). From this one file
 * proto.h derives the C structs, and proto.c derives encode, decode, validation and
 * log printing. Requests have even numbers, replies odd. Bump PROTO_VERSION whenever
 * anything here changes.
 *
 * Field kinds and what `limit` means for them:
 *   U32, U64, BOOL   limit unused (0)        BOOL must be 0 or 1 on the wire
 *   ENUM             largest valid value     one byte on the wire
 *   STR              maximum length, bytes   u32 length, bytes, one NUL; no NUL inside
 *   STRV             maximum count           u32 count, then that many STR (each <= PROTO_STR_MAX)
 *   U32V             maximum count           u32 count, then that many u32
 *   BYTES            maximum length, bytes   u32 length, then that many bytes (NUL allowed)
 *   MNTV             maximum count           u32 count, then per mount: STR source, STR
 *                                            target (each <= SBX_MOUNT_STR_MAX), BOOL read_only
 */
#ifndef SBX_PROTO_MSGS_H
#define SBX_PROTO_MSGS_H

#define PROTO_VERSION 7 /* 2: mounts travel as MNTV in the sandbox spec; 3: streams, run input by memfd;
                          4: limits.diskMb, PERR_INSUFFICIENT_STORAGE; 5: proxy, run refusals;
                          6: detached runs, processes, kill, files, trace, metrics; 7: apps, schedules */

/* Limits, each a named constant with a test at and past it (tests/unit/test_proto.c). */
#define PROTO_MSG_MAX    65536u /* whole packet, header included */
#define PROTO_STR_MAX    4096u  /* a generic string field */
#define PROTO_ID_MAX     64u    /* sandbox / run ids */
#define PROTO_NAME_MAX   128u   /* sandbox names */
#define PROTO_CODE_MAX   60000u /* program text carried inline in RUN / EXEC */

/* A run's input and output, the same limit for both processes. Code and stdin that do
 * not fit inline travel in a sealed memfd; output travels in a memfd (RUN_REP) and, when
 * asked for, as a stream while the run goes on. */
#define PROTO_RUN_CODE_MAX   (1u << 20)  /* bytes of program text: 413 past this */
#define PROTO_RUN_STDIN_MAX  (1u << 20)  /* bytes of stdin: 413 past this */
#define PROTO_RUN_OUTPUT_MAX (64u << 20) /* bytes kept per output stream (limits.outputBytes) */
#define PROTO_RUN_TIMEOUT_MS_MAX 3600000u /* the longest run deadline (limits.timeoutMs) */
/* How long sbx-api waits for the answer to any other request (sbxd --call-deadline) */
#define PROTO_CALL_DEADLINE_S_DEFAULT 60u
#define PROTO_CALL_DEADLINE_S_MAX     3600u
#define PROTO_LIST_MAX   256u   /* entries of a STRV / U32V */
#define PROTO_REFUSED_MAX 64u   /* network refusals reported per run */
#define PROTO_TEXT_MAX   60000u /* profile text */
#define PROTO_CMDLINE_MAX 1024u /* a process's command line as listed (longer ones are cut) */
#define PROTO_NS_MAX      8u    /* namespace kinds a process may differ in */
/* The files API (FILE_OP): one read or one write moves at most PROTO_FILE_MAX bytes (a
 * larger file is read in ranges); a listing names at most PROTO_FILE_LIST_MAX entries. */
#define PROTO_FILE_MAX      (8u << 20)
#define PROTO_FILE_LIST_MAX 10000u
/* Trace lines (launcher/trace.h): a run's result carries at most PROTO_RUN_TRACE_MAX bytes
 * of them, one trace request at most PROTO_TRACE_READ_MAX. */
#define PROTO_RUN_TRACE_MAX  (1u << 20)
#define PROTO_TRACE_READ_MAX (4u << 20)

/* Streams (proto_stream.h): data larger than a packet, or data that arrives over time,
 * travels as numbered chunks of one stream; at most PROTO_STREAM_WINDOW chunks are in
 * flight unacknowledged, so a fast producer waits instead of growing a queue. */
#define PROTO_STREAM_CHUNK_MAX 32768u /* data bytes in one STREAM_DATA */
#define PROTO_STREAM_WINDOW    8u     /* chunks sent and not yet acknowledged */

/* Process roles: allowed-sender bitmasks in the dispatch tables. */
#define ROLE_SBXD     0x1u
#define ROLE_LAUNCHER 0x2u
#define ROLE_API      0x4u

/* ERROR codes; the API maps them onto HTTP statuses and DESIGN.md §7 code names. */
enum proto_err {
	PERR_INVALID_ARGUMENT = 1,
	PERR_NOT_FOUND,
	PERR_CONFLICT,
	PERR_FORBIDDEN,
	PERR_POLICY_REFUSED,
	PERR_PAYLOAD_TOO_LARGE,
	PERR_ENGINE_UNAVAILABLE,
	PERR_INTERNAL,
	PERR_INSUFFICIENT_STORAGE, /* no disk room for a sandbox's image or a run's record */
	PERR_MAX_ = PERR_INSUFFICIENT_STORAGE
};

enum proto_lang { LANG_SH = 0, LANG_PYTHON, LANG_NODE, LANG_MAX_ = LANG_NODE };
enum proto_entrance {
	ENTRANCE_REST = 0,
	ENTRANCE_MCP,
	ENTRANCE_REPL,
	ENTRANCE_SCHEDULER,
	ENTRANCE_MAX_ = ENTRANCE_SCHEDULER
};
enum proto_file_op { FOP_LIST = 0, FOP_READ, FOP_WRITE, FOP_DELETE, FOP_MKDIR, FOP_MAX_ = FOP_MKDIR };
enum proto_backend { BACKEND_DIRECT = 0, BACKEND_DOCKER, BACKEND_MAX_ = BACKEND_DOCKER };
/* What a stream chunk carries: a run's stdout or stderr, or plain data (files, logs). */
enum proto_stream_chan {
	STREAM_STDOUT = 0,
	STREAM_STDERR,
	STREAM_DATA,
	STREAM_CHAN_MAX_ = STREAM_DATA
};

/* The sandbox's settings: SBX_SPEC_FIELDS and the SBXF_* bits derive from it. */
#include "sbx_fields.h"

/* fd policies */
#define PROTO_FD_NONE     0
#define PROTO_FD_REQUIRED 1
#define PROTO_FD_OPTIONAL 2

/* ---- payloads ---------------------------------------------------------------- */

#define MSG_EMPTY_FIELDS(F, S)

#define MSG_ERROR_FIELDS(F, S)                                                                        \
	F(S, ENUM, code, PERR_MAX_)                                                                   \
	F(S, STR, message, PROTO_STR_MAX)

#define MSG_HELLO_FIELDS(F, S)                                                                        \
	F(S, U32, version, 0)                                                                         \
	F(S, ENUM, role, ROLE_API)                                                                    \
	F(S, STR, build_id, PROTO_NAME_MAX)

/* sbxd -> child: the channel to the other child (the fd), after either restarts. */
#define MSG_PEER_FD_FIELDS(F, S) F(S, ENUM, role, ROLE_API)

/* launcher -> sbxd events: a process group the launcher started / one that ended.
 * jail_pid is the jail's own first process (bwrap --info-fd), which sits in a group of
 * its own because of --new-session; 0 when not (yet) known. */
#define MSG_PGRP_ADD_FIELDS(F, S)                                                                     \
	F(S, U32, pgid, 0)                                                                            \
	F(S, U32, jail_pid, 0)                                                                        \
	F(S, STR, sandbox_id, PROTO_ID_MAX)                                                           \
	F(S, STR, run_id, PROTO_ID_MAX)                                                               \
	F(S, STR, cgroup, PROTO_STR_MAX)
#define MSG_PGRP_DEL_FIELDS(F, S) F(S, U32, pgid, 0)

/* api -> sbxd: process states for /health. */
#define MSG_STATUS_REP_FIELDS(F, S)                                                                   \
	F(S, U32, sbxd_pid, 0)                                                                        \
	F(S, U32, launcher_pid, 0)                                                                    \
	F(S, U32, api_pid, 0)                                                                         \
	F(S, U32, launcher_restarts, 0)                                                               \
	F(S, U32, api_restarts, 0)                                                                    \
	F(S, U64, started_at, 0)                                                                      \
	F(S, U32, live_groups, 0)

#define MSG_HEALTH_REP_FIELDS(F, S)                                                                   \
	F(S, STR, isolation, PROTO_NAME_MAX)                                                          \
	F(S, STR, bwrap_version, PROTO_NAME_MAX)                                                      \
	F(S, BOOL, launcher_root, 0)                                                                  \
	F(S, U32, jail_uid_base, 0)                                                                   \
	F(S, STR, db_path, PROTO_STR_MAX)                                                             \
	F(S, U32, schema_version, 0)                                                                  \
	F(S, U32, live_runs, 0)                                                                       \
	F(S, STR, note, PROTO_STR_MAX)

#define MSG_CAPS_REQ_FIELDS(F, S) F(S, BOOL, recheck, 0)
#define MSG_CAPS_REP_FIELDS(F, S)                                                                     \
	F(S, STR, direct_backend, PROTO_NAME_MAX) /* bwrap | seatbelt | degraded */                  \
	F(S, BOOL, direct_ok, 0)                                                                      \
	F(S, STR, direct_reason, PROTO_STR_MAX)                                                       \
	F(S, STR, bwrap_version, PROTO_NAME_MAX)                                                      \
	F(S, U32, landlock_abi, 0)                                                                    \
	F(S, BOOL, seccomp, 0)                                                                        \
	F(S, BOOL, seccomp_notify, 0)                                                                 \
	F(S, BOOL, pasta, 0)                                                                          \
	F(S, STR, cgroup, PROTO_NAME_MAX) /* v2 | v1 | none */                                        \
	F(S, BOOL, docker_ok, 0)                                                                      \
	F(S, STR, docker_reason, PROTO_STR_MAX)                                                       \
	F(S, U64, direct_probed_at, 0)                                                                \
	F(S, U64, docker_probed_at, 0)                                                                \
	F(S, STRV, net_fences, 8) /* none | ports | ports-unrestricted | network | proxy */        \
	F(S, STR, net_note, PROTO_STR_MAX)

#define MSG_POLICY_FIELDS(F, S)                                                                       \
	F(S, BOOL, exec_shell, 0)                                                                     \
	F(S, BOOL, scheduler_script, 0)                                                               \
	F(S, BOOL, run_python, 0)                                                                     \
	F(S, BOOL, run_node, 0)

/* The settings of a sandbox, shared by create, update and the reply: SBX_SPEC_FIELDS comes
 * from sbx_fields.h. fs_mode travels as the client's string so the launcher itself decides
 * (unknown -> strict, reported). */
#define MSG_SBX_CREATE_FIELDS(F, S) SBX_SPEC_FIELDS(F, S)
#define MSG_SBX_UPDATE_FIELDS(F, S)                                                                   \
	F(S, STR, id, PROTO_ID_MAX)                                                                   \
	F(S, U32, set_mask, 0)                                                                        \
	SBX_SPEC_FIELDS(F, S)
#define MSG_SBX_ID_FIELDS(F, S) F(S, STR, id, PROTO_ID_MAX)
#define MSG_SBX_REP_FIELDS(F, S)                                                                      \
	F(S, STR, id, PROTO_ID_MAX)                                                                   \
	SBX_SPEC_FIELDS(F, S)                                                                       \
	F(S, STR, workdir, PROTO_STR_MAX)                                                             \
	F(S, U64, created_at, 0)                                                                      \
	F(S, STR, note, PROTO_STR_MAX)
#define MSG_LIST_END_FIELDS(F, S) F(S, U32, count, 0)
#define MSG_OK_FIELDS(F, S)       F(S, STR, id, PROTO_ID_MAX)

/* code and stdin_data travel inline when they fit one packet; otherwise both are "" and
 * the attached fd is a sealed memfd holding code_len bytes of code then stdin_len bytes of
 * stdin. stream != 0 asks for the output as STREAM_DATA chunks of that stream id (the
 * request's own id) while the run goes on; the RUN_REP still comes at the end. detach: the
 * RUN_REP (running) comes as soon as the program runs; the run keeps its deadline and
 * limits, is recorded when it ends, and RUN_GET shows it meanwhile. */
#define MSG_RUN_FIELDS(F, S)                                                                          \
	F(S, STR, sandbox_id, PROTO_ID_MAX)                                                           \
	F(S, ENUM, language, LANG_MAX_)                                                               \
	F(S, STR, code, PROTO_CODE_MAX)                                                               \
	F(S, STR, stdin_data, PROTO_CODE_MAX)                                                         \
	F(S, U64, code_len, 0)                                                                        \
	F(S, U64, stdin_len, 0)                                                                       \
	F(S, U32, timeout_ms, 0)                                                                      \
	F(S, ENUM, entrance, ENTRANCE_MAX_)                                                           \
	F(S, U32, stream, 0)                                                                          \
	F(S, BOOL, detach, 0)
/* sandbox_id "" = the default sandbox named "shell". */
#define MSG_EXEC_FIELDS(F, S)                                                                         \
	F(S, STR, sandbox_id, PROTO_ID_MAX)                                                           \
	F(S, STR, code, PROTO_CODE_MAX)                                                               \
	F(S, U64, code_len, 0)                                                                        \
	F(S, U32, timeout_ms, 0)                                                                      \
	F(S, ENUM, entrance, ENTRANCE_MAX_)                                                           \
	F(S, U32, stream, 0)
#define MSG_RUNS_LIST_FIELDS(F, S)                                                                    \
	F(S, STR, sandbox_id, PROTO_ID_MAX)                                                           \
	F(S, U32, limit, 0)
/* stream != 0 (the request's own id) follows a live run: its output so far and then as it
 * comes, as STREAM_DATA chunks, and the RUN_REP when the run ends; a run that has ended
 * answers at once. */
#define MSG_RUN_GET_FIELDS(F, S)                                                                      \
	F(S, STR, sandbox_id, PROTO_ID_MAX)                                                           \
	F(S, STR, run_id, PROTO_ID_MAX)                                                               \
	F(S, U32, stream, 0)

/* A run's result. When an fd is attached it is a memfd holding stdout_len bytes of
 * stdout followed by stderr_len bytes of stderr (outputs can exceed one packet), then
 * trace_len bytes of the run's trace lines (launcher/trace.h: "RUN_ID ARRIVAL_MS JSON\n").
 * limits: "memory=cgroup-v1", "pids=rlimit", ... what was actually enforced.
 * refused: the network refusals the engine saw, each "KIND PORT AT_MS HOST" (KIND lookup |
 * connect; HOST a name or an address), at most PROTO_REFUSED_MAX. */
#define MSG_RUN_REP_FIELDS(F, S)                                                                      \
	F(S, STR, id, PROTO_ID_MAX)                                                                   \
	F(S, STR, sandbox_id, PROTO_ID_MAX)                                                           \
	F(S, ENUM, language, LANG_MAX_)                                                               \
	F(S, ENUM, entrance, ENTRANCE_MAX_)                                                           \
	F(S, BOOL, has_exit_code, 0)                                                                  \
	F(S, U32, exit_code, 0)                                                                       \
	F(S, U32, signal, 0)                                                                          \
	F(S, BOOL, timed_out, 0)                                                                      \
	F(S, U64, stdout_len, 0)                                                                      \
	F(S, U64, stderr_len, 0)                                                                      \
	F(S, BOOL, stdout_truncated, 0)                                                               \
	F(S, BOOL, stderr_truncated, 0)                                                               \
	F(S, U64, duration_ms, 0)                                                                     \
	F(S, STR, isolation, PROTO_NAME_MAX)                                                          \
	F(S, U64, created_at, 0)                                                                      \
	F(S, STRV, limits, PROTO_LIST_MAX)                                                            \
	F(S, STR, note, PROTO_STR_MAX)                                                                \
	F(S, STRV, refused, PROTO_REFUSED_MAX)                                                        \
	F(S, BOOL, running, 0)                                                                        \
	F(S, U64, trace_len, 0)

#define MSG_MOUNT_ADD_FIELDS(F, S)                                                                    \
	F(S, STR, sandbox_id, PROTO_ID_MAX)                                                           \
	F(S, STR, source, PROTO_STR_MAX)                                                              \
	F(S, STR, target, PROTO_STR_MAX)                                                              \
	F(S, BOOL, read_only, 0)
#define MSG_MOUNT_DEL_FIELDS(F, S)                                                                    \
	F(S, STR, sandbox_id, PROTO_ID_MAX)                                                           \
	F(S, STR, target, PROTO_STR_MAX)
#define MSG_PROFILE_REP_FIELDS(F, S)                                                                  \
	F(S, STR, kind, PROTO_NAME_MAX) /* bwrap | seatbelt | docker | degraded */                   \
	F(S, STRV, argv, PROTO_LIST_MAX)                                                              \
	F(S, STR, text, PROTO_TEXT_MAX)                                                               \
	F(S, STR, note, PROTO_STR_MAX)

/* One live process of a sandbox (PS_REQ answers one per process, then LIST_END), read from
 * /proc by the launcher: what the process actually got from the kernel. cpu and mem are
 * per mille (of one CPU over its lifetime; of the machine's memory). seccomp: 0 off,
 * 1 strict, 2 filter. namespaces: the kinds ("pid", "net", ...) that differ from sbxd's. */
#define MSG_PROC_REP_FIELDS(F, S)                                                                     \
	F(S, U32, pid, 0)                                                                             \
	F(S, U32, ppid, 0)                                                                            \
	F(S, U32, pgid, 0)                                                                            \
	F(S, STR, run_id, PROTO_ID_MAX)                                                               \
	F(S, U32, cpu_permille, 0)                                                                    \
	F(S, U32, mem_permille, 0)                                                                    \
	F(S, U64, rss_kb, 0)                                                                          \
	F(S, U64, elapsed_ms, 0)                                                                      \
	F(S, STR, comm, PROTO_NAME_MAX)                                                               \
	F(S, STR, cmdline, PROTO_CMDLINE_MAX)                                                         \
	F(S, U32, uid, 0)                                                                             \
	F(S, U32, gid, 0)                                                                             \
	F(S, BOOL, no_new_privs, 0)                                                                   \
	F(S, U32, seccomp, 0)                                                                         \
	F(S, STR, cap_eff, PROTO_NAME_MAX)                                                            \
	F(S, STRV, namespaces, PROTO_NS_MAX)                                                          \
	F(S, STR, cgroup, PROTO_STR_MAX)
/* Signal processes of a sandbox: exactly one of pid, pgid, run_id, or all. signal 0 = the
 * default (SIGTERM for pid and pgid; a run and all end by the run's own kill: SIGTERM,
 * SIGKILL after the grace). Anything the engine did not start for that sandbox: FORBIDDEN. */
#define MSG_KILL_FIELDS(F, S)                                                                         \
	F(S, STR, sandbox_id, PROTO_ID_MAX)                                                           \
	F(S, U32, pid, 0)                                                                             \
	F(S, U32, pgid, 0)                                                                            \
	F(S, STR, run_id, PROTO_ID_MAX)                                                               \
	F(S, BOOL, all, 0)                                                                            \
	F(S, U32, signal, 0)
#define MSG_KILL_REP_FIELDS(F, S)                                                                     \
	F(S, U32, signal, 0)                                                                          \
	F(S, U32V, pids, PROTO_LIST_MAX)                                                              \
	F(S, STRV, runs, PROTO_LIST_MAX)

/* A file operation inside a sandbox's workdir and its mounts (launcher/files.h). path is
 * relative to the workdir ("" = the workdir itself). READ: offset and length (0 = the whole
 * file, which must fit one read; UINT64_MAX = to the end), or suffix (the last suffix
 * bytes); a range longer than PROTO_FILE_MAX is answered with its first PROTO_FILE_MAX. WRITE: the fd
 * is a sealed memfd of exactly size bytes (at most PROTO_FILE_MAX), put in place
 * atomically; parents creates missing directories (also for MKDIR). DELETE: recursive
 * removes a directory with its contents. */
#define MSG_FILE_OP_FIELDS(F, S)                                                                      \
	F(S, STR, sandbox_id, PROTO_ID_MAX)                                                           \
	F(S, ENUM, op, FOP_MAX_)                                                                      \
	F(S, STR, path, PROTO_STR_MAX)                                                                \
	F(S, U64, offset, 0)                                                                          \
	F(S, U64, length, 0)                                                                          \
	F(S, U64, suffix, 0)                                                                          \
	F(S, U64, size, 0)                                                                            \
	F(S, BOOL, parents, 0)                                                                        \
	F(S, BOOL, recursive, 0)
/* What the operation found or did: type "file" | "dir" | "symlink" | "other". READ: the fd
 * is a memfd of length bytes starting at offset, total is the file's size; LIST: the fd
 * holds count entries, each "T SIZE MODE MTIME NAME\0" (T: f d l o; MODE octal). */
#define MSG_FILE_REP_FIELDS(F, S)                                                                     \
	F(S, STR, path, PROTO_STR_MAX)                                                                \
	F(S, STR, type, PROTO_NAME_MAX)                                                               \
	F(S, U64, total, 0)                                                                           \
	F(S, U64, offset, 0)                                                                          \
	F(S, U64, length, 0)                                                                          \
	F(S, U32, mode, 0)                                                                            \
	F(S, U64, mtime, 0)                                                                           \
	F(S, U32, count, 0)                                                                           \
	F(S, BOOL, truncated, 0)

/* A sandbox's trace lines (launcher/trace.h), of one run (run_id) or all, arrived at or
 * after since_ms; the reply's fd is a memfd of length bytes of lines. */
#define MSG_TRACE_GET_FIELDS(F, S)                                                                    \
	F(S, STR, sandbox_id, PROTO_ID_MAX)                                                           \
	F(S, STR, run_id, PROTO_ID_MAX)                                                               \
	F(S, U64, since_ms, 0)
#define MSG_TRACE_REP_FIELDS(F, S)                                                                    \
	F(S, U64, length, 0)                                                                          \
	F(S, BOOL, tracing, 0)                                                                        \
	F(S, BOOL, truncated, 0)

/* GET /metrics, the launcher's half: runs by outcome since it started, and their duration
 * as a histogram (PROTO_RUN_BUCKETS_MS upper bounds; counts per bucket, not cumulative). */
#define PROTO_RUN_BUCKETS_MS { 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000, 60000 }
#define PROTO_RUN_BUCKETS_N  12u
#define MSG_METRICS_REP_FIELDS(F, S)                                                                  \
	F(S, U64, runs_exited, 0)                                                                     \
	F(S, U64, runs_signaled, 0)                                                                   \
	F(S, U64, runs_timed_out, 0)                                                                  \
	F(S, U64, runs_failed, 0)                                                                     \
	F(S, U32V, duration_buckets, PROTO_RUN_BUCKETS_N + 1)                                         \
	F(S, U64, duration_sum_ms, 0)                                                                 \
	F(S, U32, live_runs, 0)                                                                       \
	F(S, U32V, apps_by_state, APP_STATE_MAX_ + 1) /* by enum proto_app_state */

/* Apps (launcher/apps.h, DESIGN.md §11): long-lived jailed programs under supervision.
 * An app's fence is a sandbox of its own named "app:NAME", created with the app; its
 * workdir is the app's installation directory. APP_PUT creates (create = true) or
 * updates an app: app_mask says which app members it carries (APPF_*), set_mask which
 * fence members (SBXF_*). States and restart rules are supervisord's. */
#define PROTO_APP_NAME_MAX  64u    /* [a-z0-9][a-z0-9_.-]* */
#define PROTO_APP_CMD_MAX   16384u /* bytes of an app's command */
#define PROTO_APP_LOG_MAX   (4u << 20) /* bytes of log one APP_LOG answers */
enum proto_app_state { APP_STOPPED = 0, APP_STARTING, APP_RUNNING, APP_BACKOFF, APP_STOPPING,
	               APP_EXITED, APP_FATAL, APP_STATE_MAX_ = APP_FATAL };
enum proto_app_restart { APP_RESTART_NEVER = 0, APP_RESTART_ALWAYS, APP_RESTART_UNEXPECTED,
	                 APP_RESTART_MAX_ = APP_RESTART_UNEXPECTED };
enum proto_app_op { APP_OP_START = 0, APP_OP_STOP, APP_OP_RESTART, APP_OP_MAX_ = APP_OP_RESTART };
enum proto_app_bit {
	APPF_COMMAND = 1u << 0, APPF_PORT = 1u << 1, APPF_AUTOSTART = 1u << 2,
	APPF_AUTORESTART = 1u << 3, APPF_STARTSECS = 1u << 4, APPF_STARTRETRIES = 1u << 5,
	APPF_EXITCODES = 1u << 6, APPF_STOPSIGNAL = 1u << 7, APPF_STOPWAITSECS = 1u << 8,
	APPF_ALL_ = (1u << 9) - 1
};
#define MSG_APP_PUT_FIELDS(F, S)                                                                      \
	F(S, STR, app, PROTO_APP_NAME_MAX)                                                            \
	F(S, BOOL, create, 0)                                                                         \
	F(S, U32, app_mask, 0)                                                                        \
	F(S, STR, command, PROTO_APP_CMD_MAX)                                                         \
	F(S, U32, port, 0)                                                                            \
	F(S, BOOL, autostart, 0)                                                                      \
	F(S, ENUM, autorestart, APP_RESTART_MAX_)                                                     \
	F(S, U32, startsecs, 0)                                                                       \
	F(S, U32, startretries, 0)                                                                    \
	F(S, U32V, exitcodes, PROTO_LIST_MAX)                                                         \
	F(S, U32, stopsignal, 0)                                                                      \
	F(S, U32, stopwaitsecs, 0)                                                                    \
	F(S, U32, set_mask, 0)                                                                        \
	SBX_SPEC_FIELDS(F, S)
#define MSG_APP_NAME_FIELDS(F, S) F(S, STR, app, PROTO_APP_NAME_MAX)
#define MSG_APP_CTL_FIELDS(F, S)                                                                      \
	F(S, STR, app, PROTO_APP_NAME_MAX)                                                            \
	F(S, ENUM, op, APP_OP_MAX_)
/* An app as it stands. start_s / stop_s: unix times of the last start and stop (0: never);
 * exit_status: of the last exit (has_exit false: none, or ended by a signal). The
 * confinement block is read from /proc for the running process (checked = true): what
 * the kernel gave it, not what the settings say. listening: its TCP ports. */
#define MSG_APP_REP_FIELDS(F, S)                                                                      \
	F(S, STR, app, PROTO_APP_NAME_MAX)                                                            \
	F(S, STR, sandbox_id, PROTO_ID_MAX)                                                           \
	F(S, STR, command, PROTO_APP_CMD_MAX)                                                         \
	F(S, U32, port, 0)                                                                            \
	F(S, STR, dir, PROTO_STR_MAX)                                                                 \
	F(S, BOOL, autostart, 0)                                                                      \
	F(S, ENUM, autorestart, APP_RESTART_MAX_)                                                     \
	F(S, U32, startsecs, 0)                                                                       \
	F(S, U32, startretries, 0)                                                                    \
	F(S, U32V, exitcodes, PROTO_LIST_MAX)                                                         \
	F(S, U32, stopsignal, 0)                                                                      \
	F(S, U32, stopwaitsecs, 0)                                                                    \
	F(S, U64, created_at, 0)                                                                      \
	F(S, ENUM, state, APP_STATE_MAX_)                                                             \
	F(S, U32, pid, 0)                                                                             \
	F(S, U64, start_s, 0)                                                                         \
	F(S, U64, stop_s, 0)                                                                          \
	F(S, U64, now_s, 0)                                                                           \
	F(S, BOOL, has_exit, 0)                                                                       \
	F(S, U32, exit_status, 0)                                                                     \
	F(S, STR, spawnerr, PROTO_STR_MAX)                                                            \
	F(S, U32, starts, 0)                                                                          \
	F(S, BOOL, checked, 0)                                                                        \
	F(S, BOOL, confined, 0)                                                                       \
	F(S, STR, unconfined_why, PROTO_STR_MAX)                                                      \
	F(S, U32, uid, 0)                                                                             \
	F(S, U32, gid, 0)                                                                             \
	F(S, BOOL, no_new_privs, 0)                                                                   \
	F(S, U32, seccomp, 0)                                                                         \
	F(S, U32, seccomp_filters, 0)                                                                 \
	F(S, STR, cap_eff, PROTO_NAME_MAX)                                                            \
	F(S, STRV, namespaces, PROTO_NS_MAX)                                                          \
	F(S, STR, cgroup, PROTO_STR_MAX)                                                              \
	F(S, U32V, listening, PROTO_LIST_MAX)                                                         \
	F(S, STR, note, PROTO_STR_MAX)
/* The last tail bytes (0: PROTO_APP_LOG_MAX) of an app's stdout (stream 0) or stderr (1)
 * log; the reply's fd is a memfd of length bytes, offset the log's size before them.
 * follow != 0 (the request's own id) follows the log instead: those bytes and then what
 * the app writes come as STREAM_DATA chunks of that stream, and the reply (length 0) when
 * the app's process ends; one follower per app. */
#define MSG_APP_LOG_FIELDS(F, S)                                                                      \
	F(S, STR, app, PROTO_APP_NAME_MAX)                                                            \
	F(S, ENUM, stream, 1)                                                                         \
	F(S, U64, tail, 0)                                                                            \
	F(S, U32, follow, 0)
#define MSG_APP_LOG_REP_FIELDS(F, S)                                                                  \
	F(S, U64, length, 0)                                                                          \
	F(S, U64, size, 0)

/* Schedules (launcher/schedules.h): a script run through run_code() with entrance scheduler
 * every every_s seconds, or at the minutes of a cron(5) expression (exactly one of the
 * two). last_status: "" before the first run, else "exit N", "signal N", "timed out",
 * "refused: ..." or "skipped: ...". */
#define PROTO_SCHED_EVERY_MIN 1u
#define PROTO_SCHED_EVERY_MAX (366u * 24u * 3600u)
#define PROTO_CRON_MAX        256u /* common/cron.h CRON_EXPR_MAX */
#define MSG_SCHED_PUT_FIELDS(F, S)                                                                    \
	F(S, STR, sandbox_id, PROTO_ID_MAX)                                                           \
	F(S, ENUM, language, LANG_MAX_)                                                               \
	F(S, STR, code, PROTO_CODE_MAX)                                                               \
	F(S, U32, every_s, 0)                                                                         \
	F(S, STR, cron, PROTO_CRON_MAX)
#define MSG_SCHED_REP_FIELDS(F, S)                                                                    \
	F(S, STR, id, PROTO_ID_MAX)                                                                   \
	F(S, STR, sandbox_id, PROTO_ID_MAX)                                                           \
	F(S, ENUM, language, LANG_MAX_)                                                               \
	F(S, STR, code, PROTO_CODE_MAX)                                                               \
	F(S, U32, every_s, 0)                                                                         \
	F(S, STR, cron, PROTO_CRON_MAX)                                                               \
	F(S, U64, created_at, 0)                                                                      \
	F(S, U64, next_at, 0)                                                                         \
	F(S, U64, last_at, 0)                                                                         \
	F(S, STR, last_run_id, PROTO_ID_MAX)                                                          \
	F(S, STR, last_status, PROTO_STR_MAX)                                                         \
	F(S, U32, runs, 0)                                                                            \
	F(S, U32, skipped, 0)
#define MSG_SCHED_ID_FIELDS(F, S) F(S, STR, id, PROTO_ID_MAX)

/* Streams. The opener picks the stream id (for a run's output: the id of the RUN request
 * that asked for it) and the ids are unique per channel while open. Chunks are numbered
 * from 0 without gaps; ACK carries how many chunks the receiver has consumed so far;
 * END carries how many chunks were sent, so a lost one is noticed, and a status (0 or a
 * PERR_*); CANCEL, from either side, means the other side should stop. All are events
 * (header id 0). */
#define MSG_STREAM_DATA_FIELDS(F, S)                                                                  \
	F(S, U32, stream, 0)                                                                          \
	F(S, U32, seq, 0)                                                                             \
	F(S, ENUM, chan, STREAM_CHAN_MAX_)                                                            \
	F(S, BYTES, data, PROTO_STREAM_CHUNK_MAX)
#define MSG_STREAM_ACK_FIELDS(F, S)                                                                   \
	F(S, U32, stream, 0)                                                                          \
	F(S, U32, consumed, 0)
#define MSG_STREAM_END_FIELDS(F, S)                                                                   \
	F(S, U32, stream, 0)                                                                          \
	F(S, U32, chunks, 0)                                                                          \
	F(S, U32, status, 0)                                                                          \
	F(S, STR, message, PROTO_STR_MAX)
#define MSG_STREAM_CANCEL_FIELDS(F, S) F(S, U32, stream, 0)

/* ---- the message table ------------------------------------------------------------ */
/*        NAME         num  fd policy          senders                       fields       */
#define PROTO_MESSAGES(X)                                                                          \
	X(ERROR, 1, PROTO_FD_NONE, ROLE_LAUNCHER | ROLE_SBXD | ROLE_API, MSG_ERROR_FIELDS)          \
	X(HELLO, 2, PROTO_FD_NONE, ROLE_LAUNCHER | ROLE_SBXD | ROLE_API, MSG_HELLO_FIELDS)          \
	X(PEER_FD, 4, PROTO_FD_REQUIRED, ROLE_SBXD, MSG_PEER_FD_FIELDS)                            \
	X(PGRP_ADD, 6, PROTO_FD_NONE, ROLE_LAUNCHER, MSG_PGRP_ADD_FIELDS)                          \
	X(PGRP_DEL, 8, PROTO_FD_NONE, ROLE_LAUNCHER, MSG_PGRP_DEL_FIELDS)                          \
	X(STATUS_REQ, 10, PROTO_FD_NONE, ROLE_API, MSG_EMPTY_FIELDS)                               \
	X(STATUS_REP, 11, PROTO_FD_NONE, ROLE_SBXD, MSG_STATUS_REP_FIELDS)                         \
	X(HEALTH_REQ, 12, PROTO_FD_NONE, ROLE_API, MSG_EMPTY_FIELDS)                               \
	X(HEALTH_REP, 13, PROTO_FD_NONE, ROLE_LAUNCHER, MSG_HEALTH_REP_FIELDS)                     \
	X(CAPS_REQ, 14, PROTO_FD_NONE, ROLE_API, MSG_CAPS_REQ_FIELDS)                              \
	X(CAPS_REP, 15, PROTO_FD_NONE, ROLE_LAUNCHER, MSG_CAPS_REP_FIELDS)                         \
	X(POLICY_GET, 16, PROTO_FD_NONE, ROLE_API, MSG_EMPTY_FIELDS)                               \
	X(POLICY_REP, 17, PROTO_FD_NONE, ROLE_LAUNCHER, MSG_POLICY_FIELDS)                         \
	X(POLICY_SET, 18, PROTO_FD_NONE, ROLE_API, MSG_POLICY_FIELDS)                              \
	X(SBX_CREATE, 20, PROTO_FD_NONE, ROLE_API, MSG_SBX_CREATE_FIELDS)                          \
	X(SBX_REP, 21, PROTO_FD_NONE, ROLE_LAUNCHER, MSG_SBX_REP_FIELDS)                           \
	X(SBX_GET, 22, PROTO_FD_NONE, ROLE_API, MSG_SBX_ID_FIELDS)                                 \
	X(SBX_LIST, 24, PROTO_FD_NONE, ROLE_API, MSG_EMPTY_FIELDS)                                 \
	X(LIST_END, 25, PROTO_FD_NONE, ROLE_LAUNCHER, MSG_LIST_END_FIELDS)                         \
	X(SBX_UPDATE, 26, PROTO_FD_NONE, ROLE_API, MSG_SBX_UPDATE_FIELDS)                          \
	X(SBX_DELETE, 28, PROTO_FD_NONE, ROLE_API, MSG_SBX_ID_FIELDS)                              \
	X(OK, 29, PROTO_FD_NONE, ROLE_LAUNCHER, MSG_OK_FIELDS)                                     \
	X(RUN, 30, PROTO_FD_OPTIONAL, ROLE_API, MSG_RUN_FIELDS)                                        \
	X(RUN_REP, 31, PROTO_FD_OPTIONAL, ROLE_LAUNCHER, MSG_RUN_REP_FIELDS)                       \
	X(EXEC, 32, PROTO_FD_OPTIONAL, ROLE_API, MSG_EXEC_FIELDS)                                      \
	X(RUNS_LIST, 34, PROTO_FD_NONE, ROLE_API, MSG_RUNS_LIST_FIELDS)                            \
	X(RUN_GET, 36, PROTO_FD_NONE, ROLE_API, MSG_RUN_GET_FIELDS)                                \
	X(MOUNT_ADD, 38, PROTO_FD_NONE, ROLE_API, MSG_MOUNT_ADD_FIELDS)                            \
	X(MOUNT_DEL, 40, PROTO_FD_NONE, ROLE_API, MSG_MOUNT_DEL_FIELDS)                            \
	X(PROFILE_GET, 42, PROTO_FD_NONE, ROLE_API, MSG_SBX_ID_FIELDS)                             \
	X(PROFILE_REP, 43, PROTO_FD_NONE, ROLE_LAUNCHER, MSG_PROFILE_REP_FIELDS)                   \
	X(PS_REQ, 44, PROTO_FD_NONE, ROLE_API, MSG_SBX_ID_FIELDS)                                  \
	X(PROC_REP, 45, PROTO_FD_NONE, ROLE_LAUNCHER, MSG_PROC_REP_FIELDS)                         \
	X(KILL, 46, PROTO_FD_NONE, ROLE_API, MSG_KILL_FIELDS)                                      \
	X(KILL_REP, 47, PROTO_FD_NONE, ROLE_LAUNCHER, MSG_KILL_REP_FIELDS)                         \
	X(FILE_OP, 48, PROTO_FD_OPTIONAL, ROLE_API, MSG_FILE_OP_FIELDS)                            \
	X(FILE_REP, 49, PROTO_FD_OPTIONAL, ROLE_LAUNCHER, MSG_FILE_REP_FIELDS)                     \
	X(TRACE_GET, 50, PROTO_FD_NONE, ROLE_API, MSG_TRACE_GET_FIELDS)                            \
	X(TRACE_REP, 51, PROTO_FD_OPTIONAL, ROLE_LAUNCHER, MSG_TRACE_REP_FIELDS)                   \
	X(METRICS_REQ, 52, PROTO_FD_NONE, ROLE_API, MSG_EMPTY_FIELDS)                              \
	X(METRICS_REP, 53, PROTO_FD_NONE, ROLE_LAUNCHER, MSG_METRICS_REP_FIELDS)                   \
	X(APP_PUT, 54, PROTO_FD_NONE, ROLE_API, MSG_APP_PUT_FIELDS)                                \
	X(APP_REP, 55, PROTO_FD_NONE, ROLE_LAUNCHER, MSG_APP_REP_FIELDS)                           \
	X(APP_GET, 56, PROTO_FD_NONE, ROLE_API, MSG_APP_NAME_FIELDS)                               \
	X(APP_LIST, 58, PROTO_FD_NONE, ROLE_API, MSG_EMPTY_FIELDS)                                 \
	X(APP_DELETE, 68, PROTO_FD_NONE, ROLE_API, MSG_APP_NAME_FIELDS)                            \
	X(APP_CTL, 70, PROTO_FD_NONE, ROLE_API, MSG_APP_CTL_FIELDS)                                \
	X(APP_LOG, 72, PROTO_FD_NONE, ROLE_API, MSG_APP_LOG_FIELDS)                                \
	X(APP_LOG_REP, 73, PROTO_FD_OPTIONAL, ROLE_LAUNCHER, MSG_APP_LOG_REP_FIELDS)               \
	X(SCHED_PUT, 74, PROTO_FD_NONE, ROLE_API, MSG_SCHED_PUT_FIELDS)                            \
	X(SCHED_REP, 75, PROTO_FD_NONE, ROLE_LAUNCHER, MSG_SCHED_REP_FIELDS)                       \
	X(SCHED_LIST, 76, PROTO_FD_NONE, ROLE_API, MSG_EMPTY_FIELDS)                               \
	X(SCHED_DELETE, 78, PROTO_FD_NONE, ROLE_API, MSG_SCHED_ID_FIELDS)                          \
	X(STREAM_DATA, 60, PROTO_FD_NONE, ROLE_LAUNCHER | ROLE_API, MSG_STREAM_DATA_FIELDS)        \
	X(STREAM_ACK, 62, PROTO_FD_NONE, ROLE_LAUNCHER | ROLE_API, MSG_STREAM_ACK_FIELDS)          \
	X(STREAM_END, 64, PROTO_FD_NONE, ROLE_LAUNCHER | ROLE_API, MSG_STREAM_END_FIELDS)          \
	X(STREAM_CANCEL, 66, PROTO_FD_NONE, ROLE_LAUNCHER | ROLE_API, MSG_STREAM_CANCEL_FIELDS)

#endif
