/* sbxctl: the operator's command line (DESIGN.md §11). It talks to sbxd's REST API on
 * loopback with the token from <data>/api.token (or $SBX_TOKEN), and prints what
 * supervisorctl 4.x prints for status, start, stop, restart and tail, so an operator's
 * habits and scripts carry over. `sbxctl mcp` bridges MCP over stdio to /mcp, for MCP
 * clients that spawn their servers. */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <yajl/yajl_tree.h>

#include "sbxd.h"

#define CTL_RESP_MAX   (64u << 20) /* bytes of one answer we accept */
#define CTL_WAIT_MS    30000u      /* start / stop: how long to wait for the state to settle */
#define CTL_POLL_MS    200u
#define CTL_TAIL_BYTES 1600u       /* supervisorctl's default tail */

static char host[256] = "127.0.0.1", port[16] = "7420";
static char token[160];
static bool json_out;
static char sock_path[4200]; /* the control socket, when sbxctl talks through it */

/* ---- HTTP ------------------------------------------------------------------------------ */

struct resp {
	int status;
	char *head; /* the header block, NUL-terminated */
	char *body; /* NUL-terminated */
	size_t len;
};

static void resp_free(struct resp *r)
{
	free(r->head);
	free(r->body);
	memset(r, 0, sizeof(*r));
}

