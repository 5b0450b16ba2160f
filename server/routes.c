/*
 * routes.c - the route table: the one place that says what every route
 * demands (router.h for the columns). The gate (gate.c) enforces each row
 * before the handler runs; --print-routes prints the table, docs/auth.md's
 * route list is checked against it, and tests/integration/test_openapi.py
 * holds it against api-spec/openapi.yaml.
 *
 * Below the table: the demands that only a request's body can tell (a
 * commit's updates, a rename's two tables), each a few lines over
 * catalog/access.c's pure functions.
 */
#include "router.h"

#include <stdlib.h>
#include <string.h>

#include "auth.h"
#include "config.h"
#include "gate.h"
#include "handlers.h"
#include "handlers_management.h"
#include "hookspec.h"
#include "metric.h"
#include "table.h"

#define P(x) ACCESS_BIT(PRIV_##x)

static bool demand_ns_create(struct call *c, struct floe_error *err);
static bool demand_ns_properties(struct call *c, struct floe_error *err);
static bool demand_register(struct call *c, struct floe_error *err);
static bool demand_commit(struct call *c, struct floe_error *err);
static bool demand_transaction(struct call *c, struct floe_error *err);
static bool demand_rename(struct call *c, struct floe_error *err);
static bool demand_view_rename(struct call *c, struct floe_error *err);
static bool demand_undrop(struct call *c, struct floe_error *err);
static bool demand_ref(struct call *c, struct floe_error *err);
static bool demand_hook_scope(struct call *c, struct floe_error *err);
static bool demand_control(struct call *c, struct floe_error *err);

/* Shorthands for the common shapes of a row. */
#define NS "/v1/{prefix}/namespaces/{namespace}"
#define TBL NS "/tables/{table}"
#define VIEW NS "/views/{view}"
#define MGMT "/management/v1"

#define ADV ROUTE_ADVERTISE
#define MUT ROUTE_MUTATES
#define IDEM ROUTE_IDEM_IN_TX
#define BODY ROUTE_BODY
#define BODY_OPT ROUTE_BODY_OPT

/* A route any caller may use, one any authenticated principal may use,
 * and one that needs privileges on an object. */
#define PUBLIC(m, p, h)                                                               \
	{                                                                             \
		.method = (m), .pattern = (p), .handler = (h), .access = ROUTE_PUBLIC \
	}
/* A route public when --auth-public names it, answered then on
 * libmicrohttpd's thread: it never touches the database (router.h,
 * ROUTE_QUEUE_INLINE). */
#define INLINE_IF(m, p, h, bit)                                                           \
	{                                                                                 \
		.method = (m), .pattern = (p), .handler = (h), .access = ROUTE_PUBLIC_IF, \
		.public_bit = (bit), .queue = ROUTE_QUEUE_INLINE                          \
	}
#define PRINCIPAL(m, p, h)                                                               \
	{                                                                                \
		.method = (m), .pattern = (p), .handler = (h), .access = ROUTE_PRINCIPAL \
	}
#define NEEDS(m, p, h, priv, obj, fl, ev)                                                   \
	{                                                                                   \
		.method = (m), .pattern = (p), .handler = (h), .need = (priv), .on = (obj), \
		.flags = (fl), .audit = (ev)                                                \
	}
/* The same with demands from the body. */
#define NEEDS_MORE(m, p, h, priv, obj, fn, doc, fl, ev)                                     \
	{                                                                                   \
		.method = (m), .pattern = (p), .handler = (h), .need = (priv), .on = (obj), \
		.demands = (fn), .demands_doc = (doc), .flags = (fl), .audit = (ev)         \
	}

#define ON_CAT ROUTE_ON_CATALOG
#define ON_NS ROUTE_ON_NAMESPACE
#define ON_TBL ROUTE_ON_TABLE
#define ON_LIST ROUTE_ON_LISTING
#define ON_BODY ROUTE_ON_BODY
#define ON_HOOK ROUTE_ON_HOOK
#define ON_MEMBERS ROUTE_ON_MEMBERS

static const char commit_doc[] =
	"by update: TABLE_WRITE_MAIN when main or what main's readers see changes, "
	"TABLE_WRITE for other refs and add-snapshot, TABLE_UPDATE_PROPERTIES, "
	"CONTROLS_MANAGE for floe.* properties, TABLE_READ with no update; a staged "
	"create's commit (assert-create): TABLE_CREATE on the namespace, and "
	"TABLE_WRITE_MAIN on the table when it sets main";
