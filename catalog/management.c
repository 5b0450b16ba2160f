/*
 * management.c - principals, roles, memberships and grants as the
 * management API changes them: each change and its audit event in one
 * transaction, errors in Iceberg's wording.
 */
#include "management.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auditlog.h"
#include "authz.h"
#include "idem.h"
#include "namespace.h"
#include "ports.h"
#include "rowjson.h"
#include "wording.h"

/* Ends a transaction: commit when ok, else roll back (unless the commit's
 * own outcome is unknown). */
static bool mgmt_finish(struct store *s, bool ok, struct floe_error *err)
{
	if (ok && store_commit(s, err))
		return true;
	if (err->kind != FE_COMMIT_STATE_UNKNOWN)
		store_rollback(s);
	return false;
}

/* mgmt_finish, with the route's answer (status, answer borrowed; NULL:
 * no body) recorded under the request's Idempotency-Key before COMMIT. */
static bool mgmt_finish_answer(struct store *s, const struct table_env *env, bool ok, int status,
			       const json_t *answer, struct floe_error *err)
{
	return mgmt_finish(s, ok && idem_record(s, env, status, answer, err), err);
}

static bool no_such_principal(const char *name, struct floe_error *err)
{
	return floe_err(err, FE_NO_SUCH_PRINCIPAL, "Principal does not exist: %s", name);
}

static bool no_such_role(const char *name, struct floe_error *err)
{
	return floe_err(err, FE_NO_SUCH_ROLE, "Role does not exist: %s", name);
}

/*
 * After a change that may have taken an administrator away, inside its
 * transaction: false with FE_BAD_REQUEST when no principal that is not
 * disabled holds ADMIN on the catalog any more, so that the catalog is
 * never left without anyone who can manage it. The lock makes two such
 * changes at once count one after the other.
 */
static bool keeps_an_admin(struct store *s, struct floe_error *err)
{
	long long n = 0;

	if (!store_principal_lock(s, err) || !store_admin_count(s, &n, err))
		return false;
	if (n == 0)
		return floe_err(err, FE_BAD_REQUEST,
				"The change would leave no principal holding ADMIN on the catalog; "
				"make another administrator first");
	return true;
}

/* Appends event with details (stolen) as env's principal. */
static bool mgmt_event(struct store *s, const struct table_env *env, const char *event,
		       const struct ns_ident *ns, const char *table, json_t *details,
		       struct floe_error *err)
{
	if (details == NULL)
		return floe_err(err, FE_INTERNAL, "out of memory");
	struct store_actor who = audit_actor(env);
	bool ok = store_event_insert(s, event, &who, ns, table, NULL, details, err);
	json_decref(details);
	return ok;
}

