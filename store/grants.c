/*
 * grants.c - the grants relation: privileges of roles on the catalog, a
 * namespace or a table, named by the object's id (a rename keeps them,
 * a drop removes them); the privileges roles hold on an object and what
 * they make visible.
 */
#include "store.h"
#include "store_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The role ($1) and object ($3 kind, $4 levels, $5 table name, $6 the
 * warehouse) of a grant, as CTEs: r the role, o its (namespace_id,
 * table_id, warehouse). ADMIN is floe's whole administration, kept as the
 * default warehouse's whichever names it. */
#define GRANT_OBJECT                                                                                          \
	"WITH r AS (SELECT id FROM roles WHERE name = $1), "                                                  \
	"ns AS (SELECT id FROM namespaces n WHERE " IN_WH("n", "$6") " AND n.levels = " LEVELS(               \
		"$4") "), "                                                                                   \
		      "tb AS (SELECT t.id FROM tables t, ns WHERE t.namespace_id = ns.id "                    \
		      "  AND t.name = $5::text), "                                                            \
		      "o AS (SELECT CASE WHEN $3::text = 'namespace' THEN (SELECT id FROM ns) END AS ns_id, " \
		      "  CASE WHEN $3::text = 'table' THEN (SELECT id FROM tb) END AS t_id, "                 \
		      "  CASE WHEN $2::text = 'ADMIN' THEN '' ELSE $6::text END AS wh) "

enum {
	ST_GRANT_INSERT,
	ST_GRANT_PROBE,
	ST_GRANT_DELETE,
	ST_GRANT_LIST,
	ST_PRIVILEGES_ON,
	ST_NS_VISIBLE,
	ST_COUNT
};

/* One statement a row, its SQL laid out as SQL. */
/* clang-format off */
static const struct store_statement statements[ST_COUNT] = {
	/* A grant held already, a missing role or object: no row, no error
	 * (the probe tells which). */
	[ST_GRANT_INSERT] = { "grant_insert",
		GRANT_OBJECT
		"INSERT INTO grants (role_id, privilege, object_kind, namespace_id, table_id, "
		"  warehouse) "
		"SELECT r.id, $2, $3, o.ns_id, o.t_id, o.wh FROM r, o "
		"WHERE $3::text = 'catalog' OR o.ns_id IS NOT NULL OR o.t_id IS NOT NULL "
		"ON CONFLICT (role_id, privilege, object_kind, warehouse, (coalesce(namespace_id, 0)), "
		"  (coalesce(table_id, 0))) DO NOTHING RETURNING id" },
	[ST_GRANT_PROBE] = { "grant_probe",
		GRANT_OBJECT
		"SELECT EXISTS (SELECT 1 FROM r), EXISTS (SELECT 1 FROM ns), "
		"  EXISTS (SELECT 1 FROM tb), $2::text IS NOT NULL" },
	[ST_GRANT_DELETE] = { "grant_delete",
		GRANT_OBJECT
		"DELETE FROM grants g USING r, o WHERE g.role_id = r.id AND g.privilege = $2 "
		"AND g.object_kind = $3::text AND g.warehouse = o.wh "
		"AND g.namespace_id IS NOT DISTINCT FROM o.ns_id "
		"AND g.table_id IS NOT DISTINCT FROM o.t_id RETURNING g.id" },
	/* No row: no such role; one row of NULLs: a role without grants. */
	[ST_GRANT_LIST] = { "grant_list",
		"SELECT x.id, x.privilege, x.object_kind, x.levels, x.name, x.at, x.warehouse "
		"FROM roles r "
		"LEFT JOIN LATERAL (SELECT g.id, g.privilege, g.object_kind, g.warehouse, "
		"  array_to_string(coalesce(n.levels, tn.levels), E'\\x1f') AS levels, "
		"  t.name, " TS("g.created_at") " AS at "
		"  FROM grants g LEFT JOIN namespaces n ON n.id = g.namespace_id "
		"  LEFT JOIN tables t ON t.id = g.table_id "
		"  LEFT JOIN namespaces tn ON tn.id = t.namespace_id "
		"  WHERE g.role_id = r.id AND g.id > $2::bigint "
		"  ORDER BY g.id LIMIT $3::bigint) x ON true "
		"WHERE r.name = $1" },
	/* $1 roles, $2 levels (NULL: the catalog), $3 table (NULL: the
	 * namespace), $4 the warehouse. Each ancestor namespace is one index
	 * lookup. */
	[ST_PRIVILEGES_ON] = { "privileges_on",
		"WITH lv AS (SELECT " LEVELS("$2") " AS l), "
		"tb AS (SELECT t.id FROM tables t JOIN namespaces n ON n.id = t.namespace_id, lv "
		"  WHERE $3::text IS NOT NULL AND " IN_WH("n", "$4") " AND n.levels = lv.l "
		"  AND t.name = $3::text) "
		"SELECT DISTINCT g.privilege COLLATE \"C\" AS p FROM grants g, lv "
		"WHERE g.role_id = ANY($1::bigint[]) AND ((g.object_kind = 'catalog' "
		"    AND (g.warehouse = $4::text OR g.privilege = 'ADMIN')) "
		"  OR g.namespace_id IN (SELECT a.id FROM generate_series(1, cardinality(lv.l)) k "
		"    JOIN namespaces a ON " IN_WH("a", "$4") " AND a.levels = lv.l[1:k]) "
		"  OR g.table_id IN (SELECT id FROM tb)) "
		"ORDER BY p" },
	[ST_NS_VISIBLE] = { "ns_visible",
		"SELECT 1 FROM namespaces c WHERE " IN_WH("c", "$3") " AND c.levels = " LEVELS("$1") " "
		"AND (" GRANT_AT_OR_ABOVE("$2", "c.levels", "$3") " "
		"  OR " GRANT_AT_OR_BELOW("$2", "c.levels", "$3") ")" },
};
/* clang-format on */

