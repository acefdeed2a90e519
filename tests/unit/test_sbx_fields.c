/* The sandbox defined once (proto/sbx_fields.h): every field round-trips JSON -> wire ->
 * launcher -> SQLite -> wire -> JSON, the table has a column per field (fresh and
 * migrated), a schema-1 database keeps its mounts, and the MCP input schema is JSON with
 * one property per top-level field. Links the launcher and the API libraries. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "json.h"
#include "sandbox.h"
#include "schema.h"
#include "store.h"

static char dir[] = "/tmp/sbx_test_fields_XXXXXX";
static char path[256];

static void setup(void)
{
	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/sbx.db", dir);
}

static void teardown(void)
{
	char cmd[300];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir); /* the database and its -wal, -shm */
	cr_expect_eq(system(cmd), 0);
}

TestSuite(sbx_fields, .init = setup, .fini = teardown, .timeout = 30);

static yajl_val parse(const char *doc)
{
	char err[256];
	yajl_val v = NULL;
	cr_assert_eq(json_parse(doc, strlen(doc), &v, err, sizeof(err)), 0, "%s: %s", err, doc);
	return v;
}

/* Structural equality; object keys in any order. */
static bool json_equal(yajl_val a, yajl_val b)
{
	if (!a || !b)
		return a == b;
	if (YAJL_IS_OBJECT(a)) {
		if (!YAJL_IS_OBJECT(b) || a->u.object.len != b->u.object.len)
			return false;
		for (size_t i = 0; i < a->u.object.len; i++)
			if (!json_equal(a->u.object.values[i], json_get(b, a->u.object.keys[i])))
				return false;
		return true;
	}
	if (YAJL_IS_ARRAY(a)) {
		if (!YAJL_IS_ARRAY(b) || a->u.array.len != b->u.array.len)
			return false;
		for (size_t i = 0; i < a->u.array.len; i++)
			if (!json_equal(a->u.array.values[i], b->u.array.values[i]))
				return false;
		return true;
	}
	if (YAJL_IS_STRING(a))
		return YAJL_IS_STRING(b) && strcmp(a->u.string, b->u.string) == 0;
	if (YAJL_IS_INTEGER(a))
		return YAJL_IS_INTEGER(b) && YAJL_GET_INTEGER(a) == YAJL_GET_INTEGER(b);
	return a->type == b->type; /* true, false, null */
}

/* Every top-level member, with values unlike the defaults. */
static const char full_body[] =
	"{\"name\":\"every-field\",\"backend\":\"docker\",\"fsMode\":\"allowlist\","
	"\"readPaths\":[\"/opt/a\",\"/srv/b c\"],\"network\":true,"
	"\"ports\":{\"listen\":[8000],\"connect\":[443,80],\"loopback\":[8899]},"
	"\"proxy\":{\"allow\":[\"pypi.org:443\",\"*.pythonhosted.org:443\"],\"allowPrivate\":true},"
	"\"mounts\":[{\"source\":\"/srv/data\",\"target\":\"data\",\"readOnly\":true},"
	"{\"source\":\"/srv/out\",\"target\":\"out/x\",\"readOnly\":false}],"
	"\"env\":{\"HTTPS_PROXY\":\"http://127.0.0.1:8899\",\"EMPTY\":\"\"},"
	"\"limits\":{\"timeoutMs\":1234,\"memoryMb\":64,\"pids\":32,\"outputBytes\":4096,\"diskMb\":32},"
	"\"tracing\":true,\"image\":\"python:3.12-slim\"}";

static int schema_props(yajl_val *ret)
{
	static const char doc[] = "{" SCHEMA_SBX_SPEC_PROPS "}";
	*ret = parse(doc);
	return (int)(*ret)->u.object.len;
}

