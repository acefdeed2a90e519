/* JSON helpers shared by REST and MCP (yajl). */
#include "json.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yajl/yajl_parse.h>

#include "cleanup.h"
#include "util.h"

/* Strict UTF-8 (RFC 3629): no overlong forms, no surrogates, nothing past U+10FFFF, and
 * no NUL, which C strings would silently cut at ("ab\u0000cd" became "ab"). */
bool json_text_ok(const unsigned char *s, size_t len)
{
	for (size_t i = 0; i < len;) {
		unsigned char c = s[i];
		size_t n;
		uint32_t cp, min;
		if (c == 0)
			return false;
		if (c < 0x80) {
			i++;
			continue;
		}
		if ((c & 0xe0) == 0xc0)
			n = 2, cp = c & 0x1f, min = 0x80;
		else if ((c & 0xf0) == 0xe0)
			n = 3, cp = c & 0x0f, min = 0x800;
		else if ((c & 0xf8) == 0xf0)
			n = 4, cp = c & 0x07, min = 0x10000;
		else
			return false;
		if (len - i < n)
			return false;
		for (size_t k = 1; k < n; k++) {
			if ((s[i + k] & 0xc0) != 0x80)
				return false;
			cp = (cp << 6) | (s[i + k] & 0x3f);
		}
		if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return false;
		i += n;
	}
	return true;
}

/* The checks yajl_tree cannot make, done by yajl's own streaming parser over the same
 * bytes with comments off, so the two cannot disagree about what is a string or a
 * comment: nesting is counted as it is parsed (no recursion, so a deep document is
 * refused without touching the stack), and every key and string must be strict UTF-8
 * without NUL. */
struct json_scan {
	int depth;
	bool too_deep, bad_text;
};

static int scan_open(void *ctx)
{
	struct json_scan *sc = ctx;
	if (++sc->depth > JSON_DEPTH_MAX) {
		sc->too_deep = true;
		return 0;
	}
	return 1;
}

static int scan_close(void *ctx)
{
	((struct json_scan *)ctx)->depth--;
	return 1;
}

static int scan_text(void *ctx, const unsigned char *s, size_t len)
{
	struct json_scan *sc = ctx;
	if (!json_text_ok(s, len)) {
		sc->bad_text = true;
		return 0;
	}
	return 1;
}

static const yajl_callbacks scan_callbacks = {
	.yajl_string = scan_text,
	.yajl_start_map = scan_open,
	.yajl_map_key = scan_text,
	.yajl_end_map = scan_close,
	.yajl_start_array = scan_open,
	.yajl_end_array = scan_close,
};

static int json_scan(const char *buf, size_t len, char *errbuf, size_t errlen)
{
	struct json_scan sc = { 0 };
	yajl_handle h = yajl_alloc(&scan_callbacks, NULL, &sc);
	yajl_status st;
	if (!h) {
		snprintf(errbuf, errlen, "out of memory");
		return -ENOMEM;
	}
	yajl_config(h, yajl_allow_comments, 0);
	st = yajl_parse(h, (const unsigned char *)buf, len);
	if (st == yajl_status_ok)
		st = yajl_complete_parse(h);
	if (st != yajl_status_ok && !sc.too_deep && !sc.bad_text) {
		unsigned char *e = yajl_get_error(h, 0, (const unsigned char *)buf, len);
		char *nl = e ? strchr((char *)e, '\n') : NULL;
		if (nl)
			*nl = '\0';
		snprintf(errbuf, errlen, "invalid JSON: %s", e ? (char *)e : "parse error");
		if (e)
			yajl_free_error(h, e);
	}
	yajl_free(h);
	if (sc.too_deep) {
		snprintf(errbuf, errlen, "JSON nested deeper than %d", JSON_DEPTH_MAX);
		return -E2BIG;
	}
	if (sc.bad_text) {
		snprintf(errbuf, errlen,
		         "invalid JSON: a string holds a NUL (\\u0000) or is not valid UTF-8");
		return -EINVAL;
	}
	return st == yajl_status_ok ? 0 : -EINVAL;
}

int json_parse(const char *buf, size_t len, yajl_val *ret, char *errbuf, size_t errlen)
{
	int r = json_scan(buf, len, errbuf, errlen);
	if (r < 0)
		return r;
	/* yajl_tree wants a NUL-terminated string; a NUL inside ends it early, and the
	 * parser then sees truncated input and fails, which is what we want */
	char *copy = malloc(len + 1);
	if (!copy) {
		snprintf(errbuf, errlen, "out of memory");
		return -ENOMEM;
	}
	memcpy(copy, buf, len);
	copy[len] = '\0';
	char yerr[256] = "";
	yajl_val v = yajl_tree_parse(copy, yerr, sizeof(yerr));
	free(copy);
	if (!v) {
		char *nl = strchr(yerr, '\n');
		if (nl)
			*nl = '\0';
		snprintf(errbuf, errlen, "invalid JSON: %s", yerr[0] ? yerr : "parse error");
		return -EINVAL;
	}
	*ret = v;
	return 0;
}

yajl_val json_get(yajl_val obj, const char *key)
{
	if (!obj || !YAJL_IS_OBJECT(obj))
		return NULL;
	for (size_t i = 0; i < obj->u.object.len; i++)
		if (strcmp(obj->u.object.keys[i], key) == 0)
			return obj->u.object.values[i];
	return NULL;
}

int json_get_str(yajl_val obj, const char *key, const char **ret)
{
	yajl_val v = json_get(obj, key);
	if (!v || YAJL_IS_NULL(v))
		return -ENOENT;
	if (!YAJL_IS_STRING(v))
		return -EINVAL;
	*ret = v->u.string;
	return 0;
}

int json_get_bool(yajl_val obj, const char *key, bool *ret)
{
	yajl_val v = json_get(obj, key);
	if (!v || YAJL_IS_NULL(v))
		return -ENOENT;
	if (!YAJL_IS_TRUE(v) && !YAJL_IS_FALSE(v))
		return -EINVAL;
	*ret = YAJL_IS_TRUE(v);
	return 0;
}

int json_get_u64(yajl_val obj, const char *key, uint64_t *ret)
{
	yajl_val v = json_get(obj, key);
	if (!v || YAJL_IS_NULL(v))
		return -ENOENT;
	if (!YAJL_IS_INTEGER(v) || YAJL_GET_INTEGER(v) < 0)
		return -EINVAL;
	*ret = (uint64_t)YAJL_GET_INTEGER(v);
	return 0;
}

int json_get_u32(yajl_val obj, const char *key, uint32_t *ret)
{
	uint64_t u;
	int r = json_get_u64(obj, key, &u);
	if (r < 0)
		return r;
	if (u > UINT32_MAX)
		return -EINVAL;
	*ret = (uint32_t)u;
	return 0;
}

/* ---- generation --------------------------------------------------------------- */

yajl_gen json_gen_new(void)
{
	yajl_gen g = yajl_gen_alloc(NULL);
	/* we sanitize UTF-8 ourselves (json_gen_bytes); yajl would only refuse it */
	if (g)
		yajl_gen_config(g, yajl_gen_validate_utf8, 0);
	return g;
}

char *json_gen_dup(yajl_gen g, size_t *ret_len)
{
	const unsigned char *buf;
	size_t len;
	if (yajl_gen_get_buf(g, &buf, &len) != yajl_gen_status_ok)
		return NULL;
	char *s = malloc(len + 1);
	if (!s)
		return NULL;
	memcpy(s, buf, len);
	s[len] = '\0';
	if (ret_len)
		*ret_len = len;
	return s;
}

/* Length of the valid UTF-8 sequence at p (1..4), or 0 if invalid. */
static size_t utf8_seq(const unsigned char *p, size_t n)
{
	unsigned char c = p[0];
	size_t need;
	uint32_t cp;
	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf) {
		need = 2;
		cp = c & 0x1f;
	} else if (c >= 0xe0 && c <= 0xef) {
		need = 3;
		cp = c & 0x0f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		need = 4;
		cp = c & 0x07;
	} else {
		return 0;
	}
	if (n < need)
		return 0;
	for (size_t i = 1; i < need; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (p[i] & 0x3f);
	}
	if ((need == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
	    (need == 4 && (cp < 0x10000 || cp > 0x10ffff)))
		return 0;
	return need;
}

