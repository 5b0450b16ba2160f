/*
 * idem.h - the rules of Idempotency-Key claims: who owns a key, what a
 * retry is answered, and when a key is given back. The HTTP middleware
 * (server/idempotency.c) decides which requests take a key.
 */
#ifndef FLOE_IDEM_H
#define FLOE_IDEM_H

#include <stdbool.h>

#include "error.h"

struct store_pool;

/*
 * Claims key for a request (route: its method, path and body hash) on
 * behalf of owner (a token unique to this request) for lease_s seconds,
 * through a connection of pool held only for the claim, whose session
 * names the claimant: a claim whose session is gone from PostgreSQL (its
 * floe was killed) is taken over at once, not after its lease. Returns
 * true with *claimed when this request owns the key. Otherwise *status and
 * *response (caller frees) hold the stored answer, or *status is 0 while
 * the first request is still running. FE_UNPROCESSABLE when the key was
 * used for another route or body; FE_UNAVAILABLE without a database.
 */
bool idem_claim(struct store_pool *pool, const char *key, const char *route, const char *owner,
		int lifetime_s, int lease_s, bool *claimed, int *status, char **response,
		struct floe_error *err) FLOE_WUR;

/*
 * Settles the claim owner holds on key once its request answered status
 * with response (may be NULL): a 2xx or 4xx answer is recorded for
 * replay (a table commit recorded its own already: then nothing
 * changes); any other status gives the key back, so a retry runs again.
 * A failure is logged; the claim then runs out with its lease.
 */
void idem_settle(struct store_pool *pool, const char *key, const char *owner, int status,
		 const char *response, const char *request_id);

#endif
