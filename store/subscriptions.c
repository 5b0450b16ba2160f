/*
 * subscriptions.c - the event_subscriptions relation (migration 0022):
 * each subscription's filter, position in the change feed, delivery
 * state and lease.
 */
#include "store.h"
#include "store_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MS(c) "floor(extract(epoch FROM " c ") * 1000)::bigint"

/* The columns sub_fill reads; the sealed secret only for a delivery
 * (ST_SUB_CLAIM). */
/* clang-format off */
#define SUB_COLUMNS \
	"SELECT id, name, url, filter::text, timeout_ms, max_attempts, " \
	MS("created_at") ", created_by, position_xid::text, position_id, " \
	"delivered, " MS("last_delivered_at") ", state = 'dead-letter', " \
	"attempts, " MS("next_attempt_at") ", last_error_event, " \
	"last_error_status, last_error_reason, " MS("last_error_at") ", " \
	MS("held_since") ", warehouse, NULL::text "
/* clang-format on */

enum {
	ST_SUB_INSERT,
	ST_SUB_LIST,
	ST_SUB_GET,
	ST_SUB_DELETE,
	ST_SUB_RESUME,
	ST_SUB_CLAIM,
	ST_SUB_DELIVERED,
	ST_SUB_FAILED,
	ST_SUB_IDLE,
	ST_SUB_COUNTS,
	ST_COUNT
};

/* clang-format off */
static const struct store_statement statements[ST_COUNT] = {
	/* $9/$10: the position to start after; NULL: the feed as it stands,
	 * which is every transaction older than the oldest still running
	 * (the feed's own horizon, store/feed.c). */
	[ST_SUB_INSERT] = { "sub_insert",
		"INSERT INTO event_subscriptions (id, warehouse, name, url, secret, filter, "
		"  timeout_ms, max_attempts, created_by, position_xid, position_id) "
		"VALUES ($1::uuid, $2::text, $3, $4, $5, $6::jsonb, $7::int, $8::int, $11, "
		"  coalesce($9::xid8, pg_snapshot_xmin(pg_current_snapshot())), "
		"  coalesce($10::bigint, 0))" },
	[ST_SUB_LIST] = { "sub_list",
		SUB_COLUMNS "FROM event_subscriptions WHERE warehouse = $1::text "
		"ORDER BY created_at, id" },
	[ST_SUB_GET] = { "sub_get",
		SUB_COLUMNS "FROM event_subscriptions WHERE id = $1::uuid AND warehouse = $2::text" },
	[ST_SUB_DELETE] = { "sub_delete",
		"DELETE FROM event_subscriptions WHERE id = $1::uuid AND warehouse = $2::text "
		"RETURNING id" },
	/* Only a dead-lettered subscription; $3 true skips the held event. */
	[ST_SUB_RESUME] = { "sub_resume",
		"UPDATE event_subscriptions SET state = 'active', attempts = 0, "
		"  next_attempt_at = clock_timestamp(), held_since = NULL, "
		"  lease_owner = NULL, lease_until = NULL, "
		"  position_xid = CASE WHEN $3::bool THEN last_error_xid ELSE position_xid END, "
		"  position_id = CASE WHEN $3::bool THEN last_error_event ELSE position_id END "
		"WHERE id = $1::uuid AND warehouse = $2::text AND state = 'dead-letter' "
		"RETURNING id" },
	/* Up to $3 due subscriptions of every warehouse, leased to $1 for
	 * their timeout and $2 seconds more. */
	[ST_SUB_CLAIM] = { "sub_claim",
		"UPDATE event_subscriptions u SET lease_owner = $1, "
		"  lease_until = clock_timestamp() + make_interval(secs => u.timeout_ms / 1000.0 + $2::int) "
		"WHERE u.id IN (SELECT id FROM event_subscriptions "
		"  WHERE state = 'active' AND next_attempt_at <= clock_timestamp() "
		"  AND (lease_until IS NULL OR lease_until < clock_timestamp() OR lease_owner = $1) "
		"  ORDER BY next_attempt_at LIMIT $3::int FOR UPDATE SKIP LOCKED) "
		"RETURNING id, name, url, filter::text, timeout_ms, max_attempts, 0::bigint, "
		"  created_by, position_xid::text, position_id, delivered, 0::bigint, false, "
		"  attempts, 0::bigint, last_error_event, last_error_status, last_error_reason, "
		"  0::bigint, 0::bigint, warehouse, secret" },
	/* Only by the lease's owner, and only forward. */
	[ST_SUB_DELIVERED] = { "sub_delivered",
		"UPDATE event_subscriptions SET position_xid = $3::xid8, position_id = $4::bigint, "
		"  delivered = delivered + 1, last_delivered_at = clock_timestamp(), attempts = 0, "
		"  next_attempt_at = clock_timestamp() "
		"WHERE id = $1::uuid AND lease_owner = $2 AND state = 'active' "
		"AND (position_xid, position_id) < ($3::xid8, $4::bigint) RETURNING id" },
	/* The retry waits $7 ms, between half and all of it (jitter); the
	 * last allowed attempt holds the event: dead-letter. */
	[ST_SUB_FAILED] = { "sub_failed",
		"UPDATE event_subscriptions SET attempts = attempts + 1, "
		"  last_error_xid = $3::xid8, last_error_event = $4::bigint, "
		"  last_error_status = $5::int, last_error_reason = $6, "
		"  last_error_at = clock_timestamp(), "
		"  state = CASE WHEN attempts + 1 >= max_attempts THEN 'dead-letter' ELSE 'active' END, "
		"  held_since = CASE WHEN attempts + 1 >= max_attempts THEN clock_timestamp() END, "
		"  next_attempt_at = clock_timestamp() + "
		"    make_interval(secs => $7::double precision * (0.5 + random() / 2) / 1000), "
		"  lease_owner = NULL, lease_until = NULL "
		"WHERE id = $1::uuid AND lease_owner = $2 AND state = 'active' "
		"RETURNING state = 'dead-letter', attempts" },
	/* Nothing to deliver: the lease ends, the next round looks again. */
	[ST_SUB_IDLE] = { "sub_idle",
		"UPDATE event_subscriptions SET lease_owner = NULL, lease_until = NULL "
		"WHERE id = $1::uuid AND lease_owner = $2 RETURNING id" },
	[ST_SUB_COUNTS] = { "sub_counts",
		"SELECT count(*) FILTER (WHERE state = 'active'), "
		"  count(*) FILTER (WHERE state = 'dead-letter') FROM event_subscriptions" },
};
/* clang-format on */

