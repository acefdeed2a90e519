/* The run_code() gate's decisions as a table, without a database or a fork: the switches
 * (DESIGN.md §6) and the isolation each sandbox gets on each kind of machine. */
#include <criterion/criterion.h>
#include <string.h>

#include "policy.h"

TestSuite(policy_decide, .timeout = 10);

static const struct msg_POLICY_REP all_on = { .exec_shell = true, .scheduler_script = true,
	                                      .run_python = true, .run_node = true };

Test(policy_decide, switches)
{
	struct msg_POLICY_REP off = { 0 };
	struct run_request rq = { .language = LANG_PYTHON, .code = "print(1)" };
	char why[POLICY_WHY_MAX];
	bool sb = false;

	cr_assert_eq(policy_switches(&all_on, &rq, &sb, why, sizeof(why)), 0);
	cr_assert(sb);
	/* python and node never ran outside a sandbox: off is a refusal with a pointer */
	cr_assert_eq(policy_switches(&off, &rq, &sb, why, sizeof(why)), PERR_POLICY_REFUSED);
	cr_assert(strstr(why, "runPython is switched off"), "%s", why);
	rq.language = LANG_NODE;
	cr_assert_eq(policy_switches(&off, &rq, &sb, why, sizeof(why)), PERR_POLICY_REFUSED);
	cr_assert(strstr(why, "runNode"), "%s", why);
	/* the shell and the scheduler predate the sandbox: off runs as before */
	rq = (struct run_request){ .language = LANG_SH, .code = "true", .is_exec = true };
	cr_assert_eq(policy_switches(&off, &rq, &sb, why, sizeof(why)), 0);
	cr_assert_not(sb);
	rq = (struct run_request){ .language = LANG_SH, .code = "true", .entrance = ENTRANCE_SCHEDULER };
	cr_assert_eq(policy_switches(&off, &rq, &sb, why, sizeof(why)), 0);
	cr_assert_not(sb);
	/* a plain sh run through REST is always sandboxed */
	rq = (struct run_request){ .language = LANG_SH, .code = "true" };
	cr_assert_eq(policy_switches(&off, &rq, &sb, why, sizeof(why)), 0);
	cr_assert(sb);
	rq.code = NULL;
	cr_assert_eq(policy_switches(&all_on, &rq, &sb, why, sizeof(why)), PERR_INVALID_ARGUMENT);
	rq = (struct run_request){ .language = LANG_MAX_ + 1, .code = "x" };
	cr_assert_eq(policy_switches(&all_on, &rq, &sb, why, sizeof(why)), PERR_INVALID_ARGUMENT);
}

static int decide(bool sandboxed, uint32_t backend, bool network, struct policy_machine m,
                  enum isolation *iso, char *why, char *note)
{
	struct sandbox s = { .backend = backend, .network = network };
	*iso = ISO_N_;
	return policy_isolation(sandboxed, &s, &m, iso, why, POLICY_WHY_MAX, note, POLICY_WHY_MAX);
}

Test(policy_decide, isolation)
{
	const struct policy_machine good = { .bwrap = true, .docker_ok = true };
	const struct policy_machine no_bwrap = { .bwrap = false, .docker_ok = false };
	const struct policy_machine broken = { .bwrap = true, .engine_broken = true,
		                               .engine_why = "bwrap true failed" };
	char why[POLICY_WHY_MAX], note[POLICY_WHY_MAX];
	enum isolation iso;

	cr_assert_eq(decide(true, BACKEND_DIRECT, false, good, &iso, why, note), 0);
	cr_assert_eq(iso, ISO_BWRAP);
	cr_assert_str_empty(note);
	cr_assert_eq(decide(true, BACKEND_DOCKER, false, good, &iso, why, note), 0);
	cr_assert_eq(iso, ISO_DOCKER);
	cr_assert_eq(decide(true, BACKEND_DOCKER, true, good, &iso, why, note), 0);
	cr_assert(strstr(note, "host.docker.internal"), "docker network says what it does not enforce");
	/* no bwrap: the named degraded state, and the result says so */
	cr_assert_eq(decide(true, BACKEND_DIRECT, false, no_bwrap, &iso, why, note), 0);
	cr_assert_eq(iso, ISO_DEGRADED);
	cr_assert(strstr(note, "no OS barrier"));
	/* a switch that is on while the engine is broken fails: never a raw shell */
	cr_assert_eq(decide(true, BACKEND_DIRECT, false, broken, &iso, why, note),
	             PERR_ENGINE_UNAVAILABLE);
	cr_assert(strstr(why, "bwrap true failed"));
	cr_assert_eq(iso, ISO_N_, "no isolation chosen on a refusal");
	/* ...but a switched-off execShell runs as before, engine or not */
	cr_assert_eq(decide(false, BACKEND_DIRECT, false, broken, &iso, why, note), 0);
	cr_assert_eq(iso, ISO_NONE);
	cr_assert_eq(decide(true, BACKEND_DOCKER, false, no_bwrap, &iso, why, note),
	             PERR_ENGINE_UNAVAILABLE);
	cr_assert(strstr(why, "docker"));
}

