/* JSON helpers shared by REST and MCP: one parser per request shape, one serializer per
 * reply, so both front doors produce and accept exactly the same documents. */
#ifndef SBX_API_JSON_H
#define SBX_API_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <yajl/yajl_gen.h>
#include <yajl/yajl_tree.h>

#include "proto.h"

#define JSON_DEPTH_MAX 32         /* nesting deeper than this is refused before yajl_tree */
/* bytes, as evhttp_set_max_body_size: room for a run's code and stdin at their documented
 * maxima (PROTO_RUN_CODE_MAX + PROTO_RUN_STDIN_MAX) with JSON escaping */
#define JSON_BODY_MAX  (4u << 20)

/* Strict UTF-8 without NUL: what every key and string of a request must be. */
bool json_text_ok(const unsigned char *s, size_t len);
/* A scan by yajl's streaming parser (no comments, depth counted while parsing, every
 * string strict UTF-8 without NUL), then yajl_tree_parse. errbuf gets a reason on failure. 0 or -EINVAL/-E2BIG. */
int json_parse(const char *buf, size_t len, yajl_val *ret, char *errbuf, size_t errlen);

/* Field access; return 0, -ENOENT (absent or null), -EINVAL (wrong type). */
yajl_val json_get(yajl_val obj, const char *key);
int json_get_str(yajl_val obj, const char *key, const char **ret);
int json_get_bool(yajl_val obj, const char *key, bool *ret);
int json_get_u32(yajl_val obj, const char *key, uint32_t *ret);
int json_get_u64(yajl_val obj, const char *key, uint64_t *ret);

/* Strings: invalid UTF-8 bytes become U+FFFD so the document is always valid JSON. */
void json_gen_str(yajl_gen g, const char *s);
void json_gen_bytes(yajl_gen g, const char *s, size_t len);
void json_gen_key(yajl_gen g, const char *k);
void json_gen_kstr(yajl_gen g, const char *k, const char *v);
void json_gen_kbool(yajl_gen g, const char *k, bool v);
void json_gen_kint(yajl_gen g, const char *k, long long v);
void json_gen_knull(yajl_gen g, const char *k);
/* t (Unix seconds) as an RFC 3339 UTC string. */
void json_gen_ktime(yajl_gen g, const char *k, uint64_t t);
yajl_gen json_gen_new(void);
/* Copy the generated document out (malloc'd, NUL-terminated). */
char *json_gen_dup(yajl_gen g, size_t *ret_len);

/* Error documents and their statuses (DESIGN.md §7). */
const char *json_err_code(enum proto_err e);
int json_err_status(enum proto_err e);
char *json_error_doc(enum proto_err e, const char *message, size_t *ret_len);

/* Request parsers: fill a message from a client's JSON; errmsg says which field is wrong.
 * Return 0, -EINVAL (bad input: 400) or -E2BIG (code too large: 413). */
/* The settings of a sandbox (create and PATCH bodies, the sbx_create / sbx_update tool
 * arguments), walked from SBX_FIELDS: an unknown key anywhere (top level, inside ports or
 * limits, inside a mount) or a read-only one (id, workdir, createdAt, note) is refused by
 * name. extra: the one further key a front door allows (MCP: "sandboxId"), or NULL. */
int json_parse_sbx_fields(yajl_val obj, const char *extra, struct msg_SBX_UPDATE *out,
                          char *errmsg, size_t errlen);
int json_parse_sbx_spec(yajl_val obj, struct msg_SBX_UPDATE *out, char *errmsg, size_t errlen);
/* An app's create (create = true: name and command required) or PATCH body: the app's own
 * members and, on create, the fence's (the sandbox fields). extra: further keys a front
 * door adds (comma-separated), or NULL. */
int json_parse_app(yajl_val obj, bool create, const char *extra, struct msg_APP_PUT *out,
                   char *errmsg, size_t errlen);
void json_gen_app(yajl_gen g, const struct msg_APP_REP *a);
/* POST /schedules: {sandboxId, language, code, every | cron}. */
int json_parse_schedule(yajl_val obj, struct msg_SCHED_PUT *out, char *errmsg, size_t errlen);
void json_gen_schedule(yajl_gen g, const struct msg_SCHED_REP *s);
const char *json_app_state_name(uint32_t s);
/* Python's str(timedelta) of whole seconds, as supervisorctl prints an uptime. */
void json_uptime(uint64_t secs, char *buf, size_t sz);
int json_parse_run(yajl_val obj, struct msg_RUN *out, char *errmsg, size_t errlen);
int json_parse_exec(yajl_val obj, struct msg_EXEC *out, char *errmsg, size_t errlen);
int json_parse_policy(yajl_val obj, struct msg_POLICY_SET *inout, char *errmsg, size_t errlen);

/* Reply serializers */
void json_gen_sbx(yajl_gen g, const struct msg_SBX_REP *s);
/* {"sandboxId": ..., "mounts": [...]}: the body of the mount routes. */
void json_gen_sbx_mounts(yajl_gen g, const struct msg_SBX_REP *s);
/* With the run's trace lines ("RUN_ID ARRIVAL_MS JSON\n", launcher/trace.h) as "trace". */
void json_gen_run_traced(yajl_gen g, const struct msg_RUN_REP *r, const char *out, size_t out_len,
                         const char *err, size_t err_len, const char *trace, size_t trace_len);
/* Trace lines as an array of events, only their known members with their types checked. */
void json_gen_trace_events(yajl_gen g, const char *lines, size_t len, unsigned *ret_count);
void json_gen_run(yajl_gen g, const struct msg_RUN_REP *r, const char *out, size_t out_len,
                  const char *err, size_t err_len);
void json_gen_caps(yajl_gen g, const struct msg_CAPS_REP *c);
/* One process of GET /sandboxes/{id}/processes. */
void json_gen_proc(yajl_gen g, const struct msg_PROC_REP *p);
/* The answer of a kill: the signal's name, the pids signalled, the runs ended. */
void json_gen_kill(yajl_gen g, const struct msg_KILL_REP *k, const char *signame);
const char *json_signal_name(int sig);
/* Whole, valid UTF-8 without NUL bytes. */
bool json_utf8_valid(const char *s, size_t len);
/* Standard base64 with padding; decode refuses anything else (-EINVAL). malloc'd. */
char *json_base64_encode(const char *s, size_t len, size_t *ret_len);
int json_base64_decode(const char *s, size_t len, char **ret, size_t *ret_len);
/* The kill body: one of pid, pgid, run (or none: all), and a signal with pid or pgid.
 * The caller clears out with proto_msg_clear(MSG_KILL) on every path. */
int json_parse_kill(yajl_val obj, struct msg_KILL *out, char *errmsg, size_t errlen);
void json_gen_policy(yajl_gen g, const struct msg_POLICY_REP *p);

#endif
