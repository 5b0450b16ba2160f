/*
 * gate.c - the one gate of every routed request (gate.h): the route
 * table's row is read and enforced here, in this order:
 *
 *   1. privileges on the catalog (nothing to parse to know the object);
 *   2. the path's parameters, percent-decoded ('+' is itself in a path)
 *      and checked, then the body the route declares;
 *   3. the object the privileges apply to (the path's namespace or table,
 *      a listing, the audit log's filter, an audit hook's scope) and the
 *      check of them; then what the body demands (routes.c);
 *   4. the Idempotency-Key of a route that changes the catalog;
 *   5. the route's queue, and the handler.
 *
 * Authentication came before (auth.c, struct middleware's admit), so the
 * caller is known here; with authentication off every privilege holds.
 * A decision that cannot be made (the database is away) is refused.
 */
#include "gate.h"

#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "authz.h"
#include "control.h"
#include "handlers.h"
#include "hookspec.h"
#include "idempotency.h"
#include "system.h"
#include "wording.h"

/* --- the connection --- */

static struct store *gate_store(struct call *c, struct floe_error *err)
{
	if (c->s == NULL)
		c->s = system_acquire_in(c->req->pool, handler_warehouse_name(c->req), err);
	return c->s;
}

struct store *call_store(struct call *c)
{
	struct floe_error err;

	floe_error_clear(&err);
	if (gate_store(c, &err) == NULL)
		http_reply_error(c->req, &err);
	return c->s;
}

void call_release(struct call *c)
{
	if (c->s == NULL)
		return;
	system_release(c->req->pool, c->s);
	c->s = NULL;
}

/* --- parsing --- */

/* How a path parameter other than {namespace} names itself in a 400. */
static const char *param_what(const char *name, size_t len)
{
	static const struct {
		const char *param;
		const char *what;
	} names[] = {
		{ "table", "table name" },
		{ "view", "view name" },
		{ "ref", "ref" },
		{ "run", "run" },
		{ "id", "id" },
		{ "release", "release id" },
		{ "action", "control action" },
		{ "name", "principal name" },
		{ "role", "role name" },
		{ "principal", "principal name" },
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (strlen(names[i].param) == len && strncmp(names[i].param, name, len) == 0)
			return names[i].what;
	}
	return "path parameter";
}

/* The path parameter value, percent-decoded ('+' is itself) and checked
 * as a name: valid UTF-8, no control character, 1..255 bytes. */
static bool param_decode(const char *raw, const char *what, char **out, struct floe_error *err)
{
	size_t len = 0;

	*out = NULL;
	if (!url_decode(raw, strlen(raw), false, out, &len, err))
		return false;
	if (!ident_name_check(*out, len, what, err)) {
		free(*out);
		*out = NULL;
		return false;
	}
	return true;
}

/* Fills c from the path's parameters ({prefix} was the warehouse's). */
static bool parse_path(struct call *c, struct floe_error *err)
{
	struct http_request *req = c->req;

	for (size_t i = 0; i < req->nparams; i++) {
		const char *name = req->param_names[i];
		size_t len = req->param_name_lens[i];
		const char *raw = req->param_values[i];

		if (len == 6 && strncmp(name, "prefix", 6) == 0)
			continue;
		if (len == 9 && strncmp(name, "namespace", 9) == 0) {
			if (!ident_ns_parse(raw, strlen(raw), IDENT_PLUS_LITERAL, &c->ns, err))
				return false;
			continue;
		}
		bool object = (len == 5 && strncmp(name, "table", 5) == 0) ||
			      (len == 4 && strncmp(name, "view", 4) == 0);
		char **slot = object ? &c->name : c->arg == NULL ? &c->arg : &c->arg2;
		if (*slot != NULL)
			return floe_err(err, FE_INTERNAL, "route %s has too many parameters",
					c->route->pattern);
		if (!param_decode(raw, param_what(name, len), slot, err))
			return false;
	}
	return true;
}

/* The namespace a query parameter names (form encoding: '+' is a space),
 * into c->ns; absent: none. */
static bool parse_query_namespace(struct call *c, const char *param, struct floe_error *err)
{
	const char *raw = http_query_raw(c->req, param);

	return raw == NULL || ident_ns_parse(raw, strlen(raw), IDENT_PLUS_SPACE, &c->ns, err);
}

static bool parse_body(struct call *c, struct floe_error *err)
{
	unsigned flags = c->route->flags;

	if ((flags & (ROUTE_BODY | ROUTE_BODY_OPT)) == 0)
		return true;
	if ((flags & ROUTE_BODY_OPT) && c->req->body_len == 0) {
		c->body = json_object();
		return c->body != NULL || floe_err(err, FE_INTERNAL, "out of memory");
	}
	return http_body_json(c->req, &c->body, err);
}