Test(sbx_fields, schema_is_json_with_one_property_per_top_level_field)
{
	yajl_val props;
	int n = schema_props(&props);
	cr_expect_eq(n, SBXF_COUNT_, "%d properties, %d top-level fields", n, SBXF_COUNT_);
	for (size_t i = 0; i < props->u.object.len; i++) {
		yajl_val p = props->u.object.values[i];
		cr_expect(YAJL_IS_OBJECT(p) && json_get(p, "type"), "property %s has no type",
		          props->u.object.keys[i]);
	}
	/* nested objects refuse unknown members in the schema as the API does */
	cr_expect(YAJL_IS_FALSE(json_get(json_get(props, "limits"), "additionalProperties")));
	cr_expect_not_null(json_get(json_get(json_get(props, "ports"), "properties"), "loopback"));
	yajl_tree_free(props);
}

/* JSON body -> SBX_UPDATE -> encode/decode SBX_CREATE -> check, apply -> SQLite -> get ->
 * SBX_REP -> encode/decode -> JSON: every member of the body comes back unchanged. */
Test(sbx_fields, every_field_round_trips)
{
	yajl_val body = parse(full_body), props, out;
	struct msg_SBX_UPDATE u = { 0 };
	struct msg_SBX_CREATE c = { 0 }, cd;
	struct msg_SBX_REP rep, rd;
	struct sandbox_spec spec;
	struct sandbox s = { 0 }, g;
	static uint8_t buf[PROTO_MSG_MAX];
	char err[SANDBOX_REASON_MAX];
	sqlite3 *db;
	int n;

	/* the body names every top-level field the schema has: a new field needs a value here */
	schema_props(&props);
	for (size_t i = 0; i < props->u.object.len; i++)
		cr_expect_not_null(json_get(body, props->u.object.keys[i]),
		                   "full_body lacks \"%s\"", props->u.object.keys[i]);
	yajl_tree_free(props);

	cr_assert_eq(json_parse_sbx_spec(body, &u, err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(u.set_mask, SBXF_ALL_);
#define COPY_(S, KIND, NAME, LIMIT) c.NAME = u.NAME;
	SBX_SPEC_FIELDS(COPY_, x)
#undef COPY_
	n = proto_encode(MSG_SBX_CREATE, 1, false, &c, buf, sizeof(buf));
	cr_assert_gt(n, 0);
	cr_assert_eq(proto_decode(buf, (size_t)n, false, NULL, &cd, sizeof(cd)), 0);
	proto_msg_clear(MSG_SBX_UPDATE, &u);

	SANDBOX_SPEC_FROM(&spec, &cd);
	cr_assert_eq(sandbox_spec_check(&spec, SBXF_ALL_, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(sandbox_spec_apply(&s, &spec, SBXF_ALL_), 0);
	proto_msg_clear(MSG_SBX_CREATE, &cd);
	snprintf(s.id, sizeof(s.id), "sbx_roundtrip");
	s.workdir = strdup("/w");
	s.created_at = 1764669600;

	cr_assert_eq(store_open(path, &db), 0);
	cr_assert_eq(store_sandbox_insert(db, &s), 0);
	sandbox_clear(&s);
	cr_assert_eq(store_sandbox_get(db, "sbx_roundtrip", &g), 0);
	store_close(db);

	cr_assert_eq(sandbox_to_rep(&g, &rep), 0);
	n = proto_encode(MSG_SBX_REP, 2, false, &rep, buf, sizeof(buf));
	sandbox_rep_release(&rep);
	sandbox_clear(&g);
	cr_assert_gt(n, 0);
	cr_assert_eq(proto_decode(buf, (size_t)n, false, NULL, &rd, sizeof(rd)), 0);

	yajl_gen gen = json_gen_new();
	json_gen_sbx(gen, &rd);
	proto_msg_clear(MSG_SBX_REP, &rd);
	char *doc = json_gen_dup(gen, NULL);
	yajl_gen_free(gen);
	out = parse(doc);
	for (size_t i = 0; i < body->u.object.len; i++) {
		const char *k = body->u.object.keys[i];
		cr_expect(json_equal(body->u.object.values[i], json_get(out, k)),
		          "\"%s\" did not round-trip: %s", k, doc);
	}
	yajl_tree_free(out);
	yajl_tree_free(body);
	free(doc);
}

static bool has_column(sqlite3 *db, const char *table, const char *col)
{
	char sql[128];
	sqlite3_stmt *st;
	bool found = false;
	snprintf(sql, sizeof(sql), "PRAGMA table_info(%s)", table);
	cr_assert_eq(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
	while (sqlite3_step(st) == SQLITE_ROW)
		if (strcmp((const char *)sqlite3_column_text(st, 1), col) == 0)
			found = true;
	sqlite3_finalize(st);
	return found;
}

static void expect_current_columns(sqlite3 *db)
{
	const char *mounts_cols[] = { "sandbox_id", "target", "source", "read_only", "position" };
	for (size_t i = 0; i < sandbox_fields_n; i++)
		if (sandbox_fields[i].column)
			cr_expect(has_column(db, "sandboxes", sandbox_fields[i].column),
			          "no column %s for %s", sandbox_fields[i].column, sandbox_fields[i].path);
	for (size_t i = 0; i < sizeof(mounts_cols) / sizeof(mounts_cols[0]); i++)
		cr_expect(has_column(db, "mounts", mounts_cols[i]), "mounts.%s missing", mounts_cols[i]);
	cr_expect(!has_column(db, "sandboxes", "mount_sources"), "the schema-1 lists are still there");
}

Test(sbx_fields, every_field_has_a_column)
{
	sqlite3 *db;
	cr_assert_eq(store_open(path, &db), 0);
	expect_current_columns(db);
	store_close(db);
}

/* launcher/schema.sql as schema 1 had it (the sandboxes table and what refers to it). */
static const char schema_v1[] =
	"CREATE TABLE sandboxes (id TEXT PRIMARY KEY, name TEXT NOT NULL UNIQUE, backend INTEGER NOT "
	"NULL DEFAULT 0, fs_mode TEXT NOT NULL DEFAULT 'strict', read_paths TEXT NOT NULL DEFAULT '', "
	"network INTEGER NOT NULL DEFAULT 0, ports_listen TEXT NOT NULL DEFAULT '', ports_connect "
	"TEXT NOT NULL DEFAULT '', ports_loopback TEXT NOT NULL DEFAULT '', env TEXT NOT NULL "
	"DEFAULT '', timeout_ms INTEGER NOT NULL, memory_mb INTEGER NOT NULL, pids INTEGER NOT NULL, "
	"output_bytes INTEGER NOT NULL, tracing INTEGER NOT NULL DEFAULT 0, image TEXT NOT NULL "
	"DEFAULT '', mount_sources TEXT NOT NULL DEFAULT '', mount_targets TEXT NOT NULL DEFAULT '', "
	"mount_ro TEXT NOT NULL DEFAULT '', workdir TEXT NOT NULL, jail_uid INTEGER NOT NULL DEFAULT "
	"0, created_at INTEGER NOT NULL);"
	"CREATE INDEX sandboxes_jail_uid ON sandboxes(jail_uid);"
	"CREATE TABLE runs (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE, "
	"sandbox_id TEXT NOT NULL REFERENCES sandboxes(id) ON DELETE CASCADE, language INTEGER NOT "
	"NULL, entrance INTEGER NOT NULL, has_exit_code INTEGER NOT NULL, exit_code INTEGER NOT NULL, "
	"signal INTEGER NOT NULL, timed_out INTEGER NOT NULL, stdout BLOB NOT NULL, stderr BLOB NOT "
	"NULL, stdout_truncated INTEGER NOT NULL, stderr_truncated INTEGER NOT NULL, duration_ms "
	"INTEGER NOT NULL, isolation TEXT NOT NULL, limits TEXT NOT NULL DEFAULT '', note TEXT NOT "
	"NULL DEFAULT '', code TEXT NOT NULL DEFAULT '', created_at INTEGER NOT NULL);"
	"CREATE INDEX runs_sandbox ON runs(sandbox_id, seq);"
	"CREATE TABLE exec_policy (id INTEGER PRIMARY KEY CHECK (id = 1), exec_shell INTEGER NOT "
	"NULL DEFAULT 1, scheduler_script INTEGER NOT NULL DEFAULT 1, run_python INTEGER NOT NULL "
	"DEFAULT 1, run_node INTEGER NOT NULL DEFAULT 1);"
	"INSERT INTO exec_policy (id) VALUES (1);"
	"INSERT INTO sandboxes (id, name, fs_mode, ports_listen, env, timeout_ms, memory_mb, pids, "
	"output_bytes, mount_sources, mount_targets, mount_ro, workdir, jail_uid, created_at) VALUES "
	"('sbx_old1', 'old', 'open', '8000', 'A=b', 1000, 64, 32, 4096, '/srv/a\n/srv/b c', "
	"'data\nout/x', '1\n0', '/w/sbx_old1', 200000, 1764669600),"
	"('sbx_old2', 'none', 'strict', '', '', 1000, 64, 32, 4096, '', '', '', '/w/sbx_old2', "
	"200001, 1764669601);"
	"INSERT INTO runs (id, sandbox_id, language, entrance, has_exit_code, exit_code, signal, "
	"timed_out, stdout, stderr, stdout_truncated, stderr_truncated, duration_ms, isolation, "
	"created_at) VALUES ('run_old', 'sbx_old1', 0, 0, 1, 0, 0, 0, 'hi', '', 0, 0, 5, 'bwrap', 1);"
	"PRAGMA user_version = 1;";

Test(sbx_fields, schema_1_database_keeps_its_mounts)
{
	sqlite3 *db;
	struct sandbox s;
	struct run_result r;

	cr_assert_eq(sqlite3_open(path, &db), SQLITE_OK);
	cr_assert_eq(sqlite3_exec(db, schema_v1, NULL, NULL, NULL), SQLITE_OK, "%s", sqlite3_errmsg(db));
	sqlite3_close(db);

	cr_assert_eq(store_open(path, &db), 0);
	cr_expect_eq(store_schema_version(db), STORE_SCHEMA_VERSION);
	expect_current_columns(db);
	cr_assert_eq(store_sandbox_get(db, "sbx_old1", &s), 0);
	cr_expect_str_eq(s.name, "old");
	cr_expect_eq(s.fs_mode, FS_OPEN);
	cr_expect_eq(s.ports_listen.n, 1);
	cr_assert_eq(s.mount_targets.n, 2, "the mounts did not survive the migration");
	cr_expect_str_eq(s.mount_sources.v[0], "/srv/a");
	cr_expect_str_eq(s.mount_targets.v[0], "data");
	cr_expect_eq(s.mount_ro.v[0], 1);
	cr_expect_str_eq(s.mount_sources.v[1], "/srv/b c");
	cr_expect_str_eq(s.mount_targets.v[1], "out/x");
	cr_expect_eq(s.mount_ro.v[1], 0);
	sandbox_clear(&s);
	cr_assert_eq(store_sandbox_get(db, "sbx_old2", &s), 0);
	cr_expect_eq(s.mount_targets.n, 0);
	sandbox_clear(&s);
	cr_assert_eq(store_run_get(db, "sbx_old1", "run_old", &r), 0, "a run was lost");
	run_result_clear(&r);
	/* and deleting a sandbox takes its mounts with it */
	cr_assert_eq(store_sandbox_delete(db, "sbx_old1"), 0);
	sqlite3_stmt *st;
	cr_assert_eq(sqlite3_prepare_v2(db, "SELECT COUNT(*) FROM mounts", -1, &st, NULL), SQLITE_OK);
	cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
	cr_expect_eq(sqlite3_column_int(st, 0), 0);
	sqlite3_finalize(st);
	store_close(db);
	/* opening again migrates nothing */
	cr_assert_eq(store_open(path, &db), 0);
	cr_expect_eq(store_schema_version(db), STORE_SCHEMA_VERSION);
	store_close(db);
}

/* MNTV on the wire: at SBX_MOUNTS_MAX and one past it, both ways. */
Test(sbx_fields, wire_mounts_at_limit_and_past)
{
	static uint8_t buf[PROTO_MSG_MAX];
	struct msg_SBX_CREATE m = { .name = "m" }, out;
	struct proto_mount v[SBX_MOUNTS_MAX + 1];
	char tg[SBX_MOUNTS_MAX + 1][8];
	int n;

	for (uint32_t i = 0; i <= SBX_MOUNTS_MAX; i++) {
		snprintf(tg[i], sizeof(tg[i]), "t%u", i);
		v[i] = (struct proto_mount){ "/src", tg[i], i % 2 == 0 };
	}
	m.mounts = (struct proto_mountv){ SBX_MOUNTS_MAX, v };
	n = proto_encode(MSG_SBX_CREATE, 1, false, &m, buf, sizeof(buf));
	cr_assert_gt(n, 0);
	cr_assert_eq(proto_decode(buf, (size_t)n, false, NULL, &out, sizeof(out)), 0);
	cr_expect_eq(out.mounts.n, SBX_MOUNTS_MAX);
	cr_expect_str_eq(out.mounts.v[SBX_MOUNTS_MAX - 1].target, tg[SBX_MOUNTS_MAX - 1]);
	cr_expect(out.mounts.v[0].read_only);
	cr_expect(!out.mounts.v[1].read_only);
	proto_msg_clear(MSG_SBX_CREATE, &out);
	m.mounts.n = SBX_MOUNTS_MAX + 1;
	cr_expect_eq(proto_encode(MSG_SBX_CREATE, 1, false, &m, buf, sizeof(buf)), -EINVAL);
	/* a forged count past the limit is refused by the decoder */
	m.mounts.n = SBX_MOUNTS_MAX;
	bool forged = false;
	n = proto_encode(MSG_SBX_CREATE, 1, false, &m, buf, sizeof(buf));
	for (int off = PROTO_HDR_LEN; !forged && off + 12 <= n; off++) {
		uint32_t c;
		memcpy(&c, buf + off, 4);
		if (c == SBX_MOUNTS_MAX && memcmp(buf + off + 4, "\4\0\0\0/src", 8) == 0) {
			c = SBX_MOUNTS_MAX + 1;
			memcpy(buf + off, &c, 4);
			forged = true;
		}
	}
	cr_assert(forged, "the mount count was not found in the frame");
	cr_expect_eq(proto_decode(buf, (size_t)n, false, NULL, &out, sizeof(out)), -EBADMSG);
}

/* What is stored but not enforced is said, on the sandbox and on each run of it. */
Test(sbx_fields, note_names_what_is_not_enforced)
{
	struct sandbox s = { 0 };
	const struct net_machine m = { .pasta = true, .jail_init = true, .net_proc = true,
		                       .landlock_abi = 7 };
	const struct net_machine no_pasta = { .jail_init = true, .net_proc = true, .landlock_abi = 7 };
	char note[SANDBOX_NOTE_MAX];
	char *run_note = NULL;

	s.fs_mode_raw = strdup("strict");
	sandbox_note(&s, &m, note, sizeof(note));
	cr_expect_str_eq(note, "");
	sandbox_note_run(&s, &m, &run_note);
	cr_expect_null(run_note);

	/* a loopback port is a port rule, and says what that means */
	proto_u32v_push(&s.ports_loopback, 8899);
	s.tracing = true;
	sandbox_note(&s, &m, note, sizeof(note));
	cr_expect(strstr(note, "every remote host"), "%s", note);
	cr_expect(strstr(note, "tracing observes Python and Node"), "%s", note);
	run_note = strdup("earlier");
	sandbox_note_run(&s, &m, &run_note);
	cr_expect(strncmp(run_note, "earlier; ", 9) == 0 && strstr(run_note, note), "%s", run_note);
	free(run_note);
	/* without pasta the note says runs are refused, and why */
	sandbox_note(&s, &no_pasta, note, sizeof(note));
	cr_expect(strstr(note, "runs are refused") && strstr(note, "pasta"), "%s", note);
	/* a small buffer cuts, never overruns */
	sandbox_note(&s, &m, note, 16);
	cr_expect_eq(strlen(note), 15);
	sandbox_clear(&s);
}

/* The launcher re-checks what the API already checked: a forged spec is refused. */
Test(sbx_fields, launcher_rechecks_every_kind)
{
	struct sandbox_spec spec = { .name = "x" };
	char reason[SANDBOX_REASON_MAX];
	uint32_t bad_port[] = { 70000 };
	struct proto_mount dup[] = { { "/a", "t", true }, { "/b", "t", true } };
	struct proto_mount esc[] = { { "/a", "../t", true } };

	spec.backend = BACKEND_MAX_ + 1;
	cr_expect_eq(sandbox_spec_check(&spec, SBXF_BACKEND, reason, sizeof(reason)), -EINVAL);
	spec.backend = 0;
	spec.timeout_ms = SBX_TIMEOUT_MS_MAX;
	cr_expect_eq(sandbox_spec_check(&spec, SBXF_LIMITS, reason, sizeof(reason)), 0);
	spec.timeout_ms = SBX_TIMEOUT_MS_MAX + 1;
	cr_expect_eq(sandbox_spec_check(&spec, SBXF_LIMITS, reason, sizeof(reason)), -EINVAL);
	cr_expect(strstr(reason, "limits.timeoutMs"), "%s", reason);
	spec.timeout_ms = 0;
	spec.ports_connect = (struct proto_u32v){ 1, bad_port };
	cr_expect_eq(sandbox_spec_check(&spec, SBXF_PORTS, reason, sizeof(reason)), -EINVAL);
	cr_expect(strstr(reason, "ports.connect"), "%s", reason);
	spec.ports_connect = (struct proto_u32v){ 0 };
	spec.mounts = (struct proto_mountv){ 2, dup };
	cr_expect_eq(sandbox_spec_check(&spec, SBXF_MOUNTS, reason, sizeof(reason)), -EINVAL);
	spec.mounts = (struct proto_mountv){ 1, esc };
	cr_expect_eq(sandbox_spec_check(&spec, SBXF_MOUNTS, reason, sizeof(reason)), -EINVAL);
	spec.fs_mode = "open\n";
	cr_expect_eq(sandbox_spec_check(&spec, SBXF_FS_MODE, reason, sizeof(reason)), -EINVAL);
}

/* A sandbox whose reply could not be sent is never stored: the budget is one packet. */
Test(sbx_fields, reply_budget_at_and_past_one_packet)
{
	struct sandbox s = { 0 };
	static char long_path[SANDBOX_PATH_MAX + 1];
	uint32_t n = 0;

	snprintf(s.id, sizeof(s.id), "sbx_big");
	s.name = strdup("big");
	s.fs_mode_raw = strdup("allowlist");
	s.workdir = strdup("/w");
	memset(long_path, 'p', SANDBOX_PATH_MAX);
	long_path[0] = '/';
	cr_expect_eq(sandbox_rep_fits(&s), 0);
	while (sandbox_rep_fits(&s) == 0) {
		cr_assert_eq(proto_strv_push(&s.read_paths, long_path), 0);
		n++;
	}
	cr_expect_eq(sandbox_rep_fits(&s), -EMSGSIZE);
	cr_expect(n > 1 && n < PROTO_LIST_MAX, "%u paths of %u bytes", n, SANDBOX_PATH_MAX);
	/* one entry fewer fits again */
	free(s.read_paths.v[--s.read_paths.n]);
	s.read_paths.v[s.read_paths.n] = NULL;
	cr_expect_eq(sandbox_rep_fits(&s), 0);
	sandbox_clear(&s);
}
