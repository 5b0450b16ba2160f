/*
 * access.c - the privileges a request needs from what it asks for
 * (access.h), and the checks of them.
 */
#include "access.h"

#include <string.h>

/* Whether key names a control property (floe.*). */
static bool is_control_key(const char *key)
{
	return key != NULL && strncmp(key, "floe.", 5) == 0;
}

/* The property privileges of the keys set (an object) or removed (an
 * array of strings): ordinary for other keys, CONTROLS_MANAGE for floe.*. */
static access_set property_needs(const json_t *set, const json_t *removed, enum privilege ordinary)
{
	access_set needs = 0;
	const char *key;
	json_t *v;
	size_t i;

	json_object_foreach((json_t *)set, key, v) {
		needs |= is_control_key(key) ? ACCESS_BIT(PRIV_CONTROLS_MANAGE)
					     : ACCESS_BIT(ordinary);
	}
	json_array_foreach((json_t *)removed, i, v) {
		needs |= is_control_key(json_string_value(v)) ? ACCESS_BIT(PRIV_CONTROLS_MANAGE)
							      : ACCESS_BIT(ordinary);
	}
	return needs;
}

/* The actions that write without moving any ref's readers onto other
 * data, or that move a ref named in the update (decided by the caller). */
static const char *const write_actions[] = {
	"add-snapshot",
	"set-statistics",
	"remove-statistics",
	"set-partition-statistics",
	"remove-partition-statistics",
};

static access_set update_needs(const json_t *u)
{
	const char *action = json_string_value(json_object_get(u, "action"));

	if (action == NULL)
		return ACCESS_BIT(PRIV_TABLE_WRITE_MAIN);
	if (strcmp(action, "set-snapshot-ref") == 0 || strcmp(action, "remove-snapshot-ref") == 0) {
		const char *ref = json_string_value(json_object_get(u, "ref-name"));
		return ref != NULL && strcmp(ref, "main") != 0 ? ACCESS_BIT(PRIV_TABLE_WRITE)
							       : ACCESS_BIT(PRIV_TABLE_WRITE_MAIN);
	}
	if (strcmp(action, "set-properties") == 0)
		return property_needs(json_object_get(u, "updates"), NULL,
				      PRIV_TABLE_UPDATE_PROPERTIES);
	if (strcmp(action, "remove-properties") == 0)
		return property_needs(NULL, json_object_get(u, "removals"),
				      PRIV_TABLE_UPDATE_PROPERTIES);
	for (size_t i = 0; i < sizeof(write_actions) / sizeof(write_actions[0]); i++) {
		if (strcmp(action, write_actions[i]) == 0)
			return ACCESS_BIT(PRIV_TABLE_WRITE);
	}
	return ACCESS_BIT(PRIV_TABLE_WRITE_MAIN);
}

access_set access_commit_needs(const json_t *updates)
{
	access_set needs = 0;
	size_t i;
	json_t *u;

	json_array_foreach((json_t *)updates, i, u) {
		needs |= update_needs(u);
	}
	if (needs == 0)
		needs = ACCESS_BIT(PRIV_TABLE_READ);
	if (needs & ACCESS_BIT(PRIV_TABLE_WRITE_MAIN))
		needs &= ~ACCESS_BIT(PRIV_TABLE_WRITE);
	return needs;
}

bool access_commit_creates(const json_t *requirements)
{
	size_t i;
	json_t *r;

	json_array_foreach((json_t *)requirements, i, r) {
		const char *t = json_string_value(json_object_get(r, "type"));
		if (t != NULL && strcmp(t, "assert-create") == 0)
			return true;
	}
	return false;
}

access_set access_create_commit_needs(const json_t *updates)
{
	size_t i;
	json_t *u;

	json_array_foreach((json_t *)updates, i, u) {
		const char *action = json_string_value(json_object_get(u, "action"));
		const char *ref = json_string_value(json_object_get(u, "ref-name"));
		if (action != NULL && strcmp(action, "set-snapshot-ref") == 0 && ref != NULL &&
		    strcmp(ref, "main") == 0)
			return ACCESS_BIT(PRIV_TABLE_WRITE_MAIN);
	}
	return 0;
}

