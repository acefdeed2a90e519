/* The operations both front doors offer, as one table (op_table below). REST and MCP parse
 * their framing, find the row, then call op_start() with the same JSON arguments; each
 * operation calls the same stub and builds the same JSON body, so a rule enforced for one
 * door holds for the other. */
#include "ops.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api.h"
#include "cleanup.h"
#include "json.h"
#include "metrics.h"
#include "opdoc.h"
#include "schema.h"
#include "stubs.h"
#include "util.h"

struct op {
	const struct op_row *row;
	const char *list_key; /* list replies: "sandboxes" or "runs" */
	op_done_fn done;
	void *arg;
	yajl_gen g;      /* list replies accumulate here */
	unsigned count;
	struct msg_STATUS_REP status; /* health, metrics: sbxd's answer, kept for the launcher's */
	bool have_status;
	struct msg_POLICY_SET pol_lo, pol_hi; /* policy set: the body parsed two ways */
	/* a streamed run: what went out per channel, and up to 3 bytes of a UTF-8 character
	 * cut by a chunk boundary, held until the rest arrives */
	op_chunk_fn chunk;
	uint32_t stream;
	uint64_t sent[2];
	char carry[2][4];
	size_t ncarry[2];
	/* a file operation */
	uint32_t fop;
	int enc;               /* READ over MCP: ENC_AUTO, ENC_TEXT, ENC_BASE64 */
	bool ranged;           /* READ: a range was asked for */
	struct op_raw *raw_out; /* READ over REST: the answer is the bytes */
};

enum { ENC_AUTO = 0, ENC_TEXT, ENC_BASE64 };

static void op_finish(struct op *o, int status, char *body, size_t len)
{
	o->done(o->arg, status, body, len);
	if (o->g)
		yajl_gen_free(o->g);
	free(o);
}

static void op_fail(struct op *o, enum proto_err e, const char *msg)
{
	size_t len = 0;
	char *doc = json_error_doc(e, msg, &len);
	op_finish(o, json_err_status(e), doc, len);
}

static void op_gen_done(struct op *o, int status, yajl_gen g)
{
	size_t len = 0;
	char *doc = json_gen_dup(g, &len);
	if (!doc) {
		op_fail(o, PERR_INTERNAL, "out of memory");
		return;
	}
	op_finish(o, status, doc, len);
}

/* ---- replies ----------------------------------------------------------------------- */

static void gen_status(yajl_gen g, const struct msg_STATUS_REP *s)
{
	json_gen_key(g, "processes");
	yajl_gen_map_open(g);
	json_gen_kint(g, "sbxd", s->sbxd_pid);
	json_gen_kint(g, "launcher", s->launcher_pid);
	json_gen_kint(g, "api", s->api_pid);
	json_gen_kint(g, "launcherRestarts", s->launcher_restarts);
	json_gen_kint(g, "apiRestarts", s->api_restarts);
	json_gen_kint(g, "liveGroups", s->live_groups);
	yajl_gen_map_close(g);
}

static void gen_confinement(yajl_gen g, const struct confine_report *c)
{
	json_gen_key(g, "confinement");
	yajl_gen_map_open(g);
	json_gen_kbool(g, "chroot", c->chroot);
	json_gen_kbool(g, "uidDropped", c->uid_dropped);
	json_gen_kint(g, "uid", c->uid);
	json_gen_kint(g, "gid", c->gid);
	json_gen_kbool(g, "noNewPrivs", c->no_new_privs);
	json_gen_kbool(g, "landlock", c->landlock);
	json_gen_kint(g, "landlockAbi", c->landlock_abi);
	json_gen_kbool(g, "landlockNet", c->landlock_net);
	json_gen_kbool(g, "seccomp", c->seccomp);
	json_gen_kint(g, "seccompSyscalls", c->seccomp_syscalls);
	if (c->detail[0])
		json_gen_kstr(g, "detail", c->detail);
	yajl_gen_map_close(g);
}

static void on_health(const struct stub_reply *rep, void *arg)
{
	struct op *o = arg;
	const struct msg_HEALTH_REP *h = rep->msg;
	yajl_gen g;

	if (rep->type == MSG_ERROR) {
		op_fail(o, rep->err, rep->message);
		return;
	}
	g = json_gen_new();
	yajl_gen_map_open(g);
	json_gen_kstr(g, "status", "ok");
	json_gen_kstr(g, "version", SBX_BUILD_ID);
	json_gen_kint(g, "protocol", PROTO_VERSION);
	json_gen_kstr(g, "isolation", h->isolation);
	if (o->have_status)
		gen_status(g, &o->status);
	gen_confinement(g, &API->confine);
	json_gen_key(g, "launcher");
	yajl_gen_map_open(g);
	json_gen_kstr(g, "isolation", h->isolation);
	json_gen_kstr(g, "bwrapVersion", h->bwrap_version);
	json_gen_kbool(g, "root", h->launcher_root);
	json_gen_kint(g, "jailUidBase", h->jail_uid_base);
	json_gen_kstr(g, "database", h->db_path);
	json_gen_kint(g, "schemaVersion", h->schema_version);
	json_gen_kint(g, "liveRuns", h->live_runs);
	if (h->note && *h->note)
		json_gen_kstr(g, "note", h->note);
	yajl_gen_map_close(g);
	json_gen_kbool(g, "auth", !API->no_auth);
	yajl_gen_map_close(g);
	op_gen_done(o, o->row->status, g);
	yajl_gen_free(g);
}

static void on_status(const struct stub_reply *rep, void *arg)
{
	struct op *o = arg;
	if (rep->type == MSG_STATUS_REP) {
		o->status = *(const struct msg_STATUS_REP *)rep->msg;
		o->have_status = true;
	}
	/* the launcher half answers even when sbxd did not */
	if (stub_health(on_health, o) < 0)
		op_fail(o, PERR_ENGINE_UNAVAILABLE, "the launcher is not connected");
}

/* How much of s[0..len) ends on a whole UTF-8 character: a lead byte near the end whose
 * sequence is not complete yet is held back (at most 3 bytes). */
static size_t utf8_whole(const char *s, size_t len)
{
	for (size_t back = 1; back <= 3 && back <= len; back++) {
		unsigned char c = (unsigned char)s[len - back];
		size_t need = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 0;
		if ((c & 0xc0) == 0x80)
			continue; /* a continuation byte: look further back */
		return need > back ? len - back : len;
	}
	return len;
}

/* Pass bytes of one channel to the door, whole characters only unless `last`. */
static void emit(struct op *o, uint32_t chan, const char *data, size_t len, bool last)
{
	size_t have = o->ncarry[chan], whole;
	_cleanup_free_ char *buf = malloc(have + len + 1);
	if (!buf)
		return;
	memcpy(buf, o->carry[chan], have);
	memcpy(buf + have, data, len);
	o->sent[chan] += len;
	whole = last ? have + len : utf8_whole(buf, have + len);
	o->ncarry[chan] = have + len - whole;
	memcpy(o->carry[chan], buf + whole, o->ncarry[chan]);
	if (whole)
		o->chunk(o->arg, o->stream, chan, buf, whole);
}

static void on_chunk(uint32_t chan, const uint8_t *data, size_t len, void *arg)
{
	struct op *o = arg;
	if (chan <= STREAM_STDERR && len)
		emit(o, chan, (const char *)data, len, false);
}

/* Before the result: whatever the stream had not delivered yet (the launcher ends the
 * stream when the program ends and never waits for a slow reader). */
static void emit_tail(struct op *o, const struct stub_reply *rep)
{
	const char *buf[2] = { rep->out, rep->errout };
	size_t len[2] = { rep->out_len, rep->errout_len };
	for (uint32_t c = 0; c < 2; c++) {
		if (buf[c] && len[c] > o->sent[c])
			emit(o, c, buf[c] + o->sent[c], len[c] - (size_t)o->sent[c], true);
		else if (o->ncarry[c])
			emit(o, c, "", 0, true);
	}
}

