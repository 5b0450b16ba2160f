/* The token endpoint's guard: failures are counted per (client, address)
 * pair, so nobody locks a client out from another address; an address
 * that has not failed is never refused; a success clears its pair and its
 * address; one address spraying many client ids meets the looser bound
 * of its own. */
#include <criterion/criterion.h>
#include <stdio.h>

#include "backoff.h"
#include "guard.h"

#define T0 1700000000LL

/* Fails client from addr until a wait is imposed; the time after. */
static long long fail_until_wait(struct guard *g, const char *client, const char *addr,
				 long long now)
{
	for (int i = 0; i < BACKOFF_FREE_FAILURES + 1; i++) {
		cr_assert_eq(guard_wait(g, client, addr, now), 0, "failure %d was refused", i + 1);
		guard_fail(g, client, addr, now);
	}
	cr_assert_gt(guard_wait(g, client, addr, now), 0);
	return now;
}

Test(auth_guard, another_address_is_never_held_back)
{
	struct guard *g = guard_new();
	long long now = fail_until_wait(g, "admin", "203.0.113.9", T0);

	cr_assert_eq(guard_wait(g, "admin", "198.51.100.7", now), 0,
		     "the real client on its own address");
	cr_assert_eq(guard_wait(g, "admin", "::1", now), 0);
	guard_free(g);
}

Test(auth_guard, one_failing_client_does_not_hold_back_its_neighbours)
{
	struct guard *g = guard_new();
	long long now = fail_until_wait(g, "broken-job", "10.0.0.1", T0);

	cr_assert_eq(guard_wait(g, "etl", "10.0.0.1", now), 0,
		     "another client behind the same address");
	cr_assert_gt(guard_wait(g, "broken-job", "10.0.0.1", now), 0);
	guard_free(g);
}

Test(auth_guard, a_success_clears_the_pair_and_the_address)
{
	struct guard *g = guard_new();
	long long now = T0;

	for (int round = 0; round < 10; round++) {
		for (int i = 0; i < BACKOFF_FREE_FAILURES; i++)
			guard_fail(g, "admin", "10.0.0.2", now++);
		cr_assert_eq(guard_wait(g, "admin", "10.0.0.2", now), 0, "round %d", round);
		guard_succeed(g, "admin", "10.0.0.2");
	}
	/* A success ends a wait too (a client that proved itself by another
	 * route, such as a token exchange with its secret). */
	now = fail_until_wait(g, "admin", "10.0.0.2", now);
	guard_succeed(g, "admin", "10.0.0.2");
	cr_assert_eq(guard_wait(g, "admin", "10.0.0.2", now), 0);
	guard_free(g);
}

Test(auth_guard, an_address_spraying_client_ids_waits)
{
	struct guard *g = guard_new();
	char id[32];
	long long now = T0;

	for (int i = 0; i < GUARD_ADDRESS_FREE_FAILURES; i++) {
		(void)snprintf(id, sizeof(id), "guess-%d", i);
		cr_assert_eq(guard_wait(g, id, "192.0.2.1", now), 0, "guess %d", i);
		guard_fail(g, id, "192.0.2.1", now);
	}
	cr_assert_eq(guard_wait(g, "guess-next", "192.0.2.1", now), 0, "the first %d are free",
		     GUARD_ADDRESS_FREE_FAILURES);
	guard_fail(g, "guess-next", "192.0.2.1", now);
	cr_assert_eq(guard_wait(g, "admin", "192.0.2.1", now), 2,
		     "then the address waits, whichever client it names");
	cr_assert_eq(guard_wait(g, "admin", "192.0.2.2", now), 0, "and no other address");
	/* A success of the address clears its count. */
	guard_succeed(g, "mine", "192.0.2.1");
	cr_assert_eq(guard_wait(g, "admin", "192.0.2.1", now), 0);
	guard_free(g);
}

Test(auth_guard, pairs_do_not_run_into_each_other)
{
	struct guard *g = guard_new();
	long long now = fail_until_wait(g, "a@b", "c", T0);

	/* "a@b" at "c" and "a" at "b@c" are two pairs. */
	cr_assert_eq(guard_wait(g, "a", "b@c", now), 0);
	guard_free(g);
}
