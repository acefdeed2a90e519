/* The HTTP front door: evhttp with its limits set before binding, the checks every
 * request passes (Host, Origin, Content-Type, bearer token), and the REST routes. */
#include "http.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "api.h"
#include "json.h"
#include "log.h"
#include "mcp.h"
#include "ops.h"

#define HTTP_TIMEOUT_S       3700 /* longer than the longest run deadline (one hour) */
#define HTTP_HEADERS_MAX     8192
#define HTTP_PATH_MAX        1024
#define HTTP_PENDING_MAX     1024 /* requests waiting for the launcher */

/* A request waiting for its answer. If the connection goes away first, req is cleared
 * and the answer is dropped. */
struct http_wait {
	struct evhttp_request *req;
	struct evhttp_connection *conn;
};
static unsigned http_waiting;

void http_reply(struct evhttp_request *req, int status, const char *body, size_t len)
{
	struct evbuffer *b = evbuffer_new();
	struct evkeyvalq *h = evhttp_request_get_output_headers(req);
	evhttp_add_header(h, "Content-Type", "application/json");
	evhttp_add_header(h, "Cache-Control", "no-store");
	evhttp_add_header(h, "X-Content-Type-Options", "nosniff");
	if (b && body)
		evbuffer_add(b, body, len);
	evhttp_send_reply(req, status, NULL, b);
	if (b)
		evbuffer_free(b);
}

void http_error(struct evhttp_request *req, enum proto_err e, const char *msg)
{
	size_t len = 0;
	char *doc = json_error_doc(e, msg, &len);
	http_reply(req, json_err_status(e), doc, len);
	free(doc);
}

static void http_error_status(struct evhttp_request *req, int status, const char *code,
                              const char *msg)
{
	yajl_gen g = json_gen_new();
	size_t len = 0;
	char *doc;
	yajl_gen_map_open(g);
	json_gen_key(g, "error");
	yajl_gen_map_open(g);
	json_gen_kstr(g, "code", code);
	json_gen_kstr(g, "message", msg);
	yajl_gen_map_close(g);
	yajl_gen_map_close(g);
	doc = json_gen_dup(g, &len);
	yajl_gen_free(g);
	http_reply(req, status, doc, len);
	free(doc);
}

static void wait_conn_closed(struct evhttp_connection *conn, void *arg)
{
	struct http_wait *w = arg;
	w->req = NULL;
}

static void wait_done(void *arg, int status, char *body, size_t len)
{
	struct http_wait *w = arg;
	http_waiting--;
	if (w->req) {
		evhttp_connection_set_closecb(w->conn, NULL, NULL);
		if (body)
			http_reply(w->req, status, body, len);
		else
			http_error(w->req, PERR_INTERNAL, "out of memory");
	}
	free(body);
	free(w);
}

/* ---- the checks ------------------------------------------------------------------ */

/* "127.0.0.1:P", "localhost:P", "[::1]:P" with our own port. */
static bool host_ok(const char *host)
{
	static const char *const names[] = { "127.0.0.1", "localhost", "[::1]" };
	/* --allow-remote (token mandatory): the configured host too; a wildcard, any name */
	extern const char *api_remote_host;
	const char *colon = host ? strrchr(host, ':') : NULL;
	if (!host)
		return false;
	if (api_remote_host && colon && strcmp(colon + 1, API->host_port) == 0 &&
	    (strcmp(api_remote_host, "0.0.0.0") == 0 || strcmp(api_remote_host, "::") == 0 ||
	     (strlen(api_remote_host) == (size_t)(colon - host) &&
	      strncasecmp(host, api_remote_host, (size_t)(colon - host)) == 0)))
		return true;
	for (size_t i = 0; i < 3; i++) {
		size_t n = strlen(names[i]);
		if (strncasecmp(host, names[i], n) == 0 && host[n] == ':' &&
		    strcmp(host + n + 1, API->host_port) == 0)
			return true;
	}
	return false;
}

static bool origin_ok(const char *origin)
{
	if (!origin)
		return true; /* same-origin and non-browser clients send none */
	if (strncmp(origin, "http://", 7) != 0)
		return false;
	return host_ok(origin + 7);
}

/* Compare without an early exit, so the time taken says nothing about the token. */
static bool token_ok(const char *auth)
{
	const char *t;
	size_t n = strlen(API->token);
	unsigned char diff = 0;
	if (API->no_auth)
		return true;
	if (!auth || strncmp(auth, "Bearer ", 7) != 0)
		return false;
	t = auth + 7;
	if (strlen(t) != n)
		return false;
	for (size_t i = 0; i < n; i++)
		diff |= (unsigned char)(t[i] ^ API->token[i]);
	return diff == 0;
}

static bool content_type_json(const char *ct)
{
	return ct && strncasecmp(ct, "application/json", 16) == 0 &&
	       (ct[16] == '\0' || ct[16] == ';' || ct[16] == ' ');
}

