/*
 * principals.c - the first start's administrator, made once.
 */
#include "principals.h"

#include "ports.h"

bool principals_bootstrap(struct store *s, const char *name, const char *client_id,
			  const char *secret_hash, bool *created, struct floe_error *err)
{
	long long n = 0, id = 0;
	bool inserted = false, found = false;

	*created = false;
	if (!store_begin(s, err))
		return false;
	if (!store_principal_lock(s, err) || !store_principal_count(s, &n, err))
		goto fail;
	if (n > 0) {
		store_rollback(s); /* nothing was changed */
		return true;
	}
	/* A role of that name left from before keeps its id and grants. */
	if (!store_role_insert(s, PRINCIPALS_ADMIN_ROLE, &id, err)) {
		if (err->kind != FE_ALREADY_EXISTS)
			goto fail;
		floe_error_clear(err);
	}
	if (!store_grant_insert(s, PRINCIPALS_ADMIN_ROLE, "ADMIN", GRANT_ON_CATALOG, NULL, NULL,
				&inserted, err) ||
	    !store_principal_insert(s, name, "client", client_id, secret_hash, "floe", &id, err) ||
	    !store_role_member_add(s, PRINCIPALS_ADMIN_ROLE, name, &found, err))
		goto fail;
	if (!found) {
		floe_err(err, FE_INTERNAL, "the administrator's membership was not made");
		goto fail;
	}
	if (!store_commit(s, err))
		return false;
	*created = true;
	return true;
fail:
	store_rollback(s);
	return false;
}
