/* The launcher's SQLite store: schema.sql compiled in, migrated by PRAGMA user_version.
 * Every statement is prepared with bound parameters; list fields are newline-joined text
 * (validation forbids control characters inside entries). */
#include "store.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "sandbox.h"
#include "schema_sql.h"

#define STORE_BUSY_TIMEOUT_MS 5000
#define STORE_STMT_CACHE_MAX  48 /* prepared statements kept (the distinct SQL texts) */

/* Statements are prepared once and kept: sqlite3_prepare_v2 was a tenth of the launcher's
 * time under run load and half of it on a sandbox list. A statement in use (busy) is
 * never handed out twice: a nested use of the same SQL gets a fresh, unkept one. */
static struct store_stmt {
	sqlite3 *db;
	char *sql;
	sqlite3_stmt *st;
	bool busy;
} stmt_cache[STORE_STMT_CACHE_MAX];

static void store_stmt_release(sqlite3_stmt **st)
{
	if (!*st)
		return;
	for (size_t i = 0; i < STORE_STMT_CACHE_MAX; i++)
		if (stmt_cache[i].st == *st) {
			sqlite3_reset(*st);
			sqlite3_clear_bindings(*st);
			stmt_cache[i].busy = false;
			return;
		}
	sqlite3_finalize(*st);
}
#define _cleanup_stmt_ _cleanup_(store_stmt_release)

static int store_migrate_v2(sqlite3 *db);

#define SCHEDULES_TABLE_SQL                                                                        \
	"CREATE TABLE schedules (id TEXT PRIMARY KEY, sandbox_id TEXT NOT NULL REFERENCES sandboxes(id) ON DELETE CASCADE, language INTEGER NOT NULL, code TEXT NOT NULL, every_s INTEGER NOT NULL DEFAULT 0, cron TEXT NOT NULL DEFAULT '', created_at INTEGER NOT NULL)"
/* the same text as in schema.sql */
#define APPS_TABLE_SQL                                                                             \
	"CREATE TABLE apps (name TEXT PRIMARY KEY, sandbox_id TEXT NOT NULL UNIQUE REFERENCES "    \
	"sandboxes(id), command TEXT NOT NULL, port INTEGER NOT NULL DEFAULT 0, autostart "      \
	"INTEGER NOT NULL DEFAULT 0, autorestart INTEGER NOT NULL DEFAULT 2, startsecs INTEGER "  \
	"NOT NULL DEFAULT 1, startretries INTEGER NOT NULL DEFAULT 3, exitcodes TEXT NOT NULL "   \
	"DEFAULT '0', stopsignal INTEGER NOT NULL DEFAULT 15, stopwaitsecs INTEGER NOT NULL "     \
	"DEFAULT 10, created_at INTEGER NOT NULL)"

/* A new database is made from schema.sql (the current schema) in one step; an existing one
 * runs migrations[v - 1] to go from user_version v to v + 1: SQL, then an optional step in
 * C for what SQL cannot split (the newline-joined lists of schema 1). */
static const struct store_migration {
	const char *sql;
	int (*fn)(sqlite3 *db);
} store_migrations[] = {
	/* 1 -> 2: mounts leave the parallel list columns for their own table */
	{ "CREATE TABLE mounts (sandbox_id TEXT NOT NULL REFERENCES sandboxes(id) ON DELETE "
	  "CASCADE, target TEXT NOT NULL, source TEXT NOT NULL, read_only INTEGER NOT NULL "
	  "DEFAULT 1, position INTEGER NOT NULL, PRIMARY KEY (sandbox_id, target))",
	  store_migrate_v2 },
	/* 2 -> 3: limits.diskMb; older sandboxes have no image (their note says so) */
	{ "ALTER TABLE sandboxes ADD COLUMN disk_mb INTEGER NOT NULL DEFAULT 256", NULL },
	/* 3 -> 4: proxy.allow and proxy.allowPrivate ("only these websites") */
	{ "ALTER TABLE sandboxes ADD COLUMN proxy_allow TEXT NOT NULL DEFAULT '';"
	  "ALTER TABLE sandboxes ADD COLUMN proxy_private INTEGER NOT NULL DEFAULT 0;"
	  "ALTER TABLE runs ADD COLUMN net_refused TEXT NOT NULL DEFAULT ''", NULL },
	/* 4 -> 5: where each run's trace events start and end in its sandbox's trace log */
	{ "ALTER TABLE runs ADD COLUMN trace_start INTEGER NOT NULL DEFAULT -1;"
	  "ALTER TABLE runs ADD COLUMN trace_end INTEGER NOT NULL DEFAULT -1", NULL },
	/* 5 -> 6: apps and schedules */
	{ APPS_TABLE_SQL ";" SCHEDULES_TABLE_SQL, NULL },
};
_Static_assert(sizeof(store_migrations) / sizeof(store_migrations[0]) == STORE_SCHEMA_VERSION - 1,
               "one migration per schema version after the first");

static int store_err(int rc)
{
	switch (rc & 0xff) {
	case SQLITE_OK:
	case SQLITE_DONE:
	case SQLITE_ROW:
		return 0;
	case SQLITE_NOMEM:
		return -ENOMEM;
	case SQLITE_BUSY:
	case SQLITE_LOCKED:
		return -EBUSY;
	case SQLITE_CONSTRAINT:
		return -EEXIST;
	case SQLITE_FULL:
		return -ENOSPC;
	case SQLITE_CANTOPEN:
	case SQLITE_PERM:
		return -EACCES;
	case SQLITE_READONLY:
		return -EROFS;
	case SQLITE_TOOBIG:
		return -E2BIG;
	default:
		return -EIO;
	}
}