static void on_single(const struct stub_reply *rep, void *arg)
{
	struct op *o = arg;
	yajl_gen g;

	if (rep->type == MSG_ERROR) {
		op_fail(o, rep->err, rep->message);
		return;
	}
	if (rep->type == MSG_RUN_REP && o->chunk)
		emit_tail(o, rep);
	g = json_gen_new();
	switch (rep->type) {
	case MSG_SBX_REP:
		json_gen_sbx(g, rep->msg);
		break;
	case MSG_RUN_REP:
		json_gen_run_traced(g, rep->msg, rep->out, rep->out_len, rep->errout, rep->errout_len,
		                    rep->trace, rep->trace_len);
		break;
	case MSG_CAPS_REP:
		json_gen_caps(g, rep->msg);
		break;
	case MSG_POLICY_REP:
		json_gen_policy(g, rep->msg);
		break;
	case MSG_PROFILE_REP: {
		const struct msg_PROFILE_REP *p = rep->msg;
		yajl_gen_map_open(g);
		json_gen_kstr(g, "kind", p->kind);
		json_gen_key(g, "argv");
		yajl_gen_array_open(g);
		for (uint32_t i = 0; i < p->argv.n; i++)
			json_gen_str(g, p->argv.v[i]);
		yajl_gen_array_close(g);
		if (p->text && *p->text)
			json_gen_kstr(g, "text", p->text);
		if (p->note && *p->note)
			json_gen_kstr(g, "note", p->note);
		yajl_gen_map_close(g);
		break;
	}
	case MSG_KILL_REP: {
		const struct msg_KILL_REP *k = rep->msg;
		json_gen_kill(g, k, json_signal_name((int)k->signal));
		break;
	}
	case MSG_APP_REP:
		json_gen_app(g, rep->msg);
		break;
	case MSG_SCHED_REP:
		json_gen_schedule(g, rep->msg);
		break;
	case MSG_OK:
		yajl_gen_map_open(g);
		json_gen_kstr(g, "id", ((const struct msg_OK *)rep->msg)->id);
		json_gen_kbool(g, "deleted", true);
		yajl_gen_map_close(g);
		break;
	default:
		yajl_gen_free(g);
		op_fail(o, PERR_INTERNAL, "unexpected reply from the launcher");
		return;
	}
	op_gen_done(o, o->row->status, g);
	yajl_gen_free(g);
}

/* The mounts routes answer with the sandbox's mount list only. */
static void on_mounts(const struct stub_reply *rep, void *arg)
{
	struct op *o = arg;
	const struct msg_SBX_REP *sr = rep->msg;
	yajl_gen g;

	if (rep->type != MSG_SBX_REP) {
		op_fail(o, rep->type == MSG_ERROR ? rep->err : PERR_INTERNAL,
		        rep->type == MSG_ERROR ? rep->message : "unexpected reply from the launcher");
		return;
	}
	g = json_gen_new();
	json_gen_sbx_mounts(g, sr);
	op_gen_done(o, o->row->status, g);
	yajl_gen_free(g);
}

static void on_list(const struct stub_reply *rep, void *arg)
{
	struct op *o = arg;
	if (rep->type == MSG_ERROR) {
		op_fail(o, rep->err, rep->message);
		return;
	}
	if (!o->g) {
		o->g = json_gen_new();
		yajl_gen_map_open(o->g);
		json_gen_key(o->g, o->list_key);
		yajl_gen_array_open(o->g);
	}
	if (!rep->final) {
		if (rep->type == MSG_SBX_REP)
			json_gen_sbx(o->g, rep->msg);
		else if (rep->type == MSG_RUN_REP)
			json_gen_run(o->g, rep->msg, rep->out, rep->out_len, rep->errout,
			             rep->errout_len);
		else if (rep->type == MSG_PROC_REP)
			json_gen_proc(o->g, rep->msg);
		else if (rep->type == MSG_APP_REP)
			json_gen_app(o->g, rep->msg);
		else if (rep->type == MSG_SCHED_REP)
			json_gen_schedule(o->g, rep->msg);
		o->count++;
		return;
	}
	yajl_gen_array_close(o->g);
	json_gen_kint(o->g, "count", o->count);
	yajl_gen_map_close(o->g);
	op_gen_done(o, o->row->status, o->g);
}

static void on_policy_cur(const struct stub_reply *rep, void *arg)
{
	struct op *o = arg;
	const struct msg_POLICY_REP *cur = rep->msg;
	struct msg_POLICY_SET m;
	if (rep->type != MSG_POLICY_REP) {
		op_fail(o, rep->err ? rep->err : PERR_INTERNAL, rep->message ? rep->message : "no policy");
		return;
	}
#define PICK(f) m.f = o->pol_lo.f == o->pol_hi.f ? o->pol_lo.f : cur->f
	PICK(exec_shell);
	PICK(scheduler_script);
	PICK(run_python);
	PICK(run_node);
#undef PICK
	if (stub_policy_set(&m, on_single, o) < 0)
		op_fail(o, PERR_ENGINE_UNAVAILABLE, "the launcher is not connected");
}

/* ---- how each request becomes a launcher request ------------------------------------- */

static int start_health(struct op *o, const struct op_args *a, char *why, size_t whysz)
{
	/* sbxd's half first; without it the launcher's half still answers */
	if (stub_status(on_status, o) < 0)
		return stub_health(on_health, o);
	return 0;
}

static int start_caps(struct op *o, const struct op_args *a, char *why, size_t whysz)
{
	return stub_caps(false, on_single, o);
}

static int start_caps_recheck(struct op *o, const struct op_args *a, char *why, size_t whysz)
{
	return stub_caps(true, on_single, o);
}

static int start_policy_get(struct op *o, const struct op_args *a, char *why, size_t whysz)
{
	return stub_policy_get(on_single, o);
}

static int start_policy_set(struct op *o, const struct op_args *a, char *why, size_t whysz)
{
	int r;
	/* a partial body: parse it twice, from all-off and from all-on; a field the body
	 * names comes out the same both times, the others come from the store */
	o->pol_lo = (struct msg_POLICY_SET){ 0 };
	o->pol_hi = (struct msg_POLICY_SET){ true, true, true, true, 0 };
	if ((r = json_parse_policy(a->body, &o->pol_lo, why, whysz)) < 0 ||
	    (r = json_parse_policy(a->body, &o->pol_hi, why, whysz)) < 0)
		return r;
	return stub_policy_get(on_policy_cur, o);
}

static int start_sbx_list(struct op *o, const struct op_args *a, char *why, size_t whysz)
{
	o->list_key = "sandboxes";
	return stub_sandbox_list(on_list, o);
}

static int start_sbx_create(struct op *o, const struct op_args *a, char *why, size_t whysz)
{
	struct msg_SBX_UPDATE u = { 0 };
	struct msg_SBX_CREATE c = { 0 };
	int r;
	if ((r = json_parse_sbx_spec(a->body, &u, why, whysz)) == 0) {
		if (!(u.set_mask & SBXF_NAME)) {
			snprintf(why, whysz, "name: required");
			r = -EINVAL;
		} else {
#define COPY_SPEC(S, KIND, NAME, LIMIT) c.NAME = u.NAME;
			SBX_SPEC_FIELDS(COPY_SPEC, x)
#undef COPY_SPEC
			r = stub_sandbox_create(&c, on_single, o);
		}
	}
	proto_msg_clear(MSG_SBX_UPDATE, &u);
	return r;
}

static int start_sbx_get(struct op *o, const struct op_args *a, char *why, size_t whysz)
{
	return stub_sandbox_get(a->id, on_single, o);
}

