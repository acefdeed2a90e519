/* The HTTP front door: evhttp with its limits set before binding, the checks every
 * request passes (Host, Origin, Content-Type, bearer token), and the REST door: a route
 * from the operation table (route.c), then the shared call (call.c). */
#include "http.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "api.h"
#include "call.h"
#include "cleanup.h"
#include "conn.h"
#include "json.h"
#include "log.h"
#include "mcp.h"
#include "metrics.h"
#include "ops.h"
#include "route.h"
#include "sse.h"

#define HTTP_HEADERS_MAX     8192
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
	api_metrics_count("-", json_err_status(e)); /* refused before any operation */
	size_t len = 0;
	char *doc = json_error_doc(e, msg, &len);
	http_reply(req, json_err_status(e), doc, len);
	free(doc);
}

static void http_error_status(struct evhttp_request *req, int status, const char *code,
                              const char *msg)
{
	api_metrics_count("-", status);
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

/* ---- the checks ------------------------------------------------------------------ */

/* "127.0.0.1:P", "localhost:P", "[::1]:P" with our own port. */
static bool host_ok(const char *host)
{
	static const char *const names[] = { "127.0.0.1", "localhost", "[::1]" };
	/* --allow-remote (token mandatory): the configured host too; a wildcard, any name */
	const char *api_remote_host = API->remote_host[0] ? API->remote_host : NULL;
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

static bool content_type_is(const char *ct, const char *want)
{
	size_t n = strlen(want);
	return ct && strncasecmp(ct, want, n) == 0 && (ct[n] == '\0' || ct[n] == ';' || ct[n] == ' ');
}

static bool content_type_json(const char *ct) { return content_type_is(ct, "application/json"); }

/* ---- the control socket ----------------------------------------------------------- */

static uid_t control_uid; /* who may use the control socket besides root: sbxd's user */

/* <data>/sbxd.sock: created 0600 (owned by the daemon's user) before confinement, served
 * by the same evhttp as the TCP listener. A request on it needs no token and no Host: the
 * peer's credentials are checked instead (root or the daemon's own uid), and no browser
 * can reach a Unix socket. 0, or -errno (the daemon serves TCP only then). */
int http_control_start(struct api *A, const char *data_dir)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	struct stat st;
	mode_t old;
	int fd, r;
	control_uid = geteuid();
	if ((size_t)snprintf(a.sun_path, sizeof(a.sun_path), "%s/" API_CONTROL_SOCKET, data_dir) >=
	    sizeof(a.sun_path))
		return -ENAMETOOLONG;
	if (lstat(a.sun_path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode))
			return -EEXIST; /* not ours to remove */
		unlink(a.sun_path); /* a stale one from an earlier run */
	}
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0)) < 0)
		return -errno;
	old = umask(0177); /* born 0600: no moment when others may connect */
	r = bind(fd, (struct sockaddr *)&a, sizeof(a));
	umask(old);
	if (r < 0 || listen(fd, 64) < 0) {
		r = -errno;
		close(fd);
		return r;
	}
	if (!evhttp_accept_socket_with_handle(A->http, fd)) {
		close(fd);
		return -ENOMEM;
	}
	return 0;
}

/* Is the request on the control socket? Then: is its peer root or the daemon's user? */
static bool on_control_socket(struct evhttp_request *req, bool *ret_peer_ok)
{
	struct evhttp_connection *c = evhttp_request_get_connection(req);
	struct bufferevent *bev = c ? evhttp_connection_get_bufferevent(c) : NULL;
	evutil_socket_t fd = bev ? bufferevent_getfd(bev) : -1;
	struct sockaddr_storage ss;
	socklen_t n = sizeof(ss);
	struct ucred cr;
	socklen_t crn = sizeof(cr);
	*ret_peer_ok = false;
	if (fd < 0 || getsockname(fd, (struct sockaddr *)&ss, &n) < 0 || ss.ss_family != AF_UNIX)
		return false;
	*ret_peer_ok = getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &crn) == 0 &&
	               (cr.uid == 0 || cr.uid == control_uid);
	return true;
}

