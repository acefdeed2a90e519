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

int http_start(struct api *A, const char *host, uint16_t port);
void http_reply(struct evhttp_request *req, int status, const char *body, size_t len);
void http_error(struct evhttp_request *req, enum proto_err e, const char *msg);
int http_guard(struct evhttp_request *req);
/* The one body reader of both doors: absent = NULL; 0, -EMSGSIZE, -EINVAL or -ENOMEM with
 * why saying what is wrong. It answers nothing: each door words its own refusal. */
int http_body_json(struct evhttp_request *req, yajl_val *ret, char *why, size_t whysz);

#endif
