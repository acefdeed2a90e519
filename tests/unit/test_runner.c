/* The run lifecycle table, pair by pair, without spawning anything: every allowed
 * (state, event) goes where DESIGN.md §5 says, every other pair leaves the state alone. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "runner.h"

TestSuite(runner, .timeout = 10);

struct want {
	enum run_state s;
	enum run_event e;
	enum run_state next;
	enum run_action action;
};

/* Written out independently of runner.c's table: the two must agree exactly. */
static const struct want allowed[] = {
	{ RS_SPAWNING, RE_SPAWNED, RS_RUNNING, RA_START },

	{ RS_RUNNING, RE_STDIN_DONE, RS_RUNNING, RA_NONE },
	{ RS_RUNNING, RE_OUT_EOF, RS_RUNNING, RA_STREAM_EOF },
	{ RS_RUNNING, RE_ERR_EOF, RS_RUNNING, RA_STREAM_EOF },
	{ RS_RUNNING, RE_EXITED, RS_DRAINING, RA_REAPED },
	{ RS_RUNNING, RE_DEADLINE, RS_KILLING, RA_TERM_DEADLINE },
	{ RS_RUNNING, RE_KILL_REQUESTED, RS_KILLING, RA_TERM_REQUESTED },

	{ RS_KILLING, RE_STDIN_DONE, RS_KILLING, RA_NONE },
	{ RS_KILLING, RE_OUT_EOF, RS_KILLING, RA_STREAM_EOF },
	{ RS_KILLING, RE_ERR_EOF, RS_KILLING, RA_STREAM_EOF },
	{ RS_KILLING, RE_EXITED, RS_DRAINING, RA_REAPED },
	{ RS_KILLING, RE_GRACE_EXPIRED, RS_KILLING, RA_SIGKILL },
	{ RS_KILLING, RE_KILL_REQUESTED, RS_KILLING, RA_NONE },

	{ RS_DRAINING, RE_STDIN_DONE, RS_DRAINING, RA_NONE },
	{ RS_DRAINING, RE_OUT_EOF, RS_DRAINING, RA_STREAM_EOF },
	{ RS_DRAINING, RE_ERR_EOF, RS_DRAINING, RA_STREAM_EOF },
	{ RS_DRAINING, RE_OUTPUT_CLOSED, RS_DONE, RA_COMPLETE },
	{ RS_DRAINING, RE_DRAIN_EXPIRED, RS_DONE, RA_COMPLETE },
	{ RS_DRAINING, RE_KILL_REQUESTED, RS_DRAINING, RA_SIGKILL },

	/* a jail built ahead: released to a run, or it ends (discarded) without one */
	{ RS_WARM, RE_RELEASED, RS_RUNNING, RA_START },
	{ RS_WARM, RE_OUT_EOF, RS_WARM, RA_STREAM_EOF },
	{ RS_WARM, RE_ERR_EOF, RS_WARM, RA_STREAM_EOF },
	{ RS_WARM, RE_EXITED, RS_DONE, RA_DISCARD },
	{ RS_WARM, RE_KILL_REQUESTED, RS_WARM, RA_SIGKILL },
};

static const struct want *find(enum run_state s, enum run_event e)
{
	for (size_t i = 0; i < sizeof(allowed) / sizeof(allowed[0]); i++)
		if (allowed[i].s == s && allowed[i].e == e)
			return &allowed[i];
	return NULL;
}

Test(runner, every_pair)
{
	unsigned n_allowed = 0;
	for (int s = 0; s < RS_N_; s++) {
		for (int e = 0; e < RE_N_; e++) {
			const struct want *w = find((enum run_state)s, (enum run_event)e);
			struct runner_step st = runner_next((enum run_state)s, (enum run_event)e);
			if (w) {
				n_allowed++;
				cr_expect_eq(st.next, w->next, "%s --%s--> %s, want %s",
				             runner_state_name(s), runner_event_name(e),
				             runner_state_name(st.next), runner_state_name(w->next));
				cr_expect_eq(st.action, w->action, "%s --%s--> action %d, want %d",
				             runner_state_name(s), runner_event_name(e), st.action,
				             w->action);
			} else {
				cr_expect_eq(st.action, RA_FORBIDDEN, "%s --%s--> should be refused",
				             runner_state_name(s), runner_event_name(e));
				cr_expect_eq(st.next, (enum run_state)s, "%s --%s--> moved a refused run",
				             runner_state_name(s), runner_event_name(e));
			}
		}
	}
	cr_assert_eq(n_allowed, sizeof(allowed) / sizeof(allowed[0]));
}