const struct store_statements store_grant_statements = { statements, ST_COUNT, NULL };

static const char *const on_names[] = {
	[GRANT_ON_CATALOG] = "catalog",
	[GRANT_ON_NAMESPACE] = "namespace",
	[GRANT_ON_TABLE] = "table",
};

/* The parameters $1..$6 of GRANT_OBJECT into params; *levels is a new
 * string (or NULL on the catalog) the caller frees. */
static bool grant_params(const struct store *s, const char *role, const char *privilege,
			 enum grant_on on, const struct ns_ident *ns, const char *table,
			 const char *params[6], char **levels, struct floe_error *err)
{
	*levels = NULL;
	if ((unsigned)on > GRANT_ON_TABLE || (on != GRANT_ON_CATALOG && ns == NULL) ||
	    (on == GRANT_ON_TABLE && table == NULL))
		return floe_err(err, FE_INTERNAL, "a grant's object is incomplete");
	if (on != GRANT_ON_CATALOG) {
		*levels = store_levels_param(ns, err);
		if (*levels == NULL)
			return false;
	}
	params[0] = role;
	params[1] = privilege;
	params[2] = on_names[on];
	params[3] = *levels;
	params[4] = on == GRANT_ON_TABLE ? table : NULL;
	params[5] = s->warehouse;
	return true;
}

/* After an insert that added nothing: why. */
static bool grant_why_not(struct store *s, const char *const params[6], enum grant_on on,
			  bool *inserted, struct floe_error *err)
{
	PGresult *r = store_exec(s, &statements[ST_GRANT_PROBE], 6, params, err);
	bool ok = false;

	if (r == NULL)
		return false;
	if (PQntuples(r) != 1) {
		floe_err(err, FE_INTERNAL, "the grant probe answered no row");
		goto done;
	}
	if (strcmp(PQgetvalue(r, 0, 0), "t") != 0)
		floe_err(err, FE_NOT_FOUND, "no such role");
	else if (on != GRANT_ON_CATALOG && strcmp(PQgetvalue(r, 0, 1), "t") != 0)
		store_ns_missing(err);
	else if (on == GRANT_ON_TABLE && strcmp(PQgetvalue(r, 0, 2), "t") != 0)
		floe_err(err, FE_NO_SUCH_TABLE, "no such table");
	else
		ok = true; /* held already */
	*inserted = false;
done:
	PQclear(r);
	return ok;
}

bool store_grant_insert(struct store *s, const char *role, const char *privilege, enum grant_on on,
			const struct ns_ident *ns, const char *table, bool *inserted,
			struct floe_error *err)
{
	const char *params[6];
	char *levels = NULL;
	PGresult *r = NULL;
	bool ok = false;

	*inserted = false;
	if (!grant_params(s, role, privilege, on, ns, table, params, &levels, err))
		goto done;
	r = store_exec(s, &statements[ST_GRANT_INSERT], 6, params, err);
	if (r == NULL) {
		/* 23514: the CHECKs on the privilege and where it is granted;
		 * 23503: the object was dropped while we inserted. */
		if (strcmp(s->sqlstate, "23514") == 0)
			floe_err(err, FE_BAD_REQUEST, "%s is not granted on a %s", privilege,
				 on_names[on]);
		else if (strcmp(s->sqlstate, "23503") == 0)
			floe_err(err,
				 on == GRANT_ON_TABLE ? FE_NO_SUCH_TABLE : FE_NO_SUCH_NAMESPACE,
				 "the object was dropped");
		goto done;
	}
	if (PQntuples(r) == 1) {
		*inserted = true;
		ok = true;
		goto done;
	}
	ok = grant_why_not(s, params, on, inserted, err);
done:
	PQclear(r);
	free(levels);
	return ok;
}