static int store_prepare(sqlite3 *db, const char *sql, sqlite3_stmt **ret)
{
	struct store_stmt *free_slot = NULL;
	char *copy;
	int r;

	for (size_t i = 0; i < STORE_STMT_CACHE_MAX; i++) {
		struct store_stmt *c = &stmt_cache[i];
		if (!c->st) {
			if (!free_slot)
				free_slot = c;
		} else if (c->db == db && !c->busy && strcmp(c->sql, sql) == 0) {
			c->busy = true;
			*ret = c->st;
			return 0;
		}
	}
	if ((r = store_err(sqlite3_prepare_v3(db, sql, -1, free_slot ? SQLITE_PREPARE_PERSISTENT : 0,
	                                      ret, NULL))) < 0)
		return r;
	if (free_slot && (copy = strdup(sql))) /* without room or memory: used once, finalized */
		*free_slot = (struct store_stmt){ .db = db, .sql = copy, .st = *ret, .busy = true };
	return 0;
}

static int store_exec(sqlite3 *db, const char *sql)
{
	return store_err(sqlite3_exec(db, sql, NULL, NULL, NULL));
}

int store_schema_version(sqlite3 *db)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	int r = store_prepare(db, "PRAGMA user_version", &st);
	if (r < 0)
		return r;
	if (sqlite3_step(st) != SQLITE_ROW)
		return -EIO;
	return sqlite3_column_int(st, 0);
}

static int store_migrate_step(sqlite3 *db, int v)
{
	char sql[64];
	int r;
	if (v == 0) /* a new database: the current schema at once */
		r = store_exec(db, schema_sql);
	else if ((r = store_exec(db, store_migrations[v - 1].sql)) == 0 && store_migrations[v - 1].fn)
		r = store_migrations[v - 1].fn(db);
	if (r < 0)
		return r;
	snprintf(sql, sizeof(sql), "PRAGMA user_version = %d", v == 0 ? STORE_SCHEMA_VERSION : v + 1);
	return store_exec(db, sql);
}

static int store_migrate(sqlite3 *db)
{
	int v = store_schema_version(db), r;

	if (v < 0)
		return v;
	if (v > STORE_SCHEMA_VERSION)
		return -EPROTO; /* written by a newer sbx: do not guess */
	while (v < STORE_SCHEMA_VERSION) {
		if ((r = store_exec(db, "BEGIN IMMEDIATE")) < 0)
			return r;
		if ((r = store_migrate_step(db, v)) < 0 || (r = store_exec(db, "COMMIT")) < 0) {
			store_exec(db, "ROLLBACK");
			return r;
		}
		if ((v = store_schema_version(db)) < 0)
			return v;
	}
	return 0;
}

int store_open(const char *path, sqlite3 **ret_db)
{
	sqlite3 *db = NULL;
	int r;

	r = store_err(sqlite3_open_v2(path, &db,
	                              SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
	                                  SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_NOFOLLOW,
	                              NULL));
	if (r < 0) {
		sqlite3_close(db);
		return r;
	}
	sqlite3_extended_result_codes(db, 1);
	sqlite3_busy_timeout(db, STORE_BUSY_TIMEOUT_MS);
	/* WAL with synchronous=NORMAL: a commit is not synced, a checkpoint is; a power cut
	 * can lose the last commits (runs' records) but never corrupts the database */
	if ((r = store_exec(db, "PRAGMA journal_mode = WAL")) < 0 ||
	    (r = store_exec(db, "PRAGMA synchronous = NORMAL")) < 0 ||
	    /* the page cache is the launcher's largest growth (2 MiB by default): 1 MiB holds
	     * the sandboxes and the recent runs */
	    (r = store_exec(db, "PRAGMA cache_size = -1024")) < 0 ||
	    (r = store_exec(db, "PRAGMA foreign_keys = ON")) < 0 ||
	    (r = store_exec(db, "PRAGMA secure_delete = ON")) < 0 || (r = store_migrate(db)) < 0) {
		sqlite3_close(db);
		return r;
	}
	*ret_db = db;
	return 0;
}

void store_close(sqlite3 *db)
{
	for (size_t i = 0; i < STORE_STMT_CACHE_MAX; i++)
		if (stmt_cache[i].st && stmt_cache[i].db == db) {
			sqlite3_finalize(stmt_cache[i].st);
			free(stmt_cache[i].sql);
			stmt_cache[i] = (struct store_stmt){ 0 };
		}
	sqlite3_close(db);
}

/* ---- list fields as text -------------------------------------------------------- */

static char *strv_join(const struct proto_strv *sv)
{
	size_t len = 1;
	char *s, *p;
	for (uint32_t i = 0; i < sv->n; i++)
		len += strlen(sv->v[i]) + 1;
	if (!(s = p = malloc(len)))
		return NULL;
	for (uint32_t i = 0; i < sv->n; i++) {
		size_t l = strlen(sv->v[i]);
		if (i)
			*p++ = '\n';
		memcpy(p, sv->v[i], l);
		p += l;
	}
	*p = '\0';
	return s;
}

static char *u32v_join(const struct proto_u32v *uv)
{
	char *s = malloc((size_t)uv->n * 11 + 1), *p = s;
	if (!s)
		return NULL;
	*p = '\0';
	for (uint32_t i = 0; i < uv->n; i++)
		p += sprintf(p, i ? "\n%" PRIu32 : "%" PRIu32, uv->v[i]);
	return s;
}

