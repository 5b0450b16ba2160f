/*
 * app.h - what every request handler is given: the immutable
 * configuration and the database pool. Passed explicitly, never global.
 */
#ifndef FLOE_APP_H
#define FLOE_APP_H

#include <stdatomic.h>

#include "config.h"
#include "janitor.h"
#include "table.h"
#include "workq.h"

struct auth;
struct http_request;
struct route;
struct store_pool;
struct system_watch;
struct trail_key;
struct vend;

/*
 * Middleware around every route (auth.c's and gate.c's, set by main.c), so
 * the HTTP layer calls them without knowing them. NULL members: the
 * route's handler is not run (the fuzz and unit builds that only route).
 */
struct middleware {
	/* Before run: false when it has answered the request itself (auth.c:
	 * no valid token). NULL: every request goes on. */
	bool (*admit)(struct http_request *req, const struct route *route);
	/* Whether admit lets every request of route through without a look
	 * (no token asked for): only then may an inline route run on
	 * libmicrohttpd's thread. NULL: as true. */
	bool (*admits_all)(const struct http_request *req, const struct route *route);
	/* Runs the route for the request (gate.c: parse, authorize, queue,
	 * handler). */
	void (*run)(struct http_request *req, const struct route *route);
	/* Ends a request that was answered from another thread. */
	void (*finish)(struct http_request *req);
	/* Frees what run kept for the request, when it is done with. */
	void (*release)(struct http_request *req);
};

struct app {
	const struct floe_config *cfg;
	struct middleware middleware;
	struct auth *auth; /* authentication (auth.h); never NULL while serving */
	const struct hook_sealer *hook_sealer; /* seals hook secrets (sealing.h) */
	/* Each kind of thread has connections of its own, so commits and
	 * publishes cannot starve loadTable. */
	struct store_pool *pool;         /* the request workers' */
	struct store_pool *commit_pool;  /* the commit threads' */
	struct store_pool *publish_pool; /* the publish threads' */
	struct commit_locks *locks;
	struct unsettled *unsettled; /* commits the janitor settles later */
	/* Runs every route that may reach the database, off libmicrohttpd's
	 * threads, which then never wait on it (/health answers at once). */
	struct workq *requests;
	struct workq *commits;       /* runs commits off the request workers */
	struct janitor *janitor;     /* purges and upkeep; may be NULL */
	struct system_watch *watch;  /* the database watch; answers /ready */
	struct workq *publishes;     /* runs publishes (audits) likewise */
	struct vend *vend;           /* vended credentials (vend.h); NULL: vending is off */
	struct trail_key *audit_key; /* signs audit checkpoints (trail.h); NULL: none */
	atomic_long inflight;        /* requests begun and not yet completed */
	atomic_long async;           /* suspended requests still being worked on */
	atomic_llong body_bytes;     /* request bodies held in memory */
	atomic_bool stopping;        /* shutting down: answers close the connection */
};

#endif
