/*
 * store_identity.h - the store's principals, roles, their members and
 * grants (migrations 0008, 0011, 0012 and 0023). Part of store.h, which
 * includes it; kept apart so that header stays readable.
 */
#ifndef FLOE_STORE_IDENTITY_H
#define FLOE_STORE_IDENTITY_H

#include <stdbool.h>
#include <stddef.h>
#include <jansson.h>

#include "error.h"
#include "ident.h"

struct store;

/* One principal: a user or a service client (docs/auth.md). */
struct principal_row {
	long long id;
	char *name;
	char *kind;        /* "user" or "client" */
	char *client_id;   /* NULL when it has none */
	char *secret_hash; /* "scrypt$N$r$p$salt$hash"; NULL when it has none */
	char *source;      /* "floe" or "oidc" */
	bool disabled;
	char *created_at; /* RFC 3339 UTC */
	/* The epoch a token of this principal must carry: one more at each
	 * secret rotation and each disable (migration 0012). */
	long long token_epoch;
};

/* Frees what row holds and zeroes it. */
void store_principal_row_clear(struct principal_row *row);

/* Clears each of count rows and frees the array (NULL is fine). */
void store_principal_rows_free(struct principal_row *rows, size_t count);

/* The principal with client_id (or name): *found is false when there is
 * none; else *row is filled (store_principal_row_clear). */
bool store_principal_by_client(struct store *s, const char *client_id, struct principal_row *row,
			       bool *found, struct floe_error *err) FLOE_WUR;
bool store_principal_by_name(struct store *s, const char *name, struct principal_row *row,
			     bool *found, struct floe_error *err) FLOE_WUR;

/* Inserts a principal (kind "user" or "client", source "floe" or "oidc";
 * client_id and secret_hash may be NULL); *id is its id. FE_ALREADY_EXISTS
 * (plain message) when the name or the client id is taken, without an
 * SQL error, so an open transaction stays usable. FE_BAD_REQUEST for a
 * kind or source of another name. */
bool store_principal_insert(struct store *s, const char *name, const char *kind,
			    const char *client_id, const char *secret_hash, const char *source,
			    long long *id, struct floe_error *err) FLOE_WUR;

/* Principals whose names sort after after_name (NULL: from the start), at
 * most limit (< 0: all), in byte order: *rows is a new array of *count
 * (store_principal_rows_free); *more tells whether more follow. */
bool store_principal_list(struct store *s, const char *after_name, long limit,
			  struct principal_row **rows, size_t *count, bool *more,
			  struct floe_error *err) FLOE_WUR;

/* Disables or enables principal name; *found false when there is none.
 * Disabling also ends the tokens issued until now (token_epoch). */
bool store_principal_set_disabled(struct store *s, const char *name, bool disabled, bool *found,
				  struct floe_error *err) FLOE_WUR;

/* Replaces the secret hash of principal name (NULL: none) and ends the
 * tokens issued until now (token_epoch); *found false when there is
 * none. */
bool store_principal_set_secret(struct store *s, const char *name, const char *secret_hash,
				bool *found, struct floe_error *err) FLOE_WUR;

/* Replaces principal id's secret hash old_hash by new_hash, another form
 * of the same secret, leaving its tokens valid; *done false when the
 * stored hash is no longer old_hash (a rotation came first). */
bool store_principal_upgrade_secret(struct store *s, long long id, const char *old_hash,
				    const char *new_hash, bool *done,
				    struct floe_error *err) FLOE_WUR;

/* How many principals there are. */
bool store_principal_count(struct store *s, long long *n, struct floe_error *err) FLOE_WUR;

/* The roles principal_id holds, by name: *ids (free()) and *names
 * (store_names_free) are new arrays of *n, in the same order; both NULL
 * when it holds none. */
bool store_principal_roles(struct store *s, long long principal_id, long long **ids, char ***names,
			   size_t *n, struct floe_error *err) FLOE_WUR;

