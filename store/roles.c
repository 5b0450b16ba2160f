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
	ST_COUNT
};

/* One statement a row, its SQL laid out as SQL. */
/* clang-format off */
static const struct store_statement statements[ST_COUNT] = {
	[ST_ROLE_INSERT] = { "role_insert",
		"INSERT INTO roles (name) VALUES ($1) ON CONFLICT DO NOTHING RETURNING id" },
	[ST_ROLE_LIST] = { "role_list",
		"SELECT id, name, " TS("created_at") " FROM roles "
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
};
/* clang-format on */

const struct store_statements store_role_statements = { statements, ST_COUNT };

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

/* Fills a struct role_row from (id, name, created_at). */
static bool role_fill(PGresult *r, int i, void *dst)
{
	struct role_row *row = dst;

	memset(row, 0, sizeof(*row));
	row->id = store_col_ll(r, i, 0);
	store_col_text(r, i, 2, row->created_at, sizeof(row->created_at));
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