/* Shared by REST and MCP: 0 = go on, else the request has been answered. */
int http_guard(struct evhttp_request *req)
{
	struct evkeyvalq *in = evhttp_request_get_input_headers(req);
	struct evbuffer *body = evhttp_request_get_input_buffer(req);

	if (!host_ok(evhttp_find_header(in, "Host"))) {
		http_error_status(req, 403, "forbidden", "the Host header must name this daemon on loopback");
		return -1;
	}
	if (!origin_ok(evhttp_find_header(in, "Origin"))) {
		http_error_status(req, 403, "forbidden", "cross-origin requests are refused");
		return -1;
	}
	if (!token_ok(evhttp_find_header(in, "Authorization"))) {
		evhttp_add_header(evhttp_request_get_output_headers(req), "WWW-Authenticate", "Bearer");
		http_error_status(req, 401, "unauthorized",
		                  "missing or wrong bearer token (see api.token in the data dir)");
		return -1;
	}
	/* a browser's cross-site "simple" POST cannot carry application/json */
	if (evbuffer_get_length(body) > 0 &&
	    !content_type_json(evhttp_find_header(in, "Content-Type"))) {
		http_error_status(req, 415, "invalid_argument", "the body must be application/json");
		return -1;
	}
	return 0;
}

/* Parse the body (absent = NULL). 0, or answered. */
int http_body_json(struct evhttp_request *req, yajl_val *ret)
{
	struct evbuffer *b = evhttp_request_get_input_buffer(req);
	size_t len = evbuffer_get_length(b);
	char err[256];
	char *buf;
	int r;

	*ret = NULL;
	if (len == 0)
		return 0;
	if (len > JSON_BODY_MAX) {
		http_error(req, PERR_PAYLOAD_TOO_LARGE, "the body is too large");
		return -1;
	}
	if (!(buf = malloc(len + 1))) {
		http_error(req, PERR_INTERNAL, "out of memory");
		return -1;
	}
	evbuffer_copyout(b, buf, len);
	buf[len] = '\0';
	r = json_parse(buf, len, ret, err, sizeof(err));
	free(buf);
	if (r < 0) {
		http_error(req, PERR_INVALID_ARGUMENT, err[0] ? err : "malformed JSON");
		return -1;
	}
	return 0;
}

/* ---- REST routing ------------------------------------------------------------------ */

/* Split "/api/sandbox/sandboxes/ID/runs/RID" into at most 6 segments. */
static int split(char *path, char **seg, int max)
{
	int n = 0;
	for (char *p = strtok(path, "/"); p; p = strtok(NULL, "/")) {
		if (n == max)
			return -1;
		seg[n++] = p;
	}
	return n;
}

static void method_not_allowed(struct evhttp_request *req)
{
	http_error_status(req, 405, "invalid_argument", "method not allowed on this route");
}

/* ?target=... of DELETE /mounts; decoded by evhttp, kept alive by the request */
static const char *query_target(struct evhttp_request *req)
{
	static char target[PROTO_STR_MAX + 1];
	const struct evhttp_uri *u = evhttp_request_get_evhttp_uri(req);
	const char *q = u ? evhttp_uri_get_query(u) : NULL;
	struct evkeyvalq params;
	const char *v;
	if (!q || evhttp_parse_query_str(q, &params) < 0)
		return NULL;
	v = evhttp_find_header(&params, "target");
	if (v && strlen(v) <= PROTO_STR_MAX)
		snprintf(target, sizeof(target), "%s", v);
	evhttp_clear_headers(&params);
	return v ? target : NULL;
}