void json_gen_bytes(yajl_gen g, const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0, bad = 0;

	if (!s) {
		yajl_gen_string(g, (const unsigned char *)"", 0);
		return;
	}
	for (i = 0; i < len;) {
		size_t k = utf8_seq(p + i, len - i);
		if (k == 0) {
			bad++;
			i++;
		} else {
			i += k;
		}
	}
	if (bad == 0) {
		yajl_gen_string(g, p, len);
		return;
	}
	/* each invalid byte becomes U+FFFD (3 bytes) */
	unsigned char *out = malloc(len + bad * 2 + 1);
	if (!out) {
		yajl_gen_string(g, (const unsigned char *)"", 0);
		return;
	}
	size_t o = 0;
	for (i = 0; i < len;) {
		size_t k = utf8_seq(p + i, len - i);
		if (k == 0) {
			out[o++] = 0xef;
			out[o++] = 0xbf;
			out[o++] = 0xbd;
			i++;
		} else {
			memcpy(out + o, p + i, k);
			o += k;
			i += k;
		}
	}
	yajl_gen_string(g, out, o);
	free(out);
}

void json_gen_str(yajl_gen g, const char *s)
{
	json_gen_bytes(g, s ? s : "", s ? strlen(s) : 0);
}
void json_gen_key(yajl_gen g, const char *k)
{
	yajl_gen_string(g, (const unsigned char *)k, strlen(k));
}
void json_gen_kstr(yajl_gen g, const char *k, const char *v)
{
	json_gen_key(g, k);
	json_gen_str(g, v);
}
void json_gen_kbool(yajl_gen g, const char *k, bool v)
{
	json_gen_key(g, k);
	yajl_gen_bool(g, v);
}
void json_gen_kint(yajl_gen g, const char *k, long long v)
{
	json_gen_key(g, k);
	yajl_gen_integer(g, v);
}
void json_gen_knull(yajl_gen g, const char *k)
{
	json_gen_key(g, k);
	yajl_gen_null(g);
}

/* ---- errors -------------------------------------------------------------------- */

static const struct {
	const char *code;
	int status;
} err_table[] = {
	[PERR_INVALID_ARGUMENT] = { "invalid_argument", 400 },
	[PERR_NOT_FOUND] = { "not_found", 404 },
	[PERR_CONFLICT] = { "conflict", 409 },
	[PERR_FORBIDDEN] = { "forbidden", 403 },
	[PERR_POLICY_REFUSED] = { "policy_refused", 403 },
	[PERR_PAYLOAD_TOO_LARGE] = { "payload_too_large", 413 },
	[PERR_ENGINE_UNAVAILABLE] = { "engine_unavailable", 503 },
	[PERR_INTERNAL] = { "internal", 500 },
	[PERR_INSUFFICIENT_STORAGE] = { "insufficient_storage", 507 },
};

const char *json_err_code(enum proto_err e)
{
	return e >= PERR_INVALID_ARGUMENT && e <= PERR_MAX_ ? err_table[e].code : "internal";
}
int json_err_status(enum proto_err e)
{
	return e >= PERR_INVALID_ARGUMENT && e <= PERR_MAX_ ? err_table[e].status : 500;
}

char *json_error_doc(enum proto_err e, const char *message, size_t *ret_len)
{
	yajl_gen g = json_gen_new();
	if (!g)
		return NULL;
	yajl_gen_map_open(g);
	json_gen_key(g, "error");
	yajl_gen_map_open(g);
	json_gen_kstr(g, "code", json_err_code(e));
	json_gen_kstr(g, "message", message ? message : "");
	yajl_gen_map_close(g);
	yajl_gen_map_close(g);
	char *s = json_gen_dup(g, ret_len);
	yajl_gen_free(g);
	return s;
}

/* ---- request parsers ----------------------------------------------------------- */

#define BAD(...)                                                                                   \
	do {                                                                                       \
		snprintf(errmsg, errlen, __VA_ARGS__);                                             \
		return -EINVAL;                                                                    \
	} while (0)

static int dup_str(yajl_val obj, const char *key, size_t max, char **dst, bool *present,
                   char *errmsg, size_t errlen)
{
	const char *s;
	int r = json_get_str(obj, key, &s);
	*present = false;
	if (r == -ENOENT)
		return 0;
	if (r < 0)
		BAD("%s: must be a string", key);
	if (strlen(s) > max)
		BAD("%s: longer than %zu bytes", key, max);
	char *c = strdup(s);
	if (!c)
		BAD("out of memory");
	free(*dst);
	*dst = c;
	*present = true;
	return 0;
}

/* ---- the sandbox object, walked from SBX_FIELDS (proto/sbx_fields.h) --------------- */

struct jfield {
	const char *parent; /* the enclosing object ("ports", "limits"), NULL at the top */
	const char *key;
	enum sbx_jkind jkind;
	enum proto_kind kind;
	uint32_t bit, limit;
	size_t u_off; /* offsetof(struct msg_SBX_UPDATE, cname) */
	size_t r_off; /* offsetof(struct msg_SBX_REP, cname) */
};
#define JF_LEAF_(A, PARENT, sep, cname, smember, kind, json, jkind, column, limit, max, dflt,      \
                 schema, bit)                                                                      \
	{ PARENT, json, jkind, PK_##kind, SBXF_##bit, limit, offsetof(struct msg_SBX_UPDATE, cname), \
	  offsetof(struct msg_SBX_REP, cname) },
#define JF_GROUP_(X, A, PARENT, sep, json, MEMBERS, bit) MEMBERS(X, A, json)
static const struct jfield jfields[] = { SBX_FIELDS(JF_LEAF_, JF_GROUP_, _, NULL) };
#define JFIELDS_N (sizeof(jfields) / sizeof(jfields[0]))

static const char *const backend_names[] = { [BACKEND_DIRECT] = "direct",
	                                     [BACKEND_DOCKER] = "docker" };

static bool same_parent(const char *a, const char *b)
{
	return a == b || (a && b && strcmp(a, b) == 0);
}

static const struct jfield *jf_find(const char *parent, const char *key)
{
	for (size_t i = 0; i < JFIELDS_N; i++)
		if (same_parent(jfields[i].parent, parent) && strcmp(jfields[i].key, key) == 0)
			return &jfields[i];
	return NULL;
}

static bool jf_is_group(const char *key)
{
	for (size_t i = 0; i < JFIELDS_N; i++)
		if (jfields[i].parent && strcmp(jfields[i].parent, key) == 0)
			return true;
	return false;
}

/* Is k one of the comma-separated names in list? */
static bool key_listed(const char *list, const char *k)
{
	size_t kl = strlen(k);
	for (const char *p = list; p && *p;) {
		size_t n = strcspn(p, ",");
		if (n == kl && strncmp(p, k, n) == 0)
			return true;
		p += n + (p[n] == ',');
	}
	return false;
}

/* Every key of the body is a member of the sandbox object that a client may set (or one of
 * the extra arguments, comma-separated, a caller adds): a typo must not pass as
 * "accepted". */
static int check_keys(yajl_val obj, const char *extra, char *errmsg, size_t errlen)
{
	static const char *const readonly[] = SBX_READONLY_JSON_KEYS;
	for (size_t i = 0; i < obj->u.object.len; i++) {
		const char *k = obj->u.object.keys[i];
		yajl_val v = obj->u.object.values[i];
		if (key_listed(extra, k) || jf_find(NULL, k))
			continue;
		for (size_t j = 0; j < sizeof(readonly) / sizeof(readonly[0]); j++)
			if (strcmp(k, readonly[j]) == 0)
				BAD("read-only field: %s", k);
		if (!jf_is_group(k))
			BAD("unknown field: %s", k);
		if (YAJL_IS_NULL(v))
			continue;
		if (!YAJL_IS_OBJECT(v))
			BAD("%s: must be an object", k);
		for (size_t j = 0; j < v->u.object.len; j++)
			if (!jf_find(k, v->u.object.keys[j]))
				BAD("unknown field: %s.%s", k, v->u.object.keys[j]);
	}
	return 0;
}

static int parse_strv(yajl_val v, const char *path, struct proto_strv *out,
                      char *errmsg, size_t errlen)
{
	for (size_t i = 0; i < v->u.array.len; i++) {
		yajl_val e = v->u.array.values[i];
		if (!YAJL_IS_STRING(e))
			BAD("%s[%zu]: must be a string", path, i);
		if (strlen(e->u.string) > PROTO_STR_MAX)
			BAD("%s[%zu]: longer than %u bytes", path, i, PROTO_STR_MAX);
		if (proto_strv_push(out, e->u.string) < 0)
			BAD("out of memory");
	}
	return 0;
}