/* network without its fence would expose the host's loopback: refused, saying what is
 * missing; with every mechanism it runs in bwrap */
Test(policy_decide, network_needs_its_fence)
{
	const struct net_machine all = { .pasta = true, .jail_init = true, .net_proc = true,
		                         .landlock_abi = 7 };
	const struct net_machine no_pasta = { .jail_init = true, .net_proc = true, .landlock_abi = 7 };
	const struct net_machine no_init = { .pasta = true, .net_proc = true, .landlock_abi = 7 };
	struct policy_machine m = { .bwrap = true, .net = &all, .api_port = 7420 };
	char why[POLICY_WHY_MAX], note[POLICY_WHY_MAX];
	enum isolation iso;

	cr_assert_eq(decide(true, BACKEND_DIRECT, true, m, &iso, why, note), 0);
	cr_assert_eq(iso, ISO_BWRAP);
	m.net = &no_pasta;
	cr_assert_eq(decide(true, BACKEND_DIRECT, true, m, &iso, why, note), PERR_ENGINE_UNAVAILABLE);
	cr_assert(strstr(why, "pasta"), "%s", why);
	m.net = &no_init;
	cr_assert_eq(decide(true, BACKEND_DIRECT, true, m, &iso, why, note), PERR_ENGINE_UNAVAILABLE);
	cr_assert(strstr(why, "sbx-jail-init"), "%s", why);
	m.net = NULL;
	cr_assert_eq(decide(true, BACKEND_DIRECT, true, m, &iso, why, note), PERR_ENGINE_UNAVAILABLE);
	m = (struct policy_machine){ .bwrap = false, .net = &all };
	cr_assert_eq(decide(true, BACKEND_DIRECT, true, m, &iso, why, note), PERR_ENGINE_UNAVAILABLE,
	             "no degraded run with network: it would share the host's namespace");
}

Test(policy_decide, the_api_port_is_never_a_loopback_port)
{
	const struct net_machine all = { .pasta = true, .jail_init = true, .net_proc = true,
		                         .landlock_abi = 7 };
	struct policy_machine m = { .bwrap = true, .net = &all, .api_port = 7420 };
	uint32_t lo[] = { 7421, 7420 };
	struct sandbox s = { .backend = BACKEND_DIRECT, .ports_loopback = { .n = 2, .v = lo } };
	char why[POLICY_WHY_MAX], note[POLICY_WHY_MAX];
	enum isolation iso = ISO_N_;

	cr_assert_eq(policy_isolation(true, &s, &m, &iso, why, sizeof(why), note, sizeof(note)),
	             PERR_CONFLICT);
	cr_assert(strstr(why, "7420"), "%s", why);
	s.ports_loopback.n = 1;
	cr_assert_eq(policy_isolation(true, &s, &m, &iso, why, sizeof(why), note, sizeof(note)), 0);
}

Test(policy_decide, isolation_names)
{
	cr_assert_str_eq(isolation_name(ISO_BWRAP), "bwrap");
	cr_assert_str_eq(isolation_name(ISO_SEATBELT), "seatbelt");
	cr_assert_str_eq(isolation_name(ISO_DOCKER), "docker");
	cr_assert_str_eq(isolation_name(ISO_DEGRADED), "degraded");
	cr_assert_str_eq(isolation_name(ISO_NONE), "none");
	cr_assert_str_eq(isolation_name(ISO_N_), "none", "out of range never claims isolation");
}
