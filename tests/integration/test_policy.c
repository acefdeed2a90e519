/* The ExecPolicy over REST: runPython off refuses with policy_refused, execShell off runs
 * unsandboxed and says so, execShell on runs in bwrap. */
#include <stdio.h>
#include <string.h>

#include <criterion/criterion.h>

#include "cleanup.h"
#include "harness.h"

static void setup(void)
{
	sbx_require_bwrap();
	sbx_it_init();
}

TestSuite(policy, .init = setup, .fini = sbx_it_fini, .timeout = 60);

#define POLICY "/api/sandbox/exec-policy"

struct policy {
	bool exec_shell, scheduler_script, run_python, run_node;
};

static struct policy policy_get(void)
{
	_cleanup_resp_ struct http_resp r = http_req(&sbx_it, "GET", POLICY, NULL, NULL);
	assert_status(r, 200);
	const char *keys[] = { "execShell", "schedulerScript", "runPython", "runNode" };
	for (size_t i = 0; i < 4; i++)
		cr_assert(YAJL_IS_TRUE(js_get(r.json, keys[i])) || YAJL_IS_FALSE(js_get(r.json, keys[i])),
			  "%s is not a boolean in %s", keys[i], r.body);
	return (struct policy){ js_is_true(r.json, "execShell"), js_is_true(r.json, "schedulerScript"),
				js_is_true(r.json, "runPython"), js_is_true(r.json, "runNode") };
}

/* PUT the whole object (works whether the server takes partial updates or not) */
static void policy_put(struct policy p)
{
	char body[256];
	snprintf(body, sizeof(body),
		 "{\"execShell\":%s,\"schedulerScript\":%s,\"runPython\":%s,\"runNode\":%s}",
		 p.exec_shell ? "true" : "false", p.scheduler_script ? "true" : "false",
		 p.run_python ? "true" : "false", p.run_node ? "true" : "false");
	_cleanup_resp_ struct http_resp r = http_req(&sbx_it, "PUT", POLICY, body, NULL);
	assert_status(r, 200);
	struct policy now = policy_get();
	cr_assert(now.exec_shell == p.exec_shell && now.run_python == p.run_python &&
		  now.run_node == p.run_node && now.scheduler_script == p.scheduler_script,
		  "the policy did not take: PUT %s", body);
}

Test(policy, defaults_are_all_on)
{
	struct policy p = policy_get();
	cr_expect(p.exec_shell && p.scheduler_script && p.run_python && p.run_node);
}

Test(policy, run_python_off_is_refused)
{
	char id[128];
	sbx_create(&sbx_it, NULL, id, sizeof(id));
	struct policy orig = policy_get();
	struct policy off = orig;
	off.run_python = false;
	policy_put(off);

	_cleanup_free_ char *body = run_body("python", "print('must not run')", NULL, 0);
	_cleanup_resp_ struct http_resp r = sbx_run(&sbx_it, id, body);
	assert_status(r, 403);
	cr_expect_str_eq(js_str(r.json, "error.code") ? js_str(r.json, "error.code") : "",
			 "policy_refused", "%s", r.body);
	cr_expect(!r.body || !strstr(r.body, "must not run\\n"), "it ran anyway: %s", r.body);

	/* sh is not runPython's business */
	_cleanup_free_ char *sh = run_body("sh", "echo still", NULL, 0);
	_cleanup_resp_ struct http_resp s = sbx_run(&sbx_it, id, sh);
	assert_status(s, 200);

	policy_put(orig);
	_cleanup_resp_ struct http_resp again = sbx_run(&sbx_it, id, body);
	assert_status(again, 200);
	cr_expect_str_eq(js_str(again.json, "stdout") ? js_str(again.json, "stdout") : "",
			 "must not run\n");
}

static void expect_exec(const char *isolation)
{
	_cleanup_resp_ struct http_resp r =
		http_req(&sbx_it, "POST", "/api/sandbox/exec", "{\"code\":\"echo hi\"}", NULL);
	assert_status(r, 200);
	cr_expect_str_eq(js_str(r.json, "stdout") ? js_str(r.json, "stdout") : "", "hi\n", "%s",
			 r.body);
	cr_expect_str_eq(js_str(r.json, "isolation") ? js_str(r.json, "isolation") : "", isolation,
			 "%s", r.body);
}

Test(policy, exec_shell_switch)
{
	struct policy orig = policy_get();
	expect_exec("bwrap");

	struct policy off = orig;
	off.exec_shell = false;
	policy_put(off);
	expect_exec("none");

	policy_put(orig);
	expect_exec("bwrap");
}

Test(policy, bad_policy_body_changes_nothing)
{
	struct policy orig = policy_get();
	_cleanup_resp_ struct http_resp r =
		http_req(&sbx_it, "PUT", POLICY, "{\"runPython\":\"no\"}", NULL);
	assert_status(r, 400);
	struct policy now = policy_get();
	cr_expect(now.run_python == orig.run_python && now.exec_shell == orig.exec_shell);
}
