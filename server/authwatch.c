/*
 * authwatch.c - the thread that hears changes of authorization: a
 * session of its own listens on the database's floe_authz channel
 * (migration 0011) and, on each notification, makes this floe forget the
 * decisions it keeps and, when a principal, a role or a membership
 * changed, the tokens it resolved. While the session is lost the kept
 * decisions are off (every request asks the store) and it reconnects
 * with a growing pause.
 */
#include "auth_internal.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "authzcache.h"
#include "vend.h"
#include "log.h"
#include "store_admin.h"

#define WATCH_CHANNEL "floe_authz"
/* How long one wait lasts: the longest a stop waits for the thread. */
#define WATCH_WAIT_MS 250
#define WATCH_RETRY_MIN_MS 250
#define WATCH_RETRY_MAX_MS 5000

struct authwatch {
	struct auth *auth;
	char *conninfo;
	pthread_t thread;
	atomic_bool stop;
};

static void on_change(void *arg, const char *payload)
{
	struct auth *a = arg;

	authz_cache_forget(a->decisions);
	/* A grant may have changed a principal's access to a table. */
	vend_forget(a->vended);
	/* A token's roles were resolved from principals, roles and
	 * role_members; grants and objects do not enter it. */
	if (payload == NULL || (strcmp(payload, "grants") != 0 && strcmp(payload, "tables") != 0 &&
				strcmp(payload, "namespaces") != 0))
		tokencache_clear(a->cache);
}

/* Sleeps ms in short steps; false when asked to stop meanwhile. */
static bool pause_ms(struct authwatch *w, int ms)
{
	for (int slept = 0; slept < ms; slept += 50) {
		if (atomic_load(&w->stop))
			return false;
		struct timespec ts = { 0, 50 * 1000000L };
		(void)nanosleep(&ts, NULL);
	}
	return !atomic_load(&w->stop);
}

static void *watch_main(void *arg)
{
	struct authwatch *w = arg;
	struct auth *a = w->auth;
	int retry_ms = WATCH_RETRY_MIN_MS;
	bool warned = false;

	while (!atomic_load(&w->stop)) {
		struct floe_error err;
		floe_error_clear(&err);
		struct store_listener *l = store_listen(w->conninfo, WATCH_CHANNEL, &err);
		if (l == NULL) {
			if (!warned)
				log_warn("auth",
					 "cannot hear changes of authorization (%s): every request "
					 "asks the database until it can",
					 err.message);
			warned = true;
			if (!pause_ms(w, retry_ms))
				break;
			retry_ms = retry_ms * 2 > WATCH_RETRY_MAX_MS ? WATCH_RETRY_MAX_MS
								     : retry_ms * 2;
			continue;
		}
		/* What changed while nothing was heard is unknown. */
		tokencache_clear(a->cache);
		authz_cache_hear(a->decisions, true);
		if (warned)
			log_info("auth", "hearing changes of authorization again");
		warned = false;
		retry_ms = WATCH_RETRY_MIN_MS;
		while (!atomic_load(&w->stop)) {
			if (store_listener_wait(l, WATCH_WAIT_MS, on_change, a) < 0)
				break;
		}
		authz_cache_hear(a->decisions, false);
		store_listener_free(l);
		if (!atomic_load(&w->stop)) {
			log_warn("auth",
				 "lost the session that hears changes of authorization: every "
				 "request asks the database until it is back");
			warned = true;
		}
	}
	return NULL;
}

bool auth_watch_start(struct auth *a, const char *conninfo, struct floe_error *err)
{
	struct authwatch *w = NULL;

	if (a == NULL || a->decisions == NULL)
		return true; /* authentication is off: nothing is kept */
	w = calloc(1, sizeof(*w));
	if (w == NULL)
		return floe_err(err, FE_INTERNAL, "out of memory");
	w->auth = a;
	w->conninfo = strdup(conninfo);
	atomic_init(&w->stop, false);
	if (w->conninfo == NULL) {
		free(w);
		return floe_err(err, FE_INTERNAL, "out of memory");
	}
	if (pthread_create(&w->thread, NULL, watch_main, w) != 0) {
		free(w->conninfo);
		free(w);
		return floe_err(err, FE_INTERNAL, "cannot start the thread that hears changes");
	}
	a->watch = w;
	return true;
}

void auth_watch_stop(struct auth *a)
{
	if (a == NULL || a->watch == NULL)
		return;
	atomic_store(&a->watch->stop, true);
	(void)pthread_join(a->watch->thread, NULL);
	free(a->watch->conninfo);
	free(a->watch);
	a->watch = NULL;
}