static int strv_split(const char *text, struct proto_strv *ret)
{
	const char *p = text;
	int r;
	if (!text || !*text)
		return 0;
	for (;;) {
		const char *nl = strchr(p, '\n');
		size_t l = nl ? (size_t)(nl - p) : strlen(p);
		_cleanup_free_ char *e = strndup(p, l);
		if (!e)
			return -ENOMEM;
		if (ret->n >= PROTO_LIST_MAX)
			return -EBADMSG;
		if ((r = proto_strv_push(ret, e)) < 0)
			return r;
		if (!nl)
			return 0;
		p = nl + 1;
	}
}

static int u32v_split(const char *text, struct proto_u32v *ret)
{
	const char *p = text;
	int r;
	if (!text || !*text)
		return 0;
	while (*p) {
		char *end;
		unsigned long v = strtoul(p, &end, 10);
		if (end == p || v > UINT32_MAX || (*end && *end != '\n') || ret->n >= PROTO_LIST_MAX)
			return -EBADMSG;
		if ((r = proto_u32v_push(ret, (uint32_t)v)) < 0)
			return r;
		p = *end ? end + 1 : end;
	}
	return 0;
}

static char *col_strdup(sqlite3_stmt *st, int i)
{
	const unsigned char *t = sqlite3_column_text(st, i);
	return strdup(t ? (const char *)t : "");
}

/* ---- exec policy ---------------------------------------------------------------- */

int store_policy_get(sqlite3 *db, struct msg_POLICY_REP *ret)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	int r = store_prepare(db,
	                      "SELECT exec_shell, scheduler_script, run_python, run_node "
	                      "FROM exec_policy WHERE id = 1",
	                      &st);
	if (r < 0)
		return r;
	r = sqlite3_step(st);
	if (r != SQLITE_ROW)
		return r == SQLITE_DONE ? -ENOENT : store_err(r);
	*ret = (struct msg_POLICY_REP){
		.exec_shell = sqlite3_column_int(st, 0) != 0,
		.scheduler_script = sqlite3_column_int(st, 1) != 0,
		.run_python = sqlite3_column_int(st, 2) != 0,
		.run_node = sqlite3_column_int(st, 3) != 0,
	};
	return 0;
}

int store_policy_set(sqlite3 *db, const struct msg_POLICY_REP *p)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	int r = store_prepare(db,
	                      "INSERT INTO exec_policy (id, exec_shell, scheduler_script, run_python, "
	                      "run_node) VALUES (1, ?1, ?2, ?3, ?4) ON CONFLICT(id) DO UPDATE SET "
	                      "exec_shell = ?1, scheduler_script = ?2, run_python = ?3, run_node = ?4",
	                      &st);
	if (r < 0)
		return r;
	sqlite3_bind_int(st, 1, p->exec_shell);
	sqlite3_bind_int(st, 2, p->scheduler_script);
	sqlite3_bind_int(st, 3, p->run_python);
	sqlite3_bind_int(st, 4, p->run_node);
	return store_err(sqlite3_step(st));
}

/* ---- sandboxes ------------------------------------------------------------------ */

/* The sandboxes columns, in bind order: the settings of SBX_FIELDS (mounts have their own
 * table), then what the launcher itself keeps, then the id (last, for UPDATE ... WHERE). */
#define STORE_COL_(c)     ", " #c
#define STORE_COL_STR     STORE_COL_
#define STORE_COL_ENUM    STORE_COL_
#define STORE_COL_BOOL    STORE_COL_
#define STORE_COL_U32     STORE_COL_
#define STORE_COL_U64     STORE_COL_
#define STORE_COL_STRV    STORE_COL_
#define STORE_COL_U32V    STORE_COL_
#define STORE_COL_MNTV(c)
#define STORE_Q_(c)       ", ?"
#define STORE_Q_STR       STORE_Q_
#define STORE_Q_ENUM      STORE_Q_
#define STORE_Q_BOOL      STORE_Q_
#define STORE_Q_U32       STORE_Q_
#define STORE_Q_U64       STORE_Q_
#define STORE_Q_STRV      STORE_Q_
#define STORE_Q_U32V      STORE_Q_
#define STORE_Q_MNTV(c)
#define STORE_COL_LEAF_(A, B, sep, cname, smember, kind, json, jkind, column, limit, max, dflt,    \
                        schema, bit)                                                               \
	STORE_COL_##kind(column)
#define STORE_Q_LEAF_(A, B, sep, cname, smember, kind, json, jkind, column, limit, max, dflt,      \
                      schema, bit)                                                                 \
	STORE_Q_##kind(column)
#define STORE_GROUP_(X, A, B, sep, json, MEMBERS, bit) MEMBERS(X, A, B)
/* each setting brings its own leading ", " */
#define SBX_SET_COLS "workdir, jail_uid, created_at" SBX_FIELDS(STORE_COL_LEAF_, STORE_GROUP_, _, _)
#define SBX_SET_QS   "?, ?, ?" SBX_FIELDS(STORE_Q_LEAF_, STORE_GROUP_, _, _)
#define SBX_COLS     SBX_SET_COLS ", id"