const struct store_statements store_sub_statements = { statements, ST_COUNT, NULL };

void store_sub_row_clear(struct sub_row *row)
{
	free(row->name);
	free(row->url);
	free(row->filter);
	free(row->created_by);
	free(row->last_error_reason);
	free(row->warehouse);
	if (row->secret != NULL) {
		/* sealed, but no copy of it outlives its use */
		memset(row->secret, 0, strlen(row->secret));
		free(row->secret);
	}
	memset(row, 0, sizeof(*row));
}

static void sub_clear(void *row)
{
	store_sub_row_clear(row);
}

void store_sub_rows_free(struct sub_row *rows, size_t count)
{
	store_rows_free(rows, count, sizeof(*rows), sub_clear);
}

static bool sub_fill(PGresult *r, int i, void *dst)
{
	struct sub_row *row = dst;

	memset(row, 0, sizeof(*row));
	store_col_text(r, i, 0, row->id, sizeof(row->id));
	row->timeout_ms = (long)store_col_ll(r, i, 4);
	row->max_attempts = (int)store_col_ll(r, i, 5);
	row->created_at_ms = store_col_ll(r, i, 6);
	store_col_text(r, i, 8, row->position_xid, sizeof(row->position_xid));
	row->position_id = store_col_ll(r, i, 9);
	row->delivered = store_col_ll(r, i, 10);
	row->last_delivered_at_ms = PQgetisnull(r, i, 11) ? -1 : store_col_ll(r, i, 11);
	row->dead = strcmp(PQgetvalue(r, i, 12), "t") == 0;
	row->attempts = (int)store_col_ll(r, i, 13);
	row->next_attempt_at_ms = store_col_ll(r, i, 14);
	row->last_error_event = PQgetisnull(r, i, 15) ? -1 : store_col_ll(r, i, 15);
	row->last_error_status = (int)store_col_ll(r, i, 16);
	row->last_error_at_ms = store_col_ll(r, i, 18);
	row->held_since_ms = PQgetisnull(r, i, 19) ? -1 : store_col_ll(r, i, 19);
	if (store_col_copy(r, i, 1, &row->name) && store_col_copy(r, i, 2, &row->url) &&
	    store_col_copy(r, i, 3, &row->filter) && store_col_copy(r, i, 7, &row->created_by) &&
	    store_col_copy(r, i, 17, &row->last_error_reason) &&
	    store_col_copy(r, i, 20, &row->warehouse) && store_col_copy(r, i, 21, &row->secret))
		return true;
	store_sub_row_clear(row);
	return false;
}

static bool rows_of(struct store *s, int st, int nparams, const char *const *params,
		    struct sub_row **rows, size_t *count, struct floe_error *err)
{
	PGresult *r = store_exec(s, &statements[st], nparams, params, err);
	void *out = NULL;

	*rows = NULL;
	*count = 0;
	if (r == NULL)
		return false;
	bool ok = store_rows_read(r, PQntuples(r), sizeof(**rows), sub_fill, sub_clear, &out, count,
				  err);
	PQclear(r);
	*rows = out;
	return ok;
}

