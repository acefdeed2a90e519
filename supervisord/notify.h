/* sd_notify(3) for sbxd (notify.c): READY=1 once both children run, STATUS= lines, and
 * STOPPING=1 at shutdown. */
#ifndef SBX_SBXD_NOTIFY_H
#define SBX_SBXD_NOTIFY_H

#include <stdbool.h>
#include <stdint.h>

/* Take $NOTIFY_SOCKET (and clear it from the environment). */
void notify_init(void);
bool notify_enabled(void);
/* WatchdogSec= of the unit ($WATCHDOG_USEC, taken and cleared with the socket): how often
 * WATCHDOG=1 must come, 0 when no watchdog is asked for. */
uint64_t notify_watchdog_usec(void);
/* Send "KEY=value\n..." to the service manager: 0 (also when there is none) or -errno. */
int notify_send(const char *text);

#endif
