/*
 * router.h - the route table: every route floe serves, with the contract
 * the gate (gate.h) enforces before its handler runs: who may call it,
 * which privilege it needs on which object, what its body is, which queue
 * it runs on, whether it changes the catalog and which audit event it
 * writes. routes.c holds the table; this file matches a request path
 * against it with and without the optional /v1/{prefix} segment. The same
 * table prints --print-routes, fills /v1/config "endpoints" and labels
 * /metrics.
 */
#ifndef FLOE_ROUTER_H
#define FLOE_ROUTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <jansson.h>

#include "access.h"
#include "http.h"

struct call;

/* A route's handler: what differs between routes, run by the gate once
 * the request is authenticated, parsed and authorized (gate.h). */
typedef void (*route_handler)(struct call *c);

/* The privileges a route needs that only its body (or the object its path
 * names) can tell: gate_demand (gate.h) is asked for each; false with err
 * set (the refusal, or a 400 when the body cannot say). */
typedef bool (*route_demands)(struct call *c, struct floe_error *err);

/* Who may call a route at all. */
enum route_access {
	ROUTE_PRIVILEGED, /* a principal holding the route's privileges */
	ROUTE_PRINCIPAL,  /* any authenticated principal: no privilege */
	ROUTE_PUBLIC,     /* no token is asked for */
	ROUTE_PUBLIC_IF,  /* public when --auth-public names it (public_bit) */
};

/* What a route's privileges are checked on. */
enum route_object {
	ROUTE_ON_NONE,      /* nothing: a public or any-principal route */
	ROUTE_ON_CATALOG,   /* the catalog of the request's warehouse */
	ROUTE_ON_NAMESPACE, /* the path's {namespace} */
	ROUTE_ON_TABLE,     /* the path's {namespace} and {table} (or {view}) */
	ROUTE_ON_LISTING,   /* the namespace listed (the path's, or ?parent=):
			     * visible by a grant on, above or below it */
	ROUTE_ON_FILTER,    /* what ?namespace= and ?table= name; the catalog
			     * when no namespace is given */
	ROUTE_ON_BODY,      /* only what the body names: the route's demands */
	ROUTE_ON_HOOK,      /* the scope of the audit hook {id} names */
	ROUTE_ON_MEMBERS,   /* every member table of the release: checked by
			     * catalog/release.c, which alone knows them */
};

/* Which threads run the route: authentication and the gate included. */
enum route_queue {
	/* The request workers (--threads), each with its connection: any
	 * route that may reach the database, so libmicrohttpd's threads never
	 * wait on it. */
	ROUTE_QUEUE_REQUEST,
	/* libmicrohttpd's own thread, at once: only a route that never
	 * touches the database, a file or the network (liveness, readiness
	 * from the database watch, the metrics page), and only while it asks
	 * for no token (middleware.admits_all). */
	ROUTE_QUEUE_INLINE,
	ROUTE_QUEUE_COMMIT,  /* the commit threads and their connections */
	ROUTE_QUEUE_PUBLISH, /* the publish threads: an audit waits on hooks */
};

/* Flags. */
#define ROUTE_ADVERTISE 0x01u /* listed in /v1/config endpoints */
#define ROUTE_BODY 0x02u      /* a JSON object body is required */
#define ROUTE_BODY_OPT 0x04u  /* a JSON object body, or none (then {}) */
#define ROUTE_MUTATES 0x08u   /* changes the catalog; takes an Idempotency-Key */
/* Its Idempotency-Key answer is recorded in the transaction of its
 * decisive change (catalog/idem.h idem_record), so a change and its
 * answer land together or not at all. The rule of every ROUTE_MUTATES
 * route: tests/lint/gate.sh, scripts/route-table.py --check and
 * tests/integration/test_route_table.py hold it. */
#define ROUTE_IDEM_IN_TX 0x10u
#define ROUTE_ANY_OF 0x20u /* need: any one of the privileges, else all */

struct route {
	const char *method;
	const char *pattern; /* "/v1/{prefix}/namespaces/{namespace}" */
	route_handler handler;
	enum route_access access;
	access_set need; /* on `on`: all of them, or one with ROUTE_ANY_OF */
	enum route_object on;
	route_demands demands;   /* more, from the body; NULL: none */
	const char *demands_doc; /* what demands asks for, in words */
	enum route_queue queue;
	unsigned flags;
	unsigned public_bit; /* ROUTE_PUBLIC_IF: the --auth-public bit */
	const char *audit;   /* the audit event it writes; NULL: none */
};

/* The table (routes.c) and its length. */
extern const struct route routes_table[];
extern const size_t routes_table_len;

enum route_result {
	ROUTE_FOUND,
	ROUTE_NO_PATH,    /* 404 */
	ROUTE_BAD_METHOD, /* 405: allow lists the methods that exist */
};

/* Finds the route for req->method and req->segs; on ROUTE_FOUND fills
 * req's parameters and *route. HEAD finds the GET route of a path that
 * has no HEAD route of its own, and allow lists HEAD wherever GET is. */
enum route_result router_match(struct http_request *req, const struct route **route, char *allow,
			       size_t allowlen);

/* Prints every route, one a line: method, pattern, who may call it, the
 * privileges and their object, flags; with json, one JSON array of
 * objects (docs/auth.md and the tests read it). */
void router_print(FILE *out, bool json);

/* The endpoints list of /v1/config: a new JSON array. */
json_t *router_endpoints(void);

/* How many routes the table holds, and route i of them (NULL past the
 * end): for the route labels of /metrics. */
size_t router_count(void);
const struct route *router_at(size_t i);

/* The slot a route's requests are counted in (metric.h: 1 + its index;
 * 0 is "no route"). */
size_t router_slot(const struct route *r);

#endif
