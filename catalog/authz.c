/*
 * authz.c - the sixteen privileges, their implications and the decision
 * over a principal's grants on an object and the objects above it.
 */
#include "authz.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "authzcache.h"
#include "metric.h"
#include "ports.h"

static const char *const names[PRIV_COUNT] = {
	[PRIV_ADMIN] = "ADMIN",
	[PRIV_AUDIT_READ] = "AUDIT_READ",
	[PRIV_CONTROLS_MANAGE] = "CONTROLS_MANAGE",
	[PRIV_HOOKS_MANAGE] = "HOOKS_MANAGE",
	[PRIV_NAMESPACE_CREATE] = "NAMESPACE_CREATE",
	[PRIV_NAMESPACE_DROP] = "NAMESPACE_DROP",
	[PRIV_NAMESPACE_READ] = "NAMESPACE_READ",
	[PRIV_NAMESPACE_UPDATE_PROPERTIES] = "NAMESPACE_UPDATE_PROPERTIES",
	[PRIV_TABLE_CREATE] = "TABLE_CREATE",
	[PRIV_TABLE_DROP] = "TABLE_DROP",
	[PRIV_TABLE_READ] = "TABLE_READ",
	[PRIV_TABLE_UPDATE_PROPERTIES] = "TABLE_UPDATE_PROPERTIES",
	[PRIV_TABLE_WRITE] = "TABLE_WRITE",
	[PRIV_TABLE_WRITE_MAIN] = "TABLE_WRITE_MAIN",
	[PRIV_WAP_PUBLISH] = "WAP_PUBLISH",
	[PRIV_WAP_STAGE] = "WAP_STAGE",
};

/* A set of privileges, one bit each. */
typedef uint32_t privset;

#define BIT(p) ((privset)1 << (p))
#define ALL_PRIVILEGES (BIT(PRIV_COUNT) - 1)

const char *privilege_name(enum privilege priv)
{
	return (unsigned)priv < PRIV_COUNT ? names[priv] : NULL;
}

bool privilege_from_name(const char *name, enum privilege *priv)
{
	for (int i = 0; name != NULL && i < PRIV_COUNT; i++) {
		if (strcmp(names[i], name) == 0) {
			*priv = (enum privilege)i;
			return true;
		}
	}
	return false;
}

/* What may be granted on an object of kind. */
static privset grantable(enum authz_kind kind)
{
	privset on_namespace = BIT(PRIV_NAMESPACE_READ) | BIT(PRIV_NAMESPACE_CREATE) |
			       BIT(PRIV_NAMESPACE_DROP) | BIT(PRIV_NAMESPACE_UPDATE_PROPERTIES) |
			       BIT(PRIV_TABLE_CREATE);

	switch (kind) {
	case AUTHZ_CATALOG:
		return ALL_PRIVILEGES;
	case AUTHZ_NAMESPACE:
		return ALL_PRIVILEGES & ~BIT(PRIV_ADMIN);
	case AUTHZ_TABLE:
		return ALL_PRIVILEGES & ~BIT(PRIV_ADMIN) & ~on_namespace;
	}
	return 0;
}

bool privilege_grantable_on(enum privilege priv, enum authz_kind kind)
{
	return (unsigned)priv < PRIV_COUNT && (grantable(kind) & BIT(priv)) != 0;
}

/* The privileges held (the names the store gave) after the implications,
 * on an object of kind. */
static privset effective(char **held, size_t n, enum authz_kind kind)
{
	privset set = 0;
	enum privilege priv;

	for (size_t i = 0; i < n; i++) {
		/* A name this floe does not know grants nothing. */
		if (privilege_from_name(held[i], &priv))
			set |= BIT(priv);
	}
	if (set & BIT(PRIV_ADMIN))
		return ALL_PRIVILEGES;
	if (set & BIT(PRIV_TABLE_WRITE_MAIN))
		set |= BIT(PRIV_TABLE_WRITE);
	if (set != 0)
		set |= kind == AUTHZ_TABLE ? BIT(PRIV_TABLE_READ) : BIT(PRIV_NAMESPACE_READ);
	return set;
}