/* The control socket <data>/sbxd.sock (0600; sbx-api checks the peer's uid): no token. */
static int dial_control(const char *path)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int fd;
	if ((size_t)snprintf(a.sun_path, sizeof(a.sun_path), "%s", path) >= sizeof(a.sun_path) ||
	    (fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
		return -1;
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static int dial(void)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res = NULL, *ai;
	int fd = -1;
	if (sock_path[0])
		return dial_control(sock_path);
	if (getaddrinfo(host, port, &hints, &res) != 0)
		return -1;
	for (ai = res; ai; ai = ai->ai_next) {
		if ((fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, 0)) < 0)
			continue;
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
			break;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	return fd;
}

static int write_all_fd(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Decode a chunked body in place; returns its length. */
static size_t unchunk(char *b, size_t len)
{
	size_t in = 0, out = 0;
	while (in < len) {
		char *end;
		unsigned long n = strtoul(b + in, &end, 16);
		char *crlf = strstr(b + in, "\r\n");
		if (!crlf || n == 0)
			break;
		in = (size_t)(crlf - b) + 2;
		if (in + n > len)
			n = len - in;
		memmove(b + out, b + in, n);
		out += n;
		in += n + 2;
	}
	b[out] = '\0';
	return out;
}

/* One request; extra: more header lines ("K: v\r\n"), or NULL. 0, or -1 (message printed). */
static int http(const char *method, const char *path, const char *ctype, const char *body,
                size_t body_len, const char *extra, struct resp *r)
{
	char req[2048];
	size_t cap = 65536, len = 0;
	char *buf = malloc(cap), *sep;
	int fd = dial(), n;

	memset(r, 0, sizeof(*r));
	if (fd < 0) {
		if (sock_path[0])
			fprintf(stderr, "sbxctl: cannot reach sbxd at %s (is it running?)\n", sock_path);
		else
			fprintf(stderr, "sbxctl: cannot reach sbxd at http://%s:%s (is it running?)\n", host, port);
		free(buf);
		return -1;
	}
	n = snprintf(req, sizeof(req),
	             "%s /api/sandbox%s HTTP/1.1\r\nHost: %s:%s\r\nConnection: close\r\n"
	             "Accept: application/json\r\n%s%s%s%s%s%sContent-Length: %zu\r\n\r\n",
	             method, path, host, port, token[0] ? "Authorization: Bearer " : "", token,
	             token[0] ? "\r\n" : "", ctype ? "Content-Type: " : "", ctype ? ctype : "",
	             ctype ? "\r\n" : "", body ? body_len : 0);
	if (strncmp(path, "/mcp", 4) == 0) /* the MCP endpoint is not under /api/sandbox */
		n = snprintf(req, sizeof(req),
		             "%s %s HTTP/1.1\r\nHost: %s:%s\r\nConnection: close\r\n"
		             "Accept: application/json, text/event-stream\r\n%s%s%s%s"
		             "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n",
		             method, path, host, port, token[0] ? "Authorization: Bearer " : "", token,
		             token[0] ? "\r\n" : "", extra ? extra : "", body ? body_len : 0);
	if (!buf || n < 0 || (size_t)n >= sizeof(req) || write_all_fd(fd, req, (size_t)n) < 0 ||
	    (body && write_all_fd(fd, body, body_len) < 0)) {
		fprintf(stderr, "sbxctl: sending the request failed\n");
		close(fd);
		free(buf);
		return -1;
	}
	for (;;) {
		ssize_t got;
		if (len + 1 >= cap) {
			char *nb = cap >= CTL_RESP_MAX ? NULL : realloc(buf, cap * 2);
			if (!nb) {
				fprintf(stderr, "sbxctl: the answer is too large\n");
				close(fd);
				free(buf);
				return -1;
			}
			buf = nb;
			cap *= 2;
		}
		got = read(fd, buf + len, cap - len - 1);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			break;
		len += (size_t)got;
	}
	close(fd);
	buf[len] = '\0';
	if (sscanf(buf, "HTTP/1.%*d %d", &r->status) != 1 || !(sep = strstr(buf, "\r\n\r\n"))) {
		fprintf(stderr, "sbxctl: not an HTTP answer from %s:%s\n", host, port);
		free(buf);
		return -1;
	}
	*sep = '\0';
	r->head = strdup(buf);
	r->len = len - (size_t)(sep + 4 - buf);
	r->body = malloc(r->len + 1);
	if (!r->head || !r->body) {
		free(buf);
		resp_free(r);
		return -1;
	}
	memcpy(r->body, sep + 4, r->len);
	r->body[r->len] = '\0';
	for (char *h = r->head; (h = strchr(h, '\n')); h++)
		if (strncasecmp(h + 1, "transfer-encoding: chunked", 26) == 0)
			r->len = unchunk(r->body, r->len);
	free(buf);
	return 0;
}

static yajl_val parse(const struct resp *r)
{
	char err[128];
	return yajl_tree_parse(r->body, err, sizeof(err));
}

static const char *jstr(yajl_val v, const char *k)
{
	yajl_val x = yajl_tree_get(v, (const char *[]){ k, NULL }, yajl_t_string);
	return x ? YAJL_GET_STRING(x) : NULL;
}

static long long jint(yajl_val v, const char *k)
{
	yajl_val x = yajl_tree_get(v, (const char *[]){ k, NULL }, yajl_t_number);
	return x && YAJL_IS_INTEGER(x) ? YAJL_GET_INTEGER(x) : 0;
}

/* The error of a failed answer, as the API put it. */
static const char *err_message(yajl_val doc)
{
	yajl_val m = doc ? yajl_tree_get(doc, (const char *[]){ "error", "message", NULL }, yajl_t_string) : NULL;
	return m ? YAJL_GET_STRING(m) : "unknown error";
}

/* ---- status (supervisorctl's _show_statuses and _interpretProcessInfo) ------------------- */

static bool stopped_state(const char *s)
{
	return !strcmp(s, "STOPPED") || !strcmp(s, "EXITED") || !strcmp(s, "FATAL") || !strcmp(s, "UNKNOWN");
}

/* Python's str(datetime.timedelta(seconds=n)) */
static void timedelta(long long n, char *buf, size_t sz)
{
	long long d = n / 86400, s = n % 86400;
	if (d)
		snprintf(buf, sz, "%lld day%s, %lld:%02lld:%02lld", d, d == 1 ? "" : "s", s / 3600, s % 3600 / 60, s % 60);
	else
		snprintf(buf, sz, "%lld:%02lld:%02lld", s / 3600, s % 3600 / 60, s % 60);
}

static void describe(yajl_val app, char *desc, size_t sz)
{
	const char *state = jstr(app, "state"), *name = jstr(app, "name"), *err = jstr(app, "spawnerr");
	long long start = jint(app, "start"), stop = jint(app, "stop"), now = jint(app, "now");
	desc[0] = '\0';
	if (!state)
		return;
	if (!strcmp(state, "RUNNING")) {
		char up[64];
		timedelta(now > start ? now - start : 0, up, sizeof(up));
		snprintf(desc, sz, "pid %lld, uptime %s", jint(app, "pid"), up);
	} else if (!strcmp(state, "FATAL") || !strcmp(state, "BACKOFF")) {
		if (err && *err)
			snprintf(desc, sz, "%s", err);
		else
			snprintf(desc, sz, "unknown error (try \"tail %s\")", name ? name : "");
	} else if (!strcmp(state, "STOPPED") || !strcmp(state, "EXITED")) {
		if (start) {
			time_t t = (time_t)stop;
			struct tm tm;
			localtime_r(&t, &tm);
			strftime(desc, sz, "%b %d %I:%M %p", &tm);
		} else {
			snprintf(desc, sz, "Not started");
		}
	}
}

static int get_apps(yajl_val *ret_doc, yajl_val *ret_apps)
{
	struct resp r;
	yajl_val doc;
	if (http("GET", "/apps", NULL, NULL, 0, NULL, &r) < 0)
		return -1;
	doc = parse(&r);
	if (r.status != 200) {
		fprintf(stderr, "sbxctl: %s\n", err_message(doc));
		yajl_tree_free(doc);
		resp_free(&r);
		return -1;
	}
	resp_free(&r);
	*ret_doc = doc;
	*ret_apps = yajl_tree_get(doc, (const char *[]){ "apps", NULL }, yajl_t_array);
	return *ret_apps ? 0 : -1;
}

static int cmd_status(int argc, char **argv)
{
	yajl_val doc, apps, shown[1024];
	size_t n = 0, maxlen = 30;
	int rc = 0;
	bool all = argc == 0;

	if (get_apps(&doc, &apps) < 0)
		return 4;
	for (int i = 0; i < argc; i++)
		all |= strcmp(argv[i], "all") == 0;
	if (all) {
		for (size_t i = 0; i < apps->u.array.len && n < 1024; i++)
			shown[n++] = apps->u.array.values[i];
	} else {
		for (int i = 0; i < argc; i++) {
			bool found = false;
			/* NAME and NAME:NAME name an app; a group of its own name (supervisord's
			 * make_namespec prints a lone process by its name) */
			char group[256], proc[256];
			const char *colon = strchr(argv[i], ':');
			if (colon) {
				snprintf(group, sizeof(group), "%.*s", (int)(colon - argv[i]), argv[i]);
				snprintf(proc, sizeof(proc), "%s", colon + 1);
			} else {
				snprintf(group, sizeof(group), "%s", argv[i]);
				snprintf(proc, sizeof(proc), "%s", argv[i]);
			}
			for (size_t j = 0; j < apps->u.array.len; j++) {
				const char *nm = jstr(apps->u.array.values[j], "name");
				if (nm && !strcmp(nm, group) && (!proc[0] || !strcmp(proc, "*") || !strcmp(nm, proc))) {
					found = true;
					if (n < 1024)
						shown[n++] = apps->u.array.values[j];
				}
			}
			if (!found) {
				if (colon && (!proc[0] || !strcmp(proc, "*")))
					printf("%s: ERROR (no such group)\n", group);
				else
					printf("%s: ERROR (no such process)\n", argv[i]);
				rc = 4;
			}
		}
	}
	if (json_out) {
		printf("[");
		for (size_t i = 0; i < n; i++) {
			const char *nm = jstr(shown[i], "name"), *st = jstr(shown[i], "state");
			char desc[512];
			describe(shown[i], desc, sizeof(desc));
			printf("%s{\"name\":\"%s\",\"state\":\"%s\",\"pid\":%lld,\"description\":\"", i ? "," : "",
			       nm ? nm : "", st ? st : "", jint(shown[i], "pid"));
			for (const char *c = desc; *c; c++)
				printf(*c == '"' || *c == '\\' ? "\\%c" : "%c", *c);
			printf("\"}");
		}
		printf("]\n");
	} else {
		for (size_t i = 0; i < n; i++) {
			const char *nm = jstr(shown[i], "name");
			if (nm && strlen(nm) > maxlen)
				maxlen = strlen(nm);
		}
		for (size_t i = 0; i < n; i++) {
			char desc[512];
			describe(shown[i], desc, sizeof(desc));
			printf("%-*s%-10s%s\n", (int)maxlen + 3, jstr(shown[i], "name") ?: "",
			       jstr(shown[i], "state") ?: "UNKNOWN", desc);
		}
	}
	for (size_t i = 0; i < n; i++)
		if (stopped_state(jstr(shown[i], "state") ?: "UNKNOWN"))
			rc = 3;
	yajl_tree_free(doc);
	return rc;
}

/* ---- start, stop, restart --------------------------------------------------------------- */

/* GET /apps/NAME until its state is one of want (comma-separated); the last state. */
static int wait_state(const char *name, const char *want, char *state, size_t sz)
{
	char path[512];
	snprintf(path, sizeof(path), "/apps/%s", name);
	for (unsigned waited = 0; waited <= CTL_WAIT_MS; waited += CTL_POLL_MS) {
		struct resp r;
		yajl_val doc;
		if (http("GET", path, NULL, NULL, 0, NULL, &r) < 0)
			return -1;
		doc = parse(&r);
		snprintf(state, sz, "%s", doc && jstr(doc, "state") ? jstr(doc, "state") : "UNKNOWN");
		yajl_tree_free(doc);
		resp_free(&r);
		char pat[64];
		snprintf(pat, sizeof(pat), ",%s,", state);
		char list[256];
		snprintf(list, sizeof(list), ",%s,", want);
		if (strstr(list, pat))
			return 0;
		usleep(CTL_POLL_MS * 1000);
	}
	return 0;
}

static int ctl_one(const char *op, const char *name)
{
	char path[512], state[32];
	struct resp r;
	yajl_val doc;
	int status;

	snprintf(path, sizeof(path), "/apps/%s/%s", name, op);
	if (http("POST", path, NULL, NULL, 0, NULL, &r) < 0)
		return 1;
	doc = parse(&r);
	status = r.status;
	if (json_out) {
		printf("%s\n", r.body);
		yajl_tree_free(doc);
		resp_free(&r);
		return status / 100 == 2 ? 0 : 1;
	}
	if (status == 404) {
		printf("%s: ERROR (no such process)\n", name);
	} else if (status == 409 && strstr(err_message(doc), "already started")) {
		printf("%s: ERROR (already started)\n", name);
	} else if (status == 409 && strstr(err_message(doc), "not running")) {
		printf("%s: ERROR (not running)\n", name);
	} else if (status / 100 != 2) {
		printf("%s: ERROR (%s)\n", name, err_message(doc));
	}
	yajl_tree_free(doc);
	resp_free(&r);
	if (status / 100 != 2)
		return 1;
	if (!strcmp(op, "stop")) {
		wait_state(name, "STOPPED,EXITED,FATAL", state, sizeof(state));
		printf("%s: stopped\n", name);
		return 0;
	}
	if (!strcmp(op, "restart")) {
		printf("%s: stopped\n", name);
	}
	wait_state(name, "RUNNING,FATAL,EXITED,STOPPED", state, sizeof(state));
	if (!strcmp(state, "RUNNING")) {
		printf("%s: started\n", name);
		return 0;
	}
	printf("%s: ERROR (%s)\n", name, !strcmp(state, "FATAL") ? "spawn error" : "abnormal termination");
	return 1;
}

static int cmd_ctl(const char *op, int argc, char **argv)
{
	int rc = 0;
	if (argc == 0) {
		printf("Error: %s requires a process name\n", op);
		return 1;
	}
	if (argc == 1 && !strcmp(argv[0], "all")) {
		yajl_val doc, apps;
		if (get_apps(&doc, &apps) < 0)
			return 1;
		for (size_t i = 0; i < apps->u.array.len; i++) {
			const char *st = jstr(apps->u.array.values[i], "state") ?: "";
			bool running = !stopped_state(st);
			if ((!strcmp(op, "start") && running) || (!strcmp(op, "stop") && !running))
				continue;
			rc |= ctl_one(op, jstr(apps->u.array.values[i], "name"));
		}
		yajl_tree_free(doc);
		return rc;
	}
	for (int i = 0; i < argc; i++)
		rc |= ctl_one(op, argv[i]);
	return rc;
}

/* ---- tail --------------------------------------------------------------------------- */

static int cmd_tail(int argc, char **argv)
{
	bool follow = false;
	const char *name = NULL, *stream = "stdout";
	char path[512];
	long long last = -1;
	unsigned long bytes = CTL_TAIL_BYTES;

	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "-f"))
			follow = true;
		else if (argv[i][0] == '-' && isdigit((unsigned char)argv[i][1]))
			bytes = strtoul(argv[i] + 1, NULL, 10);
		else if (!name)
			name = argv[i];
		else
			stream = argv[i];
	}
	if (!name) {
		printf("Error: too few arguments\n");
		return 1;
	}
	if (strcmp(stream, "stdout") && strcmp(stream, "stderr")) {
		printf("Error: bad channel '%s'\n", stream);
		return 1;
	}
	for (;;) {
		struct resp r;
		long long size = 0;
		snprintf(path, sizeof(path), "/apps/%s/log?stream=%s&tail=%lu", name, stream,
		         last < 0 ? bytes : 4194304ul);
		if (http("GET", path, NULL, NULL, 0, NULL, &r) < 0)
			return 1;
		if (r.status != 200) {
			yajl_val doc = parse(&r);
			printf("%s: ERROR (%s)\n", name, r.status == 404 ? "no such process" : err_message(doc));
			yajl_tree_free(doc);
			resp_free(&r);
			return 1;
		}
		for (char *h = r.head; (h = strchr(h, '\n')); h++)
			if (!strncasecmp(h + 1, "content-range: bytes ", 21)) {
				char *slash = strchr(h, '/');
				if (slash)
					size = strtoll(slash + 1, NULL, 10);
			}
		if (last < 0) {
			fwrite(r.body, 1, r.len, stdout);
		} else if (size > last) { /* the new bytes are the end of the answer */
			size_t want = (size_t)(size - last);
			if (want > r.len)
				want = r.len;
			fwrite(r.body + r.len - want, 1, want, stdout);
		} else if (size < last) { /* rotated: what is there now is new */
			fwrite(r.body, 1, r.len, stdout);
		}
		fflush(stdout);
		last = size ? size : (long long)r.len;
		resp_free(&r);
		if (!follow)
			return 0;
		usleep(500000);
	}
}