/* --- authorization --- */

bool gate_demand(struct call *c, access_set need, const struct ns_ident *ns, const char *table,
		 struct floe_error *err)
{
	const struct principal *p = handler_principal(c->req);
	struct authz_object obj = { .kind = AUTHZ_CATALOG, .ns = ns, .table = table };

	if (p == NULL || need == 0)
		return true;
	if (ns != NULL)
		obj.kind = table != NULL ? AUTHZ_TABLE : AUTHZ_NAMESPACE;
	if (gate_store(c, err) == NULL)
		return false;
	return access_check_all(c->s, p, need, &obj, err);
}

/* Any one privilege of need on (ns, table): each in the enum's order;
 * the refusal names the last. */
static bool demand_any(struct call *c, access_set need, const struct ns_ident *ns,
		       const char *table, struct floe_error *err)
{
	bool refused = false;

	for (int priv = 0; priv < PRIV_COUNT; priv++) {
		if ((need & ACCESS_BIT(priv)) == 0)
			continue;
		floe_error_clear(err);
		if (gate_demand(c, ACCESS_BIT(priv), ns, table, err))
			return true;
		if (err->kind != FE_FORBIDDEN)
			return false;
		refused = true;
	}
	return !refused;
}

/* The route's own privileges on (ns, table). */
static bool demand_route(struct call *c, const struct ns_ident *ns, const char *table,
			 struct floe_error *err)
{
	const struct route *r = c->route;

	if (r->flags & ROUTE_ANY_OF)
		return demand_any(c, r->need, ns, table, err);
	return gate_demand(c, r->need, ns, table, err);
}

/* The audit hook {id} names, into c->hook: its scope is the object. An id
 * that is no hook's is that hook's 404, whoever asks. */
static bool resolve_hook(struct call *c, struct floe_error *err)
{
	if (c->arg == NULL || !hook_id_valid(c->arg))
		return wording_no_such_hook(c->arg != NULL ? c->arg : "", err);
	if (gate_store(c, err) == NULL)
		return false;
	c->hook = control_hook_get(c->s, c->arg, err);
	return c->hook != NULL;
}

/* The route's privileges on a hook's scope: its table, its namespace, or
 * the catalog. */
static bool demand_hook(struct call *c, struct floe_error *err)
{
	const json_t *scope = json_object_get(c->hook, "scope");
	const json_t *levels = json_object_get(scope, "namespace");
	struct ns_ident ns = { 0 };

	if (levels == NULL)
		return demand_route(c, NULL, NULL, err);
	if (!ident_ns_from_json(levels, "namespace", &ns, err))
		return false;
	bool ok = demand_route(c, &ns, json_string_value(json_object_get(scope, "table")), err);
	ident_ns_clear(&ns);
	return ok;
}

/* What the route's object is, and the check of its privileges there. */
static bool demand_object(struct call *c, struct floe_error *err)
{
	const struct route *r = c->route;
	const struct principal *p = handler_principal(c->req);
	bool has_ns = c->ns.nlevels > 0;

	switch (r->on) {
	case ROUTE_ON_NONE:
	case ROUTE_ON_CATALOG:
	case ROUTE_ON_BODY:
		return true;
	case ROUTE_ON_NAMESPACE:
		return demand_route(c, &c->ns, NULL, err);
	case ROUTE_ON_TABLE:
		return demand_route(c, &c->ns, c->name, err);
	case ROUTE_ON_LISTING:
		/* Listing (NAMESPACE_READ) is seeing the namespace: a grant on,
		 * above or below it; the page shows only what p may see. */
		if (p == NULL)
			return true;
		return gate_store(c, err) != NULL &&
		       access_check_listing(c->s, p, has_ns ? &c->ns : NULL, err);
	case ROUTE_ON_FILTER:
		/* A table filter without a namespace reads every namespace's
		 * table of that name: the catalog's. */
		return demand_route(c, has_ns ? &c->ns : NULL, has_ns ? c->name : NULL, err);
	case ROUTE_ON_HOOK:
		return demand_hook(c, err);
	case ROUTE_ON_MEMBERS:
		/* release.c checks r->need on each member it finds. */
		c->env.member_need = r->need;
		return true;
	}
	return floe_err(err, FE_INTERNAL, "route %s names no object", r->pattern);
}