access_set access_rename_needs(void)
{
	return ACCESS_BIT(PRIV_TABLE_DROP) | ACCESS_BIT(PRIV_TABLE_WRITE_MAIN);
}

access_set access_ref_needs(const char *ref)
{
	return ref == NULL || strcmp(ref, "main") == 0 ? ACCESS_BIT(PRIV_TABLE_WRITE_MAIN)
						       : ACCESS_BIT(PRIV_TABLE_WRITE);
}

access_set access_ns_properties_needs(const json_t *body)
{
	return ACCESS_BIT(PRIV_NAMESPACE_UPDATE_PROPERTIES) |
	       property_needs(json_object_get(body, "updates"), json_object_get(body, "removals"),
			      PRIV_NAMESPACE_UPDATE_PROPERTIES);
}

access_set access_register_table_needs(const json_t *body)
{
	access_set needs = ACCESS_BIT(PRIV_TABLE_WRITE_MAIN);

	if (json_is_true(json_object_get(body, "overwrite")))
		needs |= ACCESS_BIT(PRIV_TABLE_DROP);
	return needs;
}

/* The order refusals are named in: the privilege a caller most likely
 * lacks for what it asked first. */
static const enum privilege check_order[] = {
	PRIV_TABLE_WRITE_MAIN,        PRIV_TABLE_WRITE,
	PRIV_TABLE_UPDATE_PROPERTIES, PRIV_NAMESPACE_UPDATE_PROPERTIES,
	PRIV_CONTROLS_MANAGE,
};

bool access_check_all(struct store *s, const struct principal *p, access_set needs,
		      const struct authz_object *obj, struct floe_error *err)
{
	if (p == NULL)
		return true;
	for (size_t i = 0; i < sizeof(check_order) / sizeof(check_order[0]); i++) {
		enum privilege priv = check_order[i];
		if ((needs & ACCESS_BIT(priv)) && !authz_check(s, p, priv, obj, err))
			return false;
		needs &= ~ACCESS_BIT(priv);
	}
	for (int priv = 0; priv < PRIV_COUNT; priv++) {
		if ((needs & ACCESS_BIT(priv)) &&
		    !authz_check(s, p, (enum privilege)priv, obj, err))
			return false;
	}
	return true;
}

bool access_check(struct store *s, const struct principal *p, enum privilege priv,
		  const struct ns_ident *ns, const char *name, struct floe_error *err)
{
	struct authz_object obj = { .kind = AUTHZ_CATALOG, .ns = ns, .table = name };

	if (p == NULL)
		return true;
	if (ns != NULL)
		obj.kind = name != NULL ? AUTHZ_TABLE : AUTHZ_NAMESPACE;
	return authz_check(s, p, priv, &obj, err);
}

bool access_check_commit(struct store *s, const struct principal *p, const struct ns_ident *ns,
			 const char *name, const json_t *updates, struct floe_error *err)
{
	struct authz_object obj = { .kind = AUTHZ_TABLE, .ns = ns, .table = name };

	return access_check_all(s, p, access_commit_needs(updates), &obj, err);
}

bool access_check_ns_create(struct store *s, const struct principal *p, const struct ns_ident *ns,
			    struct floe_error *err)
{
	if (p == NULL)
		return true;
	if (ns->nlevels <= 1)
		return access_check(s, p, PRIV_NAMESPACE_CREATE, NULL, NULL, err);
	struct ns_ident parent = *ns;
	parent.nlevels--;
	return access_check(s, p, PRIV_NAMESPACE_CREATE, &parent, NULL, err);
}

bool access_check_listing(struct store *s, const struct principal *p, const struct ns_ident *ns,
			  struct floe_error *err)
{
	if (authz_check_listing(s, p, ns, err))
		return true;
	if (err->kind != FE_FORBIDDEN)
		return false;
	floe_error_clear(err);
	return access_check(s, p, PRIV_NAMESPACE_READ, ns, NULL, err);
}
