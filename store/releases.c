/*
 * releases.c - the releases relation: write-audit-publish over many
 * tables, its state moves and its audit lease. Its members are wap_runs
 * rows (runs.c) that name it.
 */
#include "store.h"
#include "store_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RELEASE_COLUMNS                                                      \
	"SELECT id, branch, state, audits::text, " TS("created_at") ", " TS( \
		"updated_at") ", seq, staged_by, published_by, abandoned_by "

enum {
	ST_RELEASE_INSERT,
	ST_RELEASE_GET,
	ST_RELEASE_LIST,
	ST_RELEASE_TRANSITION,
	ST_RELEASE_EXPIRE_STALE,
	ST_TABLES_BELOW,
	ST_COUNT
};

/* clang-format off */
static const struct store_statement statements[ST_COUNT] = {
	[ST_RELEASE_INSERT] = { "release_insert",
		"INSERT INTO releases (id, warehouse, branch, state, staged_by) "
		"VALUES ($1::uuid, $2::text, $3, 'staged', coalesce($4, 'anonymous'))" },
	[ST_RELEASE_GET] = { "release_get", RELEASE_COLUMNS "FROM releases "
		"WHERE id = $1::uuid AND warehouse = $2::text" },
	[ST_RELEASE_LIST] = { "release_list", RELEASE_COLUMNS "FROM releases "
		"WHERE warehouse = $1::text AND ($2::bigint IS NULL OR seq < $2::bigint) "
		"ORDER BY seq DESC LIMIT $3::bigint" },
	/* As run_transition (runs.c), without snapshots. */
	[ST_RELEASE_TRANSITION] = { "release_transition",
		"UPDATE releases SET state = $2, "
		"  audits = coalesce($4::jsonb, audits), updated_at = now(), "
		"  lease_until = CASE WHEN $2 = 'auditing' "
		"    THEN now() + make_interval(secs => $5::double precision / 1000) END, "
		"  lease_owner = CASE WHEN $2 = 'auditing' THEN $6::uuid END, "
		"  published_by = CASE WHEN $2 = 'published' THEN coalesce($7, 'anonymous') "
		"    ELSE published_by END, "
		"  abandoned_by = CASE WHEN $2 = 'abandoned' THEN coalesce($7, 'anonymous') "
		"    ELSE abandoned_by END "
		"WHERE id = $1::uuid AND warehouse = $8::text "
		"  AND ((state = ANY (string_to_array($3::text, ',')) "
		"    AND (state <> 'auditing' OR lease_owner = $6::uuid)) "
		"  OR ('auditing-stale' = ANY (string_to_array($3::text, ',')) "
		"      AND state = 'auditing' AND lease_until < now())) "
		"RETURNING id" },
	[ST_RELEASE_EXPIRE_STALE] = { "release_expire_stale",
		"WITH stale AS (UPDATE releases SET state = 'audit-failed', updated_at = now(), "
		"  lease_until = NULL, lease_owner = NULL "
		"  WHERE id IN (SELECT id FROM releases WHERE state = 'auditing' "
		"    AND lease_until < now() - make_interval(secs => $1::bigint) "
		"    LIMIT $2::int FOR UPDATE SKIP LOCKED) "
		"  RETURNING id, warehouse) "
		"INSERT INTO audit_events (event, run_id, details) "
		"SELECT 'release.lease-expired', id, "
		"  jsonb_build_object('state', 'audit-failed', 'reason', "
		"    'the floe auditing this release stopped before the audit ended; publish again') "
		"  || " EVENT_WAREHOUSE("warehouse") " "
		"FROM stale" },
	[ST_TABLES_BELOW] = { "tables_below",
		"WITH lv AS (SELECT " LEVELS("$1") " AS l) "
		"SELECT array_to_string(n.levels, E'\\x1f') || E'\\x1e' || t.name "
		"FROM tables t JOIN namespaces n ON n.id = t.namespace_id, lv "
		"WHERE " IN_WH("n", "$2") " AND t.kind = 'table' "
		"AND cardinality(n.levels) >= cardinality(lv.l) "
		"AND n.levels[1:cardinality(lv.l)] = lv.l "
		"ORDER BY n.levels, t.name LIMIT $3::bigint" },
};
/* clang-format on */

const struct store_statements store_release_statements = { statements, ST_COUNT, NULL };

