/*
 * idempotency.c - the idempotency_keys relation: a key claimed by one
 * request at a time, its answer kept for replay.
 */
#include "store.h"
#include "store_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { ST_IDEM_CLAIM, ST_IDEM_GET, ST_IDEM_FINISH, ST_IDEM_RELEASE, ST_IDEM_EXPIRE, ST_COUNT };

/* One statement a row, its SQL laid out as SQL. */
/* clang-format off */
static const struct store_statement statements[ST_COUNT] = {
	/* A key is taken over when it is past its lifetime, or unanswered
	 * on this route and either past its lease or claimed by a session
	 * that is gone from PostgreSQL (its floe died): the claiming
	 * session's pid and backend_start are recorded with the claim. The
	 * row lock of ON CONFLICT makes the takeover one retry's. */
	[ST_IDEM_CLAIM] = { "idem_claim",
		"INSERT INTO idempotency_keys AS k (key, route, owner, lease_until, "
		"  owner_pid, owner_started) "
		"VALUES ($1, $2, $4, now() + make_interval(secs => $5::int), pg_backend_pid(), "
		"  (SELECT backend_start FROM pg_stat_activity WHERE pid = pg_backend_pid())) "
		"ON CONFLICT (key) DO UPDATE SET route = EXCLUDED.route, status = 0, "
		"  response = NULL, created_at = now(), owner = EXCLUDED.owner, "
		"  lease_until = EXCLUDED.lease_until, owner_pid = EXCLUDED.owner_pid, "
		"  owner_started = EXCLUDED.owner_started "
		"  WHERE k.created_at < now() - make_interval(secs => $3::int) "
		"  OR (k.status = 0 AND k.route = EXCLUDED.route "
		"      AND (coalesce(k.lease_until, k.created_at) < now() "
		"        OR (k.owner_started IS NOT NULL AND NOT EXISTS (SELECT 1 FROM pg_stat_activity a "
		"          WHERE a.pid = k.owner_pid AND a.backend_start = k.owner_started)))) "
		"RETURNING key" },
	[ST_IDEM_GET] = { "idem_get",
		"SELECT status, response, route FROM idempotency_keys WHERE key = $1" },
	[ST_IDEM_FINISH] = { "idem_finish",
		"UPDATE idempotency_keys SET status = $2::int, response = $3 "
		"WHERE key = $1 AND owner = $4 AND status = 0 RETURNING key" },
	[ST_IDEM_RELEASE] = { "idem_release",
		"DELETE FROM idempotency_keys WHERE key = $1 AND owner = $2 AND status = 0" },
	[ST_IDEM_EXPIRE] = { "idem_expire",
		"DELETE FROM idempotency_keys WHERE key IN (SELECT key FROM idempotency_keys "
		"  WHERE created_at < now() - make_interval(secs => $1::bigint) LIMIT $2::int)" },
};
/* clang-format on */

const struct store_statements store_idem_statements = { statements, ST_COUNT, NULL };

bool store_idem_claim(struct store *s, const char *key, const char *route, const char *owner,
		      int lifetime_s, int lease_s, bool *claimed, bool *other_route, int *status,
		      char **response, struct floe_error *err)
{
	char life[16], lease[16];
	PGresult *r;

	*claimed = false;
	*other_route = false;
	*status = 0;
	*response = NULL;
	(void)snprintf(life, sizeof(life), "%d", lifetime_s);
	(void)snprintf(lease, sizeof(lease), "%d", lease_s);
	const char *params[5] = { key, route, life, owner, lease };
	r = store_exec(s, &statements[ST_IDEM_CLAIM], 5, params, err);
	if (r == NULL)
		return false;
	*claimed = PQntuples(r) == 1;
	PQclear(r);
	if (*claimed)
		return true;
	const char *gp[1] = { key };
	r = store_exec(s, &statements[ST_IDEM_GET], 1, gp, err);
	if (r == NULL)
		return false;
	if (PQntuples(r) == 1) {
		*status = (int)strtol(PQgetvalue(r, 0, 0), NULL, 10);
		if (strcmp(PQgetvalue(r, 0, 2), route) != 0) {
			*other_route = true;
			PQclear(r);
			return true;
		}
		if (!PQgetisnull(r, 0, 1)) {
			*response = strdup(PQgetvalue(r, 0, 1));
			if (*response == NULL) {
				PQclear(r);
				return floe_err(err, FE_INTERNAL, "out of memory");
			}
		}
	}
	PQclear(r);
	return true;
}

bool store_idem_answer(struct store *s, const char *key, const char *route, int *status,
		       char **response, struct floe_error *err)
{
	const char *params[1] = { key };
	PGresult *r;

	*status = 0;
	*response = NULL;
	r = store_exec(s, &statements[ST_IDEM_GET], 1, params, err);
	if (r == NULL)
		return false;
	if (PQntuples(r) == 1 && strcmp(PQgetvalue(r, 0, 2), route) == 0) {
		*status = (int)strtol(PQgetvalue(r, 0, 0), NULL, 10);
		if (*status != 0 && !PQgetisnull(r, 0, 1)) {
			*response = strdup(PQgetvalue(r, 0, 1));
			if (*response == NULL) {
				PQclear(r);
				return floe_err(err, FE_INTERNAL, "out of memory");
			}
		}
	}
	PQclear(r);
	return true;
}

bool store_idem_finish(struct store *s, const char *key, const char *owner, int status,
		       const char *response, bool *recorded, struct floe_error *err)
{
	char st[16];
	PGresult *r;

	*recorded = false;
	(void)snprintf(st, sizeof(st), "%d", status);
	const char *params[4] = { key, st, response, owner };
	r = store_exec(s, &statements[ST_IDEM_FINISH], 4, params, err);
	if (r == NULL)
		return false;
	*recorded = PQntuples(r) == 1;
	PQclear(r);
	return true;
}

void store_idem_release(struct store *s, const char *key, const char *owner)
{
	struct floe_error ignored;
	const char *params[2] = { key, owner };
	PGresult *r = store_exec(s, &statements[ST_IDEM_RELEASE], 2, params, &ignored);
	PQclear(r);
}

bool store_idem_expire(struct store *s, long long older_than_s, int limit, long *deleted,
		       struct floe_error *err)
{
	return store_exec_expire(s, &statements[ST_IDEM_EXPIRE], older_than_s, limit, deleted, err);
}
