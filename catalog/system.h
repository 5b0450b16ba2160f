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

/* True when a connection of pool answers a round trip; otherwise
 * FE_UNAVAILABLE, whatever failed. */
bool system_ready(struct store_pool *pool, struct floe_error *err) FLOE_WUR;

#endif
