/* Schedules: timers that call run_code() (sched.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <time.h>

#include <event2/event.h>

#include "cron.h"
#include "dispatch_int.h"
#include "log.h"
#include "schedules.h"
#include "store.h"
#include "util.h"

struct sched {
	LIST_ENTRY(sched) entry;
	struct sched_conf c;
	struct cron_spec cron;
	struct event *timer;
	uint64_t next_at; /* unix seconds */
	uint64_t last_at;
	char last_run_id[PROTO_ID_MAX + 1];
	char last_status[PROTO_STR_MAX / 8];
	uint32_t runs, skipped;
	bool running; /* a run of it is going on */
	bool gone;    /* deleted while its run goes on: freed when it ends */
};

static LIST_HEAD(, sched) scheds = LIST_HEAD_INITIALIZER(scheds);
static struct launcher *sched_L;
static bool sched_stopping;

static void fire_cb(evutil_socket_t fd, short what, void *arg);

static void sched_free(struct sched *s)
{
	if (s->timer)
		event_free(s->timer);
	LIST_REMOVE(s, entry);
	sched_conf_clear(&s->c);
	free(s);
}

/* The next time after now: the interval from the last planned time (no drift), or cron's. */
static void arm(struct sched *s)
{
	uint64_t now = now_unix_s();
	time_t t;
	if (s->c.every_s) {
		uint64_t base = s->next_at ? s->next_at : now;
		s->next_at = base + s->c.every_s;
		if (s->next_at <= now) /* the daemon was away or busy: from now on */
			s->next_at = now + s->c.every_s;
	} else if (cron_next(&s->cron, (time_t)now, &t) == 0) {
		s->next_at = (uint64_t)t;
	} else {
		s->next_at = 0; /* never: 30 February */
		return;
	}
	/* a timer in milliseconds to the planned second, on the wall clock */
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	int64_t ms = (int64_t)s->next_at * 1000 - ((int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000);
	if (ms < 0)
		ms = 0;
	struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };
	if (!s->timer)
		s->timer = evtimer_new(sched_L->base, fire_cb, s);
	if (s->timer)
		evtimer_add(s->timer, &tv);
}

static void run_done(int err, const char *message, struct run_result *res, void *arg)
{
	struct sched *s = arg;
	s->running = false;
	if (s->gone) {
		sched_free(s);
		return;
	}
	if (res)
		snprintf(s->last_run_id, sizeof(s->last_run_id), "%s", res->id);
	if (err) {
		snprintf(s->last_status, sizeof(s->last_status), "refused: %s", message ? message : "error");
		log_warnx("schedule %s: %s", s->c.id, s->last_status);
		if (err == PERR_NOT_FOUND && !sched_stopping) { /* its sandbox is gone, and the row with it */
			log_info("schedule %s: its sandbox %s is gone; the schedule goes too", s->c.id,
			         s->c.sandbox_id);
			sched_free(s);
		}
		return;
	}
	if (res->timed_out)
		snprintf(s->last_status, sizeof(s->last_status), "timed out");
	else if (res->has_exit_code)
		snprintf(s->last_status, sizeof(s->last_status), "exit %u", res->exit_code);
	else
		snprintf(s->last_status, sizeof(s->last_status), "signal %u", res->signal);
}

static void fire_cb(evutil_socket_t fd, short what, void *arg)
{
	struct sched *s = arg;
	struct run_request req = { .language = s->c.language, .code = s->c.code, .stdin_data = "",
		                   .entrance = ENTRANCE_SCHEDULER };
	if (sched_stopping)
		return;
	arm(s); /* the next time first: a run that fails synchronously may free s */
	if (s->running) {
		s->skipped++;
		snprintf(s->last_status, sizeof(s->last_status), "skipped: the last run is still going");
		log_warnx("schedule %s: skipped, its last run %s is still going", s->c.id, s->last_run_id);
		return;
	}
	snprintf(req.sandbox_id, sizeof(req.sandbox_id), "%s", s->c.sandbox_id);
	s->running = true;
	s->runs++;
	s->last_at = now_unix_s();
	int e = run_code(sched_L, &req, run_done, s); /* done may already have run (and freed s) */
	if (e < 0)
		log_warnx("schedule: run_code: %s", strerror(-e));
}

static struct sched *sched_add(const struct sched_conf *c, char *why, size_t whysz)
{
	struct sched *s = calloc(1, sizeof(*s));
	if (!s) {
		snprintf(why, whysz, "out of memory");
		return NULL;
	}
	s->c = *c;
	s->c.code = strdup(c->code);
	s->c.cron = strdup(c->cron);
	if (!s->c.code || !s->c.cron ||
	    (!c->every_s && cron_parse(c->cron, &s->cron, why, whysz) < 0)) {
		if (!s->c.code || !s->c.cron)
			snprintf(why, whysz, "out of memory");
		sched_conf_clear(&s->c);
		free(s);
		return NULL;
	}
	LIST_INSERT_HEAD(&scheds, s, entry);
	arm(s);
	return s;
}

static int load_one(const struct sched_conf *c, void *arg)
{
	char why[256];
	if (!sched_add(c, why, sizeof(why)))
		log_warnx("schedule %s: not loaded: %s", c->id, why);
	return 0;
}

int sched_init(struct launcher *L)
{
	sched_L = L;
	return store_sched_foreach(L->db, load_one, NULL);
}

