/*
 * feed.c - the change_events relation: the change feed's outbox, written
 * by triggers in the transaction of each change (migration 0020), read
 * here in (xid, id) order.
 */
#include "store.h"
#include "store_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { ST_FEED_LIST, ST_FEED_EXPIRE, ST_FEED_OPERATION, ST_COUNT };

/* clang-format off */
static const struct store_statement statements[ST_COUNT] = {
	/* $1/$2: after (xid, id); $3: at or after this time (ms); $4:
	 * operations and $5: object types, each joined by \x1f; $6: objects
	 * by name (a JSON array of arrays); $7: uuids joined by \x1f; $8:
	 * the warehouse; $9: the limit. Only transactions older than every
	 * one still running are read. */
	[ST_FEED_LIST] = { "feed_list",
		"SELECT e.id, e.xid::text, "
		"  floor(extract(epoch FROM e.occurred_at) * 1000)::bigint, e.operation, "
		"  e.object_type, array_to_string(e.namespace, E'\\x1f'), e.name, e.object_uuid, "
		"  e.principal, e.details::text, "
		"  (SELECT count(*) FROM change_events c WHERE c.xid = e.xid) "
		"FROM change_events e "
		"WHERE (e.xid, e.id) > ($1::xid8, $2::bigint) "
		"AND e.xid < pg_snapshot_xmin(pg_current_snapshot()) "
		"AND e.warehouse = $8::text "
		"AND ($3::bigint IS NULL OR e.occurred_at >= to_timestamp($3::bigint / 1000.0)) "
		"AND ($4::text IS NULL OR e.operation = ANY (string_to_array($4::text, E'\\x1f'))) "
		"AND ($5::text IS NULL OR e.object_type = ANY (string_to_array($5::text, E'\\x1f'))) "
		"AND ($6::jsonb IS NULL OR EXISTS (SELECT 1 FROM jsonb_array_elements($6::jsonb) o(v), "
		"  LATERAL (SELECT ARRAY(SELECT x COLLATE \"C\" FROM jsonb_array_elements_text(o.v) "
		"    WITH ORDINALITY t(x, n) ORDER BY n) AS want) w "
		"  WHERE e.namespace[1:cardinality(w.want)] = w.want "
		"  OR (e.name IS NOT NULL AND e.namespace || e.name = w.want))) "
		"AND ($7::text IS NULL OR e.object_uuid::text = ANY (string_to_array($7::text, E'\\x1f'))) "
		"ORDER BY e.xid, e.id LIMIT $9::bigint" },
	/* Read by the triggers of migration 0020 until the transaction ends. */
	[ST_FEED_OPERATION] = { "feed_operation",
		"SELECT set_config('floe.feed_operation', $1, true)" },
	[ST_FEED_EXPIRE] = { "feed_expire",
		/* The oldest ids, of those the ones past the retention: a
		 * bounded walk of the primary key, since ids rise with time. */
		"DELETE FROM change_events WHERE id IN (SELECT id FROM change_events "
		"  ORDER BY id LIMIT $2::int) "
		"AND occurred_at < now() - make_interval(secs => $1::bigint)" },
};
/* clang-format on */

const struct store_statements store_feed_statements = { statements, ST_COUNT };

void store_feed_row_clear(struct feed_row *row)
{
	free(row->operation);
	free(row->object_type);
	free(row->name);
	free(row->principal);
	free(row->details);
	ident_ns_clear(&row->ns);
	memset(row, 0, sizeof(*row));
}

static void feed_clear(void *row)
{
	store_feed_row_clear(row);
}

void store_feed_rows_free(struct feed_row *rows, size_t count)
{
	store_rows_free(rows, count, sizeof(*rows), feed_clear);
}

static bool feed_fill(PGresult *r, int i, void *dst)
{
	struct feed_row *row = dst;

	memset(row, 0, sizeof(*row));
	row->id = store_col_ll(r, i, 0);
	store_col_text(r, i, 1, row->xid, sizeof(row->xid));
	row->at_ms = store_col_ll(r, i, 2);
	store_col_text(r, i, 7, row->uuid, sizeof(row->uuid));
	row->xact_events = store_col_ll(r, i, 10);
	if (store_col_copy(r, i, 3, &row->operation) &&
	    store_col_copy(r, i, 4, &row->object_type) && store_col_ns(r, i, 5, &row->ns) &&
	    store_col_copy(r, i, 6, &row->name) && store_col_copy(r, i, 8, &row->principal) &&
	    store_col_copy(r, i, 9, &row->details))
		return true;
	store_feed_row_clear(row);
	return false;
}

bool store_feed_list(struct store *s, const struct feed_query *q, long limit,
		     struct feed_row **rows, size_t *count, bool *more, struct floe_error *err)
{
	char after[32], since[32], lim[32];
	void *out = NULL;

	*rows = NULL;
	*count = 0;
	*more = false;
	(void)snprintf(after, sizeof(after), "%lld", q->after_id);
	(void)snprintf(since, sizeof(since), "%lld", q->since_ms);
	(void)snprintf(lim, sizeof(lim), "%ld", limit + 1);
	const char *params[9] = { q->after_xid[0] != '\0' ? q->after_xid : "0",
				  after,
				  q->since_ms >= 0 ? since : NULL,
				  q->operations,
				  q->object_types,
				  q->objects_by_name,
				  q->uuids,
				  s->warehouse,
				  lim };
	PGresult *r = store_exec(s, &statements[ST_FEED_LIST], 9, params, err);
	if (r == NULL)
		return false;
	bool ok = store_rows_read(r, store_page(r, limit, more), sizeof(**rows), feed_fill,
				  feed_clear, &out, count, err);
	PQclear(r);
	*rows = out;
	return ok;
}

bool store_feed_expire(struct store *s, long long older_than_s, int limit, long *deleted,
		       struct floe_error *err)
{
	return store_exec_expire(s, &statements[ST_FEED_EXPIRE], older_than_s, limit, deleted, err);
}

bool store_feed_operation(struct store *s, const char *operation, struct floe_error *err)
{
	const char *params[1] = { operation };
	PGresult *r = store_exec(s, &statements[ST_FEED_OPERATION], 1, params, err);
	PQclear(r);
	return r != NULL;
}