/* ---- the rest ---------------------------------------------------------------------------- */

static int plain(const char *method, const char *path, const char *body)
{
	struct resp r;
	int ok;
	if (http(method, path, body ? "application/json" : NULL, body, body ? strlen(body) : 0, NULL, &r) < 0)
		return 1;
	ok = r.status / 100 == 2;
	if (ok || json_out) {
		fwrite(r.body, 1, r.len, ok ? stdout : stderr);
		fputc('\n', ok ? stdout : stderr);
	} else {
		yajl_val doc = parse(&r);
		fprintf(stderr, "sbxctl: %s\n", err_message(doc));
		yajl_tree_free(doc);
	}
	resp_free(&r);
	return ok ? 0 : 1;
}

static int cmd_policy(int argc, char **argv)
{
	static const char *const keys[] = { "execShell", "schedulerScript", "runPython", "runNode" };
	char body[256] = "{";
	if (argc == 0)
		return plain("GET", "/exec-policy", NULL);
	for (int i = 0; i < argc; i++) {
		char *eq = strchr(argv[i], '=');
		bool known = false;
		if (!eq || (strcmp(eq + 1, "on") && strcmp(eq + 1, "off"))) {
			fprintf(stderr, "sbxctl: policy KEY=on|off (keys: execShell schedulerScript runPython runNode)\n");
			return 2;
		}
		for (size_t k = 0; k < 4; k++)
			known |= (size_t)(eq - argv[i]) == strlen(keys[k]) && !strncmp(argv[i], keys[k], strlen(keys[k]));
		if (!known) {
			fprintf(stderr, "sbxctl: unknown policy key %.*s\n", (int)(eq - argv[i]), argv[i]);
			return 2;
		}
		snprintf(body + strlen(body), sizeof(body) - strlen(body), "%s\"%.*s\":%s", i ? "," : "",
		         (int)(eq - argv[i]), argv[i], strcmp(eq + 1, "on") ? "false" : "true");
	}
	strncat(body, "}", sizeof(body) - strlen(body) - 1);
	return plain("PUT", "/exec-policy", body);
}