static bool route(struct evhttp_request *req, enum evhttp_cmd_type m, char **s, int n,
                  struct op_args *a)
{
	bool get = m == EVHTTP_REQ_GET, post = m == EVHTTP_REQ_POST;
#define WANT(cond, K)                                                                              \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			method_not_allowed(req);                                                   \
			return false;                                                              \
		}                                                                                  \
		a->kind = K;                                                                       \
		return true;                                                                       \
	} while (0)
	if (n == 1 && strcmp(s[0], "health") == 0)
		WANT(get, OP_HEALTH);
	if (n == 1 && strcmp(s[0], "caps") == 0)
		WANT(get, OP_CAPS);
	if (n == 2 && strcmp(s[0], "caps") == 0 && strcmp(s[1], "recheck") == 0)
		WANT(post, OP_CAPS_RECHECK);
	if (n == 1 && strcmp(s[0], "exec-policy") == 0) {
		if (m == EVHTTP_REQ_PUT)
			WANT(true, OP_POLICY_SET);
		WANT(get, OP_POLICY_GET);
	}
	if (n == 1 && strcmp(s[0], "exec") == 0)
		WANT(post, OP_EXEC);
	if (n >= 1 && strcmp(s[0], "sandboxes") == 0) {
		if (n == 1) {
			if (post)
				WANT(true, OP_SBX_CREATE);
			WANT(get, OP_SBX_LIST);
		}
		a->id = s[1];
		if (n == 2) {
			if (m == EVHTTP_REQ_PATCH)
				WANT(true, OP_SBX_UPDATE);
			if (m == EVHTTP_REQ_DELETE)
				WANT(true, OP_SBX_DELETE);
			WANT(get, OP_SBX_GET);
		}
		if (n == 3 && strcmp(s[2], "mounts") == 0) {
			if (post)
				WANT(true, OP_MOUNT_ADD);
			if (m == EVHTTP_REQ_DELETE) {
				a->sub_id = query_target(req);
				WANT(true, OP_MOUNT_DEL);
			}
			WANT(get, OP_MOUNTS_LIST);
		}
		if (n == 3 && strcmp(s[2], "profile") == 0)
			WANT(get, OP_PROFILE);
		if (n == 3 && strcmp(s[2], "runs") == 0) {
			if (post)
				WANT(true, OP_RUN);
			WANT(get, OP_RUNS_LIST);
		}
		if (n == 4 && strcmp(s[2], "runs") == 0) {
			a->sub_id = s[3];
			WANT(get, OP_RUN_GET);
		}
	}
#undef WANT
	http_error(req, PERR_NOT_FOUND, "no such route");
	return false;
}

static void rest_cb(struct evhttp_request *req, char *path)
{
	char *seg[6];
	int n;
	struct op_args a = { .entrance = ENTRANCE_REST };
	struct http_wait *w;
	yajl_val body = NULL;

	n = split(path + strlen("/api/sandbox"), seg, 6);
	if (n < 0) {
		http_error(req, PERR_NOT_FOUND, "no such route");
		return;
	}
	if (!route(req, evhttp_request_get_command(req), seg, n, &a))
		return;
	if (http_body_json(req, &body) < 0)
		return;
	a.body = body;
	if (http_waiting >= HTTP_PENDING_MAX || !(w = calloc(1, sizeof(*w)))) {
		yajl_tree_free(body);
		http_error(req, PERR_ENGINE_UNAVAILABLE, "too many requests in flight");
		return;
	}
	w->req = req;
	w->conn = evhttp_request_get_connection(req);
	evhttp_connection_set_closecb(w->conn, wait_conn_closed, w);
	http_waiting++;
	op_start(&a, wait_done, w);
	yajl_tree_free(body);
}

static void gen_cb(struct evhttp_request *req, void *arg)
{
	const char *uri = evhttp_request_get_uri(req);
	struct evhttp_uri *u = evhttp_uri_parse(uri);
	const char *p = u ? evhttp_uri_get_path(u) : NULL;
	char *path = NULL;
	size_t plen;

	if (!p || strlen(p) > HTTP_PATH_MAX) {
		if (u)
			evhttp_uri_free(u);
		http_error(req, PERR_INVALID_ARGUMENT, "bad request URI");
		return;
	}
	path = evhttp_uridecode(p, 0, &plen);
	evhttp_uri_free(u);
	if (!path || strlen(path) != plen) { /* a %00 inside */
		free(path);
		http_error(req, PERR_INVALID_ARGUMENT, "bad request path");
		return;
	}
	if (http_guard(req) < 0) {
		free(path);
		return;
	}
	if (strcmp(path, "/mcp") == 0)
		mcp_handle(req);
	else if (strncmp(path, "/api/sandbox/", 13) == 0 || strcmp(path, "/api/sandbox") == 0)
		rest_cb(req, path);
	else
		http_error(req, PERR_NOT_FOUND, "no such route");
	free(path);
}

static void libevent_log(int severity, const char *msg)
{
	if (severity >= EVENT_LOG_WARN)
		log_warnx("libevent: %s", msg);
	else
		log_debug("libevent: %s", msg);
}

int http_start(struct api *A, const char *host, uint16_t port)
{
	event_set_log_callback(libevent_log);
	if (!(A->http = evhttp_new(A->base)))
		return -ENOMEM;
	/* limits before binding (as Bitcoin Core's httpserver does) */
	evhttp_set_timeout(A->http, HTTP_TIMEOUT_S);
	evhttp_set_max_headers_size(A->http, HTTP_HEADERS_MAX);
	evhttp_set_max_body_size(A->http, JSON_BODY_MAX);
	evhttp_set_allowed_methods(A->http, EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_PUT |
	                                        EVHTTP_REQ_PATCH | EVHTTP_REQ_DELETE);
	evhttp_set_gencb(A->http, gen_cb, NULL);
	if (!evhttp_bind_socket_with_handle(A->http, host, port))
		return -EADDRINUSE;
	snprintf(A->host_port, sizeof(A->host_port), "%u", (unsigned)port);
	return 0;
}
