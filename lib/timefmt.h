/*
 * timefmt.h - times as floe's answers write them: RFC 3339, UTC, with
 * milliseconds ("2026-12-07T04:05:06.789Z").
 */
#ifndef FLOE_TIMEFMT_H
#define FLOE_TIMEFMT_H

#include <stdbool.h>
#include <stddef.h>

#define TIMEFMT_RFC3339_LEN 32 /* room for any year gmtime_r takes, and the NUL */

/* ms since the epoch into out (len >= TIMEFMT_RFC3339_LEN); false, out
 * empty, when gmtime_r cannot take it. */
bool timefmt_rfc3339_ms(long long ms, char *out, size_t len);

/* Now (the wall clock) into out, as timefmt_rfc3339_ms writes it. */
bool timefmt_rfc3339_now(char *out, size_t len);

/* Whether s is an RFC 3339 date-time with a zone, strictly:
 * YYYY-MM-DDTHH:MM:SS[.frac](Z|+HH:MM|-HH:MM), a day its month has, year
 * 0001 to 9999. Checked before a time reaches SQL, where PostgreSQL's
 * input would also take words such as "yesterday", "now", "epoch" and
 * "infinity", and times without a zone in the session's. */
bool timefmt_rfc3339_valid(const char *s);

#endif
