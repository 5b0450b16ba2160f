/*
 * identity.c - principals for authentication, through the store.
 */
#include "identity.h"

#include <stdlib.h>
#include <string.h>

bool identity_by_client(struct store *s, const char *client_id, struct principal_row *row,
			bool *found, struct floe_error *err)
{
	return store_principal_by_client(s, client_id, row, found, err);
}

bool identity_by_name(struct store *s, const char *name, struct principal_row *row, bool *found,
		      struct floe_error *err)
{
	return store_principal_by_name(s, name, row, found, err);
}

bool identity_roles(struct store *s, long long id, long long **ids, char ***names, size_t *n,
		    struct floe_error *err)
{
	return store_principal_roles(s, id, ids, names, n, err);
}

void identity_roles_free(long long *ids, char **names, size_t n)
{
	free(ids);
	store_names_free(names, n);
}

bool identity_external(struct store *s, const char *name, struct principal_row *row,
		       struct floe_error *err)
{
	bool found = false;
	long long id = 0;

	for (int attempt = 0; attempt < 2; attempt++) {
		if (!store_principal_by_name(s, name, row, &found, err))
			return false;
		if (found) {
			if (row->source == NULL || strcmp(row->source, "oidc") != 0) {
				store_principal_row_clear(row);
				return floe_err(err, FE_NOT_AUTHORIZED,
						"Token names principal %s, which is not the "
						"external issuer's",
						name);
			}
			return true;
		}
		/* Made on first sight; two requests of a new principal at once
		 * race here, and the loser reads the winner's row. */
		if (store_principal_insert(s, name, "user", NULL, NULL, "oidc", &id, err))
			continue;
		if (err->kind != FE_ALREADY_EXISTS)
			return false;
	}
	return store_principal_by_name(s, name, row, &found, err) &&
	       (found || floe_err(err, FE_UNAVAILABLE, "principal %s vanished; retry", name));
}

bool identity_add_roles(struct store *s, const char *const *names, size_t nnames, int64_t *ids,
			size_t *n, size_t max, struct floe_error *err)
{
	struct role_row *rows = NULL;
	size_t count = 0;
	bool more = false;

	if (nnames == 0)
		return true;
	if (!store_role_list(s, NULL, -1, &rows, &count, &more, err))
		return false;
	for (size_t i = 0; i < count; i++) {
		bool named = false;
		bool held = false;
		for (size_t j = 0; j < nnames && !named; j++)
			named = strcmp(rows[i].name, names[j]) == 0;
		for (size_t j = 0; j < *n && !held; j++)
			held = ids[j] == rows[i].id;
		if (named && !held && *n < max)
			ids[(*n)++] = rows[i].id;
	}
	store_role_rows_free(rows, count);
	return true;
}

bool identity_count(struct store *s, long long *n, struct floe_error *err)
{
	return store_principal_count(s, n, err);
}