/* The effective privileges of p on obj into *set. */
static bool privileges_of(struct store *s, const struct principal *p,
			  const struct authz_object *obj, privset *set, struct floe_error *err)
{
	char **held = NULL;
	size_t n = 0;

	*set = 0;
	if ((unsigned)obj->kind > AUTHZ_TABLE || (obj->kind != AUTHZ_CATALOG && obj->ns == NULL) ||
	    (obj->kind == AUTHZ_TABLE && obj->table == NULL))
		return floe_err(err, FE_INTERNAL, "an authorization object is incomplete");
	if (!store_privileges_on(s, p->roles, p->nroles,
				 obj->kind == AUTHZ_CATALOG ? NULL : obj->ns,
				 obj->kind == AUTHZ_TABLE ? obj->table : NULL, &held, &n, err))
		return false;
	*set = effective(held, n, obj->kind);
	store_names_free(held, n);
	return true;
}

/* Forbids priv on obj to p: the 403's message names both. */
static bool forbid(const struct principal *p, enum privilege priv, const struct authz_object *obj,
		   struct floe_error *err)
{
	const char *who = p->name != NULL ? p->name : "(unnamed)";
	char *ns = NULL;

	if (obj->kind == AUTHZ_CATALOG)
		return floe_err(err, FE_FORBIDDEN, "Principal %s lacks %s on the catalog", who,
				privilege_name(priv));
	ns = ident_ns_display(obj->ns);
	if (ns == NULL)
		return floe_err(err, FE_INTERNAL, "out of memory");
	if (obj->kind == AUTHZ_NAMESPACE)
		floe_err(err, FE_FORBIDDEN, "Principal %s lacks %s on namespace %s", who,
			 privilege_name(priv), ns);
	else
		floe_err(err, FE_FORBIDDEN, "Principal %s lacks %s on table %s.%s", who,
			 privilege_name(priv), ns, obj->table);
	free(ns);
	return false;
}

bool authz_check(struct store *s, const struct principal *p, enum privilege priv,
		 const struct authz_object *asked, struct floe_error *err)
{
	/* The object in the connection's warehouse, whose grants decide. */
	struct authz_object in = *asked;
	const struct authz_object *obj = &in;
	privset set = 0;

	in.warehouse = store_warehouse(s);

	if (p == NULL)
		return true; /* authentication is off */
	if ((unsigned)priv >= PRIV_COUNT)
		return floe_err(err, FE_INTERNAL, "unknown privilege %d", (int)priv);
	/* A kept set answers only when it allows: a refusal asks again. */
	if (authz_cache_get(p->cache, p->roles, p->nroles, obj, &set) && (set & BIT(priv))) {
		metric_add(METRIC_AUTHZ_DECISIONS, METRIC_AUTHZ_KEPT, 1);
		return true;
	}
	metric_add(METRIC_AUTHZ_DECISIONS, METRIC_AUTHZ_ASKED, 1);
	uint64_t ticket = authz_cache_ticket(p->cache);
	if (!privileges_of(s, p, obj, &set, err))
		return false;
	if (set & BIT(priv)) {
		authz_cache_put(p->cache, ticket, p->roles, p->nroles, obj, set);
		return true;
	}
	return forbid(p, priv, obj, err);
}

bool authz_check_listing(struct store *s, const struct principal *p, const struct ns_ident *ns,
			 struct floe_error *err)
{
	bool visible = false;

	if (p == NULL || ns == NULL)
		return true;
	if (!store_ns_visible(s, p->roles, p->nroles, ns, &visible, err))
		return false;
	if (visible)
		return true;
	struct authz_object obj = { .kind = AUTHZ_NAMESPACE, .ns = ns, .table = NULL };
	return forbid(p, PRIV_NAMESPACE_READ, &obj, err);
}

bool authz_privileges(struct store *s, const struct principal *p, const struct authz_object *obj,
		      json_t **privileges, struct floe_error *err)
{
	privset set = ALL_PRIVILEGES;
	json_t *out = NULL;

	*privileges = NULL;
	if (p != NULL && !privileges_of(s, p, obj, &set, err))
		return false;
	set &= grantable(obj->kind);
	out = json_array();
	if (out == NULL)
		return floe_err(err, FE_INTERNAL, "out of memory");
	/* The enum is in the order of the names: the array comes sorted. */
	for (int i = 0; i < PRIV_COUNT; i++) {
		if ((set & BIT(i)) && json_array_append_new(out, json_string(names[i])) != 0) {
			json_decref(out);
			return floe_err(err, FE_INTERNAL, "out of memory");
		}
	}
	*privileges = out;
	return true;
}
