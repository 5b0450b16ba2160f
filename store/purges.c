/*
 * purges.c - the purges relation: dropped tables whose files wait for
 * the janitor, leased one at a time so replicas never purge the same row
 * and no transaction stays open while the files go.
 */
#include "store.h"
#include "store_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { ST_PURGE_CLAIM, ST_PURGE_DONE, ST_PURGE_FAILED, ST_PURGE_LIST, ST_COUNT };

/* One statement a row, its SQL laid out as SQL. */
/* clang-format off */
static const struct store_statement statements[ST_COUNT] = {
	/* purges: leased one at a time to $1 for $2 seconds, in a statement
	 * of its own, so the files go with no transaction open and janitors
	 * of several replicas never purge the same row. A lease is over when
	 * it expires, or when its janitor's session is gone (the floe
	 * stopped): then it is taken over. */
	[ST_PURGE_CLAIM] = { "purge_claim",
		"UPDATE purges p SET lease_owner = $1, lease_pid = pg_backend_pid(), "
		"  lease_until = clock_timestamp() + make_interval(secs => $2::int) "
		"WHERE p.id = (SELECT id FROM purges "
		"  WHERE state = 'pending' AND next_attempt_at <= now() "
		"  AND (lease_until IS NULL OR lease_until < clock_timestamp() "
		"    OR NOT EXISTS (SELECT 1 FROM pg_stat_activity a WHERE a.pid = lease_pid)) "
		"  ORDER BY next_attempt_at, id LIMIT 1 FOR UPDATE SKIP LOCKED) "
		"RETURNING p.id, p.location, p.table_uuid, p.attempts" },
	/* Only under the lease: one taken over is the new owner's to record. */
	[ST_PURGE_DONE] = { "purge_done",
		"DELETE FROM purges WHERE id = $1::bigint AND lease_owner = $2 RETURNING id" },
	[ST_PURGE_FAILED] = { "purge_failed",
		"UPDATE purges SET attempts = attempts + 1, last_error = $2, "
		"  state = CASE WHEN $5::boolean OR attempts + 1 >= $3::int "
		"    THEN 'failed' ELSE 'pending' END, "
		"  next_attempt_at = now() + make_interval(secs => $4::int), "
		"  lease_owner = NULL, lease_until = NULL, lease_pid = NULL "
		"WHERE id = $1::bigint AND lease_owner = $6 RETURNING attempts, state" },
	[ST_PURGE_LIST] = { "purge_list",
		"SELECT location, table_uuid, " TS("dropped_at") ", attempts, last_error, state "
		"FROM purges WHERE warehouse = $2::text ORDER BY dropped_at, id LIMIT $1::int" },
};
/* clang-format on */

const struct store_statements store_purge_statements = { statements, ST_COUNT, NULL };

void store_purge_row_clear(struct purge_row *row)
{
	free(row->location);
	free(row->last_error);
	memset(row, 0, sizeof(*row));
}

static void purge_clear(void *row)
{
	store_purge_row_clear(row);
}

void store_purge_rows_free(struct purge_row *rows, size_t count)
{
	store_rows_free(rows, count, sizeof(*rows), purge_clear);
}

bool store_purge_claim(struct store *s, const char *owner, int lease_s, struct purge_row *row,
		       bool *found, struct floe_error *err)
{
	char leasep[16];
	const char *params[2] = { owner, leasep };

	(void)snprintf(leasep, sizeof(leasep), "%d", lease_s);
	PGresult *r = store_exec(s, &statements[ST_PURGE_CLAIM], 2, params, err);

	memset(row, 0, sizeof(*row));
	*found = false;
	if (r == NULL)
		return false;
	if (PQntuples(r) == 1) {
		row->id = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
		row->location = strdup(PQgetvalue(r, 0, 1));
		(void)snprintf(row->uuid, sizeof(row->uuid), "%s", PQgetvalue(r, 0, 2));
		row->attempts = (int)strtol(PQgetvalue(r, 0, 3), NULL, 10);
		if (row->location == NULL) {
			PQclear(r);
			return floe_err(err, FE_INTERNAL, "out of memory");
		}
		*found = true;
	}
	PQclear(r);
	return true;
}

bool store_purge_done(struct store *s, long long id, const char *owner, bool *kept,
		      struct floe_error *err)
{
	char idp[32];
	const char *params[2] = { idp, owner };

	*kept = false;
	(void)snprintf(idp, sizeof(idp), "%lld", id);
	PGresult *r = store_exec(s, &statements[ST_PURGE_DONE], 2, params, err);
	if (r == NULL)
		return false;
	*kept = PQntuples(r) == 1;
	PQclear(r);
	return true;
}

bool store_purge_failed(struct store *s, long long id, const char *owner, const char *error,
			int max_attempts, int retry_in_s, bool permanent, int *attempts,
			bool *gave_up, bool *kept, struct floe_error *err)
{
	char idp[32], maxp[16], retp[16];
	const char *params[6] = { idp, error, maxp, retp, permanent ? "true" : "false", owner };

	(void)snprintf(idp, sizeof(idp), "%lld", id);
	(void)snprintf(maxp, sizeof(maxp), "%d", max_attempts);
	(void)snprintf(retp, sizeof(retp), "%d", retry_in_s);
	PGresult *r = store_exec(s, &statements[ST_PURGE_FAILED], 6, params, err);
	*attempts = 0;
	*gave_up = false;
	*kept = false;
	if (r == NULL)
		return false;
	*kept = PQntuples(r) == 1;
	if (PQntuples(r) == 1) {
		*attempts = (int)strtol(PQgetvalue(r, 0, 0), NULL, 10);
		*gave_up = strcmp(PQgetvalue(r, 0, 1), "failed") == 0;
	}
	PQclear(r);
	return true;
}

/* Fills a struct purge_row from the columns of ST_PURGE_LIST. */
static bool purge_fill(PGresult *r, int i, void *dst)
{
	struct purge_row *row = dst;

	memset(row, 0, sizeof(*row));
	store_col_text(r, i, 1, row->uuid, sizeof(row->uuid));
	store_col_text(r, i, 2, row->dropped_at, sizeof(row->dropped_at));
	row->attempts = (int)store_col_ll(r, i, 3);
	store_col_text(r, i, 5, row->state, sizeof(row->state));
	if (store_col_copy(r, i, 0, &row->location) && store_col_copy(r, i, 4, &row->last_error))
		return true;
	store_purge_row_clear(row);
	return false;
}

bool store_purge_list(struct store *s, int limit, struct purge_row **rows, size_t *count,
		      struct floe_error *err)
{
	char limp[16];
	const char *params[2] = { limp, s->warehouse };
	void *out = NULL;

	*rows = NULL;
	*count = 0;
	(void)snprintf(limp, sizeof(limp), "%d", limit);
	PGresult *r = store_exec(s, &statements[ST_PURGE_LIST], 2, params, err);
	if (r == NULL)
		return false;
	bool ok = store_rows_read(r, PQntuples(r), sizeof(**rows), purge_fill, purge_clear, &out,
				  count, err);
	PQclear(r);
	*rows = out;
	return ok;
}
