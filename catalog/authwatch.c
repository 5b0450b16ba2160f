/*
 * authwatch.c - hearing changes of authorization (authwatch.h). While the
 * session is lost the kept decisions are off (every request asks the
 * store) and it reconnects with a growing pause.
 */
#include "authwatch.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "authzcache.h"
#include "log.h"
#include "ports.h"
#include "vend.h"

#define WATCH_CHANNEL "floe_authz"
/* How long one wait lasts: the longest a stop waits for the thread. */
#define WATCH_WAIT_MS 250
#define WATCH_RETRY_MIN_MS 250
#define WATCH_RETRY_MAX_MS 5000

struct authwatch {
	/* Set before the thread starts and never written after. */
	struct authwatch_config cfg; /* cfg.conninfo is conninfo */
	char *conninfo;
	pthread_t thread;
	atomic_bool stop;
};

static void forget_tokens(const struct authwatch *w)
{
	if (w->cfg.forget_tokens != NULL)
		w->cfg.forget_tokens(w->cfg.arg);
}

static void on_change(void *arg, const char *payload)
{
	const struct authwatch *w = arg;

	authz_cache_forget(w->cfg.decisions);
	/* A grant may have changed a principal's access to a table. */
	if (w->cfg.vended != NULL)
		vend_forget(w->cfg.vended);
	/* A token's roles were resolved from principals, roles and
	 * role_members; grants and objects do not enter it. */
	if (payload == NULL || (strcmp(payload, "grants") != 0 && strcmp(payload, "tables") != 0 &&
				strcmp(payload, "namespaces") != 0))
		forget_tokens(w);
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
	int retry_ms = WATCH_RETRY_MIN_MS;
	bool warned = false;

	while (!atomic_load(&w->stop)) {
		struct floe_error err;
		floe_error_clear(&err);
		struct store_listener *l = store_listen(w->conninfo, WATCH_CHANNEL, &err);
		if (l == NULL) {
			if (!warned)
				log_warn("authz",
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
		forget_tokens(w);
		authz_cache_hear(w->cfg.decisions, true);
		if (warned)
			log_info("authz", "hearing changes of authorization again");
		warned = false;
		retry_ms = WATCH_RETRY_MIN_MS;
		while (!atomic_load(&w->stop)) {
			if (store_listener_wait(l, WATCH_WAIT_MS, on_change, w) < 0)
				break;
		}
		authz_cache_hear(w->cfg.decisions, false);
		store_listener_free(l);
		if (!atomic_load(&w->stop)) {
			log_warn("authz",
				 "lost the session that hears changes of authorization: every "
				 "request asks the database until it is back");
			warned = true;
		}
	}
	return NULL;
}

struct authwatch *authwatch_start(const struct authwatch_config *cfg, struct floe_error *err)
{
	struct authwatch *w = calloc(1, sizeof(*w));

	if (w == NULL) {
		floe_err(err, FE_INTERNAL, "out of memory");
		return NULL;
	}
	w->cfg = *cfg;
	w->conninfo = strdup(cfg->conninfo);
	w->cfg.conninfo = w->conninfo;
	atomic_init(&w->stop, false);
	if (w->conninfo == NULL) {
		free(w);
		floe_err(err, FE_INTERNAL, "out of memory");
		return NULL;
	}
	/* Everything the thread reads is in w by now: pthread_create
	 * publishes it to the thread, and nothing is written after. */
	if (pthread_create(&w->thread, NULL, watch_main, w) != 0) {
		free(w->conninfo);
		free(w);
		floe_err(err, FE_INTERNAL, "cannot start the thread that hears changes");
		return NULL;
	}
	return w;
}

void authwatch_stop(struct authwatch **wp)
{
	struct authwatch *w = *wp;

	if (w == NULL)
		return;
	atomic_store(&w->stop, true);
	(void)pthread_join(w->thread, NULL);
	free(w->conninfo);
	free(w);
	*wp = NULL;
}
