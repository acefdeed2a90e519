/* Space Apps (DESIGN.md §11): long-lived programs the launcher keeps running, each in the
 * fence of its own sandbox ("app:NAME"), whose workdir is the app's installation
 * directory and whose HOME is <dir>/home, the same path at every start.
 *
 * Supervision follows supervisord's rules and vocabulary: STOPPED, STARTING, RUNNING,
 * BACKOFF, STOPPING, EXITED, FATAL; a program that ends within startsecs goes to BACKOFF
 * and is tried again after 1, 2, 3... seconds, and FATAL after startretries such tries;
 * autorestart false | true | unexpected (an exit code not in exitcodes). A stop sends
 * stopsignal, then SIGKILL after stopwaitsecs.
 *
 * Each start goes through the runner like a run (its cgroups, the registry mirrored to
 * sbxd, bwrap --die-with-parent), so sbxd's shutdown and a dying sbxd take apps with them.
 * Output goes to <data>/logs/apps/NAME.{out,err}.log, rotated at APPS_LOG_ROTATE_BYTES
 * with APPS_LOG_BACKUPS older files.
 *
 * Port reclaim: before a start, when the app's port already answers on the host, the
 * listening socket's owner is looked up in /proc; only a process whose working directory
 * is inside the app's directory is ended (SIGTERM, SIGKILL), once per app per launcher
 * run. Anyone else is left alone and logged, and the start fails with that reason. */
#ifndef SBX_LAUNCHER_APPS_H
#define SBX_LAUNCHER_APPS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "launcher.h"
#include "proto.h"
#include "store.h"

#define APPS_MAX               256u         /* apps per daemon */
#define APPS_LOG_ROTATE_BYTES  (1u << 20)   /* a log file is rotated past this size */
#define APPS_LOG_BACKUPS       3u           /* NAME.out.log.1 .. .3 */
#define APPS_STARTSECS_MAX     3600u
#define APPS_STARTRETRIES_MAX  100u
#define APPS_STOPWAITSECS_MAX  3600u
#define APPS_RECLAIM_WAIT_MS   500u         /* after SIGTERM, then again after SIGKILL */
#define APPS_HOME              "home"       /* HOME, inside the app's directory */
#define APPS_RESTART_DELAY_MS  100u         /* EXITED -> STARTING by autorestart */

/* Defaults (supervisord's, but autorestart: unexpected) */
#define APPS_DEFAULT_STARTSECS    1u
#define APPS_DEFAULT_STARTRETRIES 3u
#define APPS_DEFAULT_STOPSIGNAL   15u
#define APPS_DEFAULT_STOPWAITSECS 10u

/* Load the stored apps and start those with autostart. */
int apps_init(struct launcher *L);
/* The launcher is stopping: no restarts from here on. */
void apps_shutdown(void);

/* Validate an app name: 1..PROTO_APP_NAME_MAX of [a-z0-9_.-], starting alphanumeric. */
bool apps_name_valid(const char *name);
/* Check the app members of a create / update (in->app_mask); reason says why not. */
int apps_check(const struct msg_APP_PUT *in, char *reason, size_t reasonsz);
/* Does the sandbox belong to an app? Its name then, or NULL. */
const char *apps_owner_of(const char *sandbox_id);

/* The wire side (dispatch.c's table). */
void apps_h_put(struct proto_chan *ch, const struct proto_hdr *h, void *m, int fd, void *arg);
void apps_h_get(struct proto_chan *ch, const struct proto_hdr *h, void *m, int fd, void *arg);
void apps_h_list(struct proto_chan *ch, const struct proto_hdr *h, void *m, int fd, void *arg);
void apps_h_delete(struct proto_chan *ch, const struct proto_hdr *h, void *m, int fd, void *arg);
void apps_h_ctl(struct proto_chan *ch, const struct proto_hdr *h, void *m, int fd, void *arg);
void apps_h_log(struct proto_chan *ch, const struct proto_hdr *h, void *m, int fd, void *arg);

/* Apps by state, for GET /metrics (counts[APP_STATE_MAX_ + 1]). */
void apps_count_states(uint32_t *counts);

/* Is path inside (or equal to) dir? Both absolute and canonical. */
bool apps_path_inside(const char *path, const char *dir);

#endif
