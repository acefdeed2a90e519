/* Logging to stderr (sbxd points stderr at its log file when not in the foreground). */
#include "log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const char *log_proc = "sbx";
static enum log_level log_level = LOG_LVL_INFO;
static bool log_journal; /* stderr is the journal: "<N>" priority prefixes, no timestamps */

/* systemd sets JOURNAL_STREAM to "DEV:INODE" of the stream it connected; it names our
 * stderr only while stderr is that stream (not once sbxd points it at its log file). */
bool log_stderr_is_journal(void)
{
	const char *js = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;
	return js && sscanf(js, "%llu:%llu", &dev, &ino) == 2 && fstat(STDERR_FILENO, &st) == 0 &&
	       (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
}

void log_init(const char *procname, enum log_level level)
{
	log_proc = procname;
	log_level = level;
	log_journal = log_stderr_is_journal();
}

void log_set_level(enum log_level level) { log_level = level; }

int log_parse_level(const char *s, enum log_level *ret)
{
	static const char *const names[] = { "error", "warn", "info", "debug" };
	for (int i = 0; i < 4; i++)
		if (s && strcmp(s, names[i]) == 0) {
			*ret = (enum log_level)i;
			return 0;
		}
	return -EINVAL;
}

__attribute__((format(printf, 3, 0)))
static void log_vemit(enum log_level lvl, int err, const char *fmt, va_list ap)
{
	static const char *const tags[] = { "error", "warn", "info", "debug" };
	char msg[1024];
	struct timespec ts;
	struct tm tm;

	if (lvl > log_level)
		return;
	vsnprintf(msg, sizeof(msg), fmt, ap);
	if (log_journal) { /* sd-daemon(3) priorities: err 3, warning 4, info 6, debug 7 */
		static const int prio[] = { 3, 4, 6, 7 };
		if (err)
			fprintf(stderr, "<%d>%s[%d] %s: %s: %s\n", prio[lvl], log_proc, (int)getpid(),
			        tags[lvl], msg, strerror(err));
		else
			fprintf(stderr, "<%d>%s[%d] %s: %s\n", prio[lvl], log_proc, (int)getpid(), tags[lvl], msg);
		fflush(stderr);
		return;
	}
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	if (err)
		fprintf(stderr, "%02d:%02d:%02d.%03ld %s[%d] %s: %s: %s\n", tm.tm_hour, tm.tm_min,
		        tm.tm_sec, ts.tv_nsec / 1000000, log_proc, (int)getpid(), tags[lvl], msg,
		        strerror(err));
	else
		fprintf(stderr, "%02d:%02d:%02d.%03ld %s[%d] %s: %s\n", tm.tm_hour, tm.tm_min,
		        tm.tm_sec, ts.tv_nsec / 1000000, log_proc, (int)getpid(), tags[lvl], msg);
	fflush(stderr);
}

#define LOG_FN(NAME, LVL, WITH_ERRNO)                                                              \
	void NAME(const char *fmt, ...)                                                            \
	{                                                                                          \
		int saved = errno;                                                                 \
		va_list ap;                                                                        \
		va_start(ap, fmt);                                                                 \
		log_vemit(LVL, WITH_ERRNO ? saved : 0, fmt, ap);                                   \
		va_end(ap);                                                                        \
		errno = saved;                                                                     \
	}
LOG_FN(log_warn, LOG_LVL_WARN, 1)
LOG_FN(log_warnx, LOG_LVL_WARN, 0)
LOG_FN(log_info, LOG_LVL_INFO, 0)
LOG_FN(log_debug, LOG_LVL_DEBUG, 0)

void fatal(const char *fmt, ...)
{
	int saved = errno;
	va_list ap;
	va_start(ap, fmt);
	log_vemit(LOG_LVL_ERROR, saved, fmt, ap);
	va_end(ap);
	exit(1);
}

void fatalx(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	log_vemit(LOG_LVL_ERROR, 0, fmt, ap);
	va_end(ap);
	exit(1);
}
