/*
 * roles.c - the roles and role_members relations: roles by name and who
 * holds them.
 */
#include "store.h"
#include "store_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
	ST_ROLE_INSERT,
	ST_ROLE_LIST,
	ST_ROLE_DELETE,
	ST_ROLE_MEMBER_ADD,
	ST_ROLE_MEMBER_REMOVE,
	ST_ROLE_LOCK,
	ST_ROLE_HOLDS_ADMIN,
	ST_ROLE_SET_ISSUER_GRANTABLE,
	ST_ROLE_ISSUER_GRANTABLE,
	ST_COUNT
};

/* One statement a row, its SQL laid out as SQL. */
/* clang-format off */
static const struct store_statement statements[ST_COUNT] = {
	[ST_ROLE_INSERT] = { "role_insert",
		"INSERT INTO roles (name) VALUES ($1) ON CONFLICT DO NOTHING RETURNING id" },
	[ST_ROLE_LIST] = { "role_list",
		"SELECT id, name, " TS("created_at") ", issuer_grantable FROM roles "
		"WHERE $1::text IS NULL OR name > $1 ORDER BY name LIMIT $2::bigint" },
	/* Memberships and grants go with it (ON DELETE CASCADE). */
	[ST_ROLE_DELETE] = { "role_delete",
		"DELETE FROM roles WHERE name = $1 RETURNING id" },
	/* Counts the pair found, whether or not it was a member already. */
	[ST_ROLE_MEMBER_ADD] = { "role_member_add",
		"WITH x AS (SELECT r.id AS rid, p.id AS pid FROM roles r, principals p "
		"  WHERE r.name = $1 AND p.name = $2), "
		"ins AS (INSERT INTO role_members (role_id, principal_id) "
		"  SELECT rid, pid FROM x ON CONFLICT DO NOTHING) "
		"SELECT count(*) FROM x" },
	[ST_ROLE_MEMBER_REMOVE] = { "role_member_remove",
		"DELETE FROM role_members m USING roles r, principals p "
		"WHERE r.name = $1 AND p.name = $2 AND m.role_id = r.id AND m.principal_id = p.id "
		"RETURNING m.role_id" },
	/* The row lock orders the two changes that together would let an
	 * issuer grant ADMIN (marking the role, granting it ADMIN); each
	 * reads the other's effect in a statement after it. */
	[ST_ROLE_LOCK] = { "role_lock",
		"SELECT id, name, " TS("created_at") ", issuer_grantable FROM roles "
		"WHERE name = $1 FOR UPDATE" },
	[ST_ROLE_HOLDS_ADMIN] = { "role_holds_admin",
		"SELECT EXISTS (SELECT 1 FROM grants g JOIN roles r ON r.id = g.role_id "
		"WHERE r.name = $1 AND g.privilege = 'ADMIN')" },
	[ST_ROLE_SET_ISSUER_GRANTABLE] = { "role_set_issuer_grantable",
		"UPDATE roles SET issuer_grantable = $2::boolean WHERE name = $1 RETURNING id" },
	/* What an issuer's claim may name: marked, and holding no ADMIN
	 * whatever the mark says (a row changed by hand in SQL). */
	[ST_ROLE_ISSUER_GRANTABLE] = { "role_issuer_grantable",
		"SELECT id, name, " TS("created_at") ", issuer_grantable FROM roles r "
		"WHERE issuer_grantable AND NOT EXISTS (SELECT 1 FROM grants g "
		"  WHERE g.role_id = r.id AND g.privilege = 'ADMIN') ORDER BY name" },
};
/* clang-format on */

const struct store_statements store_role_statements = { statements, ST_COUNT, NULL };

bool store_role_insert(struct store *s, const char *name, long long *id, struct floe_error *err)
{
	const char *params[1] = { name };
	PGresult *r = store_exec(s, &statements[ST_ROLE_INSERT], 1, params, err);

	*id = 0;
	if (r == NULL)
		return false;
	bool ok = PQntuples(r) == 1;
	if (ok)
		*id = store_col_ll(r, 0, 0);
	else
		floe_err(err, FE_ALREADY_EXISTS, "the role already exists");
	PQclear(r);
	return ok;
}

