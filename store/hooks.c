/*
 * hooks.c - the audit_hooks relation: registered audit hooks, their
 * scopes, and which protected table or namespace a hook guards.
 */
#include "store.h"
#include "store_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HOOK_COLUMNS                                                                \
	"SELECT id, name, url, secret IS NOT NULL, "                                \
	"array_to_string(scope_namespace, E'\\x1f'), scope_table, timeout_ms, " TS( \
		"created_at") " FROM audit_hooks "
/* Hook h covers target x (x.ns levels, x.tbl a table name or NULL for
 * the whole namespace), as ST_HOOKS_IN_SCOPE decides for a table. */
#define HOOK_COVERS(h)                                                                 \
	"(" h ".scope_namespace IS NULL "                                              \
	"OR (" h ".scope_table IS NULL AND cardinality(" h                             \
	".scope_namespace) <= cardinality(x.ns) "                                      \
	"    AND " h ".scope_namespace = x.ns[1:cardinality(" h ".scope_namespace)]) " \
	"OR (x.tbl IS NOT NULL AND " h ".scope_table = x.tbl AND " h ".scope_namespace = x.ns))"

enum {
	ST_HOOK_INSERT,
	ST_HOOK_LIST,
	ST_HOOK_GET,
	ST_HOOK_DELETE,
	ST_HOOK_LOCK,
	ST_HOOK_GUARDS,
	ST_HOOKS_IN_SCOPE,
	ST_HOOK_PLAIN_SECRETS,
	ST_HOOK_SEAL_SECRET,
	ST_COUNT
};

/* One statement a row, its SQL laid out as SQL. */
/* clang-format off */
static const struct store_statement statements[ST_COUNT] = {
	[ST_HOOK_INSERT] = { "hook_insert",
		"INSERT INTO audit_hooks (id, name, url, secret, scope_namespace, "
		"  scope_table, timeout_ms, secret_sealed, warehouse) "
		"VALUES ($1::uuid, $2, $3, $4::text, string_to_array($5::text, E'\\x1f'), $6, $7::int, "
		"  $4::text IS NOT NULL, $8::text)" },
	/* A warehouse's hooks ($1 its name) and no other's. */
	[ST_HOOK_LIST] = { "hook_list",
		HOOK_COLUMNS "WHERE warehouse = $1::text ORDER BY created_at, id" },
	[ST_HOOK_GET] = { "hook_get",
		HOOK_COLUMNS "WHERE id = $1::uuid AND warehouse = $2::text" },
	[ST_HOOK_DELETE] = { "hook_delete",
		"DELETE FROM audit_hooks WHERE id = $1::uuid AND warehouse = $2::text "
		"RETURNING id" },
	/* Serialises the changes of the set of hooks against each other, so
	 * a deletion decides on the hooks as they are when it commits. */
	[ST_HOOK_LOCK] = { "hook_lock", "SELECT pg_advisory_xact_lock(7310593858473447526)" },
	/* The first protected namespace or table of warehouse $2 that hook $1
	 * covers, and the property that protects it: a namespace is
	 * protected when it or a namespace above sets floe.wap.required=true
	 * or floe.wap.release-required=true, a table when it does or its
	 * namespace is. Every hook in scope of such a table is part of its
	 * control (catalog/effective.h), whichever others there are. */
	[ST_HOOK_GUARDS] = { "hook_guards",
		"WITH h AS (SELECT id, scope_namespace, scope_table FROM audit_hooks "
		"  WHERE id = $1::uuid AND warehouse = $2::text), "
		"pr AS (SELECT * FROM (VALUES (1, 'floe.wap.required'), "
		"  (2, 'floe.wap.release-required')) AS v(o, p)), "
		"x AS (SELECT n.levels::text[] COLLATE \"default\" AS ns, NULL::text AS tbl, "
		"    array_to_string(n.levels, '.') AS shown, pr.o, pr.p FROM namespaces n, pr "
		"  WHERE " IN_WH("n", "$2") " AND EXISTS (SELECT 1 FROM namespaces a "
		"    WHERE " IN_WH("a", "$2") " AND lower(a.properties->>pr.p) = 'true' "
		"    AND cardinality(a.levels) <= cardinality(n.levels) "
		"    AND a.levels = n.levels[1:cardinality(a.levels)]) "
		"  UNION ALL SELECT n.levels::text[] COLLATE \"default\", t.name, "
		"    array_to_string(n.levels, '.') || '.' || t.name, pr.o, pr.p "
		"  FROM tables t JOIN namespaces n ON n.id = t.namespace_id, pr "
		"  WHERE " IN_WH("n", "$2") " AND t.kind = 'table' "
		"  AND ((t.metadata LIKE '%' || pr.p || '%' "
		"    AND lower(t.metadata::jsonb->'properties'->>pr.p) = 'true') "
		"  OR EXISTS (SELECT 1 FROM namespaces a "
		"    WHERE " IN_WH("a", "$2") " AND lower(a.properties->>pr.p) = 'true' "
		"    AND cardinality(a.levels) <= cardinality(n.levels) "
		"    AND a.levels = n.levels[1:cardinality(a.levels)]))) "
		"SELECT x.shown, x.p FROM x, h WHERE " HOOK_COVERS("h") " "
		"ORDER BY x.shown, x.o LIMIT 1" },
	[ST_HOOKS_IN_SCOPE] = { "hooks_in_scope",
		"WITH lv AS (SELECT " LEVELS("$1") " AS l) "
		"SELECT h.id, h.name, h.url, h.secret, h.timeout_ms, h.secret_sealed "
		"FROM audit_hooks h, lv "
		"WHERE h.warehouse = $3::text AND (h.scope_namespace IS NULL "
		"OR (h.scope_table IS NULL AND cardinality(h.scope_namespace) <= cardinality(lv.l) "
		"    AND h.scope_namespace = lv.l[1:cardinality(h.scope_namespace)]) "
		"OR (h.scope_table = $2 AND h.scope_namespace = lv.l)) "
		"ORDER BY h.created_at, h.id" },
	/* The secrets a floe from before migration 0010 stored in plain text. */
	[ST_HOOK_PLAIN_SECRETS] = { "hook_plain_secrets",
		"SELECT id, NULL, NULL, secret, timeout_ms, secret_sealed FROM audit_hooks "
		"WHERE NOT secret_sealed AND secret IS NOT NULL ORDER BY id" },
	/* Compare and set: a row another floe sealed meanwhile is left alone. */
	[ST_HOOK_SEAL_SECRET] = { "hook_seal_secret",
		"UPDATE audit_hooks SET secret = $2, secret_sealed = true "
		"WHERE id = $1::uuid AND NOT secret_sealed AND secret = $3 RETURNING id" },
};
/* clang-format on */

