/*
 * authz.h - who may do what (docs/auth.md "Privileges"): the sixteen
 * privileges, the principal a request acts as, and the one decision every
 * route asks for. Grants are read from the store; the implications are
 * applied here:
 *
 *   - ADMIN (granted on the catalog only) implies every other privilege;
 *   - TABLE_WRITE_MAIN implies TABLE_WRITE;
 *   - any privilege held on an object implies reading it (NAMESPACE_READ
 *     on the catalog or a namespace, TABLE_READ on a table);
 *   - a grant on the catalog applies to everything, a grant on a
 *     namespace to it and every namespace and table below it.
 *
 * Nothing else implies anything. A NULL principal means authentication is
 * off (--auth=none): it is allowed everything.
 */
#ifndef FLOE_AUTHZ_H
#define FLOE_AUTHZ_H

#include <stdbool.h>
#include <stddef.h>
#include <jansson.h>

#include "error.h"
#include "ident.h"

struct authz_cache;
struct store;

/* In the byte order of their names, so walking the enum lists them
 * sorted. */
enum privilege {
	PRIV_ADMIN,
	PRIV_AUDIT_READ,
	PRIV_CONTROLS_MANAGE,
	PRIV_HOOKS_MANAGE,
	PRIV_NAMESPACE_CREATE,
	PRIV_NAMESPACE_DROP,
	PRIV_NAMESPACE_READ,
	PRIV_NAMESPACE_UPDATE_PROPERTIES,
	PRIV_TABLE_CREATE,
	PRIV_TABLE_DROP,
	PRIV_TABLE_READ,
	PRIV_TABLE_UPDATE_PROPERTIES,
	PRIV_TABLE_WRITE,
	PRIV_TABLE_WRITE_MAIN,
	PRIV_WAP_PUBLISH,
	PRIV_WAP_STAGE,
	PRIV_COUNT
};

/* The privilege's name, e.g. "TABLE_WRITE_MAIN" (static); NULL for a value
 * out of range. */
const char *privilege_name(enum privilege priv);

/* The privilege named name (exact, upper case): false when there is none. */
bool privilege_from_name(const char *name, enum privilege *priv);

/* The principal a request acts as, borrowed for the request: the
 * middleware resolves it (principals.id, the roles the token carries) and
 * keeps every pointer alive until the answer is sent. */
struct principal {
	long long id;           /* principals.id */
	const char *name;       /* "alice", or the external issuer's claim */
	const char *client_id;  /* the token's client_id; NULL if it has none */
	const long long *roles; /* role ids, resolved when the token was verified */
	size_t nroles;
	/* The decisions this floe keeps (authzcache.h); NULL: every decision
	 * asks the store. */
	struct authz_cache *cache;
};

enum authz_kind { AUTHZ_CATALOG, AUTHZ_NAMESPACE, AUTHZ_TABLE };

/* The object of a decision: the catalog (ns and table unused), a
 * namespace (ns), or table in ns. Borrowed. */
struct authz_object {
	enum authz_kind kind;
	const struct ns_ident *ns;
	const char *table;
	/* Whose catalog: "" or NULL the default warehouse's. authz_check
	 * sets it from its connection (store_use_warehouse). */
	const char *warehouse;
};

/* Whether priv may be granted on an object of kind (the last column of
 * docs/auth.md's table: ADMIN on the catalog only, the NAMESPACE_*
 * privileges and TABLE_CREATE on the catalog or a namespace, the others
 * anywhere). */
bool privilege_grantable_on(enum privilege priv, enum authz_kind kind);

/*
 * True when p may use priv on obj. Otherwise false with err set: when p
 * lacks it, FE_FORBIDDEN "Principal alice lacks TABLE_WRITE_MAIN on table
 * a.b.t" ("on namespace a.b", "on the catalog"); when the store fails,
 * that failure (the caller answers it and allows nothing: fail closed).
 * The object need not exist: a 403 does not tell whether it does.
 */
bool authz_check(struct store *s, const struct principal *p, enum privilege priv,
		 const struct authz_object *obj, struct floe_error *err) FLOE_WUR;

/*
 * Whether p may list what ns holds (its child namespaces or its tables):
 * true when p is NULL, ns is NULL (the catalog's top level, whose listing
 * shows only what p may see), or p's roles hold a grant on the catalog,
 * on ns, above or below it (store_ns_visible). Otherwise false with
 * FE_FORBIDDEN "Principal alice lacks NAMESPACE_READ on namespace a.b",
 * or the store's failure. The listing itself then pages with
 * store_ns_list_visible / store_table_list_visible.
 */
bool authz_check_listing(struct store *s, const struct principal *p, const struct ns_ident *ns,
			 struct floe_error *err) FLOE_WUR;

/*
 * "What may principal p do on obj": *privileges (new reference) is the
 * sorted JSON array of the names of its effective privileges (after the
 * implications) that mean something on an object of that kind, those
 * privilege_grantable_on allows there. p NULL: all of them. False with err
 * set when the store fails or out of memory.
 */
bool authz_privileges(struct store *s, const struct principal *p, const struct authz_object *obj,
		      json_t **privileges, struct floe_error *err) FLOE_WUR;

#endif
