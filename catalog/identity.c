/*
 * identity.c - principals for authentication, through the store.
 */
#include "identity.h"

#include <stdio.h>
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
			size_t *n, size_t max, char *left_out, size_t left_out_len,
			struct floe_error *err)
{
	struct role_row *rows = NULL;
	size_t count = 0;
	size_t used = 0;

	if (left_out_len > 0)
		left_out[0] = '\0';
	if (nnames == 0)
		return true;
	/* Only the roles an issuer may grant are read: a name of any other
	 * role, ADMIN's first, is left out as an unknown name is. */
	if (!store_role_list_issuer_grantable(s, &rows, &count, err))
		return false;
	for (size_t j = 0; j < nnames; j++) {
		bool granted = false;
		for (size_t i = 0; i < count && !granted; i++) {
			if (strcmp(rows[i].name, names[j]) != 0)
				continue;
			granted = true;
			bool held = false;
			for (size_t k = 0; k < *n && !held; k++)
				held = ids[k] == rows[i].id;
			if (!held && *n < max)
				ids[(*n)++] = rows[i].id;
		}
		if (granted || used + 1 >= left_out_len)
			continue;
		int w = snprintf(left_out + used, left_out_len - used, "%s%s", used > 0 ? ", " : "",
				 names[j]);
		if (w > 0)
			used += (size_t)w < left_out_len - used ? (size_t)w
								: left_out_len - used - 1;
	}
	store_role_rows_free(rows, count);
	return true;
}

bool identity_upgrade_secret(struct store *s, long long id, const char *old_hash,
			     const char *new_hash, bool *done, struct floe_error *err)
{
	return store_principal_upgrade_secret(s, id, old_hash, new_hash, done, err);
}

bool identity_count(struct store *s, long long *n, struct floe_error *err)
{
	return store_principal_count(s, n, err);
}
