/* Integration-test harness: a real sbxd on a free loopback port with a fresh data dir, a
 * blocking HTTP/1.1 client over a plain TCP socket, and JSON access through yajl_tree.
 * Everything here is blocking and simple on purpose: a test reads top to bottom.
 *
 * Logs: each test's daemon writes <root>/sbxd.log. The runner (a Criterion report hook in
 * daemon.c) prints that log when the test failed, crashed or timed out, then removes the
 * root, so a failure always shows what the daemon said. */
#ifndef SBX_HARNESS_H
#define SBX_HARNESS_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <yajl/yajl_tree.h>

#define HTTP_RESP_MAX        (96u * 1024u * 1024u) /* a response larger than this is an error */
#define HTTP_HEAD_MAX        (64u * 1024u)        /* status line + headers */
#define HTTP_EXTRA_HDRS_MAX  16u                  /* extra headers per request */
#define HTTP_TIMEOUT_S       30                   /* SO_RCVTIMEO / SO_SNDTIMEO default */
#define SBXD_START_TIMEOUT_MS 10000u              /* until /health answers 200 */
#define SBXD_STOP_TIMEOUT_MS  5000u               /* SIGTERM grace before SIGKILL */
#define SBX_TOKEN_MAX        256u
#define JSON_PATH_DEPTH_MAX  16u
#define SBX_IT_ROOT_MAX      1024u
#define SBXD_EXTRA_ARGS_MAX  8u                   /* extra sbxd options per test */ /* the temp root and bin dir paths; children fit PATH_MAX */

struct sbxd {
	pid_t pid;
	uint16_t port;
	char root[SBX_IT_ROOT_MAX]; /* temp dir holding data/ and sbxd.log */
	char data_dir[SBX_IT_ROOT_MAX + 32]; /* <root>/data */
	char log_path[SBX_IT_ROOT_MAX + 32]; /* <root>/sbxd.log */
	char bin_dir[SBX_IT_ROOT_MAX];
	char token[SBX_TOKEN_MAX];
	char secret[64]; /* SBX_TEST_SECRET put into sbxd's own environment */
	char docker[SBX_IT_ROOT_MAX]; /* set before sbxd_start: passed as --docker */
	char bwrap[SBX_IT_ROOT_MAX];  /* set before sbxd_start: passed as --bwrap */
	char listen_host[64];         /* set before sbxd_start: --listen HOST:port ("" = 127.0.0.1) */
	const char *extra_args[SBXD_EXTRA_ARGS_MAX + 1]; /* set before sbxd_start: more options */
	char tag[16]; /* set before sbxd_start: a second daemon in one test gets root "<..>.<tag>" */
	int exit_status;              /* sbxd's wait status when it exited during start-up */
};

struct http_resp {
	int status;      /* HTTP status, or -errno when the exchange failed */
	char *head;      /* status line and headers, NUL-terminated */
	char *body;      /* NUL-terminated (binary bodies: use body_len) */
	size_t body_len;
	yajl_val json;   /* parsed body, NULL when not JSON */
};
void http_resp_clear(struct http_resp *r);
#define _cleanup_resp_ __attribute__((cleanup(http_resp_clear)))

/* ---- HTTP ----------------------------------------------------------------------------- */

/* Send `req` (a whole raw request) to 127.0.0.1:port, read to EOF, parse. */
struct http_resp http_raw(uint16_t port, const void *req, size_t req_len, int timeout_s);

/* Method/path/body with exactly the given headers (NULL-terminated "Name: value" list)
 * plus Content-Length and Connection: close. No Host, no token: the caller decides. */
struct http_resp http_send(uint16_t port, const char *method, const char *path,
			   const char *const *headers, const void *body, size_t body_len,
			   int timeout_s);

/* The usual request to a daemon: Host 127.0.0.1:P, the bearer token, a JSON body (or
 * NULL), then any extra headers (a NULL-terminated varargs list of "Name: value"). */
struct http_resp http_req(const struct sbxd *d, const char *method, const char *path,
			  const char *json_body, ...) __attribute__((sentinel));

/* A response header's value (case-insensitive name), copied into buf; 0 or -ENOENT. */
int http_header(const struct http_resp *r, const char *name, char *buf, size_t bufsz);

/* Assert a response's status, showing the body when it differs (needs criterion.h). */
#define assert_status(r, want)                                                                     \
	cr_assert((r).status == (want), "%s:%d: status %d, want %d; body: %s", __FILE__,          \
		  __LINE__, (r).status, (want), (r).body ? (r).body : "(none)")

/* ---- JSON ----------------------------------------------------------------------------- */

