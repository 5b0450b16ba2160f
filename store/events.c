/*
 * events.c - the audit_events relation: the append-only audit log and
 * its paging, whose positions are judged as the change feed's are.
 */
#include "store.h"
#include "store_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

enum { ST_EVENT_INSERT, ST_EVENT_LIST, ST_EVENT_DROPPED_CONTROLS, ST_EVENT_POSITION, ST_COUNT };

/* One statement a row, its SQL laid out as SQL. */
/* clang-format off */
static const struct store_statement statements[ST_COUNT] = {
	[ST_EVENT_INSERT] = { "event_insert",
		"INSERT INTO audit_events (event, request_id, namespace, table_name, run_id, "
		"  details, principal, client_id) "
		"VALUES ($1, $2, string_to_array($3::text, E'\\x1f'), $4, $5::uuid, "
		"  coalesce($6::jsonb, '{}'::jsonb) || " EVENT_WAREHOUSE("$9") ", "
		"  coalesce($7, 'anonymous'), $8)" },
	[ST_EVENT_LIST] = { "event_list",
		"SELECT id, " TS("at") ", event, principal, request_id, "
		"  array_to_string(namespace, E'\\x1f'), table_name, run_id, details::text "
		"  , xid::text AS xid_text, client_id, c.position, encode(c.hash, 'hex') "
		"FROM audit_events LEFT JOIN audit_chain c ON c.event_id = audit_events.id "
		"WHERE (xid, id) > ($7::xid8, $1::bigint) "
		"AND xid < pg_snapshot_xmin(pg_current_snapshot()) "
		"AND ($2::text IS NULL OR (cardinality(namespace) >= cardinality(" LEVELS("$2") ") "
		"     AND namespace[1:cardinality(" LEVELS("$2") ")] = " LEVELS("$2") ") "
		/* A hook event stored before its scope was its columns: the
		 * scope in its details (the columns are in the hash chain, so
		 * the row stays as it was written). */
		"  OR (namespace IS NULL AND event IN ('hook.registered', 'hook.deleted') "
		"     AND (CASE WHEN jsonb_typeof(details->'scope'->'namespace') = 'array' "
		"          THEN ARRAY(SELECT jsonb_array_elements_text(details->'scope'->'namespace')) "
		"          END)[1:cardinality(" LEVELS("$2") ")] = " LEVELS("$2") ")) "
		"AND ($3::text IS NULL OR table_name = $3 "
		"  OR (table_name IS NULL AND event IN ('hook.registered', 'hook.deleted') "
		"      AND details->'scope'->>'table' = $3)) "
		"AND ($4::text IS NULL OR run_id = $4::uuid) "
		"AND ($5::text IS NULL OR at >= $5::timestamptz) "
		"AND coalesce(details->>'warehouse', '') = $8::text "
		/* The column, not the text of it the list gives: an output
		 * name would win in ORDER BY, and '1000' sorts before '978'. */
		"ORDER BY audit_events.xid, audit_events.id LIMIT $6::bigint" },
	/* Every warehouse's: a table's uuid is its own wherever it went
	 * (migration 0025's index). */
	[ST_EVENT_DROPPED_CONTROLS] = { "event_dropped_controls",
		"SELECT (details->'controls')::text FROM audit_events "
		"WHERE event = 'table.dropped' AND details->>'table-uuid' = $1::text "
		"ORDER BY id DESC LIMIT 1" },
	/* A reader's page token (store_internal.h): the audit log is paged
	 * in (xid, id) order as the change feed is read. */
	[ST_EVENT_POSITION] = { "event_position", POSITION_VERDICT("audit_events") },
};
/* clang-format on */

const struct store_statements store_event_statements = { statements, ST_COUNT, NULL };

