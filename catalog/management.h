/*
 * management.h - the management API's domain (docs/auth.md "The
 * management API"): principals, roles, memberships and grants. Each change
 * and its audit event are written in one transaction, so a change is
 * recorded exactly when it stands. Secrets are hashed by the caller (the
 * hash is slow) and never reach an event or a log line.
 *
 * Every function answers a new JSON reference (or true) on success and
 * NULL (false) with err set otherwise: FE_BAD_REQUEST for bad input,
 * FE_NO_SUCH_PRINCIPAL "Principal does not exist: bob", FE_NO_SUCH_ROLE
 * "Role does not exist: x", FE_ALREADY_EXISTS for a taken name, the
 * store's error (nothing changed, but for a COMMIT of unknown outcome)
 * when it fails.
 */
#ifndef FLOE_MANAGEMENT_H
#define FLOE_MANAGEMENT_H

#include <stdbool.h>
#include <jansson.h>

#include "error.h"
#include "ident.h"
#include "ports.h"
#include "table.h"

/* The longest principal or role name. */
#define MGMT_NAME_MAX 255

/* Checks a principal's or a role's name (what: "principal", "role"): 1 to
 * MGMT_NAME_MAX bytes of letters, digits and . _ - @. FE_BAD_REQUEST. */
bool mgmt_name_check(const char *what, const char *name, struct floe_error *err) FLOE_WUR;

/* Reads POST /principals' body {"name", "kind": "client"|"user"}: *name
 * and *kind borrow from body. */
bool mgmt_principal_spec(const json_t *body, const char **name, const char **kind,
			 struct floe_error *err) FLOE_WUR;

/* Makes principal name of kind (client: its client id is its name and
 * secret_hash its secret; user: neither) with its principal.created
 * event. Answers the principal as GET shows it. */
json_t *mgmt_principal_create(struct store *s, const struct table_env *env, const char *name,
			      const char *kind, const char *secret_hash,
			      struct floe_error *err) FLOE_WUR;

/* GET /principals: {"principals", "next-page-token"}; token and size are
 * the raw pageToken and pageSize (either NULL). */
json_t *mgmt_principal_list(struct store *s, const char *token, const char *size,
			    struct floe_error *err) FLOE_WUR;

/* GET /principals/{name}: the principal with "roles" (the names it holds). */
json_t *mgmt_principal_get(struct store *s, const char *name, struct floe_error *err) FLOE_WUR;

/* Disables (or enables) principal name with its principal.disabled
 * (principal.enabled) event; *id is its id, for dropping its cached
 * tokens. Answers the principal. FE_BAD_REQUEST when env's principal
 * would disable itself. */
json_t *mgmt_principal_set_disabled(struct store *s, const struct table_env *env, const char *name,
				    bool disabled, long long *id, struct floe_error *err) FLOE_WUR;

/* Whether principal name can be given a new secret: floe's own client.
 * FE_NO_SUCH_PRINCIPAL, or FE_BAD_REQUEST for a user or an external issuer's
 * principal. Asked before the slow hash is made. */
bool mgmt_rotate_check(struct store *s, const char *name, struct floe_error *err) FLOE_WUR;

/* Replaces the secret of client name by secret_hash with its
 * principal.secret-rotated event (checked again inside the transaction). */
json_t *mgmt_principal_rotate(struct store *s, const struct table_env *env, const char *name,
			      const char *secret_hash, struct floe_error *err) FLOE_WUR;

/* POST /roles {"name", "issuer-grantable"?}: the role {"name",
 * "issuer-grantable"} with its role.created event. */
json_t *mgmt_role_create(struct store *s, const struct table_env *env, const json_t *body,
			 struct floe_error *err) FLOE_WUR;

/* PATCH /roles/{role} {"issuer-grantable": bool}: the role {"name",
 * "created-at", "issuer-grantable"}, with role.updated when it changed
 * (*changed; the same value changes and records nothing). Marking a role
 * that holds ADMIN is FE_BAD_REQUEST, as is any other field;
 * FE_NO_SUCH_ROLE for an unknown role. */
json_t *mgmt_role_update(struct store *s, const struct table_env *env, const char *role,
			 const json_t *body, bool *changed, struct floe_error *err) FLOE_WUR;

/* GET /roles: {"roles", "next-page-token"}. */
json_t *mgmt_role_list(struct store *s, const char *token, const char *size,
		       struct floe_error *err) FLOE_WUR;

/* DELETE /roles/{role}, its memberships and grants, with role.deleted. */
bool mgmt_role_delete(struct store *s, const struct table_env *env, const char *role,
		      struct floe_error *err) FLOE_WUR;

/* PUT (add true) or DELETE /roles/{role}/members/{principal}, with
 * role.member-added / role.member-removed. Adding a member it already is
 * changes nothing and records nothing (*changed false); removing one that
 * is not is FE_NOT_FOUND. */
bool mgmt_member_set(struct store *s, const struct table_env *env, const char *role,
		     const char *principal, bool add, bool *changed,
		     struct floe_error *err) FLOE_WUR;

/* POST /roles/{role}/grants (add true) or .../grants/revoke with the body
 * {"privilege", "on": {"kind", "namespace"?, "table"?}}, with grant.added
 * / grant.revoked. Answers the grant {"role", "privilege", "on"}; *changed
 * false when the role already had it (adding: nothing recorded). Revoking
 * a grant the role does not have is FE_NOT_FOUND; granting ADMIN to an
 * issuer-grantable role FE_BAD_REQUEST. */
json_t *mgmt_grant_set(struct store *s, const struct table_env *env, const char *role,
		       const json_t *body, bool add, bool *changed,
		       struct floe_error *err) FLOE_WUR;

/* GET /roles/{role}/grants: {"grants", "next-page-token"}, oldest first. */
json_t *mgmt_grant_list(struct store *s, const char *role, const char *token, const char *size,
			struct floe_error *err) FLOE_WUR;

/* GET /principals/{name}/privileges: {"principal", "object",
 * "privileges"} for the table in ns (table NULL: ns; ns NULL: the
 * catalog) with every role the principal holds. A missing namespace or
 * table is its 404. */
json_t *mgmt_privileges(struct store *s, const char *name, const struct ns_ident *ns,
			const char *table, struct floe_error *err) FLOE_WUR;

#endif
