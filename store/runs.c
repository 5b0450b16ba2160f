/*
 * runs.c - the wap_runs relation: write-audit-publish runs, their state
 * moves and audit leases.
 */
#include "store.h"
#include "store_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The commits c that wrote to the run: they set the run's branch after
 * the run's staged_after (commit_log.refs, migration 0009) and, once it is
 * published or abandoned, not after that (a kept branch may be written on). */
#define WROTE_TO_RUN                                                           \
	"c.table_uuid = wap_runs.table_uuid AND c.id > wap_runs.staged_after " \
	"AND wap_runs.branch = ANY (c.refs) AND (wap_runs.state NOT IN "       \
	"('published', 'abandoned') OR c.committed_at <= wap_runs.updated_at)"

/* The distinct principals of the commits that wrote to the run, as a JSON
 * array text: the first 100 by name, for display only (separation of
 * duties asks ST_RUN_ACTED, which reads every one). */
#define WRITTEN_BY                                                                     \
	"(SELECT coalesce(json_agg(w.p ORDER BY w.p), '[]')::text FROM ("              \
	"  SELECT DISTINCT c.principal AS p FROM commit_log c WHERE " WROTE_TO_RUN " " \
	"  ORDER BY 1 LIMIT 100) w)"

/* Who staged, published and abandoned the run, and who wrote to it. */
#define RUN_ACTORS                                                         \
	"staged_by, staged_client_id, published_by, published_client_id, " \
	"abandoned_by, abandoned_client_id, " WRITTEN_BY

#define RUN_COLUMNS                                                                       \
	"SELECT id, table_uuid, array_to_string(namespace, E'\\x1f'), table_name, "       \
	"branch, state, base_snapshot_id, audited_snapshot_id, published_snapshot_id, "   \
	"audits::text, " TS("created_at") ", " TS("updated_at") ", seq, " RUN_ACTORS ", " \
								"release_id "

enum {
	ST_RUN_INSERT,
	ST_RUN_GET,
	ST_RUN_LIST,
	ST_RUN_TRANSITION,
	ST_RUN_EXPIRE_STALE,
	ST_RUN_MEMBERS,
	ST_RUN_ACTED,
	ST_COUNT
};

/* One statement a row, its SQL laid out as SQL. */
/* clang-format off */
static const struct store_statement statements[ST_COUNT] = {
	[ST_RUN_INSERT] = { "run_insert",
		"INSERT INTO wap_runs (id, table_uuid, namespace, table_name, branch, state, "
		"  base_snapshot_id, staged_by, staged_client_id, staged_after, warehouse, "
		"  release_id) "
		"VALUES ($1::uuid, $2::uuid, " LEVELS("$3") ", $4, $5, 'staged', $6::bigint, "
		"  coalesce($8, 'anonymous'), $9, CASE WHEN $7::boolean THEN 0 ELSE "
		"  coalesce((SELECT max(id) FROM commit_log WHERE table_uuid = $2::uuid), 0) END, "
		"  $10::text, $11::uuid)" },
	[ST_RUN_GET] = { "run_get", RUN_COLUMNS "FROM wap_runs WHERE id = $1::uuid" },
	[ST_RUN_LIST] = { "run_list", RUN_COLUMNS "FROM wap_runs "
		"WHERE table_uuid = $1::uuid AND ($2::bigint IS NULL OR seq < $2::bigint) "
		"ORDER BY seq DESC LIMIT $3::bigint" },
	/* A release's members in the order their tables sort: the order a
	 * publish takes their rows in, on every replica. */
	[ST_RUN_MEMBERS] = { "run_members", RUN_COLUMNS "FROM wap_runs "
		"WHERE release_id = $1::uuid ORDER BY namespace COLLATE \"C\", "
		"table_name COLLATE \"C\" LIMIT $2::bigint" },
	/* Whether $2 staged the run, and whether any commit by $2 wrote to
	 * it: one exact answer, however many others wrote. */
	[ST_RUN_ACTED] = { "run_acted",
		"SELECT wap_runs.staged_by = $2, EXISTS (SELECT 1 FROM commit_log c "
		"  WHERE c.principal = $2 AND " WROTE_TO_RUN ") "
		"FROM wap_runs WHERE id = $1::uuid" },
	[ST_RUN_TRANSITION] = { "run_transition",
		"UPDATE wap_runs SET state = $2, "
		"  audited_snapshot_id = coalesce($4::bigint, audited_snapshot_id), "
		"  published_snapshot_id = coalesce($5::bigint, published_snapshot_id), "
		"  audits = coalesce($6::jsonb, audits), updated_at = now(), "
		"  lease_until = CASE WHEN $2 = 'auditing' "
		"    THEN now() + make_interval(secs => $7::double precision / 1000) END, "
		"  lease_owner = CASE WHEN $2 = 'auditing' THEN $8::uuid END, "
		"  published_by = CASE WHEN $2 = 'published' THEN coalesce($9, 'anonymous') "
		"    ELSE published_by END, "
		"  published_client_id = CASE WHEN $2 = 'published' THEN $10 "
		"    ELSE published_client_id END, "
		"  abandoned_by = CASE WHEN $2 = 'abandoned' THEN coalesce($9, 'anonymous') "
		"    ELSE abandoned_by END, "
		"  abandoned_client_id = CASE WHEN $2 = 'abandoned' THEN $10 "
		"    ELSE abandoned_client_id END "
		"WHERE id = $1::uuid AND ((state = ANY (string_to_array($3::text, ',')) "
		"    AND (state <> 'auditing' OR lease_owner = $8::uuid)) "
		"  OR ('auditing-stale' = ANY (string_to_array($3::text, ',')) "
		"      AND state = 'auditing' AND lease_until < now())) "
		"RETURNING id" },
	/* Runs left auditing by a floe that stopped: failed, with their
	 * event, in one statement. */
	[ST_RUN_EXPIRE_STALE] = { "run_expire_stale",
		"WITH stale AS (UPDATE wap_runs SET state = 'audit-failed', updated_at = now(), "
		"  lease_until = NULL, lease_owner = NULL "
		"  WHERE id IN (SELECT id FROM wap_runs WHERE state = 'auditing' "
		"    AND lease_until < now() - make_interval(secs => $1::bigint) "
		"    LIMIT $2::int FOR UPDATE SKIP LOCKED) "
		"  RETURNING id, namespace, table_name, warehouse) "
		"INSERT INTO audit_events (event, namespace, table_name, run_id, details) "
		"SELECT 'wap.lease-expired', namespace, table_name, id, "
		"  jsonb_build_object('state', 'audit-failed', 'reason', "
		"    'the floe auditing this run stopped before the audit ended; publish again') "
		"  || " EVENT_WAREHOUSE("warehouse") " "
		"FROM stale" },
};
/* clang-format on */