static bool release_fill(PGresult *r, int i, void *dst)
{
	struct release_row *row = dst;

	memset(row, 0, sizeof(*row));
	store_col_text(r, i, 0, row->id, sizeof(row->id));
	store_col_text(r, i, 4, row->created_at, sizeof(row->created_at));
	store_col_text(r, i, 5, row->updated_at, sizeof(row->updated_at));
	row->seq = store_col_ll(r, i, 6);
	if (store_col_copy(r, i, 1, &row->branch) && store_col_copy(r, i, 2, &row->state) &&
	    store_col_copy(r, i, 3, &row->audits) && store_col_copy(r, i, 7, &row->staged_by) &&
	    store_col_copy(r, i, 8, &row->published_by) &&
	    store_col_copy(r, i, 9, &row->abandoned_by))
		return true;
	store_release_row_clear(row);
	return false;
}

static void release_clear(void *row)
{
	store_release_row_clear(row);
}

void store_release_row_clear(struct release_row *row)
{
	free(row->branch);
	free(row->state);
	free(row->audits);
	free(row->staged_by);
	free(row->published_by);
	free(row->abandoned_by);
	memset(row, 0, sizeof(*row));
}

void store_release_rows_free(struct release_row *rows, size_t count)
{
	store_rows_free(rows, count, sizeof(*rows), release_clear);
}

bool store_release_insert(struct store *s, const char *id, const char *branch,
			  const struct store_actor *who, struct floe_error *err)
{
	const char *params[4] = { id, s->warehouse, branch, who->principal };
	PGresult *r = store_exec(s, &statements[ST_RELEASE_INSERT], 4, params, err);

	if (r == NULL)
		return false;
	PQclear(r);
	return true;
}

bool store_release_get(struct store *s, const char *id, struct release_row *row, bool *found,
		       struct floe_error *err)
{
	const char *params[2] = { id, s->warehouse };

	return store_get_row_by(s, &statements[ST_RELEASE_GET], 2, params, release_fill, row, found,
				err);
}

bool store_release_list(struct store *s, long long before_seq, long limit,
			struct release_row **rows, size_t *count, bool *more,
			struct floe_error *err)
{
	char before[32], lim[32];
	void *out = NULL;
	PGresult *r;

	*rows = NULL;
	*count = 0;
	*more = false;
	(void)snprintf(before, sizeof(before), "%lld", before_seq);
	(void)snprintf(lim, sizeof(lim), "%ld", limit + 1);
	const char *params[3] = { s->warehouse, before_seq > 0 ? before : NULL, lim };
	r = store_exec(s, &statements[ST_RELEASE_LIST], 3, params, err);
	if (r == NULL)
		return false;
	bool ok = store_rows_read(r, store_page(r, limit, more), sizeof(**rows), release_fill,
				  release_clear, &out, count, err);
	PQclear(r);
	*rows = out;
	return ok;
}

bool store_release_transition(struct store *s, const char *id, const char *from_states,
			      const char *to_state, const json_t *audits, long lease_ms,
			      const char *lease_owner, const struct store_actor *who, bool *moved,
			      struct floe_error *err)
{
	char l[32];
	char *audits_text = NULL;
	PGresult *r;

	*moved = false;
	if (audits != NULL) {
		audits_text = json_dumps(audits, JSON_COMPACT);
		if (audits_text == NULL)
			return floe_err(err, FE_INTERNAL, "out of memory");
	}
	(void)snprintf(l, sizeof(l), "%ld", lease_ms > 0 ? lease_ms : 0);
	const char *params[8] = { id,
				  to_state,
				  from_states,
				  audits_text,
				  l,
				  lease_owner,
				  who != NULL ? who->principal : NULL,
				  s->warehouse };
	r = store_exec(s, &statements[ST_RELEASE_TRANSITION], 8, params, err);
	free(audits_text);
	if (r == NULL)
		return false;
	*moved = PQntuples(r) == 1;
	PQclear(r);
	return true;
}

bool store_release_expire_stale(struct store *s, long long past_lease_s, int limit, long *expired,
				struct floe_error *err)
{
	return store_exec_expire(s, &statements[ST_RELEASE_EXPIRE_STALE], past_lease_s, limit,
				 expired, err);
}

bool store_tables_below(struct store *s, const struct ns_ident *ns, long limit, char ***names,
			size_t *count, bool *more, struct floe_error *err)
{
	char *levels = store_levels_param(ns, err);
	char lim[32];
	PGresult *r;

	*names = NULL;
	*count = 0;
	*more = false;
	if (levels == NULL)
		return false;
	(void)snprintf(lim, sizeof(lim), "%ld", limit + 1);
	const char *params[3] = { levels, s->warehouse, lim };
	r = store_exec(s, &statements[ST_TABLES_BELOW], 3, params, err);
	free(levels);
	if (r == NULL)
		return false;
	bool ok = store_names_read(r, store_page(r, limit, more), 0, names, count, err);
	PQclear(r);
	return ok;
}