/* Bind every column of SBX_COLS, in order, as ?1..?N. */
static int store_sandbox_bind(sqlite3_stmt *st, const struct sandbox *s)
{
	int col = 1;

	sqlite3_bind_text(st, col++, s->workdir ? s->workdir : "", -1, SQLITE_TRANSIENT);
	sqlite3_bind_int64(st, col++, s->jail_uid);
	sqlite3_bind_int64(st, col++, (sqlite3_int64)s->created_at);
	for (size_t i = 0; i < sandbox_fields_n; i++) {
		const struct sandbox_field *f = &sandbox_fields[i];
		const void *at = (const char *)s + f->sb_off;
		char *t = NULL;
		switch (f->kind) {
		case PK_STR: {
			const char *v = *(char *const *)at;
			sqlite3_bind_text(st, col++, v ? v : "", -1, SQLITE_TRANSIENT);
			break;
		}
		case PK_ENUM:
		case PK_U32:
			sqlite3_bind_int64(st, col++, *(const uint32_t *)at);
			break;
		case PK_U64:
			sqlite3_bind_int64(st, col++, (sqlite3_int64) * (const uint64_t *)at);
			break;
		case PK_BOOL:
			sqlite3_bind_int(st, col++, *(const bool *)at);
			break;
		case PK_STRV:
		case PK_U32V:
			t = f->kind == PK_STRV ? strv_join(at) : u32v_join(at);
			if (!t)
				return -ENOMEM;
			sqlite3_bind_text(st, col++, t, -1, SQLITE_TRANSIENT);
			free(t);
			break;
		case PK_MNTV: /* the mounts table */
		case PK_BYTES: /* never a sandbox setting */
			break;
		}
	}
	sqlite3_bind_text(st, col, s->id, -1, SQLITE_TRANSIENT);
	return 0;
}

static int store_sandbox_row(sqlite3_stmt *st, struct sandbox *ret)
{
	struct sandbox s = { 0 };
	const unsigned char *id;
	int col = 0, r = 0;

	s.workdir = col_strdup(st, col++);
	s.jail_uid = (uint32_t)sqlite3_column_int64(st, col++);
	s.created_at = (uint64_t)sqlite3_column_int64(st, col++);
	if (!s.workdir)
		r = -ENOMEM;
	for (size_t i = 0; i < sandbox_fields_n && r == 0; i++) {
		const struct sandbox_field *f = &sandbox_fields[i];
		void *at = (char *)&s + f->sb_off;
		switch (f->kind) {
		case PK_STR:
			if (!(*(char **)at = col_strdup(st, col++)))
				r = -ENOMEM;
			break;
		case PK_ENUM: { /* out of range in the database: the first value, never a guess */
			sqlite3_int64 v = sqlite3_column_int64(st, col++);
			*(uint32_t *)at = v < 0 || v > f->limit ? 0 : (uint32_t)v;
			break;
		}
		case PK_U32:
			*(uint32_t *)at = (uint32_t)sqlite3_column_int64(st, col++);
			break;
		case PK_U64:
			*(uint64_t *)at = (uint64_t)sqlite3_column_int64(st, col++);
			break;
		case PK_BOOL:
			*(bool *)at = sqlite3_column_int(st, col++) != 0;
			break;
		case PK_STRV:
			r = strv_split((const char *)sqlite3_column_text(st, col++), at);
			break;
		case PK_U32V:
			r = u32v_split((const char *)sqlite3_column_text(st, col++), at);
			break;
		case PK_MNTV:
		case PK_BYTES:
			break;
		}
	}
	if (r < 0)
		goto fail;
	id = sqlite3_column_text(st, col);
	snprintf(s.id, sizeof(s.id), "%s", id ? (const char *)id : "");
	/* an unknown value in the database is strict, never open (DESIGN.md §5) */
	s.fs_mode = sandbox_fs_mode_parse(s.fs_mode_raw, NULL);
	*ret = s;
	return 0;
fail:
	sandbox_clear(&s);
	return r;
}

/* ---- mounts ------------------------------------------------------------------------ */

static int store_mounts_write(sqlite3 *db, const struct sandbox *s)
{
	_cleanup_stmt_ sqlite3_stmt *del = NULL, *ins = NULL;
	int r;

	if ((r = store_prepare(db, "DELETE FROM mounts WHERE sandbox_id = ?1", &del)) < 0 ||
	    (r = store_prepare(db,
	                       "INSERT INTO mounts (sandbox_id, target, source, read_only, position) "
	                       "VALUES (?1, ?2, ?3, ?4, ?5)",
	                       &ins)) < 0)
		return r;
	sqlite3_bind_text(del, 1, s->id, -1, SQLITE_TRANSIENT);
	if ((r = store_err(sqlite3_step(del))) < 0)
		return r;
	for (uint32_t i = 0; i < s->mount_targets.n && i < s->mount_sources.n; i++) {
		sqlite3_reset(ins);
		sqlite3_bind_text(ins, 1, s->id, -1, SQLITE_TRANSIENT);
		sqlite3_bind_text(ins, 2, s->mount_targets.v[i], -1, SQLITE_TRANSIENT);
		sqlite3_bind_text(ins, 3, s->mount_sources.v[i], -1, SQLITE_TRANSIENT);
		sqlite3_bind_int(ins, 4, i < s->mount_ro.n ? s->mount_ro.v[i] != 0 : 1);
		sqlite3_bind_int64(ins, 5, i);
		if ((r = store_err(sqlite3_step(ins))) < 0)
			return r;
	}
	return 0;
}

