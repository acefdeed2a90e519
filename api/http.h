/* HTTP plumbing shared by REST and MCP. */
#ifndef SBX_API_HTTP_H
#define SBX_API_HTTP_H

#include <event2/http.h>
#include <stddef.h>
#include <stdint.h>
#include <yajl/yajl_tree.h>

#include "proto.h"

struct api;

#define HTTP_WHY_MAX 256 /* a reason in an error document */
#define HTTP_PATH_MAX 1024 /* bytes of a request's path before decoding */
/* The largest body evhttp reads (evhttp_set_max_body_size): a file written whole over
 * REST (PROTO_FILE_MAX) or over MCP as base64 (4/3 of it) with room for the JSON around
 * it. REST JSON bodies stay under JSON_BODY_MAX. */
#define HTTP_BODY_MAX ((PROTO_FILE_MAX / 3 + 1) * 4 + (64u << 10))

int http_start(struct api *A, const char *host, uint16_t port);
#define API_CONTROL_SOCKET "sbxd.sock"
int http_control_start(struct api *A, const char *data_dir);
void http_reply(struct evhttp_request *req, int status, const char *body, size_t len);
void http_error(struct evhttp_request *req, enum proto_err e, const char *msg);
int http_guard(struct evhttp_request *req);
/* The one body reader of both doors: absent = NULL; 0, -EMSGSIZE, -EINVAL or -ENOMEM with
 * why saying what is wrong. It answers nothing: each door words its own refusal. */
int http_body_json(struct evhttp_request *req, size_t max, yajl_val *ret, char *why, size_t whysz);
/* Bytes (a file) as the answer: 200, or 206 with Content-Range for a range. */
struct op_raw;
void http_reply_raw(struct evhttp_request *req, int status, const char *body, size_t len,
                    const struct op_raw *raw);

/* The path of a request target, percent-decoded (malloc'd, the caller frees): 0, -EINVAL
 * (not a URI, a path longer than HTTP_PATH_MAX, or a %00 inside), -ENOMEM. */
int http_target_path(const char *uri, char **ret_path);
/* The value of query parameter `name` in a raw query string (decoded by evhttp) copied
 * into buf: 0, -ENOENT (no query, unparsable, or no such parameter), -E2BIG. */
int http_query_value(const char *query, const char *name, char *buf, size_t bufsz);

#endif
