/* Tracing "syscalls" (docs/observe.md): any language, no ptrace. sbx-jail-init installs a
 * seccomp filter that turns the jail's open/openat/openat2/creat, execve/execveat,
 * connect/bind and unlink/rename family into user notifications, and hands the listener
 * to the launcher over a socket (BACKEND_CHILD_FD_NOTIFY). For each notification the
 * launcher reads the call's arguments from the caller's memory (paths, argv, the socket
 * address), checks the notification is still live, records one event in the run's trace
 * (launcher/trace.h), and lets the call continue (SECCOMP_USER_NOTIF_FLAG_CONTINUE).
 *
 * An observation, never a fence: the memory read is not what the kernel uses a moment
 * later (another thread may change it), and a call the jail's own filter refuses is never
 * reported. Reads of system libraries are filtered as for the language hooks. */
#ifndef SBX_LAUNCHER_SYSNOTIFY_H
#define SBX_LAUNCHER_SYSNOTIFY_H

#include <stdbool.h>
#include <sys/types.h>

#include <event2/event.h>

#include "trace.h"

#define SYSNOTIFY_ARGV_MAX  32u   /* argv entries read from an execve */
#define SYSNOTIFY_STR_MAX   1024u /* bytes of one path or argument read */
#define SYSNOTIFY_PER_WAKE  64u   /* notifications handled per wake-up */

struct sysnotify {
	int sock;      /* our end of the socket the listener arrives on, or -1 */
	int child_end; /* the jail's end until the child has it, or -1 */
	int listener;  /* the seccomp listener, or -1 */
	struct event *sock_ev, *ev;
	struct trace_run *trace; /* where the events go */
	struct event_base *base;
	unsigned long events;
};

/* Make the socket pair: child_end becomes BACKEND_CHILD_FD_NOTIFY in the run's child. */
int sysnotify_prepare(struct sysnotify *n, struct event_base *base, struct trace_run *trace);
/* After the fork: our copy of the jail's end is closed. */
void sysnotify_spawned(struct sysnotify *n);
/* The run ended: every pending notification is let continue, everything closed. */
void sysnotify_release(struct sysnotify *n);

#endif