static int parse_ports(yajl_val v, const char *path, struct proto_u32v *out,
                       char *errmsg, size_t errlen)
{
	for (size_t i = 0; i < v->u.array.len; i++) {
		yajl_val e = v->u.array.values[i];
		if (!YAJL_IS_INTEGER(e) || YAJL_GET_INTEGER(e) < 1 || YAJL_GET_INTEGER(e) > 65535)
			BAD("%s[%zu]: must be a port number 1-65535", path, i);
		if (proto_u32v_push(out, (uint32_t)YAJL_GET_INTEGER(e)) < 0)
			BAD("out of memory");
	}
	return 0;
}

static int parse_env(yajl_val v, const char *path, struct proto_strv *out,
                     char *errmsg, size_t errlen)
{
	char kv[PROTO_STR_MAX + 1];
	for (size_t i = 0; i < v->u.object.len; i++) {
		const char *k = v->u.object.keys[i];
		yajl_val e = v->u.object.values[i];
		if (!YAJL_IS_STRING(e))
			BAD("%s.%s: must be a string", path, k);
		if (!k[0] || strchr(k, '='))
			BAD("%s: invalid variable name \"%s\"", path, k);
		if ((size_t)snprintf(kv, sizeof(kv), "%s=%s", k, e->u.string) >= sizeof(kv))
			BAD("%s.%s: longer than %u bytes", path, k, PROTO_STR_MAX);
		if (proto_strv_push(out, kv) < 0)
			BAD("out of memory");
	}
	return 0;
}

static int parse_mounts(yajl_val v, const char *path, struct proto_mountv *out,
                        char *errmsg, size_t errlen)
{
	for (size_t i = 0; i < v->u.array.len; i++) {
		yajl_val m = v->u.array.values[i];
		const char *src = NULL, *tgt = NULL;
		bool ro = true;
		if (!YAJL_IS_OBJECT(m))
			BAD("%s[%zu]: must be an object", path, i);
		for (size_t j = 0; j < m->u.object.len; j++) {
			const char *k = m->u.object.keys[j];
			if (strcmp(k, "source") && strcmp(k, "target") && strcmp(k, "readOnly"))
				BAD("unknown field: %s[%zu].%s", path, i, k);
		}
		if (json_get_str(m, "source", &src) < 0 || json_get_str(m, "target", &tgt) < 0)
			BAD("%s[%zu]: source and target: required strings", path, i);
		if (json_get_bool(m, "readOnly", &ro) == -EINVAL)
			BAD("%s[%zu].readOnly: must be a boolean", path, i);
		if (strlen(src) > SBX_MOUNT_STR_MAX || strlen(tgt) > SBX_MOUNT_STR_MAX)
			BAD("%s[%zu]: source and target: at most %u bytes", path, i, SBX_MOUNT_STR_MAX);
		if (proto_mountv_push(out, src, tgt, ro) < 0)
			BAD("out of memory");
	}
	return 0;
}

/* Lists and maps: the right container, at most f->limit entries (a named limit per
 * field, tested at and past it), before any entry is looked at. */
static int check_container(const struct jfield *f, yajl_val v, const char *path, char *errmsg,
                           size_t errlen)
{
	bool map = f->jkind == SBXJ_ENV;
	if (map ? !YAJL_IS_OBJECT(v) : !YAJL_IS_ARRAY(v))
		BAD("%s: must be %s", path,
		    map                         ? "an object of strings"
		    : f->jkind == SBXJ_PORTS    ? "an array of port numbers"
		    : f->jkind == SBXJ_MOUNTS   ? "an array of {source, target, readOnly}"
		                                : "an array of strings");
	if ((map ? v->u.object.len : v->u.array.len) > f->limit)
		BAD("%s: more than %u entries", path, f->limit);
	return 0;
}

static int parse_value(const struct jfield *f, yajl_val v, const char *path, void *at,
                       char *errmsg, size_t errlen)
{
	int r;
	if (f->jkind >= SBXJ_PORTS && (r = check_container(f, v, path, errmsg, errlen)) < 0)
		return r;
	switch (f->jkind) {
	case SBXJ_STR: {
		char *c;
		if (!YAJL_IS_STRING(v))
			BAD("%s: must be a string", path);
		if (strlen(v->u.string) > f->limit)
			BAD("%s: longer than %u bytes", path, f->limit);
		if (!(c = strdup(v->u.string)))
			BAD("out of memory");
		free(*(char **)at);
		*(char **)at = c;
		return 0;
	}
	case SBXJ_BACKEND:
		for (uint32_t i = 0; YAJL_IS_STRING(v) && i <= BACKEND_MAX_; i++)
			if (strcmp(v->u.string, backend_names[i]) == 0) {
				*(uint32_t *)at = i;
				return 0;
			}
		BAD("%s: must be \"direct\" or \"docker\"", path);
	case SBXJ_BOOL:
		if (!YAJL_IS_TRUE(v) && !YAJL_IS_FALSE(v))
			BAD("%s: must be a boolean", path);
		*(bool *)at = YAJL_IS_TRUE(v);
		return 0;
	case SBXJ_TRACING:
		if (YAJL_IS_TRUE(v) || YAJL_IS_FALSE(v))
			*(uint32_t *)at = YAJL_IS_TRUE(v) ? SBX_TRACING_LANG : SBX_TRACING_OFF;
		else if (YAJL_IS_STRING(v) && strcmp(v->u.string, "syscalls") == 0)
			*(uint32_t *)at = SBX_TRACING_SYSCALLS;
		else
			BAD("%s: must be false, true or \"syscalls\"", path);
		return 0;
	case SBXJ_UINT:
		if (!YAJL_IS_INTEGER(v) || YAJL_GET_INTEGER(v) < 0 ||
		    (f->kind == PK_U32 && YAJL_GET_INTEGER(v) > UINT32_MAX))
			BAD("%s: must be a non-negative integer", path);
		if (f->kind == PK_U32)
			*(uint32_t *)at = (uint32_t)YAJL_GET_INTEGER(v);
		else
			*(uint64_t *)at = (uint64_t)YAJL_GET_INTEGER(v);
		return 0;
	case SBXJ_PORTS:
		return parse_ports(v, path, at, errmsg, errlen);
	case SBXJ_STRV:
		return parse_strv(v, path, at, errmsg, errlen);
	case SBXJ_ENV:
		return parse_env(v, path, at, errmsg, errlen);
	case SBXJ_MOUNTS:
		return parse_mounts(v, path, at, errmsg, errlen);
	}
	BAD("%s: unsupported field", path);
}

int json_parse_sbx_fields(yajl_val obj, const char *extra, struct msg_SBX_UPDATE *out,
                          char *errmsg, size_t errlen)
{
	int r;

	if (!obj || !YAJL_IS_OBJECT(obj))
		BAD("the body must be a JSON object");
	if ((r = check_keys(obj, extra, errmsg, errlen)) < 0)
		return r;
	for (size_t i = 0; i < JFIELDS_N; i++) {
		const struct jfield *f = &jfields[i];
		yajl_val holder = f->parent ? json_get(obj, f->parent) : obj, v;
		char path[64];
		if (!holder || YAJL_IS_NULL(holder))
			continue;
		/* naming an object sets all of it: ports absent inside are empty, limits 0 */
		if (f->parent)
			out->set_mask |= f->bit;
		if (!(v = json_get(holder, f->key)) || YAJL_IS_NULL(v))
			continue;
		snprintf(path, sizeof(path), "%s%s%s", f->parent ? f->parent : "", f->parent ? "." : "",
		         f->key);
		if ((r = parse_value(f, v, path, (char *)out + f->u_off, errmsg, errlen)) < 0)
			return r;
		out->set_mask |= f->bit;
	}
	return 0;
}

int json_parse_sbx_spec(yajl_val obj, struct msg_SBX_UPDATE *out, char *errmsg, size_t errlen)
{
	return json_parse_sbx_fields(obj, NULL, out, errmsg, errlen);
}

static int parse_code(yajl_val obj, const char *key, bool required, size_t max, char **dst,
                      char *errmsg, size_t errlen)
{
	const char *s;
	int r = json_get_str(obj, key, &s);
	if (r == -ENOENT) {
		if (required)
			BAD("%s: required", key);
		return 0;
	}
	if (r < 0)
		BAD("%s: must be a string", key);
	if (strlen(s) > max) {
		snprintf(errmsg, errlen, "%s: at most %zu bytes", key, max);
		return -E2BIG;
	}
	if (!(*dst = strdup(s)))
		BAD("out of memory");
	return 0;
}