static int store_mounts_read(sqlite3 *db, struct sandbox *s)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	int r = store_prepare(db,
	                      "SELECT source, target, read_only FROM mounts WHERE sandbox_id = ?1 "
	                      "ORDER BY position",
	                      &st);
	if (r < 0)
		return r;
	sqlite3_bind_text(st, 1, s->id, -1, SQLITE_TRANSIENT);
	while ((r = sqlite3_step(st)) == SQLITE_ROW) {
		const unsigned char *src = sqlite3_column_text(st, 0), *tgt = sqlite3_column_text(st, 1);
		int e;
		if (s->mount_targets.n >= SBX_MOUNTS_MAX)
			return -EBADMSG;
		if ((e = proto_strv_push(&s->mount_sources, src ? (const char *)src : "")) < 0 ||
		    (e = proto_strv_push(&s->mount_targets, tgt ? (const char *)tgt : "")) < 0 ||
		    (e = proto_u32v_push(&s->mount_ro, sqlite3_column_int(st, 2) != 0)) < 0)
			return e;
	}
	return store_err(r);
}

/* Schema 1 -> 2: copy the newline-joined mount lists into the mounts table, then drop
 * them (ALTER TABLE DROP COLUMN: SQLite 3.35). */
static int store_migrate_v2(sqlite3 *db)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	int r = store_prepare(db, "SELECT id, mount_sources, mount_targets, mount_ro FROM sandboxes",
	                      &st);
	if (r < 0)
		return r;
	while ((r = sqlite3_step(st)) == SQLITE_ROW) {
		struct sandbox s = { 0 };
		const unsigned char *id = sqlite3_column_text(st, 0);
		snprintf(s.id, sizeof(s.id), "%s", id ? (const char *)id : "");
		if ((r = strv_split((const char *)sqlite3_column_text(st, 1), &s.mount_sources)) == 0 &&
		    (r = strv_split((const char *)sqlite3_column_text(st, 2), &s.mount_targets)) == 0 &&
		    (r = u32v_split((const char *)sqlite3_column_text(st, 3), &s.mount_ro)) == 0)
			r = store_mounts_write(db, &s);
		sandbox_clear(&s);
		if (r < 0)
			return r;
	}
	if ((r = store_err(r)) < 0)
		return r;
	return store_exec(db, "ALTER TABLE sandboxes DROP COLUMN mount_sources; "
	                      "ALTER TABLE sandboxes DROP COLUMN mount_targets; "
	                      "ALTER TABLE sandboxes DROP COLUMN mount_ro");
}

/* The row and its mounts change together or not at all. */
static int store_sandbox_write(sqlite3 *db, const char *sql, const struct sandbox *s, bool update)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	int r;

	if ((r = store_exec(db, "SAVEPOINT sbx_write")) < 0)
		return r;
	if ((r = store_prepare(db, sql, &st)) == 0 && (r = store_sandbox_bind(st, s)) == 0 &&
	    (r = store_err(sqlite3_step(st))) == 0) {
		if (update && sqlite3_changes(db) != 1)
			r = -ENOENT;
		else
			r = store_mounts_write(db, s);
	}
	if (r < 0)
		store_exec(db, "ROLLBACK TO sbx_write");
	store_exec(db, "RELEASE sbx_write");
	return r;
}

int store_sandbox_insert(sqlite3 *db, const struct sandbox *s)
{
	/* a taken id or name is SQLITE_CONSTRAINT: -EEXIST */
	return store_sandbox_write(
	    db, "INSERT INTO sandboxes (" SBX_COLS ") VALUES (" SBX_SET_QS ", ?)", s, false);
}

int store_sandbox_update(sqlite3 *db, const struct sandbox *s)
{
	return store_sandbox_write(
	    db, "UPDATE sandboxes SET (" SBX_SET_COLS ") = (" SBX_SET_QS ") WHERE id = ?", s, true);
}

static int store_sandbox_get_by(sqlite3 *db, const char *col_sql, const char *key,
                                struct sandbox *ret)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	int r = store_prepare(db, col_sql, &st);
	if (r < 0)
		return r;
	sqlite3_bind_text(st, 1, key, -1, SQLITE_TRANSIENT);
	r = sqlite3_step(st);
	if (r == SQLITE_DONE)
		return -ENOENT;
	if (r != SQLITE_ROW)
		return store_err(r);
	if ((r = store_sandbox_row(st, ret)) < 0)
		return r;
	if ((r = store_mounts_read(db, ret)) < 0)
		sandbox_clear(ret);
	return r;
}

int store_sandbox_get(sqlite3 *db, const char *id, struct sandbox *ret)
{
	return store_sandbox_get_by(db, "SELECT " SBX_COLS " FROM sandboxes WHERE id = ?1", id, ret);
}

int store_sandbox_get_by_name(sqlite3 *db, const char *name, struct sandbox *ret)
{
	return store_sandbox_get_by(db, "SELECT " SBX_COLS " FROM sandboxes WHERE name = ?1", name,
	                            ret);
}

/* One row by its key: 0, or -ENOENT when there was none. */
static int store_delete_by(sqlite3 *db, const char *sql, const char *key)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	int r = store_prepare(db, sql, &st);
	if (r < 0)
		return r;
	sqlite3_bind_text(st, 1, key, -1, SQLITE_TRANSIENT);
	if ((r = store_err(sqlite3_step(st))) < 0)
		return r;
	return sqlite3_changes(db) == 1 ? 0 : -ENOENT;
}

int store_sandbox_delete(sqlite3 *db, const char *id)
{
	/* runs and schedules go by ON DELETE CASCADE (foreign_keys is on for every connection) */
	return store_delete_by(db, "DELETE FROM sandboxes WHERE id = ?1", id);
}