static int start_sbx_update(struct op *o, const struct op_args *a, char *why, size_t whysz)
{
	struct msg_SBX_UPDATE u = { 0 };
	int r;
	/* MCP names the sandbox in the arguments; REST in the path */
	if ((r = json_parse_sbx_fields(a->body, a->entrance == ENTRANCE_MCP ? "sandboxId" : NULL,
	                               &u, why, whysz)) == 0) {
		free(u.id);
		u.id = strdup(a->id);
		r = u.id ? stub_sandbox_update(&u, on_single, o) : -ENOMEM;
	}
	proto_msg_clear(MSG_SBX_UPDATE, &u);
	return r;
}

static int start_sbx_delete(struct op *o, const struct op_args *a, char *why, size_t whysz)
{
	return stub_sandbox_delete(a->id, on_single, o);
}

static int start_run(struct op *o, const struct op_args *a, char *why, size_t whysz)
{
	struct msg_RUN m = { 0 };
	int r;
	if ((r = json_parse_run(a->body, &m, why, whysz)) == 0) {
		m.entrance = a->entrance;
		free(m.sandbox_id);
		m.sandbox_id = strdup(a->id);
		o->chunk = m.detach ? NULL : a->chunk; /* detached: the answer comes at once */
		r = m.sandbox_id ? stub_run(&m, o->chunk ? on_chunk : NULL, on_single, o, &o->stream)
		                 : -ENOMEM;
	}
	proto_msg_clear(MSG_RUN, &m);
	return r;
}

static int start_runs_list(struct op *o, const struct op_args *a, char *why, size_t whysz)
{
	o->list_key = "runs";
	return stub_runs_list(a->id, 50, on_list, o);
}

static int start_run_get(struct op *o, const struct op_args *a, char *why, size_t whysz)
{
	/* Accept: text/event-stream follows a live run (a detached one) to its end */
	o->chunk = a->chunk;
	return stub_run_get(a->id, a->sub_id, o->chunk ? on_chunk : NULL, on_single, o, &o->stream);
}

static int start_ps(struct op *o, const struct op_args *a, char *why, size_t whysz)
{
	o->list_key = "processes";
	return stub_ps(a->id, on_list, o);
}

static int start_kill(struct op *o, const struct op_args *a, char *why, size_t whysz)
{
	struct msg_KILL m = { 0 };
	int r;
	if ((r = json_parse_kill(a->body, &m, why, whysz)) == 0) {
		m.sandbox_id = strdup(a->id);
		r = m.sandbox_id ? stub_kill(&m, on_single, o) : -ENOMEM;
	}
	proto_msg_clear(MSG_KILL, &m);
	return r;
}

static int start_profile(struct op *o, const struct op_args *a, char *why, size_t whysz)
{
	return stub_profile(a->id, on_single, o);
}

static int start_mounts_list(struct op *o, const struct op_args *a, char *why, size_t whysz)
{
	return stub_sandbox_get(a->id, on_mounts, o);
}

static int start_mount_add(struct op *o, const struct op_args *a, char *why, size_t whysz)
{
	struct msg_MOUNT_ADD m = { .sandbox_id = (char *)a->id, .read_only = true };
	const char *src = NULL, *tgt = NULL;
	bool ro = true;
	if (!a->body || !YAJL_IS_OBJECT(a->body) || json_get_str(a->body, "source", &src) < 0 ||
	    json_get_str(a->body, "target", &tgt) < 0) {
		snprintf(why, whysz, "source and target: required strings");
		return -EINVAL;
	}
	if (json_get_bool(a->body, "readOnly", &ro) == -EINVAL) {
		snprintf(why, whysz, "readOnly: must be a boolean");
		return -EINVAL;
	}
	if (strlen(src) > PROTO_STR_MAX || strlen(tgt) > PROTO_STR_MAX) {
		snprintf(why, whysz, "source and target: at most %u bytes", PROTO_STR_MAX);
		return -EINVAL;
	}
	m.source = (char *)src;
	m.target = (char *)tgt;
	m.read_only = ro;
	return stub_mount_add(&m, on_mounts, o);
}

static int start_mount_del(struct op *o, const struct op_args *a, char *why, size_t whysz)
{
	const char *tgt = a->query; /* REST: ?target=; MCP: the target argument */
	if (!tgt && a->body)
		json_get_str(a->body, "target", &tgt);
	if (!tgt || !*tgt || strlen(tgt) > PROTO_STR_MAX) {
		snprintf(why, whysz, "target: required, at most %u bytes", PROTO_STR_MAX);
		return -EINVAL;
	}
	return stub_mount_del(a->id, tgt, on_mounts, o);
}

static int start_exec(struct op *o, const struct op_args *a, char *why, size_t whysz)
{
	struct msg_EXEC m = { 0 };
	int r;
	if ((r = json_parse_exec(a->body, &m, why, whysz)) == 0) {
		m.entrance = a->entrance;
		o->chunk = a->chunk;
		r = stub_exec(&m, o->chunk ? on_chunk : NULL, on_single, o, &o->stream);
	}
	proto_msg_clear(MSG_EXEC, &m);
	return r;
}

/* ---- files ------------------------------------------------------------------------------ */

static void gen_file_entry(yajl_gen g, const char *name, const char *type, uint64_t size,
                           uint32_t mode, uint64_t mtime)
{
	char m[8];
	json_gen_kstr(g, "name", name);
	json_gen_kstr(g, "type", type);
	json_gen_kint(g, "size", (long long)size);
	snprintf(m, sizeof(m), "%04o", mode & 07777);
	json_gen_kstr(g, "mode", m);
	json_gen_ktime(g, "mtime", mtime);
}

/* LIST records: "T SIZE MODE MTIME NAME\0" (proto_msgs.h FILE_REP). */
static void gen_listing(yajl_gen g, const char *buf, size_t len, uint32_t count)
{
	static const struct { char t; const char *name; } types[] = {
		{ 'f', "file" }, { 'd', "dir" }, { 'l', "symlink" }, { 'o', "other" } };
	size_t seen = 0;
	json_gen_key(g, "entries");
	yajl_gen_array_open(g);
	for (size_t off = 0; buf && off < len && seen < count;) {
		const char *rec = buf + off, *end = memchr(rec, '\0', len - off);
		char t;
		unsigned long long size, mtime;
		unsigned mode;
		int name_at = 0;
		if (!end)
			break;
		off = (size_t)(end - buf) + 1;
		if (sscanf(rec, "%c %llu %o %llu %n", &t, &size, &mode, &mtime, &name_at) < 4 || !name_at)
			continue;
		for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
			if (types[i].t == t) {
				yajl_gen_map_open(g);
				gen_file_entry(g, rec + name_at, types[i].name, size, mode, mtime);
				yajl_gen_map_close(g);
				seen++;
			}
	}
	yajl_gen_array_close(g);
	json_gen_kint(g, "count", (long long)seen);
}

