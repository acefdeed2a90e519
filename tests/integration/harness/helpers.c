#include <sys/stat.h>
/* Request builders and a background request, shared by the integration tests. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "harness.h"

char *run_body(const char *language, const char *code, const char *stdin_data,
	       unsigned timeout_ms)
{
	_cleanup_free_ char *lang = js_quote(language, strlen(language));
	_cleanup_free_ char *c = js_quote(code, strlen(code));
	_cleanup_free_ char *in = stdin_data ? js_quote(stdin_data, strlen(stdin_data)) : NULL;
	if (!lang || !c || (stdin_data && !in))
		return NULL;
	size_t cap = strlen(lang) + strlen(c) + (in ? strlen(in) : 0) + 96;
	char *out = malloc(cap);
	if (!out)
		return NULL;
	int n = snprintf(out, cap, "{\"language\":%s,\"code\":%s", lang, c);
	if (in)
		n += snprintf(out + n, cap - (size_t)n, ",\"stdin\":%s", in);
	if (timeout_ms)
		n += snprintf(out + n, cap - (size_t)n, ",\"timeoutMs\":%u", timeout_ms);
	snprintf(out + n, cap - (size_t)n, "}");
	return out;
}

yajl_val js_array(yajl_val root, const char *key)
{
	if (YAJL_IS_ARRAY(root))
		return root;
	yajl_val v = js_get(root, key);
	return YAJL_IS_ARRAY(v) ? v : NULL;
}

static void *bg_main(void *arg)
{
	struct bg_req *b = arg;
	char host[64], auth[SBX_TOKEN_MAX + 32];
	snprintf(host, sizeof(host), "Host: 127.0.0.1:%u", b->d->port);
	snprintf(auth, sizeof(auth), "Authorization: Bearer %s", b->d->token);
	const char *hdrs[] = { host, auth, "Content-Type: application/json",
		               b->extra[0] ? b->extra : NULL, NULL };
	b->resp = http_send(b->d->port, b->method, b->path, hdrs, b->body,
			    b->body ? strlen(b->body) : 0, b->timeout_s);
	b->finished_ms = mono_ms();
	return NULL;
}

int bg_req_start(struct bg_req *b, const struct sbxd *d, const char *method, const char *path,
		 const char *json_body, int timeout_s)
{
	return bg_req_start_hdr(b, d, method, path, json_body, timeout_s, NULL);
}

int bg_req_start_hdr(struct bg_req *b, const struct sbxd *d, const char *method, const char *path,
		     const char *json_body, int timeout_s, const char *extra)
{
	memset(b, 0, sizeof(*b));
	snprintf(b->extra, sizeof(b->extra), "%s", extra ? extra : "");
	b->d = d;
	snprintf(b->method, sizeof(b->method), "%s", method);
	snprintf(b->path, sizeof(b->path), "%s", path);
	b->body = json_body ? strdup(json_body) : NULL;
	if (json_body && !b->body)
		return -ENOMEM;
	b->timeout_s = timeout_s;
	b->started_ms = mono_ms();
	pthread_t t;
	int r = pthread_create(&t, NULL, bg_main, b);
	if (r != 0) {
		free(b->body);
		b->body = NULL;
		return -r;
	}
	b->thread = (unsigned long)t;
	b->running = true;
	return 0;
}

struct http_resp bg_req_join(struct bg_req *b)
{
	if (b->running) {
		pthread_join((pthread_t)b->thread, NULL);
		b->running = false;
	}
	free(b->body);
	b->body = NULL;
	struct http_resp r = b->resp;
	memset(&b->resp, 0, sizeof(b->resp));
	return r;
}

int sbx_fake_program(const char *dir, const char *name, const char *script, char *path,
                     size_t pathsz)
{
	FILE *f;
	if (chmod(dir, 0755) < 0)
		return -errno;
	if ((size_t)snprintf(path, pathsz, "%s/%s", dir, name) >= pathsz)
		return -ENAMETOOLONG;
	if (!(f = fopen(path, "w")))
		return -errno;
	fputs(script, f);
	if (fclose(f) != 0 || chmod(path, 0755) < 0)
		return -errno;
	return 0;
}