static const char ref_doc[] = "TABLE_WRITE_MAIN when the ref is main, else TABLE_WRITE";

const struct route routes_table[] = {
	/* liveness, readiness, metrics: public as --auth-public says, and
	 * then answered at once whatever the request workers wait on
	 * (/ready reads the database watch's verdict, /metrics counters) */
	INLINE_IF("GET", "/health", handle_health, CONFIG_PUBLIC_HEALTH),
	INLINE_IF("GET", "/ready", handle_ready, CONFIG_PUBLIC_READY),
	INLINE_IF("GET", "/metrics", handle_metrics, CONFIG_PUBLIC_METRICS),
	PRINCIPAL("GET", "/v1/config", handle_config),
	PUBLIC("POST", "/v1/oauth/tokens", handle_oauth_tokens),
	PUBLIC("GET", "/v1/oauth/jwks", handle_oauth_jwks),

	/* namespaces */
	NEEDS("GET", "/v1/{prefix}/namespaces", handle_ns_list, P(NAMESPACE_READ), ON_LIST, ADV,
	      NULL),
	NEEDS_MORE(
		"POST", "/v1/{prefix}/namespaces", handle_ns_create, 0, ON_BODY, demand_ns_create,
		"NAMESPACE_CREATE on the new namespace's parent (the catalog for a top-level one)",
		ADV | BODY | MUT | IDEM, "namespace.created"),
	NEEDS("GET", NS, handle_ns_load, P(NAMESPACE_READ), ON_NS, ADV, NULL),
	NEEDS("HEAD", NS, handle_ns_exists, P(NAMESPACE_READ), ON_NS, ADV, NULL),
	NEEDS("DELETE", NS, handle_ns_drop, P(NAMESPACE_DROP), ON_NS, ADV | MUT | IDEM,
	      "namespace.dropped"),
	NEEDS_MORE("POST", NS "/properties", handle_ns_update_properties,
		   P(NAMESPACE_UPDATE_PROPERTIES), ON_NS, demand_ns_properties,
		   "CONTROLS_MANAGE on the namespace as well when a floe.* key is set or removed",
		   ADV | BODY | MUT | IDEM, "control.* when a control property changes"),

	/* tables */
	NEEDS("GET", NS "/tables", handle_table_list, P(NAMESPACE_READ), ON_LIST, ADV, NULL),
	/* A create writes and fsyncs its first metadata file as a commit
	 * does, so it waits on the commit queue's threads, not on the few
	 * request workers every other request needs. */
	{ .method = "POST",
	  .pattern = NS "/tables",
	  .handler = handle_table_create,
	  .need = P(TABLE_CREATE),
	  .on = ON_NS,
	  .queue = ROUTE_QUEUE_COMMIT,
	  .flags = ADV | BODY | MUT | IDEM },
	NEEDS_MORE("POST", NS "/register", handle_table_register, P(TABLE_CREATE), ON_NS,
		   demand_register,
		   "TABLE_WRITE_MAIN on the table it registers (its main becomes the registered "
		   "metadata's); with overwrite TABLE_DROP there too",
		   ADV | BODY | MUT | IDEM,
		   "table.registered, or table.register-overwrite with overwrite"),
	NEEDS("GET", TBL, handle_table_load, P(TABLE_READ), ON_TBL, ADV, NULL),
	{ .method = "POST",
	  .pattern = TBL,
	  .handler = handle_table_commit,
	  .on = ON_TBL,
	  .demands = demand_commit,
	  .demands_doc = commit_doc,
	  .queue = ROUTE_QUEUE_COMMIT,
	  .flags = ADV | BODY | MUT | IDEM,
	  .audit = "control.* when a control property changes" },
	NEEDS("DELETE", TBL, handle_table_drop, P(TABLE_DROP), ON_TBL, ADV | MUT | IDEM,
	      "table.dropped"),
	NEEDS("HEAD", TBL, handle_table_exists, P(TABLE_READ), ON_TBL, ADV, NULL),
	/* A reader reports its scans: kept for the table (a write of a report,
	 * not of the table). */
	NEEDS("POST", TBL "/metrics", handle_table_metrics, P(TABLE_READ), ON_TBL,
	      ADV | BODY | MUT | IDEM, NULL),
	NEEDS("GET", TBL "/credentials", handle_table_credentials, P(TABLE_READ), ON_TBL, ADV,
	      NULL),
	NEEDS("POST", TBL "/sign", handle_table_sign, P(TABLE_READ), ON_TBL, ADV | BODY, NULL),
	NEEDS_MORE("POST", "/v1/{prefix}/tables/rename", handle_table_rename, 0, ON_BODY,
		   demand_rename,
		   "TABLE_DROP and TABLE_WRITE_MAIN on the source, TABLE_CREATE on the "
		   "destination's namespace",
		   ADV | BODY | MUT | IDEM, "table.renamed"),
	{ .method = "POST",
	  .pattern = "/v1/{prefix}/transactions/commit",
	  .handler = handle_transaction_commit,
	  .on = ON_BODY,
	  .demands = demand_transaction,
	  .demands_doc = "each table's as a commit's, every table before any is looked at",
	  .queue = ROUTE_QUEUE_COMMIT,
	  .flags = ADV | BODY | MUT | IDEM },

	/* views: a view's privileges are a table's of the same name */
	NEEDS("GET", NS "/views", handle_view_list, P(NAMESPACE_READ), ON_LIST, ADV, NULL),
	NEEDS("POST", NS "/views", handle_view_create, P(TABLE_CREATE), ON_NS,
	      ADV | BODY | MUT | IDEM, NULL),
	NEEDS("POST", NS "/register-view", handle_view_register, P(TABLE_CREATE), ON_NS,
	      ADV | BODY | MUT | IDEM, NULL),
	NEEDS("GET", VIEW, handle_view_load, P(TABLE_READ), ON_TBL, ADV, NULL),
	{ .method = "POST",
	  .pattern = VIEW,
	  .handler = handle_view_commit,
	  .need = P(TABLE_WRITE),
	  .on = ON_TBL,
	  .queue = ROUTE_QUEUE_COMMIT,
	  .flags = ADV | BODY | MUT | IDEM },
	NEEDS("DELETE", VIEW, handle_view_drop, P(TABLE_DROP), ON_TBL, ADV | MUT | IDEM,
	      "view.dropped"),
	NEEDS("HEAD", VIEW, handle_view_exists, P(TABLE_READ), ON_TBL, ADV, NULL),
	NEEDS_MORE("POST", "/v1/{prefix}/views/rename", handle_view_rename, 0, ON_BODY,
		   demand_view_rename,
		   "TABLE_DROP on the source, TABLE_CREATE on the destination's namespace",
		   ADV | BODY | MUT | IDEM, "view.renamed"),

	/* floe's extensions: history and undrop */
	NEEDS("GET", TBL "/commits", handle_table_commits, P(TABLE_READ), ON_TBL, ADV, NULL),
	NEEDS_MORE("POST", TBL "/undrop", handle_table_undrop, P(TABLE_CREATE), ON_NS,
		   demand_undrop, "TABLE_WRITE_MAIN on the table", ADV | MUT | IDEM,
		   "table.undropped"),
	NEEDS("GET", NS "/dropped-tables", handle_dropped_list, P(TABLE_CREATE), ON_NS, ADV, NULL),

	/* refs */
	NEEDS("GET", TBL "/refs", handle_refs_list, P(TABLE_READ), ON_TBL, ADV, NULL),
	NEEDS_MORE("POST", TBL "/refs", handle_refs_create, 0, ON_TBL, demand_ref, ref_doc,
		   ADV | BODY_OPT | MUT | IDEM, NULL),
	NEEDS("GET", TBL "/refs/{ref}", handle_refs_get, P(TABLE_READ), ON_TBL, ADV, NULL),
	NEEDS_MORE("DELETE", TBL "/refs/{ref}", handle_refs_drop, 0, ON_TBL, demand_ref, ref_doc,
		   ADV | MUT | IDEM, NULL),
	NEEDS_MORE("POST", TBL "/refs/{ref}/fast-forward", handle_refs_fast_forward, 0, ON_TBL,
		   demand_ref, ref_doc, ADV | BODY_OPT | MUT | IDEM, NULL),

	/* write-audit-publish */
	NEEDS("GET", TBL "/wap", handle_wap_list, P(TABLE_READ), ON_TBL, ADV, NULL),
	NEEDS("POST", TBL "/wap", handle_wap_stage, P(WAP_STAGE), ON_TBL,
	      ADV | BODY_OPT | MUT | IDEM, "wap.staged"),
	NEEDS("GET", TBL "/wap/{run}", handle_wap_get, P(TABLE_READ), ON_TBL, ADV, NULL),
	NEEDS("DELETE", TBL "/wap/{run}", handle_wap_abandon, P(WAP_STAGE), ON_TBL,
	      ADV | MUT | IDEM, "wap.abandoned"),
	{ .method = "POST",
	  .pattern = TBL "/wap/{run}/publish",
	  .handler = handle_wap_publish,
	  .need = P(WAP_PUBLISH),
	  .on = ON_TBL,
	  .queue = ROUTE_QUEUE_PUBLISH,
	  .flags = ADV | BODY_OPT | MUT | IDEM,
	  .audit = "wap.audit-started, wap.hook-calling and wap.hook-called for each hook, then "
		   "wap.published, wap.rejected or "
		   "wap.audit-failed; wap.publish-refused when separation of duties refuses" },

	/* releases: write-audit-publish over many tables */
	NEEDS("GET", "/v1/{prefix}/releases", handle_releases_list, P(AUDIT_READ), ON_CAT, ADV,
	      NULL),
	NEEDS("POST", "/v1/{prefix}/releases", handle_releases_create, P(WAP_STAGE), ON_MEMBERS,
	      ADV | BODY | MUT | IDEM, "release.staged, and wap.staged for each member"),
	NEEDS("GET", "/v1/{prefix}/releases/{release}", handle_release_get, P(TABLE_READ),
	      ON_MEMBERS, ADV, NULL),
	NEEDS("DELETE", "/v1/{prefix}/releases/{release}", handle_release_abandon, P(WAP_STAGE),
	      ON_MEMBERS, ADV | MUT | IDEM, "release.abandoned, and wap.abandoned for each member"),
	NEEDS("POST", "/v1/{prefix}/releases/{release}/tables", handle_release_add, P(WAP_STAGE),
	      ON_MEMBERS, ADV | BODY | MUT | IDEM,
	      "release.tables-added, and wap.staged for each new member"),
	{ .method = "POST",
	  .pattern = "/v1/{prefix}/releases/{release}/publish",
	  .handler = handle_release_publish,
	  .need = P(WAP_PUBLISH),
	  .on = ON_MEMBERS,
	  .queue = ROUTE_QUEUE_PUBLISH,
	  .flags = ADV | BODY_OPT | MUT | IDEM,
	  .audit = "release.audit-started, release.hook-calling and release.hook-called for each "
		   "hook, then release.published (and "
		   "wap.published for each member), release.rejected or release.audit-failed; "
		   "wap.publish-refused when separation of duties refuses" },

	/* audit hooks */
	{ .method = "GET",
	  .pattern = "/v1/{prefix}/audit-hooks",
	  .handler = handle_hooks_list,
	  .need = P(AUDIT_READ) | P(HOOKS_MANAGE),
	  .on = ON_CAT,
	  .flags = ADV | ROUTE_ANY_OF },
	NEEDS_MORE("POST", "/v1/{prefix}/audit-hooks", handle_hooks_create, 0, ON_BODY,
		   demand_hook_scope,
		   "HOOKS_MANAGE on the hook's scope: its table, its namespace or the catalog",
		   ADV | BODY | MUT | IDEM, "hook.registered"),
	{ .method = "GET",
	  .pattern = "/v1/{prefix}/audit-hooks/{id}",
	  .handler = handle_hooks_get,
	  .need = P(AUDIT_READ) | P(HOOKS_MANAGE),
	  .on = ON_HOOK,
	  .flags = ADV | ROUTE_ANY_OF },
	NEEDS("DELETE", "/v1/{prefix}/audit-hooks/{id}", handle_hooks_delete, P(HOOKS_MANAGE),
	      ON_HOOK, ADV | MUT | IDEM, "hook.deleted"),

	/* the change feed and its subscriptions */
	NEEDS("POST", "/v1/{prefix}/events", handle_events_query, P(AUDIT_READ), ON_CAT, ADV | BODY,
	      NULL),
	{ .method = "GET",
	  .pattern = "/v1/{prefix}/event-subscriptions",
	  .handler = handle_subscriptions_list,
	  .need = P(AUDIT_READ) | P(HOOKS_MANAGE),
	  .on = ON_CAT,
	  .flags = ADV | ROUTE_ANY_OF },
	NEEDS("POST", "/v1/{prefix}/event-subscriptions", handle_subscriptions_create,
	      P(AUDIT_READ) | P(HOOKS_MANAGE), ON_CAT, ADV | BODY | MUT | IDEM,
	      "subscription.created"),
	{ .method = "GET",
	  .pattern = "/v1/{prefix}/event-subscriptions/{id}",
	  .handler = handle_subscription_get,
	  .need = P(AUDIT_READ) | P(HOOKS_MANAGE),
	  .on = ON_CAT,
	  .flags = ADV | ROUTE_ANY_OF },
	NEEDS("DELETE", "/v1/{prefix}/event-subscriptions/{id}", handle_subscription_delete,
	      P(AUDIT_READ) | P(HOOKS_MANAGE), ON_CAT, ADV | MUT | IDEM, "subscription.deleted"),
	NEEDS("POST", "/v1/{prefix}/event-subscriptions/{id}/resume", handle_subscription_resume,
	      P(AUDIT_READ) | P(HOOKS_MANAGE), ON_CAT, ADV | BODY_OPT | MUT | IDEM,
	      "subscription.resumed"),

	/* the audit log and its trail */
	NEEDS("GET", "/v1/{prefix}/audit-log", handle_audit_log, P(AUDIT_READ), ROUTE_ON_FILTER,
	      ADV, NULL),
	NEEDS("GET", "/v1/{prefix}/audit-log/verify", handle_audit_verify, P(AUDIT_READ), ON_CAT,
	      ADV, NULL),
	NEEDS("GET", "/v1/{prefix}/audit-log/checkpoints", handle_audit_checkpoints, P(AUDIT_READ),
	      ON_CAT, ADV, NULL),
	NEEDS("POST", "/v1/{prefix}/audit-log/checkpoints", handle_audit_checkpoint_create,
	      P(AUDIT_READ), ON_CAT, ADV | MUT | IDEM, NULL),
	NEEDS("GET", "/v1/{prefix}/purges", handle_purges_list, P(ADMIN), ON_CAT, ADV, NULL),
	NEEDS_MORE("POST", "/v1/{prefix}/controls/{action}", handle_control, P(CONTROLS_MANAGE),
		   ON_CAT, demand_control,
		   "the action's own as well: a rename's, a register's with overwrite, an "
		   "undrop's",
		   ADV | BODY | MUT | IDEM, "control.{action}"),

	/* the management API (docs/auth.md): not Iceberg catalog endpoints */
	NEEDS("POST", MGMT "/principals", handle_mgmt_principal_create, P(ADMIN), ON_CAT,
	      BODY | MUT | IDEM, "principal.created"),
	NEEDS("GET", MGMT "/principals", handle_mgmt_principal_list, P(ADMIN), ON_CAT, 0, NULL),
	NEEDS("GET", MGMT "/principals/{name}", handle_mgmt_principal_get, P(ADMIN), ON_CAT, 0,
	      NULL),
	NEEDS("POST", MGMT "/principals/{name}/disable", handle_mgmt_principal_disable, P(ADMIN),
	      ON_CAT, MUT | IDEM, "principal.disabled"),
	NEEDS("POST", MGMT "/principals/{name}/enable", handle_mgmt_principal_enable, P(ADMIN),
	      ON_CAT, MUT | IDEM, "principal.enabled"),
	NEEDS("POST", MGMT "/principals/{name}/rotate-secret", handle_mgmt_principal_rotate,
	      P(ADMIN), ON_CAT, MUT | IDEM, "principal.secret-rotated"),
	NEEDS("GET", MGMT "/principals/{name}/privileges", handle_mgmt_principal_privileges,
	      P(ADMIN), ON_CAT, 0, NULL),
	NEEDS("POST", MGMT "/roles", handle_mgmt_role_create, P(ADMIN), ON_CAT, BODY | MUT | IDEM,
	      "role.created"),
	NEEDS("GET", MGMT "/roles", handle_mgmt_role_list, P(ADMIN), ON_CAT, 0, NULL),
	NEEDS("PATCH", MGMT "/roles/{role}", handle_mgmt_role_update, P(ADMIN), ON_CAT,
	      BODY | MUT | IDEM, "role.updated"),
	NEEDS("DELETE", MGMT "/roles/{role}", handle_mgmt_role_delete, P(ADMIN), ON_CAT, MUT | IDEM,
	      "role.deleted"),
	NEEDS("PUT", MGMT "/roles/{role}/members/{principal}", handle_mgmt_member_add, P(ADMIN),
	      ON_CAT, MUT | IDEM, "role.member-added"),
	NEEDS("DELETE", MGMT "/roles/{role}/members/{principal}", handle_mgmt_member_remove,
	      P(ADMIN), ON_CAT, MUT | IDEM, "role.member-removed"),
	NEEDS("POST", MGMT "/roles/{role}/grants", handle_mgmt_grant_add, P(ADMIN), ON_CAT,
	      BODY | MUT | IDEM, "grant.added"),
	NEEDS("GET", MGMT "/roles/{role}/grants", handle_mgmt_grant_list, P(ADMIN), ON_CAT, 0,
	      NULL),
	NEEDS("POST", MGMT "/roles/{role}/grants/revoke", handle_mgmt_grant_revoke, P(ADMIN),
	      ON_CAT, BODY | MUT | IDEM, "grant.revoked"),
};