static void on_file(const struct stub_reply *rep, void *arg)
{
	struct op *o = arg;
	const struct msg_FILE_REP *f = rep->msg;
	yajl_gen g;
	int status = o->row->status;

	if (rep->type != MSG_FILE_REP) {
		op_fail(o, rep->type == MSG_ERROR ? rep->err : PERR_INTERNAL,
		        rep->type == MSG_ERROR ? rep->message : "unexpected reply from the launcher");
		return;
	}
	if (o->fop == FOP_READ && o->ranged && f->offset >= f->total && f->total > 0) {
		char why[96];
		size_t len = 0;
		char *doc;
		snprintf(why, sizeof(why), "the range starts past the end (the file is %llu bytes)",
		         (unsigned long long)f->total);
		doc = json_error_doc(PERR_INVALID_ARGUMENT, why, &len);
		op_finish(o, 416, doc, len);
		return;
	}
	if (o->fop == FOP_READ && o->raw_out) {
		char *bytes = malloc(rep->out_len + 1);
		if (!bytes) {
			op_fail(o, PERR_INTERNAL, "out of memory");
			return;
		}
		memcpy(bytes, rep->out ? rep->out : "", rep->out_len);
		*o->raw_out = (struct op_raw){ .used = true, .partial = o->ranged, .offset = f->offset,
			                       .length = rep->out_len, .total = f->total };
		op_finish(o, o->ranged ? 206 : 200, bytes, rep->out_len);
		return;
	}
	g = json_gen_new();
	yajl_gen_map_open(g);
	json_gen_kstr(g, "path", f->path);
	if (o->fop == FOP_LIST) {
		gen_listing(g, rep->out, rep->out_len, f->count);
		json_gen_kbool(g, "truncated", f->truncated);
	} else if (o->fop == FOP_READ) {
		bool text = o->enc == ENC_TEXT || (o->enc == ENC_AUTO && json_utf8_valid(rep->out, rep->out_len));
		if (o->enc == ENC_TEXT && !json_utf8_valid(rep->out, rep->out_len)) {
			yajl_gen_free(g);
			op_fail(o, PERR_INVALID_ARGUMENT, "the bytes are not UTF-8 text: read with encoding \"base64\"");
			return;
		}
		json_gen_kint(g, "size", (long long)f->total);
		json_gen_kint(g, "offset", (long long)f->offset);
		json_gen_kint(g, "length", (long long)rep->out_len);
		json_gen_kstr(g, "encoding", text ? "text" : "base64");
		json_gen_key(g, "content");
		if (text) {
			json_gen_bytes(g, rep->out ? rep->out : "", rep->out_len);
		} else {
			size_t blen = 0;
			_cleanup_free_ char *b = json_base64_encode(rep->out ? rep->out : "", rep->out_len, &blen);
			json_gen_bytes(g, b ? b : "", b ? blen : 0);
		}
	} else {
		const char *slash = strrchr(f->path, '/');
		gen_file_entry(g, slash && slash[1] ? slash + 1 : f->path, f->type, f->total, f->mode, f->mtime);
		if (o->fop == FOP_WRITE)
			json_gen_kint(g, "written", (long long)f->length);
		if (o->fop == FOP_DELETE)
			json_gen_kbool(g, "deleted", true);
	}
	yajl_gen_map_close(g);
	op_gen_done(o, status, g);
	yajl_gen_free(g);
}

/* The arguments a file route takes: path and the names in `more`; anything else refused. */
static int file_args(const struct op_args *a, const char *const *more, bool need_path,
                     struct msg_FILE_OP *m, char *why, size_t whysz)
{
	const char *path = "";
	yajl_val b = a->body;
	if (b && !YAJL_IS_OBJECT(b)) {
		snprintf(why, whysz, "the arguments must be an object");
		return -EINVAL;
	}
	for (size_t i = 0; b && i < b->u.object.len; i++) {
		const char *k = b->u.object.keys[i];
		bool ok = strcmp(k, "path") == 0 || strcmp(k, "sandboxId") == 0;
		for (size_t j = 0; more[j] && !ok; j++)
			ok = strcmp(k, more[j]) == 0;
		if (!ok) {
			snprintf(why, whysz, "%s: unknown argument", k);
			return -EINVAL;
		}
	}
	if (b && json_get_str(b, "path", &path) == -EINVAL) {
		snprintf(why, whysz, "path: must be a string");
		return -EINVAL;
	}
	if (strlen(path) > PROTO_STR_MAX || (need_path && !*path)) {
		snprintf(why, whysz, "path: required, at most %u bytes", PROTO_STR_MAX);
		return -EINVAL;
	}
	if (b && (json_get_bool(b, "parents", &m->parents) == -EINVAL ||
	          json_get_bool(b, "recursive", &m->recursive) == -EINVAL)) {
		snprintf(why, whysz, "parents and recursive: booleans");
		return -EINVAL;
	}
	m->sandbox_id = (char *)a->id;
	m->path = (char *)path;
	return 0;
}

static int start_file_common(struct op *o, const struct op_args *a, uint32_t fop,
                             const char *const *more, char *why, size_t whysz)
{
	struct msg_FILE_OP m = { .op = fop };
	int r;
	if ((r = file_args(a, more, fop != FOP_LIST, &m, why, whysz)) < 0)
		return r;
	o->fop = fop;
	return stub_file_op(&m, NULL, 0, on_file, o);
}

static int start_files_list(struct op *o, const struct op_args *a, char *why, size_t whysz)
{
	static const char *const more[] = { NULL };
	return start_file_common(o, a, FOP_LIST, more, why, whysz);
}

static int start_file_delete(struct op *o, const struct op_args *a, char *why, size_t whysz)
{
	static const char *const more[] = { "recursive", NULL };
	return start_file_common(o, a, FOP_DELETE, more, why, whysz);
}

static int start_mkdir(struct op *o, const struct op_args *a, char *why, size_t whysz)
{
	static const char *const more[] = { "parents", NULL };
	return start_file_common(o, a, FOP_MKDIR, more, why, whysz);
}

/* "bytes=S-E", "bytes=S-" or "bytes=-N" (one range only). */
static int parse_range(const char *h, struct msg_FILE_OP *m)
{
	unsigned long long a = 0, b = 0;
	int n = 0;
	if (strncmp(h, "bytes=", 6) != 0 || strchr(h, ','))
		return -EINVAL;
	h += 6;
	if (h[0] == '-') {
		if (sscanf(h + 1, "%llu%n", &a, &n) != 1 || h[1 + n] || a == 0)
			return -EINVAL;
		m->suffix = a;
		return 0;
	}
	if (sscanf(h, "%llu-%n", &a, &n) != 1 || !n)
		return -EINVAL;
	m->offset = a;
	if (!h[n]) {
		m->length = UINT64_MAX; /* to the end, as much as one read carries */
		return 0;
	}
	if (sscanf(h + n, "%llu%n", &b, &n) != 1 || b < a)
		return -EINVAL;
	m->length = b - a + 1;
	return 0;
}

static int start_file_read(struct op *o, const struct op_args *a, char *why, size_t whysz)
{
	static const char *const more[] = { "offset", "length", "encoding", NULL };
	struct msg_FILE_OP m = { .op = FOP_READ };
	const char *enc = NULL;
	int r;
	if ((r = file_args(a, more, true, &m, why, whysz)) < 0)
		return r;
	if (a->body && (json_get_u64(a->body, "offset", &m.offset) == -EINVAL ||
	                json_get_u64(a->body, "length", &m.length) == -EINVAL)) {
		snprintf(why, whysz, "offset and length: non-negative integers");
		return -EINVAL;
	}
	if (a->body && json_get_str(a->body, "encoding", &enc) == -EINVAL) {
		snprintf(why, whysz, "encoding: \"text\" or \"base64\"");
		return -EINVAL;
	}
	o->enc = !enc ? ENC_AUTO : strcmp(enc, "text") == 0 ? ENC_TEXT : strcmp(enc, "base64") == 0 ? ENC_BASE64 : -1;
	if (o->enc < 0) {
		snprintf(why, whysz, "encoding: \"text\" or \"base64\"");
		return -EINVAL;
	}
	if (a->range && parse_range(a->range, &m) < 0) {
		snprintf(why, whysz, "Range: one range, bytes=START-END, bytes=START- or bytes=-N");
		return -EINVAL;
	}
	o->ranged = a->range || m.offset || m.length;
	o->raw_out = a->raw_out;
	o->fop = FOP_READ;
	return stub_file_op(&m, NULL, 0, on_file, o);
}

