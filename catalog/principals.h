/*
 * principals.h - the first start's administrator: when the catalog has
 * no principal at all, the role "admin" with ADMIN on the catalog and one
 * client principal holding it (docs/auth.md "Privileges").
 */
#ifndef FLOE_PRINCIPALS_H
#define FLOE_PRINCIPALS_H

#include <stdbool.h>

#include "error.h"

struct store;

/* The role the bootstrap makes (or reuses) and grants ADMIN on the
 * catalog. */
#define PRINCIPALS_ADMIN_ROLE "admin"

/*
 * When there is no principal, in one transaction: the role
 * PRINCIPALS_ADMIN_ROLE (kept if it exists) with ADMIN on the catalog, the
 * principal name (kind client, source floe, client_id, secret_hash as
 * given: the caller hashes the secret) and its membership; *created true.
 * When a principal exists already nothing changes and *created is false.
 * Serialised by a transaction-scoped lock, so of two floes starting at
 * once on one database exactly one creates. On failure nothing was made
 * (err is the store's), except that a COMMIT of unknown outcome
 * (FO_UNKNOWN) may have landed: a retry then answers *created false.
 */
bool principals_bootstrap(struct store *s, const char *name, const char *client_id,
			  const char *secret_hash, bool *created, struct floe_error *err) FLOE_WUR;

#endif