/* Takes the transaction-scoped lock that serialises the first start's
 * bootstrap of the admin principal, and every change that could leave no
 * administrator, across floes on one database. Only inside store_begin
 * ... store_commit. */
bool store_principal_lock(struct store *s, struct floe_error *err) FLOE_WUR;

/* How many principals that are not disabled hold a role with ADMIN on the
 * catalog, as the transaction sees them now (under store_principal_lock,
 * so that two changes cannot each count the other's administrator). */
bool store_admin_count(struct store *s, long long *n, struct floe_error *err) FLOE_WUR;

/* One role. */
struct role_row {
	long long id;
	char *name;
	char created_at[40];   /* RFC 3339 UTC */
	bool issuer_grantable; /* an external issuer's claim may name it */
};

/* Clears each of count rows and frees the array (NULL is fine). */
void store_role_rows_free(struct role_row *rows, size_t count);

/* Frees what one row owns and zeroes it. */
void store_role_row_clear(struct role_row *row);

/* Inserts role name; *id is its id. FE_ALREADY_EXISTS (plain message,
 * no SQL error) when the name is taken. */
bool store_role_insert(struct store *s, const char *name, long long *id,
		       struct floe_error *err) FLOE_WUR;

/* Roles whose names sort after after_name (NULL: from the start), at most
 * limit (< 0: all), in byte order: *rows is a new array of *count
 * (store_role_rows_free); *more tells whether more follow. */
bool store_role_list(struct store *s, const char *after_name, long limit, struct role_row **rows,
		     size_t *count, bool *more, struct floe_error *err) FLOE_WUR;

/* Deletes role name with its memberships and grants; *found false when
 * there is none. */
bool store_role_delete(struct store *s, const char *name, bool *found,
		       struct floe_error *err) FLOE_WUR;

/* Makes principal a member of role (already one: nothing changes, *found
 * true); *found false when the role or the principal does not exist. */
bool store_role_member_add(struct store *s, const char *role, const char *principal, bool *found,
			   struct floe_error *err) FLOE_WUR;

/* Ends the membership; *found false when there was none. */
bool store_role_member_remove(struct store *s, const char *role, const char *principal, bool *found,
			      struct floe_error *err) FLOE_WUR;

/* Fills row (store_role_row_clear) with role name,
 * locking its row until the transaction ends: marking a role
 * issuer-grantable and granting it ADMIN both take this lock first, so
 * neither misses the other. *found false when there is none. Only inside
 * store_begin ... store_commit. */
bool store_role_lock(struct store *s, const char *name, struct role_row *row, bool *found,
		     struct floe_error *err) FLOE_WUR;

/* Whether role name holds ADMIN. */
bool store_role_holds_admin(struct store *s, const char *name, bool *holds,
			    struct floe_error *err) FLOE_WUR;

/* Sets whether an external issuer's claim may name role name; *found
 * false when there is none. */
bool store_role_set_issuer_grantable(struct store *s, const char *name, bool grantable, bool *found,
				     struct floe_error *err) FLOE_WUR;

/* The roles an external issuer's claim may name: marked issuer-grantable
 * and holding no ADMIN, by name: *rows is a new array of *count
 * (store_role_rows_free). */
bool store_role_list_issuer_grantable(struct store *s, struct role_row **rows, size_t *count,
				      struct floe_error *err) FLOE_WUR;

/* What a grant is on. */
enum grant_on { GRANT_ON_CATALOG, GRANT_ON_NAMESPACE, GRANT_ON_TABLE };

/* A grant's object as the API names it: on GRANT_ON_CATALOG ns and table
 * are unused (NULL), on GRANT_ON_NAMESPACE ns is set and table NULL, on
 * GRANT_ON_TABLE both are set. */

