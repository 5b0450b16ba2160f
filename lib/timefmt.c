/*
 * timefmt.c - RFC 3339 times with milliseconds (see timefmt.h).
 */
#include "timefmt.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
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

static bool all_digits(const char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!isdigit((unsigned char)p[i]))
			return false;
	return true;
}

static int number(const char *p, size_t n)
{
	int v = 0;
	for (size_t i = 0; i < n; i++)
		v = v * 10 + (p[i] - '0');
	return v;
}

static int days_in_month(int year, int month)
{
	static const int days[12] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
	bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
	return month == 2 && leap ? 29 : days[month - 1];
}

bool timefmt_rfc3339_valid(const char *s)
{
	size_t n = strlen(s);
	if (n < 20 || n > 40 || !all_digits(s, 4) || s[4] != '-' || !all_digits(s + 5, 2) ||
	    s[7] != '-' || !all_digits(s + 8, 2) || (s[10] != 'T' && s[10] != 't') ||
	    !all_digits(s + 11, 2) || s[13] != ':' || !all_digits(s + 14, 2) || s[16] != ':' ||
	    !all_digits(s + 17, 2))
		return false;
	int year = number(s, 4), mon = number(s + 5, 2), day = number(s + 8, 2),
	    h = number(s + 11, 2), mi = number(s + 14, 2), sec = number(s + 17, 2);
	if (year < 1 || mon < 1 || mon > 12 || day < 1 || day > days_in_month(year, mon) ||
	    h > 23 || mi > 59 || sec > 60)
		return false;
	const char *p = s + 19;
	if (*p == '.') {
		p++;
		if (!isdigit((unsigned char)*p))
			return false;
		while (isdigit((unsigned char)*p))
			p++;
	}
	if ((*p == 'Z' || *p == 'z') && p[1] == '\0')
		return true;
	return (*p == '+' || *p == '-') && strlen(p) == 6 && all_digits(p + 1, 2) && p[3] == ':' &&
	       all_digits(p + 4, 2) && number(p + 1, 2) <= 23 && number(p + 4, 2) <= 59;
}
