/* The operations both front doors offer. REST and MCP parse their framing, then call
 * op_start() with the same JSON arguments; each operation calls the same stub and builds
 * the same JSON body, so a rule enforced for one door holds for the other. */
#include "ops.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api.h"
#include "json.h"
#include "stubs.h"
#include "util.h"

static void on_single(const struct stub_reply *rep, void *arg);

struct op {
	enum op_kind kind;
	op_done_fn done;
	void *arg;
	yajl_gen g;      /* list replies accumulate here */
	unsigned count;
	struct msg_STATUS_REP status; /* health: sbxd's answer, kept for the launcher's */
	bool have_status;
	struct msg_POLICY_SET pol_lo, pol_hi; /* policy set: the body parsed two ways */
};

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
	op_gen_done(o, 200, g);
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

static void on_single(const struct stub_reply *rep, void *arg)
{
	struct op *o = arg;
	yajl_gen g;
	int status = 200;

	if (rep->type == MSG_ERROR) {
		op_fail(o, rep->err, rep->message);
		return;
	}
	g = json_gen_new();
	switch (rep->type) {
	case MSG_SBX_REP:
		if (o->kind == OP_MOUNTS_LIST || o->kind == OP_MOUNT_ADD || o->kind == OP_MOUNT_DEL) {
			json_gen_sbx_mounts(g, rep->msg);
			if (o->kind == OP_MOUNT_ADD)
				status = 201;
			break;
		}
		json_gen_sbx(g, rep->msg);
		if (o->kind == OP_SBX_CREATE)
			status = 201;
		break;
	case MSG_RUN_REP:
		json_gen_run(g, rep->msg, rep->out, rep->out_len, rep->errout, rep->errout_len);
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
	op_gen_done(o, status, g);
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
		json_gen_key(o->g, o->kind == OP_SBX_LIST ? "sandboxes" : "runs");
		yajl_gen_array_open(o->g);
	}
	if (!rep->final) {
		if (rep->type == MSG_SBX_REP)
			json_gen_sbx(o->g, rep->msg);
		else if (rep->type == MSG_RUN_REP)
			json_gen_run(o->g, rep->msg, rep->out, rep->out_len, rep->errout,
			             rep->errout_len);
		o->count++;
		return;
	}
	yajl_gen_array_close(o->g);
	json_gen_kint(o->g, "count", o->count);
	yajl_gen_map_close(o->g);
	op_gen_done(o, 200, o->g);
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

/* ---- starting an operation ----------------------------------------------------------- */

static int start_stub(struct op *o, const struct op_args *a, char *why, size_t whysz)
{
	int r = 0;
	switch (o->kind) {
	case OP_HEALTH:
		if (stub_status(on_status, o) < 0)
			r = stub_health(on_health, o);
		return r;
	case OP_CAPS:
		return stub_caps(false, on_single, o);
	case OP_CAPS_RECHECK:
		return stub_caps(true, on_single, o);
	case OP_POLICY_GET:
		return stub_policy_get(on_single, o);
	case OP_POLICY_SET:
		/* a partial body: parse it twice, from all-off and from all-on; a field the
		 * body names comes out the same both times, the others come from the store */
		o->pol_lo = (struct msg_POLICY_SET){ 0 };
		o->pol_hi = (struct msg_POLICY_SET){ true, true, true, true, 0 };
		if ((r = json_parse_policy(a->body, &o->pol_lo, why, whysz)) < 0 ||
		    (r = json_parse_policy(a->body, &o->pol_hi, why, whysz)) < 0)
			return r;
		return stub_policy_get(on_policy_cur, o);
	case OP_SBX_CREATE: {
		struct msg_SBX_UPDATE u = { 0 };
		struct msg_SBX_CREATE c = { 0 };
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
	case OP_SBX_LIST:
		return stub_sandbox_list(on_list, o);
	case OP_SBX_GET:
		return stub_sandbox_get(a->id, on_single, o);
	case OP_SBX_UPDATE: {
		struct msg_SBX_UPDATE u = { 0 };
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
	case OP_SBX_DELETE:
		return stub_sandbox_delete(a->id, on_single, o);
	case OP_RUN: {
		struct msg_RUN m = { 0 };
		if ((r = json_parse_run(a->body, &m, why, whysz)) == 0) {
			m.entrance = a->entrance;
			free(m.sandbox_id);
			m.sandbox_id = strdup(a->id);
			r = m.sandbox_id ? stub_run(&m, on_single, o) : -ENOMEM;
		}
		proto_msg_clear(MSG_RUN, &m);
		return r;
	}
	case OP_RUNS_LIST:
		return stub_runs_list(a->id, 50, on_list, o);
	case OP_PROFILE:
		return stub_profile(a->id, on_single, o);
	case OP_MOUNTS_LIST:
		return stub_sandbox_get(a->id, on_single, o);
	case OP_MOUNT_ADD: {
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
		return stub_mount_add(&m, on_single, o);
	}
	case OP_MOUNT_DEL: {
		const char *tgt = a->sub_id;
		if (!tgt && a->body)
			json_get_str(a->body, "target", &tgt);
		if (!tgt || !*tgt || strlen(tgt) > PROTO_STR_MAX) {
			snprintf(why, whysz, "target: required");
			return -EINVAL;
		}
		return stub_mount_del(a->id, tgt, on_single, o);
	}
	case OP_RUN_GET:
		return stub_run_get(a->id, a->sub_id, on_single, o);
	case OP_EXEC: {
		struct msg_EXEC m = { 0 };
		if ((r = json_parse_exec(a->body, &m, why, whysz)) == 0) {
			m.entrance = a->entrance;
			r = stub_exec(&m, on_single, o);
		}
		proto_msg_clear(MSG_EXEC, &m);
		return r;
	}
	}
	return -EINVAL;
}

void op_start(const struct op_args *a, op_done_fn done, void *arg)
{
	struct op *o = calloc(1, sizeof(*o));
	char why[256] = "";
	bool needs_id = a->kind == OP_SBX_GET || a->kind == OP_SBX_UPDATE ||
	                a->kind == OP_SBX_DELETE || a->kind == OP_RUN || a->kind == OP_RUNS_LIST ||
	                a->kind == OP_RUN_GET || a->kind == OP_PROFILE ||
	                a->kind == OP_MOUNTS_LIST || a->kind == OP_MOUNT_ADD || a->kind == OP_MOUNT_DEL;
	int r;

	if (!o) {
		done(arg, 500, NULL, 0);
		return;
	}
	o->kind = a->kind;
	o->done = done;
	o->arg = arg;
	if (needs_id && !proto_id_valid(a->id)) {
		/* an id we would never issue names nothing */
		op_fail(o, PERR_NOT_FOUND, "no such sandbox");
		return;
	}
	if (a->kind == OP_RUN_GET && !proto_id_valid(a->sub_id)) {
		op_fail(o, PERR_NOT_FOUND, "no such run");
		return;
	}
	r = start_stub(o, a, why, sizeof(why));
	if (r == 0)
		return;
	if (r == -E2BIG)
		op_fail(o, PERR_PAYLOAD_TOO_LARGE, why[0] ? why : "too large");
	else if (r == -EINVAL)
		op_fail(o, PERR_INVALID_ARGUMENT, why[0] ? why : "invalid request");
	else if (r == -EBUSY)
		op_fail(o, PERR_ENGINE_UNAVAILABLE, "too many requests in flight");
	else if (r == -EPIPE || r == -ENOTCONN)
		op_fail(o, PERR_ENGINE_UNAVAILABLE, "the launcher is not connected");
	else
		op_fail(o, PERR_INTERNAL, strerror(-r));
}
