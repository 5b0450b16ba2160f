/*
 * namespaces.c - the namespaces relation: create, load, list, drop and
 * property updates, the nearest namespace that requires audited
 * publishes, and the listing of the namespaces roles may see.
 */
#include "store.h"
#include "store_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The children c of a namespace (parent: the condition on c.parent_id)
 * sorting after $1, at most $2, that roles $3 may see in warehouse $5. */
#define NS_LIST_VISIBLE(parent)                                                          \
	"SELECT array_to_string(c.levels, E'\\x1f') FROM namespaces c WHERE " parent " " \
	"AND ($1::text IS NULL OR c.levels > " LEVELS(                                   \
		"$1") ") "                                                               \
		      "AND (" GRANT_AT_OR_ABOVE(                                         \
			      "$3", "c.levels",                                          \
			      "$5") " "                                                  \
				    "  OR " GRANT_AT_OR_BELOW(                           \
					    "$3", "c.levels",                            \
					    "$5") ") "                                   \
						  "ORDER BY c.levels LIMIT $2::bigint"

enum {
	ST_NS_CREATE,
	ST_NS_LOAD,
	ST_NS_ID,
	ST_NS_LIST_TOP,
	ST_NS_LIST_CHILDREN,
	ST_NS_DROP,
	ST_NS_UPDATE_PROPERTIES,
	ST_NS_WAP_REQUIRED,
	ST_NS_LIST_TOP_VISIBLE,
	ST_NS_LIST_CHILDREN_VISIBLE,
	ST_COUNT
};

/* One statement a row, its SQL laid out as SQL. */
/* clang-format off */
static const struct store_statement statements[ST_COUNT] = {
	[ST_NS_CREATE] = { "ns_create",
		"WITH lv AS (SELECT " LEVELS("$1") " AS levels), "
		"parent AS (SELECT n.id FROM namespaces n, lv "
		"  WHERE cardinality(lv.levels) > 1 AND " IN_WH("n", "$3") " "
		"  AND n.levels = lv.levels[1:cardinality(lv.levels) - 1]) "
		"INSERT INTO namespaces (warehouse, parent_id, levels, properties) "
		"SELECT $3::text, (SELECT id FROM parent), lv.levels, $2::jsonb FROM lv "
		"WHERE cardinality(lv.levels) = 1 OR EXISTS (SELECT 1 FROM parent) "
		"ON CONFLICT (warehouse, levels) DO NOTHING RETURNING id" },
	[ST_NS_LOAD] = { "ns_load",
		"SELECT properties::text FROM namespaces n "
		"WHERE " IN_WH("n", "$2") " AND n.levels = " LEVELS("$1") },
	[ST_NS_ID] = { "ns_id",
		"SELECT id FROM namespaces n "
		"WHERE " IN_WH("n", "$2") " AND n.levels = " LEVELS("$1") },
	[ST_NS_LIST_TOP] = { "ns_list_top",
		"SELECT array_to_string(levels, E'\\x1f') FROM namespaces n "
		"WHERE parent_id IS NULL AND " IN_WH("n", "$3") " "
		"AND ($1::text IS NULL OR levels > " LEVELS("$1") ") "
		"ORDER BY levels LIMIT $2::bigint" },
	[ST_NS_LIST_CHILDREN] = { "ns_list_children",
		"SELECT array_to_string(levels, E'\\x1f') FROM namespaces "
		"WHERE parent_id = $3::bigint "
		"AND ($1::text IS NULL OR levels > " LEVELS("$1") ") "
		"ORDER BY levels LIMIT $2::bigint" },
	[ST_NS_DROP] = { "ns_drop",
		"DELETE FROM namespaces n WHERE " IN_WH("n", "$2") " AND n.levels = " LEVELS("$1") " "
		"AND NOT EXISTS (SELECT 1 FROM namespaces c WHERE c.parent_id = n.id) "
		"AND NOT EXISTS (SELECT 1 FROM tables t WHERE t.namespace_id = n.id) "
		"RETURNING id, properties::text" },
	[ST_NS_UPDATE_PROPERTIES] = { "ns_update_properties",
		"WITH old AS (SELECT id, properties FROM namespaces o "
		"  WHERE " IN_WH("o", "$4") " AND o.levels = " LEVELS("$1") " FOR UPDATE) "
		"UPDATE namespaces n SET properties = (old.properties - "
		"  ARRAY(SELECT jsonb_array_elements_text($2::jsonb))) || $3::jsonb, "
		"  updated_at = now() "
		"FROM old WHERE n.id = old.id RETURNING old.properties::text" },
	[ST_NS_WAP_REQUIRED] = { "ns_wap_required",
		"WITH lv AS (SELECT " LEVELS("$1") " AS l) "
		"SELECT array_to_string(n.levels, '.') FROM namespaces n, lv "
		"WHERE " IN_WH("n", "$3") " AND cardinality(n.levels) <= cardinality(lv.l) "
		"AND n.levels = lv.l[1:cardinality(n.levels)] "
		"AND lower(n.properties->>$2) = 'true' "
		"ORDER BY cardinality(n.levels) LIMIT 1" },
	/* The listings above with $3 (role ids): only the children with a
	 * grant on the catalog, themselves, above or below them. */
	[ST_NS_LIST_TOP_VISIBLE] = { "ns_list_top_visible",
		NS_LIST_VISIBLE("c.parent_id IS NULL AND " IN_WH("c", "$4")) },
	[ST_NS_LIST_CHILDREN_VISIBLE] = { "ns_list_children_visible",
		NS_LIST_VISIBLE("c.parent_id = $4::bigint") },
};
/* clang-format on */

