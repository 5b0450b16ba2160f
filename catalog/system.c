/*
 * system.c - connections for requests, and the database watch that
 * answers the readiness check. The daemon's start-up creates the pools
 * (store_admin.h); this only borrows.
 *
 * The watch asks the database for a round trip every SYSTEM_WATCH_EVERY_MS
 * on a connection of its own, within a short deadline. A database that
 * does not answer in time is stalled (SIGSTOPped, a partition, a frozen
 * disk): the store then refuses requests at once and abandons the
 * statements waiting on it, so no thread serving requests waits out its
 * statement timeout; /ready reads the watch's last verdict, never a
 * connection of its own.
 */
#include "system.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log.h"
#include "ports.h"

/* Between two checks of the database. */
#define SYSTEM_WATCH_EVERY_MS 250

enum watch_verdict { WATCH_UNKNOWN, WATCH_ANSWERS, WATCH_STALLED, WATCH_DOWN };

struct system_watch {
	struct store_pool *pool; /* borrowed */
	int timeout_ms;
	pthread_t thread;
	pthread_mutex_t mu; /* guards what follows; never held across a call */
	pthread_cond_t cv;
	bool stopping;
	bool stall_begun; /* store_stall_begin called; the watch thread's own */
	enum watch_verdict verdict;
	struct timespec answered_at; /* of the last check the database answered */
	char why[sizeof(((struct floe_error *)0)->message)]; /* why the last check failed */
};

struct store *system_acquire(struct store_pool *pool, struct floe_error *err)
{
	return store_pool_acquire(pool, err);
}

struct store *system_acquire_in(struct store_pool *pool, const char *warehouse,
				struct floe_error *err)
{
	struct store *s = store_pool_acquire(pool, err);

	if (s != NULL)
		store_use_warehouse(s, warehouse);
	return s;
}

void system_use(struct store *s, const char *warehouse)
{
	store_use_warehouse(s, warehouse);
}

void system_release(struct store_pool *pool, struct store *s)
{
	store_pool_release(pool, s);
}

static long long elapsed_ms(const struct timespec *from, const struct timespec *to)
{
	return (long long)(to->tv_sec - from->tv_sec) * 1000LL +
	       (to->tv_nsec - from->tv_nsec) / 1000000L;
}

/* One check: a round trip within the deadline. */
static void watch_check(struct system_watch *w)
{
	struct floe_error err;
	struct timespec asked, now;
	bool timed_out = false;
	bool ok = false;

	floe_error_clear(&err);
	clock_gettime(CLOCK_MONOTONIC, &asked);
	struct store *s = store_pool_acquire(w->pool, &err);
	if (s != NULL) {
		ok = store_probe(s, w->timeout_ms, &timed_out, &err);
		store_pool_release(w->pool, s);
	}
	clock_gettime(CLOCK_MONOTONIC, &now);
	/* A connect that failed only after the deadline is a stall too (a
	 * stopped postmaster accepts and never answers); a refusal is not. */
	if (!ok && !timed_out && elapsed_ms(&asked, &now) >= w->timeout_ms)
		timed_out = true;

	pthread_mutex_lock(&w->mu);
	enum watch_verdict before = w->verdict;
	if (ok) {
		w->verdict = WATCH_ANSWERS;
		w->answered_at = now;
		w->why[0] = '\0';
	} else {
		w->verdict = timed_out ? WATCH_STALLED : WATCH_DOWN;
		if (timed_out)
			(void)snprintf(w->why, sizeof(w->why),
				       "The catalog database did not answer within %d ms",
				       w->timeout_ms);
		else
			(void)snprintf(w->why, sizeof(w->why), "%s", err.message);
	}
	enum watch_verdict after = w->verdict;
	pthread_mutex_unlock(&w->mu);

	/* A stall ends only when the database answers again. */
	if (after == WATCH_STALLED && !w->stall_begun) {
		log_warn("system",
			 "the catalog database did not answer within %d ms: requests that need "
			 "it get 503 until it does",
			 w->timeout_ms);
		store_stall_begin(w->timeout_ms);
		w->stall_begun = true;
	} else if (after == WATCH_ANSWERS && w->stall_begun) {
		log_info("system", "the catalog database answers again");
		store_stall_end();
		w->stall_begun = false;
	} else if (after == WATCH_DOWN && before == WATCH_ANSWERS) {
		log_warn("system", "the catalog database cannot be reached: %s", err.message);
	}
}

static void *watch_main(void *arg)
{
	struct system_watch *w = arg;

	pthread_mutex_lock(&w->mu);
	while (!w->stopping) {
		pthread_mutex_unlock(&w->mu);
		watch_check(w);
		pthread_mutex_lock(&w->mu);
		struct timespec until;
		clock_gettime(CLOCK_MONOTONIC, &until);
		until.tv_nsec += (long)SYSTEM_WATCH_EVERY_MS * 1000000L;
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
		while (!w->stopping) {
			if (pthread_cond_timedwait(&w->cv, &w->mu, &until) == ETIMEDOUT)
				break;
		}
	}
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

struct system_watch *system_watch_start(struct store_pool *pool, int timeout_ms)
{
	struct system_watch *w = calloc(1, sizeof(*w));
	pthread_condattr_t ca;

	if (w == NULL) {
		log_error("system", "out of memory");
		return NULL;
	}
	w->pool = pool;
	w->timeout_ms = timeout_ms;
	w->verdict = WATCH_UNKNOWN;
	(void)snprintf(w->why, sizeof(w->why), "The catalog database has not been checked yet");
	pthread_mutex_init(&w->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&w->cv, &ca);
	pthread_condattr_destroy(&ca);
	/* The first verdict is in before the first request is served. */
	watch_check(w);
	if (pthread_create(&w->thread, NULL, watch_main, w) != 0) {
		log_error("system", "cannot start the database watch thread");
		pthread_mutex_destroy(&w->mu);
		pthread_cond_destroy(&w->cv);
		free(w);
		return NULL;
	}
	return w;
}

void system_watch_stop(struct system_watch **wp)
{
	struct system_watch *w = *wp;

	if (w == NULL)
		return;
	pthread_mutex_lock(&w->mu);
	w->stopping = true;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->mu);
	pthread_join(w->thread, NULL);
	pthread_mutex_destroy(&w->mu);
	pthread_cond_destroy(&w->cv);
	free(w);
	*wp = NULL;
}

bool system_ready(struct system_watch *w, struct floe_error *err)
{
	struct timespec now;
	bool ready;

	clock_gettime(CLOCK_MONOTONIC, &now);
	pthread_mutex_lock(&w->mu);
	/* A check still waiting past its deadline is a stall already. */
	ready = w->verdict == WATCH_ANSWERS &&
		elapsed_ms(&w->answered_at, &now) <= SYSTEM_WATCH_EVERY_MS + w->timeout_ms;
	if (!ready && w->verdict == WATCH_ANSWERS)
		floe_err(err, FE_UNAVAILABLE, "The catalog database did not answer within %d ms",
			 w->timeout_ms);
	else if (!ready)
		floe_err(err, FE_UNAVAILABLE, "%s", w->why);
	pthread_mutex_unlock(&w->mu);
	return ready;
}