/* Shared by REST and MCP: 0 = go on, else the request has been answered. */
int http_guard(struct evhttp_request *req)
{
	struct evkeyvalq *in = evhttp_request_get_input_headers(req);
	struct evbuffer *body = evhttp_request_get_input_buffer(req);
	bool peer_ok = false;

	if (on_control_socket(req, &peer_ok)) {
		if (!peer_ok) {
			http_error_status(req, 403, "forbidden", "the control socket is for root and sbxd's user");
			return -1;
		}
		goto body; /* the kernel vouched for the peer: no Host, Origin or token to check */
	}
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
body:
	/* a browser's cross-site "simple" POST cannot carry application/json; raw bytes are
	 * taken by PUT only, which no cross-site form can send without a preflight we never
	 * answer */
	if (evbuffer_get_length(body) > 0 &&
	    !content_type_json(evhttp_find_header(in, "Content-Type")) &&
	    !(evhttp_request_get_command(req) == EVHTTP_REQ_PUT &&
	      content_type_is(evhttp_find_header(in, "Content-Type"), "application/octet-stream"))) {
		http_error_status(req, 415, "invalid_argument", "the body must be application/json");
		return -1;
	}
	return 0;
}

/* The one body reader of both doors. Absent = NULL. 0, -EMSGSIZE (too large), -EINVAL
 * (not JSON, or nested too deep; why says which) or -ENOMEM; nothing is answered. */
int http_body_json(struct evhttp_request *req, size_t max, yajl_val *ret, char *why, size_t whysz)
{
	struct evbuffer *b = evhttp_request_get_input_buffer(req);
	size_t len = evbuffer_get_length(b);
	_cleanup_free_ char *buf = NULL;

	*ret = NULL;
	why[0] = '\0';
	if (len == 0)
		return 0;
	if (len > max) {
		snprintf(why, whysz, "the body is too large (at most %zu bytes)", max);
		return -EMSGSIZE;
	}
	if (!(buf = malloc(len + 1))) {
		snprintf(why, whysz, "out of memory");
		return -ENOMEM;
	}
	evbuffer_copyout(b, buf, len);
	buf[len] = '\0';
	if (json_parse(buf, len, ret, why, whysz) < 0) {
		if (!why[0])
			snprintf(why, whysz, "malformed JSON");
		return -EINVAL;
	}
	return 0;
}

/* ---- REST ---------------------------------------------------------------------------- */

int http_query_value(const char *query, const char *name, char *buf, size_t bufsz)
{
	struct evkeyvalq params;
	const char *v;
	int r = -ENOENT;
	if (!query || evhttp_parse_query_str(query, &params) < 0)
		return -ENOENT;
	if ((v = evhttp_find_header(&params, name)))
		r = strlen(v) < bufsz ? 0 : -E2BIG;
	if (r == 0)
		memcpy(buf, v, strlen(v) + 1);
	evhttp_clear_headers(&params);
	return r;
}

static int query_param(struct evhttp_request *req, const char *name, char *buf, size_t bufsz)
{
	const struct evhttp_uri *u = evhttp_request_get_evhttp_uri(req);
	return http_query_value(u ? evhttp_uri_get_query(u) : NULL, name, buf, bufsz);
}

void http_reply_raw(struct evhttp_request *req, int status, const char *body, size_t len,
                    const struct op_raw *raw)
{
	struct evbuffer *b = evbuffer_new();
	struct evkeyvalq *h = evhttp_request_get_output_headers(req);
	char cr[96];
	evhttp_add_header(h, "Content-Type", raw->content_type ? raw->content_type : "application/octet-stream");
	evhttp_add_header(h, "Cache-Control", "no-store");
	evhttp_add_header(h, "X-Content-Type-Options", "nosniff");
	if (!raw->content_type)
		evhttp_add_header(h, "Accept-Ranges", "bytes");
	if (raw->partial) {
		snprintf(cr, sizeof(cr), "bytes %llu-%llu/%llu", (unsigned long long)raw->offset,
		         (unsigned long long)(raw->offset + (raw->length ? raw->length - 1 : 0)),
		         (unsigned long long)raw->total);
		evhttp_add_header(h, "Content-Range", cr);
	}
	if (b && body)
		evbuffer_add(b, body, len);
	evhttp_send_reply(req, status, NULL, b);
	if (b)
		evbuffer_free(b);
}

/* OPF_QUERY_ARGS: the query parameters the row names, as the arguments object MCP would
 * send ("true"/"false" for the flags). */