const size_t routes_table_len = sizeof(routes_table) / sizeof(routes_table[0]);
_Static_assert(sizeof(routes_table) / sizeof(routes_table[0]) < METRIC_ROUTE_SLOTS,
	       "a metrics slot for every route");

/* --- the demands a body decides --- */

static bool demand_ns_create(struct call *c, struct floe_error *err)
{
	struct ns_ident ns = { 0 };

	if (!ident_ns_from_json(json_object_get(c->body, "namespace"), "namespace", &ns, err))
		return false;
	struct ns_ident parent = ns;
	parent.nlevels = ns.nlevels > 0 ? ns.nlevels - 1 : 0;
	bool ok = gate_demand(c, P(NAMESPACE_CREATE), parent.nlevels > 0 ? &parent : NULL, NULL,
			      err);
	ident_ns_clear(&ns);
	return ok;
}

static bool demand_ns_properties(struct call *c, struct floe_error *err)
{
	access_set more = access_ns_properties_needs(c->body) & ~P(NAMESPACE_UPDATE_PROPERTIES);

	return more == 0 || gate_demand(c, more, &c->ns, NULL, err);
}

/* A register's, on namespace ns, besides TABLE_CREATE there: the table
 * it registers gets the registered metadata's main, and with overwrite it
 * replaces the table there (access_register_table_needs). */
