/* The run_code() gate for real: a real store, real runs through bwrap and sh. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "launcher.h"
#include "sandbox.h"
#include "store.h"

static struct launcher L;
static char dir[64];

struct outcome {
	bool called;
	int err;
	char msg[512];
	char isolation[32];
	char out[4096];
	bool timed_out;
};

static void setup(void)
{
	char db[128];
	snprintf(dir, sizeof(dir), "/tmp/sbx-policy-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	chmod(dir, 0711);
	L.base = event_base_new();
	L.data_dir = dir;
	L.root = geteuid() == 0;
	cr_assert_eq(asprintf(&L.sandboxes_dir, "%s/sandboxes", dir) > 0, true);
	cr_assert_eq(mkdir(L.sandboxes_dir, 0711), 0);
	snprintf(db, sizeof(db), "%s/sbx.db", dir);
	cr_assert_eq(store_open(db, &L.db), 0);
	L.bwrap_path = access("/usr/bin/bwrap", X_OK) == 0 ? "/usr/bin/bwrap" : NULL;
}

static void teardown(void)
{
	char cmd[128];
	store_close(L.db);
	event_base_free(L.base);
	free(L.sandboxes_dir);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_assert_eq(system(cmd), 0);
}

TestSuite(policy_gate, .init = setup, .fini = teardown, .timeout = 30);

static void on_done(int err, const char *message, struct run_result *res, void *arg)
{
	struct outcome *o = arg;
	o->called = true;
	o->err = err;
	snprintf(o->msg, sizeof(o->msg), "%s", message ? message : "");
	if (res) {
		snprintf(o->isolation, sizeof(o->isolation), "%s", res->isolation);
		snprintf(o->out, sizeof(o->out), "%.*s", (int)res->out_len, res->out ? res->out : "");
		o->timed_out = res->timed_out;
	}
}

static struct outcome run(const char *sid, uint32_t lang, const char *code, bool is_exec)
{
	struct outcome o = { 0 };
	struct run_request rq = { .language = lang, .code = code, .stdin_data = "",
		                  .entrance = ENTRANCE_REST, .is_exec = is_exec };
	snprintf(rq.sandbox_id, sizeof(rq.sandbox_id), "%s", sid);
	cr_assert_eq(run_code(&L, &rq, on_done, &o), 0);
	for (int i = 0; i < 2000 && !o.called; i++)
		event_base_loop(L.base, EVLOOP_ONCE);
	cr_assert(o.called, "run_code never completed");
	return o;
}

static void set_policy(bool shell, bool python)
{
	struct msg_POLICY_REP p = { .exec_shell = shell, .scheduler_script = true,
		                    .run_python = python, .run_node = true };
	cr_assert_eq(store_policy_set(L.db, &p), 0);
}

static int count_runs(const struct run_result *r, void *arg)
{
	(*(int *)arg)++;
	return 0;
}

static void need_bwrap(void)
{
	if (!L.bwrap_path) {
		printf("SKIP: bwrap not installed\n");
		cr_skip_test("bwrap not installed");
	}
}

static void make_sandbox(char *id)
{
	struct sandbox_spec spec = { .name = "gate", .fs_mode = "strict" };
	struct sandbox s;
	cr_assert_eq(sandbox_create(&L, &spec, &s), 0);
	strcpy(id, s.id);
	sandbox_clear(&s);
}

Test(policy_gate, run_python_off_is_refused_and_not_recorded)
{
	char id[PROTO_ID_MAX + 1];
	int n = 0;
	make_sandbox(id);
	set_policy(true, false);
	struct outcome o = run(id, LANG_PYTHON, "print(1)", false);
	cr_assert_eq(o.err, PERR_POLICY_REFUSED);
	cr_assert(strstr(o.msg, "switched off"), "%s", o.msg);
	store_run_foreach(L.db, id, 10, count_runs, &n);
	cr_assert_eq(n, 0, "a refused run was recorded");
}

Test(policy_gate, exec_shell_off_runs_unsandboxed_and_says_so)
{
	need_bwrap();
	set_policy(false, true);
	struct outcome o = run("", LANG_SH, "echo unsandboxed", true);
	cr_assert_eq(o.err, 0, "%s", o.msg);
	cr_assert_str_eq(o.isolation, "none");
	cr_assert_str_eq(o.out, "unsandboxed\n");
	set_policy(true, true);
	o = run("", LANG_SH, "echo sandboxed", true);
	cr_assert_eq(o.err, 0, "%s", o.msg);
	cr_assert_str_eq(o.isolation, "bwrap");
	cr_assert_str_eq(o.out, "sandboxed\n");
}

Test(policy_gate, quotes_survive_and_python_gets_a_file)
{
	static const char snippet[] = "it's \"quoted\" $(whoami) `id` ;|& done";
	char id[PROTO_ID_MAX + 1], code[256];
	need_bwrap();
	make_sandbox(id);
	set_policy(true, true);
	snprintf(code, sizeof(code), "cat <<'EOF'\n%s\nEOF\n", snippet);
	struct outcome o = run(id, LANG_SH, code, false);
	cr_assert_eq(o.err, 0, "%s", o.msg);
	cr_assert_eq(strncmp(o.out, snippet, strlen(snippet)), 0, "got %s", o.out);
	o = run(id, LANG_PYTHON, "import sys\nprint(__file__.split('/')[-2])", false);
	cr_assert_eq(o.err, 0, "%s", o.msg);
	cr_assert_str_eq(o.out, ".sbx\n");
}

Test(policy_gate, unknown_sandbox_is_not_found)
{
	set_policy(true, true);
	struct outcome o = run("sbx_nope", LANG_SH, "true", false);
	cr_assert_eq(o.err, PERR_NOT_FOUND);
}

/* A run that ends but cannot be recorded (the database's disk is full: here its page
 * count is capped where it stands) is an error to the caller, not a result whose GET
 * would 404; once there is room again runs are recorded as before. */
Test(policy_gate, a_run_that_cannot_be_recorded_is_an_error)
{
	char id[PROTO_ID_MAX + 1];
	int n = 0;
	need_bwrap();
	make_sandbox(id);
	set_policy(true, true);
	cr_assert_eq(sqlite3_exec(L.db, "PRAGMA wal_checkpoint(TRUNCATE)", NULL, NULL, NULL), SQLITE_OK);
	cr_assert_eq(sqlite3_exec(L.db, "PRAGMA max_page_count = 1", NULL, NULL, NULL), SQLITE_OK);
	/* 200 KB of output: the record needs pages the database may not grow to */
	struct outcome o = run(id, LANG_SH, "head -c 200000 /dev/zero | tr '\\0' x", false);
	cr_expect_eq(o.err, PERR_INSUFFICIENT_STORAGE, "err %d: %s", o.err, o.msg);
	cr_expect(strstr(o.msg, "could not be recorded"), "%s", o.msg);
	store_run_foreach(L.db, id, 10, count_runs, &n);
	cr_expect_eq(n, 0);

	cr_assert_eq(sqlite3_exec(L.db, "PRAGMA max_page_count = 1073741823", NULL, NULL, NULL), SQLITE_OK);
	o = run(id, LANG_SH, "echo recorded", false);
	cr_expect_eq(o.err, 0, "%s", o.msg);
	store_run_foreach(L.db, id, 10, count_runs, &n);
	cr_expect_eq(n, 1);
}
