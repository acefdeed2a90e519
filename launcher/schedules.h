/* Schedules (DESIGN.md §11): scripts the launcher runs by itself, every N seconds or at
 * the minutes of a cron(5) expression (common/cron.h), each through run_code() with entrance
 * "scheduler" like any other run: the ExecPolicy's schedulerScript switch decides between
 * the sandbox's fence and no sandbox ("isolation": "none"), and every run is in the
 * sandbox's history. A run still going when the next time comes makes that time skipped,
 * never a second run at once. A schedule goes with its sandbox. */
#ifndef SBX_LAUNCHER_SCHEDULES_H
#define SBX_LAUNCHER_SCHEDULES_H

#include "launcher.h"
#include "proto_chan.h"

#define SCHED_MAX 256u /* schedules per daemon */

int sched_init(struct launcher *L);
void sched_shutdown(void);
/* The sandbox was deleted (its schedules' rows went with it): forget them. */
void sched_sandbox_gone(const char *sandbox_id);

void sched_h_put(struct proto_chan *ch, const struct proto_hdr *h, void *m, int fd, void *arg);
void sched_h_list(struct proto_chan *ch, const struct proto_hdr *h, void *m, int fd, void *arg);
void sched_h_delete(struct proto_chan *ch, const struct proto_hdr *h, void *m, int fd, void *arg);

#endif