/* Runs st and tells whether it touched a row. */
static bool touched(struct store *s, int st, int nparams, const char *const *params, bool *hit,
		    struct floe_error *err)
{
	PGresult *r = store_exec(s, &statements[st], nparams, params, err);

	*hit = false;
	if (r == NULL)
		return false;
	*hit = PQntuples(r) > 0;
	PQclear(r);
	return true;
}

bool store_sub_insert(struct store *s, const struct sub_row *row, const char *start_xid,
		      long long start_id, struct floe_error *err)
{
	char tmo[32], att[32], sid[32];

	(void)snprintf(tmo, sizeof(tmo), "%ld", row->timeout_ms);
	(void)snprintf(att, sizeof(att), "%d", row->max_attempts);
	(void)snprintf(sid, sizeof(sid), "%lld", start_id);
	const char *params[11] = {
		row->id,        s->warehouse, row->name, row->url,  row->secret,
		row->filter,    tmo,          att,       start_xid, start_xid != NULL ? sid : NULL,
		row->created_by
	};
	PGresult *r = store_exec(s, &statements[ST_SUB_INSERT], 11, params, err);
	PQclear(r);
	return r != NULL;
}

bool store_sub_list(struct store *s, struct sub_row **rows, size_t *count, struct floe_error *err)
{
	const char *params[1] = { s->warehouse };

	return rows_of(s, ST_SUB_LIST, 1, params, rows, count, err);
}

bool store_sub_get(struct store *s, const char *id, struct sub_row *row, bool *found,
		   struct floe_error *err)
{
	const char *params[2] = { id, s->warehouse };

	return store_get_row_by(s, &statements[ST_SUB_GET], 2, params, sub_fill, row, found, err);
}

bool store_sub_delete(struct store *s, const char *id, bool *deleted, struct floe_error *err)
{
	const char *params[2] = { id, s->warehouse };

	return touched(s, ST_SUB_DELETE, 2, params, deleted, err);
}

bool store_sub_resume(struct store *s, const char *id, bool skip, bool *resumed,
		      struct floe_error *err)
{
	const char *params[3] = { id, s->warehouse, skip ? "true" : "false" };

	return touched(s, ST_SUB_RESUME, 3, params, resumed, err);
}

bool store_sub_claim(struct store *s, const char *owner, int margin_s, int limit,
		     struct sub_row **rows, size_t *count, struct floe_error *err)
{
	char margin[32], lim[32];

	(void)snprintf(margin, sizeof(margin), "%d", margin_s);
	(void)snprintf(lim, sizeof(lim), "%d", limit);
	const char *params[3] = { owner, margin, lim };
	return rows_of(s, ST_SUB_CLAIM, 3, params, rows, count, err);
}

bool store_sub_delivered(struct store *s, const char *id, const char *owner, const char *xid,
			 long long event_id, bool *kept, struct floe_error *err)
{
	char eid[32];

	(void)snprintf(eid, sizeof(eid), "%lld", event_id);
	const char *params[4] = { id, owner, xid, eid };
	return touched(s, ST_SUB_DELIVERED, 4, params, kept, err);
}

bool store_sub_failed(struct store *s, const char *id, const char *owner, const char *xid,
		      long long event_id, long http_status, const char *reason, long long retry_ms,
		      bool *kept, bool *dead, int *attempts, struct floe_error *err)
{
	char eid[32], st[32], wait[32];

	(void)snprintf(eid, sizeof(eid), "%lld", event_id);
	(void)snprintf(st, sizeof(st), "%ld", http_status);
	(void)snprintf(wait, sizeof(wait), "%lld", retry_ms);
	const char *params[7] = { id, owner, xid, eid, http_status > 0 ? st : NULL, reason, wait };
	PGresult *r = store_exec(s, &statements[ST_SUB_FAILED], 7, params, err);

	*kept = false;
	*dead = false;
	*attempts = 0;
	if (r == NULL)
		return false;
	if (PQntuples(r) == 1) {
		*kept = true;
		*dead = strcmp(PQgetvalue(r, 0, 0), "t") == 0;
		*attempts = (int)store_col_ll(r, 0, 1);
	}
	PQclear(r);
	return true;
}

bool store_sub_idle(struct store *s, const char *id, const char *owner, struct floe_error *err)
{
	const char *params[2] = { id, owner };
	bool hit;

	return touched(s, ST_SUB_IDLE, 2, params, &hit, err);
}

bool store_sub_counts(struct store *s, long long *active, long long *dead, struct floe_error *err)
{
	PGresult *r = store_exec(s, &statements[ST_SUB_COUNTS], 0, NULL, err);

	*active = 0;
	*dead = 0;
	if (r == NULL)
		return false;
	*active = store_col_ll(r, 0, 0);
	*dead = store_col_ll(r, 0, 1);
	PQclear(r);
	return true;
}
