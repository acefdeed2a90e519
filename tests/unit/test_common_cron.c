/* common/cron.c against the examples of cron(5) (Debian's crontab(5) "EXAMPLE CRON FILE"
 * and its text), from Wednesday 2026-12-02 10:00:00 UTC, and the expressions it refuses. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cron.h"

#define WED_1000 1796205600 /* 2026-12-02 10:00:00 UTC, a Wednesday */

static void utc(void)
{
	setenv("TZ", "UTC", 1);
	tzset();
}

TestSuite(cron, .init = utc);

static time_t next(const char *expr)
{
	struct cron_spec c;
	char why[256];
	time_t t = 0;
	cr_assert_eq(cron_parse(expr, &c, why, sizeof(why)), 0, "%s: %s", expr, why);
	cr_assert_eq(cron_next(&c, WED_1000, &t), 0, "%s: no next time", expr);
	return t;
}

Test(cron, the_examples_of_crontab_5)
{
	/* run five minutes after midnight, every day */
	cr_expect_eq(next("5 0 * * *"), 1796256300);      /* Thu 12-03 00:05 */
	/* run at 2:15pm on the first of every month */
	cr_expect_eq(next("15 14 1 * *"), 1798812900);    /* 2027-01-01 14:15 */
	/* run at 10 pm on weekdays */
	cr_expect_eq(next("0 22 * * 1-5"), 1796248800);   /* Wed 22:00 */
	/* 23 minutes after midnight, 2am, 4am ..., everyday */
	cr_expect_eq(next("23 0-23/2 * * *"), 1796206980); /* 10:23 */
	/* 5 after 4 every sunday */
	cr_expect_eq(next("5 4 * * sun"), 1796529900);    /* Sun 12-06 04:05 */
	/* every 4th hour on the 1st and on every Monday: both day fields restricted, either */
	cr_expect_eq(next("0 */4 1 * mon"), 1796601600);  /* Mon 12-07 00:00 */
	/* midnight on every Sunday that is an uneven date: "*" first, both must match */
	cr_expect_eq(next("0 0 */2 * sun"), 1797120000);  /* Sun 12-13 00:00, not 12-06 */
	/* 4:30am on the 1st and 15th of each month, plus every Friday */
	cr_expect_eq(next("30 4 1,15 * 5"), 1796358600);  /* Fri 12-04 04:30 */
}

Test(cron, steps_names_aliases_and_sunday_as_7)
{
	cr_expect_eq(next("0 */2 * * *"), 1796212800);    /* 12:00: strictly after 10:00 */
	cr_expect_eq(next("0 0 * * 7"), 1796515200);      /* Sunday written 7 */
	cr_expect_eq(next("0 0 * dec SUN"), 1796515200);
	cr_expect_eq(next("@yearly"), 1798761600);
	cr_expect_eq(next("@annually"), 1798761600);
	cr_expect_eq(next("@weekly"), 1796515200);
	cr_expect_eq(next("@hourly"), 1796209200);
	cr_expect_eq(next("@daily"), next("@midnight"));
	cr_expect_eq(next("*/15 * * * *"), WED_1000 + 15 * 60);
	cr_expect_eq(next("10/20 * * * *"), WED_1000 + 10 * 60); /* 10, 30, 50 */
	cr_expect_eq(next("*,59 * * * *"), WED_1000 + 60);
}

Test(cron, a_date_that_never_comes_is_erange)
{
	struct cron_spec c;
	char why[128];
	time_t t;
	cr_assert_eq(cron_parse("0 0 30 feb *", &c, why, sizeof(why)), 0);
	cr_expect_eq(cron_next(&c, WED_1000, &t), -ERANGE);
}

Test(cron, bad_expressions_are_refused_with_the_field)
{
	static const char *const bad[] = { "", "* * * *", "* * * * * *", "60 * * * *",
		                           "*/0 * * * *", "5-1 * * * *", "@reboot", "@often",
		                           "0 0 32 * *", "0 0 0 * *", "0 0 * 13 *", "0 0 * * 8",
		                           "a * * * *", "1,,2 * * * *", "1- * * * *", "* * * jam *",
		                           "*/61 * * * *", "1/ * * * *", "99999999999 * * * *" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct cron_spec c;
		char why[256] = "";
		cr_expect_eq(cron_parse(bad[i], &c, why, sizeof(why)), -EINVAL, "accepted \"%s\"", bad[i]);
		cr_expect(why[0], "no reason for \"%s\"", bad[i]);
	}
	char longer[CRON_EXPR_MAX + 2];
	memset(longer, ' ', sizeof(longer) - 1);
	longer[sizeof(longer) - 1] = '\0';
	struct cron_spec c;
	char why[64];
	cr_expect_eq(cron_parse(longer, &c, why, sizeof(why)), -EINVAL);
}
