/*
 * system.h - borrowing a catalog database connection for a request, and
 * the readiness question: can the catalog reach its database now?
 */
#ifndef FLOE_SYSTEM_H
#define FLOE_SYSTEM_H

#include <stdbool.h>

#include "error.h"

struct store;
struct store_pool;

/* Borrows a connection of pool for one request (give it back with
 * system_release). NULL with FE_UNAVAILABLE when the database cannot be
 * reached or every connection stays busy past the acquire timeout. */
struct store *system_acquire(struct store_pool *pool, struct floe_error *err) FLOE_WUR;

/* system_acquire for a request under a warehouse's prefix: the
 * connection reads and writes that warehouse's catalog ("" the default
 * warehouse's, else a name of --warehouses; borrowed while the connection
 * is). */
struct store *system_acquire_in(struct store_pool *pool, const char *warehouse,
				struct floe_error *err) FLOE_WUR;

/* Moves a borrowed connection to warehouse's catalog (as
 * system_acquire_in). */
void system_use(struct store *s, const char *warehouse);

/* Gives back a connection system_acquire borrowed from pool. */
void system_release(struct store_pool *pool, struct store *s);

struct system_watch;

/*
 * Starts the database watch: a thread that asks the database for a round
 * trip every 250 ms on pool (store_watch_pool_new; borrowed until
 * system_watch_stop), waiting at most timeout_ms. When the database does
 * not answer in time it calls store_stall_begin, and store_stall_end when
 * it answers again. The first check is made before this returns. NULL
 * (logged) when out of memory or no thread can be started.
 */
struct system_watch *system_watch_start(struct store_pool *pool, int timeout_ms);

/* Stops the watch and frees it; sets *w to NULL. NULL-safe. */
void system_watch_stop(struct system_watch **w);

/* The readiness question, from the watch's last check, at once: true when
 * the database answered it and that was at most 250 ms plus the timeout
 * ago; otherwise FE_UNAVAILABLE saying why (it did not answer within the
 * timeout, or the connection's failure). Never touches the database. */
bool system_ready(struct system_watch *w, struct floe_error *err) FLOE_WUR;

#endif
