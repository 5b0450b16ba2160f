/*
 * authwatch.h - the thread that hears changes of authorization: a session
 * of its own listens on the database's floe_authz channel (migration 0011)
 * and, on each notification, forgets the decisions kept (authzcache.h),
 * the vended credentials kept (vend.h) and, when a principal, a role or a
 * membership changed, the tokens the server resolved (through a callback,
 * since the token cache is the server's). Not for deciding anything.
 */
#ifndef FLOE_AUTHWATCH_H
#define FLOE_AUTHWATCH_H

#include <stdbool.h>

#include "error.h"

struct authz_cache;
struct vend;

struct authwatch_config {
	const char *conninfo;          /* the database; copied */
	struct authz_cache *decisions; /* forgotten on every change; borrowed, never NULL */
	struct vend *vended;           /* forgotten on every change; borrowed, may be NULL */
	/* Called on a change of principals, roles or role memberships, and
	 * each time hearing (re)starts, with arg; NULL: nothing to call. */
	void (*forget_tokens)(void *arg);
	void *arg;
};

struct authwatch;

/*
 * Starts the thread; everything it uses is in cfg, read before it starts,
 * so nothing is handed to it afterwards. Until it hears, and whenever it
 * cannot, no decision is kept (authz_cache_hear). Returns a new watch
 * (authwatch_stop), or NULL with err set (FE_INTERNAL) when out of memory
 * or no thread can be started. The borrowed parts must outlive it.
 */
struct authwatch *authwatch_start(const struct authwatch_config *cfg,
				  struct floe_error *err) FLOE_WUR;

/* Stops the thread (within a quarter of a second), closes its session and
 * frees w; sets *w to NULL. NULL-safe. */
void authwatch_stop(struct authwatch **w);

#endif