/* Dot-separated paths ("error.code", "processes.launcher.pid"); NULL when absent. */
yajl_val js_get(yajl_val root, const char *path);
const char *js_str(yajl_val root, const char *path);   /* NULL unless a string */
bool js_is_true(yajl_val root, const char *path);      /* exactly JSON true */
bool js_is_false(yajl_val root, const char *path);     /* exactly JSON false */
long long js_int(yajl_val root, const char *path, long long dflt);
/* A malloc'd JSON string literal (quotes included) for any bytes; NULL on ENOMEM. */
char *js_quote(const char *s, size_t len);

/* ---- the daemon ----------------------------------------------------------------------- */

/* Start sbxd (SBX_BIN_DIR, else ../bin next to the test) and wait for /health 200. */
int sbxd_start(struct sbxd *d);
/* SIGTERM, wait, SIGKILL fallback (that pid only); removes the data dir, keeps the log
 * for the runner's report hook. Safe to call twice or on a daemon that never started. */
void sbxd_stop(struct sbxd *d);
/* Start a new sbxd on the data dir of one that is gone (killed and reaped by the caller,
 * d->pid set to -1): the same token, a fresh port. 0 or -errno as sbxd_start. */
int sbxd_restart(struct sbxd *d);
void sbxd_dump_log(const struct sbxd *d);

/* Criterion fixture: starts `sbx_it` (a per-test daemon) or fails the test with its log. */
extern struct sbxd sbx_it;
void sbx_it_init(void);
void sbx_it_fini(void);

/* Print "SKIP: bwrap not installed" and skip the current test when bwrap is missing. */
void sbx_require_bwrap(void);
/* Write an executable (0755) shell script `dir/name` with the given body; dir is made
 * 0755 so a jail uid can run it too. Fills path (the script's path). 0 or -errno. */
int sbx_fake_program(const char *dir, const char *name, const char *script, char *path,
                     size_t pathsz);

/* POST /sandboxes with `json` (NULL = {"name":"t"}); the new id copied into ret_id.
 * Fails the current test (with the response) when creation does not succeed. */
void sbx_create(const struct sbxd *d, const char *json, char *ret_id, size_t idsz);
/* POST /sandboxes/{id}/runs with the given body. */
struct http_resp sbx_run(const struct sbxd *d, const char *id, const char *json_body);
/* The host uid owning DATA/sandboxes/<id> (the jail uid), or -errno. */
long sbx_workdir_uid(const struct sbxd *d, const char *id);
int sbx_workdir_path(const struct sbxd *d, const char *id, char *buf, size_t bufsz);

/* A run body {"language","code"[,"stdin"][,"timeoutMs"]}, malloc'd (NULL on ENOMEM). */
char *run_body(const char *language, const char *code, const char *stdin_data,
	       unsigned timeout_ms);
/* A list either as the root array or under root[key] ({"runs": [...]}); NULL if neither. */
yajl_val js_array(yajl_val root, const char *key);

/* One request on a background thread, for tests that act while a run is in flight. */
struct bg_req {
	const struct sbxd *d;
	char method[16];
	char path[512];
	char *body;
	int timeout_s;
	unsigned long long started_ms, finished_ms;
	struct http_resp resp;
	unsigned long thread; /* pthread_t */
	bool running;
	char extra[128]; /* one more header ("Accept: text/event-stream"), or "" */
};
int bg_req_start(struct bg_req *b, const struct sbxd *d, const char *method, const char *path,
		 const char *json_body, int timeout_s);
/* The same with one extra header line. */
int bg_req_start_hdr(struct bg_req *b, const struct sbxd *d, const char *method, const char *path,
		     const char *json_body, int timeout_s, const char *extra);
/* Wait for it; the response moves to the caller (clear it). */
struct http_resp bg_req_join(struct bg_req *b);
unsigned long long mono_ms(void);

/* ---- processes ------------------------------------------------------------------------ */

#define PROC_SCAN_MAX 65536u /* /proc entries looked at per scan */

/* How many live processes (zombies excluded) have `marker` in their cmdline. */
int proc_count_marker(const char *marker);
/* How many live processes run with real uid `uid`. */
int proc_count_uid(uid_t uid);
/* Poll until proc_count_marker(marker) == 0, up to timeout_ms; returns the last count. */
int proc_wait_marker_gone(const char *marker, unsigned timeout_ms);
int proc_wait_uid_gone(uid_t uid, unsigned timeout_ms);
/* The pid of a live process with `marker` in its cmdline, or -ESRCH. */
pid_t proc_find_marker(const char *marker);
/* The pid of a child of `ppid` whose comm is `comm`, or -ESRCH. */
pid_t proc_child_by_comm(pid_t ppid, const char *comm);

/* A free TCP port on 127.0.0.1 (bind :0, read it back, close). */
int free_port(uint16_t *ret);
/* n random lowercase alphanumerics into buf (n < bufsz). */
void rand_alnum(char *buf, size_t n);
void sleep_ms(unsigned ms);

#endif
