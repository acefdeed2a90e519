-- sbx launcher database, schema version 1 (PRAGMA user_version = 1).
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
	env            TEXT NOT NULL DEFAULT '',
	timeout_ms     INTEGER NOT NULL,
	memory_mb      INTEGER NOT NULL,
	pids           INTEGER NOT NULL,
	output_bytes   INTEGER NOT NULL,
	tracing        INTEGER NOT NULL DEFAULT 0,
	image          TEXT NOT NULL DEFAULT '',
	mount_sources  TEXT NOT NULL DEFAULT '',
	mount_targets  TEXT NOT NULL DEFAULT '',
	mount_ro       TEXT NOT NULL DEFAULT '',
	workdir        TEXT NOT NULL,
	jail_uid       INTEGER NOT NULL DEFAULT 0,
	created_at     INTEGER NOT NULL
);
CREATE INDEX sandboxes_jail_uid ON sandboxes(jail_uid);

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
	created_at       INTEGER NOT NULL
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
