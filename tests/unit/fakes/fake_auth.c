/*
 * fake_auth.c - the store's principals, roles and grants over the fake
 * store's state (under "auth", so a transaction's rollback undoes them
 * too). Grants name their object by levels and table name; the objects
 * the visible listings walk are the ones a test adds
 * (fake_store_add_object). Every call can be scripted to fail.
 */
#include "fakes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* {"principals": [{id, name, kind, client_id, secret_hash, source,
 *   disabled, created_at}], "roles": [{id, name}], "members": [[role,
 *   principal]], "grants": [{id, role, privilege, on, ns, table}],
 *  "objects": [{ns, table}], "next": n}; ns is the 0x1F-joined levels. */
static json_t *auth(void)
{
	json_t *st = fake_store_state();
	json_t *a = json_object_get(st, "auth");

	if (a == NULL) {
		a = json_pack("{s:[], s:[], s:[], s:[], s:[], s:I}", "principals", "roles",
			      "members", "grants", "objects", "next", (json_int_t)1);
		json_object_set_new(st, "auth", a);
	}
	return a;
}

static json_t *list(const char *name)
{
	return json_object_get(auth(), name);
}

static long long next_id(void)
{
	json_t *a = auth();
	long long id = json_integer_value(json_object_get(a, "next"));

	json_object_set_new(a, "next", json_integer(id + 1));
	return id;
}