/* One grant of a role. */
struct grant_row {
	long long id;
	char *privilege; /* "TABLE_READ", ... */
	enum grant_on on;
	struct ns_ident ns; /* no levels on the catalog */
	char *table;        /* NULL unless on a table */
	char created_at[40];
	char warehouse[72]; /* the object's warehouse: "" the default one */
};

/* Clears each of count rows and frees the array (NULL is fine). */
void store_grant_rows_free(struct grant_row *rows, size_t count);

/*
 * Grants privilege (one of the 16 names of docs/auth.md) on the object to
 * role. *inserted is false when the role already had it (nothing changes).
 * FE_NOT_FOUND (plain message "no such role") when the role is missing;
 * FE_NO_SUCH_NAMESPACE / FE_NO_SUCH_TABLE when the object is;
 * FE_BAD_REQUEST when the privilege is unknown or is not granted on an
 * object of that kind (ADMIN only on the catalog; the NAMESPACE_*
 * privileges and TABLE_CREATE not on a table).
 */
bool store_grant_insert(struct store *s, const char *role, const char *privilege, enum grant_on on,
			const struct ns_ident *ns, const char *table, bool *inserted,
			struct floe_error *err) FLOE_WUR;

/* Revokes that grant; *found false when the role did not have it (or the
 * role or the object does not exist). */
bool store_grant_delete(struct store *s, const char *role, const char *privilege, enum grant_on on,
			const struct ns_ident *ns, const char *table, bool *found,
			struct floe_error *err) FLOE_WUR;

/* The grants of role with id above after_id, at most limit (< 0: all), in
 * id order: *rows is a new array of *count (store_grant_rows_free); *more
 * tells whether more follow. FE_NOT_FOUND when the role is missing. */
bool store_grant_list(struct store *s, const char *role, long long after_id, long limit,
		      struct grant_row **rows, size_t *count, bool *more,
		      struct floe_error *err) FLOE_WUR;

/*
 * Every privilege the roles hold on the object or above it, in one
 * statement: grants on the catalog, on ns or any namespace above it, and
 * (with table) on table in ns. ns NULL: the catalog only; table NULL: the
 * namespace. No implication is applied (catalog/authz.c does that).
 * *privileges is a new sorted array of *n distinct names
 * (store_names_free); NULL when none. A missing object has no grants.
 */
bool store_privileges_on(struct store *s, const long long *role_ids, size_t nroles,
			 const struct ns_ident *ns, const char *table, char ***privileges,
			 size_t *n, struct floe_error *err) FLOE_WUR;

/*
 * Filtered listings: what a caller holding role_ids may see. An object is
 * visible when the roles hold any grant on the catalog, on it, on a
 * namespace above it, or on anything below it (the path down to a
 * granted table shows). Each lists one page in one statement, with the
 * paging and errors of store_ns_list and store_table_list: only visible
 * rows count towards limit, so a page is full while more visible rows
 * follow.
 *
 * store_ns_list_visible: the visible children of parent (NULL: the top
 * level). store_table_list_visible: the visible tables of ns (every one
 * when the roles hold a grant on the catalog, ns or above).
 * store_ns_visible: *visible tells whether ns itself is (for the check
 * of a listing's parent); false also when ns does not exist.
 */
bool store_ns_list_visible(struct store *s, const long long *role_ids, size_t nroles,
			   const struct ns_ident *parent, const struct ns_ident *after, long limit,
			   struct ns_ident **rows, size_t *count, bool *more,
			   struct floe_error *err) FLOE_WUR;
bool store_table_list_visible(struct store *s, const long long *role_ids, size_t nroles,
			      const struct ns_ident *ns, const char *after, long limit,
			      char ***names, size_t *count, bool *more,
			      struct floe_error *err) FLOE_WUR;
bool store_ns_visible(struct store *s, const long long *role_ids, size_t nroles,
		      const struct ns_ident *ns, bool *visible, struct floe_error *err) FLOE_WUR;

#endif
