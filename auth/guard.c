/*
 * guard.c - the pair and address tables of guard.h. A pair's key is the
 * client id's length, the id and the address, so that no two pairs
 * spell one key whatever bytes a client id holds.
 */
#include "guard.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backoff.h"

struct guard {
	struct backoff *pairs;
	struct backoff *addresses;
};

/* Room for a client id (at most 255 bytes at the token endpoint, longer
 * ones are cut, which only merges pairs), its length and an address. */
#define GUARD_KEY_MAX 400

static void guard_pair_key(const char *client, const char *addr, char key[GUARD_KEY_MAX])
{
	(void)snprintf(key, GUARD_KEY_MAX, "%zu:%.255s@%.64s", strlen(client), client, addr);
}

struct guard *guard_new(void)
{
	struct guard *g = calloc(1, sizeof(*g));

	if (g == NULL)
		return NULL;
	g->pairs = backoff_new(GUARD_PAIRS);
	g->addresses = backoff_new_with(GUARD_ADDRESSES, GUARD_ADDRESS_FREE_FAILURES);
	if (g->pairs == NULL || g->addresses == NULL) {
		guard_free(g);
		return NULL;
	}
	return g;
}

void guard_free(struct guard *g)
{
	if (g == NULL)
		return;
	backoff_free(g->pairs);
	backoff_free(g->addresses);
	free(g);
}

long long guard_wait(struct guard *g, const char *client, const char *addr, long long now)
{
	char key[GUARD_KEY_MAX];

	guard_pair_key(client, addr, key);
	long long pair = backoff_wait(g->pairs, key, now);
	long long address = backoff_wait(g->addresses, addr, now);
	return pair > address ? pair : address;
}

void guard_fail(struct guard *g, const char *client, const char *addr, long long now)
{
	char key[GUARD_KEY_MAX];

	guard_pair_key(client, addr, key);
	(void)backoff_fail(g->pairs, key, now);
	(void)backoff_fail(g->addresses, addr, now);
}

void guard_succeed(struct guard *g, const char *client, const char *addr)
{
	char key[GUARD_KEY_MAX];

	guard_pair_key(client, addr, key);
	backoff_clear(g->pairs, key);
	backoff_clear(g->addresses, addr);
}