static int start_file_write(struct op *o, const struct op_args *a, char *why, size_t whysz)
{
	static const char *const more[] = { "parents", "content", "encoding", NULL };
	struct msg_FILE_OP m = { .op = FOP_WRITE };
	const char *content = NULL, *enc = NULL;
	_cleanup_free_ char *decoded = NULL;
	size_t len = 0;
	int r;
	if ((r = file_args(a, more, true, &m, why, whysz)) < 0)
		return r;
	if (a->raw) { /* REST: the body is the content */
		content = a->raw;
		len = a->raw_len;
	} else {
		yajl_val v = a->body ? yajl_tree_get(a->body, (const char *[]){ "content", NULL }, yajl_t_any) : NULL;
		if (!v || !YAJL_IS_STRING(v)) {
			snprintf(why, whysz, "content: a required string (text, or base64 with encoding)");
			return -EINVAL;
		}
		content = YAJL_GET_STRING(v);
		len = strlen(content);
		if (json_get_str(a->body, "encoding", &enc) == -EINVAL ||
		    (enc && strcmp(enc, "text") != 0 && strcmp(enc, "base64") != 0)) {
			snprintf(why, whysz, "encoding: \"text\" or \"base64\"");
			return -EINVAL;
		}
		if (enc && strcmp(enc, "base64") == 0) {
			if ((r = json_base64_decode(content, len, &decoded, &len)) < 0) {
				snprintf(why, whysz, "content: not valid base64");
				return r == -ENOMEM ? r : -EINVAL;
			}
			content = decoded;
		}
	}
	if (len > PROTO_FILE_MAX) {
		snprintf(why, whysz, "content: at most %u bytes per write", PROTO_FILE_MAX);
		return -E2BIG;
	}
	o->fop = FOP_WRITE;
	return stub_file_op(&m, content, len, on_file, o);
}

/* ---- trace ---------------------------------------------------------------------------- */

static void on_trace(const struct stub_reply *rep, void *arg)
{
	struct op *o = arg;
	const struct msg_TRACE_REP *t = rep->msg;
	unsigned count = 0;
	yajl_gen g;
	if (rep->type != MSG_TRACE_REP) {
		op_fail(o, rep->type == MSG_ERROR ? rep->err : PERR_INTERNAL,
		        rep->type == MSG_ERROR ? rep->message : "unexpected reply from the launcher");
		return;
	}
	g = json_gen_new();
	yajl_gen_map_open(g);
	json_gen_kbool(g, "tracing", t->tracing);
	json_gen_key(g, "events");
	json_gen_trace_events(g, rep->out, rep->out_len, &count);
	json_gen_kint(g, "count", count);
	json_gen_kbool(g, "truncated", t->truncated);
	yajl_gen_map_close(g);
	op_gen_done(o, o->row->status, g);
	yajl_gen_free(g);
}

static int start_trace(struct op *o, const struct op_args *a, char *why, size_t whysz)
{
	struct msg_TRACE_GET m = { .sandbox_id = (char *)a->id, .run_id = "" };
	yajl_val b = a->body, since;
	const char *run = NULL;
	for (size_t i = 0; b && YAJL_IS_OBJECT(b) && i < b->u.object.len; i++) {
		const char *k = b->u.object.keys[i];
		if (strcmp(k, "run") && strcmp(k, "since") && strcmp(k, "sandboxId")) {
			snprintf(why, whysz, "%s: unknown argument (run, since)", k);
			return -EINVAL;
		}
	}
	if (b && json_get_str(b, "run", &run) == -EINVAL) {
		snprintf(why, whysz, "run: a run id");
		return -EINVAL;
	}
	if (run && *run && !proto_id_valid(run)) {
		snprintf(why, whysz, "run: not a run id");
		return -EINVAL;
	}
	m.run_id = (char *)(run ? run : "");
	/* since: Unix milliseconds, a number (MCP) or digits (a REST query) */
	since = b ? yajl_tree_get(b, (const char *[]){ "since", NULL }, yajl_t_any) : NULL;
	if (since) {
		const char *str = YAJL_IS_STRING(since) ? YAJL_GET_STRING(since) : NULL;
		char *end = NULL;
		bool ok = false;
		if (YAJL_IS_INTEGER(since) && YAJL_GET_INTEGER(since) >= 0) {
			m.since_ms = (uint64_t)YAJL_GET_INTEGER(since);
			ok = true;
		} else if (str && *str >= '0' && *str <= '9') {
			m.since_ms = strtoull(str, &end, 10);
			ok = !*end;
		}
		if (!ok) {
			snprintf(why, whysz, "since: Unix time in milliseconds");
			return -EINVAL;
		}
	}
	return stub_trace(&m, on_trace, o);
}

/* ---- apps ------------------------------------------------------------------------------ */

static int start_app_create(struct op *o, const struct op_args *a, char *why, size_t whysz)
{
	struct msg_APP_PUT m = { 0 };
	int r;
	if ((r = json_parse_app(a->body, true, NULL, &m, why, whysz)) == 0)
		r = stub_app_put(&m, on_single, o);
	proto_msg_clear(MSG_APP_PUT, &m);
	return r;
}

static int start_app_update(struct op *o, const struct op_args *a, char *why, size_t whysz)
{
	struct msg_APP_PUT m = { 0 };
	int r;
	if ((r = json_parse_app(a->body, false, NULL, &m, why, whysz)) == 0) {
		free(m.app);
		m.app = strdup(a->id);
		r = m.app ? stub_app_put(&m, on_single, o) : -ENOMEM;
	}
	proto_msg_clear(MSG_APP_PUT, &m);
	return r;
}

static int start_app_get(struct op *o, const struct op_args *a, char *why, size_t whysz)
{
	return stub_app_get(a->id, on_single, o);
}

static int start_app_delete(struct op *o, const struct op_args *a, char *why, size_t whysz)
{
	return stub_app_delete(a->id, on_single, o);
}

static int start_app_start(struct op *o, const struct op_args *a, char *why, size_t whysz)
{
	return stub_app_ctl(a->id, APP_OP_START, on_single, o);
}

static int start_app_stop(struct op *o, const struct op_args *a, char *why, size_t whysz)
{
	return stub_app_ctl(a->id, APP_OP_STOP, on_single, o);
}

static int start_app_restart(struct op *o, const struct op_args *a, char *why, size_t whysz)
{
	return stub_app_ctl(a->id, APP_OP_RESTART, on_single, o);
}

static void on_app_log(const struct stub_reply *rep, void *arg)
{
	struct op *o = arg;
	const struct msg_APP_LOG_REP *l = rep->msg;
	yajl_gen g;
	if (rep->type != MSG_APP_LOG_REP) {
		op_fail(o, rep->type == MSG_ERROR ? rep->err : PERR_INTERNAL,
		        rep->type == MSG_ERROR ? rep->message : "unexpected reply from the launcher");
		return;
	}
	for (uint32_t c = 0; o->chunk && c < 2; c++) /* a character cut at the end goes out whole */
		if (o->ncarry[c])
			emit(o, c, "", 0, true);
	if (o->raw_out) { /* REST: the log's bytes as they are */
		char *body = malloc(rep->out_len + 1);
		if (!body) {
			op_fail(o, PERR_INTERNAL, "out of memory");
			return;
		}
		if (rep->out_len)
			memcpy(body, rep->out, rep->out_len);
		*o->raw_out = (struct op_raw){ .used = true, .length = rep->out_len, .total = l->size,
			                       .offset = l->size - rep->out_len,
			                       .content_type = "text/plain; charset=utf-8" };
		op_finish(o, o->row->status, body, rep->out_len);
		return;
	}
	g = json_gen_new();
	yajl_gen_map_open(g);
	json_gen_key(g, "text");
	json_gen_bytes(g, rep->out ? rep->out : "", rep->out_len);
	json_gen_kint(g, "size", (long long)l->size);
	json_gen_kint(g, "length", (long long)rep->out_len);
	yajl_gen_map_close(g);
	op_gen_done(o, o->row->status, g);
	yajl_gen_free(g);
}

