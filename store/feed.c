/*
 * feed.c - the change_events relation: the change feed's outbox, written
 * by triggers in the transaction of each change (migration 0020), read
 * here in (xid, id) order; and feed_timelines (migration 0032), the
 * database timelines those positions were written on, against which a
 * reader's position in any log kept in (xid, id) order is judged
 * (store_position_verdict: the feed's, the audit log's).
 */
#include "store.h"
#include "store_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

enum {
	ST_FEED_LIST,
	ST_FEED_EXPIRE,
	ST_FEED_OPERATION,
	ST_FEED_TIMELINE_NOTE,
	ST_FEED_POSITION,
	ST_COUNT
};

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
	/* Before a connection's first write: the timeline is recorded with
	 * an xid below every later transaction on it (migration 0032). On a
	 * timeline after one already recorded (a failover), event ids move
	 * to timeline << 40, so an id the lost history handed out is never
	 * handed out again. Answers the system identifier, the timeline and
	 * whether it was new. */
	[ST_FEED_TIMELINE_NOTE] = { "feed_timeline_note",
		"WITH " FEED_HERE ", "
		"added AS (INSERT INTO feed_timelines (system_identifier, timeline, first_xid) "
		"  SELECT h.sysid, h.tl, pg_current_xact_id() FROM here h "
		"  WHERE NOT EXISTS (SELECT 1 FROM feed_timelines f "
		"    WHERE f.system_identifier = h.sysid AND f.timeline = h.tl) "
		"  ON CONFLICT DO NOTHING RETURNING timeline) "
		"SELECT h.sysid, h.tl, EXISTS (SELECT 1 FROM added), "
		"  CASE WHEN EXISTS (SELECT 1 FROM added) AND EXISTS (SELECT 1 FROM feed_timelines f "
		"    WHERE f.system_identifier = h.sysid AND f.timeline < h.tl) "
		"  THEN setval('change_events_id_seq', greatest((SELECT last_value FROM change_events_id_seq), "
		"    h.tl::bigint << 40)) END "
		"FROM here h" },
	/* A reader's position in the change feed (store_internal.h). */
	[ST_FEED_POSITION] = { "feed_position", POSITION_VERDICT("change_events") },
	[ST_FEED_EXPIRE] = { "feed_expire",
		/* The oldest ids, of those the ones past the retention: a
		 * bounded walk of the primary key, since ids rise with time. */
		"DELETE FROM change_events WHERE id IN (SELECT id FROM change_events "
		"  ORDER BY id LIMIT $2::int) "
		"AND occurred_at < now() - make_interval(secs => $1::bigint)" },
};
/* clang-format on */

/* On every new connection, before its first request: notes the
 * database's system identifier and timeline in feed_timelines when this
 * is the first connection on them (a newly promoted primary), so feed
 * positions of earlier timelines are checked against where it began. */
static bool store_feed_timeline_note(struct store *s, struct floe_error *err);

const struct store_statements store_feed_statements = { statements, ST_COUNT,
							store_feed_timeline_note };

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
	(void)snprintf(after, sizeof(after), "%lld", q->after.id);
	(void)snprintf(since, sizeof(since), "%lld", q->since_ms);
	(void)snprintf(lim, sizeof(lim), "%ld", limit + 1);
	const char *params[9] = { q->after.xid[0] != '\0' ? q->after.xid : "0",
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

static bool store_feed_timeline_note(struct store *s, struct floe_error *err)
{
	PGresult *r = store_exec(s, &statements[ST_FEED_TIMELINE_NOTE], 0, NULL, err);

	if (r == NULL)
		return false;
	if (PQntuples(r) == 1 && strcmp(PQgetvalue(r, 0, 2), "t") == 0)
		log_info("store",
			 "change feed: first connection on database %s timeline %s; "
			 "feed positions of earlier timelines are checked against it",
			 PQgetvalue(r, 0, 0), PQgetvalue(r, 0, 1));
	PQclear(r);
	return true;
}

bool store_position_verdict(struct store *s, const struct store_statement *st,
			    const struct feed_position *pos, struct feed_here *here,
			    enum feed_verdict *verdict, struct floe_error *err)
{
	char after[32], tl[16];
	bool named = pos->system[0] != '\0';

	memset(here, 0, sizeof(*here));
	*verdict = FEED_POSITION_OK;
	(void)snprintf(after, sizeof(after), "%lld", pos->id);
	(void)snprintf(tl, sizeof(tl), "%ld", pos->timeline);
	const char *params[4] = { pos->xid[0] != '\0' ? pos->xid : "0", after,
				  named ? pos->system : NULL, named ? tl : NULL };
	PGresult *r = store_exec(s, st, 4, params, err);
	if (r == NULL)
		return false;
	if (PQntuples(r) != 1) {
		PQclear(r);
		return floe_err(err, FE_INTERNAL, "a reader's position cannot be read");
	}
	store_col_text(r, 0, 0, here->system, sizeof(here->system));
	here->timeline = (long)store_col_ll(r, 0, 1);
	const char *v = PQgetvalue(r, 0, 2);
	if (strcmp(v, "beyond") == 0)
		*verdict = FEED_POSITION_BEYOND;
	else if (strcmp(v, "other") == 0)
		*verdict = FEED_POSITION_OTHER_DATABASE;
	else if (strcmp(v, "lost") == 0)
		*verdict = FEED_POSITION_LOST;
	PQclear(r);
	return true;
}

bool store_feed_position(struct store *s, const struct feed_position *pos, struct feed_here *here,
			 enum feed_verdict *verdict, struct floe_error *err)
{
	return store_position_verdict(s, &statements[ST_FEED_POSITION], pos, here, verdict, err);
}
