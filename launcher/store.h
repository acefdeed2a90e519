/* The launcher's SQLite store (schema.sql, WAL, PRAGMA user_version migrations).
 * Functions return 0 or -errno (-ENOENT: no such row, -EEXIST: name taken). */
#ifndef SBX_STORE_H
#define SBX_STORE_H

#include <sqlite3.h>

#include "launcher.h"

#define SBX_STORED_CODE_MAX PROTO_CODE_MAX /* program text kept per run */
#define STORE_SCHEMA_VERSION 6 /* user_version after migrations (2: mounts table; 3: disk_mb;
                                * 4: proxy; 5: trace ranges of runs; 6: apps) */

int store_open(const char *path, sqlite3 **ret_db);
void store_close(sqlite3 *db);
int store_schema_version(sqlite3 *db);

int store_policy_get(sqlite3 *db, struct msg_POLICY_REP *ret);
int store_policy_set(sqlite3 *db, const struct msg_POLICY_REP *p);

int store_sandbox_insert(sqlite3 *db, const struct sandbox *s);
int store_sandbox_update(sqlite3 *db, const struct sandbox *s); /* every field by id */
int store_sandbox_get(sqlite3 *db, const char *id, struct sandbox *ret);
int store_sandbox_get_by_name(sqlite3 *db, const char *name, struct sandbox *ret);
int store_sandbox_delete(sqlite3 *db, const char *id); /* and its runs */
/* Calls cb for each sandbox, oldest first; stops early when cb returns non-zero. */
int store_sandbox_foreach(sqlite3 *db, int (*cb)(const struct sandbox *s, void *arg), void *arg);
int store_sandbox_count(sqlite3 *db);
/* The next free jail uid in [SBX_JAIL_UID_BASE, +SBX_JAIL_UID_COUNT). */
int store_jail_uid_next(sqlite3 *db, uint32_t *ret_uid);

/* Records a run; output is stored capped at SBX_STORED_OUTPUT_MAX per stream. */
int store_run_insert(sqlite3 *db, const struct run_result *r, const char *code);
int store_run_get(sqlite3 *db, const char *sandbox_id, const char *run_id,
                  struct run_result *ret);
/* Newest first, at most limit (metadata and output). */
int store_run_foreach(sqlite3 *db, const char *sandbox_id, unsigned limit,
                      int (*cb)(const struct run_result *r, void *arg), void *arg);

/* Apps (launcher/apps.h): the supervision settings; the fence is the app's sandbox. */
struct app_conf {
	char name[PROTO_APP_NAME_MAX + 1];
	char sandbox_id[PROTO_ID_MAX + 1];
	char *command;
	uint32_t port;
	bool autostart;
	uint32_t autorestart; /* enum proto_app_restart */
	uint32_t startsecs, startretries, stopsignal, stopwaitsecs;
	struct proto_u32v exitcodes;
	uint64_t created_at;
};
void app_conf_clear(struct app_conf *c);
int store_app_insert(sqlite3 *db, const struct app_conf *c);
int store_app_update(sqlite3 *db, const struct app_conf *c); /* every member by name */
int store_app_delete(sqlite3 *db, const char *name);
/* Oldest first; stops early when cb returns non-zero. */
int store_app_foreach(sqlite3 *db, int (*cb)(const struct app_conf *c, void *arg), void *arg);

/* Schedules (launcher/schedules.h). */
struct sched_conf {
	char id[PROTO_ID_MAX + 1];
	char sandbox_id[PROTO_ID_MAX + 1];
	uint32_t language;
	char *code;
	uint32_t every_s; /* 0: cron says when */
	char *cron;       /* "" with every_s */
	uint64_t created_at;
};
void sched_conf_clear(struct sched_conf *c);
int store_sched_insert(sqlite3 *db, const struct sched_conf *c);
int store_sched_delete(sqlite3 *db, const char *id);
int store_sched_foreach(sqlite3 *db, int (*cb)(const struct sched_conf *c, void *arg), void *arg);

#endif