bool store_event_insert(struct store *s, const char *event, const struct store_actor *who,
			const struct ns_ident *ns, const char *table, const char *run_id,
			const json_t *details, struct floe_error *err)
{
	char *levels = NULL;
	char *det = NULL;
	PGresult *r;

	if (ns != NULL && ns->nlevels > 0) {
		levels = store_levels_param(ns, err);
		if (levels == NULL)
			return false;
	}
	if (details != NULL) {
		det = json_dumps(details, JSON_COMPACT);
		if (det == NULL) {
			free(levels);
			return floe_err(err, FE_INTERNAL, "out of memory");
		}
	}
	const char *params[9] = { event, who->request_id, levels,         table,       run_id,
				  det,   who->principal,  who->client_id, s->warehouse };
	r = store_exec(s, &statements[ST_EVENT_INSERT], 9, params, err);
	free(levels);
	free(det);
	/* A change whose event cannot be written does not happen: the
	 * caller rolls back, and the client may retry. */
	if (r == NULL) {
		log_error("store", "audit event %s cannot be written (%s)", event,
			  s->sqlstate[0] ? s->sqlstate : "no connection");
		return floe_err(
			err, FE_UNAVAILABLE,
			"the audit log cannot be written; nothing was changed, retry later");
	}
	PQclear(r);
	return true;
}

/* Fills a struct event_row from the columns of ST_EVENT_LIST. */
static bool event_fill(PGresult *r, int i, void *dst)
{
	struct event_row *row = dst;

	memset(row, 0, sizeof(*row));
	row->id = store_col_ll(r, i, 0);
	store_col_text(r, i, 1, row->at, sizeof(row->at));
	store_col_text(r, i, 9, row->xid, sizeof(row->xid));
	row->chain_position = store_col_ll(r, i, 11);
	store_col_text(r, i, 12, row->chain_hash, sizeof(row->chain_hash));
	if (store_col_copy(r, i, 2, &row->event) && store_col_copy(r, i, 3, &row->principal) &&
	    store_col_copy(r, i, 4, &row->request_id) && store_col_ns(r, i, 5, &row->ns) &&
	    store_col_copy(r, i, 6, &row->table) && store_col_copy(r, i, 7, &row->run_id) &&
	    store_col_copy(r, i, 8, &row->details) && store_col_copy(r, i, 10, &row->client_id))
		return true;
	store_event_row_clear(row);
	return false;
}

bool store_event_list(struct store *s, const char *after_xid, long long after_id,
		      const struct ns_ident *ns, const char *table, const char *run_id,
		      const char *since, long limit, struct event_row **rows, size_t *count,
		      bool *more, struct floe_error *err)
{
	char after[32], lim[32];
	char *levels = NULL;
	void *out = NULL;
	PGresult *r;

	*rows = NULL;
	*count = 0;
	*more = false;
	if (ns != NULL && ns->nlevels > 0) {
		levels = store_levels_param(ns, err);
		if (levels == NULL)
			return false;
	}
	(void)snprintf(after, sizeof(after), "%lld", after_id);
	(void)snprintf(lim, sizeof(lim), "%ld", limit + 1);
	const char *params[8] = { after,
				  levels,
				  table,
				  run_id,
				  since,
				  limit < 0 ? NULL : lim,
				  after_xid ? after_xid : "0",
				  s->warehouse };
	r = store_exec(s, &statements[ST_EVENT_LIST], 8, params, err);
	free(levels);
	if (r == NULL) {
		/* 22007/22008: a since that is no timestamp (the catalog
		 * words it). */
		if (strncmp(s->sqlstate, "22", 2) == 0)
			return floe_err(err, FE_BAD_REQUEST, "since is no timestamp");
		return false;
	}
	bool ok = store_rows_read(r, store_page(r, limit, more), sizeof(**rows), event_fill,
				  store_event_clear, &out, count, err);
	PQclear(r);
	*rows = out;
	return ok;
}

bool store_event_dropped_controls(struct store *s, const char *uuid, bool *found, char **controls,
				  struct floe_error *err)
{
	const char *params[1] = { uuid };
	PGresult *r;

	*found = false;
	*controls = NULL;
	r = store_exec(s, &statements[ST_EVENT_DROPPED_CONTROLS], 1, params, err);
	if (r == NULL)
		return false;
	bool ok = true;
	if (PQntuples(r) > 0) {
		*found = true;
		ok = store_col_copy(r, 0, 0, controls) ||
		     floe_err(err, FE_INTERNAL, "out of memory");
	}
	PQclear(r);
	return ok;
}

bool store_event_position(struct store *s, const struct feed_position *pos, struct feed_here *here,
			  enum feed_verdict *verdict, struct floe_error *err)
{
	return store_position_verdict(s, &statements[ST_EVENT_POSITION], pos, here, verdict, err);
}
