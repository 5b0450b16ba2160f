/*
 * log.h - levelled, subsystem-tagged log lines on standard error, as text
 * or as one JSON object a line (for log shippers).
 *
 * One line per call, written with a single write(2) so lines from worker
 * threads never interleave. The level and format are set once at start-up;
 * the request a thread is serving is the thread's own (log_set_request).
 */
#ifndef FLOE_LOG_H
#define FLOE_LOG_H

#include <stdbool.h>

enum log_level {
	LOG_LEVEL_ERROR = 0,
	LOG_LEVEL_WARN,
	LOG_LEVEL_INFO,
	LOG_LEVEL_DEBUG,
};

enum log_format {
	LOG_FORMAT_TEXT = 0, /* "<time> <LEVEL> [<subsystem>] <message>" */
	LOG_FORMAT_JSON,     /* {"time", "level", "component", "message",
			      *  "request_id"?, "principal"?} */
};

/* Sets the format of every line from now on. */
void log_set_format(enum log_format format);

/* Parses "text" or "json". Returns false if unknown. */
bool log_format_parse(const char *name, enum log_format *out);

/* The request the calling thread serves from now on (its id is copied;
 * NULL: none), as no principal yet. A JSON line carries it as
 * "request_id", with "principal". */
void log_set_request(const char *request_id);

/* The longest principal name a log line carries whole. */
#define LOG_PRINCIPAL_MAX 256

/* The principal the calling thread's request acts as from now on (copied;
 * NULL: none, logged as "anonymous"), until the next log_set_request. */
void log_set_principal(const char *principal);

/* The calling thread's principal, or NULL: valid until the thread's next
 * log_set_request or log_set_principal. */
const char *log_principal(void);

/* The calling thread's request id, or NULL: valid until the thread's
 * next log_set_request. */
const char *log_request(void);

/* Sets the most verbose level that is written. */
void log_set_level(enum log_level level);

/* Parses "error", "warn", "info" or "debug". Returns false if unknown. */
bool log_level_parse(const char *name, enum log_level *out);

/* True when a line of this level would be written. */
bool log_enabled(enum log_level level);

/* The text of errno value e for a log line: strerror_r into a buffer of
 * the calling thread's (strerror is not thread-safe). Valid until the
 * thread's next call. */
const char *log_strerror(int e);

/* Writes one line in the configured format. A message longer than a
 * line's room is cut; a JSON line stays a valid JSON object (control
 * characters escaped, malformed UTF-8 replaced by U+FFFD). */
void log_write(enum log_level level, const char *subsystem, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#define log_error(sub, ...) log_write(LOG_LEVEL_ERROR, sub, __VA_ARGS__)
#define log_warn(sub, ...) log_write(LOG_LEVEL_WARN, sub, __VA_ARGS__)
#define log_info(sub, ...) log_write(LOG_LEVEL_INFO, sub, __VA_ARGS__)
#define log_debug(sub, ...)                                           \
	do {                                                          \
		if (log_enabled(LOG_LEVEL_DEBUG))                     \
			log_write(LOG_LEVEL_DEBUG, sub, __VA_ARGS__); \
	} while (0)

#endif