static bool register_demands(struct call *c, const struct ns_ident *ns, const json_t *body,
			     struct floe_error *err)
{
	const char *name = json_string_value(json_object_get(body, "name"));

	if (name == NULL)
		return true; /* no table named: the register's own 400 */
	/* The drop named first: a caller without it is refused for what it
	 * asked first. */
	if (json_is_true(json_object_get(body, "overwrite")) &&
	    !gate_demand(c, P(TABLE_DROP), ns, name, err))
		return false;
	return gate_demand(c, access_register_table_needs(body), ns, name, err);
}

static bool demand_register(struct call *c, struct floe_error *err)
{
	return register_demands(c, &c->ns, c->body, err);
}

static bool demand_commit(struct call *c, struct floe_error *err)
{
	const json_t *updates = json_object_get(c->body, "updates");

	if (access_commit_creates(json_object_get(c->body, "requirements")))
		return gate_demand(c, P(TABLE_CREATE), &c->ns, NULL, err) &&
		       gate_demand(c, access_create_commit_needs(updates), &c->ns, c->name, err);
	return gate_demand(c, access_commit_needs(updates), &c->ns, c->name, err);
}

static bool demand_transaction(struct call *c, struct floe_error *err)
{
	const json_t *changes = json_object_get(c->body, "table-changes");
	size_t i;
	json_t *change;

	/* The shape of the rest is the commit's to judge. */
	json_array_foreach((json_t *)changes, i, change) {
		struct table_ident t;
		if (!table_ident_from_json(json_object_get(change, "identifier"), "identifier", &t,
					   err))
			return false;
		bool ok = gate_demand(c, access_commit_needs(json_object_get(change, "updates")),
				      &t.ns, t.name, err);
		table_ident_clear(&t);
		if (!ok)
			return false;
	}
	return true;
}