static int cmd_sandboxes(void)
{
	struct resp r;
	yajl_val doc, list;
	if (json_out)
		return plain("GET", "/sandboxes", NULL);
	if (http("GET", "/sandboxes", NULL, NULL, 0, NULL, &r) < 0)
		return 1;
	doc = parse(&r);
	list = doc ? yajl_tree_get(doc, (const char *[]){ "sandboxes", NULL }, yajl_t_array) : NULL;
	if (r.status != 200 || !list) {
		fprintf(stderr, "sbxctl: %s\n", err_message(doc));
		yajl_tree_free(doc);
		resp_free(&r);
		return 1;
	}
	for (size_t i = 0; i < list->u.array.len; i++)
		printf("%-16s %s\n", jstr(list->u.array.values[i], "id") ?: "", jstr(list->u.array.values[i], "name") ?: "");
	yajl_tree_free(doc);
	resp_free(&r);
	return 0;
}

/* JSON string escaping of arbitrary text into a growing buffer */
static char *json_quote(const char *s, size_t n)
{
	char *out = malloc(n * 6 + 3), *p = out;
	if (!out)
		return NULL;
	*p++ = '"';
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == '"' || c == '\\') {
			*p++ = '\\';
			*p++ = (char)c;
		} else if (c < 0x20) {
			p += sprintf(p, "\\u%04x", c);
		} else {
			*p++ = (char)c;
		}
	}
	*p++ = '"';
	*p = '\0';
	return out;
}