bool mgmt_name_check(const char *what, const char *name, struct floe_error *err)
{
	size_t len = name != NULL ? strlen(name) : 0;

	if (len == 0)
		return floe_err(err, FE_BAD_REQUEST, "A %s name must not be empty", what);
	if (len > MGMT_NAME_MAX)
		return floe_err(err, FE_BAD_REQUEST, "A %s name is at most %d bytes", what,
				MGMT_NAME_MAX);
	for (size_t i = 0; i < len; i++) {
		char c = name[i];
		bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			  (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-' || c == '@';
		if (!ok)
			return floe_err(err, FE_BAD_REQUEST,
					"A %s name may hold only letters, digits and . _ - @",
					what);
	}
	return true;
}

/* A page's start and size from the raw query values: the name after
 * which it starts (*after, NULL: the start; free()). A page token is the
 * last name of the page before (names are URL-safe). */
static bool mgmt_page(const char *token, const char *size, char **after, long *limit,
		      struct floe_error *err)
{
	struct floe_error ignored;

	*after = NULL;
	*limit = NS_PAGE_SIZE_DEFAULT;
	if (size != NULL) {
		char *end = NULL;
		long v = strtol(size, &end, 10);
		if (*size == '\0' || *end != '\0' || v < 1)
			return floe_err(err, FE_BAD_REQUEST, "pageSize must be a positive integer");
		*limit = v > NS_PAGE_SIZE_MAX ? NS_PAGE_SIZE_MAX : v;
	}
	if (token == NULL || token[0] == '\0')
		return true;
	if (!mgmt_name_check("page token", token, &ignored))
		return floe_err(err, FE_BAD_REQUEST, "Invalid page token");
	*after = strdup(token);
	return *after != NULL || floe_err(err, FE_INTERNAL, "out of memory");
}

/* {key: items (stolen), "next-page-token": last when more follow, else
 * null}. */
static json_t *mgmt_paged(const char *key, json_t *items, bool more, const char *last)
{
	if (items == NULL)
		return NULL;
	return json_pack("{s:o, s:o}", key, items, "next-page-token",
			 more && last != NULL ? json_string(last) : json_null());
}

/* --- principals --- */

static json_t *principal_json(const void *row)
{
	const struct principal_row *p = row;

	return json_pack("{s:s, s:s, s:s?, s:s, s:b, s:s}", "name", p->name, "kind", p->kind,
			 "client-id", p->client_id, "source", p->source, "disabled", p->disabled,
			 "created-at", p->created_at != NULL ? p->created_at : "");
}

/* Principal name as JSON with its roles (new reference), or NULL with
 * err (FE_NO_SUCH_PRINCIPAL when there is none); *id its id. */
static json_t *principal_load(struct store *s, const char *name, long long *id,
			      struct floe_error *err)
{
	struct principal_row row;
	bool found = false;
	long long *ids = NULL;
	char **names = NULL;
	size_t n = 0;
	json_t *out = NULL;

	memset(&row, 0, sizeof(row));
	if (!store_principal_by_name(s, name, &row, &found, err))
		return NULL;
	if (!found) {
		no_such_principal(name, err);
		return NULL;
	}
	if (id != NULL)
		*id = row.id;
	if (!store_principal_roles(s, row.id, &ids, &names, &n, err))
		goto done;
	out = principal_json(&row);
	json_t *roles = json_array();
	for (size_t i = 0; roles != NULL && i < n; i++)
		json_array_append_new(roles, json_string(names[i]));
	if (out == NULL || roles == NULL || json_object_set_new(out, "roles", roles) != 0) {
		json_decref(out);
		out = NULL;
		floe_err(err, FE_INTERNAL, "out of memory");
	}
done:
	free(ids);
	store_names_free(names, n);
	store_principal_row_clear(&row);
	return out;
}

bool mgmt_principal_spec(const json_t *body, const char **name, const char **kind,
			 struct floe_error *err)
{
	*name = json_string_value(json_object_get(body, "name"));
	*kind = json_string_value(json_object_get(body, "kind"));
	if (*name == NULL)
		return floe_err(err, FE_BAD_REQUEST, "field 'name' must be a string");
	if (!mgmt_name_check("principal", *name, err))
		return false;
	if (*kind == NULL || (strcmp(*kind, "client") != 0 && strcmp(*kind, "user") != 0))
		return floe_err(err, FE_BAD_REQUEST, "field 'kind' must be \"client\" or \"user\"");
	return true;
}

json_t *mgmt_principal_create(struct store *s, const struct table_env *env, const char *name,
			      const char *kind, const char *secret_hash, struct floe_error *err)
{
	bool client = strcmp(kind, "client") == 0;
	long long id = 0;
	json_t *out = NULL;
	bool ok;

	if (!store_begin(s, err))
		return NULL;
	ok = store_principal_insert(s, name, kind, client ? name : NULL,
				    client ? secret_hash : NULL, "floe", &id, err);
	if (!ok && err->kind == FE_ALREADY_EXISTS)
		floe_err(err, FE_ALREADY_EXISTS, "Principal already exists: %s", name);
	ok = ok && mgmt_event(s, env, "principal.created", NULL, NULL,
			      json_pack("{s:s, s:s}", "name", name, "kind", kind), err);
	if (ok) {
		out = principal_load(s, name, NULL, err);
		ok = out != NULL;
	}
	if (!mgmt_finish_answer(s, env, ok, 201, out, err)) {
		json_decref(out);
		return NULL;
	}
	return out;
}

json_t *mgmt_principal_list(struct store *s, const char *token, const char *size,
			    struct floe_error *err)
{
	struct principal_row *rows = NULL;
	size_t count = 0;
	bool more = false;
	char *after = NULL;
	long limit = 0;
	json_t *out = NULL;

	if (!mgmt_page(token, size, &after, &limit, err))
		return NULL;
	if (store_principal_list(s, after, limit, &rows, &count, &more, err)) {
		out = mgmt_paged("principals",
				 rowjson_array(rows, count, sizeof(*rows), principal_json), more,
				 count > 0 ? rows[count - 1].name : NULL);
		if (out == NULL)
			floe_err(err, FE_INTERNAL, "out of memory");
	}
	store_principal_rows_free(rows, count);
	free(after);
	return out;
}

json_t *mgmt_principal_get(struct store *s, const char *name, struct floe_error *err)
{
	return principal_load(s, name, NULL, err);
}

json_t *mgmt_principal_set_disabled(struct store *s, const struct table_env *env, const char *name,
				    bool disabled, long long *id, struct floe_error *err)
{
	bool found = false;
	json_t *out = NULL;
	bool ok;

	/* An administrator who disables itself may leave none. */
	if (disabled && env->principal != NULL && strcmp(env->principal, name) == 0)
		return floe_err(err, FE_BAD_REQUEST, "A principal cannot disable itself: %s", name),
		       NULL;
	if (!store_begin(s, err))
		return NULL;
	ok = store_principal_set_disabled(s, name, disabled, &found, err);
	if (ok && !found)
		ok = no_such_principal(name, err);
	ok = ok && (!disabled || keeps_an_admin(s, err));
	ok = ok && mgmt_event(s, env, disabled ? "principal.disabled" : "principal.enabled", NULL,
			      NULL, json_pack("{s:s}", "name", name), err);
	if (ok) {
		out = principal_load(s, name, id, err);
		ok = out != NULL;
	}
	if (!mgmt_finish_answer(s, env, ok, 200, out, err)) {
		json_decref(out);
		return NULL;
	}
	return out;
}

bool mgmt_rotate_check(struct store *s, const char *name, struct floe_error *err)
{
	struct principal_row row;
	bool found = false;
	bool ok;

	memset(&row, 0, sizeof(row));
	if (!store_principal_by_name(s, name, &row, &found, err))
		return false;
	if (!found)
		ok = no_such_principal(name, err);
	else if (strcmp(row.kind, "client") != 0 || strcmp(row.source, "floe") != 0)
		ok = floe_err(err, FE_BAD_REQUEST,
			      "Principal %s has no secret: only floe's own clients have one", name);
	else
		ok = true;
	store_principal_row_clear(&row);
	return ok;
}

json_t *mgmt_principal_rotate(struct store *s, const struct table_env *env, const char *name,
			      const char *secret_hash, struct floe_error *err)
{
	bool found = false;
	json_t *out = NULL;
	bool ok;

	if (!store_begin(s, err))
		return NULL;
	ok = mgmt_rotate_check(s, name, err) &&
	     store_principal_set_secret(s, name, secret_hash, &found, err);
	if (ok && !found)
		ok = no_such_principal(name, err);
	ok = ok && mgmt_event(s, env, "principal.secret-rotated", NULL, NULL,
			      json_pack("{s:s}", "name", name), err);
	if (ok) {
		out = principal_load(s, name, NULL, err);
		ok = out != NULL;
	}
	/* The route takes no Idempotency-Key (its answer holds the new
	 * secret), so nothing is recorded. */
	if (!mgmt_finish_answer(s, env, ok, 200, out, err)) {
		json_decref(out);
		return NULL;
	}
	return out;
}

/* --- roles --- */

static json_t *role_json(const void *row)
{
	const struct role_row *r = row;

	return json_pack("{s:s, s:s, s:b}", "name", r->name, "created-at", r->created_at,
			 "issuer-grantable", r->issuer_grantable);
}

/* The body's "issuer-grantable" into *grantable (absent: *present false);
 * FE_BAD_REQUEST when it is not a boolean. */
static bool issuer_grantable_field(const json_t *body, bool *grantable, bool *present,
				   struct floe_error *err)
{
	const json_t *v = json_object_get(body, "issuer-grantable");

	*present = v != NULL;
	*grantable = false;
	if (v == NULL)
		return true;
	if (!json_is_boolean(v))
		return floe_err(err, FE_BAD_REQUEST, "field 'issuer-grantable' must be a boolean");
	*grantable = json_is_true(v);
	return true;
}

/* Under the role's row lock: an issuer's claim would grant ADMIN. */
static bool refuse_admin_to_issuer(const char *role, struct floe_error *err)
{
	return floe_err(err, FE_BAD_REQUEST,
			"Role %s is issuer-grantable: ADMIN is never granted by an external "
			"issuer's claim, so it cannot be granted to a role a claim may name; set "
			"issuer-grantable to false first",
			role);
}

/* Whether role exists: FE_NO_SUCH_ROLE when not. */
static bool role_exists(struct store *s, const char *role, struct floe_error *err)
{
	struct grant_row *rows = NULL;
	size_t count = 0;
	bool more = false;
	bool ok = store_grant_list(s, role, 0, 1, &rows, &count, &more, err);

	store_grant_rows_free(rows, count);
	if (!ok && err->kind == FE_NOT_FOUND)
		return no_such_role(role, err);
	return ok;
}

json_t *mgmt_role_create(struct store *s, const struct table_env *env, const json_t *body,
			 struct floe_error *err)
{
	const char *name = json_string_value(json_object_get(body, "name"));
	long long id = 0;
	bool grantable = false;
	bool present = false;
	bool found = false;
	bool ok;

	if (name == NULL)
		return floe_err(err, FE_BAD_REQUEST, "field 'name' must be a string"), NULL;
	if (!mgmt_name_check("role", name, err) ||
	    !issuer_grantable_field(body, &grantable, &present, err) || !store_begin(s, err))
		return NULL;
	ok = store_role_insert(s, name, &id, err);
	if (!ok && err->kind == FE_ALREADY_EXISTS)
		floe_err(err, FE_ALREADY_EXISTS, "Role already exists: %s", name);
	/* A new role holds no grant, so it may be marked at once. */
	if (ok && grantable)
		ok = store_role_set_issuer_grantable(s, name, true, &found, err);
	ok = ok &&
	     mgmt_event(s, env, "role.created", NULL, NULL,
			json_pack("{s:s, s:b}", "role", name, "issuer-grantable", grantable), err);
	json_t *out = NULL;
	if (ok) {
		out = json_pack("{s:s, s:b}", "name", name, "issuer-grantable", grantable);
		ok = out != NULL ? idem_record(s, env, 201, out, err)
				 : floe_err(err, FE_INTERNAL, "out of memory");
	}
	if (!mgmt_finish(s, ok, err)) {
		json_decref(out);
		return NULL;
	}
	return out;
}

json_t *mgmt_role_list(struct store *s, const char *token, const char *size, struct floe_error *err)
{
	struct role_row *rows = NULL;
	size_t count = 0;
	bool more = false;
	char *after = NULL;
	long limit = 0;
	json_t *out = NULL;

	if (!mgmt_page(token, size, &after, &limit, err))
		return NULL;
	if (store_role_list(s, after, limit, &rows, &count, &more, err)) {
		out = mgmt_paged("roles", rowjson_array(rows, count, sizeof(*rows), role_json),
				 more, count > 0 ? rows[count - 1].name : NULL);
		if (out == NULL)
			floe_err(err, FE_INTERNAL, "out of memory");
	}
	store_role_rows_free(rows, count);
	free(after);
	return out;
}

bool mgmt_role_delete(struct store *s, const struct table_env *env, const char *role,
		      struct floe_error *err)
{
	bool found = false;
	bool ok;

	if (!store_begin(s, err))
		return false;
	ok = store_role_delete(s, role, &found, err);
	if (ok && !found)
		ok = no_such_role(role, err);
	ok = ok && keeps_an_admin(s, err);
	ok = ok &&
	     mgmt_event(s, env, "role.deleted", NULL, NULL, json_pack("{s:s}", "role", role), err);
	return mgmt_finish_answer(s, env, ok, 204, NULL, err);
}

json_t *mgmt_role_update(struct store *s, const struct table_env *env, const char *role,
			 const json_t *body, bool *changed, struct floe_error *err)
{
	struct role_row row;
	bool grantable = false;
	bool present = false;
	bool found = false;
	bool holds = false;
	const char *key = NULL;
	json_t *value = NULL;
	json_t *out = NULL;
	bool ok;

	*changed = false;
	memset(&row, 0, sizeof(row));
	json_object_foreach((json_t *)body, key, value) {
		if (strcmp(key, "issuer-grantable") != 0)
			return floe_err(err, FE_BAD_REQUEST,
					"Unknown field '%.64s': a role's issuer-grantable is all "
					"that can be changed",
					key),
			       NULL;
	}
	if (!issuer_grantable_field(body, &grantable, &present, err))
		return NULL;
	if (!present)
		return floe_err(err, FE_BAD_REQUEST, "field 'issuer-grantable' is required"), NULL;
	if (!store_begin(s, err))
		return NULL;
	ok = store_role_lock(s, role, &row, &found, err);
	if (ok && !found)
		ok = no_such_role(role, err);
	if (ok && grantable && !row.issuer_grantable) {
		ok = store_role_holds_admin(s, role, &holds, err);
		if (ok && holds)
			ok = floe_err(err, FE_BAD_REQUEST,
				      "Role %s holds ADMIN: a role holding ADMIN cannot be "
				      "issuer-grantable, since an external issuer's claim never "
				      "grants ADMIN",
				      role);
	}
	if (ok && grantable != row.issuer_grantable) {
		ok = store_role_set_issuer_grantable(s, role, grantable, &found, err) &&
		     mgmt_event(s, env, "role.updated", NULL, NULL,
				json_pack("{s:s, s:b}", "role", role, "issuer-grantable",
					  grantable),
				err);
		*changed = ok;
		row.issuer_grantable = grantable;
	}
	if (ok) {
		out = role_json(&row);
		ok = out != NULL || floe_err(err, FE_INTERNAL, "out of memory");
	}
	store_role_row_clear(&row);
	if (!mgmt_finish_answer(s, env, ok, 200, out, err)) {
		*changed = false;
		json_decref(out);
		return NULL;
	}
	return out;
}

/* Whether principal (id) holds role. */
static bool holds_role(struct store *s, long long id, const char *role, bool *holds,
		       struct floe_error *err)
{
	long long *ids = NULL;
	char **names = NULL;
	size_t n = 0;

	*holds = false;
	if (!store_principal_roles(s, id, &ids, &names, &n, err))
		return false;
	for (size_t i = 0; i < n; i++)
		if (strcmp(names[i], role) == 0)
			*holds = true;
	free(ids);
	store_names_free(names, n);
	return true;
}

bool mgmt_member_set(struct store *s, const struct table_env *env, const char *role,
		     const char *principal, bool add, bool *changed, struct floe_error *err)
{
	struct principal_row row;
	bool found = false;
	bool holds = false;
	bool ok;

	*changed = false;
	memset(&row, 0, sizeof(row));
	if (!store_begin(s, err))
		return false;
	ok = role_exists(s, role, err) && store_principal_by_name(s, principal, &row, &found, err);
	if (ok && !found)
		ok = no_such_principal(principal, err);
	ok = ok && holds_role(s, row.id, role, &holds, err);
	if (ok && !add && !holds)
		ok = floe_err(err, FE_NOT_FOUND, "Principal %s is not a member of role %s",
			      principal, role);
	if (ok && add != holds) {
		ok = add ? store_role_member_add(s, role, principal, &found, err)
			 : store_role_member_remove(s, role, principal, &found, err);
		if (ok && !found)
			ok = no_such_role(role, err);
		ok = ok && (add || keeps_an_admin(s, err));
		ok = ok &&
		     mgmt_event(s, env, add ? "role.member-added" : "role.member-removed", NULL,
				NULL, json_pack("{s:s, s:s}", "role", role, "principal", principal),
				err);
		*changed = ok;
	}
	store_principal_row_clear(&row);
	if (!mgmt_finish_answer(s, env, ok, 204, NULL, err)) {
		*changed = false;
		return false;
	}
	return true;
}

/* --- grants --- */

/* A grant's object as the body names it. */
struct mgmt_object {
	enum grant_on on;
	struct ns_ident ns;
	const char *table; /* borrowed from the body */
};

static const char *const grant_kinds[] = { "catalog", "namespace", "table" };

/* The object of a grant; warehouse "" (the default one) is not shown. */
static json_t *object_json(enum grant_on on, const struct ns_ident *ns, const char *table,
			   const char *warehouse)
{
	json_t *o = json_pack("{s:s}", "kind", grant_kinds[on]);

	if (o != NULL && warehouse[0] != '\0')
		json_object_set_new(o, "warehouse", json_string(warehouse));
	if (o != NULL && on != GRANT_ON_CATALOG)
		json_object_set_new(o, "namespace", ident_ns_to_json(ns));
	if (o != NULL && on == GRANT_ON_TABLE)
		json_object_set_new(o, "table", json_string(table));
	return o;
}

static json_t *grant_json(const void *row)
{
	const struct grant_row *g = row;

	return json_pack("{s:I, s:s, s:o, s:s}", "id", (json_int_t)g->id, "privilege", g->privilege,
			 "on", object_json(g->on, &g->ns, g->table, g->warehouse), "created-at",
			 g->created_at);
}

/* Reads {"kind", "namespace"?, "table"?} into obj (ident_ns_clear its
 * ns). */
static bool object_parse(const json_t *on, struct mgmt_object *obj, struct floe_error *err)
{
	const char *kind = json_string_value(json_object_get(on, "kind"));
	const json_t *ns = json_object_get(on, "namespace");
	const json_t *table = json_object_get(on, "table");

	memset(obj, 0, sizeof(*obj));
	if (!json_is_object(on))
		return floe_err(err, FE_BAD_REQUEST, "field 'on' must be an object");
	if (kind == NULL)
		return floe_err(err, FE_BAD_REQUEST,
				"field 'on.kind' must be \"catalog\", \"namespace\" or \"table\"");
	if (strcmp(kind, "catalog") == 0)
		obj->on = GRANT_ON_CATALOG;
	else if (strcmp(kind, "namespace") == 0)
		obj->on = GRANT_ON_NAMESPACE;
	else if (strcmp(kind, "table") == 0)
		obj->on = GRANT_ON_TABLE;
	else
		return floe_err(err, FE_BAD_REQUEST,
				"field 'on.kind' must be \"catalog\", \"namespace\" or \"table\"");
	if (obj->on == GRANT_ON_CATALOG) {
		if (ns != NULL || table != NULL)
			return floe_err(err, FE_BAD_REQUEST,
					"a grant on the catalog names no namespace or table");
		return true;
	}
	if (!ident_ns_from_json(ns, "on.namespace", &obj->ns, err))
		return false;
	if (obj->on == GRANT_ON_NAMESPACE) {
		if (table != NULL)
			return floe_err(err, FE_BAD_REQUEST,
					"a grant on a namespace names no table");
		return true;
	}
	obj->table = json_string_value(table);
	if (obj->table == NULL)
		return floe_err(err, FE_BAD_REQUEST, "field 'on.table' must be a string");
	return ident_name_check(obj->table, strlen(obj->table), "table name", err);
}

/* Reads the body of a grant: the privilege (checked against where it is
 * granted) and the object. */
static bool grant_parse(const json_t *body, const char **privilege, struct mgmt_object *obj,
			struct floe_error *err)
{
	enum privilege priv;
	static const enum authz_kind kinds[] = { AUTHZ_CATALOG, AUTHZ_NAMESPACE, AUTHZ_TABLE };

	*privilege = json_string_value(json_object_get(body, "privilege"));
	if (!object_parse(json_object_get(body, "on"), obj, err))
		return false;
	if (*privilege == NULL)
		return floe_err(err, FE_BAD_REQUEST, "field 'privilege' must be a string");
	if (!privilege_from_name(*privilege, &priv))
		return floe_err(err, FE_BAD_REQUEST, "Unknown privilege: %.64s", *privilege);
	if (!privilege_grantable_on(priv, kinds[obj->on]))
		return floe_err(err, FE_BAD_REQUEST, "%s cannot be granted on a %s", *privilege,
				grant_kinds[obj->on]);
	return true;
}

/* Words the store's refusal of a grant's role or object. */
static bool grant_word_error(struct store *s, const char *role, const struct mgmt_object *obj,
			     struct floe_error *err)
{
	if (err->kind == FE_NOT_FOUND)
		return no_such_role(role, err);
	if (err->kind == FE_NO_SUCH_TABLE)
		return wording_no_such_table(&obj->ns, obj->table, err);
	if (err->kind == FE_NO_SUCH_NAMESPACE)
		return wording_no_such_namespace(&obj->ns, err);
	(void)s;
	return false;
}

json_t *mgmt_grant_set(struct store *s, const struct table_env *env, const char *role,
		       const json_t *body, bool add, bool *changed, struct floe_error *err)
{
	struct mgmt_object obj;
	const char *privilege = NULL;
	bool done = false;
	json_t *out = NULL;
	bool ok;

	*changed = false;
	if (!grant_parse(body, &privilege, &obj, err)) {
		ident_ns_clear(&obj.ns);
		return NULL;
	}
	const struct ns_ident *ns = obj.on != GRANT_ON_CATALOG ? &obj.ns : NULL;
	if (!store_begin(s, err)) {
		ident_ns_clear(&obj.ns);
		return NULL;
	}
	struct role_row row;
	bool found = false;
	memset(&row, 0, sizeof(row));
	ok = store_role_lock(s, role, &row, &found, err);
	if (ok && !found)
		ok = no_such_role(role, err);
	if (ok && add && row.issuer_grantable && strcmp(privilege, "ADMIN") == 0)
		ok = refuse_admin_to_issuer(role, err);
	store_role_row_clear(&row);
	if (ok && add)
		ok = store_grant_insert(s, role, privilege, obj.on, ns, obj.table, &done, err) ||
		     grant_word_error(s, role, &obj, err);
	else if (ok)
		ok = store_grant_delete(s, role, privilege, obj.on, ns, obj.table, &done, err);
	if (ok && !add && !done) {
		char *what = obj.on == GRANT_ON_CATALOG ? NULL : ident_ns_display(&obj.ns);
		ok = floe_err(err, FE_NOT_FOUND, "Role %s has no grant of %s on %s%s%s%s%s", role,
			      privilege,
			      obj.on == GRANT_ON_CATALOG ? "the catalog" : grant_kinds[obj.on],
			      what != NULL ? " " : "", what != NULL ? what : "",
			      obj.table != NULL ? "." : "", obj.table != NULL ? obj.table : "");
		free(what);
	}
	ok = ok && (add || !done || keeps_an_admin(s, err));
	if (ok) {
		/* ADMIN is floe's, not one warehouse's (store_grant_insert). */
		out = json_pack("{s:s, s:s, s:o}", "role", role, "privilege", privilege, "on",
				object_json(obj.on, &obj.ns, obj.table,
					    strcmp(privilege, "ADMIN") == 0 ? ""
									    : store_warehouse(s)));
		ok = out != NULL || floe_err(err, FE_INTERNAL, "out of memory");
	}
	if (ok && done)
		ok = mgmt_event(s, env, add ? "grant.added" : "grant.revoked", ns, obj.table,
				json_deep_copy(out), err);
	ident_ns_clear(&obj.ns);
	if (!mgmt_finish_answer(s, env, ok, add && done ? 201 : 200, out, err)) {
		json_decref(out);
		return NULL;
	}
	*changed = done;
	return out;
}

json_t *mgmt_grant_list(struct store *s, const char *role, const char *token, const char *size,
			struct floe_error *err)
{
	struct grant_row *rows = NULL;
	size_t count = 0;
	bool more = false;
	char *after = NULL;
	long limit = 0;
	long long after_id = 0;
	json_t *out = NULL;

	if (!mgmt_page(token, size, &after, &limit, err))
		return NULL;
	if (after != NULL) {
		char *end = NULL;
		after_id = strtoll(after, &end, 10);
		if (*end != '\0' || after_id < 0) {
			free(after);
			return floe_err(err, FE_BAD_REQUEST, "Invalid page token"), NULL;
		}
	}
	free(after);
	if (!store_grant_list(s, role, after_id, limit, &rows, &count, &more, err)) {
		if (err->kind == FE_NOT_FOUND)
			no_such_role(role, err);
		return NULL;
	}
	char last[32] = "";
	if (count > 0)
		(void)snprintf(last, sizeof(last), "%lld", rows[count - 1].id);
	out = mgmt_paged("grants", rowjson_array(rows, count, sizeof(*rows), grant_json), more,
			 last);
	if (out == NULL)
		floe_err(err, FE_INTERNAL, "out of memory");
	store_grant_rows_free(rows, count);
	return out;
}

/* --- what a principal may do --- */

json_t *mgmt_privileges(struct store *s, const char *name, const struct ns_ident *ns,
			const char *table, struct floe_error *err)
{
	struct principal_row row;
	bool found = false;
	bool exists = true;
	long long *ids = NULL;
	char **names = NULL;
	size_t n = 0;
	json_t *privileges = NULL;
	json_t *out = NULL;

	memset(&row, 0, sizeof(row));
	if (!store_principal_by_name(s, name, &row, &found, err))
		return NULL;
	if (!found) {
		no_such_principal(name, err);
		goto done;
	}
	if (table != NULL && !store_table_exists(s, ns, table, &exists, err))
		goto done;
	if (table != NULL && !exists) {
		wording_no_such_table(ns, table, err);
		goto done;
	}
	if (table == NULL && ns != NULL && !store_ns_exists(s, ns, &exists, err))
		goto done;
	if (table == NULL && ns != NULL && !exists) {
		wording_no_such_namespace(ns, err);
		goto done;
	}
	if (!store_principal_roles(s, row.id, &ids, &names, &n, err))
		goto done;
	struct principal p = { .id = row.id,
			       .name = row.name,
			       .client_id = row.client_id,
			       .roles = ids,
			       .nroles = n };
	struct authz_object obj = { .kind = table != NULL ? AUTHZ_TABLE
					    : ns != NULL  ? AUTHZ_NAMESPACE
							  : AUTHZ_CATALOG,
				    .ns = ns,
				    .table = table };
	if (!authz_privileges(s, &p, &obj, &privileges, err))
		goto done;
	enum grant_on on = table != NULL ? GRANT_ON_TABLE
			   : ns != NULL  ? GRANT_ON_NAMESPACE
					 : GRANT_ON_CATALOG;
	out = json_pack("{s:s, s:o, s:o}", "principal", row.name, "object",
			object_json(on, ns, table, store_warehouse(s)), "privileges", privileges);
	privileges = NULL;
	if (out == NULL)
		floe_err(err, FE_INTERNAL, "out of memory");
done:
	json_decref(privileges);
	free(ids);
	store_names_free(names, n);
	store_principal_row_clear(&row);
	return out;
}
