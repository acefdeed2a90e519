/* privdrop_to() for real, in forked children: the drop happens and is verified. */
#include <criterion/criterion.h>
#include <errno.h>
#include <grp.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "privdrop.h"

TestSuite(privdrop, .timeout = 10);

#define JAIL_ID 200123

static void require_root(void)
{
	if (geteuid() != 0) {
		printf("SKIP: privdrop needs root\n");
		cr_skip_test("not root");
	}
}

/* Run fn in a child; its exit code. */
static int in_child(int (*fn)(void))
{
	int st;
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0)
		_exit(fn());
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st));
	return WEXITSTATUS(st);
}

static int drop_and_check(void)
{
	uid_t ru, eu, su;
	gid_t rg, eg, sg;
	if (privdrop_to(JAIL_ID, JAIL_ID) != 0)
		return 1;
	if (getresuid(&ru, &eu, &su) < 0 || ru != JAIL_ID || eu != JAIL_ID || su != JAIL_ID)
		return 2;
	if (getresgid(&rg, &eg, &sg) < 0 || rg != JAIL_ID || eg != JAIL_ID || sg != JAIL_ID)
		return 3;
	if (getgroups(0, NULL) != 0)
		return 4; /* no supplementary group of root survives */
	if (setuid(0) == 0 || seteuid(0) == 0)
		return 5;
	return 0;
}

Test(privdrop, drops_all_three_ids)
{
	require_root();
	cr_assert_eq(in_child(drop_and_check), 0);
}

static int drop_twice(void)
{
	/* once dropped, asking for another uid fails: the first drop was for good */
	if (privdrop_to(JAIL_ID, JAIL_ID) != 0)
		return 1;
	return privdrop_to(JAIL_ID + 1, JAIL_ID + 1) == -EPERM ? 0 : 2;
}

Test(privdrop, cannot_be_undone)
{
	require_root();
	cr_assert_eq(in_child(drop_twice), 0);
}

static int stay_root(void)
{
	/* uid 0 is a legal request (a no-op drop of groups); the check must still pass */
	return privdrop_to(0, 0) == 0 && geteuid() == 0 ? 0 : 1;
}

Test(privdrop, to_root_is_verified_too)
{
	require_root();
	cr_assert_eq(in_child(stay_root), 0);
}