int json_parse_run(yajl_val obj, struct msg_RUN *out, char *errmsg, size_t errlen)
{
	const char *lang;
	int r;

	if (!obj || !YAJL_IS_OBJECT(obj))
		BAD("the body must be a JSON object");
	out->language = LANG_SH;
	if ((r = json_get_str(obj, "language", &lang)) == 0) {
		if (strcmp(lang, "sh") == 0)
			out->language = LANG_SH;
		else if (strcmp(lang, "python") == 0)
			out->language = LANG_PYTHON;
		else if (strcmp(lang, "node") == 0)
			out->language = LANG_NODE;
		else
			BAD("language: must be \"sh\", \"python\" or \"node\"");
	} else if (r == -EINVAL) {
		BAD("language: must be a string");
	}
	if ((r = parse_code(obj, "code", true, PROTO_RUN_CODE_MAX, &out->code, errmsg, errlen)) < 0)
		return r;
	if ((r = parse_code(obj, "stdin", false, PROTO_RUN_STDIN_MAX, &out->stdin_data, errmsg, errlen)) < 0)
		return r;
	if (json_get_u32(obj, "timeoutMs", &out->timeout_ms) == -EINVAL)
		BAD("timeoutMs: must be a non-negative integer");
	if (json_get_bool(obj, "detach", &out->detach) == -EINVAL)
		BAD("detach: must be a boolean");
	return 0;
}

int json_parse_exec(yajl_val obj, struct msg_EXEC *out, char *errmsg, size_t errlen)
{
	bool has;
	int r;

	if (!obj || !YAJL_IS_OBJECT(obj))
		BAD("the body must be a JSON object");
	if ((r = parse_code(obj, "code", true, PROTO_RUN_CODE_MAX, &out->code, errmsg, errlen)) < 0)
		return r;
	if ((r = dup_str(obj, "sandboxId", PROTO_ID_MAX, &out->sandbox_id, &has, errmsg, errlen)) < 0)
		return r;
	if (json_get_u32(obj, "timeoutMs", &out->timeout_ms) == -EINVAL)
		BAD("timeoutMs: must be a non-negative integer");
	return 0;
}

int json_parse_policy(yajl_val obj, struct msg_POLICY_SET *inout, char *errmsg, size_t errlen)
{
	static const struct {
		const char *key;
		size_t off;
	} keys[] = {
		{ "execShell", offsetof(struct msg_POLICY_SET, exec_shell) },
		{ "schedulerScript", offsetof(struct msg_POLICY_SET, scheduler_script) },
		{ "runPython", offsetof(struct msg_POLICY_SET, run_python) },
		{ "runNode", offsetof(struct msg_POLICY_SET, run_node) },
	};
	if (!obj || !YAJL_IS_OBJECT(obj))
		BAD("the body must be a JSON object");
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		bool b;
		int r = json_get_bool(obj, keys[i].key, &b);
		if (r == -EINVAL)
			BAD("%s: must be a boolean", keys[i].key);
		if (r == 0)
			*(bool *)((char *)inout + keys[i].off) = b;
	}
	return 0;
}

/* ---- reply serializers --------------------------------------------------------- */

static void gen_time(yajl_gen g, const char *k, uint64_t t);
void json_gen_ktime(yajl_gen g, const char *k, uint64_t t) { gen_time(g, k, t); }

static void gen_time(yajl_gen g, const char *k, uint64_t t)
{
	char buf[32];
	if (fmt_iso8601(t, buf, sizeof(buf)) < 0)
		json_gen_knull(g, k);
	else
		json_gen_kstr(g, k, buf);
}

static void gen_mounts(yajl_gen g, const struct proto_mountv *mv)
{
	yajl_gen_array_open(g);
	for (uint32_t i = 0; i < mv->n; i++) {
		yajl_gen_map_open(g);
		json_gen_kstr(g, "source", mv->v[i].source);
		json_gen_kstr(g, "target", mv->v[i].target);
		json_gen_kbool(g, "readOnly", mv->v[i].read_only);
		yajl_gen_map_close(g);
	}
	yajl_gen_array_close(g);
}

static void gen_value(yajl_gen g, const struct jfield *f, const void *at)
{
	switch (f->jkind) {
	case SBXJ_STR:
		json_gen_str(g, *(char *const *)at);
		break;
	case SBXJ_BACKEND: {
		uint32_t b = *(const uint32_t *)at;
		json_gen_str(g, backend_names[b <= BACKEND_MAX_ ? b : BACKEND_DIRECT]);
		break;
	}
	case SBXJ_BOOL:
		yajl_gen_bool(g, *(const bool *)at);
		break;
	case SBXJ_TRACING: {
		uint32_t t = *(const uint32_t *)at;
		if (t == SBX_TRACING_SYSCALLS)
			json_gen_str(g, "syscalls");
		else
			yajl_gen_bool(g, t != SBX_TRACING_OFF);
		break;
	}
	case SBXJ_UINT:
		yajl_gen_integer(g, f->kind == PK_U32 ? (long long)*(const uint32_t *)at
		                                      : (long long)*(const uint64_t *)at);
		break;
	case SBXJ_PORTS: {
		const struct proto_u32v *uv = at;
		yajl_gen_array_open(g);
		for (uint32_t i = 0; i < uv->n; i++)
			yajl_gen_integer(g, uv->v[i]);
		yajl_gen_array_close(g);
		break;
	}
	case SBXJ_STRV: {
		const struct proto_strv *sv = at;
		yajl_gen_array_open(g);
		for (uint32_t i = 0; i < sv->n; i++)
			json_gen_str(g, sv->v[i]);
		yajl_gen_array_close(g);
		break;
	}
	case SBXJ_ENV: {
		const struct proto_strv *sv = at;
		yajl_gen_map_open(g);
		for (uint32_t i = 0; i < sv->n; i++) {
			const char *kv = sv->v[i], *eq = strchr(kv, '=');
			if (!eq)
				continue;
			json_gen_bytes(g, kv, (size_t)(eq - kv));
			json_gen_str(g, eq + 1);
		}
		yajl_gen_map_close(g);
		break;
	}
	case SBXJ_MOUNTS:
		gen_mounts(g, at);
		break;
	}
}

void json_gen_sbx(yajl_gen g, const struct msg_SBX_REP *s)
{
	const char *open = NULL;

	yajl_gen_map_open(g);
	json_gen_kstr(g, "id", s->id);
	for (size_t i = 0; i < JFIELDS_N; i++) {
		const struct jfield *f = &jfields[i];
		if (!same_parent(f->parent, open)) { /* members of one object are adjacent */
			if (open)
				yajl_gen_map_close(g);
			if (f->parent) {
				json_gen_key(g, f->parent);
				yajl_gen_map_open(g);
			}
			open = f->parent;
		}
		json_gen_key(g, f->key);
		gen_value(g, f, (const char *)s + f->r_off);
	}
	if (open)
		yajl_gen_map_close(g);
	json_gen_kstr(g, "workdir", s->workdir);
	gen_time(g, "createdAt", s->created_at);
	if (s->note && s->note[0])
		json_gen_kstr(g, "note", s->note);
	yajl_gen_map_close(g);
}

void json_gen_sbx_mounts(yajl_gen g, const struct msg_SBX_REP *s)
{
	yajl_gen_map_open(g);
	json_gen_kstr(g, "sandboxId", s->id);
	json_gen_key(g, "mounts");
	gen_mounts(g, &s->mounts);
	if (s->note && *s->note)
		json_gen_kstr(g, "note", s->note);
	yajl_gen_map_close(g);
}

static const char *const entrance_names[] = { "rest", "mcp", "repl", "scheduler" };
static const char *const lang_names[] = { "sh", "python", "node" };

void json_gen_run(yajl_gen g, const struct msg_RUN_REP *r, const char *out, size_t out_len,
                  const char *err, size_t err_len)
{
	json_gen_run_traced(g, r, out, out_len, err, err_len, NULL, 0);
}