/* stream (stdout | stderr) and tail (bytes) from the query or the tool's arguments */
static int app_log_args(yajl_val b, struct msg_APP_LOG *m, char *why, size_t whysz)
{
	const char *stream = NULL;
	yajl_val tail;
	if (b && json_get_str(b, "stream", &stream) == -EINVAL) {
		snprintf(why, whysz, "stream: \"stdout\" or \"stderr\"");
		return -EINVAL;
	}
	if (stream && strcmp(stream, "stdout") && strcmp(stream, "stderr")) {
		snprintf(why, whysz, "stream: \"stdout\" or \"stderr\"");
		return -EINVAL;
	}
	m->stream = stream && strcmp(stream, "stderr") == 0;
	tail = b ? yajl_tree_get(b, (const char *[]){ "tail", NULL }, yajl_t_any) : NULL;
	if (tail) {
		const char *s = YAJL_IS_STRING(tail) ? YAJL_GET_STRING(tail) : NULL;
		char *end = NULL;
		if (YAJL_IS_INTEGER(tail) && YAJL_GET_INTEGER(tail) >= 0)
			m->tail = (uint64_t)YAJL_GET_INTEGER(tail);
		else if (s && *s >= '0' && *s <= '9' && (m->tail = strtoull(s, &end, 10), !*end))
			;
		else {
			snprintf(why, whysz, "tail: a number of bytes");
			return -EINVAL;
		}
		if (m->tail > PROTO_APP_LOG_MAX) {
			snprintf(why, whysz, "tail: at most %u bytes", PROTO_APP_LOG_MAX);
			return -EINVAL;
		}
	}
	return 0;
}

static int start_app_log(struct op *o, const struct op_args *a, char *why, size_t whysz)
{
	struct msg_APP_LOG m = { .app = (char *)a->id };
	int r;
	for (size_t i = 0; a->body && YAJL_IS_OBJECT(a->body) && i < a->body->u.object.len; i++) {
		const char *k = a->body->u.object.keys[i];
		if (strcmp(k, "stream") && strcmp(k, "tail") && strcmp(k, "name")) {
			snprintf(why, whysz, "%s: unknown argument (stream, tail)", k);
			return -EINVAL;
		}
	}
	if ((r = app_log_args(a->body, &m, why, whysz)) < 0)
		return r;
	/* Accept: text/event-stream follows the log while the app's process runs */
	o->chunk = a->chunk;
	o->raw_out = a->chunk ? NULL : a->raw_out;
	return stub_app_log(&m, o->chunk ? on_chunk : NULL, on_app_log, o, &o->stream);
}

/* GET /apps, and the sbx_apps tool: {action: list | status | start | stop | restart | log,
 * name, stream, tail} */
static int start_apps(struct op *o, const struct op_args *a, char *why, size_t whysz)
{
	static const char *const actions[] = { "list", "status", "start", "stop", "restart", "log" };
	const char *action = "list", *name = NULL;
	yajl_val b = a->entrance == ENTRANCE_MCP ? a->body : NULL;
	size_t act = 0;
	for (size_t i = 0; b && YAJL_IS_OBJECT(b) && i < b->u.object.len; i++) {
		const char *k = b->u.object.keys[i];
		if (strcmp(k, "action") && strcmp(k, "name") && strcmp(k, "stream") && strcmp(k, "tail")) {
			snprintf(why, whysz, "%s: unknown argument (action, name, stream, tail)", k);
			return -EINVAL;
		}
	}
	if (b && (json_get_str(b, "action", &action) == -EINVAL || json_get_str(b, "name", &name) == -EINVAL)) {
		snprintf(why, whysz, "action and name: strings");
		return -EINVAL;
	}
	while (act < sizeof(actions) / sizeof(actions[0]) && strcmp(actions[act], action))
		act++;
	if (act == sizeof(actions) / sizeof(actions[0])) {
		snprintf(why, whysz, "action: one of list, status, start, stop, restart, log");
		return -EINVAL;
	}
	if (act == 0) {
		o->list_key = "apps";
		return stub_app_list(on_list, o);
	}
	if (!name || !proto_app_name_valid(name)) {
		snprintf(why, whysz, "name: the app's name");
		return -EINVAL;
	}
	if (act == 1)
		return stub_app_get(name, on_single, o);
	if (act == 5) {
		struct msg_APP_LOG m = { .app = (char *)name };
		int r = app_log_args(b, &m, why, whysz);
		return r < 0 ? r : stub_app_log(&m, NULL, on_app_log, o, NULL);
	}
	return stub_app_ctl(name, act == 2 ? APP_OP_START : act == 3 ? APP_OP_STOP : APP_OP_RESTART,
	                    on_single, o);
}

/* ---- schedules ---------------------------------------------------------------------- */

static int start_sched_list(struct op *o, const struct op_args *a, char *why, size_t whysz)
{
	o->list_key = "schedules";
	return stub_sched_list(on_list, o);
}

static int start_sched_create(struct op *o, const struct op_args *a, char *why, size_t whysz)
{
	struct msg_SCHED_PUT m = { 0 };
	int r;
	if ((r = json_parse_schedule(a->body, &m, why, whysz)) == 0)
		r = stub_sched_put(&m, on_single, o);
	proto_msg_clear(MSG_SCHED_PUT, &m);
	return r;
}

static int start_sched_delete(struct op *o, const struct op_args *a, char *why, size_t whysz)
{
	return stub_sched_delete(a->id, on_single, o);
}

/* ---- metrics ------------------------------------------------------------------------- */

static void metrics_finish(struct op *o, const struct msg_METRICS_REP *m)
{
	size_t len = 0;
	char *doc = api_metrics_render(o->have_status ? &o->status : NULL, m, &len);
	if (!doc) {
		op_fail(o, PERR_INTERNAL, "out of memory");
		return;
	}
	if (o->raw_out)
		*o->raw_out = (struct op_raw){ .used = true, .length = len, .total = len,
			                       .content_type = "text/plain; version=0.0.4; charset=utf-8" };
	op_finish(o, o->row->status, doc, len);
}

static void on_metrics(const struct stub_reply *rep, void *arg)
{
	/* a launcher that did not answer is reported as down, the rest still served */
	metrics_finish(arg, rep->type == MSG_METRICS_REP ? rep->msg : NULL);
}

static void on_metrics_status(const struct stub_reply *rep, void *arg)
{
	struct op *o = arg;
	if (rep->type == MSG_STATUS_REP) {
		o->status = *(const struct msg_STATUS_REP *)rep->msg;
		o->have_status = true;
	}
	if (stub_metrics(on_metrics, o) < 0)
		metrics_finish(o, NULL);
}

static int start_metrics(struct op *o, const struct op_args *a, char *why, size_t whysz)
{
	o->raw_out = a->raw_out;
	if (stub_status(on_metrics_status, o) < 0 && stub_metrics(on_metrics, o) < 0)
		metrics_finish(o, NULL);
	return 0;
}

/* Answered here, without the launcher: the document is the table itself. */
static int start_openapi(struct op *o, const struct op_args *a, char *why, size_t whysz)
{
	size_t len = 0;
	char *doc = opdoc_openapi(&len);
	if (!doc)
		return -ENOMEM;
	op_finish(o, o->row->status, doc, len);
	return 0;
}

/* ---- the table ------------------------------------------------------------------------ */

#define GET    EVHTTP_REQ_GET
#define POST   EVHTTP_REQ_POST
#define PUT    EVHTTP_REQ_PUT
#define PATCH  EVHTTP_REQ_PATCH
#define DELETE EVHTTP_REQ_DELETE

