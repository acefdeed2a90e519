/* The launcher's store: migrations, sandbox and run rows, the exec policy. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sandbox.h"
#include "store.h"

static char dir[] = "/tmp/sbx_test_store_XXXXXX";
static char path[256];

static void setup(void)
{
	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/sbx.db", dir);
}

static void teardown(void)
{
	char p[300];
	const char *sfx[] = { "", "-wal", "-shm" };
	for (int i = 0; i < 3; i++) {
		snprintf(p, sizeof(p), "%s%s", path, sfx[i]);
		unlink(p);
	}
	rmdir(dir);
}

TestSuite(store, .init = setup, .fini = teardown, .timeout = 30);

static void fill(struct sandbox *s, const char *id, const char *name)
{
	memset(s, 0, sizeof(*s));
	snprintf(s->id, sizeof(s->id), "%s", id);
	s->name = strdup(name);
	s->fs_mode_raw = strdup("allowlist");
	s->fs_mode = FS_ALLOWLIST;
	proto_strv_push(&s->read_paths, "/opt/data");
	proto_strv_push(&s->read_paths, "/srv/x y");
	s->network = true;
	proto_u32v_push(&s->ports_listen, 8000);
	proto_u32v_push(&s->ports_connect, 443);
	proto_u32v_push(&s->ports_connect, 80);
	proto_u32v_push(&s->ports_loopback, 8899);
	proto_strv_push(&s->env, "HTTPS_PROXY=http://127.0.0.1:8899");
	proto_strv_push(&s->env, "EMPTY=");
	s->timeout_ms = 1234;
	s->memory_mb = 64;
	s->pids = 32;
	s->output_bytes = 4096;
	s->tracing = true;
	s->image = strdup("python:3.12-slim");
	proto_strv_push(&s->mount_sources, "/tmp");
	proto_strv_push(&s->mount_targets, "data");
	proto_u32v_push(&s->mount_ro, 1);
	s->workdir = strdup("/var/lib/sbx/sandboxes/x");
	s->jail_uid = SBX_JAIL_UID_BASE;
	s->created_at = 1764669600;
}

Test(store, open_and_migrate_idempotent)
{
	sqlite3 *db;
	struct sandbox s, got;

	cr_assert_eq(store_open(path, &db), 0);
	cr_assert_eq(store_schema_version(db), STORE_SCHEMA_VERSION);
	cr_assert_eq(STORE_SCHEMA_VERSION, 6);
	fill(&s, "sbx_aaaaaaaaaa", "keep");
	cr_assert_eq(store_sandbox_insert(db, &s), 0);
	store_close(db);

	cr_assert_eq(store_open(path, &db), 0);
	cr_assert_eq(store_schema_version(db), STORE_SCHEMA_VERSION);
	cr_assert_eq(store_sandbox_count(db), 1);
	cr_assert_eq(store_sandbox_get(db, "sbx_aaaaaaaaaa", &got), 0);
	cr_assert_str_eq(got.name, "keep");
	sandbox_clear(&got);
	sandbox_clear(&s);
	store_close(db);
}

Test(store, newer_schema_refused)
{
	sqlite3 *db;
	cr_assert_eq(store_open(path, &db), 0);
	cr_assert_eq(sqlite3_exec(db, "PRAGMA user_version = 99", NULL, NULL, NULL), SQLITE_OK);
	store_close(db);
	cr_assert_eq(store_open(path, &db), -EPROTO);
}

Test(store, sandbox_round_trip)
{
	sqlite3 *db;
	struct sandbox s, g;

	cr_assert_eq(store_open(path, &db), 0);
	fill(&s, "sbx_bbbbbbbbbb", "round");
	cr_assert_eq(store_sandbox_insert(db, &s), 0);
	cr_assert_eq(store_sandbox_get(db, s.id, &g), 0);
	cr_assert_str_eq(g.name, "round");
	cr_assert_eq(g.fs_mode, FS_ALLOWLIST);
	cr_assert_eq(g.read_paths.n, 2);
	cr_assert_str_eq(g.read_paths.v[1], "/srv/x y");
	cr_assert_eq(g.network, true);
	cr_assert_eq(g.ports_listen.n, 1);
	cr_assert_eq(g.ports_listen.v[0], 8000);
	cr_assert_eq(g.ports_connect.n, 2);
	cr_assert_eq(g.ports_connect.v[1], 80);
	cr_assert_eq(g.ports_loopback.v[0], 8899);
	cr_assert_eq(g.env.n, 2);
	cr_assert_str_eq(g.env.v[0], "HTTPS_PROXY=http://127.0.0.1:8899");
	cr_assert_str_eq(g.env.v[1], "EMPTY=");
	cr_assert_eq(g.timeout_ms, 1234);
	cr_assert_eq(g.memory_mb, 64);
	cr_assert_eq(g.pids, 32);
	cr_assert_eq(g.output_bytes, 4096);
	cr_assert_eq(g.tracing, true);
	cr_assert_str_eq(g.image, "python:3.12-slim");
	cr_assert_eq(g.mount_sources.n, 1);
	cr_assert_str_eq(g.mount_targets.v[0], "data");
	cr_assert_eq(g.mount_ro.v[0], 1);
	cr_assert_str_eq(g.workdir, "/var/lib/sbx/sandboxes/x");
	cr_assert_eq(g.jail_uid, SBX_JAIL_UID_BASE);
	cr_assert_eq(g.created_at, 1764669600);
	sandbox_clear(&g);

	/* empty lists come back empty, not as one empty entry */
	proto_strv_clear(&s.read_paths);
	proto_u32v_clear(&s.ports_listen);
	s.network = false;
	cr_assert_eq(store_sandbox_update(db, &s), 0);
	cr_assert_eq(store_sandbox_get_by_name(db, "round", &g), 0);
	cr_assert_eq(g.read_paths.n, 0);
	cr_assert_eq(g.ports_listen.n, 0);
	cr_assert_eq(g.network, false);
	sandbox_clear(&g);

	cr_assert_eq(store_sandbox_get(db, "sbx_nope", &g), -ENOENT);
	snprintf(s.id, sizeof(s.id), "sbx_nope");
	cr_assert_eq(store_sandbox_update(db, &s), -ENOENT);
	sandbox_clear(&s);
	store_close(db);
}