const struct store_statements store_ns_statements = { statements, ST_COUNT, NULL };

bool store_ns_lookup_id(struct store *s, const char *levels, char *id, size_t idlen, bool *found,
			struct floe_error *err)
{
	const char *params[2] = { levels, s->warehouse };
	PGresult *r = store_exec(s, &statements[ST_NS_ID], 2, params, err);

	if (r == NULL)
		return false;
	*found = PQntuples(r) > 0;
	if (*found)
		(void)snprintf(id, idlen, "%s", PQgetvalue(r, 0, 0));
	PQclear(r);
	return true;
}

bool store_ns_missing(struct floe_error *err)
{
	return floe_err(err, FE_NO_SUCH_NAMESPACE, "no such namespace");
}

bool store_ns_create(struct store *s, const struct ns_ident *ns, const json_t *properties,
		     struct floe_error *err)
{
	char *levels = store_levels_param(ns, err);
	char *props = NULL;
	PGresult *r = NULL;
	bool ok = false;

	if (levels == NULL)
		return false;
	props = json_dumps(properties, JSON_COMPACT);
	if (props == NULL) {
		floe_err(err, FE_INTERNAL, "out of memory");
		goto done;
	}
	const char *params[3] = { levels, props, s->warehouse };
	r = store_exec(s, &statements[ST_NS_CREATE], 3, params, err);
	if (r == NULL) {
		/* 23503: the parent was dropped while we inserted. */
		if (strcmp(s->sqlstate, "23503") == 0)
			store_ns_missing(err);
		goto done;
	}
	if (PQntuples(r) == 1) {
		ok = true;
		goto done;
	}
	bool exists = false;
	char id[32];
	if (!store_ns_lookup_id(s, levels, id, sizeof(id), &exists, err))
		goto done;
	if (exists)
		floe_err(err, FE_ALREADY_EXISTS, "the namespace already exists");
	else
		store_ns_missing(err);
done:
	PQclear(r);
	free(props);
	free(levels);
	return ok;
}

bool store_ns_load(struct store *s, const struct ns_ident *ns, json_t **properties,
		   struct floe_error *err)
{
	char *levels = store_levels_param(ns, err);
	PGresult *r;
	json_error_t jerr;

	if (levels == NULL)
		return false;
	const char *params[2] = { levels, s->warehouse };
	r = store_exec(s, &statements[ST_NS_LOAD], 2, params, err);
	free(levels);
	if (r == NULL)
		return false;
	if (PQntuples(r) == 0) {
		PQclear(r);
		return store_ns_missing(err);
	}
	*properties = json_loads(PQgetvalue(r, 0, 0), 0, &jerr);
	PQclear(r);
	if (*properties == NULL)
		return floe_err(err, FE_INTERNAL, "stored properties are unreadable");
	return true;
}

bool store_ns_exists(struct store *s, const struct ns_ident *ns, bool *exists,
		     struct floe_error *err)
{
	char *levels = store_levels_param(ns, err);
	char id[32];
	bool ok;

	if (levels == NULL)
		return false;
	ok = store_ns_lookup_id(s, levels, id, sizeof(id), exists, err);
	free(levels);
	return ok;
}

static void ns_row_clear(void *row)
{
	ident_ns_clear(row);
}

void store_ns_rows_free(struct ns_ident *rows, size_t count)
{
	store_rows_free(rows, count, sizeof(*rows), ns_row_clear);
}

/* Fills a namespace from the 0x1F-joined levels in column 0. */
static bool ns_row_fill(PGresult *r, int i, void *row)
{
	return store_col_ns(r, i, 0, row);
}

/* store_ns_list, or with roles (a bigint[] parameter) its visible
 * variant. */