void sched_shutdown(void)
{
	struct sched *s;
	sched_stopping = true;
	LIST_FOREACH(s, &scheds, entry)
		if (s->timer)
			evtimer_del(s->timer);
}

void sched_sandbox_gone(const char *sandbox_id)
{
	struct sched *s, *next;
	for (s = LIST_FIRST(&scheds); s; s = next) {
		next = LIST_NEXT(s, entry);
		if (s->gone || strcmp(s->c.sandbox_id, sandbox_id) != 0)
			continue;
		if (s->running) {
			s->gone = true;
			if (s->timer)
				evtimer_del(s->timer);
		} else {
			sched_free(s);
		}
	}
}

/* ---- the wire ------------------------------------------------------------------------ */

static void send_sched(struct proto_chan *ch, uint32_t id, const struct sched *s)
{
	struct msg_SCHED_REP rep = {
		.id = (char *)s->c.id, .sandbox_id = (char *)s->c.sandbox_id, .language = s->c.language,
		.code = s->c.code, .every_s = s->c.every_s, .cron = s->c.cron,
		.created_at = s->c.created_at, .next_at = s->next_at, .last_at = s->last_at,
		.last_run_id = (char *)s->last_run_id, .last_status = (char *)s->last_status,
		.runs = s->runs, .skipped = s->skipped,
	};
	proto_chan_send(ch, MSG_SCHED_REP, id, &rep, -1);
}

void sched_h_put(struct proto_chan *ch, const struct proto_hdr *h, void *m, int fd, void *arg)
{
	struct msg_SCHED_PUT *in = m;
	struct sched_conf c = { .language = in->language, .code = in->code, .every_s = in->every_s,
		                .cron = in->cron, .created_at = now_unix_s() };
	struct cron_spec spec;
	struct sandbox sb;
	struct sched *s;
	char why[256];
	unsigned n = 0;
	int r;

	if ((in->every_s != 0) == (in->cron[0] != '\0')) {
		reply_err(ch, h->id, PERR_INVALID_ARGUMENT, "give exactly one of every (seconds) and cron");
		return;
	}
	if (in->every_s && (in->every_s < PROTO_SCHED_EVERY_MIN || in->every_s > PROTO_SCHED_EVERY_MAX)) {
		reply_err(ch, h->id, PERR_INVALID_ARGUMENT, "every: %u..%u seconds", PROTO_SCHED_EVERY_MIN,
		          PROTO_SCHED_EVERY_MAX);
		return;
	}
	if (in->cron[0] && cron_parse(in->cron, &spec, why, sizeof(why)) < 0) {
		reply_err(ch, h->id, PERR_INVALID_ARGUMENT, "cron: %s", why);
		return;
	}
	if (!in->code[0]) {
		reply_err(ch, h->id, PERR_INVALID_ARGUMENT, "code: required");
		return;
	}
	LIST_FOREACH(s, &scheds, entry)
		n += !s->gone;
	if (n >= SCHED_MAX) {
		reply_err(ch, h->id, PERR_CONFLICT, "no room for another schedule (at most %u)", SCHED_MAX);
		return;
	}
	if (load_sandbox(ch, h->id, in->sandbox_id, &sb) < 0)
		return;
	snprintf(c.sandbox_id, sizeof(c.sandbox_id), "%s", sb.id);
	sandbox_clear(&sb);
	if ((r = random_id("sch_", 12, c.id, sizeof(c.id))) < 0 || (r = store_sched_insert(sched_L->db, &c)) < 0) {
		reply_err(ch, h->id, PERR_INTERNAL, "recording the schedule: %s", strerror(-r));
		return;
	}
	if (!(s = sched_add(&c, why, sizeof(why)))) {
		store_sched_delete(sched_L->db, c.id);
		reply_err(ch, h->id, PERR_INTERNAL, "%s", why);
		return;
	}
	log_info("schedule %s: %s%s%s in sandbox %s", c.id, c.every_s ? "every " : "cron \"",
	         c.every_s ? "" : c.cron, c.every_s ? "s" : "\"", c.sandbox_id);
	send_sched(ch, h->id, s);
}

void sched_h_list(struct proto_chan *ch, const struct proto_hdr *h, void *m, int fd, void *arg)
{
	struct msg_LIST_END end = { 0 };
	struct sched *s;
	LIST_FOREACH(s, &scheds, entry)
		if (!s->gone) {
			send_sched(ch, h->id, s);
			end.count++;
		}
	proto_chan_send(ch, MSG_LIST_END, h->id, &end, -1);
}

void sched_h_delete(struct proto_chan *ch, const struct proto_hdr *h, void *m, int fd, void *arg)
{
	struct msg_SCHED_DELETE *in = m;
	struct msg_OK ok = { .id = in->id };
	struct sched *s;
	int r;
	LIST_FOREACH(s, &scheds, entry)
		if (!s->gone && strcmp(s->c.id, in->id) == 0)
			break;
	if (!s) {
		reply_err(ch, h->id, PERR_NOT_FOUND, "no schedule %s", in->id);
		return;
	}
	if ((r = store_sched_delete(sched_L->db, s->c.id)) < 0 && r != -ENOENT) {
		reply_err(ch, h->id, PERR_INTERNAL, "deleting the schedule: %s", strerror(-r));
		return;
	}
	proto_chan_send(ch, MSG_OK, h->id, &ok, -1);
	if (s->running) { /* its run ends as it would; the schedule is freed then */
		s->gone = true;
		if (s->timer)
			evtimer_del(s->timer);
	} else {
		sched_free(s);
	}
}