/* A member of an event object, copied only when it has the expected JSON type. */
static void ev_copy(yajl_gen g, yajl_val ev, const char *key, yajl_type want)
{
	yajl_val v = yajl_tree_get(ev, (const char *[]){ key, NULL }, want);
	if (!v)
		return;
	json_gen_key(g, key);
	if (want == yajl_t_string)
		json_gen_str(g, YAJL_GET_STRING(v));
	else if (YAJL_IS_INTEGER(v))
		yajl_gen_integer(g, YAJL_GET_INTEGER(v));
	else
		yajl_gen_integer(g, 0);
}

void json_gen_trace_events(yajl_gen g, const char *lines, size_t len, unsigned *ret_count)
{
	static const char *const kinds[] = { "read", "write", "spawn", "connect", "lookup",
		                             "bind", "unlink", "rename" };
	unsigned count = 0;
	yajl_gen_array_open(g);
	for (size_t off = 0; lines && off < len;) {
		const char *line = lines + off, *nl = memchr(line, '\n', len - off), *sp1, *sp2;
		size_t ll = nl ? (size_t)(nl - line) : len - off;
		char run[PROTO_ID_MAX + 1], why[64];
		yajl_val ev = NULL, kind, argv;
		_cleanup_free_ char *json = NULL;
		off += ll + 1;
		/* "RUN_ID ARRIVAL_MS {...}": what the jail wrote is parsed here, its known
		 * members kept with their types checked, the rest dropped */
		if (!(sp1 = memchr(line, ' ', ll)) || (size_t)(sp1 - line) > PROTO_ID_MAX ||
		    !(sp2 = memchr(sp1 + 1, ' ', ll - (size_t)(sp1 + 1 - line))))
			continue;
		snprintf(run, sizeof(run), "%.*s", (int)(sp1 - line), line);
		if (!proto_id_valid(run) || !(json = strndup(sp2 + 1, ll - (size_t)(sp2 + 1 - line))) ||
		    json_parse(json, strlen(json), &ev, why, sizeof(why)) < 0)
			continue;
		kind = yajl_tree_get(ev, (const char *[]){ "kind", NULL }, yajl_t_string);
		const char *ks = kind ? YAJL_GET_STRING(kind) : NULL;
		bool known = false;
		for (size_t i = 0; ks && i < sizeof(kinds) / sizeof(kinds[0]); i++)
			known |= strcmp(ks, kinds[i]) == 0;
		if (!YAJL_IS_OBJECT(ev) || !known) {
			yajl_tree_free(ev);
			continue;
		}
		yajl_gen_map_open(g);
		json_gen_kstr(g, "run", run);
		json_gen_kstr(g, "kind", ks);
		json_gen_kint(g, "at", (long long)strtoull(sp1 + 1, NULL, 10)); /* arrival, ms */
		ev_copy(g, ev, "t", yajl_t_number);
		ev_copy(g, ev, "pid", yajl_t_number);
		ev_copy(g, ev, "path", yajl_t_string);
		ev_copy(g, ev, "host", yajl_t_string);
		ev_copy(g, ev, "port", yajl_t_number);
		ev_copy(g, ev, "to", yajl_t_string);
		ev_copy(g, ev, "source", yajl_t_string);
		if ((argv = yajl_tree_get(ev, (const char *[]){ "argv", NULL }, yajl_t_array))) {
			json_gen_key(g, "argv");
			yajl_gen_array_open(g);
			for (size_t i = 0; i < argv->u.array.len; i++)
				if (YAJL_IS_STRING(argv->u.array.values[i]))
					json_gen_str(g, YAJL_GET_STRING(argv->u.array.values[i]));
			yajl_gen_array_close(g);
		}
		yajl_gen_map_close(g);
		yajl_tree_free(ev);
		count++;
	}
	yajl_gen_array_close(g);
	if (ret_count)
		*ret_count = count;
}

void json_gen_run_traced(yajl_gen g, const struct msg_RUN_REP *r, const char *out, size_t out_len,
                         const char *err, size_t err_len, const char *trace, size_t trace_len)
{
	yajl_gen_map_open(g);
	json_gen_kstr(g, "id", r->id);
	json_gen_kstr(g, "sandboxId", r->sandbox_id);
	json_gen_kstr(g, "language", r->language <= LANG_MAX_ ? lang_names[r->language] : "sh");
	json_gen_kstr(g, "status", r->running ? "running" : "done");
	if (r->has_exit_code)
		json_gen_kint(g, "exitCode", r->exit_code);
	else
		json_gen_knull(g, "exitCode");
	if (r->signal)
		json_gen_kint(g, "signal", r->signal);
	else
		json_gen_knull(g, "signal");
	json_gen_kbool(g, "timedOut", r->timed_out);
	json_gen_key(g, "stdout");
	json_gen_bytes(g, out ? out : "", out ? out_len : 0);
	json_gen_key(g, "stderr");
	json_gen_bytes(g, err ? err : "", err ? err_len : 0);
	json_gen_kbool(g, "stdoutTruncated", r->stdout_truncated);
	json_gen_kbool(g, "stderrTruncated", r->stderr_truncated);
	json_gen_kint(g, "durationMs", (long long)r->duration_ms);
	json_gen_kstr(g, "isolation", r->isolation);
	json_gen_kstr(g, "entrance",
	              r->entrance <= ENTRANCE_MAX_ ? entrance_names[r->entrance] : "rest");
	gen_time(g, "createdAt", r->created_at);
	json_gen_key(g, "limits");
	yajl_gen_map_open(g);
	for (uint32_t i = 0; i < r->limits.n; i++) {
		const char *kv = r->limits.v[i], *eq = strchr(kv, '=');
		if (!eq)
			continue;
		json_gen_bytes(g, kv, (size_t)(eq - kv));
		json_gen_str(g, eq + 1);
	}
	yajl_gen_map_close(g);
	if (r->note && r->note[0])
		json_gen_kstr(g, "note", r->note);
	/* "KIND PORT AT_MS HOST" from the launcher (proto_msgs.h) as objects */
	json_gen_key(g, "networkRefused");
	yajl_gen_array_open(g);
	for (uint32_t i = 0; i < r->refused.n; i++) {
		char kind[16];
		unsigned port;
		unsigned long long at;
		int off = 0;
		if (sscanf(r->refused.v[i], "%15s %u %llu %n", kind, &port, &at, &off) < 3 || !off ||
		    port > 65535)
			continue;
		yajl_gen_map_open(g);
		json_gen_kstr(g, "kind", kind);
		json_gen_kstr(g, "host", r->refused.v[i] + off);
		json_gen_kint(g, "port", port);
		gen_time(g, "at", at);
		yajl_gen_map_close(g);
	}
	yajl_gen_array_close(g);
	if (trace) {
		json_gen_key(g, "trace");
		json_gen_trace_events(g, trace, trace_len, NULL);
	}
	yajl_gen_map_close(g);
}

void json_gen_caps(yajl_gen g, const struct msg_CAPS_REP *c)
{
	yajl_gen_map_open(g);
	json_gen_key(g, "direct");
	yajl_gen_map_open(g);
	json_gen_kstr(g, "backend", c->direct_backend);
	json_gen_kbool(g, "ok", c->direct_ok);
	json_gen_kstr(g, "reason", c->direct_reason);
	json_gen_kstr(g, "bwrapVersion", c->bwrap_version);
	gen_time(g, "probedAt", c->direct_probed_at);
	yajl_gen_map_close(g);
	json_gen_kint(g, "landlockAbi", c->landlock_abi);
	/* the network fences this machine can build (DESIGN.md §9), and what it cannot */
	json_gen_key(g, "network");
	yajl_gen_map_open(g);
	json_gen_key(g, "fences");
	yajl_gen_array_open(g);
	for (uint32_t i = 0; i < c->net_fences.n; i++)
		json_gen_str(g, c->net_fences.v[i]);
	yajl_gen_array_close(g);
	json_gen_kstr(g, "note", c->net_note ? c->net_note : "");
	yajl_gen_map_close(g);
	json_gen_kbool(g, "seccomp", c->seccomp);
	json_gen_kbool(g, "seccompNotify", c->seccomp_notify);
	json_gen_kbool(g, "pasta", c->pasta);
	json_gen_kstr(g, "cgroup", c->cgroup);
	json_gen_key(g, "docker");
	yajl_gen_map_open(g);
	json_gen_kbool(g, "ok", c->docker_ok);
	json_gen_kstr(g, "reason", c->docker_reason);
	gen_time(g, "probedAt", c->docker_probed_at);
	yajl_gen_map_close(g);
	/* what a run would get now: the backend, the named degraded state (no bwrap at all),
	 * or nothing (bwrap present but failing, and no docker either) */
	json_gen_kstr(g, "isolation",
	              c->direct_ok ? c->direct_backend
	              : strcmp(c->direct_backend, "degraded") == 0 ? "degraded"
	              : c->docker_ok ? "docker"
	                             : "unavailable");
	yajl_gen_map_close(g);
}