const struct store_statements store_run_statements = { statements, ST_COUNT, NULL };

/* Fills a struct run_row from the columns of RUN_COLUMNS. */
static bool run_fill(PGresult *r, int i, void *dst)
{
	struct run_row *row = dst;

	memset(row, 0, sizeof(*row));
	store_col_text(r, i, 0, row->id, sizeof(row->id));
	store_col_text(r, i, 1, row->table_uuid, sizeof(row->table_uuid));
	row->has_base = !PQgetisnull(r, i, 6);
	row->base_snapshot_id = store_col_ll(r, i, 6);
	row->has_audited = !PQgetisnull(r, i, 7);
	row->audited_snapshot_id = store_col_ll(r, i, 7);
	row->has_published = !PQgetisnull(r, i, 8);
	row->published_snapshot_id = store_col_ll(r, i, 8);
	store_col_text(r, i, 10, row->created_at, sizeof(row->created_at));
	store_col_text(r, i, 11, row->updated_at, sizeof(row->updated_at));
	row->seq = store_col_ll(r, i, 12);
	if (store_col_ns(r, i, 2, &row->ns) && store_col_copy(r, i, 3, &row->table_name) &&
	    store_col_copy(r, i, 4, &row->branch) && store_col_copy(r, i, 5, &row->state) &&
	    store_col_copy(r, i, 9, &row->audits) && store_col_copy(r, i, 13, &row->staged_by) &&
	    store_col_copy(r, i, 14, &row->staged_client_id) &&
	    store_col_copy(r, i, 15, &row->published_by) &&
	    store_col_copy(r, i, 16, &row->published_client_id) &&
	    store_col_copy(r, i, 17, &row->abandoned_by) &&
	    store_col_copy(r, i, 18, &row->abandoned_client_id) &&
	    store_col_copy(r, i, 19, &row->written_by)) {
		store_col_text(r, i, 20, row->release_id, sizeof(row->release_id));
		return true;
	}
	store_run_row_clear(row);
	return false;
}

