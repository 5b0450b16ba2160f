/*
 * idem.c - Idempotency-Key claims and answers. Each call borrows a
 * connection only for its own statement: the request in between borrows
 * one of its own.
 */
#include "idem.h"

#include <stdlib.h>

#include "log.h"
#include "ports.h"
#include "table.h"

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

bool idem_answered(struct store_pool *pool, const char *key, const char *route, int *status,
		   char **response, struct floe_error *err)
{
	struct store *s = store_pool_acquire(pool, err);

	*status = 0;
	*response = NULL;
	if (s == NULL)
		return false;
	bool ok = store_idem_answer(s, key, route, status, response, err);
	store_pool_release(pool, s);
	return ok;
}

void idem_settle(struct store_pool *pool, const char *key, const char *owner, int status,
		 const char *response, const char *request_id)
{
	struct floe_error err;
	struct store *s = store_pool_acquire(pool, &err);

	if (s == NULL) {
		/* The claim runs out with its lease; a retry then runs again
		 * (a change recorded its own answer already). */
		log_warn("http", "cannot record the answer to Idempotency-Key %s rid=%s", key,
			 request_id);
		return;
	}
	/* A change has recorded its answer in its own transaction; then
	 * this finds the key answered and changes nothing. */
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

bool idem_record(struct store *s, const struct table_env *env, int status, const json_t *answer,
		 struct floe_error *err)
{
	char *text = NULL;
	bool recorded = false;

	if (env == NULL || env->idem_key == NULL)
		return true;
	if (env->idem_as != NULL) {
		const struct idem_as *as = env->idem_as;
		const json_t *result = as->result != NULL ? as->result : answer;
		json_t *wrapped = json_pack("{s:s, s:O, s:O}", "action", as->action, "reason",
					    as->reason, "result",
					    result != NULL ? result : json_null());
		if (wrapped != NULL)
			text = json_dumps(wrapped, JSON_COMPACT);
		json_decref(wrapped);
		status = 200;
		if (text == NULL)
			return floe_err(err, FE_INTERNAL, "out of memory");
	} else if (answer != NULL) {
		text = json_dumps(answer, JSON_COMPACT);
		if (text == NULL)
			return floe_err(err, FE_INTERNAL, "out of memory");
	}
	bool ok = store_idem_finish(s, env->idem_key, env->idem_owner, status, text, &recorded,
				    err);
	free(text);
	/* A lost connection or a busy database says so itself (503, known
	 * failed, or unknown). */
	if (!ok && (err->outcome == FO_UNKNOWN || err->kind == FE_UNAVAILABLE))
		return false;
	if (!ok) {
		/* The change and its answer are one: neither is kept. */
		log_warn(
			"http",
			"cannot record the answer to Idempotency-Key %s (%s): the change is undone "
			"rid=%s",
			env->idem_key, err->message, env->request_id);
		floe_err(err, FE_UNAVAILABLE,
			 "the answer to Idempotency-Key %s could not be recorded; nothing changed; "
			 "retry",
			 env->idem_key);
		floe_error_set_outcome(err, FO_FAILED);
		return false;
	}
	if (!recorded) {
		floe_err(err, FE_UNAVAILABLE,
			 "Idempotency-Key %s was claimed again by a retry; this attempt committed "
			 "nothing",
			 env->idem_key);
		floe_error_set_outcome(err, FO_FAILED);
		return false;
	}
	return true;
}