static char *read_stdin(size_t *ret_len)
{
	size_t cap = 4096, len = 0;
	char *buf = malloc(cap);
	ssize_t n;
	while (buf && (n = read(0, buf + len, cap - len - 1)) > 0) {
		len += (size_t)n;
		if (len + 1 == cap) {
			char *nb = cap > (8u << 20) ? NULL : realloc(buf, cap * 2);
			if (!nb) {
				free(buf);
				return NULL;
			}
			buf = nb;
			cap *= 2;
		}
	}
	if (buf)
		buf[len] = '\0';
	*ret_len = len;
	return buf;
}

/* The id of a sandbox named by its id or its name. */
static int sandbox_id(const char *key, char *id, size_t sz)
{
	struct resp r;
	yajl_val doc, list;
	int found = -1;
	if (http("GET", "/sandboxes", NULL, NULL, 0, NULL, &r) < 0)
		return -1;
	doc = parse(&r);
	list = doc ? yajl_tree_get(doc, (const char *[]){ "sandboxes", NULL }, yajl_t_array) : NULL;
	for (size_t i = 0; list && i < list->u.array.len; i++) {
		const char *sid = jstr(list->u.array.values[i], "id"), *nm = jstr(list->u.array.values[i], "name");
		if ((sid && !strcmp(sid, key)) || (nm && !strcmp(nm, key))) {
			snprintf(id, sz, "%s", sid);
			found = 0;
			break;
		}
	}
	if (found < 0)
		fprintf(stderr, "sbxctl: no sandbox %s\n", key);
	yajl_tree_free(doc);
	resp_free(&r);
	return found;
}

