/*
 * gate.h - the one gate every routed request passes (Redis's
 * processCommand is the model): once authentication has named the caller,
 * the gate parses the path's parameters and the body the route declares,
 * resolves the object its privileges apply to, checks them, claims an
 * Idempotency-Key, moves the request to the route's queue, and only then
 * runs the handler with a struct call holding all of it. No handler checks
 * a privilege; catalog/ keeps only the decisions a route cannot state
 * (listing filters, separation of duties, the audited-publish control,
 * the members of a release).
 */
#ifndef FLOE_GATE_H
#define FLOE_GATE_H

#include <stdbool.h>
#include <jansson.h>

#include "access.h"
#include "http.h"
#include "ident.h"
#include "router.h"
#include "table.h"

struct store;
struct store_pool;
struct workq;

/* What a handler is given: the request, parsed and authorized. Lives as
 * long as the request (deferred jobs included); the gate frees it. */
struct call {
	struct http_request *req;
	const struct route *route;
	/* The request's connection: call_store borrows it, the gate gives it
	 * back when the handler returns. */
	struct store *s;
	/* {namespace} of the path, or the namespace ?parent= (a listing) or
	 * ?namespace= (the audit log's filter) names; nlevels 0: none. */
	struct ns_ident ns;
	/* {table} or {view} of the path (or ?table= of the audit log),
	 * percent-decoded and checked as a name; NULL: none. */
	char *name;
	/* The path's other parameters in order ({ref}, {run}, {id},
	 * {release}, {action}, {name}, {role}, then {principal}),
	 * percent-decoded, valid UTF-8 without control characters. */
	char *arg;
	char *arg2;
	/* The body (ROUTE_BODY, ROUTE_BODY_OPT: {} when none was sent);
	 * borrowed from the call. */
	json_t *body;
	/* ROUTE_ON_HOOK: the hook {id} names (borrowed from the call). */
	json_t *hook;
	/* The deployment and the caller, for catalog/. */
	struct table_env env;
};

/* The middleware step that runs a routed request's route (struct
 * middleware's run): everything above, then route->handler. */
void gate_run(struct http_request *req, const struct route *route);

/* Frees what the gate kept for req (struct middleware's release). */
void gate_release(struct http_request *req);

/* Checks that the caller holds need (all of it) on the object kind / ns /
 * table names (ns NULL: the catalog; table NULL: the namespace). True with
 * authentication off. False with the refusal (403 naming the privilege
 * and the object) or the store's failure in err. For a route's demands. */
bool gate_demand(struct call *c, access_set need, const struct ns_ident *ns, const char *table,
		 struct floe_error *err) FLOE_WUR;

/* The request's connection, borrowed from the pool of the thread it runs
 * on for the request's warehouse on first use and kept until the handler
 * returns; NULL when none could be had: the request has then been answered
 * 503. */
struct store *call_store(struct call *c);

/* Gives the connection back now: before work that borrows connections
 * of its own from the same pool, or that takes long. */
void call_release(struct call *c);

/* Runs fn(c) on queue q with connections of pool, the request handed on
 * (http_hand_on) meanwhile (the gate answers 503 when the queue refuses it). The handler
 * that calls it returns at once and touches c no more. */
void call_defer(struct call *c, struct workq *q, struct store_pool *pool, route_handler fn);

#endif