/* The order is DESIGN.md §7's; routes that share a path list their methods together. */
const struct op_row op_table[] = {
	{ "health", GET, "/health", NULL, "sbx_health",
	  "Process states, the confinement the API process achieved, versions.", NULL, NULL,
	  SCHEMA_HEALTH, 200, start_health, 0 },
	{ "getCaps", GET, "/caps", NULL, "sbx_caps",
	  "What this machine can isolate: the capability probe (cached 20 s).", NULL, NULL,
	  SCHEMA_CAPS, 200, start_caps, 0 },
	{ "recheckCaps", POST, "/caps/recheck", NULL, NULL,
	  "Run the capability probe again, now.", NULL, NULL, SCHEMA_CAPS, 200, start_caps_recheck, 0 },
	{ "getExecPolicy", GET, "/exec-policy", NULL, NULL,
	  "Which pre-sandbox entrances are forced through a sandbox.", NULL, NULL, SCHEMA_POLICY,
	  200, start_policy_get, 0 },
	/* no tool: the policy changes over REST (and the UI) only (DESIGN.md §6) */
	{ "setExecPolicy", PUT, "/exec-policy", NULL, NULL,
	  "Change the ExecPolicy; fields left out keep their value.", SCHEMA_POLICY_PROPS, NULL,
	  SCHEMA_POLICY, 200, start_policy_set, 0 },
	{ "listSandboxes", GET, "/sandboxes", NULL, "sbx_list", "List the sandboxes.", NULL, NULL,
	  SCHEMA_SANDBOX_LIST, 200, start_sbx_list, 0 },
	{ "createSandbox", POST, "/sandboxes", NULL, "sbx_create",
	  "Create a sandbox: a persistent workspace with a fence.", SCHEMA_SBX_SPEC_PROPS, "\"name\"",
	  SCHEMA_SANDBOX, 201, start_sbx_create, 0 },
	{ "getSandbox", GET, "/sandboxes/{id}", NULL, "sbx_get", "Show one sandbox and its settings.",
	  NULL, NULL, SCHEMA_SANDBOX, 200, start_sbx_get, 0 },
	{ "updateSandbox", PATCH, "/sandboxes/{id}", NULL, "sbx_update",
	  "Change a sandbox's settings; they apply from the next run.", SCHEMA_SBX_SPEC_PROPS, NULL,
	  SCHEMA_SANDBOX, 200, start_sbx_update, 0 },
	{ "deleteSandbox", DELETE, "/sandboxes/{id}", NULL, "sbx_delete",
	  "Delete a sandbox and its workdir.", NULL, NULL, SCHEMA_DELETED, 200, start_sbx_delete, 0 },
	{ "runCode", POST, "/sandboxes/{id}/runs", NULL, "sbx_run",
	  "Run sh, python or node code inside a sandbox and return its output.", SCHEMA_RUN_PROPS,
	  "\"code\"", SCHEMA_RUN, 200, start_run, 0 },
	{ "listRuns", GET, "/sandboxes/{id}/runs", NULL, "sbx_runs",
	  "The run history of a sandbox, newest first.", NULL, NULL, SCHEMA_RUN_LIST, 200,
	  start_runs_list, 0 },
	{ "getRun", GET, "/sandboxes/{id}/runs/{runId}", NULL, "sbx_run_get", "One run of a sandbox.", NULL,
	  NULL, SCHEMA_RUN, 200, start_run_get, 0 },
	{ "getProfile", GET, "/sandboxes/{id}/profile", NULL, "sbx_profile",
	  "The fence the next run would get (its argv or profile).", NULL, NULL, SCHEMA_PROFILE, 200,
	  start_profile, 0 },
	{ "listProcesses", GET, "/sandboxes/{id}/processes", NULL, "sbx_ps",
	  "The live processes of a sandbox's runs, read from /proc, with what each actually got "
	  "from the kernel (uid, NoNewPrivs, seccomp, capabilities, namespaces, cgroup).",
	  NULL, NULL, SCHEMA_PROC_LIST, 200, start_ps, 0 },
	{ "killProcesses", POST, "/sandboxes/{id}/kill", NULL, "sbx_kill",
	  "Signal processes the engine started for this sandbox: {pid}, {pgid} (with an optional "
	  "signal, default TERM), {run}, or {} for every run (SIGTERM, then SIGKILL). Anything "
	  "else, pid 1 and the daemon's own processes included, is refused with 403.",
	  SCHEMA_KILL_PROPS, NULL, SCHEMA_KILL, 200, start_kill, 0 },
	{ "listFiles", GET, "/sandboxes/{id}/files", "path", "sbx_ls",
	  "List a directory of the sandbox (path relative to its workdir; a mount's target walks "
	  "into the mount).", SCHEMA_FILE_PATH_PROPS, NULL, SCHEMA_FILE_LIST, 200, start_files_list,
	  OPF_QUERY_ARGS },
	{ "deleteFile", DELETE, "/sandboxes/{id}/files", "path,recursive", "sbx_rm",
	  "Delete a file, or a directory (with recursive: and its contents).", SCHEMA_FILE_DELETE_PROPS,
	  "\"path\"", SCHEMA_FILE_ENTRY, 200, start_file_delete, OPF_QUERY_ARGS },
	{ "readFile", GET, "/sandboxes/{id}/files/content", "path", "sbx_read",
	  "Read a file: REST answers the raw bytes (Range honoured); MCP answers text, or base64 "
	  "for bytes that are not UTF-8 (offset and length select a part).",
	  SCHEMA_FILE_READ_PROPS, "\"path\"", SCHEMA_FILE_CONTENT, 200, start_file_read,
	  OPF_QUERY_ARGS | OPF_RAW_REPLY },
	{ "writeFile", PUT, "/sandboxes/{id}/files/content", "path,parents", "sbx_write",
	  "Write a file whole, replacing it atomically, as the sandbox's uid: REST takes the raw "
	  "body (application/octet-stream); MCP takes content as text or base64.",
	  SCHEMA_FILE_WRITE_PROPS, "\"path\"", SCHEMA_FILE_ENTRY, 200, start_file_write,
	  OPF_QUERY_ARGS | OPF_RAW_BODY },
	{ "makeDir", POST, "/sandboxes/{id}/files/dir", "path,parents", "sbx_mkdir",
	  "Make a directory (with parents: and the missing ones above it).", SCHEMA_MKDIR_PROPS,
	  "\"path\"", SCHEMA_FILE_ENTRY, 201, start_mkdir, OPF_QUERY_ARGS },
	{ "getTrace", GET, "/sandboxes/{id}/trace", "run,since", "sbx_trace",
	  "What traced runs touched: file reads and writes, spawns with argv, connects, name "
	  "lookups (of one run, and since a Unix time in ms, when given).", SCHEMA_TRACE_PROPS, NULL,
	  SCHEMA_TRACE, 200, start_trace, OPF_QUERY_ARGS },
	{ "listMounts", GET, "/sandboxes/{id}/mounts", NULL, "sbx_mounts", "The sandbox's mounts.", NULL,
	  NULL, SCHEMA_MOUNTS, 200, start_mounts_list, 0 },
	{ "addMount", POST, "/sandboxes/{id}/mounts", NULL, "sbx_mount",
	  "Make a host directory appear at <sandbox>/<target>, read-only unless readOnly is false. "
	  "Credential dirs, system roots, home itself and the engine's data dir are refused.",
	  SCHEMA_MOUNT_PROPS, "\"source\",\"target\"", SCHEMA_MOUNTS, 201, start_mount_add, 0 },
	{ "removeMount", DELETE, "/sandboxes/{id}/mounts", "target", "sbx_unmount",
	  "Remove the mount at target.", SCHEMA_UNMOUNT_PROPS, "\"target\"", SCHEMA_MOUNTS, 200,
	  start_mount_del, 0 },
	{ "exec", POST, "/exec", NULL, "sbx_exec",
	  "Run a shell command (the agent shell), in the given sandbox or the default one named "
	  "\"shell\".",
	  SCHEMA_EXEC_PROPS, "\"code\"", SCHEMA_RUN, 200, start_exec, 0 },
	{ "listApps", GET, "/apps", NULL, "sbx_apps",
	  "Space Apps, long-lived jailed services: list them (REST, and the tool's default), or "
	  "with the tool's action: status, start, stop, restart or log of the app name.",
	  SCHEMA_APPS_TOOL_PROPS, NULL, SCHEMA_APPS_OUT, 200, start_apps, 0 },
	{ "createApp", POST, "/apps", NULL, NULL,
	  "Create an app: a command run by sh -s in a sandbox of its own (\"app:NAME\", created "
	  "with the fence settings given here), kept running by supervisord's rules.",
	  SCHEMA_APP_PROPS, "\"name\",\"command\"", SCHEMA_APP, 201, start_app_create, 0 },
	{ "getApp", GET, "/apps/{name}", NULL, NULL,
	  "One app: its state and, while it runs, what its process got from the kernel.", NULL,
	  NULL, SCHEMA_APP, 200, start_app_get, 0 },
	{ "updateApp", PATCH, "/apps/{name}", NULL, NULL,
	  "Change an app's supervision settings (its fence is its sandbox's); from the next start.",
	  SCHEMA_APP_PATCH_PROPS, NULL, SCHEMA_APP, 200, start_app_update, 0 },
	{ "deleteApp", DELETE, "/apps/{name}", NULL, NULL,
	  "Delete a stopped app with its sandbox, directory and logs.", NULL, NULL, SCHEMA_DELETED,
	  200, start_app_delete, 0 },
	{ "startApp", POST, "/apps/{name}/start", NULL, NULL, "Start an app.", NULL, NULL,
	  SCHEMA_APP, 200, start_app_start, 0 },
	{ "stopApp", POST, "/apps/{name}/stop", NULL, NULL,
	  "Stop an app: its stopsignal, then SIGKILL after stopwaitsecs.", NULL, NULL, SCHEMA_APP,
	  200, start_app_stop, 0 },
	{ "restartApp", POST, "/apps/{name}/restart", NULL, NULL, "Stop an app, then start it.",
	  NULL, NULL, SCHEMA_APP, 200, start_app_restart, 0 },
	{ "getAppLog", GET, "/apps/{name}/log", "stream,tail", NULL,
	  "The end of an app's stdout (or stream=stderr) log, tail bytes of it (default and most: "
	  "4 MiB), as text; with Accept: text/event-stream, that and then what the app writes, "
	  "until its process ends.", SCHEMA_APP_LOG_PROPS, NULL, SCHEMA_APP_LOG, 200, start_app_log,
	  OPF_QUERY_ARGS | OPF_RAW_REPLY | OPF_TEXT_REPLY },
	{ "listSchedules", GET, "/schedules", NULL, NULL,
	  "Scripts the daemon runs by itself on an interval or a cron time, with their last run.",
	  NULL, NULL, SCHEMA_SCHEDULE_LIST, 200, start_sched_list, 0 },
	{ "createSchedule", POST, "/schedules", NULL, NULL,
	  "Run a script in a sandbox every N seconds (every) or at a cron(5) expression's minutes "
	  "(cron), through the same gate as every run, with entrance \"scheduler\": the "
	  "schedulerScript switch decides between the sandbox and none.", SCHEMA_SCHEDULE_PROPS,
	  "\"sandboxId\",\"code\"", SCHEMA_SCHEDULE, 201, start_sched_create, 0 },
	{ "deleteSchedule", DELETE, "/schedules/{scheduleId}", NULL, NULL, "Delete a schedule.", NULL,
	  NULL, SCHEMA_DELETED, 200, start_sched_delete, 0 },
	{ "metrics", GET, "/metrics", NULL, NULL,
	  "Prometheus text format: runs by outcome, run latency histogram, live runs and process "
	  "groups, restarts of each child, requests by operation and status.",
	  NULL, NULL, SCHEMA_METRICS, 200, start_metrics, OPF_RAW_REPLY | OPF_TEXT_REPLY },
	{ "openapi", GET, "/openapi.json", NULL, NULL, "This table as OpenAPI 3.1.", NULL, NULL,
	  SCHEMA_OPENAPI, 200, start_openapi, 0 },
};
const size_t op_table_len = sizeof(op_table) / sizeof(op_table[0]);