Test(store, name_unique)
{
	sqlite3 *db;
	struct sandbox a, b;

	cr_assert_eq(store_open(path, &db), 0);
	fill(&a, "sbx_cccccccccc", "same");
	fill(&b, "sbx_dddddddddd", "same");
	cr_assert_eq(store_sandbox_insert(db, &a), 0);
	cr_assert_eq(store_sandbox_insert(db, &b), -EEXIST);
	cr_assert_eq(store_sandbox_count(db), 1);
	sandbox_clear(&a);
	sandbox_clear(&b);
	store_close(db);
}

static void fill_run(struct run_result *r, const char *id, const char *sid, size_t out_len)
{
	memset(r, 0, sizeof(*r));
	snprintf(r->id, sizeof(r->id), "%s", id);
	snprintf(r->sandbox_id, sizeof(r->sandbox_id), "%s", sid);
	r->language = LANG_PYTHON;
	r->entrance = ENTRANCE_MCP;
	r->has_exit_code = true;
	r->exit_code = 3;
	r->out = malloc(out_len + 1);
	memset(r->out, 'o', out_len);
	r->out_len = out_len;
	r->err = strdup("err\0bin");
	r->err_len = 7; /* binary-safe: the NUL is kept */
	r->err = realloc(r->err, 8);
	memcpy(r->err, "err\0bin", 8);
	r->duration_ms = 42;
	r->isolation = "bwrap";
	proto_strv_push(&r->limits, "memory=cgroup-v2");
	proto_strv_push(&r->limits, "pids=rlimit");
	r->note = strdup("a note");
	r->created_at = 1764669601;
}

struct seen {
	int n;
	char ids[4][PROTO_ID_MAX + 1];
};

static int cb(const struct run_result *rr, void *arg)
{
	struct seen *sn = arg;
	if (sn->n < 4)
		snprintf(sn->ids[sn->n++], sizeof(sn->ids[0]), "%s", rr->id);
	return 0;
}