static bool ns_list_page(struct store *s, const char *roles, const struct ns_ident *parent,
			 const struct ns_ident *after, long limit, struct ns_ident **rows,
			 size_t *count, bool *more, struct floe_error *err)
{
	char *after_p = NULL;
	char limit_p[32];
	char parent_id[32] = "";
	void *out = NULL;
	PGresult *r = NULL;

	*rows = NULL;
	*count = 0;
	*more = false;
	if (parent != NULL) {
		char *levels = store_levels_param(parent, err);
		bool found = false;
		if (levels == NULL)
			return false;
		bool ok = store_ns_lookup_id(s, levels, parent_id, sizeof(parent_id), &found, err);
		free(levels);
		if (!ok)
			return false;
		if (!found)
			return store_ns_missing(err);
	}
	if (after != NULL) {
		after_p = store_levels_param(after, err);
		if (after_p == NULL)
			return false;
	}
	/* One row more than asked tells whether another page follows. */
	(void)snprintf(limit_p, sizeof(limit_p), "%ld", limit + 1);
	/* A child is in its parent's warehouse; the top level names it. */
	const char *where = parent != NULL ? parent_id : s->warehouse;
	const char *plain[3] = { after_p, limit < 0 ? NULL : limit_p, where };
	const char *visible[5] = { after_p, limit < 0 ? NULL : limit_p, roles, where,
				   s->warehouse };
	if (roles == NULL)
		r = store_exec(s, &statements[parent ? ST_NS_LIST_CHILDREN : ST_NS_LIST_TOP], 3,
			       plain, err);
	else
		r = store_exec(
			s,
			&statements[parent ? ST_NS_LIST_CHILDREN_VISIBLE : ST_NS_LIST_TOP_VISIBLE],
			5, visible, err);
	free(after_p);
	if (r == NULL)
		return false;
	bool ok = store_rows_read(r, store_page(r, limit, more), sizeof(**rows), ns_row_fill,
				  ns_row_clear, &out, count, err);
	PQclear(r);
	*rows = out;
	return ok;
}

bool store_ns_list(struct store *s, const struct ns_ident *parent, const struct ns_ident *after,
		   long limit, struct ns_ident **rows, size_t *count, bool *more,
		   struct floe_error *err)
{
	return ns_list_page(s, NULL, parent, after, limit, rows, count, more, err);
}

bool store_ns_list_visible(struct store *s, const long long *role_ids, size_t nroles,
			   const struct ns_ident *parent, const struct ns_ident *after, long limit,
			   struct ns_ident **rows, size_t *count, bool *more,
			   struct floe_error *err)
{
	/* No role: an empty array, which no grant matches. */
	char *roles = store_ids_param(role_ids, nroles, err);

	*rows = NULL;
	*count = 0;
	*more = false;
	if (roles == NULL)
		return false;
	bool ok = ns_list_page(s, roles, parent, after, limit, rows, count, more, err);
	free(roles);
	return ok;
}

bool store_ns_drop(struct store *s, const struct ns_ident *ns, json_t **properties,
		   struct floe_error *err)
{
	char *levels = store_levels_param(ns, err);
	PGresult *r;
	json_error_t jerr;
	bool ok = false;

	*properties = NULL;
	if (levels == NULL)
		return false;
	const char *params[2] = { levels, s->warehouse };
	r = store_exec(s, &statements[ST_NS_DROP], 2, params, err);
	if (r == NULL) {
		/* 23503: a child or table appeared while we deleted. */
		if (strcmp(s->sqlstate, "23503") == 0)
			goto not_empty;
		goto done;
	}
	if (PQntuples(r) == 1) {
		*properties = json_loads(PQgetvalue(r, 0, 1), 0, &jerr);
		ok = *properties != NULL;
		if (!ok)
			floe_err(err, FE_INTERNAL, "stored properties are unreadable");
		goto done;
	}
	bool exists = false;
	char id[32];
	if (!store_ns_lookup_id(s, levels, id, sizeof(id), &exists, err))
		goto done;
	if (!exists) {
		store_ns_missing(err);
		goto done;
	}
not_empty:
	floe_err(err, FE_NAMESPACE_NOT_EMPTY, "the namespace holds tables, views or namespaces");
done:
	PQclear(r);
	free(levels);
	return ok;
}

bool store_ns_update_properties(struct store *s, const struct ns_ident *ns, const json_t *removals,
				const json_t *updates, json_t **old_properties,
				struct floe_error *err)
{
	char *levels = store_levels_param(ns, err);
	char *rem = json_dumps(removals, JSON_COMPACT);
	char *upd = json_dumps(updates, JSON_COMPACT);
	PGresult *r = NULL;
	json_error_t jerr;
	bool ok = false;

	if (levels == NULL)
		goto done;
	if (rem == NULL || upd == NULL) {
		floe_err(err, FE_INTERNAL, "out of memory");
		goto done;
	}
	const char *params[4] = { levels, rem, upd, s->warehouse };
	r = store_exec(s, &statements[ST_NS_UPDATE_PROPERTIES], 4, params, err);
	if (r == NULL)
		goto done;
	if (PQntuples(r) == 0) {
		store_ns_missing(err);
		goto done;
	}
	*old_properties = json_loads(PQgetvalue(r, 0, 0), 0, &jerr);
	if (*old_properties == NULL) {
		floe_err(err, FE_INTERNAL, "stored properties are unreadable");
		goto done;
	}
	ok = true;
done:
	PQclear(r);
	free(levels);
	free(rem);
	free(upd);
	return ok;
}

/* --- enforced publish --- */

bool store_ns_property_true(struct store *s, const struct ns_ident *ns, const char *property,
			    char **where, struct floe_error *err)
{
	char *levels = store_levels_param(ns, err);

	*where = NULL;
	if (levels == NULL)
		return false;
	const char *params[3] = { levels, property, s->warehouse };
	bool ok = store_exec_text(s, &statements[ST_NS_WAP_REQUIRED], 3, params, where, err);
	free(levels);
	return ok;
}
