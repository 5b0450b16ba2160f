/*
 * log.c - the logger, one of the two globals floe has (the other is the
 * configuration). Lines go to standard error; a supervisor collects them.
 */
#include "log.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static atomic_int current_level = LOG_LEVEL_INFO;

static const char *const level_names[] = {
	[LOG_LEVEL_ERROR] = "error",
	[LOG_LEVEL_WARN] = "warn",
	[LOG_LEVEL_INFO] = "info",
	[LOG_LEVEL_DEBUG] = "debug",
};

void log_set_level(enum log_level level)
{
	atomic_store(&current_level, (int)level);
}

bool log_level_parse(const char *name, enum log_level *out)
{
	for (size_t i = 0; i < sizeof(level_names) / sizeof(level_names[0]); i++) {
		if (strcmp(name, level_names[i]) == 0) {
			*out = (enum log_level)i;
			return true;
		}
	}
	return false;
}

bool log_enabled(enum log_level level)
{
	return (int)level <= atomic_load(&current_level);
}

void log_write(enum log_level level, const char *subsystem, const char *fmt, ...)
{
	static const char *const tags[] = { "ERROR", "WARN", "INFO", "DEBUG" };
	char line[2048];
	struct timespec ts;
	struct tm tm;
	size_t n;
	int w;
	va_list ap;

	if (!log_enabled(level))
		return;
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	n = strftime(line, sizeof(line), "%Y-%m-%dT%H:%M:%S", &tm);
	w = snprintf(line + n, sizeof(line) - n, ".%03ldZ %-5s [%s] ", ts.tv_nsec / 1000000L,
		     tags[level], subsystem);
	if (w > 0)
		n += (size_t)w;
	va_start(ap, fmt);
	w = vsnprintf(line + n, sizeof(line) - n, fmt, ap);
	va_end(ap);
	if (w > 0)
		n += (size_t)w;
	if (n >= sizeof(line) - 1)
		n = sizeof(line) - 2; /* truncated: keep the newline */
	line[n++] = '\n';
	/* One write per line keeps concurrent lines whole. */
	ssize_t r = write(STDERR_FILENO, line, n);
	(void)r;
}

const char *log_strerror(int e)
{
	static _Thread_local char buf[128];

	return strerror_r(e, buf, sizeof(buf));
}