int store_sandbox_foreach(sqlite3 *db, int (*cb)(const struct sandbox *s, void *arg), void *arg)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	int r = store_prepare(db, "SELECT " SBX_COLS " FROM sandboxes ORDER BY created_at, rowid",
	                      &st);
	if (r < 0)
		return r;
	while ((r = sqlite3_step(st)) == SQLITE_ROW) {
		struct sandbox s;
		int stop;
		if ((r = store_sandbox_row(st, &s)) < 0)
			return r;
		if ((r = store_mounts_read(db, &s)) < 0) {
			sandbox_clear(&s);
			return r;
		}
		stop = cb(&s, arg);
		sandbox_clear(&s);
		if (stop)
			return 0;
	}
	return store_err(r);
}

int store_sandbox_count(sqlite3 *db)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	int r = store_prepare(db, "SELECT COUNT(*) FROM sandboxes", &st);
	if (r < 0)
		return r;
	if (sqlite3_step(st) != SQLITE_ROW)
		return -EIO;
	return sqlite3_column_int(st, 0);
}

int store_jail_uid_next(sqlite3 *db, uint32_t *ret_uid)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	/* the base itself if free, else the lowest used uid whose successor is free */
	int r = store_prepare(
	    db,
	    "SELECT CASE WHEN NOT EXISTS (SELECT 1 FROM sandboxes WHERE jail_uid = ?1) THEN ?1 "
	    "ELSE (SELECT MIN(s.jail_uid + 1) FROM sandboxes s WHERE s.jail_uid >= ?1 AND "
	    "s.jail_uid + 1 < ?2 AND NOT EXISTS (SELECT 1 FROM sandboxes t WHERE t.jail_uid = "
	    "s.jail_uid + 1)) END",
	    &st);
	if (r < 0)
		return r;
	sqlite3_bind_int64(st, 1, SBX_JAIL_UID_BASE);
	sqlite3_bind_int64(st, 2, (sqlite3_int64)SBX_JAIL_UID_BASE + SBX_JAIL_UID_COUNT);
	if (sqlite3_step(st) != SQLITE_ROW)
		return -EIO;
	if (sqlite3_column_type(st, 0) == SQLITE_NULL)
		return -ENOSPC;
	*ret_uid = (uint32_t)sqlite3_column_int64(st, 0);
	return 0;
}

/* ---- runs ----------------------------------------------------------------------- */

#define RUN_COLS                                                                                   \
	"id, sandbox_id, language, entrance, has_exit_code, exit_code, signal, timed_out, "       \
	"stdout, stderr, stdout_truncated, stderr_truncated, duration_ms, isolation, limits, "    \
	"note, created_at, net_refused, trace_start, trace_end"

void run_result_clear(struct run_result *r)
{
	if (!r)
		return;
	free(r->out);
	free(r->err);
	proto_strv_clear(&r->limits);
	proto_strv_clear(&r->refused);
	free(r->note);
	free(r->trace);
	memset(r, 0, sizeof(*r));
	r->trace_start = r->trace_end = -1;
}

