/*
 * principals.c - the principals relation: users and service clients,
 * looked up by name or client id, listed, disabled, given a new secret;
 * the roles a principal holds; the lock of the first start's bootstrap.
 */
#include "store.h"
#include "store_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Serialises the bootstrap of the first principal across floes. */
#define PRINCIPAL_LOCK "7310593858473447527"

#define PRINCIPAL_COLUMNS                                                       \
	"SELECT id, name, kind, client_id, secret_hash, source, disabled, " TS( \
		"created_at") ", token_epoch "                                  \
			      "FROM principals "

enum {
	ST_PRINCIPAL_BY_CLIENT,
	ST_PRINCIPAL_BY_NAME,
	ST_PRINCIPAL_INSERT,
	ST_PRINCIPAL_LIST,
	ST_PRINCIPAL_SET_DISABLED,
	ST_PRINCIPAL_SET_SECRET,
	ST_PRINCIPAL_COUNT,
	ST_PRINCIPAL_ROLES,
	ST_PRINCIPAL_LOCK,
	ST_PRINCIPAL_ADMINS,
	ST_PRINCIPAL_UPGRADE_SECRET,
	ST_COUNT
};

/* One statement a row, its SQL laid out as SQL. */
/* clang-format off */
static const struct store_statement statements[ST_COUNT] = {
	[ST_PRINCIPAL_BY_CLIENT] = { "principal_by_client",
		PRINCIPAL_COLUMNS "WHERE client_id = $1" },
	[ST_PRINCIPAL_BY_NAME] = { "principal_by_name",
		PRINCIPAL_COLUMNS "WHERE name = $1" },
	/* A taken name or client id inserts nothing and raises nothing, so a
	 * transaction around it goes on. */
	[ST_PRINCIPAL_INSERT] = { "principal_insert",
		"INSERT INTO principals (name, kind, client_id, secret_hash, source) "
		"VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING RETURNING id" },
	[ST_PRINCIPAL_LIST] = { "principal_list",
		PRINCIPAL_COLUMNS "WHERE $1::text IS NULL OR name > $1 "
		"ORDER BY name LIMIT $2::bigint" },
	[ST_PRINCIPAL_SET_DISABLED] = { "principal_set_disabled",
		"UPDATE principals SET disabled = $2::boolean, updated_at = now(), "
		"  token_epoch = token_epoch + CASE WHEN $2::boolean THEN 1 ELSE 0 END "
		"WHERE name = $1 RETURNING id" },
	[ST_PRINCIPAL_SET_SECRET] = { "principal_set_secret",
		"UPDATE principals SET secret_hash = $2, updated_at = now(), token_epoch = token_epoch + 1 "
		"WHERE name = $1 RETURNING id" },
	[ST_PRINCIPAL_COUNT] = { "principal_count", "SELECT count(*) FROM principals" },
	[ST_PRINCIPAL_ROLES] = { "principal_roles",
		"SELECT r.id, r.name FROM role_members m JOIN roles r ON r.id = m.role_id "
		"WHERE m.principal_id = $1::bigint ORDER BY r.name" },
	[ST_PRINCIPAL_LOCK] = { "principal_lock",
		"SELECT pg_advisory_xact_lock(" PRINCIPAL_LOCK ")" },
	[ST_PRINCIPAL_ADMINS] = { "principal_admins",
		"SELECT count(DISTINCT p.id) FROM principals p "
		"JOIN role_members m ON m.principal_id = p.id "
		"JOIN grants g ON g.role_id = m.role_id "
		"WHERE NOT p.disabled AND g.privilege = 'ADMIN' AND g.object_kind = 'catalog'" },
	/* Another form of the same secret: the tokens stay (no epoch), and a
	 * rotation or another floe's upgrade in between wins. */
	[ST_PRINCIPAL_UPGRADE_SECRET] = { "principal_upgrade_secret",
		"UPDATE principals SET secret_hash = $3 "
		"WHERE id = $1::bigint AND secret_hash = $2 RETURNING id" },
};
/* clang-format on */

const struct store_statements store_principal_statements = { statements, ST_COUNT, NULL };

/* Fills a struct principal_row from the columns of PRINCIPAL_COLUMNS. */
static bool principal_fill(PGresult *r, int i, void *dst)
{
	struct principal_row *row = dst;

	memset(row, 0, sizeof(*row));
	row->id = store_col_ll(r, i, 0);
	row->disabled = strcmp(PQgetvalue(r, i, 6), "t") == 0;
	row->token_epoch = store_col_ll(r, i, 8);
	if (store_col_copy(r, i, 1, &row->name) && store_col_copy(r, i, 2, &row->kind) &&
	    store_col_copy(r, i, 3, &row->client_id) &&
	    store_col_copy(r, i, 4, &row->secret_hash) && store_col_copy(r, i, 5, &row->source) &&
	    store_col_copy(r, i, 7, &row->created_at))
		return true;
	store_principal_row_clear(row);
	return false;
}

bool store_principal_by_client(struct store *s, const char *client_id, struct principal_row *row,
			       bool *found, struct floe_error *err)
{
	memset(row, 0, sizeof(*row));
	return store_get_row(s, &statements[ST_PRINCIPAL_BY_CLIENT], client_id, principal_fill, row,
			     found, err);
}

