/* A blocking HTTP/1.1 client over a plain TCP socket, and yajl_tree helpers.
 * Connection: close and read-to-EOF keep it simple; chunked bodies are decoded because a
 * server may stream a reply even then. */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <yajl/yajl_gen.h>

#include "cleanup.h"
#include "harness.h"

void http_resp_clear(struct http_resp *r)
{
	free(r->head);
	free(r->body);
	if (r->json)
		yajl_tree_free(r->json);
	r->head = r->body = NULL;
	r->json = NULL;
}

static struct http_resp resp_err(int err)
{
	return (struct http_resp){ .status = err < 0 ? err : -EIO };
}

static int connect_loopback(uint16_t port, int timeout_s)
{
	_cleanup_close_ int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	struct timeval tv = { .tv_sec = timeout_s > 0 ? timeout_s : HTTP_TIMEOUT_S };
	if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) < 0)
		return -errno;
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return -errno;
	return steal_fd(&fd);
}

/* Decode a chunked body in place; returns the new length or -EBADMSG. */
static long dechunk(char *b, size_t len)
{
	size_t in = 0, out = 0;
	for (;;) {
		char *end = NULL;
		if (in >= len)
			return -EBADMSG;
		unsigned long n = strtoul(b + in, &end, 16);
		char *crlf = memmem(b + in, len - in, "\r\n", 2);
		if (!crlf || end == b + in)
			return -EBADMSG;
		in = (size_t)(crlf - b) + 2;
		if (n == 0)
			return (long)out;
		if (n > len - in)
			return -EBADMSG;
		memmove(b + out, b + in, n);
		out += n;
		in += n;
		if (len - in < 2 || memcmp(b + in, "\r\n", 2) != 0)
			return -EBADMSG;
		in += 2;
	}
}

static struct http_resp parse_response(char *buf, size_t len)
{
	char *sep = memmem(buf, len, "\r\n\r\n", 4);
	if (!sep || (size_t)(sep - buf) > HTTP_HEAD_MAX)
		return resp_err(-EBADMSG);
	size_t head_len = (size_t)(sep - buf);
	int status = 0;
	if (sscanf(buf, "HTTP/1.%*d %d", &status) != 1 || status < 100 || status > 599)
		return resp_err(-EBADMSG);

	struct http_resp r = { .status = status };
	r.head = strndup(buf, head_len);
	size_t body_len = len - head_len - 4;
	r.body = malloc(body_len + 1);
	if (!r.head || !r.body) {
		http_resp_clear(&r);
		return resp_err(-ENOMEM);
	}
	memcpy(r.body, sep + 4, body_len);
	r.body[body_len] = '\0';
	r.body_len = body_len;

	char te[64];
	if (http_header(&r, "Transfer-Encoding", te, sizeof(te)) == 0 && strcasestr(te, "chunked")) {
		long n = dechunk(r.body, r.body_len);
		if (n < 0) {
			http_resp_clear(&r);
			return resp_err((int)n);
		}
		r.body_len = (size_t)n;
		r.body[n] = '\0';
	}
	if (r.body_len > 0 && strlen(r.body) == r.body_len)
		r.json = yajl_tree_parse(r.body, NULL, 0);
	return r;
}

struct http_resp http_raw(uint16_t port, const void *req, size_t req_len, int timeout_s)
{
	_cleanup_close_ int fd = connect_loopback(port, timeout_s);
	if (fd < 0)
		return resp_err(fd);
	const char *p = req;
	for (size_t off = 0; off < req_len;) {
		ssize_t n = send(fd, p + off, req_len - off, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) /* the server may answer and close before reading it all */
			break;
		off += (size_t)n;
	}

	size_t cap = 16384, len = 0;
	_cleanup_free_ char *buf = malloc(cap);
	if (!buf)
		return resp_err(-ENOMEM);
	for (;;) {
		if (len + 1 >= cap) {
			if (cap >= HTTP_RESP_MAX)
				return resp_err(-EFBIG);
			cap *= 2;
			char *nb = realloc(buf, cap);
			if (!nb)
				return resp_err(-ENOMEM);
			buf = nb;
		}
		ssize_t n = recv(fd, buf + len, cap - len - 1, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == ECONNRESET && len > 0)
			break; /* answered, then reset because part of our request was unread */
		if (n < 0)
			return resp_err(errno == EAGAIN || errno == EWOULDBLOCK ? -ETIMEDOUT : -errno);
		if (n == 0)
			break;
		len += (size_t)n;
	}
	buf[len] = '\0';
	return parse_response(buf, len);
}