/* A rename's: drop (and, for a table, move main) at the source, create at
 * the destination's namespace. */
static bool rename_demands(struct call *c, const json_t *body, access_set at_source,
			   struct floe_error *err)
{
	struct table_ident from, to;
	bool ok = false;

	if (!table_ident_from_json(json_object_get(body, "source"), "source", &from, err))
		return false;
	if (!table_ident_from_json(json_object_get(body, "destination"), "destination", &to, err)) {
		table_ident_clear(&from);
		return false;
	}
	ok = gate_demand(c, P(TABLE_DROP), &from.ns, from.name, err) &&
	     gate_demand(c, at_source, &from.ns, from.name, err) &&
	     gate_demand(c, P(TABLE_CREATE), &to.ns, NULL, err);
	table_ident_clear(&from);
	table_ident_clear(&to);
	return ok;
}

static bool demand_rename(struct call *c, struct floe_error *err)
{
	return rename_demands(c, c->body, access_rename_needs(), err);
}

static bool demand_view_rename(struct call *c, struct floe_error *err)
{
	return rename_demands(c, c->body, P(TABLE_DROP), err);
}

static bool demand_undrop(struct call *c, struct floe_error *err)
{
	return gate_demand(c, P(TABLE_WRITE_MAIN), &c->ns, c->name, err);
}