/* Fills a struct role_row from (id, name, created_at, issuer_grantable). */
static bool role_fill(PGresult *r, int i, void *dst)
{
	struct role_row *row = dst;

	memset(row, 0, sizeof(*row));
	row->id = store_col_ll(r, i, 0);
	store_col_text(r, i, 2, row->created_at, sizeof(row->created_at));
	row->issuer_grantable = strcmp(PQgetvalue(r, i, 3), "t") == 0;
	return store_col_copy(r, i, 1, &row->name);
}

bool store_role_list(struct store *s, const char *after_name, long limit, struct role_row **rows,
		     size_t *count, bool *more, struct floe_error *err)
{
	void *out = NULL;
	bool ok = store_list_after(s, &statements[ST_ROLE_LIST], after_name, limit, sizeof(**rows),
				   role_fill, store_role_clear, &out, count, more, err);

	*rows = out;
	return ok;
}

/* Runs statement st with params; *found tells whether it answered a row
 * (for ST_ROLE_MEMBER_ADD: a count above 0). */
static bool role_exec_found(struct store *s, int st, int nparams, const char *const *params,
			    bool *found, struct floe_error *err)
{
	PGresult *r = store_exec(s, &statements[st], nparams, params, err);

	*found = false;
	if (r == NULL)
		return false;
	if (st == ST_ROLE_MEMBER_ADD)
		*found = PQntuples(r) == 1 && store_col_ll(r, 0, 0) > 0;
	else
		*found = PQntuples(r) > 0;
	PQclear(r);
	return true;
}

bool store_role_delete(struct store *s, const char *name, bool *found, struct floe_error *err)
{
	const char *params[1] = { name };
	return role_exec_found(s, ST_ROLE_DELETE, 1, params, found, err);
}

bool store_role_member_add(struct store *s, const char *role, const char *principal, bool *found,
			   struct floe_error *err)
{
	const char *params[2] = { role, principal };
	return role_exec_found(s, ST_ROLE_MEMBER_ADD, 2, params, found, err);
}

bool store_role_member_remove(struct store *s, const char *role, const char *principal, bool *found,
			      struct floe_error *err)
{
	const char *params[2] = { role, principal };
	return role_exec_found(s, ST_ROLE_MEMBER_REMOVE, 2, params, found, err);
}

bool store_role_lock(struct store *s, const char *name, struct role_row *row, bool *found,
		     struct floe_error *err)
{
	return store_get_row(s, &statements[ST_ROLE_LOCK], name, role_fill, row, found, err);
}

bool store_role_holds_admin(struct store *s, const char *name, bool *holds, struct floe_error *err)
{
	const char *params[1] = { name };
	PGresult *r = store_exec(s, &statements[ST_ROLE_HOLDS_ADMIN], 1, params, err);

	*holds = false;
	if (r == NULL)
		return false;
	*holds = PQntuples(r) == 1 && strcmp(PQgetvalue(r, 0, 0), "t") == 0;
	PQclear(r);
	return true;
}

bool store_role_set_issuer_grantable(struct store *s, const char *name, bool grantable, bool *found,
				     struct floe_error *err)
{
	const char *params[2] = { name, grantable ? "true" : "false" };
	return role_exec_found(s, ST_ROLE_SET_ISSUER_GRANTABLE, 2, params, found, err);
}

bool store_role_list_issuer_grantable(struct store *s, struct role_row **rows, size_t *count,
				      struct floe_error *err)
{
	void *out = NULL;
	PGresult *r = store_exec(s, &statements[ST_ROLE_ISSUER_GRANTABLE], 0, NULL, err);

	*rows = NULL;
	*count = 0;
	if (r == NULL)
		return false;
	bool ok = store_rows_read(r, PQntuples(r), sizeof(**rows), role_fill, store_role_clear,
				  &out, count, err);
	PQclear(r);
	*rows = out;
	return ok;
}
