/*
 * identity.h - who a credential or a token names, for authentication
 * (server/auth.c): a principal's row by client id or by name, the roles
 * it holds, and the row of an external issuer's principal, made on first
 * sight so that its actions can be recorded and it can be disabled, and
 * the roles its claim may grant.
 */
#ifndef FLOE_IDENTITY_H
#define FLOE_IDENTITY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "ports.h"

/* Fills row (clear it with store_principal_row_clear) with the principal
 * whose client id is client_id; *found false when there is none. */
bool identity_by_client(struct store *s, const char *client_id, struct principal_row *row,
			bool *found, struct floe_error *err) FLOE_WUR;

/* The same by the principal's name. */
bool identity_by_name(struct store *s, const char *name, struct principal_row *row, bool *found,
		      struct floe_error *err) FLOE_WUR;

/* The roles principal id holds: *ids and *names (n of each; free with
 * identity_roles_free). */
bool identity_roles(struct store *s, long long id, long long **ids, char ***names, size_t *n,
		    struct floe_error *err) FLOE_WUR;

void identity_roles_free(long long *ids, char **names, size_t n);

/* The principal an external issuer's token names (name: its claim):
 * its row, made now (a user of source oidc) when it has none. A name
 * that belongs to one of floe's own clients is FE_NOT_AUTHORIZED: an
 * issuer cannot speak for a principal floe issues tokens to. */
bool identity_external(struct store *s, const char *name, struct principal_row *row,
		       struct floe_error *err) FLOE_WUR;

/* Adds to ids (*n of max used) the ids of the roles named in names that
 * an external issuer may grant (marked issuer-grantable and holding no
 * ADMIN) and are not in ids yet. Any other name (of no role, of a role not
 * marked, of one holding ADMIN) is left out, and written to left_out
 * (left_out_len bytes, ", " between names, cut when full; "" when none)
 * for the log. */
bool identity_add_roles(struct store *s, const char *const *names, size_t nnames, int64_t *ids,
			size_t *n, size_t max, char *left_out, size_t left_out_len,
			struct floe_error *err) FLOE_WUR;

/* Stores new_hash, another form of the same secret, in place of
 * old_hash for principal id (the token endpoint upgrading a slow hash of
 * a random secret to the keyed one); *done false when another change
 * came first. Its tokens stay valid. */
bool identity_upgrade_secret(struct store *s, long long id, const char *old_hash,
			     const char *new_hash, bool *done, struct floe_error *err) FLOE_WUR;

/* Sets *n to the number of principals. */
bool identity_count(struct store *s, long long *n, struct floe_error *err) FLOE_WUR;

#endif