const struct store_statements store_hook_statements = { statements, ST_COUNT, NULL };

/* Fills a struct hook_row from the columns of HOOK_COLUMNS. */
static bool hook_fill(PGresult *r, int i, void *dst)
{
	struct hook_row *row = dst;

	memset(row, 0, sizeof(*row));
	store_col_text(r, i, 0, row->id, sizeof(row->id));
	row->has_secret = strcmp(PQgetvalue(r, i, 3), "t") == 0;
	row->timeout_ms = store_col_ll(r, i, 6);
	store_col_text(r, i, 7, row->created_at, sizeof(row->created_at));
	if (store_col_copy(r, i, 1, &row->name) && store_col_copy(r, i, 2, &row->url) &&
	    store_col_ns(r, i, 4, &row->scope_ns) && store_col_copy(r, i, 5, &row->scope_table))
		return true;
	store_hook_row_clear(row);
	return false;
}

bool store_hook_insert(struct store *s, const char *id, const char *name, const char *url,
		       const char *secret, const struct ns_ident *scope_ns, const char *scope_table,
		       long timeout_ms, struct floe_error *err)
{
	char *levels = NULL;
	char tmo[32];
	PGresult *r;

	if (scope_ns != NULL && scope_ns->nlevels > 0) {
		levels = store_levels_param(scope_ns, err);
		if (levels == NULL)
			return false;
	}
	(void)snprintf(tmo, sizeof(tmo), "%ld", timeout_ms);
	const char *params[8] = { id, name, url, secret, levels, scope_table, tmo, s->warehouse };
	r = store_exec(s, &statements[ST_HOOK_INSERT], 8, params, err);
	free(levels);
	if (r == NULL)
		return false;
	PQclear(r);
	return true;
}

bool store_hook_list(struct store *s, struct hook_row **rows, size_t *count, struct floe_error *err)
{
	const char *params[1] = { s->warehouse };
	PGresult *r = store_exec(s, &statements[ST_HOOK_LIST], 1, params, err);
	void *out = NULL;

	*rows = NULL;
	*count = 0;
	if (r == NULL)
		return false;
	bool ok = store_rows_read(r, PQntuples(r), sizeof(**rows), hook_fill, store_hook_clear,
				  &out, count, err);
	PQclear(r);
	*rows = out;
	return ok;
}