void json_gen_policy(yajl_gen g, const struct msg_POLICY_REP *p)
{
	yajl_gen_map_open(g);
	json_gen_kbool(g, "execShell", p->exec_shell);
	json_gen_kbool(g, "schedulerScript", p->scheduler_script);
	json_gen_kbool(g, "runPython", p->run_python);
	json_gen_kbool(g, "runNode", p->run_node);
	yajl_gen_map_close(g);
}

void json_gen_proc(yajl_gen g, const struct msg_PROC_REP *p)
{
	static const char *const seccomp_modes[] = { "off", "strict", "filter" };
	yajl_gen_map_open(g);
	json_gen_kint(g, "pid", p->pid);
	json_gen_kint(g, "ppid", p->ppid);
	json_gen_kint(g, "pgid", p->pgid);
	json_gen_kstr(g, "runId", p->run_id);
	json_gen_key(g, "cpu"); /* percent of one CPU over the process's life, like ps */
	yajl_gen_double(g, p->cpu_permille / 10.0);
	json_gen_key(g, "mem"); /* percent of the machine's memory */
	yajl_gen_double(g, p->mem_permille / 10.0);
	json_gen_kint(g, "rssKb", (long long)p->rss_kb);
	json_gen_kint(g, "elapsedMs", (long long)p->elapsed_ms);
	json_gen_kstr(g, "comm", p->comm);
	json_gen_kstr(g, "command", p->cmdline);
	/* what the kernel says the process actually got */
	json_gen_key(g, "confinement");
	yajl_gen_map_open(g);
	json_gen_kint(g, "uid", p->uid);
	json_gen_kint(g, "gid", p->gid);
	json_gen_kbool(g, "noNewPrivs", p->no_new_privs);
	json_gen_kstr(g, "seccomp", p->seccomp <= 2 ? seccomp_modes[p->seccomp] : "unknown");
	json_gen_kstr(g, "capEff", p->cap_eff);
	json_gen_key(g, "namespaces");
	yajl_gen_array_open(g);
	for (uint32_t i = 0; i < p->namespaces.n; i++)
		json_gen_str(g, p->namespaces.v[i]);
	yajl_gen_array_close(g);
	json_gen_kstr(g, "cgroup", p->cgroup);
	yajl_gen_map_close(g);
	yajl_gen_map_close(g);
}

void json_gen_kill(yajl_gen g, const struct msg_KILL_REP *k, const char *signame)
{
	yajl_gen_map_open(g);
	json_gen_kstr(g, "signal", signame);
	json_gen_key(g, "signaled");
	yajl_gen_array_open(g);
	for (uint32_t i = 0; i < k->pids.n; i++)
		yajl_gen_integer(g, k->pids.v[i]);
	yajl_gen_array_close(g);
	json_gen_key(g, "runs");
	yajl_gen_array_open(g);
	for (uint32_t i = 0; i < k->runs.n; i++)
		json_gen_str(g, k->runs.v[i]);
	yajl_gen_array_close(g);
	yajl_gen_map_close(g);
}

/* The signals a kill may send, by name (with or without "SIG") or number. */
static const struct {
	const char *name;
	int num;
} kill_signals[] = {
	{ "HUP", SIGHUP },   { "INT", SIGINT },   { "QUIT", SIGQUIT }, { "KILL", SIGKILL },
	{ "USR1", SIGUSR1 }, { "USR2", SIGUSR2 }, { "TERM", SIGTERM }, { "CONT", SIGCONT },
	{ "STOP", SIGSTOP }, { "TSTP", SIGTSTP },
};

const char *json_signal_name(int sig)
{
	for (size_t i = 0; i < sizeof(kill_signals) / sizeof(kill_signals[0]); i++)
		if (kill_signals[i].num == sig)
			return kill_signals[i].name;
	return "?";
}

int json_parse_kill(yajl_val obj, struct msg_KILL *out, char *errmsg, size_t errlen)
{
	yajl_val v;
	unsigned given = 0;
	const char *run = NULL;
	int r;

	if (obj && !YAJL_IS_OBJECT(obj))
		BAD("the body must be a JSON object");
	if (!obj)
		goto all;
	for (size_t i = 0; i < obj->u.object.len; i++) {
		const char *k = obj->u.object.keys[i];
		if (strcmp(k, "pid") && strcmp(k, "pgid") && strcmp(k, "run") && strcmp(k, "signal") &&
		    strcmp(k, "sandboxId"))
			BAD("unknown field (allowed: pid, pgid, run, signal)");
	}
	if ((r = json_get_u32(obj, "pid", &out->pid)) == -EINVAL || (r == 0 && out->pid == 0))
		BAD("pid: must be a positive integer");
	given += r == 0;
	if ((r = json_get_u32(obj, "pgid", &out->pgid)) == -EINVAL || (r == 0 && out->pgid == 0))
		BAD("pgid: must be a positive integer");
	given += r == 0;
	if ((r = json_get_str(obj, "run", &run)) == -EINVAL)
		BAD("run: must be a run id");
	if (r == 0) {
		if (!proto_id_valid(run))
			BAD("run: not a run id");
		if (!(out->run_id = strdup(run)))
			return -ENOMEM;
		given++;
	}
	if (given > 1)
		BAD("name one of pid, pgid or run (or none: every process of the sandbox)");
	if ((v = yajl_tree_get(obj, (const char *[]){ "signal", NULL }, yajl_t_any))) {
		if (!out->pid && !out->pgid)
			BAD("signal: only with pid or pgid (a run ends by SIGTERM, then SIGKILL)");
		if (YAJL_IS_INTEGER(v)) {
			long long n = YAJL_GET_INTEGER(v);
			for (size_t i = 0; i < sizeof(kill_signals) / sizeof(kill_signals[0]); i++)
				if (kill_signals[i].num == n)
					out->signal = (uint32_t)n;
		} else if (YAJL_IS_STRING(v)) {
			const char *s = YAJL_GET_STRING(v);
			if (strncmp(s, "SIG", 3) == 0)
				s += 3;
			for (size_t i = 0; i < sizeof(kill_signals) / sizeof(kill_signals[0]); i++)
				if (strcmp(kill_signals[i].name, s) == 0)
					out->signal = (uint32_t)kill_signals[i].num;
		}
		if (!out->signal)
			BAD("signal: one of HUP INT QUIT KILL USR1 USR2 TERM CONT STOP TSTP");
	}
	if (given)
		return 0;
all:
	out->all = true;
	return 0;
}

bool json_utf8_valid(const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	for (size_t i = 0; i < len;) {
		size_t k = utf8_seq(p + i, len - i);
		if (k == 0 || p[i] == 0)
			return false;
		i += k;
	}
	return true;
}

static const char b64_chars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

char *json_base64_encode(const char *s, size_t len, size_t *ret_len)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n = (len + 2) / 3 * 4, o = 0;
	char *out = malloc(n + 1);
	if (!out)
		return NULL;
	for (size_t i = 0; i < len; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < len ? (uint32_t)p[i + 1] << 8 : 0) |
		             (i + 2 < len ? p[i + 2] : 0);
		out[o++] = b64_chars[(v >> 18) & 63];
		out[o++] = b64_chars[(v >> 12) & 63];
		out[o++] = i + 1 < len ? b64_chars[(v >> 6) & 63] : '=';
		out[o++] = i + 2 < len ? b64_chars[v & 63] : '=';
	}
	out[o] = '\0';
	*ret_len = o;
	return out;
}

int json_base64_decode(const char *s, size_t len, char **ret, size_t *ret_len)
{
	unsigned char *out;
	size_t o = 0;
	uint32_t acc = 0;
	int bits = 0, pad = 0;
	if (len % 4)
		return -EINVAL;
	if (!(out = malloc(len / 4 * 3 + 1)))
		return -ENOMEM;
	for (size_t i = 0; i < len; i++) {
		const char *c = s[i] ? strchr(b64_chars, s[i]) : NULL;
		if (s[i] == '=' && (i == len - 1 || (i == len - 2 && s[len - 1] == '='))) {
			pad++; /* only the last one or two */
			continue;
		}
		if (!c || pad) {
			free(out);
			return -EINVAL;
		}
		acc = acc << 6 | (uint32_t)(c - b64_chars);
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[o++] = (unsigned char)(acc >> bits);
		}
	}
	out[o] = '\0';
	*ret = (char *)out;
	*ret_len = o;
	return 0;
}

