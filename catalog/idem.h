/*
 * idem.h - the rules of Idempotency-Key claims: who owns a key, what a
 * retry is answered, and when a key is given back. The HTTP middleware
 * (server/idempotency.c) decides which requests take a key.
 */
#ifndef FLOE_IDEM_H
#define FLOE_IDEM_H

#include <stdbool.h>

#include <jansson.h>

#include "error.h"

struct store;
struct store_pool;
struct table_env;

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
 * The answer recorded under key for route, without claiming it: *status 0
 * when there is none; *response (caller frees) may be NULL. For a retry
 * whose object its first attempt removed (a deleted hook): the gate can no
 * longer find the object, the first answer is still the retry's.
 */
bool idem_answered(struct store_pool *pool, const char *key, const char *route, int *status,
		   char **response, struct floe_error *err) FLOE_WUR;

/*
 * Settles the claim owner holds on key once its request answered status
 * with response (may be NULL): a 2xx or 4xx answer is recorded for
 * replay (a change recorded its own with it already, idem_record: then
 * nothing changes; what is left is an answer that changed nothing); any
 * other status gives the key back, so a retry runs again.
 * A failure is logged; the claim then runs out with its lease.
 */
void idem_settle(struct store_pool *pool, const char *key, const char *owner, int status,
		 const char *response, const char *request_id);

/*
 * How a route that makes another route's change answers (the control
 * route: POST /controls/{action}): what the change records under the key
 * is {"action", "reason", "result"}, with status 200, result the given
 * one or, when NULL, the change's own answer.
 */
struct idem_as {
	const char *action;
	const json_t *reason;
	const json_t *result;
};

/*
 * Inside the change's own transaction on s: records status and answer
 * (borrowed; NULL: no body) as what env's Idempotency-Key replays, so the
 * key is answered exactly when the change lands. Every route that changes
 * the catalog calls it with the transaction that makes its decisive
 * change, before that transaction's COMMIT; true with nothing done when
 * the request has no key. On false the caller rolls the change back:
 * FE_UNAVAILABLE with FO_FAILED (503, nothing changed, retry) when the
 * answer cannot be recorded or a retry claimed the key meanwhile (that
 * retry runs the change instead); the store's error when its outcome is
 * unknown.
 */
bool idem_record(struct store *s, const struct table_env *env, int status, const json_t *answer,
		 struct floe_error *err) FLOE_WUR;

#endif