static const char *str(const json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

static bool same(const char *a, const char *b)
{
	return (a == NULL && b == NULL) || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

/* The element of list name whose key equals value, or NULL. */
static json_t *find(const char *name, const char *key, const char *value)
{
	size_t i;
	json_t *e;

	json_array_foreach(list(name), i, e) {
		if (value != NULL && same(str(e, key), value))
			return e;
	}
	return NULL;
}

static char *dup_or_null(const char *v)
{
	return v != NULL ? strdup(v) : NULL;
}

/* A JSON array of strings as one block of names (store_names_free). */
static bool names_of(const json_t *arr, char ***names, size_t *n, struct floe_error *err)
{
	size_t count = json_array_size(arr), bytes = (count + 1) * sizeof(char *), i;
	json_t *e;

	*names = NULL;
	*n = 0;
	if (count == 0)
		return true;
	json_array_foreach(arr, i, e)
		bytes += strlen(json_string_value(e)) + 1;
	char **out = malloc(bytes);
	if (out == NULL)
		return floe_err(err, FE_INTERNAL, "out of memory");
	char *p = (char *)(out + count + 1);
	json_array_foreach(arr, i, e) {
		size_t len = strlen(json_string_value(e));
		memcpy(p, json_string_value(e), len + 1);
		out[i] = p;
		p += len + 1;
	}
	out[count] = NULL;
	*names = out;
	*n = count;
	return true;
}

void fake_store_add_object(const struct ns_ident *ns, const char *table)
{
	char *levels = ident_ns_join(ns);

	json_array_append_new(list("objects"),
			      json_pack("{s:s, s:s?}", "ns", levels, "table", table));
	free(levels);
}

/* --- principals --- */

static void principal_fill(const json_t *e, struct principal_row *row)
{
	row->id = json_integer_value(json_object_get(e, "id"));
	row->name = dup_or_null(str(e, "name"));
	row->kind = dup_or_null(str(e, "kind"));
	row->client_id = dup_or_null(str(e, "client_id"));
	row->secret_hash = dup_or_null(str(e, "secret_hash"));
	row->source = dup_or_null(str(e, "source"));
	row->disabled = json_is_true(json_object_get(e, "disabled"));
	row->token_epoch = json_integer_value(json_object_get(e, "token_epoch"));
	row->created_at = strdup("2026-01-01T00:00:00.000000Z");
}

static bool principal_get(const char *fn, const char *key, const char *value,
			  struct principal_row *row, bool *found, struct floe_error *err)
{
	memset(row, 0, sizeof(*row));
	*found = false;
	if (fake_fault_due(fn, err, NULL))
		return false;
	json_t *e = find("principals", key, value);
	if (e != NULL) {
		principal_fill(e, row);
		*found = true;
	}
	return true;
}

bool store_principal_by_client(struct store *s, const char *client_id, struct principal_row *row,
			       bool *found, struct floe_error *err)
{
	(void)s;
	return principal_get(__func__, "client_id", client_id, row, found, err);
}

bool store_principal_by_name(struct store *s, const char *name, struct principal_row *row,
			     bool *found, struct floe_error *err)
{
	(void)s;
	return principal_get(__func__, "name", name, row, found, err);
}

bool store_principal_insert(struct store *s, const char *name, const char *kind,
			    const char *client_id, const char *secret_hash, const char *source,
			    long long *id, struct floe_error *err)
{
	(void)s;
	*id = 0;
	if (fake_fault_due(__func__, err, NULL))
		return false;
	if (find("principals", "name", name) != NULL ||
	    find("principals", "client_id", client_id) != NULL)
		return floe_err(err, FE_ALREADY_EXISTS,
				"the principal's name or client id is taken");
	*id = next_id();
	json_array_append_new(list("principals"),
			      json_pack("{s:I, s:s, s:s, s:s?, s:s?, s:s, s:b}", "id",
					(json_int_t)*id, "name", name, "kind", kind, "client_id",
					client_id, "secret_hash", secret_hash, "source", source,
					"disabled", false));
	return true;
}

/* The elements of list name whose "name" sorts after after_name, at most
 * limit (< 0: all), each filled into a new array of rows of size bytes;
 * the fakes keep insertion order (the tests insert in name order). */
static bool page_by_name(const char *fn, const char *name, const char *after_name, long limit,
			 size_t size, void (*fill)(const json_t *e, void *row), void **rows,
			 size_t *count, bool *more, struct floe_error *err)
{
	size_t i, n = 0;
	json_t *e;

	*rows = NULL;
	*count = 0;
	*more = false;
	if (fake_fault_due(fn, err, NULL))
		return false;
	char *out = calloc(json_array_size(list(name)) + 1, size);
	if (out == NULL)
		return floe_err(err, FE_INTERNAL, "out of memory");
	json_array_foreach(list(name), i, e) {
		if (after_name != NULL && strcmp(str(e, "name"), after_name) <= 0)
			continue;
		if (limit >= 0 && n == (size_t)limit) {
			*more = true;
			break;
		}
		fill(e, out + size * n++);
	}
	*rows = out;
	*count = n;
	return true;
}

static void principal_fill_any(const json_t *e, void *row)
{
	principal_fill(e, row);
}

bool store_principal_list(struct store *s, const char *after_name, long limit,
			  struct principal_row **rows, size_t *count, bool *more,
			  struct floe_error *err)
{
	void *out = NULL;
	bool ok = page_by_name(__func__, "principals", after_name, limit, sizeof(**rows),
			       principal_fill_any, &out, count, more, err);

	(void)s;
	*rows = out;
	return ok;
}

static bool principal_set(const char *fn, const char *name, const char *key, json_t *value,
			  bool *found, struct floe_error *err)
{
	*found = false;
	if (fake_fault_due(fn, err, NULL)) {
		json_decref(value);
		return false;
	}
	json_t *e = find("principals", "name", name);
	if (e != NULL) {
		json_object_set(e, key, value);
		*found = true;
	}
	json_decref(value);
	return true;
}

bool store_principal_set_disabled(struct store *s, const char *name, bool disabled, bool *found,
				  struct floe_error *err)
{
	(void)s;
	return principal_set(__func__, name, "disabled", json_boolean(disabled), found, err);
}

bool store_principal_set_secret(struct store *s, const char *name, const char *secret_hash,
				bool *found, struct floe_error *err)
{
	(void)s;
	return principal_set(__func__, name, "secret_hash",
			     secret_hash ? json_string(secret_hash) : json_null(), found, err);
}

bool store_principal_upgrade_secret(struct store *s, long long id, const char *old_hash,
				    const char *new_hash, bool *done, struct floe_error *err)
{
	size_t i;
	json_t *p;

	(void)s;
	*done = false;
	if (fake_fault_due(__func__, err, NULL))
		return false;
	json_array_foreach(list("principals"), i, p) {
		if (json_integer_value(json_object_get(p, "id")) == id &&
		    same(str(p, "secret_hash"), old_hash)) {
			json_object_set_new(p, "secret_hash", json_string(new_hash));
			*done = true;
		}
	}
	return true;
}

bool store_principal_count(struct store *s, long long *n, struct floe_error *err)
{
	(void)s;
	*n = 0;
	if (fake_fault_due(__func__, err, NULL))
		return false;
	*n = (long long)json_array_size(list("principals"));
	return true;
}

static long long id_of(const char *name, const char *value)
{
	return json_integer_value(json_object_get(find(name, "name", value), "id"));
}

bool store_principal_roles(struct store *s, long long principal_id, long long **ids, char ***names,
			   size_t *n, struct floe_error *err)
{
	json_t *held = json_array();
	size_t i, k = 0;
	json_t *m, *r;

	(void)s;
	*ids = NULL;
	*names = NULL;
	*n = 0;
	if (fake_fault_due(__func__, err, NULL)) {
		json_decref(held);
		return false;
	}
	*ids = calloc(json_array_size(list("members")) + 1, sizeof(**ids));
	if (*ids == NULL) {
		json_decref(held);
		return floe_err(err, FE_INTERNAL, "out of memory");
	}
	json_array_foreach(list("members"), i, m) {
		if (json_integer_value(json_array_get(m, 1)) != principal_id)
			continue;
		size_t j;
		json_array_foreach(list("roles"), j, r) {
			if (json_integer_value(json_object_get(r, "id")) ==
			    json_integer_value(json_array_get(m, 0))) {
				(*ids)[k++] = json_integer_value(json_object_get(r, "id"));
				json_array_append(held, json_object_get(r, "name"));
			}
		}
	}
	bool ok = names_of(held, names, n, err);
	json_decref(held);
	if (!ok || k == 0) {
		free(*ids);
		*ids = NULL;
	}
	return ok;
}

bool store_principal_lock(struct store *s, struct floe_error *err)
{
	(void)s;
	return !fake_fault_due(__func__, err, NULL);
}

/* Whether role (id) holds ADMIN on the catalog. */
static bool role_is_admin(long long role)
{
	size_t i;
	json_t *g;

	json_array_foreach(list("grants"), i, g) {
		if (json_integer_value(json_object_get(g, "role")) == role &&
		    same(str(g, "privilege"), "ADMIN") && same(str(g, "on"), "catalog"))
			return true;
	}
	return false;
}

bool store_admin_count(struct store *s, long long *n, struct floe_error *err)
{
	size_t i, j;
	json_t *p, *m;

	(void)s;
	*n = 0;
	if (fake_fault_due(__func__, err, NULL))
		return false;
	json_array_foreach(list("principals"), i, p) {
		if (json_is_true(json_object_get(p, "disabled")))
			continue;
		long long id = json_integer_value(json_object_get(p, "id"));
		json_array_foreach(list("members"), j, m) {
			if (json_integer_value(json_array_get(m, 1)) == id &&
			    role_is_admin(json_integer_value(json_array_get(m, 0)))) {
				(*n)++;
				break;
			}
		}
	}
	return true;
}

/* --- roles --- */

bool store_role_insert(struct store *s, const char *name, long long *id, struct floe_error *err)
{
	(void)s;
	*id = 0;
	if (fake_fault_due(__func__, err, NULL))
		return false;
	if (find("roles", "name", name) != NULL)
		return floe_err(err, FE_ALREADY_EXISTS, "the role already exists");
	*id = next_id();
	json_array_append_new(list("roles"),
			      json_pack("{s:I, s:s}", "id", (json_int_t)*id, "name", name));
	return true;
}

static void role_fill(const json_t *e, void *dst)
{
	struct role_row *row = dst;

	row->id = json_integer_value(json_object_get(e, "id"));
	row->name = strdup(str(e, "name"));
	snprintf(row->created_at, sizeof(row->created_at), "2026-01-01T00:00:00.000000Z");
	row->issuer_grantable = json_is_true(json_object_get(e, "issuer_grantable"));
}

/* Whether role (id) holds ADMIN, on anything. */
static bool role_holds_admin(long long role)
{
	size_t i;
	json_t *g;

	json_array_foreach(list("grants"), i, g) {
		if (json_integer_value(json_object_get(g, "role")) == role &&
		    same(str(g, "privilege"), "ADMIN"))
			return true;
	}
	return false;
}

bool store_role_lock(struct store *s, const char *name, struct role_row *row, bool *found,
		     struct floe_error *err)
{
	(void)s;
	memset(row, 0, sizeof(*row));
	*found = false;
	if (fake_fault_due(__func__, err, NULL))
		return false;
	const json_t *e = find("roles", "name", name);
	if (e != NULL) {
		role_fill(e, row);
		*found = true;
	}
	return true;
}

bool store_role_holds_admin(struct store *s, const char *name, bool *holds, struct floe_error *err)
{
	(void)s;
	*holds = false;
	if (fake_fault_due(__func__, err, NULL))
		return false;
	const json_t *e = find("roles", "name", name);
	*holds = e != NULL && role_holds_admin(json_integer_value(json_object_get(e, "id")));
	return true;
}

bool store_role_set_issuer_grantable(struct store *s, const char *name, bool grantable, bool *found,
				     struct floe_error *err)
{
	(void)s;
	*found = false;
	if (fake_fault_due(__func__, err, NULL))
		return false;
	json_t *e = find("roles", "name", name);
	if (e != NULL) {
		json_object_set_new(e, "issuer_grantable", json_boolean(grantable));
		*found = true;
	}
	return true;
}

bool store_role_list_issuer_grantable(struct store *s, struct role_row **rows, size_t *count,
				      struct floe_error *err)
{
	size_t i, n = 0;
	json_t *e;

	(void)s;
	*rows = NULL;
	*count = 0;
	if (fake_fault_due(__func__, err, NULL))
		return false;
	struct role_row *out = calloc(json_array_size(list("roles")) + 1, sizeof(*out));
	if (out == NULL)
		return floe_err(err, FE_INTERNAL, "out of memory");
	json_array_foreach(list("roles"), i, e) {
		if (json_is_true(json_object_get(e, "issuer_grantable")) &&
		    !role_holds_admin(json_integer_value(json_object_get(e, "id"))))
			role_fill(e, &out[n++]);
	}
	*rows = out;
	*count = n;
	return true;
}

bool store_role_list(struct store *s, const char *after_name, long limit, struct role_row **rows,
		     size_t *count, bool *more, struct floe_error *err)
{
	void *out = NULL;
	bool ok = page_by_name(__func__, "roles", after_name, limit, sizeof(**rows), role_fill,
			       &out, count, more, err);

	(void)s;
	*rows = out;
	return ok;
}

/* Removes from list name every element for which drop(e, id) holds. */
static int remove_where(const char *name, bool (*drop)(const json_t *e, long long id), long long id)
{
	json_t *arr = list(name);
	int removed = 0;

	for (size_t i = json_array_size(arr); i-- > 0;) {
		if (drop(json_array_get(arr, i), id)) {
			json_array_remove(arr, i);
			removed++;
		}
	}
	return removed;
}

static bool member_of_role(const json_t *e, long long id)
{
	return json_integer_value(json_array_get(e, 0)) == id;
}

static bool grant_of_role(const json_t *e, long long id)
{
	return json_integer_value(json_object_get(e, "role")) == id;
}

static bool role_has_id(const json_t *e, long long id)
{
	return json_integer_value(json_object_get(e, "id")) == id;
}

bool store_role_delete(struct store *s, const char *name, bool *found, struct floe_error *err)
{
	(void)s;
	*found = false;
	if (fake_fault_due(__func__, err, NULL))
		return false;
	long long id = id_of("roles", name);
	if (id == 0)
		return true;
	remove_where("members", member_of_role, id);
	remove_where("grants", grant_of_role, id);
	remove_where("roles", role_has_id, id);
	*found = true;
	return true;
}

/* The index of membership (role, principal) in "members", or -1. */
static long member_index(long long role, long long principal)
{
	size_t i;
	json_t *m;

	json_array_foreach(list("members"), i, m) {
		if (json_integer_value(json_array_get(m, 0)) == role &&
		    json_integer_value(json_array_get(m, 1)) == principal)
			return (long)i;
	}
	return -1;
}

bool store_role_member_add(struct store *s, const char *role, const char *principal, bool *found,
			   struct floe_error *err)
{
	(void)s;
	*found = false;
	if (fake_fault_due(__func__, err, NULL))
		return false;
	long long r = id_of("roles", role), p = id_of("principals", principal);
	if (r == 0 || p == 0)
		return true;
	if (member_index(r, p) < 0)
		json_array_append_new(list("members"),
				      json_pack("[I, I]", (json_int_t)r, (json_int_t)p));
	*found = true;
	return true;
}

bool store_role_member_remove(struct store *s, const char *role, const char *principal, bool *found,
			      struct floe_error *err)
{
	(void)s;
	*found = false;
	if (fake_fault_due(__func__, err, NULL))
		return false;
	long i = member_index(id_of("roles", role), id_of("principals", principal));
	if (i >= 0) {
		json_array_remove(list("members"), (size_t)i);
		*found = true;
	}
	return true;
}

/* --- grants --- */

static const char *const on_names[] = { "catalog", "namespace", "table" };

/* The grant of role on the object, or NULL; *index its place. */
static json_t *grant_find(long long role, const char *privilege, enum grant_on on,
			  const char *levels, const char *table, size_t *index)
{
	size_t i;
	json_t *g;

	json_array_foreach(list("grants"), i, g) {
		if (json_integer_value(json_object_get(g, "role")) == role &&
		    same(str(g, "privilege"), privilege) && same(str(g, "on"), on_names[on]) &&
		    same(str(g, "ns"), levels) && same(str(g, "table"), table)) {
			*index = i;
			return g;
		}
	}
	return NULL;
}

/* levels and table of an object as the fake keeps them (levels: a new
 * string, or NULL on the catalog). */
static char *object_levels(enum grant_on on, const struct ns_ident *ns)
{
	return on == GRANT_ON_CATALOG || ns == NULL ? NULL : ident_ns_join(ns);
}

/* Adds (add) or removes the grant; *changed tells whether it did. */
static bool grant_change(const char *fn, bool add, const char *role, const char *privilege,
			 enum grant_on on, const struct ns_ident *ns, const char *table,
			 bool *changed, struct floe_error *err)
{
	size_t at = 0;

	*changed = false;
	if (fake_fault_due(fn, err, NULL))
		return false;
	long long r = id_of("roles", role);
	if (add && r == 0)
		return floe_err(err, FE_NOT_FOUND, "no such role");
	char *levels = object_levels(on, ns);
	const char *t = on == GRANT_ON_TABLE ? table : NULL;
	bool held = grant_find(r, privilege, on, levels, t, &at) != NULL;
	if (add && !held)
		json_array_append_new(list("grants"),
				      json_pack("{s:I, s:I, s:s, s:s, s:s?, s:s?}", "id",
						(json_int_t)next_id(), "role", (json_int_t)r,
						"privilege", privilege, "on", on_names[on], "ns",
						levels, "table", t));
	else if (!add && held)
		json_array_remove(list("grants"), at);
	*changed = add != held;
	free(levels);
	return true;
}

bool store_grant_insert(struct store *s, const char *role, const char *privilege, enum grant_on on,
			const struct ns_ident *ns, const char *table, bool *inserted,
			struct floe_error *err)
{
	(void)s;
	return grant_change(__func__, true, role, privilege, on, ns, table, inserted, err);
}

bool store_grant_delete(struct store *s, const char *role, const char *privilege, enum grant_on on,
			const struct ns_ident *ns, const char *table, bool *found,
			struct floe_error *err)
{
	(void)s;
	return grant_change(__func__, false, role, privilege, on, ns, table, found, err);
}

static bool levels_to_ns(const char *levels, struct ns_ident *ns)
{
	memset(ns, 0, sizeof(*ns));
	for (const char *p = levels; p != NULL && ns->nlevels < IDENT_MAX_LEVELS;) {
		const char *sep = strchr(p, IDENT_SEPARATOR);
		ns->levels[ns->nlevels++] = sep ? strndup(p, (size_t)(sep - p)) : strdup(p);
		p = sep ? sep + 1 : NULL;
	}
	return true;
}

bool store_grant_list(struct store *s, const char *role, long long after_id, long limit,
		      struct grant_row **rows, size_t *count, bool *more, struct floe_error *err)
{
	size_t i, n = 0;
	json_t *g;

	(void)s;
	*rows = NULL;
	*count = 0;
	*more = false;
	if (fake_fault_due(__func__, err, NULL))
		return false;
	long long r = id_of("roles", role);
	if (r == 0)
		return floe_err(err, FE_NOT_FOUND, "no such role");
	*rows = calloc(json_array_size(list("grants")) + 1, sizeof(**rows));
	if (*rows == NULL)
		return floe_err(err, FE_INTERNAL, "out of memory");
	json_array_foreach(list("grants"), i, g) {
		long long id = json_integer_value(json_object_get(g, "id"));
		if (json_integer_value(json_object_get(g, "role")) != r || id <= after_id)
			continue;
		if (limit >= 0 && n == (size_t)limit) {
			*more = true;
			break;
		}
		struct grant_row *row = &(*rows)[n++];
		row->id = id;
		row->privilege = strdup(str(g, "privilege"));
		row->on = same(str(g, "on"), "table")       ? GRANT_ON_TABLE
			  : same(str(g, "on"), "namespace") ? GRANT_ON_NAMESPACE
							    : GRANT_ON_CATALOG;
		levels_to_ns(str(g, "ns"), &row->ns);
		row->table = dup_or_null(str(g, "table"));
	}
	*count = n;
	return true;
}

static bool has_role(const long long *ids, size_t n, long long id)
{
	for (size_t i = 0; i < n; i++) {
		if (ids[i] == id)
			return true;
	}
	return false;
}

/* a (0x1F-joined levels) is b or a namespace above it. */
static bool at_or_above(const char *a, const char *b)
{
	size_t n = strlen(a);
	return strncmp(a, b, n) == 0 && (b[n] == '\0' || b[n] == IDENT_SEPARATOR);
}

bool store_privileges_on(struct store *s, const long long *role_ids, size_t nroles,
			 const struct ns_ident *ns, const char *table, char ***privileges,
			 size_t *n, struct floe_error *err)
{
	char *levels = ns != NULL ? ident_ns_join(ns) : NULL;
	json_t *held = json_array();
	size_t i;
	json_t *g;

	(void)s;
	*privileges = NULL;
	*n = 0;
	if (fake_fault_due(__func__, err, NULL)) {
		free(levels);
		json_decref(held);
		return false;
	}
	json_array_foreach(list("grants"), i, g) {
		if (!has_role(role_ids, nroles, json_integer_value(json_object_get(g, "role"))))
			continue;
		const char *on = str(g, "on");
		bool applies = same(on, "catalog") ||
			       (same(on, "namespace") && levels != NULL &&
				at_or_above(str(g, "ns"), levels)) ||
			       (same(on, "table") && levels != NULL && table != NULL &&
				same(str(g, "ns"), levels) && same(str(g, "table"), table));
		if (applies)
			json_array_append(held, json_object_get(g, "privilege"));
	}
	bool ok = names_of(held, privileges, n, err);
	json_decref(held);
	free(levels);
	return ok;
}

/* Whether the roles make object (levels, table) visible: a grant on the
 * catalog, on it, above or below it. */
static bool visible(const long long *role_ids, size_t nroles, const char *levels, const char *table)
{
	size_t i;
	json_t *g;

	json_array_foreach(list("grants"), i, g) {
		if (!has_role(role_ids, nroles, json_integer_value(json_object_get(g, "role"))))
			continue;
		const char *on = str(g, "on"), *gl = str(g, "ns");
		if (same(on, "catalog") || (same(on, "namespace") && at_or_above(gl, levels)))
			return true;
		if (table == NULL && gl != NULL && at_or_above(levels, gl))
			return true; /* on a namespace or table below */
		if (table != NULL && same(on, "table") && same(gl, levels) &&
		    same(str(g, "table"), table))
			return true;
	}
	return false;
}

bool store_ns_visible(struct store *s, const long long *role_ids, size_t nroles,
		      const struct ns_ident *ns, bool *is_visible, struct floe_error *err)
{
	char *levels = ident_ns_join(ns);

	(void)s;
	*is_visible = false;
	if (!fake_fault_due(__func__, err, NULL) && levels != NULL) {
		*is_visible = visible(role_ids, nroles, levels, NULL);
		free(levels);
		return true;
	}
	free(levels);
	return false;
}

/* The visible objects under parent (levels, NULL: the top; tables: its
 * tables, else its child namespaces) sorting after after, as names. */
static json_t *visible_under(const long long *role_ids, size_t nroles, const char *parent,
			     bool tables, const char *after)
{
	json_t *out = json_array();
	size_t i;
	json_t *o;

	json_array_foreach(list("objects"), i, o) {
		const char *l = str(o, "ns"), *t = str(o, "table");
		if (tables ? !(t != NULL && same(l, parent)) : t != NULL)
			continue;
		if (!tables) {
			const char *last = strrchr(l, IDENT_SEPARATOR);
			size_t plen = last ? (size_t)(last - l) : 0;
			if (parent == NULL ? last != NULL
					   : (last == NULL || strlen(parent) != plen ||
					      strncmp(l, parent, plen) != 0))
				continue;
		}
		const char *name = tables ? t : l;
		if ((after == NULL || strcmp(name, after) > 0) && visible(role_ids, nroles, l, t))
			json_array_append_new(out, json_string(name));
	}
	return out;
}

bool store_table_list_visible(struct store *s, const long long *role_ids, size_t nroles,
			      const struct ns_ident *ns, const char *after, long limit,
			      char ***names, size_t *count, bool *more, struct floe_error *err)
{
	char *levels = ident_ns_join(ns);

	(void)s;
	*names = NULL;
	*count = 0;
	*more = false;
	if (fake_fault_due(__func__, err, NULL)) {
		free(levels);
		return false;
	}
	json_t *found = visible_under(role_ids, nroles, levels, true, after);
	free(levels);
	if (limit >= 0 && json_array_size(found) > (size_t)limit) {
		*more = true;
		while (json_array_size(found) > (size_t)limit)
			json_array_remove(found, json_array_size(found) - 1);
	}
	bool ok = names_of(found, names, count, err);
	json_decref(found);
	return ok;
}

bool store_ns_list_visible(struct store *s, const long long *role_ids, size_t nroles,
			   const struct ns_ident *parent, const struct ns_ident *after, long limit,
			   struct ns_ident **rows, size_t *count, bool *more,
			   struct floe_error *err)
{
	char *pl = parent ? ident_ns_join(parent) : NULL;
	char *al = after ? ident_ns_join(after) : NULL;
	size_t i;
	json_t *e;

	(void)s;
	*rows = NULL;
	*count = 0;
	*more = false;
	if (fake_fault_due(__func__, err, NULL)) {
		free(pl);
		free(al);
		return false;
	}
	json_t *found = visible_under(role_ids, nroles, pl, false, al);
	free(pl);
	free(al);
	*rows = calloc(json_array_size(found) + 1, sizeof(**rows));
	json_array_foreach(found, i, e) {
		if (limit >= 0 && *count == (size_t)limit) {
			*more = true;
			break;
		}
		levels_to_ns(json_string_value(e), &(*rows)[(*count)++]);
	}
	json_decref(found);
	return true;
}

void store_ns_rows_free(struct ns_ident *rows, size_t count)
{
	for (size_t i = 0; rows != NULL && i < count; i++)
		ident_ns_clear(&rows[i]);
	free(rows);
}