static bool demand_ref(struct call *c, struct floe_error *err)
{
	const char *ref = c->arg != NULL ? c->arg
					 : json_string_value(json_object_get(c->body, "name"));

	return gate_demand(c, access_ref_needs(ref), &c->ns, c->name, err);
}

static bool demand_hook_scope(struct call *c, struct floe_error *err)
{
	struct hook_spec spec;

	if (!hook_spec_parse(c->body, c->req->app->cfg->hook_policy, &spec, err))
		return false;
	bool scoped = spec.scope_ns.nlevels > 0;
	bool ok = gate_demand(c, P(HOOKS_MANAGE), scoped ? &spec.scope_ns : NULL,
			      scoped ? spec.scope_table : NULL, err);
	hook_spec_clear(&spec);
	return ok;
}

/* The namespace and table a control action's body names ({"namespace",
 * "name"}); false with the 400 when it names no namespace. */
static bool body_table(const json_t *body, struct ns_ident *ns, const char **name,
		       struct floe_error *err)
{
	*name = json_string_value(json_object_get(body, "name"));
	return ident_ns_from_json(json_object_get(body, "namespace"), "namespace", ns, err);
}

/* The control route's, besides CONTROLS_MANAGE on the catalog: what the
 * action would ask by its own route. */
static bool demand_control(struct call *c, struct floe_error *err)
{
	struct ns_ident ns = { 0 };
	const char *name = NULL;
	bool ok = true;

	if (strcmp(c->arg, "rename") == 0)
		return demand_rename(c, err);
	if (strcmp(c->arg, "register") == 0) {
		/* The action registers with overwrite, whatever the body says. */
		json_t *reg = json_deep_copy(c->body);
		ok = reg != NULL && json_object_set_new(reg, "overwrite", json_true()) == 0;
		if (!ok)
			floe_err(err, FE_INTERNAL, "out of memory");
		ok = ok && body_table(reg, &ns, &name, err) &&
		     gate_demand(c, P(TABLE_CREATE), &ns, NULL, err) &&
		     register_demands(c, &ns, reg, err);
		json_decref(reg);
	} else if (strcmp(c->arg, "undrop") == 0) {
		ok = body_table(c->body, &ns, &name, err) &&
		     gate_demand(c, P(TABLE_CREATE), &ns, NULL, err) &&
		     (name == NULL || gate_demand(c, P(TABLE_WRITE_MAIN), &ns, name, err));
	}
	ident_ns_clear(&ns);
	return ok;
}
