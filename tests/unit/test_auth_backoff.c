/* The failure backoff: five failures in a row cost nothing, the sixth
 * and each later one of the series impose 2, 4, 8, ... seconds, capped
 * at 300; the wait counts down with the clock; a quiet minute after the
 * last wait ends the series; a success clears it; keys are counted
 * apart; a full table pushes out the least recently used key. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "backoff.h"

#define T0 1700000000LL

Test(auth_backoff, the_exact_schedule)
{
	struct backoff *b = backoff_new(BACKOFF_CAPACITY);
	const long long want[] = { 0, 0, 0, 0, 0, 2, 4, 8, 16, 32, 64, 128, 256, 300, 300, 300 };
	long long now = T0;

	cr_assert_not_null(b);
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		cr_assert_eq(backoff_wait(b, "client-a", now), 0, "attempt %zu", i + 1);
		long long w = backoff_fail(b, "client-a", now);
		cr_assert_eq(w, want[i], "failure %zu imposed %lld, not %lld", i + 1, w, want[i]);
		cr_assert_eq(backoff_wait(b, "client-a", now), want[i]);
		if (w > 0) {
			/* Refused until the last second of the wait... */
			cr_assert_eq(backoff_wait(b, "client-a", now + w - 1), 1);
			/* ...and free to try when it is over. */
			now += w;
		} else {
			now += 1;
		}
	}
	backoff_free(b);
}

Test(auth_backoff, failures_a_minute_apart_do_not_add_up)
{
	struct backoff *b = backoff_new(16);
	long long now = T0;

	for (int i = 0; i < 20; i++) {
		cr_assert_eq(backoff_fail(b, "k", now), 0, "failure %d", i + 1);
		now += BACKOFF_WINDOW_S;
	}
	/* 59 seconds apart they do. */
	for (int i = 0; i < 5; i++) {
		cr_assert_eq(backoff_fail(b, "k2", now), 0);
		now += BACKOFF_WINDOW_S - 1;
	}
	cr_assert_eq(backoff_fail(b, "k2", now), 2);
	backoff_free(b);
}

Test(auth_backoff, a_quiet_minute_after_the_wait_ends_the_series)
{
	struct backoff *b = backoff_new(16);
	long long now = T0;

	for (int i = 0; i < 10; i++)
		now += backoff_fail(b, "k", now);
	/* The tenth imposed 32 s; now is its end. */
	cr_assert_eq(backoff_wait(b, "k", now - 1), 1);
	cr_assert_eq(backoff_wait(b, "k", now), 0);
	/* A failure 59 s after the wait ended continues the series. */
	cr_assert_eq(backoff_fail(b, "k", now + 59), 64);
	now += 59 + 64;
	/* One 60 s after starts a new one: free again. */
	cr_assert_eq(backoff_fail(b, "k", now + 60), 0);
	cr_assert_eq(backoff_count(b), 1);
	/* A key whose series is over is forgotten when looked at. */
	cr_assert_eq(backoff_wait(b, "k", now + 60 + 60), 0);
	cr_assert_eq(backoff_count(b), 0);
	backoff_free(b);
}

Test(auth_backoff, success_clears)
{
	struct backoff *b = backoff_new(16);

	for (int i = 0; i < 7; i++)
		(void)backoff_fail(b, "k", T0);
	cr_assert_eq(backoff_wait(b, "k", T0), 4);
	backoff_clear(b, "k");
	cr_assert_eq(backoff_wait(b, "k", T0), 0);
	cr_assert_eq(backoff_count(b), 0);
	/* A new series starts from nothing. */
	for (int i = 0; i < 5; i++)
		cr_assert_eq(backoff_fail(b, "k", T0), 0);
	cr_assert_eq(backoff_fail(b, "k", T0), 2);
	backoff_clear(b, "unknown");
	backoff_free(b);
}

Test(auth_backoff, keys_are_counted_apart)
{
	struct backoff *b = backoff_new(16);

	for (int i = 0; i < 6; i++)
		(void)backoff_fail(b, "client-a", T0);
	cr_assert_eq(backoff_wait(b, "client-a", T0), 2);
	cr_assert_eq(backoff_wait(b, "client-b", T0), 0);
	cr_assert_eq(backoff_wait(b, "ip:192.0.2.1", T0), 0);
	cr_assert_eq(backoff_fail(b, "client-b", T0), 0);
	backoff_free(b);
}

Test(auth_backoff, a_full_table_pushes_out_the_least_recently_used)
{
	struct backoff *b = backoff_new(BACKOFF_CAPACITY);
	char key[32];

	for (int i = 0; i < 6; i++)
		(void)backoff_fail(b, "ip:198.51.100.7", T0);
	for (int k = 0; k < BACKOFF_CAPACITY - 1; k++) {
		(void)snprintf(key, sizeof(key), "client-%d", k);
		(void)backoff_fail(b, key, T0);
	}
	cr_assert_eq(backoff_count(b), BACKOFF_CAPACITY);
	/* Looking at the address keeps it; client-0 is now the oldest. */
	cr_assert_eq(backoff_wait(b, "ip:198.51.100.7", T0), 2);
	(void)backoff_fail(b, "one-more", T0);
	cr_assert_eq(backoff_count(b), BACKOFF_CAPACITY);
	cr_assert_eq(backoff_wait(b, "ip:198.51.100.7", T0), 2);
	/* client-0's one failure was forgotten: five more are free. */
	for (int i = 0; i < 5; i++)
		cr_assert_eq(backoff_fail(b, "client-0", T0), 0);
	cr_assert_eq(backoff_fail(b, "client-0", T0), 2);
	backoff_free(b);
	cr_assert_null(backoff_new(0));
}

Test(auth_backoff, a_long_key_is_its_own)
{
	struct backoff *b = backoff_new(16);
	char a[1024];
	char c[1024];

	memset(a, 'x', sizeof(a) - 1);
	a[sizeof(a) - 1] = '\0';
	memcpy(c, a, sizeof(c));
	c[sizeof(c) - 2] = 'y';
	for (int i = 0; i < 6; i++)
		(void)backoff_fail(b, a, T0);
	cr_assert_eq(backoff_wait(b, a, T0), 2);
	cr_assert_eq(backoff_wait(b, c, T0), 0);
	backoff_free(b);
}

Test(auth_backoff, a_table_of_its_own_free_failures)
{
	struct backoff *b = backoff_new_with(16, 50);
	long long now = T0;

	cr_assert_not_null(b);
	for (int i = 0; i < 50; i++)
		cr_assert_eq(backoff_fail(b, "addr", now++), 0, "failure %d", i + 1);
	cr_assert_eq(backoff_fail(b, "addr", now), 2);
	cr_assert_eq(backoff_fail(b, "addr", now + 2), 4);
	backoff_free(b);
	cr_assert_null(backoff_new_with(16, 0));
	cr_assert_null(backoff_new_with(16, BACKOFF_FREE_MAX + 1));
	cr_assert_null(backoff_new_with(0, 5));
}