static int cmd_run(int argc, char **argv)
{
	const char *sbx = NULL, *lang = "sh";
	char *code = NULL, id[128], path[256];
	size_t code_len = 0;
	int i, rc = 1;
	struct resp r;
	yajl_val doc;

	for (i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "--")) {
			i++;
			break;
		}
		if (!strcmp(argv[i], "--language") && i + 1 < argc)
			lang = argv[++i];
		else if (!sbx)
			sbx = argv[i];
		else
			break;
	}
	if (!sbx) {
		fprintf(stderr, "usage: sbxctl run SANDBOX [--language sh|python|node] -- CODE\n");
		return 2;
	}
	if (i < argc) { /* the rest is the code, joined by spaces */
		size_t total = 1;
		for (int j = i; j < argc; j++)
			total += strlen(argv[j]) + 1;
		if (!(code = calloc(1, total)))
			return 1;
		for (int j = i; j < argc; j++) {
			strcat(code, argv[j]);
			if (j + 1 < argc)
				strcat(code, " ");
		}
		code_len = strlen(code);
	} else if (!(code = read_stdin(&code_len))) {
		return 1;
	}
	if (sandbox_id(sbx, id, sizeof(id)) < 0) {
		free(code);
		return 1;
	}
	char *q = json_quote(code, code_len), *l = json_quote(lang, strlen(lang)), *body = NULL;
	free(code);
	if (!q || !l || asprintf(&body, "{\"language\":%s,\"code\":%s}", l, q) < 0) {
		free(q);
		free(l);
		return 1;
	}
	free(q);
	free(l);
	snprintf(path, sizeof(path), "/sandboxes/%s/runs", id);
	if (http("POST", path, "application/json", body, strlen(body), NULL, &r) < 0) {
		free(body);
		return 1;
	}
	free(body);
	doc = parse(&r);
	if (json_out) {
		fwrite(r.body, 1, r.len, stdout);
		fputc('\n', stdout);
		rc = r.status == 200 ? (int)jint(doc, "exitCode") : 1;
	} else if (r.status != 200) {
		fprintf(stderr, "sbxctl: %s\n", err_message(doc));
	} else {
		const char *out = jstr(doc, "stdout"), *err = jstr(doc, "stderr");
		yajl_val ec = yajl_tree_get(doc, (const char *[]){ "exitCode", NULL }, yajl_t_any);
		fputs(out ? out : "", stdout);
		fputs(err ? err : "", stderr);
		rc = ec && YAJL_IS_INTEGER(ec) ? (int)YAJL_GET_INTEGER(ec) : 128 + (int)jint(doc, "signal");
	}
	yajl_tree_free(doc);
	resp_free(&r);
	return rc;
}