Test(store, runs_insert_get_list_cascade)
{
	sqlite3 *db;
	struct sandbox s;
	struct run_result r, g;

	cr_assert_eq(store_open(path, &db), 0);
	fill(&s, "sbx_eeeeeeeeee", "runs");
	cr_assert_eq(store_sandbox_insert(db, &s), 0);

	fill_run(&r, "run_1", s.id, 10);
	cr_assert_eq(store_run_insert(db, &r, "print(1)"), 0);
	run_result_clear(&r);
	fill_run(&r, "run_2", s.id, 20);
	cr_assert_eq(store_run_insert(db, &r, "print(2)"), 0);
	run_result_clear(&r);
	/* a run of a sandbox that does not exist is refused by the foreign key */
	fill_run(&r, "run_x", "sbx_ghost", 1);
	cr_assert_lt(store_run_insert(db, &r, ""), 0);
	run_result_clear(&r);

	cr_assert_eq(store_run_get(db, s.id, "run_1", &g), 0);
	cr_assert_eq(g.language, LANG_PYTHON);
	cr_assert_eq(g.entrance, ENTRANCE_MCP);
	cr_assert(g.has_exit_code);
	cr_assert_eq(g.exit_code, 3);
	cr_assert_eq(g.out_len, 10);
	cr_assert_eq(g.err_len, 7);
	cr_assert_eq(memcmp(g.err, "err\0bin", 7), 0);
	cr_assert_str_eq(g.isolation, "bwrap");
	cr_assert_eq(g.limits.n, 2);
	cr_assert_str_eq(g.limits.v[1], "pids=rlimit");
	cr_assert_str_eq(g.note, "a note");
	cr_assert_eq(g.duration_ms, 42);
	cr_assert_not(g.out_truncated);
	run_result_clear(&g);
	cr_assert_eq(store_run_get(db, "sbx_other", "run_1", &g), -ENOENT);

	struct seen seen = { 0 };
	cr_assert_eq(store_run_foreach(db, s.id, 10, cb, &seen), 0);
	cr_assert_eq(seen.n, 2);
	cr_assert_str_eq(seen.ids[0], "run_2"); /* newest first */
	cr_assert_str_eq(seen.ids[1], "run_1");
	seen.n = 0;
	cr_assert_eq(store_run_foreach(db, s.id, 1, cb, &seen), 0);
	cr_assert_eq(seen.n, 1);

	cr_assert_eq(store_sandbox_delete(db, s.id), 0);
	cr_assert_eq(store_run_get(db, s.id, "run_1", &g), -ENOENT);
	cr_assert_eq(store_sandbox_delete(db, s.id), -ENOENT);
	sandbox_clear(&s);
	store_close(db);
}

Test(store, output_capped_at_limit_and_past_it)
{
	sqlite3 *db;
	struct sandbox s;
	struct run_result r, g;

	cr_assert_eq(store_open(path, &db), 0);
	fill(&s, "sbx_ffffffffff", "cap");
	cr_assert_eq(store_sandbox_insert(db, &s), 0);

	fill_run(&r, "run_at", s.id, SBX_STORED_OUTPUT_MAX);
	cr_assert_eq(store_run_insert(db, &r, "x"), 0);
	run_result_clear(&r);
	cr_assert_eq(store_run_get(db, s.id, "run_at", &g), 0);
	cr_assert_eq(g.out_len, SBX_STORED_OUTPUT_MAX);
	cr_assert_not(g.out_truncated);
	run_result_clear(&g);

	fill_run(&r, "run_past", s.id, SBX_STORED_OUTPUT_MAX + 1);
	cr_assert_eq(store_run_insert(db, &r, "x"), 0);
	run_result_clear(&r);
	cr_assert_eq(store_run_get(db, s.id, "run_past", &g), 0);
	cr_assert_eq(g.out_len, SBX_STORED_OUTPUT_MAX);
	cr_assert(g.out_truncated, "a stored cut must be flagged");
	run_result_clear(&g);
	sandbox_clear(&s);
	store_close(db);
}

Test(store, policy_default_and_set)
{
	sqlite3 *db;
	struct msg_POLICY_REP p;

	cr_assert_eq(store_open(path, &db), 0);
	cr_assert_eq(store_policy_get(db, &p), 0);
	cr_assert(p.exec_shell && p.scheduler_script && p.run_python && p.run_node);
	p.exec_shell = false;
	p.run_node = false;
	cr_assert_eq(store_policy_set(db, &p), 0);
	store_close(db);
	cr_assert_eq(store_open(path, &db), 0);
	cr_assert_eq(store_policy_get(db, &p), 0);
	cr_assert_not(p.exec_shell);
	cr_assert(p.scheduler_script);
	cr_assert(p.run_python);
	cr_assert_not(p.run_node);
	store_close(db);
}