#undef GET
#undef POST
#undef PUT
#undef PATCH
#undef DELETE

static const struct op_param op_params[] = {
	{ "id", "sandboxId", "no such sandbox", offsetof(struct op_args, id), proto_id_valid },
	{ "runId", "runId", "no such run", offsetof(struct op_args, sub_id), proto_id_valid },
	{ "name", "name", "no such app", offsetof(struct op_args, id), proto_app_name_valid },
	{ "scheduleId", "scheduleId", "no such schedule", offsetof(struct op_args, id), proto_id_valid },
};

const struct op_row *op_by_tool(const char *name)
{
	for (size_t i = 0; name && i < op_table_len; i++)
		if (op_table[i].tool && strcmp(op_table[i].tool, name) == 0)
			return &op_table[i];
	return NULL;
}

int op_row_params(const struct op_row *r, const struct op_param **ret, size_t max)
{
	size_t n = 0;
	for (const char *p = strchr(r->path, '{'); p; p = strchr(p + 1, '{')) {
		const char *end = strchr(p, '}');
		const struct op_param *found = NULL;
		if (!end)
			return -EINVAL;
		for (size_t i = 0; i < sizeof(op_params) / sizeof(op_params[0]); i++)
			if (strlen(op_params[i].name) == (size_t)(end - p - 1) &&
			    strncmp(op_params[i].name, p + 1, (size_t)(end - p - 1)) == 0)
				found = &op_params[i];
		if (!found || n == max)
			return -EINVAL;
		ret[n++] = found;
	}
	return (int)n;
}

void op_param_set(const struct op_param *p, struct op_args *a, const char *value)
{
	*(const char **)((char *)a + p->field) = value;
}

static const char *op_param_get(const struct op_param *p, const struct op_args *a)
{
	return *(const char *const *)((const char *)a + p->field);
}

const char *op_method_name(enum evhttp_cmd_type m)
{
	switch (m) {
	case EVHTTP_REQ_GET:
		return "GET";
	case EVHTTP_REQ_POST:
		return "POST";
	case EVHTTP_REQ_PUT:
		return "PUT";
	case EVHTTP_REQ_PATCH:
		return "PATCH";
	case EVHTTP_REQ_DELETE:
		return "DELETE";
	default:
		return "?";
	}
}

/* ---- starting an operation ----------------------------------------------------------- */

void op_start(const struct op_row *row, const struct op_args *a, op_done_fn done, void *arg)
{
	struct op *o = calloc(1, sizeof(*o));
	const struct op_param *params[OP_PARAMS_MAX];
	char why[OP_WHY_MAX] = "";
	int n, r;

	if (!o) {
		done(arg, 500, NULL, 0);
		return;
	}
	o->row = row;
	o->done = done;
	o->arg = arg;
	n = op_row_params(row, params, OP_PARAMS_MAX);
	for (int i = 0; i < n; i++)
		if (!params[i]->valid(op_param_get(params[i], a))) {
			/* an id we would never issue names nothing */
			op_fail(o, PERR_NOT_FOUND, params[i]->not_found);
			return;
		}
	r = n < 0 ? -EINVAL : row->start(o, a, why, sizeof(why));
	if (r == 0)
		return;
	if (r == -E2BIG)
		op_fail(o, PERR_PAYLOAD_TOO_LARGE, why[0] ? why : "too large");
	else if (r == -EMSGSIZE) { /* each field within its limit, all together over one packet */
		snprintf(why, sizeof(why), "the request does not fit one launcher message (%u bytes)",
		         PROTO_MSG_MAX);
		op_fail(o, PERR_PAYLOAD_TOO_LARGE, why);
	}
	else if (r == -EINVAL)
		op_fail(o, PERR_INVALID_ARGUMENT, why[0] ? why : "invalid request");
	else if (r == -EBUSY)
		op_fail(o, PERR_ENGINE_UNAVAILABLE, "too many requests in flight");
	else if (r == -EPIPE || r == -ENOTCONN)
		op_fail(o, PERR_ENGINE_UNAVAILABLE, "the launcher is not connected");
	else
		op_fail(o, PERR_INTERNAL, strerror(-r));
}