static int query_args(struct evhttp_request *req, const struct op_row *row, yajl_val *ret,
                      char *why, size_t whysz)
{
	char qv[PROTO_STR_MAX + 1];
	yajl_gen g = json_gen_new();
	_cleanup_free_ char *doc = NULL;
	size_t len = 0;
	int r = 0;

	yajl_gen_map_open(g);
	for (const char *q = row->query; q && *q && r == 0;) {
		size_t n = strcspn(q, ",");
		char name[32];
		snprintf(name, sizeof(name), "%.*s", (int)n, q);
		q += n + (q[n] == ',');
		if ((r = query_param(req, name, qv, sizeof(qv))) == -ENOENT) {
			r = 0;
			continue;
		}
		if (r < 0) {
			snprintf(why, whysz, "%s: at most %u bytes", name, PROTO_STR_MAX);
			break;
		}
		json_gen_key(g, name);
		if (strcmp(name, "path") != 0 && (strcmp(qv, "true") == 0 || strcmp(qv, "1") == 0))
			yajl_gen_bool(g, 1);
		else if (strcmp(name, "path") != 0 && (strcmp(qv, "false") == 0 || strcmp(qv, "0") == 0))
			yajl_gen_bool(g, 0);
		else
			json_gen_str(g, qv);
	}
	yajl_gen_map_close(g);
	doc = json_gen_dup(g, &len);
	yajl_gen_free(g);
	if (r < 0)
		return -EINVAL;
	if (!doc)
		return -ENOMEM;
	return json_parse(doc, len, ret, why, whysz);
}

static void rest_answer(struct evhttp_request *req, const char *rpc_id, int status,
                        const char *body, size_t len)
{
	if (body)
		http_reply(req, status, body, len);
	else
		http_error(req, PERR_INTERNAL, "out of memory");
}

/* A streamed run (Accept: text/event-stream): "stdout"/"stderr" events {"data": text} as
 * the output arrives, then "result" with the run (the body a plain reply would have had),
 * or "error" with the error document. */
static char *rest_chunk_event(const char *rpc_id, const char *token, uint64_t progress,
                              uint32_t chan, const char *text, size_t len, const char **ret_name,
                              size_t *ret_len)
{
	yajl_gen g = json_gen_new();
	char *doc;
	yajl_gen_map_open(g);
	json_gen_key(g, "data");
	json_gen_bytes(g, text, len);
	yajl_gen_map_close(g);
	doc = json_gen_dup(g, ret_len);
	yajl_gen_free(g);
	*ret_name = chan == STREAM_STDERR ? "stderr" : "stdout";
	return doc;
}

static char *rest_final_event(const char *rpc_id, int status, const char *body, size_t len,
                              const char **ret_name, size_t *ret_len)
{
	*ret_name = status < 400 ? "result" : "error";
	*ret_len = len;
	return strndup(body, len);
}

static const struct call_door rest_door = { rest_answer, rest_chunk_event, rest_final_event };

