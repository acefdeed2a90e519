/* cron(5) expressions: five fields (minute hour day-of-month month day-of-week) with
 * lists, ranges, steps and names, or one of @yearly @annually @monthly @weekly @daily
 * @midnight @hourly. As in cron, when both day fields are restricted a day matches either;
 * 0 and 7 are Sunday. @reboot is refused: a schedule has no boot to run at. Times are
 * local time, like cron's. */
#ifndef SBX_CRON_H
#define SBX_CRON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define CRON_EXPR_MAX   256u     /* bytes of an expression */
#define CRON_SEARCH_MIN (5u * 366u * 24u * 60u) /* minutes looked at before "never" */

struct cron_spec {
	uint64_t minute; /* bit m: minute m matches (0..59) */
	uint32_t hour;   /* 0..23 */
	uint32_t dom;    /* 1..31 */
	uint32_t month;  /* 1..12 */
	uint32_t dow;    /* 0..6, Sunday 0 */
	bool dom_any, dow_any; /* the field was "*" (or a step over all of it) */
};

/* 0, or -EINVAL with why (at most whysz bytes) naming the field at fault. */
int cron_parse(const char *expr, struct cron_spec *ret, char *why, size_t whysz);
/* The first whole minute strictly after `after` that matches, in *ret. 0, or -ERANGE when
 * none comes within CRON_SEARCH_MIN minutes (30 February). */
int cron_next(const struct cron_spec *c, time_t after, time_t *ret);

#endif