Test(runner, done_is_final)
{
	for (int e = 0; e < RE_N_; e++) {
		struct runner_step st = runner_next(RS_DONE, (enum run_event)e);
		cr_assert_eq(st.action, RA_FORBIDDEN);
		cr_assert_eq(st.next, RS_DONE);
	}
}

Test(runner, a_run_that_times_out)
{
	/* the path of an infinite loop: deadline, SIGTERM ignored, SIGKILL, reaped, drained */
	static const enum run_event path[] = { RE_SPAWNED,       RE_STDIN_DONE, RE_DEADLINE,
		                               RE_GRACE_EXPIRED, RE_EXITED,     RE_OUT_EOF,
		                               RE_ERR_EOF,       RE_OUTPUT_CLOSED };
	enum run_state s = RS_SPAWNING;
	for (size_t i = 0; i < sizeof(path) / sizeof(path[0]); i++) {
		struct runner_step st = runner_next(s, path[i]);
		cr_assert_neq(st.action, RA_FORBIDDEN, "%s refused in %s", runner_event_name(path[i]),
		              runner_state_name(s));
		s = st.next;
	}
	cr_assert_eq(s, RS_DONE);
}

Test(runner, a_deadline_never_fires_twice_or_after_the_exit)
{
	cr_assert_eq(runner_next(RS_KILLING, RE_DEADLINE).action, RA_FORBIDDEN);
	cr_assert_eq(runner_next(RS_DRAINING, RE_DEADLINE).action, RA_FORBIDDEN);
	cr_assert_eq(runner_next(RS_DRAINING, RE_GRACE_EXPIRED).action, RA_FORBIDDEN);
	cr_assert_eq(runner_next(RS_RUNNING, RE_OUTPUT_CLOSED).action, RA_FORBIDDEN,
	             "a run is not complete before its program was reaped");
}

Test(runner, out_of_range_is_refused)
{
	struct runner_step st = runner_next(RS_N_, RE_SPAWNED);
	cr_assert_eq(st.action, RA_FORBIDDEN);
	st = runner_next(RS_RUNNING, RE_N_);
	cr_assert_eq(st.action, RA_FORBIDDEN);
	cr_assert_eq(st.next, RS_RUNNING);
	cr_assert_str_eq(runner_state_name(RS_N_), "?");
	cr_assert_str_eq(runner_event_name(RE_N_), "?");
}

Test(runner, names_cover_the_table)
{
	for (int s = 0; s < RS_N_; s++)
		cr_assert_str_neq(runner_state_name((enum run_state)s), "?");
	for (int e = 0; e < RE_N_; e++)
		cr_assert_str_neq(runner_event_name((enum run_event)e), "?");
}

Test(runner, capture_at_its_limit)
{
	struct capture c;
	char data[100];
	size_t len;
	memset(data, 'x', sizeof(data));
	capture_init(&c, 100);
	cr_assert_eq(capture_add(&c, data, 60), 60);
	cr_assert_eq(capture_add(&c, data, 40), 40);
	cr_assert_eq(c.len, 100);
	cr_assert_not(c.truncated, "exactly the limit is not truncated");
	char *b = capture_steal(&c, &len);
	cr_assert_eq(len, 100);
	cr_assert_eq(memcmp(b, data, 100), 0);
	free(b);
	capture_free(&c);
}

Test(runner, capture_past_its_limit)
{
	struct capture c;
	char data[101];
	memset(data, 'y', sizeof(data));
	capture_init(&c, 100);
	cr_assert_eq(capture_add(&c, data, 101), 100);
	cr_assert(c.truncated);
	cr_assert_eq(c.len, 100);
	cr_assert_eq(capture_add(&c, data, 1), 0, "nothing more once full");
	capture_free(&c);
	capture_init(&c, 0);
	cr_assert_eq(capture_add(&c, data, 1), 0);
	cr_assert(c.truncated);
	capture_free(&c);
}