static void rest_cb(struct evhttp_request *req, char *path)
{
	struct op_args a = { .entrance = ENTRANCE_REST };
	const struct op_row *row = NULL;
	char allow[ROUTE_ALLOW_MAX], why[HTTP_WHY_MAX], qv[PROTO_STR_MAX + 1];
	yajl_val body = NULL;
	int r;

	r = route_find(path + strlen("/api/sandbox"), evhttp_request_get_command(req), &row, &a,
	               allow, sizeof(allow));
	if (r == -EOPNOTSUPP) {
		evhttp_add_header(evhttp_request_get_output_headers(req), "Allow", allow);
		http_error_status(req, 405, "invalid_argument", "method not allowed on this route");
		return;
	}
	if (r < 0) {
		http_error(req, PERR_NOT_FOUND, "no such route");
		return;
	}
	if (row->query && !(row->flags & OPF_QUERY_ARGS) &&
	    (r = query_param(req, row->query, qv, sizeof(qv))) != -ENOENT) {
		if (r < 0) {
			snprintf(why, sizeof(why), "%s: at most %u bytes", row->query, PROTO_STR_MAX);
			http_error(req, PERR_INVALID_ARGUMENT, why);
			return;
		}
		a.query = qv;
	}
	if (row->flags & OPF_RAW_BODY) {
		struct evbuffer *in = evhttp_request_get_input_buffer(req);
		size_t len = evbuffer_get_length(in);
		if (len > PROTO_FILE_MAX) {
			snprintf(why, sizeof(why), "the body is too large (at most %u bytes)", PROTO_FILE_MAX);
			http_error(req, PERR_PAYLOAD_TOO_LARGE, why);
			return;
		}
		a.raw = len ? (const char *)evbuffer_pullup(in, -1) : "";
		a.raw_len = len;
		if (!a.raw) {
			http_error(req, PERR_INTERNAL, "out of memory");
			return;
		}
	} else if (evbuffer_get_length(evhttp_request_get_input_buffer(req)) > 0 &&
	           !content_type_json(evhttp_find_header(evhttp_request_get_input_headers(req),
	                                                 "Content-Type"))) {
		/* raw bytes are a file's content, never the arguments of a JSON route */
		http_error_status(req, 415, "invalid_argument", "the body must be application/json");
		return;
	} else if ((row->flags & OPF_QUERY_ARGS) &&
	           evbuffer_get_length(evhttp_request_get_input_buffer(req)) > 0) {
		http_error(req, PERR_INVALID_ARGUMENT, "this route takes its arguments in the query");
		return;
	} else if ((r = http_body_json(req, JSON_BODY_MAX, &body, why, sizeof(why))) < 0) {
		http_error(req, r == -EMSGSIZE ? PERR_PAYLOAD_TOO_LARGE
		                : r == -ENOMEM ? PERR_INTERNAL : PERR_INVALID_ARGUMENT,
		           why);
		return;
	}
	if ((row->flags & OPF_QUERY_ARGS) && (r = query_args(req, row, &body, why, sizeof(why))) < 0) {
		http_error(req, r == -ENOMEM ? PERR_INTERNAL : PERR_INVALID_ARGUMENT, why);
		return;
	}
	if (row->flags & OPF_RAW_REPLY)
		a.range = evhttp_find_header(evhttp_request_get_input_headers(req), "Range");
	a.body = body;
	call_start(req, row, &a, &rest_door, NULL, sse_wanted(req) ? "" : NULL);
	yajl_tree_free(body);
}

int http_target_path(const char *uri, char **ret_path)
{
	struct evhttp_uri *u = uri ? evhttp_uri_parse(uri) : NULL;
	const char *p = u ? evhttp_uri_get_path(u) : NULL;
	char *path;
	size_t plen;

	if (!p || strlen(p) > HTTP_PATH_MAX) {
		if (u)
			evhttp_uri_free(u);
		return -EINVAL;
	}
	path = evhttp_uridecode(p, 0, &plen);
	evhttp_uri_free(u);
	if (!path)
		return -ENOMEM;
	if (strlen(path) != plen) { /* a %00 inside */
		free(path);
		return -EINVAL;
	}
	*ret_path = path;
	return 0;
}

static void gen_cb(struct evhttp_request *req, void *arg)
{
	char *path = NULL;
	int r = http_target_path(evhttp_request_get_uri(req), &path);

	if (r < 0) {
		http_error(req, r == -ENOMEM ? PERR_INTERNAL : PERR_INVALID_ARGUMENT,
		           r == -ENOMEM ? "out of memory" : "bad request path");
		return;
	}
	if (http_guard(req) < 0) {
		free(path);
		return;
	}
	conn_protect(req); /* authenticated: not closed to make room for a newcomer */
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
	struct evhttp_bound_socket *bound;
	int r;
	event_set_log_callback(libevent_log);
	if (!(A->http = evhttp_new(A->base)))
		return -ENOMEM;
	/* limits before binding (as Bitcoin Core's httpserver does); the timeouts are set
	 * per connection by conn.c. Every method reaches gen_cb, which answers the ones no
	 * route takes (405, JSON) rather than libevent (501, HTML). */
	evhttp_set_max_headers_size(A->http, HTTP_HEADERS_MAX);
	evhttp_set_max_body_size(A->http, HTTP_BODY_MAX);
	evhttp_set_allowed_methods(A->http, EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_HEAD |
	                                        EVHTTP_REQ_PUT | EVHTTP_REQ_DELETE |
	                                        EVHTTP_REQ_OPTIONS | EVHTTP_REQ_TRACE |
	                                        EVHTTP_REQ_CONNECT | EVHTTP_REQ_PATCH);
	evhttp_set_gencb(A->http, gen_cb, NULL);
	if (!(bound = evhttp_bind_socket_with_handle(A->http, host, port)))
		return -EADDRINUSE;
	if ((r = conn_init(A, evhttp_bound_socket_get_listener(bound))) < 0)
		return r;
	snprintf(A->host_port, sizeof(A->host_port), "%u", (unsigned)port);
	return 0;
}
