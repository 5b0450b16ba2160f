/*
 * test_timefmt.c - RFC 3339 as floe writes it and as it takes it: the
 * strict check that keeps PostgreSQL's own time words out of SQL.
 */
#include <criterion/criterion.h>

#include "timefmt.h"

Test(timefmt, writes_utc_with_milliseconds)
{
	char out[TIMEFMT_RFC3339_LEN];

	cr_assert(timefmt_rfc3339_ms(1733392800123LL, out, sizeof(out)));
	cr_assert_str_eq(out, "2024-12-05T10:00:00.123Z");
	cr_assert(timefmt_rfc3339_valid(out));
}

Test(timefmt, takes_rfc3339_date_times)
{
	static const char *const good[] = {
		"2026-12-05T10:00:00Z",        "2026-12-05t10:00:00z",
		"2026-12-05T10:00:00.5+05:30", "2026-12-05T10:00:00.123456-08:00",
		"2024-02-29T00:00:00Z",        "2000-02-29T23:59:59Z",
		"2026-12-31T23:59:60Z",        "0001-01-01T00:00:00Z",
	};
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		cr_assert(timefmt_rfc3339_valid(good[i]), "%s", good[i]);
}

Test(timefmt, refuses_postgresql_words_and_loose_forms)
{
	static const char *const bad[] = {
		"yesterday",
		"now",
		"today",
		"tomorrow",
		"epoch",
		"infinity",
		"-infinity",
		"allballs",
		"",
		"2026-12-05T10:00:00",
		"2026-12-05 10:00:00Z",
		"2026-12-05T10:00Z",
		"2026-12-05T10:00:00.Z",
		"2026-12-05T10:00:00+0530",
		"2026-12-05T10:00:00+24:00",
		"2026-12-05T10:00:00 Z",
		"2026-02-30T10:00:00Z",
		"2027-02-29T10:00:00Z",
		"1900-02-29T10:00:00Z",
		"2026-04-31T10:00:00Z",
		"2026-13-05T10:00:00Z",
		"2026-00-05T10:00:00Z",
		"2026-12-00T10:00:00Z",
		"2026-12-05T24:00:00Z",
		"0000-01-01T00:00:00Z",
		"+2026-12-05T10:00:00Z",
		"2026-12-05T10:00:00Zyesterday",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_assert_not(timefmt_rfc3339_valid(bad[i]), "'%s'", bad[i]);
}