/* ---- apps ----------------------------------------------------------------------------- */

static const char *const app_state_names[] = { "STOPPED", "STARTING", "RUNNING", "BACKOFF",
	                                       "STOPPING", "EXITED", "FATAL" };

const char *json_app_state_name(uint32_t s)
{
	return s <= APP_STATE_MAX_ ? app_state_names[s] : "UNKNOWN";
}

#define APP_JSON_KEYS "command,port,autostart,autorestart,startsecs,startretries,exitcodes,stopsignal,stopwaitsecs"

static int parse_signal(yajl_val v, uint32_t *ret)
{
	*ret = 0;
	if (YAJL_IS_INTEGER(v)) {
		long long n = YAJL_GET_INTEGER(v);
		for (size_t i = 0; i < sizeof(kill_signals) / sizeof(kill_signals[0]); i++)
			if (kill_signals[i].num == n)
				*ret = (uint32_t)n;
	} else if (YAJL_IS_STRING(v)) {
		const char *s = YAJL_GET_STRING(v);
		if (strncmp(s, "SIG", 3) == 0)
			s += 3;
		for (size_t i = 0; i < sizeof(kill_signals) / sizeof(kill_signals[0]); i++)
			if (strcmp(kill_signals[i].name, s) == 0)
				*ret = (uint32_t)kill_signals[i].num;
	}
	return *ret ? 0 : -EINVAL;
}

static int app_u32(yajl_val obj, const char *key, uint32_t bit, uint32_t *dst, uint32_t *mask,
                   char *errmsg, size_t errlen)
{
	int r = json_get_u32(obj, key, dst);
	if (r == -EINVAL)
		BAD("%s: must be a non-negative integer", key);
	if (r == 0)
		*mask |= bit;
	return 0;
}

int json_parse_app(yajl_val obj, bool create, const char *extra, struct msg_APP_PUT *out,
                   char *errmsg, size_t errlen)
{
	struct msg_SBX_UPDATE u = { 0 };
	char keys[512];
	const char *cmd = NULL;
	yajl_val v;
	int r;

	if (!obj || !YAJL_IS_OBJECT(obj))
		BAD("the body must be a JSON object");
	for (size_t i = 0; i < obj->u.object.len; i++) {
		const char *k = obj->u.object.keys[i];
		if (strcmp(k, "dir") == 0 || strcmp(k, "sandboxId") == 0 || strcmp(k, "state") == 0)
			BAD("%s: read-only (an app lives in its own sandbox's workdir)", k);
	}
	snprintf(keys, sizeof(keys), "%s%s%s", APP_JSON_KEYS, extra ? "," : "", extra ? extra : "");
	if ((r = json_parse_sbx_fields(obj, keys, &u, errmsg, errlen)) < 0)
		goto out;
	out->create = create;
	if (create) {
		if (!(u.set_mask & SBXF_NAME) || !proto_app_name_valid(u.name)) {
			snprintf(errmsg, errlen, "name: required, 1..%u of [a-z0-9_.-] starting with a "
			         "letter or digit", PROTO_APP_NAME_MAX);
			r = -EINVAL;
			goto out;
		}
		out->app = strdup(u.name);
		u.set_mask &= ~(uint32_t)SBXF_NAME;
	} else if (u.set_mask & SBXF_NAME) {
		snprintf(errmsg, errlen, "name: an app cannot be renamed");
		r = -EINVAL;
		goto out;
	}
	out->set_mask = u.set_mask;
#define COPY_SPEC(S, KIND, NAME, LIMIT) out->NAME = u.NAME; memset(&u.NAME, 0, sizeof(u.NAME));
	SBX_SPEC_FIELDS(COPY_SPEC, x)
#undef COPY_SPEC
	if ((r = json_get_str(obj, "command", &cmd)) == -EINVAL) {
		snprintf(errmsg, errlen, "command: must be a string");
		goto out;
	}
	if (r == 0) {
		if (!*cmd || strlen(cmd) > PROTO_APP_CMD_MAX) {
			snprintf(errmsg, errlen, "command: 1..%u bytes", PROTO_APP_CMD_MAX);
			r = strlen(cmd) > PROTO_APP_CMD_MAX ? -E2BIG : -EINVAL;
			goto out;
		}
		if (!(out->command = strdup(cmd))) {
			r = -ENOMEM;
			goto out;
		}
		out->app_mask |= APPF_COMMAND;
	} else if (create) {
		snprintf(errmsg, errlen, "command: required");
		r = -EINVAL;
		goto out;
	}
	r = 0;
	if ((r = app_u32(obj, "port", APPF_PORT, &out->port, &out->app_mask, errmsg, errlen)) < 0 ||
	    (r = app_u32(obj, "startsecs", APPF_STARTSECS, &out->startsecs, &out->app_mask, errmsg, errlen)) < 0 ||
	    (r = app_u32(obj, "startretries", APPF_STARTRETRIES, &out->startretries, &out->app_mask, errmsg, errlen)) < 0 ||
	    (r = app_u32(obj, "stopwaitsecs", APPF_STOPWAITSECS, &out->stopwaitsecs, &out->app_mask, errmsg, errlen)) < 0)
		goto out;
	if ((out->app_mask & APPF_PORT) && (out->port < 1 || out->port > 65535)) {
		snprintf(errmsg, errlen, "port: 1..65535");
		r = -EINVAL;
		goto out;
	}
	if ((r = json_get_bool(obj, "autostart", &out->autostart)) == -EINVAL) {
		snprintf(errmsg, errlen, "autostart: must be a boolean");
		goto out;
	}
	if (r == 0)
		out->app_mask |= APPF_AUTOSTART;
	r = 0;
	if ((v = yajl_tree_get(obj, (const char *[]){ "autorestart", NULL }, yajl_t_any))) {
		if (YAJL_IS_TRUE(v))
			out->autorestart = APP_RESTART_ALWAYS;
		else if (YAJL_IS_FALSE(v))
			out->autorestart = APP_RESTART_NEVER;
		else if (YAJL_IS_STRING(v) && v->u.string && strcmp(v->u.string, "unexpected") == 0)
			out->autorestart = APP_RESTART_UNEXPECTED;
		else {
			snprintf(errmsg, errlen, "autorestart: false, true or \"unexpected\"");
			r = -EINVAL;
			goto out;
		}
		out->app_mask |= APPF_AUTORESTART;
	}
	if ((v = yajl_tree_get(obj, (const char *[]){ "stopsignal", NULL }, yajl_t_any))) {
		if (parse_signal(v, &out->stopsignal) < 0) {
			snprintf(errmsg, errlen, "stopsignal: one of HUP INT QUIT KILL USR1 USR2 TERM");
			r = -EINVAL;
			goto out;
		}
		out->app_mask |= APPF_STOPSIGNAL;
	}
	if ((v = yajl_tree_get(obj, (const char *[]){ "exitcodes", NULL }, yajl_t_any))) {
		if (!YAJL_IS_ARRAY(v) || v->u.array.len > PROTO_LIST_MAX) {
			snprintf(errmsg, errlen, "exitcodes: an array of 0..255, at most %u", PROTO_LIST_MAX);
			r = -EINVAL;
			goto out;
		}
		for (size_t i = 0; i < v->u.array.len; i++) {
			yajl_val e = v->u.array.values[i];
			if (!YAJL_IS_INTEGER(e) || YAJL_GET_INTEGER(e) < 0 || YAJL_GET_INTEGER(e) > 255) {
				snprintf(errmsg, errlen, "exitcodes: each 0..255");
				r = -EINVAL;
				goto out;
			}
			if ((r = proto_u32v_push(&out->exitcodes, (uint32_t)YAJL_GET_INTEGER(e))) < 0)
				goto out;
		}
		out->app_mask |= APPF_EXITCODES;
	}
	r = 0;
	if (!out->app)
		out->app = strdup("");
	if (!out->command)
		out->command = strdup("");
	if (!out->app || !out->command)
		r = -ENOMEM;
out:
	proto_msg_clear(MSG_SBX_UPDATE, &u);
	return r;
}

