/*
 * idem.c - Idempotency-Key claims and answers. Each call borrows a
 * connection only for its own statement: the request in between borrows
 * one of its own.
 */
#include "idem.h"

#include <stdlib.h>

#include "log.h"
#include "ports.h"

bool idem_claim(struct store_pool *pool, const char *key, const char *route, const char *owner,
		int lifetime_s, int lease_s, bool *claimed, int *status, char **response,
		struct floe_error *err)
{
	bool other_route = false;
	struct store *s = store_pool_acquire(pool, err);

	*claimed = false;
	*status = 0;
	*response = NULL;
	if (s == NULL)
		return false;
	bool ok = store_idem_claim(s, key, route, owner, lifetime_s, lease_s, claimed, &other_route,
				   status, response, err);
	store_pool_release(pool, s);
	if (ok && other_route)
		return floe_err(err, FE_UNPROCESSABLE,
				"Idempotency-Key %s was already used for another request", key);
	return ok;
}

void idem_settle(struct store_pool *pool, const char *key, const char *owner, int status,
		 const char *response, const char *request_id)
{
	struct floe_error err;
	struct store *s = store_pool_acquire(pool, &err);

	if (s == NULL) {
		/* The claim runs out with its lease; a retry then runs again
		 * (a table commit recorded its own answer already). */
		log_warn("http", "cannot record the answer to Idempotency-Key %s rid=%s", key,
			 request_id);
		return;
	}
	/* A table commit has recorded its answer in its own transaction;
	 * then this finds the key answered and changes nothing. */
	if (status > 0 && status < 500) {
		bool recorded = false;
		if (!store_idem_finish(s, key, owner, status, response, &recorded, &err))
			log_warn("http",
				 "cannot record the answer to Idempotency-Key %s: %s rid=%s", key,
				 err.message, request_id);
	} else {
		store_idem_release(s, key, owner);
	}
	store_pool_release(pool, s);
}
