/* cron(5) expressions (cron.h). */
#include "cron.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

struct field {
	const char *name;
	unsigned lo, hi;
	const char *const *names; /* 3-letter names from lo, or NULL */
};

static const char *const month_names[] = { "jan", "feb", "mar", "apr", "may", "jun",
	                                   "jul", "aug", "sep", "oct", "nov", "dec", NULL };
static const char *const dow_names[] = { "sun", "mon", "tue", "wed", "thu", "fri", "sat", NULL };

static const struct field fields[5] = {
	{ "minute", 0, 59, NULL },     { "hour", 0, 23, NULL },
	{ "day of month", 1, 31, NULL }, { "month", 1, 12, month_names },
	{ "day of week", 0, 7, dow_names },
};

/* A number or (where the field has them) a name; advances *p. */
static int value(const struct field *f, const char **p, unsigned *ret)
{
	const char *s = *p;
	if (isdigit((unsigned char)*s)) {
		unsigned long v = 0;
		while (isdigit((unsigned char)*s) && v <= 1000)
			v = v * 10 + (unsigned)(*s++ - '0');
		if (v < f->lo || v > f->hi)
			return -EINVAL;
		*ret = (unsigned)v;
		*p = s;
		return 0;
	}
	for (unsigned i = 0; f->names && f->names[i]; i++)
		if (strncasecmp(s, f->names[i], 3) == 0 && !isalpha((unsigned char)s[3])) {
			*ret = f->lo + i;
			*p = s + 3;
			return 0;
		}
	return -EINVAL;
}

/* One field: a comma list of *, N, N-M, each with an optional /STEP ("N/S" is N to the
 * field's end by S). *any: it starts with "*", which is what Vixie cron's day rule looks at. */
static int field_parse(const struct field *f, const char *text, uint64_t *bits, bool *any)
{
	const char *p = text;
	unsigned top = f->hi == 7 ? 6 : f->hi; /* day of week: * is 0..6 */
	*bits = 0;
	*any = text[0] == '*';
	for (;;) {
		unsigned lo, hi, step = 1;
		bool star = false, range = false;
		if (*p == '*') {
			star = true;
			lo = f->lo;
			hi = top;
			p++;
		} else {
			if (value(f, &p, &lo) < 0)
				return -EINVAL;
			hi = lo;
			if (*p == '-') {
				p++;
				range = true;
				if (value(f, &p, &hi) < 0 || hi < lo)
					return -EINVAL;
			}
		}
		if (*p == '/') {
			unsigned long st = 0;
			p++;
			if (!isdigit((unsigned char)*p))
				return -EINVAL;
			while (isdigit((unsigned char)*p) && st <= 1000)
				st = st * 10 + (unsigned)(*p++ - '0');
			if (st == 0 || st > f->hi + 1u)
				return -EINVAL;
			step = (unsigned)st;
			if (!star && !range)
				hi = top;
		}
		for (unsigned v = lo; v <= hi; v += step)
			*bits |= 1ull << (f->hi == 7 && v == 7 ? 0 : v); /* 7 is Sunday too */
		if (*p == '\0')
			return 0;
		if (*p != ',')
			return -EINVAL;
		p++;
	}
}

int cron_parse(const char *expr, struct cron_spec *ret, char *why, size_t whysz)
{
	static const struct { const char *alias, *expr; } aliases[] = {
		{ "@yearly", "0 0 1 1 *" }, { "@annually", "0 0 1 1 *" }, { "@monthly", "0 0 1 * *" },
		{ "@weekly", "0 0 * * 0" }, { "@daily", "0 0 * * *" },    { "@midnight", "0 0 * * *" },
		{ "@hourly", "0 * * * *" },
	};
	char buf[CRON_EXPR_MAX + 1], *tok[6], *save = NULL;
	uint64_t bits[5];
	bool any[5];
	int n = 0;

	if (!expr || strlen(expr) > CRON_EXPR_MAX) {
		snprintf(why, whysz, "at most %u bytes", CRON_EXPR_MAX);
		return -EINVAL;
	}
	if (expr[0] == '@') {
		for (size_t i = 0; i < sizeof(aliases) / sizeof(aliases[0]); i++)
			if (strcmp(expr, aliases[i].alias) == 0)
				return cron_parse(aliases[i].expr, ret, why, whysz);
		snprintf(why, whysz, "unknown %s (@yearly @annually @monthly @weekly @daily "
		         "@midnight @hourly; @reboot has no meaning here)", expr);
		return -EINVAL;
	}
	snprintf(buf, sizeof(buf), "%s", expr);
	for (char *t = strtok_r(buf, " \t", &save); t && n < 6; t = strtok_r(NULL, " \t", &save))
		tok[n++] = t;
	if (n != 5) {
		snprintf(why, whysz, "five fields: minute hour day-of-month month day-of-week");
		return -EINVAL;
	}
	for (int i = 0; i < 5; i++)
		if (field_parse(&fields[i], tok[i], &bits[i], &any[i]) < 0 || !bits[i]) {
			snprintf(why, whysz, "%s: \"%s\" is not valid (%u-%u%s)", fields[i].name, tok[i],
			         fields[i].lo, fields[i].hi, fields[i].names ? " or a name" : "");
			return -EINVAL;
		}
	*ret = (struct cron_spec){ .minute = bits[0], .hour = (uint32_t)bits[1],
		                   .dom = (uint32_t)bits[2], .month = (uint32_t)bits[3],
		                   .dow = (uint32_t)bits[4], .dom_any = any[2], .dow_any = any[4] };
	return 0;
}

/* Vixie cron's rule: when either day field starts with "*", both must match (a "*" matches
 * every day); when both are restricted, either one does. */
static bool day_matches(const struct cron_spec *c, const struct tm *tm)
{
	bool dom = c->dom & (1u << tm->tm_mday), dow = c->dow & (1u << tm->tm_wday);
	if (c->dom_any || c->dow_any)
		return dom && dow;
	return dom || dow;
}

int cron_next(const struct cron_spec *c, time_t after, time_t *ret)
{
	struct tm tm;
	time_t t = after - after % 60 + 60; /* the next whole minute */
	for (unsigned looked = 0; looked < CRON_SEARCH_MIN; looked++) {
		if (!localtime_r(&t, &tm))
			return -ERANGE;
		if (!(c->month & (1u << (tm.tm_mon + 1)))) { /* to the first of the next month */
			tm.tm_mon++;
			tm.tm_mday = 1;
			tm.tm_hour = tm.tm_min = tm.tm_sec = 0;
		} else if (!day_matches(c, &tm)) { /* to the next midnight */
			tm.tm_mday++;
			tm.tm_hour = tm.tm_min = tm.tm_sec = 0;
		} else if (!(c->hour & (1u << tm.tm_hour))) {
			tm.tm_hour++;
			tm.tm_min = tm.tm_sec = 0;
		} else if (!(c->minute & (1ull << tm.tm_min))) {
			tm.tm_min++;
			tm.tm_sec = 0;
		} else {
			*ret = t;
			return 0;
		}
		tm.tm_isdst = -1;
		time_t n = mktime(&tm);
		if (n <= t) /* a clock change folded time back: step a minute */
			n = t + 60;
		t = n;
	}
	return -ERANGE;
}