/* ---- sbxctl mcp: newline-delimited JSON-RPC on stdio <-> POST /mcp ------------------------ */

static int cmd_mcp(void)
{
	char sid[256] = "", *line = NULL;
	size_t cap = 0;
	ssize_t n;
	setvbuf(stdout, NULL, _IOLBF, 0);
	while ((n = getline(&line, &cap, stdin)) > 0) {
		char extra[300] = "";
		struct resp r;
		while (n && (line[n - 1] == '\n' || line[n - 1] == '\r'))
			line[--n] = '\0';
		if (!n)
			continue;
		if (sid[0])
			snprintf(extra, sizeof(extra), "Mcp-Session-Id: %s\r\n", sid);
		if (http("POST", "/mcp", NULL, line, (size_t)n, extra, &r) < 0)
			break;
		for (char *h = r.head; (h = strchr(h, '\n')); h++)
			if (!strncasecmp(h + 1, "mcp-session-id:", 15)) {
				char *v = h + 16;
				while (*v == ' ')
					v++;
				snprintf(sid, sizeof(sid), "%.*s", (int)strcspn(v, "\r\n"), v);
			}
		if (r.len) {
			/* a JSON answer is one line; an event stream carries it in data: lines */
			char *body = r.body;
			if (strncmp(body, "event:", 6) == 0 || strncmp(body, "data:", 5) == 0) {
				for (char *d = strstr(body, "data:"); d; d = strstr(d + 1, "\ndata:")) {
					char *start = d + (d[0] == '\n' ? 6 : 5);
					while (*start == ' ')
						start++;
					printf("%.*s\n", (int)strcspn(start, "\r\n"), start);
				}
			} else {
				for (char *c = body; *c; c++)
					if (*c == '\n' || *c == '\r')
						*c = ' ';
				printf("%s\n", body);
			}
		} else if (r.status / 100 != 2) {
			/* no body: answer a request with an error so the client is not left waiting */
			fprintf(stderr, "sbxctl mcp: HTTP %d from /mcp\n", r.status);
		}
		resp_free(&r);
	}
	free(line);
	return 0;
}

/* ---- main ---------------------------------------------------------------------------- */