bool store_hook_get(struct store *s, const char *id, struct hook_row *row, bool *found,
		    struct floe_error *err)
{
	const char *params[2] = { id, s->warehouse };

	return store_get_row_by(s, &statements[ST_HOOK_GET], 2, params, hook_fill, row, found, err);
}

bool store_hook_delete(struct store *s, const char *id, bool *deleted, struct floe_error *err)
{
	const char *params[2] = { id, s->warehouse };
	PGresult *r = store_exec(s, &statements[ST_HOOK_DELETE], 2, params, err);

	*deleted = false;
	if (r == NULL)
		return false;
	*deleted = PQntuples(r) == 1;
	PQclear(r);
	return true;
}

bool store_hook_lock(struct store *s, struct floe_error *err)
{
	PGresult *r = store_exec(s, &statements[ST_HOOK_LOCK], 0, NULL, err);

	if (r == NULL)
		return false;
	PQclear(r);
	return true;
}

bool store_hook_guards(struct store *s, const char *id, char **target, char **property,
		       struct floe_error *err)
{
	const char *params[2] = { id, s->warehouse };
	PGresult *r = store_exec(s, &statements[ST_HOOK_GUARDS], 2, params, err);

	*target = NULL;
	*property = NULL;
	if (r == NULL)
		return false;
	bool ok = true;
	if (PQntuples(r) > 0) {
		*target = strdup(PQgetvalue(r, 0, 0));
		*property = strdup(PQgetvalue(r, 0, 1));
		if (*target == NULL || *property == NULL) {
			free(*target);
			free(*property);
			*target = NULL;
			*property = NULL;
			ok = floe_err(err, FE_INTERNAL, "out of memory");
		}
	}
	PQclear(r);
	return ok;
}

/* Fills a struct hook_target from the columns of ST_HOOKS_IN_SCOPE. */
static bool target_fill(PGresult *r, int i, void *dst)
{
	struct hook_target *row = dst;

	memset(row, 0, sizeof(*row));
	store_col_text(r, i, 0, row->id, sizeof(row->id));
	row->timeout_ms = store_col_ll(r, i, 4);
	row->secret_sealed = strcmp(PQgetvalue(r, i, 5), "t") == 0;
	if (store_col_copy(r, i, 1, &row->name) && store_col_copy(r, i, 2, &row->url) &&
	    store_col_copy(r, i, 3, &row->secret))
		return true;
	store_hook_target_clear(row);
	return false;
}

/* The targets statement st answers into *rows and *count. */
static bool targets_read(struct store *s, int st, int nparams, const char *const *params,
			 struct hook_target **rows, size_t *count, struct floe_error *err)
{
	PGresult *r = store_exec(s, &statements[st], nparams, params, err);
	void *out = NULL;

	if (r == NULL)
		return false;
	bool ok = store_rows_read(r, PQntuples(r), sizeof(**rows), target_fill,
				  store_hook_target_clear, &out, count, err);
	PQclear(r);
	*rows = out;
	return ok;
}

bool store_hooks_in_scope(struct store *s, const struct ns_ident *ns, const char *table,
			  struct hook_target **rows, size_t *count, struct floe_error *err)
{
	char *levels = store_levels_param(ns, err);

	*rows = NULL;
	*count = 0;
	if (levels == NULL)
		return false;
	const char *params[3] = { levels, table, s->warehouse };
	bool ok = targets_read(s, ST_HOOKS_IN_SCOPE, 3, params, rows, count, err);
	free(levels);
	return ok;
}

bool store_hook_plain_secrets(struct store *s, struct hook_target **rows, size_t *count,
			      struct floe_error *err)
{
	*rows = NULL;
	*count = 0;
	return targets_read(s, ST_HOOK_PLAIN_SECRETS, 0, NULL, rows, count, err);
}

bool store_hook_seal_secret(struct store *s, const char *id, const char *plain, const char *sealed,
			    bool *done, struct floe_error *err)
{
	const char *params[3] = { id, sealed, plain };
	PGresult *r = store_exec(s, &statements[ST_HOOK_SEAL_SECRET], 3, params, err);

	*done = false;
	if (r == NULL)
		return false;
	*done = PQntuples(r) == 1;
	PQclear(r);
	return true;
}
