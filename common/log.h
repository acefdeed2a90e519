/* Logging in the OpenBSD daemon style: log_warn appends strerror(errno), log_warnx not.
 * Each line is prefixed with the process name; fatal() exits and is for start-up only. */
#ifndef SBX_LOG_H
#define SBX_LOG_H

#include <stdarg.h>
#include <stdbool.h>

enum log_level { LOG_LVL_ERROR = 0, LOG_LVL_WARN, LOG_LVL_INFO, LOG_LVL_DEBUG };

/* Is stderr the systemd journal's stream ($JOURNAL_STREAM)? Then log_init makes every line
 * "<PRIORITY>proc[pid] level: message", the journal keeping time and priority. */
bool log_stderr_is_journal(void);
void log_init(const char *procname, enum log_level level);
void log_set_level(enum log_level level);
int log_parse_level(const char *s, enum log_level *ret); /* "error|warn|info|debug" */

void log_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_warnx(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
_Noreturn void fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
_Noreturn void fatalx(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
