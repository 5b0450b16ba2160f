/*
 * timefmt.c - RFC 3339 times with milliseconds (see timefmt.h).
 */
#include "timefmt.h"

#include <stdio.h>
#include <time.h>

bool timefmt_rfc3339_ms(long long ms, char *out, size_t len)
{
	long long secs = ms / 1000;
	long long frac = ms % 1000;
	struct tm tm;

	if (frac < 0) {
		frac += 1000;
		secs--;
	}
	time_t t = (time_t)secs;
	out[0] = '\0';
	if (gmtime_r(&t, &tm) == NULL)
		return false;
	size_t n = strftime(out, len, "%Y-%m-%dT%H:%M:%S", &tm);
	if (n == 0)
		return false;
	(void)snprintf(out + n, len - n, ".%03lldZ", frac);
	return true;
}

bool timefmt_rfc3339_now(char *out, size_t len)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return timefmt_rfc3339_ms((long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000, out, len);
}