static void usage(FILE *f)
{
	fprintf(f,
	        "usage: sbxctl [--url http://127.0.0.1:7420] [--data-dir DIR] [--json] COMMAND\n"
	        "  status [NAME...]          apps as supervisorctl shows them (exit 3: one is\n"
	        "                            stopped, 4: unknown name)\n"
	        "  start|stop|restart NAME... (or all)\n"
	        "  tail [-f] [-BYTES] NAME [stdout|stderr]\n"
	        "  caps                      what this machine can isolate\n"
	        "  policy [KEY=on|off ...]   the ExecPolicy\n"
	        "  run SANDBOX [--language sh|python|node] -- CODE   (stdin when no CODE)\n"
	        "  sandboxes\n"
	        "  mcp                       MCP over stdio, bridged to sbxd's /mcp\n"
	        "  version\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "url", required_argument, NULL, 'u' }, { "data-dir", required_argument, NULL, 'd' },
		{ "json", no_argument, NULL, 'j' },     { "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char data_dir[4096] = "";
	const char *url = getenv("SBX_URL"), *env_token = getenv("SBX_TOKEN");
	int o;

	signal(SIGPIPE, SIG_IGN);
	while ((o = getopt_long(argc, argv, "+hj", opts, NULL)) != -1) {
		switch (o) {
		case 'u':
			url = optarg;
			break;
		case 'd':
			snprintf(data_dir, sizeof(data_dir), "%s", optarg);
			break;
		case 'j':
			json_out = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind >= argc) {
		usage(stderr);
		return 2;
	}
	if (url) {
		const char *p = strncmp(url, "http://", 7) == 0 ? url + 7 : url, *c;
		if (*p == '[' && (c = strchr(p, ']'))) {
			snprintf(host, sizeof(host), "%.*s", (int)(c - p - 1), p + 1);
			c = strchr(c, ':');
		} else {
			c = strrchr(p, ':');
			snprintf(host, sizeof(host), "%.*s", c ? (int)(c - p) : (int)strcspn(p, "/"), p);
		}
		if (c)
			snprintf(port, sizeof(port), "%.*s", (int)strcspn(c + 1, "/"), c + 1);
	}
	if (!data_dir[0] && config_default_data_dir(geteuid() == 0, data_dir, sizeof(data_dir)) < 0)
		data_dir[0] = '\0';
	/* no daemon named: its control socket when we may use it, else loopback and the token */
	if (!url && data_dir[0]) {
		int fd;
		snprintf(sock_path, sizeof(sock_path), "%s/sbxd.sock", data_dir);
		if ((fd = dial_control(sock_path)) >= 0)
			close(fd);
		else
			sock_path[0] = '\0';
	}
	if (env_token && *env_token) {
		snprintf(token, sizeof(token), "%s", env_token);
	} else if (!sock_path[0]) {
		char path[4200];
		FILE *f;
		snprintf(path, sizeof(path), "%s/api.token", data_dir);
		if (data_dir[0] && (f = fopen(path, "re"))) {
			if (fgets(token, sizeof(token), f))
				token[strcspn(token, "\r\n")] = '\0';
			fclose(f);
		}
	}
	const char *cmd = argv[optind];
	int rest = argc - optind - 1;
	char **args = argv + optind + 1;
	if (!strcmp(cmd, "status"))
		return cmd_status(rest, args);
	if (!strcmp(cmd, "start") || !strcmp(cmd, "stop") || !strcmp(cmd, "restart"))
		return cmd_ctl(cmd, rest, args);
	if (!strcmp(cmd, "tail"))
		return cmd_tail(rest, args);
	if (!strcmp(cmd, "caps"))
		return plain("GET", "/caps", NULL);
	if (!strcmp(cmd, "policy"))
		return cmd_policy(rest, args);
	if (!strcmp(cmd, "run"))
		return cmd_run(rest, args);
	if (!strcmp(cmd, "sandboxes"))
		return cmd_sandboxes();
	if (!strcmp(cmd, "mcp"))
		return cmd_mcp();
	if (!strcmp(cmd, "version")) {
		printf("sbxctl %s\n", SBX_BUILD_ID);
		return 0;
	}
	fprintf(stderr, "*** Unknown syntax: %s\n", cmd);
	usage(stderr);
	return 2;
}