/* Steps 1 to 3 of the gate: false with err when the request is refused. */
static bool admit_call(struct call *c, struct floe_error *err)
{
	const struct route *r = c->route;
	bool privileged = r->access == ROUTE_PRIVILEGED;

	/* On the catalog the object is known before anything is parsed: a
	 * caller without the privilege learns nothing of what it sent. */
	if (privileged && r->on == ROUTE_ON_CATALOG && !demand_route(c, NULL, NULL, err))
		return false;
	if (!parse_path(c, err))
		return false;
	if (r->on == ROUTE_ON_LISTING && c->ns.nlevels == 0 &&
	    !parse_query_namespace(c, "parent", err))
		return false;
	if (r->on == ROUTE_ON_FILTER) {
		if (!parse_query_namespace(c, "namespace", err) ||
		    !http_query(c->req, "table", &c->name, err))
			return false;
	}
	if (!parse_body(c, err))
		return false;
	if (r->on == ROUTE_ON_HOOK && !resolve_hook(c, err))
		return false;
	if (!privileged)
		return true;
	if (!demand_object(c, err))
		return false;
	return r->demands == NULL || r->demands(c, err);
}

/* --- running the handler --- */

/* A deferred route's job on its queue's thread: the connection it
 * borrows is the queue's pool's. */
static void gate_job(void *arg, const struct floe_error *refused)
{
	struct call *c = arg;
	struct http_request *req = c->req;

	if (refused != NULL) {
		handler_refuse(req, refused);
	} else {
		c->route->handler(c);
		call_release(c);
	}
	http_async_complete(req);
}

/* call_defer's job: fn instead of the route's handler. */
struct deferred {
	struct call *c;
	route_handler fn;
};

static void deferred_job(void *arg, const struct floe_error *refused)
{
	struct deferred *d = arg;
	struct call *c = d->c;
	route_handler fn = d->fn;

	free(d);
	if (refused != NULL) {
		handler_refuse(c->req, refused);
	} else {
		fn(c);
		call_release(c);
	}
	http_async_complete(c->req);
}

void call_defer(struct call *c, struct workq *q, struct store_pool *pool, route_handler fn)
{
	struct deferred *d = malloc(sizeof(*d));
	struct floe_error err;

	call_release(c);
	if (d == NULL) {
		floe_err(&err, FE_INTERNAL, "out of memory");
		http_reply_error(c->req, &err);
		return;
	}
	d->c = c;
	d->fn = fn;
	handler_defer_to(c->req, q, pool, deferred_job, d);
}

void gate_run(struct http_request *req, const struct route *route)
{
	struct floe_error err;
	struct call *c = calloc(1, sizeof(*c));

	floe_error_clear(&err);
	if (c == NULL) {
		floe_err(&err, FE_INTERNAL, "out of memory");
		http_reply_error(req, &err);
		return;
	}
	req->call = c;
	c->req = req;
	c->route = route;
	c->env = handler_env(req);
	if (!admit_call(c, &err)) {
		call_release(c);
		/* A retry of a change that removed its own object (DELETE of
		 * a hook) finds no object: its first answer is still its. */
		if ((route->flags & ROUTE_MUTATES) && floe_errkind_status(err.kind) == 404 &&
		    http_header(req, "Idempotency-Key") != NULL && idempotent_replayed(req))
			return;
		http_reply_error(req, &err);
		return;
	}
	if ((route->flags & ROUTE_MUTATES) && http_header(req, "Idempotency-Key") != NULL) {
		/* The claim borrows a connection of its own. */
		call_release(c);
		if (!idempotent_begin(req))
			return;
		/* Every change records its answer in its own transaction
		 * (ROUTE_IDEM_IN_TX, the rule of every mutating route). */
		c->env.idem_key = http_header(req, "Idempotency-Key");
		c->env.idem_owner = req->idem_owner;
	}
	switch (route->queue) {
	case ROUTE_QUEUE_COMMIT:
		call_release(c);
		handler_defer_to(req, req->app->commits, req->app->commit_pool, gate_job, c);
		return;
	case ROUTE_QUEUE_PUBLISH:
		call_release(c);
		handler_defer_to(req, req->app->publishes, req->app->publish_pool, gate_job, c);
		return;
	case ROUTE_QUEUE_REQUEST:
	case ROUTE_QUEUE_INLINE:
		break;
	}
	route->handler(c);
	/* A handler that deferred its work (call_defer) touches c from another
	 * thread now; its job gives the connection back and finishes. */
	if (req->handed_on)
		return;
	call_release(c);
	idempotent_finish(req);
}

void gate_release(struct http_request *req)
{
	struct call *c = req->call;

	if (c == NULL)
		return;
	req->call = NULL;
	ident_ns_clear(&c->ns);
	free(c->name);
	free(c->arg);
	free(c->arg2);
	json_decref(c->body);
	json_decref(c->hook);
	free(c);
}
