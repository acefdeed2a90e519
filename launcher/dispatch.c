/* The launcher's dispatch tables and the handlers of what the API sends. The API process
 * parses untrusted input, so it is treated as hostile: every field is checked again here
 * and bad input gets an ERROR and changes nothing. */
#include "disk.h"
#include "dispatch.h"
#include "runner.h"
#include "dispatch_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "caps.h"
#include "apps.h"
#include "schedules.h"
#include "cleanup.h"
#include "fence/stage.h"
#include "log.h"
#include "proto_chan.h"
#include "registry.h"
#include "sandbox.h"
#include "store.h"
#include "trace.h"
#include "util.h"

struct launcher *dispatch_L;
static uint64_t api_gen;   /* bumped when the API channel is replaced: stale replies drop */
static bool sbxd_lost;

bool dispatch_sbxd_lost(void) { return sbxd_lost; }

struct pending *pending_new(uint32_t id)
{
	struct pending *p = calloc(1, sizeof(*p));
	if (p) {
		p->id = id;
		p->gen = api_gen;
	}
	return p;
}

struct proto_chan *pending_chan(const struct pending *p)
{
	return p->gen == api_gen ? dispatch_L->api : NULL; /* NULL: the reply is dropped */
}

void reply_err(struct proto_chan *ch, uint32_t id, enum proto_err code, const char *fmt, ...)
{
	char msg[PROTO_STR_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (ch)
		proto_chan_send_error(ch, id, code, msg);
}

static enum proto_err perr_from_errno(int r)
{
	switch (r) {
	case -ENOENT:
		return PERR_NOT_FOUND;
	case -EEXIST:
	case -ENOSPC:
		return PERR_CONFLICT;
	case -EDQUOT:
		return PERR_INSUFFICIENT_STORAGE;
	case -EINVAL:
		return PERR_INVALID_ARGUMENT;
	default:
		return PERR_INTERNAL;
	}
}

#define SBX_TOO_LARGE_MSG                                                                          \
	"the sandbox's settings would not fit one message (64 KiB): use fewer or shorter paths"

/* Load a sandbox named by an API-supplied id; replies on failure. */
int load_sandbox(struct proto_chan *ch, uint32_t id, const char *sid, struct sandbox *ret)
{
	int r;
	if (!sandbox_id_valid(sid)) {
		reply_err(ch, id, PERR_INVALID_ARGUMENT, "sandbox id: 1..%u of [a-z0-9_]", PROTO_ID_MAX);
		return -EINVAL;
	}
	if ((r = store_sandbox_get(dispatch_L->db, sid, ret)) < 0) {
		if (r == -ENOENT)
			reply_err(ch, id, PERR_NOT_FOUND, "no sandbox %s", sid);
		else
			reply_err(ch, id, PERR_INTERNAL, "database: %s", strerror(-r));
	}
	return r;
}

static int send_sbx_rep(struct proto_chan *ch, uint32_t id, const struct sandbox *s,
                        const char *extra_note)
{
	struct msg_SBX_REP rep;
	char note[SANDBOX_NOTE_MAX];
	const char *why;
	size_t n;
	int r;

	if ((r = sandbox_to_rep(s, &rep)) < 0) {
		reply_err(ch, id, PERR_INTERNAL, "out of memory");
		return r;
	}
	sandbox_note(s, &dispatch_L->net, note, sizeof(note));
	n = strlen(note);
	if (s->backend == BACKEND_DOCKER && caps_docker_unavailable(&why) && n < sizeof(note))
		n += (size_t)snprintf(note + n, sizeof(note) - n, "%sdocker is not available: %s",
		                      n ? "; " : "", why);
	if (!disk_enforced(dispatch_L, s->workdir) && n < sizeof(note))
		n += (size_t)snprintf(note + n, sizeof(note) - n, "%slimits.diskMb is not enforced: %s",
		                      n ? "; " : "",
		                      dispatch_L->disk_why ? dispatch_L->disk_why
		                                           : "the workdir has no disk image (made "
		                                             "before limits.diskMb, or its image "
		                                             "could not be mounted)");
	if (extra_note && *extra_note && n < sizeof(note))
		snprintf(note + n, sizeof(note) - n, "%s%s", n ? "; " : "", extra_note);
	rep.note = note;
	r = proto_chan_send(ch, MSG_SBX_REP, id, &rep, -1);
	sandbox_rep_release(&rep);
	return r;
}

/* ---- health, caps, policy ----------------------------------------------------------- */

static void h_health(struct proto_chan *ch, const struct proto_hdr *h, void *m, int fd, void *arg)
{
	_cleanup_free_ char *db_path = NULL;
	char note[512];
	int v = store_schema_version(dispatch_L->db);

	if (asprintf(&db_path, "%s/sbx.db", dispatch_L->data_dir) < 0) {
		db_path = NULL;
		reply_err(ch, h->id, PERR_INTERNAL, "out of memory");
		return;
	}
	if (!dispatch_L->bwrap_path)
		snprintf(note, sizeof(note), "bwrap not found: runs are degraded (no OS barrier)");
	else if (dispatch_L->root)
		snprintf(note, sizeof(note), "jails run as per-sandbox uids from %u", SBX_JAIL_UID_BASE);
	else
		snprintf(note, sizeof(note),
		         "launcher is not root: jails run as the daemon's user inside a user namespace");
	struct msg_HEALTH_REP rep = {
		.isolation = dispatch_L->bwrap_path ? "bwrap" : "degraded",
		.bwrap_version = (char *)caps_bwrap_version(),
		.launcher_root = dispatch_L->root,
		.jail_uid_base = dispatch_L->root ? SBX_JAIL_UID_BASE : 0,
		.db_path = db_path,
		.schema_version = v < 0 ? 0 : (uint32_t)v,
		.live_runs = dispatch_L->live_runs,
		.note = note,
	};
	proto_chan_send(ch, MSG_HEALTH_REP, h->id, &rep, -1);
}

static void caps_reply(const struct msg_CAPS_REP *rep, void *arg)
{
	struct pending *p = arg;
	struct proto_chan *ch = pending_chan(p);
	if (ch)
		proto_chan_send(ch, MSG_CAPS_REP, p->id, rep, -1);
	free(p);
}

static void h_caps(struct proto_chan *ch, const struct proto_hdr *h, void *m, int fd, void *arg)
{
	struct msg_CAPS_REQ *req = m;
	struct pending *p = pending_new(h->id);
	int r;
	if (!p) {
		reply_err(ch, h->id, PERR_INTERNAL, "out of memory");
		return;
	}
	if ((r = caps_get(req->recheck, caps_reply, p)) < 0) {
		free(p);
		reply_err(ch, h->id, PERR_ENGINE_UNAVAILABLE, "too many capability requests waiting");
	}
}

static void send_policy(struct proto_chan *ch, uint32_t id)
{
	struct msg_POLICY_REP p;
	int r = store_policy_get(dispatch_L->db, &p);
	if (r < 0)
		reply_err(ch, id, PERR_INTERNAL, "database: %s", strerror(-r));
	else
		proto_chan_send(ch, MSG_POLICY_REP, id, &p, -1);
}

static void h_policy_get(struct proto_chan *ch, const struct proto_hdr *h, void *m, int fd, void *arg)
{
	send_policy(ch, h->id);
}

static void h_policy_set(struct proto_chan *ch, const struct proto_hdr *h, void *m, int fd, void *arg)
{
	struct msg_POLICY_SET *in = m;
	struct msg_POLICY_REP p = { .exec_shell = in->exec_shell,
		                    .scheduler_script = in->scheduler_script,
		                    .run_python = in->run_python,
		                    .run_node = in->run_node };
	int r = store_policy_set(dispatch_L->db, &p);
	if (r < 0) {
		reply_err(ch, h->id, PERR_INTERNAL, "database: %s", strerror(-r));
		return;
	}
	log_info("exec policy set: execShell=%d schedulerScript=%d runPython=%d runNode=%d",
	         p.exec_shell, p.scheduler_script, p.run_python, p.run_node);
	runner_discard_warm(NULL); /* jails built under the old policy are never used */
	send_policy(ch, h->id);
}

/* ---- sandboxes --------------------------------------------------------------------- */

/* A reply to a request that set mounts: what cannot be idmapped is measured now, on the
 * real sources, and said here, not discovered in a run (the runs say it again). */
static void send_sbx_rep_mounts(struct proto_chan *ch, uint32_t id, const struct sandbox *s)
{
	char note[STAGE_NOTE_MAX] = "";
	if (dispatch_L->root && s->backend != BACKEND_DOCKER)
		stage_probe(s, s->jail_uid, note, sizeof(note));
	send_sbx_rep(ch, id, s, note);
}

static void h_sbx_create(struct proto_chan *ch, const struct proto_hdr *h, void *m, int fd, void *arg)
{
	struct msg_SBX_CREATE *in = m;
	struct sandbox_spec spec;
	struct sandbox s;
	char reason[SANDBOX_REASON_MAX];
	int r;

	SANDBOX_SPEC_FROM(&spec, in);
	if ((r = sandbox_spec_check(&spec, SBXF_ALL_, reason, sizeof(reason))) < 0 ||
	    (r = sandbox_net_check(&SANDBOX_NET_OF(&spec), dispatch_L->api_port, reason,
	                           sizeof(reason))) < 0) {
		reply_err(ch, h->id, PERR_INVALID_ARGUMENT, "%s", reason);
		return;
	}
	/* the same source checks as MOUNT_ADD; a refused mount refuses the whole create */
	if ((r = sandbox_mounts_resolve(dispatch_L, &in->mounts, reason, sizeof(reason))) < 0 ||
	    (r = sandbox_read_paths_check(dispatch_L, &in->read_paths, reason, sizeof(reason))) < 0) {
		reply_err(ch, h->id, r == -EPERM ? PERR_FORBIDDEN : PERR_INVALID_ARGUMENT, "%s", reason);
		return;
	}
	spec.mounts = in->mounts;
	if ((r = sandbox_create(dispatch_L, &spec, &s)) < 0) {
		if (r == -EEXIST)
			reply_err(ch, h->id, PERR_CONFLICT, "a sandbox named \"%s\" already exists", spec.name);
		else if (r == -ENOSPC)
			reply_err(ch, h->id, PERR_CONFLICT, "no room for another sandbox (at most %u)",
			          SBX_SANDBOXES_MAX);
		else if (r == -EDQUOT)
			reply_err(ch, h->id, PERR_INSUFFICIENT_STORAGE,
			          "no disk room for a %u MiB workdir image: the data directory's "
			          "filesystem keeps a reserve for the database",
			          spec.disk_mb ? spec.disk_mb : SBX_DISK_MB_DEFAULT);
		else if (r == -EMSGSIZE)
			reply_err(ch, h->id, PERR_PAYLOAD_TOO_LARGE, SBX_TOO_LARGE_MSG);
		else
			reply_err(ch, h->id, PERR_INTERNAL, "creating the sandbox: %s", strerror(-r));
		return;
	}
	log_info("sandbox %s created (name \"%s\", jail uid %u)", s.id, s.name, s.jail_uid);
	send_sbx_rep_mounts(ch, h->id, &s);
	sandbox_clear(&s);
}

static void h_sbx_get(struct proto_chan *ch, const struct proto_hdr *h, void *m, int fd, void *arg)
{
	struct msg_SBX_GET *in = m;
	struct sandbox s;
	if (load_sandbox(ch, h->id, in->id, &s) < 0)
		return;
	send_sbx_rep(ch, h->id, &s, NULL);
	sandbox_clear(&s);
}

/* SBX_LIST can name up to SBX_SANDBOXES_MAX sandboxes, more than the channel's write queue
 * holds: the rows go out in batches from the event loop, and a full queue is retried
 * later instead of losing rows or the LIST_END. */
struct list_job {
	uint32_t id;
	uint64_t gen;
	char (*ids)[PROTO_ID_MAX + 1];
	size_t n, next, cap;
	uint32_t count;
	unsigned stalls;
	struct event *ev;
	struct proto_chan *ch; /* during the first pass only */
	bool direct;           /* the first pass still sends rows itself */
};

static void list_job_free(struct list_job *j)
{
	if (j->ev)
		event_free(j->ev);
	free(j->ids);
	free(j);
}

static void list_job_step(evutil_socket_t unused, short what, void *arg)
{
	struct list_job *j = arg;
	struct proto_chan *ch = j->gen == api_gen ? dispatch_L->api : NULL;
	struct timeval tv = { 0, DISPATCH_LIST_TICK_US };
	int r = 0;

	if (!ch) {
		list_job_free(j);
		return;
	}
	for (unsigned b = 0; b < DISPATCH_LIST_BATCH && j->next < j->n; b++) {
		struct sandbox s;
		if (store_sandbox_get(dispatch_L->db, j->ids[j->next], &s) < 0) {
			j->next++; /* deleted meanwhile */
			continue;
		}
		r = send_sbx_rep(ch, j->id, &s, NULL);
		sandbox_clear(&s);
		if (r == -ENOBUFS)
			break;
		if (r < 0) { /* the channel died */
			list_job_free(j);
			return;
		}
		j->next++;
		j->count++;
	}
	if (r == 0 && j->next >= j->n) {
		struct msg_LIST_END end = { .count = j->count };
		r = proto_chan_send(ch, MSG_LIST_END, j->id, &end, -1);
		if (r != -ENOBUFS) {
			list_job_free(j);
			return;
		}
	}
	if (r == -ENOBUFS) {
		if (++j->stalls > DISPATCH_LIST_STALLS_MAX) {
			log_warnx("SBX_LIST %u: the API stopped reading; list abandoned", j->id);
			list_job_free(j);
			return;
		}
		tv.tv_usec = DISPATCH_LIST_STALL_US;
	} else {
		j->stalls = 0;
	}
	evtimer_add(j->ev, &tv);
}

/* One pass over the table: rows go out at once while the write queue takes them; the ids
 * of the rest are kept for list_job_step (which loads each again when its turn comes). */
static int list_collect(const struct sandbox *s, void *arg)
{
	struct list_job *j = arg;
	if (j->n == 0 && j->direct) {
		int r = send_sbx_rep(j->ch, j->id, s, NULL);
		if (r == 0) {
			j->count++;
			return 0;
		}
		if (r != -ENOBUFS)
			return 1; /* the channel died: list_job_step ends the job */
		j->direct = false;
	}
	if (j->n == j->cap) {
		size_t cap = j->cap ? j->cap * 2 : 64;
		void *n = reallocarray(j->ids, cap, sizeof(*j->ids));
		if (!n || j->n >= SBX_SANDBOXES_MAX)
			return 1;
		j->ids = n;
		j->cap = cap;
	}
	snprintf(j->ids[j->n++], sizeof(j->ids[0]), "%s", s->id);
	return 0;
}

static void h_sbx_list(struct proto_chan *ch, const struct proto_hdr *h, void *m, int fd, void *arg)
{
	struct list_job *j = calloc(1, sizeof(*j));
	int r;

	if (!j || !(j->ev = evtimer_new(dispatch_L->base, list_job_step, j))) {
		free(j);
		reply_err(ch, h->id, PERR_INTERNAL, "out of memory");
		return;
	}
	j->id = h->id;
	j->gen = api_gen;
	j->ch = ch;
	j->direct = true;
	if ((r = store_sandbox_foreach(dispatch_L->db, list_collect, j)) < 0) {
		list_job_free(j);
		reply_err(ch, h->id, PERR_INTERNAL, "database: %s", strerror(-r));
		return;
	}
	list_job_step(-1, 0, j);
}

/* limits.diskMb changed by an update: the image grows online; it never shrinks (ext4
 * cannot while mounted, and the files may not fit). 0, or -ECANCELED when replied. */
static int disk_resize(struct proto_chan *ch, uint32_t id, const struct sandbox *s, uint32_t old_mb)
{
	int r;
	if (s->disk_mb == old_mb)
		return 0;
	if (s->disk_mb < old_mb) {
		reply_err(ch, id, PERR_INVALID_ARGUMENT,
		          "limits.diskMb: %u is below the current %u; a workdir image only grows",
		          s->disk_mb, old_mb);
		return -ECANCELED;
	}
	if (!disk_enforced(dispatch_L, s->workdir))
		return 0; /* nothing enforced to resize: the stored value waits, the note says why */
	if ((r = disk_image_grow(dispatch_L, s->id, s->workdir, old_mb, s->disk_mb)) == 0)
		return 0;
	if (r == -EDQUOT)
		reply_err(ch, id, PERR_INSUFFICIENT_STORAGE,
		          "no disk room to grow the workdir image to %u MiB", s->disk_mb);
	else if (r == -EPERM)
		reply_err(ch, id, PERR_CONFLICT,
		          "limits.diskMb: the workdir image could not be grown online on this host "
		          "(ext4 online resize needs CAP_SYS_RESOURCE); it stays %u MiB", old_mb);
	else
		reply_err(ch, id, PERR_INTERNAL, "growing the workdir image: %s", strerror(-r));
	return -ECANCELED;
}

static void h_sbx_update(struct proto_chan *ch, const struct proto_hdr *h, void *m, int fd, void *arg)
{
	struct msg_SBX_UPDATE *in = m;
	struct sandbox_spec spec;
	struct sandbox s, other;
	char reason[SANDBOX_REASON_MAX];
	uint32_t old_disk_mb;
	int r;

	runner_discard_warm(in->id); /* built for the old settings */
	SANDBOX_SPEC_FROM(&spec, in);
	if ((r = sandbox_spec_check(&spec, in->set_mask, reason, sizeof(reason))) < 0) {
		reply_err(ch, h->id, PERR_INVALID_ARGUMENT, "%s", reason);
		return;
	}
	if (((in->set_mask & SBXF_MOUNTS) &&
	     (r = sandbox_mounts_resolve(dispatch_L, &in->mounts, reason, sizeof(reason))) < 0) ||
	    ((in->set_mask & SBXF_READ_PATHS) &&
	     (r = sandbox_read_paths_check(dispatch_L, &in->read_paths, reason, sizeof(reason))) < 0)) {
		reply_err(ch, h->id, r == -EPERM ? PERR_FORBIDDEN : PERR_INVALID_ARGUMENT, "%s", reason);
		return;
	}
	spec.mounts = in->mounts;
	if (load_sandbox(ch, h->id, in->id, &s) < 0)
		return;
	if ((in->set_mask & SBXF_NAME) && strcmp(spec.name, s.name) != 0 &&
	    store_sandbox_get_by_name(dispatch_L->db, spec.name, &other) == 0) {
		sandbox_clear(&other);
		sandbox_clear(&s);
		reply_err(ch, h->id, PERR_CONFLICT, "a sandbox named \"%s\" already exists", spec.name);
		return;
	}
	/* settings take effect on the next run: each run builds its fence from the row */
	old_disk_mb = s.disk_mb;
	if ((r = sandbox_spec_apply(&s, &spec, in->set_mask)) == 0 &&
	    sandbox_net_check(&SANDBOX_NET_OF(&s), dispatch_L->api_port, reason, sizeof(reason)) < 0) {
		reply_err(ch, h->id, PERR_INVALID_ARGUMENT, "%s", reason);
		sandbox_clear(&s);
		return;
	}
	if (r < 0 || (r = sandbox_rep_fits(&s)) < 0 ||
	    (r = disk_resize(ch, h->id, &s, old_disk_mb)) < 0 ||
	    (r = store_sandbox_update(dispatch_L->db, &s)) < 0) {
		if (r == -ECANCELED) /* replied */
			;
		else if (r == -EMSGSIZE)
			reply_err(ch, h->id, PERR_PAYLOAD_TOO_LARGE, SBX_TOO_LARGE_MSG);
		else
			reply_err(ch, h->id, r == -EEXIST ? PERR_CONFLICT : PERR_INTERNAL,
			          "updating: %s", strerror(-r));
		sandbox_clear(&s);
		return;
	}
	send_sbx_rep_mounts(ch, h->id, &s);
	sandbox_clear(&s);
}

static void delete_done(int err, void *arg)
{
	struct pending *p = arg;
	struct proto_chan *ch = pending_chan(p);
	if (err < 0)
		log_warnx("sandbox %s: removing its workdir: %s", p->sandbox_id, strerror(-err));
	else
		log_info("sandbox %s deleted", p->sandbox_id);
	if (ch) {
		struct msg_OK ok = { .id = p->sandbox_id };
		proto_chan_send(ch, MSG_OK, p->id, &ok, -1);
	}
	free(p);
}

static void rm_logged(int err, void *arg)
{
	if (err < 0)
		log_warnx("removing a sandbox's workdir: %s", strerror(-err));
}

int dispatch_sandbox_remove(const struct sandbox *s, void (*done)(int err, void *arg), void *arg)
{
	int r;
	if ((r = store_sandbox_delete(dispatch_L->db, s->id)) < 0)
		return r;
	run_sandbox_cleanup(dispatch_L, s); /* docker: its container goes too */
	sched_sandbox_gone(s->id);          /* its schedules went with the row */
	trace_remove(dispatch_L, s->id);    /* and its trace log */
	/* the image goes whole: unmount and unlink need no new space, however full it is */
	if ((r = disk_image_release(dispatch_L, s->id, s->workdir)) < 0)
		log_warnx("sandbox %s: releasing its disk image: %s", s->id, strerror(-r));
	if (!done)
		done = rm_logged;
	if ((r = sandbox_workdir_remove(dispatch_L, s->id, s->jail_uid, done, arg)) < 0)
		done(r, arg); /* the row is gone; the stale directory is only logged */
	return 0;
}

static void h_sbx_delete(struct proto_chan *ch, const struct proto_hdr *h, void *m, int fd, void *arg)
{
	struct msg_SBX_DELETE *in = m;
	struct sandbox s;
	struct pending *p;
	const char *app;
	int r;

	runner_discard_warm(in->id);
	if (load_sandbox(ch, h->id, in->id, &s) < 0)
		return;
	if ((app = apps_owner_of(s.id))) {
		reply_err(ch, h->id, PERR_CONFLICT, "sandbox %s is the fence of app %s: DELETE /apps/%s",
		          s.id, app, app);
		sandbox_clear(&s);
		return;
	}
	if (!(p = pending_new(h->id))) {
		sandbox_clear(&s);
		reply_err(ch, h->id, PERR_INTERNAL, "out of memory");
		return;
	}
	snprintf(p->sandbox_id, sizeof(p->sandbox_id), "%s", s.id);
	if ((r = dispatch_sandbox_remove(&s, delete_done, p)) < 0) {
		free(p);
		reply_err(ch, h->id, perr_from_errno(r), "deleting: %s", strerror(-r));
	}
	sandbox_clear(&s);
}

/* ---- mounts ------------------------------------------------------------------------ */

static void h_mount_add(struct proto_chan *ch, const struct proto_hdr *h, void *m, int fd, void *arg)
{
	struct msg_MOUNT_ADD *in = m;
	_cleanup_free_ char *canon = NULL;
	char reason[SANDBOX_REASON_MAX];
	struct sandbox s;
	int r;

	runner_discard_warm(in->sandbox_id);
	if ((r = sandbox_mount_check(dispatch_L, in->source, in->target, &canon, reason, sizeof(reason))) < 0) {
		reply_err(ch, h->id, r == -EPERM ? PERR_FORBIDDEN : PERR_INVALID_ARGUMENT, "%s", reason);
		return;
	}
	if (load_sandbox(ch, h->id, in->sandbox_id, &s) < 0)
		return;
	if ((r = sandbox_mount_append(&s, canon, in->target, in->read_only, reason, sizeof(reason))) < 0) {
		reply_err(ch, h->id, r == -ENOMEM ? PERR_INTERNAL : PERR_CONFLICT, "%s", reason);
		sandbox_clear(&s);
		return;
	}
	if ((r = sandbox_rep_fits(&s)) < 0 || (r = store_sandbox_update(dispatch_L->db, &s)) < 0) {
		if (r == -EMSGSIZE)
			reply_err(ch, h->id, PERR_PAYLOAD_TOO_LARGE, SBX_TOO_LARGE_MSG);
		else
			reply_err(ch, h->id, PERR_INTERNAL, "adding the mount: %s", strerror(-r));
		sandbox_clear(&s);
		return;
	}
	send_sbx_rep_mounts(ch, h->id, &s);
	sandbox_clear(&s);
}

static void h_mount_del(struct proto_chan *ch, const struct proto_hdr *h, void *m, int fd, void *arg)
{
	struct msg_MOUNT_DEL *in = m;
	struct sandbox s;
	struct proto_strv src = { 0 }, tgt = { 0 };
	struct proto_u32v ro = { 0 };
	bool found = false;
	int r = 0;

	runner_discard_warm(in->sandbox_id);
	if (load_sandbox(ch, h->id, in->sandbox_id, &s) < 0)
		return;
	for (uint32_t i = 0; i < s.mount_targets.n && r == 0; i++) {
		if (strcmp(s.mount_targets.v[i], in->target) == 0) {
			found = true;
			continue;
		}
		if ((r = proto_strv_push(&src, i < s.mount_sources.n ? s.mount_sources.v[i] : "")) == 0 &&
		    (r = proto_strv_push(&tgt, s.mount_targets.v[i])) == 0)
			r = proto_u32v_push(&ro, i < s.mount_ro.n ? s.mount_ro.v[i] : 1);
	}
	if (r == 0 && !found) {
		reply_err(ch, h->id, PERR_NOT_FOUND, "no mount at \"%s\"", in->target);
		goto out;
	}
	proto_strv_clear(&s.mount_sources);
	proto_strv_clear(&s.mount_targets);
	proto_u32v_clear(&s.mount_ro);
	s.mount_sources = src;
	s.mount_targets = tgt;
	s.mount_ro = ro;
	src = (struct proto_strv){ 0 };
	tgt = (struct proto_strv){ 0 };
	ro = (struct proto_u32v){ 0 };
	if (r < 0 || (r = store_sandbox_update(dispatch_L->db, &s)) < 0) {
		reply_err(ch, h->id, PERR_INTERNAL, "removing the mount: %s", strerror(-r));
		goto out;
	}
	send_sbx_rep(ch, h->id, &s, NULL);
out:
	proto_strv_clear(&src);
	proto_strv_clear(&tgt);
	proto_u32v_clear(&ro);
	sandbox_clear(&s);
}

static void h_profile_get(struct proto_chan *ch, const struct proto_hdr *h, void *m, int fd, void *arg)
{
	struct msg_PROFILE_GET *in = m;
	struct sandbox s;
	struct msg_PROFILE_REP rep;
	int r;
	if (load_sandbox(ch, h->id, in->id, &s) < 0)
		return;
	if ((r = run_profile(dispatch_L, &s, &rep)) < 0)
		reply_err(ch, h->id, PERR_INTERNAL, "building the profile: %s", strerror(-r));
	else
		proto_chan_send(ch, MSG_PROFILE_REP, h->id, &rep, -1);
	proto_msg_clear(MSG_PROFILE_REP, &rep);
	sandbox_clear(&s);
}

/* ---- sbxd -------------------------------------------------------------------------- */

static const struct proto_dispatch api_table[];
static const size_t api_table_n;
static void api_event(struct proto_chan *ch, enum proto_chan_event ev, const char *detail, void *arg);

static void h_peer_fd(struct proto_chan *ch, const struct proto_hdr *h, void *m, int fd, void *arg)
{
	struct msg_PEER_FD *in = m;
	struct proto_chan *n;

	if (in->role != ROLE_API || fd < 0) {
		if (fd >= 0)
			close(fd);
		log_warnx("PEER_FD for role %u ignored", in->role);
		return;
	}
	n = proto_chan_new(dispatch_L->base, fd, ROLE_LAUNCHER, ROLE_API, api_table, api_table_n, api_event, dispatch_L);
	if (!n) {
		close(fd);
		log_warnx("PEER_FD: could not build the new API channel");
		return;
	}
	proto_chan_free(dispatch_L->api);
	dispatch_L->api = n;
	api_gen++; /* replies for requests of the old process are dropped */
	log_info("API channel replaced (the API process was restarted)");
}

static void h_ignore(struct proto_chan *ch, const struct proto_hdr *h, void *m, int fd, void *arg)
{
	if (fd >= 0)
		close(fd);
}

static const struct proto_dispatch sbxd_table[] = {
	{ MSG_PEER_FD, ROLE_SBXD, h_peer_fd },
	{ MSG_ERROR, ROLE_SBXD, h_ignore },
};

/* When no backend can run anything, every route but health and caps (which say why)
 * answers engine_unavailable (the policy routes too stay open); EXEC goes on to run_code, where a switched-off execShell
 * still runs as before and a switched-on one fails. */
static bool engine_refuses(struct proto_chan *ch, const struct proto_hdr *h)
{
	const char *why = NULL;
	/* the policy stays readable and settable: it runs nothing, and an operator may need
	 * to switch execShell off while the engine is down */
	if (h->type == MSG_HEALTH_REQ || h->type == MSG_CAPS_REQ || h->type == MSG_EXEC ||
	    h->type == MSG_POLICY_GET || h->type == MSG_POLICY_SET || !caps_engine_broken(&why))
		return false;
	reply_err(ch, h->id, PERR_ENGINE_UNAVAILABLE, "no backend can run sandboxes here: %s",
	          why && *why ? why : "the bwrap probe failed");
	return true;
}

#define GUARDED(fn)                                                                                \
	static void g_##fn(struct proto_chan *ch, const struct proto_hdr *h, void *m, int fd,      \
	                   void *arg)                                                              \
	{                                                                                          \
		if (engine_refuses(ch, h)) {                                                       \
			if (fd >= 0)                                                               \
				close(fd);                                                         \
			return;                                                                    \
		}                                                                                  \
		fn(ch, h, m, fd, arg);                                                             \
	}
