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
static atomic_int current_format = LOG_FORMAT_TEXT;
/* The request this thread serves; empty: none. Request ids are short
 * (http.c keeps at most 39 characters). */
static _Thread_local char thread_request[48];
/* The principal the request acts as; empty: none (anonymous). Longer
 * names are cut in the log. */
static _Thread_local char thread_principal[LOG_PRINCIPAL_MAX];

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

void log_set_format(enum log_format format)
{
	atomic_store(&current_format, (int)format);
}

bool log_format_parse(const char *name, enum log_format *out)
{
	if (strcmp(name, "text") == 0)
		*out = LOG_FORMAT_TEXT;
	else if (strcmp(name, "json") == 0)
		*out = LOG_FORMAT_JSON;
	else
		return false;
	return true;
}

void log_set_request(const char *request_id)
{
	size_t n = 0;

	/* Twice per request on the hot path: a plain bounded copy. */
	for (; request_id != NULL && request_id[n] != '\0' && n < sizeof(thread_request) - 1; n++)
		thread_request[n] = request_id[n];
	thread_request[n] = '\0';
	thread_principal[0] = '\0';
}

void log_set_principal(const char *principal)
{
	size_t n = 0;

	for (; principal != NULL && principal[n] != '\0' && n < sizeof(thread_principal) - 1; n++)
		thread_principal[n] = principal[n];
	thread_principal[n] = '\0';
}

const char *log_principal(void)
{
	return thread_principal[0] != '\0' ? thread_principal : NULL;
}

const char *log_request(void)
{
	return thread_request[0] != '\0' ? thread_request : NULL;
}

bool log_enabled(enum log_level level)
{
	return (int)level <= atomic_load(&current_level);
}

/* Room for a JSON line: the message (at most LOG_LINE_MAX bytes) may grow
 * six-fold when escaped; what does not fit is cut. */
#define LOG_LINE_MAX 2048
#define LOG_JSON_MAX (4 * LOG_LINE_MAX)

/* The bytes of the UTF-8 character at s (n bytes left), 0 when it is not
 * one (a stray or overlong byte, a surrogate, past U+10FFFF). */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	size_t need;
	unsigned char lo = 0x80, hi = 0xBF;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xC2 && s[0] <= 0xDF)
		need = 2;
	else if (s[0] >= 0xE0 && s[0] <= 0xEF)
		need = 3;
	else if (s[0] >= 0xF0 && s[0] <= 0xF4)
		need = 4;
	else
		return 0;
	if (s[0] == 0xE0)
		lo = 0xA0;
	else if (s[0] == 0xED)
		hi = 0x9F;
	else if (s[0] == 0xF0)
		lo = 0x90;
	else if (s[0] == 0xF4)
		hi = 0x8F;
	if (n < need || s[1] < lo || s[1] > hi)
		return 0;
	for (size_t k = 2; k < need; k++) {
		if ((s[k] & 0xC0) != 0x80)
			return 0;
	}
	return need;
}

/* Appends s (len bytes) to out as the inside of a JSON string, whole
 * characters only, leaving reserve bytes of out's cap free. */
static void json_escape(char *out, size_t cap, size_t *n, const char *str, size_t len,
			size_t reserve)
{
	const unsigned char *s = (const unsigned char *)str;
	char esc[8];

	for (size_t i = 0; i < len;) {
		const char *piece = esc;
		size_t plen = 2, adv = 1;
		unsigned char c = s[i];

		esc[0] = '\\';
		if (c == '"' || c == '\\') {
			esc[1] = (char)c;
		} else if (c == '\n') {
			esc[1] = 'n';
		} else if (c == '\r') {
			esc[1] = 'r';
		} else if (c == '\t') {
			esc[1] = 't';
		} else if (c < 0x20 || c == 0x7F) {
			(void)snprintf(esc, sizeof(esc), "\\u%04x", c);
			plen = 6;
		} else {
			adv = utf8_len(s + i, len - i);
			if (adv == 0) {
				piece = "\\ufffd";
				plen = 6;
				adv = 1;
			} else {
				piece = (const char *)s + i;
				plen = adv;
			}
		}
		if (*n + plen + reserve > cap)
			return;
		memcpy(out + *n, piece, plen);
		*n += plen;
		i += adv;
	}
}

static void json_put(char *out, size_t cap, size_t *n, const char *s)
{
	size_t len = strlen(s);

	if (*n + len > cap)
		return;
	for (size_t i = 0; i < len; i++)
		out[(*n)++] = s[i];
}

/* {"time", "level", "component", "message", "request_id"?, "principal"?}:
 * the fixed tail is kept room for, so the object always closes. */
static size_t json_line(char *out, size_t cap, const char *time, enum log_level level,
			const char *subsystem, const char *message, size_t mlen)
{
	const char *rid = log_request();
	const char *who = log_principal();
	size_t tail = 40 + (rid != NULL ? strlen(rid) * 6 + 64 : 0) +
		      (rid != NULL && who != NULL ? strlen(who) * 6 : 0);
	size_t n = 0;

	json_put(out, cap, &n, "{\"time\":\"");
	json_put(out, cap, &n, time);
	json_put(out, cap, &n, "\",\"level\":\"");
	json_put(out, cap, &n, level_names[level]);
	json_put(out, cap, &n, "\",\"component\":\"");
	json_escape(out, cap, &n, subsystem, strlen(subsystem), tail);
	json_put(out, cap, &n, "\",\"message\":\"");
	json_escape(out, cap, &n, message, mlen, tail);
	json_put(out, cap, &n, "\"");
	if (rid != NULL) {
		json_put(out, cap, &n, ",\"request_id\":\"");
		json_escape(out, cap, &n, rid, strlen(rid), 4);
		json_put(out, cap, &n, "\",\"principal\":\"");
		if (who != NULL)
			json_escape(out, cap, &n, who, strlen(who), 4);
		else
			json_put(out, cap, &n, "anonymous");
		json_put(out, cap, &n, "\"");
	}
	json_put(out, cap, &n, "}\n");
	return n;
}

void log_write(enum log_level level, const char *subsystem, const char *fmt, ...)
{
	static const char *const tags[] = { "ERROR", "WARN", "INFO", "DEBUG" };
	char msg[LOG_LINE_MAX];
	char line[LOG_JSON_MAX];
	char stamp[40];
	struct timespec ts;
	struct tm tm;
	size_t n, mlen;
	int w;
	va_list ap;

	if (!log_enabled(level))
		return;
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	n = strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &tm);
	(void)snprintf(stamp + n, sizeof(stamp) - n, ".%03ldZ", ts.tv_nsec / 1000000L);
	va_start(ap, fmt);
	w = vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	mlen = w < 0 ? 0 : ((size_t)w < sizeof(msg) ? (size_t)w : sizeof(msg) - 1);
	if (atomic_load(&current_format) == LOG_FORMAT_JSON) {
		n = json_line(line, sizeof(line), stamp, level, subsystem, msg, mlen);
	} else {
		w = snprintf(line, LOG_LINE_MAX, "%s %-5s [%s] %.*s", stamp, tags[level], subsystem,
			     (int)mlen, msg);
		n = w < 0 ? 0 : (size_t)w;
		if (n >= LOG_LINE_MAX - 1)
			n = LOG_LINE_MAX - 2; /* truncated: keep the newline */
		line[n++] = '\n';
	}
	/* One write per line keeps concurrent lines whole. */
	ssize_t r = write(STDERR_FILENO, line, n);
	(void)r;
}

const char *log_strerror(int e)
{
	static _Thread_local char buf[128];

	return strerror_r(e, buf, sizeof(buf));
}