bool store_principal_by_name(struct store *s, const char *name, struct principal_row *row,
			     bool *found, struct floe_error *err)
{
	memset(row, 0, sizeof(*row));
	return store_get_row(s, &statements[ST_PRINCIPAL_BY_NAME], name, principal_fill, row, found,
			     err);
}

bool store_principal_insert(struct store *s, const char *name, const char *kind,
			    const char *client_id, const char *secret_hash, const char *source,
			    long long *id, struct floe_error *err)
{
	const char *params[5] = { name, kind, client_id, secret_hash, source };
	PGresult *r;

	*id = 0;
	r = store_exec(s, &statements[ST_PRINCIPAL_INSERT], 5, params, err);
	if (r == NULL) {
		if (strcmp(s->sqlstate, "23514") == 0)
			floe_err(err, FE_BAD_REQUEST,
				 "a principal's kind is user or client, its source floe or oidc");
		return false;
	}
	bool ok = PQntuples(r) == 1;
	if (ok)
		*id = store_col_ll(r, 0, 0);
	else
		floe_err(err, FE_ALREADY_EXISTS, "the principal's name or client id is taken");
	PQclear(r);
	return ok;
}

bool store_principal_list(struct store *s, const char *after_name, long limit,
			  struct principal_row **rows, size_t *count, bool *more,
			  struct floe_error *err)
{
	void *out = NULL;
	bool ok = store_list_after(s, &statements[ST_PRINCIPAL_LIST], after_name, limit,
				   sizeof(**rows), principal_fill, store_principal_clear, &out,
				   count, more, err);

	*rows = out;
	return ok;
}

/* Runs an UPDATE of principal name that returns its id; *found tells
 * whether there was one. */
static bool principal_update(struct store *s, int st, const char *name, const char *value,
			     bool *found, struct floe_error *err)
{
	const char *params[2] = { name, value };
	PGresult *r = store_exec(s, &statements[st], 2, params, err);

	*found = false;
	if (r == NULL)
		return false;
	*found = PQntuples(r) > 0;
	PQclear(r);
	return true;
}

bool store_principal_set_disabled(struct store *s, const char *name, bool disabled, bool *found,
				  struct floe_error *err)
{
	return principal_update(s, ST_PRINCIPAL_SET_DISABLED, name, disabled ? "true" : "false",
				found, err);
}

bool store_principal_set_secret(struct store *s, const char *name, const char *secret_hash,
				bool *found, struct floe_error *err)
{
	return principal_update(s, ST_PRINCIPAL_SET_SECRET, name, secret_hash, found, err);
}

bool store_principal_upgrade_secret(struct store *s, long long id, const char *old_hash,
				    const char *new_hash, bool *done, struct floe_error *err)
{
	char idp[24];
	const char *params[3] = { idp, old_hash, new_hash };

	*done = false;
	(void)snprintf(idp, sizeof(idp), "%lld", id);
	PGresult *r = store_exec(s, &statements[ST_PRINCIPAL_UPGRADE_SECRET], 3, params, err);
	if (r == NULL)
		return false;
	*done = PQntuples(r) == 1;
	PQclear(r);
	return true;
}

/* The count(*) statement st answers, into *n. */
static bool count_of(struct store *s, int st, long long *n, struct floe_error *err)
{
	char *text = NULL;

	*n = 0;
	if (!store_exec_text(s, &statements[st], 0, NULL, &text, err))
		return false;
	if (text != NULL)
		*n = strtoll(text, NULL, 10);
	free(text);
	return true;
}

bool store_principal_count(struct store *s, long long *n, struct floe_error *err)
{
	return count_of(s, ST_PRINCIPAL_COUNT, n, err);
}

bool store_admin_count(struct store *s, long long *n, struct floe_error *err)
{
	return count_of(s, ST_PRINCIPAL_ADMINS, n, err);
}

bool store_principal_roles(struct store *s, long long principal_id, long long **ids, char ***names,
			   size_t *n, struct floe_error *err)
{
	char idp[32];
	const char *params[1] = { idp };
	PGresult *r;
	size_t count = 0;

	*ids = NULL;
	*names = NULL;
	*n = 0;
	(void)snprintf(idp, sizeof(idp), "%lld", principal_id);
	r = store_exec(s, &statements[ST_PRINCIPAL_ROLES], 1, params, err);
	if (r == NULL)
		return false;
	int rows = PQntuples(r);
	if (rows == 0) {
		PQclear(r);
		return true;
	}
	long long *out = calloc((size_t)rows, sizeof(*out));
	if (out == NULL || !store_names_read(r, rows, 1, names, &count, err)) {
		free(out);
		PQclear(r);
		return out == NULL ? floe_err(err, FE_INTERNAL, "out of memory") : false;
	}
	for (int i = 0; i < rows; i++)
		out[i] = store_col_ll(r, i, 0);
	PQclear(r);
	*ids = out;
	*n = count;
	return true;
}

bool store_principal_lock(struct store *s, struct floe_error *err)
{
	return store_exec_noparams(s, &statements[ST_PRINCIPAL_LOCK], err);
}