GUARDED(h_health)
GUARDED(h_caps)
GUARDED(h_policy_get)
GUARDED(h_policy_set)
GUARDED(h_sbx_create)
GUARDED(h_sbx_get)
GUARDED(h_sbx_list)
GUARDED(h_sbx_update)
GUARDED(h_sbx_delete)
GUARDED(dispatch_h_run)
GUARDED(dispatch_h_exec)
GUARDED(dispatch_h_runs_list)
GUARDED(dispatch_h_run_get)
GUARDED(dispatch_h_ps)
GUARDED(dispatch_h_kill)
GUARDED(dispatch_h_file_op)
GUARDED(dispatch_h_trace_get)
GUARDED(h_mount_add)
GUARDED(h_mount_del)
GUARDED(h_profile_get)

static const struct proto_dispatch api_table[] = {
	{ MSG_HEALTH_REQ, ROLE_API, g_h_health },
	{ MSG_CAPS_REQ, ROLE_API, g_h_caps },
	{ MSG_POLICY_GET, ROLE_API, g_h_policy_get },
	{ MSG_POLICY_SET, ROLE_API, g_h_policy_set },
	{ MSG_SBX_CREATE, ROLE_API, g_h_sbx_create },
	{ MSG_SBX_GET, ROLE_API, g_h_sbx_get },
	{ MSG_SBX_LIST, ROLE_API, g_h_sbx_list },
	{ MSG_SBX_UPDATE, ROLE_API, g_h_sbx_update },
	{ MSG_SBX_DELETE, ROLE_API, g_h_sbx_delete },
	{ MSG_RUN, ROLE_API, g_dispatch_h_run },
	{ MSG_EXEC, ROLE_API, g_dispatch_h_exec },
	{ MSG_RUNS_LIST, ROLE_API, g_dispatch_h_runs_list },
	{ MSG_RUN_GET, ROLE_API, g_dispatch_h_run_get },
	{ MSG_PS_REQ, ROLE_API, g_dispatch_h_ps },
	{ MSG_KILL, ROLE_API, g_dispatch_h_kill },
	{ MSG_FILE_OP, ROLE_API, g_dispatch_h_file_op },
	{ MSG_TRACE_GET, ROLE_API, g_dispatch_h_trace_get },
	{ MSG_METRICS_REQ, ROLE_API, dispatch_h_metrics },
	{ MSG_MOUNT_ADD, ROLE_API, g_h_mount_add },
	{ MSG_MOUNT_DEL, ROLE_API, g_h_mount_del },
	{ MSG_PROFILE_GET, ROLE_API, g_h_profile_get },
	/* apps answer while the engine is down: their state says why they do not run */
	{ MSG_APP_PUT, ROLE_API, apps_h_put },
	{ MSG_APP_GET, ROLE_API, apps_h_get },
	{ MSG_APP_LIST, ROLE_API, apps_h_list },
	{ MSG_APP_DELETE, ROLE_API, apps_h_delete },
	{ MSG_APP_CTL, ROLE_API, apps_h_ctl },
	{ MSG_APP_LOG, ROLE_API, apps_h_log },
	{ MSG_SCHED_PUT, ROLE_API, sched_h_put },
	{ MSG_SCHED_LIST, ROLE_API, sched_h_list },
	{ MSG_SCHED_DELETE, ROLE_API, sched_h_delete },
	{ MSG_STREAM_ACK, ROLE_API, dispatch_h_stream_ack },
	{ MSG_STREAM_CANCEL, ROLE_API, dispatch_h_stream_cancel },
};
static const size_t api_table_n = sizeof(api_table) / sizeof(api_table[0]);

