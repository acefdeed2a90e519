-- sbx launcher database, the current schema (PRAGMA user_version = STORE_SCHEMA_VERSION).
-- A new database is created from this file; an older one is brought here by the
-- migrations in store.c, so a change here needs a migration there too.
-- The settings columns of sandboxes are the `column` of each line of proto/sbx_fields.h
-- (tests/unit/test_sbx_fields.c checks them against this table).
-- List fields are stored as newline-joined text: validation forbids control characters
-- in every entry, so a newline can never be part of one.
CREATE TABLE sandboxes (
	id             TEXT PRIMARY KEY,
	name           TEXT NOT NULL UNIQUE,
	backend        INTEGER NOT NULL DEFAULT 0,
	fs_mode        TEXT NOT NULL DEFAULT 'strict', -- as given; unknown reads back as strict
	read_paths     TEXT NOT NULL DEFAULT '',
	network        INTEGER NOT NULL DEFAULT 0,
	ports_listen   TEXT NOT NULL DEFAULT '',
	ports_connect  TEXT NOT NULL DEFAULT '',
	ports_loopback TEXT NOT NULL DEFAULT '',
	proxy_allow    TEXT NOT NULL DEFAULT '', -- schema 4
	proxy_private  INTEGER NOT NULL DEFAULT 0, -- schema 4
	env            TEXT NOT NULL DEFAULT '',
	timeout_ms     INTEGER NOT NULL,
	memory_mb      INTEGER NOT NULL,
	pids           INTEGER NOT NULL,
	output_bytes   INTEGER NOT NULL,
	disk_mb        INTEGER NOT NULL DEFAULT 256, -- schema 3; SBX_DISK_MB_DEFAULT
	tracing        INTEGER NOT NULL DEFAULT 0,
	image          TEXT NOT NULL DEFAULT '',
	workdir        TEXT NOT NULL,
	jail_uid       INTEGER NOT NULL DEFAULT 0,
	created_at     INTEGER NOT NULL
);
CREATE INDEX sandboxes_jail_uid ON sandboxes(jail_uid);

-- Schema 2: a sandbox's mounts, in the order they were added (position).
CREATE TABLE mounts (
	sandbox_id TEXT NOT NULL REFERENCES sandboxes(id) ON DELETE CASCADE,
	target     TEXT NOT NULL, -- relative to the sandbox's workdir
	source     TEXT NOT NULL, -- canonical host path, checked when it was added
	read_only  INTEGER NOT NULL DEFAULT 1,
	position   INTEGER NOT NULL,
	PRIMARY KEY (sandbox_id, target)
);

CREATE TABLE runs (
	seq              INTEGER PRIMARY KEY AUTOINCREMENT, -- insertion order: newest first
	id               TEXT NOT NULL UNIQUE,
	sandbox_id       TEXT NOT NULL REFERENCES sandboxes(id) ON DELETE CASCADE,
	language         INTEGER NOT NULL,
	entrance         INTEGER NOT NULL,
	has_exit_code    INTEGER NOT NULL,
	exit_code        INTEGER NOT NULL,
	signal           INTEGER NOT NULL,
	timed_out        INTEGER NOT NULL,
	stdout           BLOB NOT NULL,
	stderr           BLOB NOT NULL,
	stdout_truncated INTEGER NOT NULL,
	stderr_truncated INTEGER NOT NULL,
	duration_ms      INTEGER NOT NULL,
	isolation        TEXT NOT NULL,
	limits           TEXT NOT NULL DEFAULT '',
	note             TEXT NOT NULL DEFAULT '',
	code             TEXT NOT NULL DEFAULT '',
	created_at       INTEGER NOT NULL,
	net_refused      TEXT NOT NULL DEFAULT '', -- schema 4: "KIND PORT AT_MS HOST" per line
	trace_start      INTEGER NOT NULL DEFAULT -1, -- schema 5: byte offsets of the run's events
	trace_end        INTEGER NOT NULL DEFAULT -1  -- in <data>/traces/<sandbox>/trace.log; -1: none
);
CREATE INDEX runs_sandbox ON runs(sandbox_id, seq);

-- DESIGN.md §6: one row, every switch on by default.
CREATE TABLE exec_policy (
	id               INTEGER PRIMARY KEY CHECK (id = 1),
	exec_shell       INTEGER NOT NULL DEFAULT 1,
	scheduler_script INTEGER NOT NULL DEFAULT 1,
	run_python       INTEGER NOT NULL DEFAULT 1,
	run_node         INTEGER NOT NULL DEFAULT 1
);
INSERT INTO exec_policy (id) VALUES (1);

-- Schema 6: apps and schedules. Apps (launcher/apps.h). The fence is the app's own sandbox, named "app:NAME".
CREATE TABLE apps (name TEXT PRIMARY KEY, sandbox_id TEXT NOT NULL UNIQUE REFERENCES sandboxes(id), command TEXT NOT NULL, port INTEGER NOT NULL DEFAULT 0, autostart INTEGER NOT NULL DEFAULT 0, autorestart INTEGER NOT NULL DEFAULT 2, startsecs INTEGER NOT NULL DEFAULT 1, startretries INTEGER NOT NULL DEFAULT 3, exitcodes TEXT NOT NULL DEFAULT '0', stopsignal INTEGER NOT NULL DEFAULT 15, stopwaitsecs INTEGER NOT NULL DEFAULT 10, created_at INTEGER NOT NULL);
-- Schedules (launcher/schedules.h): a script run through run_code() on an interval or a cron time.
CREATE TABLE schedules (id TEXT PRIMARY KEY, sandbox_id TEXT NOT NULL REFERENCES sandboxes(id) ON DELETE CASCADE, language INTEGER NOT NULL, code TEXT NOT NULL, every_s INTEGER NOT NULL DEFAULT 0, cron TEXT NOT NULL DEFAULT '', created_at INTEGER NOT NULL);