/* H:MM:SS, or "N day(s), H:MM:SS": Python's str(timedelta), which supervisorctl prints */
void json_uptime(uint64_t secs, char *buf, size_t sz)
{
	uint64_t days = secs / 86400, rest = secs % 86400;
	if (days)
		snprintf(buf, sz, "%llu day%s, %llu:%02llu:%02llu", (unsigned long long)days,
		         days == 1 ? "" : "s", (unsigned long long)(rest / 3600),
		         (unsigned long long)(rest % 3600 / 60), (unsigned long long)(rest % 60));
	else
		snprintf(buf, sz, "%llu:%02llu:%02llu", (unsigned long long)(rest / 3600),
		         (unsigned long long)(rest % 3600 / 60), (unsigned long long)(rest % 60));
}

/* k: the value, or null when there is none */
static void gen_kint_or_null(yajl_gen g, const char *k, bool present, long long v)
{
	if (present)
		json_gen_kint(g, k, v);
	else
		json_gen_knull(g, k);
}

static void gen_kstr_or_null(yajl_gen g, const char *k, const char *v)
{
	if (v && *v)
		json_gen_kstr(g, k, v);
	else
		json_gen_knull(g, k);
}

static void gen_ktime_or_null(yajl_gen g, const char *k, uint64_t t)
{
	if (t)
		gen_time(g, k, t);
	else
		json_gen_knull(g, k);
}

static void gen_kints(yajl_gen g, const char *k, const struct proto_u32v *v)
{
	json_gen_key(g, k);
	yajl_gen_array_open(g);
	for (uint32_t i = 0; i < v->n; i++)
		yajl_gen_integer(g, v->v[i]);
	yajl_gen_array_close(g);
}

void json_gen_app(yajl_gen g, const struct msg_APP_REP *a)
{
	char up[64];
	yajl_gen_map_open(g);
	json_gen_kstr(g, "name", a->app);
	json_gen_kstr(g, "state", json_app_state_name(a->state));
	json_gen_kstr(g, "sandboxId", a->sandbox_id);
	json_gen_kstr(g, "command", a->command);
	gen_kint_or_null(g, "port", a->port != 0, a->port);
	json_gen_kstr(g, "dir", a->dir);
	json_gen_kbool(g, "autostart", a->autostart);
	json_gen_key(g, "autorestart");
	if (a->autorestart == APP_RESTART_UNEXPECTED)
		json_gen_str(g, "unexpected");
	else
		yajl_gen_bool(g, a->autorestart == APP_RESTART_ALWAYS);
	json_gen_kint(g, "startsecs", a->startsecs);
	json_gen_kint(g, "startretries", a->startretries);
	gen_kints(g, "exitcodes", &a->exitcodes);
	json_gen_kstr(g, "stopsignal", json_signal_name((int)a->stopsignal));
	json_gen_kint(g, "stopwaitsecs", a->stopwaitsecs);
	gen_time(g, "createdAt", a->created_at);
	gen_kint_or_null(g, "pid", a->pid != 0, a->pid);
	/* what supervisorctl needs for its description, as Unix seconds */
	json_gen_kint(g, "start", (long long)a->start_s);
	json_gen_kint(g, "stop", (long long)a->stop_s);
	json_gen_kint(g, "now", (long long)a->now_s);
	if (a->state == APP_RUNNING && a->start_s) {
		json_uptime(a->now_s > a->start_s ? a->now_s - a->start_s : 0, up, sizeof(up));
		json_gen_kstr(g, "uptime", up);
	}
	gen_kint_or_null(g, "exitStatus", a->has_exit, a->exit_status);
	json_gen_kstr(g, "spawnerr", a->spawnerr);
	json_gen_kint(g, "starts", a->starts);
	if (a->checked) {
		json_gen_kbool(g, "confined", a->confined);
		if (!a->confined)
			json_gen_kstr(g, "unconfinedWhy", a->unconfined_why);
		json_gen_key(g, "process");
		yajl_gen_map_open(g);
		json_gen_kint(g, "pid", a->pid);
		json_gen_kint(g, "uid", a->uid);
		json_gen_kint(g, "gid", a->gid);
		json_gen_kbool(g, "noNewPrivs", a->no_new_privs);
		json_gen_kstr(g, "seccomp", a->seccomp == 2 ? "filter" : a->seccomp == 1 ? "strict" : "off");
		json_gen_kint(g, "seccompFilters", a->seccomp_filters);
		json_gen_kstr(g, "capEff", a->cap_eff);
		json_gen_key(g, "namespaces");
		yajl_gen_array_open(g);
		for (uint32_t i = 0; i < a->namespaces.n; i++)
			json_gen_str(g, a->namespaces.v[i]);
		yajl_gen_array_close(g);
		json_gen_kstr(g, "cgroup", a->cgroup);
		gen_kints(g, "listening", &a->listening);
		yajl_gen_map_close(g);
	} else {
		json_gen_knull(g, "confined");
	}
	yajl_gen_map_close(g);
}

/* ---- schedules ------------------------------------------------------------------------- */

int json_parse_schedule(yajl_val obj, struct msg_SCHED_PUT *out, char *errmsg, size_t errlen)
{
	const char *sid = NULL, *lang = "sh", *cron = NULL;
	yajl_val every;
	int r;
	if (!obj || !YAJL_IS_OBJECT(obj))
		BAD("the body must be a JSON object");
	for (size_t i = 0; i < obj->u.object.len; i++) {
		const char *k = obj->u.object.keys[i];
		if (strcmp(k, "sandboxId") && strcmp(k, "language") && strcmp(k, "code") &&
		    strcmp(k, "every") && strcmp(k, "cron"))
			BAD("unknown field: %s (sandboxId, language, code, every, cron)", k);
	}
	if (json_get_str(obj, "sandboxId", &sid) < 0 || !proto_id_valid(sid))
		BAD("sandboxId: a sandbox id, required");
	if (json_get_str(obj, "language", &lang) == -EINVAL)
		BAD("language: must be a string");
	for (out->language = 0; out->language <= LANG_MAX_ && strcmp(lang_names[out->language], lang);)
		out->language++;
	if (out->language > LANG_MAX_)
		BAD("language: must be \"sh\", \"python\" or \"node\"");
	if ((r = parse_code(obj, "code", true, PROTO_CODE_MAX, &out->code, errmsg, errlen)) < 0)
		return r;
	if (!*out->code)
		BAD("code: required");
	if ((every = yajl_tree_get(obj, (const char *[]){ "every", NULL }, yajl_t_any)) && !YAJL_IS_NULL(every)) {
		if (!YAJL_IS_INTEGER(every) || YAJL_GET_INTEGER(every) < PROTO_SCHED_EVERY_MIN ||
		    YAJL_GET_INTEGER(every) > PROTO_SCHED_EVERY_MAX)
			BAD("every: seconds, %u..%u", PROTO_SCHED_EVERY_MIN, PROTO_SCHED_EVERY_MAX);
		out->every_s = (uint32_t)YAJL_GET_INTEGER(every);
	}
	if ((r = json_get_str(obj, "cron", &cron)) == -EINVAL)
		BAD("cron: a cron(5) expression");
	if (cron && strlen(cron) > PROTO_CRON_MAX)
		BAD("cron: at most %u bytes", PROTO_CRON_MAX);
	if ((out->every_s != 0) == (cron != NULL))
		BAD("give exactly one of every (seconds) and cron");
	if (!(out->sandbox_id = strdup(sid)) || !(out->cron = strdup(cron ? cron : "")))
		BAD("out of memory");
	return 0;
}

void json_gen_schedule(yajl_gen g, const struct msg_SCHED_REP *s)
{
	yajl_gen_map_open(g);
	json_gen_kstr(g, "id", s->id);
	json_gen_kstr(g, "sandboxId", s->sandbox_id);
	json_gen_kstr(g, "language", s->language <= LANG_MAX_ ? lang_names[s->language] : "sh");
	json_gen_kstr(g, "code", s->code);
	gen_kint_or_null(g, "every", s->every_s != 0, s->every_s);
	gen_kstr_or_null(g, "cron", s->cron);
	gen_time(g, "createdAt", s->created_at);
	gen_ktime_or_null(g, "nextAt", s->next_at);
	gen_ktime_or_null(g, "lastAt", s->last_at);
	gen_kstr_or_null(g, "lastRunId", s->last_run_id);
	json_gen_kstr(g, "lastStatus", s->last_status);
	json_gen_kint(g, "runs", s->runs);
	json_gen_kint(g, "skipped", s->skipped);
	yajl_gen_map_close(g);
}