int store_run_insert(sqlite3 *db, const struct run_result *r, const char *code)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	_cleanup_free_ char *limits = strv_join(&r->limits), *refused = strv_join(&r->refused);
	size_t out_len = r->out_len > SBX_STORED_OUTPUT_MAX ? SBX_STORED_OUTPUT_MAX : r->out_len;
	size_t err_len = r->err_len > SBX_STORED_OUTPUT_MAX ? SBX_STORED_OUTPUT_MAX : r->err_len;
	size_t code_len = code ? strlen(code) : 0;
	int rc;

	if (!limits || !refused)
		return -ENOMEM;
	if (code_len > SBX_STORED_CODE_MAX)
		code_len = SBX_STORED_CODE_MAX;
	rc = store_prepare(db,
	                   "INSERT INTO runs (" RUN_COLS ", code) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, "
	                   "?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21)",
	                   &st);
	if (rc < 0)
		return rc;
	sqlite3_bind_text(st, 1, r->id, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(st, 2, r->sandbox_id, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int64(st, 3, r->language);
	sqlite3_bind_int64(st, 4, r->entrance);
	sqlite3_bind_int(st, 5, r->has_exit_code);
	sqlite3_bind_int64(st, 6, r->exit_code);
	sqlite3_bind_int64(st, 7, r->signal);
	sqlite3_bind_int(st, 8, r->timed_out);
	/* zeroblob-free: an empty stream is an empty (not NULL) blob */
	sqlite3_bind_blob(st, 9, r->out ? r->out : "", (int)out_len, SQLITE_TRANSIENT);
	sqlite3_bind_blob(st, 10, r->err ? r->err : "", (int)err_len, SQLITE_TRANSIENT);
	/* what the database keeps is cut again: a reader must know it is not everything */
	sqlite3_bind_int(st, 11, r->out_truncated || r->out_len > SBX_STORED_OUTPUT_MAX);
	sqlite3_bind_int(st, 12, r->err_truncated || r->err_len > SBX_STORED_OUTPUT_MAX);
	sqlite3_bind_int64(st, 13, (sqlite3_int64)r->duration_ms);
	sqlite3_bind_text(st, 14, r->isolation ? r->isolation : "none", -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(st, 15, limits, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(st, 16, r->note ? r->note : "", -1, SQLITE_TRANSIENT);
	sqlite3_bind_int64(st, 17, (sqlite3_int64)r->created_at);
	sqlite3_bind_text(st, 18, refused, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int64(st, 19, r->trace_start);
	sqlite3_bind_int64(st, 20, r->trace_end);
	sqlite3_bind_text(st, 21, code ? code : "", (int)code_len, SQLITE_TRANSIENT);
	return store_err(sqlite3_step(st));
}

/* run_result.isolation is a static string: map what the database says onto one. */
static const char *store_isolation_static(const unsigned char *t)
{
	static const char *const known[] = { "bwrap", "seatbelt", "docker", "degraded", "none" };
	for (size_t i = 0; t && i < sizeof(known) / sizeof(known[0]); i++)
		if (strcmp((const char *)t, known[i]) == 0)
			return known[i];
	return "unknown";
}

static int store_blob_dup(sqlite3_stmt *st, int i, char **ret, size_t *ret_len)
{
	const void *b = sqlite3_column_blob(st, i);
	size_t n = (size_t)sqlite3_column_bytes(st, i);
	char *p = malloc(n + 1);
	if (!p)
		return -ENOMEM;
	if (n)
		memcpy(p, b, n);
	p[n] = '\0';
	*ret = p;
	*ret_len = n;
	return 0;
}

static int store_run_row(sqlite3_stmt *st, struct run_result *ret)
{
	struct run_result r = { 0 };
	const unsigned char *t;
	int rc;

	t = sqlite3_column_text(st, 0);
	snprintf(r.id, sizeof(r.id), "%s", t ? (const char *)t : "");
	t = sqlite3_column_text(st, 1);
	snprintf(r.sandbox_id, sizeof(r.sandbox_id), "%s", t ? (const char *)t : "");
	r.language = (uint32_t)sqlite3_column_int64(st, 2);
	r.entrance = (uint32_t)sqlite3_column_int64(st, 3);
	if (r.language > LANG_MAX_)
		r.language = LANG_SH;
	if (r.entrance > ENTRANCE_MAX_)
		r.entrance = ENTRANCE_REST;
	r.has_exit_code = sqlite3_column_int(st, 4) != 0;
	r.exit_code = (uint32_t)sqlite3_column_int64(st, 5);
	r.signal = (uint32_t)sqlite3_column_int64(st, 6);
	r.timed_out = sqlite3_column_int(st, 7) != 0;
	r.out_truncated = sqlite3_column_int(st, 10) != 0;
	r.err_truncated = sqlite3_column_int(st, 11) != 0;
	r.duration_ms = (uint64_t)sqlite3_column_int64(st, 12);
	r.isolation = store_isolation_static(sqlite3_column_text(st, 13));
	r.created_at = (uint64_t)sqlite3_column_int64(st, 16);
	r.trace_start = sqlite3_column_int64(st, 18);
	r.trace_end = sqlite3_column_int64(st, 19);
	if ((rc = store_blob_dup(st, 8, &r.out, &r.out_len)) < 0 ||
	    (rc = store_blob_dup(st, 9, &r.err, &r.err_len)) < 0 ||
	    (rc = strv_split((const char *)sqlite3_column_text(st, 14), &r.limits)) < 0 ||
	    (rc = strv_split((const char *)sqlite3_column_text(st, 17), &r.refused)) < 0)
		goto fail;
	if (!(r.note = col_strdup(st, 15))) {
		rc = -ENOMEM;
		goto fail;
	}
	*ret = r;
	return 0;
fail:
	run_result_clear(&r);
	return rc;
}

int store_run_get(sqlite3 *db, const char *sandbox_id, const char *run_id, struct run_result *ret)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	int r = store_prepare(db, "SELECT " RUN_COLS " FROM runs WHERE sandbox_id = ?1 AND id = ?2",
	                      &st);
	if (r < 0)
		return r;
	sqlite3_bind_text(st, 1, sandbox_id, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(st, 2, run_id, -1, SQLITE_TRANSIENT);
	r = sqlite3_step(st);
	if (r == SQLITE_DONE)
		return -ENOENT;
	if (r != SQLITE_ROW)
		return store_err(r);
	return store_run_row(st, ret);
}

int store_run_foreach(sqlite3 *db, const char *sandbox_id, unsigned limit,
                      int (*cb)(const struct run_result *r, void *arg), void *arg)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	int r = store_prepare(db,
	                      "SELECT " RUN_COLS " FROM runs WHERE sandbox_id = ?1 "
	                      "ORDER BY seq DESC LIMIT ?2",
	                      &st);
	if (r < 0)
		return r;
	sqlite3_bind_text(st, 1, sandbox_id, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int64(st, 2, limit);
	while ((r = sqlite3_step(st)) == SQLITE_ROW) {
		struct run_result rr;
		int stop;
		if ((r = store_run_row(st, &rr)) < 0)
			return r;
		stop = cb(&rr, arg);
		run_result_clear(&rr);
		if (stop)
			return 0;
	}
	return store_err(r);
}

/* ---- apps ------------------------------------------------------------------------ */

void app_conf_clear(struct app_conf *c)
{
	if (!c)
		return;
	free(c->command);
	proto_u32v_clear(&c->exitcodes);
	memset(c, 0, sizeof(*c));
}

#define APP_COLS                                                                                   \
	"name, sandbox_id, command, port, autostart, autorestart, startsecs, startretries, "       \
	"exitcodes, stopsignal, stopwaitsecs, created_at"

static int store_app_write(sqlite3 *db, const char *sql, const struct app_conf *c)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	_cleanup_free_ char *codes = u32v_join(&c->exitcodes);
	int r;
	if (!codes)
		return -ENOMEM;
	if ((r = store_prepare(db, sql, &st)) < 0)
		return r;
	sqlite3_bind_text(st, 1, c->name, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(st, 2, c->sandbox_id, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(st, 3, c->command ? c->command : "", -1, SQLITE_TRANSIENT);
	sqlite3_bind_int64(st, 4, c->port);
	sqlite3_bind_int(st, 5, c->autostart);
	sqlite3_bind_int64(st, 6, c->autorestart);
	sqlite3_bind_int64(st, 7, c->startsecs);
	sqlite3_bind_int64(st, 8, c->startretries);
	sqlite3_bind_text(st, 9, codes, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int64(st, 10, c->stopsignal);
	sqlite3_bind_int64(st, 11, c->stopwaitsecs);
	sqlite3_bind_int64(st, 12, (sqlite3_int64)c->created_at);
	if ((r = store_err(sqlite3_step(st))) < 0)
		return r;
	return sqlite3_changes(db) == 1 ? 0 : -ENOENT;
}

int store_app_insert(sqlite3 *db, const struct app_conf *c)
{
	return store_app_write(db,
	                       "INSERT INTO apps (" APP_COLS ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, "
	                       "?8, ?9, ?10, ?11, ?12)",
	                       c);
}

int store_app_update(sqlite3 *db, const struct app_conf *c)
{
	return store_app_write(db,
	                       "UPDATE apps SET sandbox_id = ?2, command = ?3, port = ?4, "
	                       "autostart = ?5, autorestart = ?6, startsecs = ?7, startretries = ?8, "
	                       "exitcodes = ?9, stopsignal = ?10, stopwaitsecs = ?11, created_at = "
	                       "?12 WHERE name = ?1",
	                       c);
}

int store_app_delete(sqlite3 *db, const char *name)
{
	return store_delete_by(db, "DELETE FROM apps WHERE name = ?1", name);
}

int store_app_foreach(sqlite3 *db, int (*cb)(const struct app_conf *c, void *arg), void *arg)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	int r = store_prepare(db, "SELECT " APP_COLS " FROM apps ORDER BY created_at, name", &st);
	if (r < 0)
		return r;
	while ((r = sqlite3_step(st)) == SQLITE_ROW) {
		struct app_conf c = { 0 };
		const unsigned char *t;
		int stop;
		snprintf(c.name, sizeof(c.name), "%s", (const char *)sqlite3_column_text(st, 0));
		snprintf(c.sandbox_id, sizeof(c.sandbox_id), "%s", (const char *)sqlite3_column_text(st, 1));
		c.command = col_strdup(st, 2);
		c.port = (uint32_t)sqlite3_column_int64(st, 3);
		c.autostart = sqlite3_column_int(st, 4) != 0;
		c.autorestart = (uint32_t)sqlite3_column_int64(st, 5);
		c.startsecs = (uint32_t)sqlite3_column_int64(st, 6);
		c.startretries = (uint32_t)sqlite3_column_int64(st, 7);
		t = sqlite3_column_text(st, 8);
		c.stopsignal = (uint32_t)sqlite3_column_int64(st, 9);
		c.stopwaitsecs = (uint32_t)sqlite3_column_int64(st, 10);
		c.created_at = (uint64_t)sqlite3_column_int64(st, 11);
		if (!c.command || u32v_split((const char *)t, &c.exitcodes) < 0) {
			app_conf_clear(&c);
			return -ENOMEM;
		}
		stop = cb(&c, arg);
		app_conf_clear(&c);
		if (stop)
			return 0;
	}
	return store_err(r);
}

/* ---- schedules ----------------------------------------------------------------------- */

void sched_conf_clear(struct sched_conf *c)
{
	if (!c)
		return;
	free(c->code);
	free(c->cron);
	memset(c, 0, sizeof(*c));
}

int store_sched_insert(sqlite3 *db, const struct sched_conf *c)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	int r = store_prepare(db,
	                      "INSERT INTO schedules (id, sandbox_id, language, code, every_s, cron, "
	                      "created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
	                      &st);
	if (r < 0)
		return r;
	sqlite3_bind_text(st, 1, c->id, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(st, 2, c->sandbox_id, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int64(st, 3, c->language);
	sqlite3_bind_text(st, 4, c->code ? c->code : "", -1, SQLITE_TRANSIENT);
	sqlite3_bind_int64(st, 5, c->every_s);
	sqlite3_bind_text(st, 6, c->cron ? c->cron : "", -1, SQLITE_TRANSIENT);
	sqlite3_bind_int64(st, 7, (sqlite3_int64)c->created_at);
	return store_err(sqlite3_step(st));
}

int store_sched_delete(sqlite3 *db, const char *id)
{
	return store_delete_by(db, "DELETE FROM schedules WHERE id = ?1", id);
}

int store_sched_foreach(sqlite3 *db, int (*cb)(const struct sched_conf *c, void *arg), void *arg)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	int r = store_prepare(db,
	                      "SELECT id, sandbox_id, language, code, every_s, cron, created_at FROM "
	                      "schedules ORDER BY created_at, id",
	                      &st);
	if (r < 0)
		return r;
	while ((r = sqlite3_step(st)) == SQLITE_ROW) {
		struct sched_conf c = { 0 };
		int stop;
		snprintf(c.id, sizeof(c.id), "%s", (const char *)sqlite3_column_text(st, 0));
		snprintf(c.sandbox_id, sizeof(c.sandbox_id), "%s", (const char *)sqlite3_column_text(st, 1));
		c.language = (uint32_t)sqlite3_column_int64(st, 2);
		c.code = col_strdup(st, 3);
		c.every_s = (uint32_t)sqlite3_column_int64(st, 4);
		c.cron = col_strdup(st, 5);
		c.created_at = (uint64_t)sqlite3_column_int64(st, 6);
		if (!c.code || !c.cron) {
			sched_conf_clear(&c);
			return -ENOMEM;
		}
		stop = cb(&c, arg);
		sched_conf_clear(&c);
		if (stop)
			return 0;
	}
	return store_err(r);
}