bool store_run_insert(struct store *s, const char *id, const char *table_uuid,
		      const struct ns_ident *ns, const char *table, const char *branch,
		      long long base_snapshot, bool adopted, const char *release_id,
		      const struct store_actor *who, struct floe_error *err)
{
	char *levels = store_levels_param(ns, err);
	char base[32];
	PGresult *r;

	if (levels == NULL)
		return false;
	(void)snprintf(base, sizeof(base), "%lld", base_snapshot);
	const char *params[11] = { id,
				   table_uuid,
				   levels,
				   table,
				   branch,
				   base_snapshot >= 0 ? base : NULL,
				   adopted ? "true" : "false",
				   who->principal,
				   who->client_id,
				   s->warehouse,
				   release_id };
	r = store_exec(s, &statements[ST_RUN_INSERT], 11, params, err);
	free(levels);
	if (r == NULL)
		return false;
	PQclear(r);
	return true;
}

bool store_run_get(struct store *s, const char *id, struct run_row *row, bool *found,
		   struct floe_error *err)
{
	return store_get_row(s, &statements[ST_RUN_GET], id, run_fill, row, found, err);
}

bool store_run_list(struct store *s, const char *table_uuid, long long before_seq, long limit,
		    struct run_row **rows, size_t *count, bool *more, struct floe_error *err)
{
	char before[32], lim[32];
	void *out = NULL;
	PGresult *r;

	*rows = NULL;
	*count = 0;
	*more = false;
	(void)snprintf(before, sizeof(before), "%lld", before_seq);
	(void)snprintf(lim, sizeof(lim), "%ld", limit + 1);
	const char *params[3] = { table_uuid, before_seq > 0 ? before : NULL,
				  limit < 0 ? NULL : lim };
	r = store_exec(s, &statements[ST_RUN_LIST], 3, params, err);
	if (r == NULL)
		return false;
	bool ok = store_rows_read(r, store_page(r, limit, more), sizeof(**rows), run_fill,
				  store_run_clear, &out, count, err);
	PQclear(r);
	*rows = out;
	return ok;
}

bool store_run_members(struct store *s, const char *release_id, long limit, struct run_row **rows,
		       size_t *count, bool *more, struct floe_error *err)
{
	char lim[32];
	void *out = NULL;
	PGresult *r;

	*rows = NULL;
	*count = 0;
	*more = false;
	(void)snprintf(lim, sizeof(lim), "%ld", limit + 1);
	const char *params[2] = { release_id, lim };
	r = store_exec(s, &statements[ST_RUN_MEMBERS], 2, params, err);
	if (r == NULL)
		return false;
	bool ok = store_rows_read(r, store_page(r, limit, more), sizeof(**rows), run_fill,
				  store_run_clear, &out, count, err);
	PQclear(r);
	*rows = out;
	return ok;
}

bool store_run_acted(struct store *s, const char *id, const char *principal, bool *staged,
		     bool *wrote, struct floe_error *err)
{
	const char *params[2] = { id, principal };
	PGresult *r;

	*staged = false;
	*wrote = false;
	r = store_exec(s, &statements[ST_RUN_ACTED], 2, params, err);
	if (r == NULL)
		return false;
	if (PQntuples(r) == 1) {
		*staged = strcmp(PQgetvalue(r, 0, 0), "t") == 0;
		*wrote = strcmp(PQgetvalue(r, 0, 1), "t") == 0;
	}
	PQclear(r);
	return true;
}

bool store_run_transition(struct store *s, const char *id, const char *from_states,
			  const char *to_state, long long audited, long long published,
			  const json_t *audits, long lease_ms, const char *lease_owner,
			  const struct store_actor *who, bool *moved, struct floe_error *err)
{
	char a[32], p[32], l[32];
	char *audits_text = NULL;
	PGresult *r;

	*moved = false;
	(void)snprintf(a, sizeof(a), "%lld", audited);
	(void)snprintf(p, sizeof(p), "%lld", published);
	if (audits != NULL) {
		audits_text = json_dumps(audits, JSON_COMPACT);
		if (audits_text == NULL)
			return floe_err(err, FE_INTERNAL, "out of memory");
	}
	(void)snprintf(l, sizeof(l), "%ld", lease_ms > 0 ? lease_ms : 0);
	const char *params[10] = { id,
				   to_state,
				   from_states,
				   audited >= 0 ? a : NULL,
				   published >= 0 ? p : NULL,
				   audits_text,
				   l,
				   lease_owner,
				   who != NULL ? who->principal : NULL,
				   who != NULL ? who->client_id : NULL };
	r = store_exec(s, &statements[ST_RUN_TRANSITION], 10, params, err);
	free(audits_text);
	if (r == NULL)
		return false;
	*moved = PQntuples(r) == 1;
	PQclear(r);
	return true;
}

bool store_run_expire_stale(struct store *s, long long past_lease_s, int limit, long *expired,
			    struct floe_error *err)
{
	return store_exec_expire(s, &statements[ST_RUN_EXPIRE_STALE], past_lease_s, limit, expired,
				 err);
}