Test(store, unknown_fs_mode_reads_as_strict)
{
	sqlite3 *db;
	struct sandbox s, g;

	cr_assert_eq(store_open(path, &db), 0);
	fill(&s, "sbx_gggggggggg", "odd");
	cr_assert_eq(store_sandbox_insert(db, &s), 0);
	cr_assert_eq(sqlite3_exec(db, "UPDATE sandboxes SET fs_mode = 'OPEN ' WHERE id = 'sbx_gggggggggg'",
	                          NULL, NULL, NULL),
	             SQLITE_OK);
	cr_assert_eq(store_sandbox_get(db, s.id, &g), 0);
	cr_assert_eq(g.fs_mode, FS_STRICT);
	cr_assert_str_eq(g.fs_mode_raw, "OPEN ");
	sandbox_clear(&g);
	sandbox_clear(&s);
	store_close(db);
}

Test(store, jail_uid_next_fills_gaps)
{
	sqlite3 *db;
	struct sandbox s;
	uint32_t uid;

	cr_assert_eq(store_open(path, &db), 0);
	cr_assert_eq(store_jail_uid_next(db, &uid), 0);
	cr_assert_eq(uid, SBX_JAIL_UID_BASE);
	fill(&s, "sbx_hhhhhhhhh1", "u1");
	cr_assert_eq(store_sandbox_insert(db, &s), 0);
	sandbox_clear(&s);
	fill(&s, "sbx_hhhhhhhhh2", "u2");
	s.jail_uid = SBX_JAIL_UID_BASE + 2;
	cr_assert_eq(store_sandbox_insert(db, &s), 0);
	sandbox_clear(&s);
	cr_assert_eq(store_jail_uid_next(db, &uid), 0);
	cr_assert_eq(uid, SBX_JAIL_UID_BASE + 1);
	store_close(db);
}

static int count_stmts(sqlite3 *db)
{
	int n = 0;
	for (sqlite3_stmt *st = sqlite3_next_stmt(db, NULL); st; st = sqlite3_next_stmt(db, st))
		n++;
	return n;
}

struct nest {
	sqlite3 *db;
	int outer, inner;
};

static int inner_cb(const struct sandbox *s, void *arg)
{
	((struct nest *)arg)->inner++;
	return 0;
}

/* the same SQL used again while the outer statement is still stepping */
static int outer_cb(const struct sandbox *s, void *arg)
{
	struct nest *n = arg;
	struct sandbox g;
	n->outer++;
	cr_assert_eq(store_sandbox_foreach(n->db, inner_cb, n), 0);
	cr_assert_eq(store_sandbox_get(n->db, s->id, &g), 0);
	cr_assert_str_eq(g.id, s->id);
	sandbox_clear(&g);
	return 0;
}

/* Statements are prepared once and kept (issue 11): many calls do not grow the number of
 * live statements, a nested use of the same statement still works, and commits are not
 * synced one by one (WAL, synchronous=NORMAL). */
Test(store, statements_are_kept_and_nest)
{
	sqlite3 *db;
	struct sandbox s, g;
	struct nest n = { 0 };
	sqlite3_stmt *st;

	cr_assert_eq(store_open(path, &db), 0);
	for (int i = 0; i < 3; i++) {
		char id[32], name[16];
		snprintf(id, sizeof(id), "sbx_nest%06d", i);
		snprintf(name, sizeof(name), "n%d", i);
		fill(&s, id, name);
		cr_assert_eq(store_sandbox_insert(db, &s), 0);
		sandbox_clear(&s);
	}
	cr_assert_eq(store_sandbox_get(db, "sbx_nest000000", &g), 0);
	sandbox_clear(&g);
	int after_one = count_stmts(db);
	cr_assert_gt(after_one, 0, "no statement was kept");
	for (int i = 0; i < 500; i++) {
		cr_assert_eq(store_sandbox_get(db, "sbx_nest000001", &g), 0);
		sandbox_clear(&g);
	}
	cr_assert_eq(count_stmts(db), after_one, "500 gets left %d statements (after one: %d)",
	             count_stmts(db), after_one);
	n.db = db;
	cr_assert_eq(store_sandbox_foreach(db, outer_cb, &n), 0);
	cr_assert_eq(n.outer, 3);
	cr_assert_eq(n.inner, 9);
	cr_assert_eq(sqlite3_prepare_v2(db, "PRAGMA synchronous", -1, &st, NULL), SQLITE_OK);
	cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
	cr_assert_eq(sqlite3_column_int(st, 0), 1, "synchronous is not NORMAL");
	sqlite3_finalize(st);
	store_close(db);
}