bool store_grant_delete(struct store *s, const char *role, const char *privilege, enum grant_on on,
			const struct ns_ident *ns, const char *table, bool *found,
			struct floe_error *err)
{
	const char *params[6];
	char *levels = NULL;
	PGresult *r;

	*found = false;
	if (!grant_params(s, role, privilege, on, ns, table, params, &levels, err))
		return false;
	r = store_exec(s, &statements[ST_GRANT_DELETE], 6, params, err);
	free(levels);
	if (r == NULL)
		return false;
	*found = PQntuples(r) > 0;
	PQclear(r);
	return true;
}

/* Fills a struct grant_row from the columns of ST_GRANT_LIST. */
static bool grant_fill(PGresult *r, int i, void *dst)
{
	struct grant_row *row = dst;
	const char *kind = PQgetvalue(r, i, 2);

	memset(row, 0, sizeof(*row));
	row->id = store_col_ll(r, i, 0);
	row->on = strcmp(kind, "table") == 0       ? GRANT_ON_TABLE
		  : strcmp(kind, "namespace") == 0 ? GRANT_ON_NAMESPACE
						   : GRANT_ON_CATALOG;
	store_col_text(r, i, 5, row->created_at, sizeof(row->created_at));
	store_col_text(r, i, 6, row->warehouse, sizeof(row->warehouse));
	if (store_col_copy(r, i, 1, &row->privilege) && store_col_ns(r, i, 3, &row->ns) &&
	    store_col_copy(r, i, 4, &row->table))
		return true;
	store_grant_clear(row);
	return false;
}

bool store_grant_list(struct store *s, const char *role, long long after_id, long limit,
		      struct grant_row **rows, size_t *count, bool *more, struct floe_error *err)
{
	char after_p[32], limit_p[32];
	void *out = NULL;
	PGresult *r;

	*rows = NULL;
	*count = 0;
	*more = false;
	(void)snprintf(after_p, sizeof(after_p), "%lld", after_id);
	(void)snprintf(limit_p, sizeof(limit_p), "%ld", limit + 1);
	const char *params[3] = { role, after_p, limit < 0 ? NULL : limit_p };
	r = store_exec(s, &statements[ST_GRANT_LIST], 3, params, err);
	if (r == NULL)
		return false;
	if (PQntuples(r) == 0) {
		PQclear(r);
		return floe_err(err, FE_NOT_FOUND, "no such role");
	}
	int n = PQgetisnull(r, 0, 0) ? 0 : store_page(r, limit, more);
	bool ok = store_rows_read(r, n, sizeof(**rows), grant_fill, store_grant_clear, &out, count,
				  err);
	PQclear(r);
	*rows = out;
	return ok;
}

bool store_privileges_on(struct store *s, const long long *role_ids, size_t nroles,
			 const struct ns_ident *ns, const char *table, char ***privileges,
			 size_t *n, struct floe_error *err)
{
	char *roles = NULL, *levels = NULL;
	PGresult *r = NULL;
	bool ok = false;

	*privileges = NULL;
	*n = 0;
	if (nroles == 0)
		return true; /* no role, no grant */
	roles = store_ids_param(role_ids, nroles, err);
	if (roles == NULL)
		goto done;
	if (ns != NULL) {
		levels = store_levels_param(ns, err);
		if (levels == NULL)
			goto done;
	}
	const char *params[4] = { roles, levels, ns != NULL ? table : NULL, s->warehouse };
	r = store_exec(s, &statements[ST_PRIVILEGES_ON], 4, params, err);
	if (r == NULL)
		goto done;
	if (PQntuples(r) == 0) {
		ok = true;
		goto done;
	}
	ok = store_names_read(r, PQntuples(r), 0, privileges, n, err);
done:
	PQclear(r);
	free(roles);
	free(levels);
	return ok;
}

bool store_ns_visible(struct store *s, const long long *role_ids, size_t nroles,
		      const struct ns_ident *ns, bool *visible, struct floe_error *err)
{
	char *roles = NULL, *levels = NULL;
	PGresult *r = NULL;
	bool ok = false;

	*visible = false;
	if (nroles == 0)
		return true;
	roles = store_ids_param(role_ids, nroles, err);
	levels = roles != NULL ? store_levels_param(ns, err) : NULL;
	if (levels == NULL)
		goto done;
	const char *params[3] = { levels, roles, s->warehouse };
	r = store_exec(s, &statements[ST_NS_VISIBLE], 3, params, err);
	if (r == NULL)
		goto done;
	*visible = PQntuples(r) > 0;
	ok = true;
done:
	PQclear(r);
	free(roles);
	free(levels);
	return ok;
}