static void api_event(struct proto_chan *ch, enum proto_chan_event ev, const char *detail, void *arg)
{
	switch (ev) {
	case PCHAN_READY:
		log_debug("API channel ready");
		break;
	case PCHAN_REJECTED:
		log_warnx("from the API: %s", detail);
		break;
	case PCHAN_REPLACED:
		log_warnx("to the API: %s; an ERROR was sent instead", detail);
		break;
	case PCHAN_FRAMING:
	case PCHAN_CLOSED:
		/* keep running: runs in flight finish and are recorded; sbxd restarts the API
		 * and hands over a new channel with PEER_FD */
		log_warnx("API channel %s: %s", ev == PCHAN_FRAMING ? "violated framing" : "closed", detail);
		if (dispatch_L->api == ch) {
			dispatch_L->api = NULL;
			api_gen++;
		}
		proto_chan_free(ch);
		break;
	}
}

static void sbxd_event(struct proto_chan *ch, enum proto_chan_event ev, const char *detail, void *arg)
{
	switch (ev) {
	case PCHAN_READY:
		log_debug("sbxd channel ready");
		break;
	case PCHAN_REJECTED:
		log_warnx("from sbxd: %s", detail);
		break;
	case PCHAN_REPLACED:
		log_warnx("to sbxd: %s; an ERROR was sent instead", detail);
		break;
	case PCHAN_FRAMING:
	case PCHAN_CLOSED:
		/* no supervisor means nobody mirrors our process groups: stop everything */
		log_warnx("sbxd channel lost (%s): killing every run and exiting", detail);
		if (dispatch_L->sbxd == ch)
			dispatch_L->sbxd = NULL;
		proto_chan_free(ch);
		sbxd_lost = true;
		runner_kill_all(dispatch_L);
		event_base_loopbreak(dispatch_L->base);
		break;
	}
}

/* The registry's one way out to sbxd's mirror of live process groups. */
static void registry_mirror(enum proto_type type, const void *msg, void *arg)
{
	if (dispatch_L->sbxd)
		proto_chan_send(dispatch_L->sbxd, type, 0, msg, -1);
}

int dispatch_start(struct launcher *L, int sbxd_fd, int api_fd)
{
	dispatch_L = L;
	registry_set_mirror(registry_launcher(), registry_mirror, NULL);
	L->sbxd = proto_chan_new(L->base, sbxd_fd, ROLE_LAUNCHER, ROLE_SBXD, sbxd_table,
	                         sizeof(sbxd_table) / sizeof(sbxd_table[0]), sbxd_event, L);
	if (!L->sbxd)
		return -EIO;
	L->api = proto_chan_new(L->base, api_fd, ROLE_LAUNCHER, ROLE_API, api_table, api_table_n,
	                        api_event, L);
	if (!L->api)
		return -EIO;
	return 0;
}