struct http_resp http_send(uint16_t port, const char *method, const char *path,
			   const char *const *headers, const void *body, size_t body_len,
			   int timeout_s)
{
	size_t cap = strlen(method) + strlen(path) + body_len + 256;
	for (size_t i = 0; headers && headers[i]; i++)
		cap += strlen(headers[i]) + 2;
	_cleanup_free_ char *req = malloc(cap);
	if (!req)
		return resp_err(-ENOMEM);
	int n = snprintf(req, cap, "%s %s HTTP/1.1\r\n", method, path);
	for (size_t i = 0; headers && headers[i]; i++)
		n += snprintf(req + n, cap - (size_t)n, "%s\r\n", headers[i]);
	/* GET/DELETE without a body send no Content-Length, like ordinary clients */
	if (body || (strcmp(method, "GET") != 0 && strcmp(method, "DELETE") != 0))
		n += snprintf(req + n, cap - (size_t)n, "Content-Length: %zu\r\n", body_len);
	n += snprintf(req + n, cap - (size_t)n, "Connection: close\r\n\r\n");
	if (body_len)
		memcpy(req + n, body, body_len);
	return http_raw(port, req, (size_t)n + body_len, timeout_s);
}

struct http_resp http_req(const struct sbxd *d, const char *method, const char *path,
			  const char *json_body, ...)
{
	char host[64], auth[SBX_TOKEN_MAX + 32];
	const char *hdrs[HTTP_EXTRA_HDRS_MAX + 4];
	size_t nh = 0;
	snprintf(host, sizeof(host), "Host: 127.0.0.1:%u", d->port);
	snprintf(auth, sizeof(auth), "Authorization: Bearer %s", d->token);
	hdrs[nh++] = host;
	hdrs[nh++] = auth;
	if (json_body)
		hdrs[nh++] = "Content-Type: application/json";
	va_list ap;
	va_start(ap, json_body);
	for (const char *h; (h = va_arg(ap, const char *)) != NULL;) {
		if (nh >= HTTP_EXTRA_HDRS_MAX + 3)
			break;
		hdrs[nh++] = h;
	}
	va_end(ap);
	hdrs[nh] = NULL;
	return http_send(d->port, method, path, hdrs, json_body,
			 json_body ? strlen(json_body) : 0, HTTP_TIMEOUT_S);
}

int http_header(const struct http_resp *r, const char *name, char *buf, size_t bufsz)
{
	if (!r->head)
		return -ENOENT;
	size_t nl = strlen(name);
	for (const char *line = strstr(r->head, "\r\n"); line; line = strstr(line, "\r\n")) {
		line += 2;
		if (strncasecmp(line, name, nl) == 0 && line[nl] == ':') {
			const char *v = line + nl + 1;
			while (*v == ' ' || *v == '\t')
				v++;
			const char *e = strstr(v, "\r\n");
			size_t vl = e ? (size_t)(e - v) : strlen(v);
			if (vl >= bufsz)
				vl = bufsz - 1;
			memcpy(buf, v, vl);
			buf[vl] = '\0';
			return 0;
		}
	}
	return -ENOENT;
}

/* ---- JSON ----------------------------------------------------------------------------- */

yajl_val js_get(yajl_val root, const char *path)
{
	if (!root || !path)
		return NULL;
	char copy[512];
	const char *parts[JSON_PATH_DEPTH_MAX + 1];
	size_t n = 0;
	if (strlen(path) >= sizeof(copy))
		return NULL;
	strcpy(copy, path);
	for (char *save = NULL, *t = strtok_r(copy, ".", &save); t; t = strtok_r(NULL, ".", &save)) {
		if (n >= JSON_PATH_DEPTH_MAX)
			return NULL;
		parts[n++] = t;
	}
	parts[n] = NULL;
	return yajl_tree_get(root, parts, yajl_t_any);
}

const char *js_str(yajl_val root, const char *path)
{
	yajl_val v = js_get(root, path);
	return YAJL_IS_STRING(v) ? YAJL_GET_STRING(v) : NULL;
}

bool js_is_true(yajl_val root, const char *path)
{
	return YAJL_IS_TRUE(js_get(root, path));
}

bool js_is_false(yajl_val root, const char *path)
{
	return YAJL_IS_FALSE(js_get(root, path));
}

long long js_int(yajl_val root, const char *path, long long dflt)
{
	yajl_val v = js_get(root, path);
	return YAJL_IS_INTEGER(v) ? YAJL_GET_INTEGER(v) : dflt;
}

char *js_quote(const char *s, size_t len)
{
	yajl_gen g = yajl_gen_alloc(NULL);
	if (!g)
		return NULL;
	char *out = NULL;
	const unsigned char *buf;
	size_t blen;
	if (yajl_gen_string(g, (const unsigned char *)s, len) == yajl_gen_status_ok &&
	    yajl_gen_get_buf(g, &buf, &blen) == yajl_gen_status_ok)
		out = strndup((const char *)buf, blen);
	yajl_gen_free(g);
	return out;
}
