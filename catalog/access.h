/*
 * access.h - which privileges a route's request needs, where that depends
 * on what the request asks for (docs/auth.md "Privileges"): the updates
 * of a commit, the properties of a namespace change. The decision itself
 * is authz_check's (authz.h). Every check runs before the object is
 * looked up, so a refusal does not tell whether it exists. A NULL
 * principal (authentication off) is allowed everything.
 */
#ifndef FLOE_ACCESS_H
#define FLOE_ACCESS_H

#include <stdbool.h>
#include <jansson.h>

#include "authz.h"
#include "error.h"
#include "ident.h"

struct store;

/* A set of privileges, bit (1u << priv). */
typedef unsigned access_set;

#define ACCESS_BIT(priv) (1u << (unsigned)(priv))

/*
 * The privileges a commit's updates (an Iceberg TableUpdate array, already
 * checked by tablemeta_check_actions) need on its table:
 *   - set-snapshot-ref or remove-snapshot-ref of "main": TABLE_WRITE_MAIN;
 *     of another ref, add-snapshot, the statistics actions: TABLE_WRITE;
 *   - set-properties / remove-properties: CONTROLS_MANAGE for a floe.*
 *     key, TABLE_UPDATE_PROPERTIES for any other;
 *   - everything else (schemas, specs, sort orders, location, format
 *     version, uuid, removing snapshots, actions floe does not know):
 *     TABLE_WRITE_MAIN, for they change what main's readers see;
 *   - no update at all: TABLE_READ.
 * TABLE_WRITE is left out when TABLE_WRITE_MAIN is in (it is implied).
 */
access_set access_commit_needs(const json_t *updates);

/* The same for a namespace property change (body with "updates" and
 * "removals"): NAMESPACE_UPDATE_PROPERTIES, and CONTROLS_MANAGE as well
 * when a floe.* key is set or removed. */
access_set access_ns_properties_needs(const json_t *body);

/* Whether a commit's requirements (an array, or NULL) hold
 * assert-create: the commit creates the table (a staged create's), which
 * needs TABLE_CREATE on its namespace instead. */
bool access_commit_creates(const json_t *requirements);

/* What a creating commit (access_commit_creates) needs on the table it
 * creates, besides TABLE_CREATE on its namespace: TABLE_WRITE_MAIN when
 * its updates set main (a create with data: its main moves from nothing
 * to a snapshot, as a register's does), else nothing. */
access_set access_create_commit_needs(const json_t *updates);

/* What a table rename needs on its source: TABLE_DROP, and
 * TABLE_WRITE_MAIN since the destination's main moves (TABLE_CREATE on
 * the destination's namespace besides). */
access_set access_rename_needs(void);

/* What creating, dropping or fast-forwarding ref needs (NULL: main):
 * TABLE_WRITE_MAIN for main, TABLE_WRITE for any other. */
access_set access_ref_needs(const char *ref);

/* registerTable (body {"name", "overwrite"?}): what it needs on the table
 * ns.<name> it registers, besides TABLE_CREATE on the namespace:
 * TABLE_WRITE_MAIN, for the registered metadata's main becomes the
 * table's (it moves main whether or not a table was there), and with
 * "overwrite": true TABLE_DROP too, for it replaces the table there. */
access_set access_register_table_needs(const json_t *body);

/* Checks every privilege of needs on obj, the most specific first
 * (TABLE_WRITE_MAIN, TABLE_WRITE, the property privileges, CONTROLS_MANAGE,
 * then the rest in enum order): false with authz_check's error at the
 * first one p lacks. */
bool access_check_all(struct store *s, const struct principal *p, access_set needs,
		      const struct authz_object *obj, struct floe_error *err) FLOE_WUR;

/* authz_check on the table ns.name, on the namespace ns (name NULL) or on
 * the catalog (ns NULL). */
bool access_check(struct store *s, const struct principal *p, enum privilege priv,
		  const struct ns_ident *ns, const char *name, struct floe_error *err) FLOE_WUR;

/* The commit's check: access_commit_needs(updates) on table ns.name. */
bool access_check_commit(struct store *s, const struct principal *p, const struct ns_ident *ns,
			 const char *name, const json_t *updates, struct floe_error *err) FLOE_WUR;

/* Whether p may list what ns holds (NULL: the top level):
 * authz_check_listing, and when that refuses, NAMESPACE_READ on ns, which
 * a grant on the catalog or above ns gives whether or not ns exists (so
 * such a caller gets the listing's 404, not a 403). */
bool access_check_listing(struct store *s, const struct principal *p, const struct ns_ident *ns,
			  struct floe_error *err) FLOE_WUR;

/* The namespace of a new namespace ns: its parent, or the catalog (NULL)
 * for a top-level one; the check of NAMESPACE_CREATE there. */
bool access_check_ns_create(struct store *s, const struct principal *p, const struct ns_ident *ns,
			    struct floe_error *err) FLOE_WUR;

#endif
