/*
 * store_admin.h - the store as the daemon's start-up wiring sees it:
 * session limits, creating and freeing pools, migrations, and the
 * database and role bootstrap of an embedded PostgreSQL.
 *
 * Not for request paths: they borrow connections through store.h.
 */
#ifndef FLOE_STORE_ADMIN_H
#define FLOE_STORE_ADMIN_H

#include <stdbool.h>

#include "error.h"

struct store_pool;

/* Bounds on every database session floe opens (0: none). */
struct store_limits {
	int statement_timeout_ms; /* server side; the client waits this plus a grace */
	int lock_timeout_ms;      /* server side, waiting for a row or table lock */
	int acquire_timeout_ms;   /* waiting for a free connection of a pool */
};

/* Sets the limits for every session opened afterwards. Call once at
 * start-up, before any connection; the values are copied. A statement
 * canceled by either timeout fails with FE_UNAVAILABLE (nothing changed);
 * a database that does not answer within the statement timeout plus a
 * grace has its connection closed, FE_UNAVAILABLE (or, when a COMMIT was
 * in flight, FE_COMMIT_STATE_UNKNOWN). */
void store_set_limits(const struct store_limits *limits);

/* A new pool of `size` connections to conninfo, connected lazily; name
 * ("http", "commit", "publish", "janitor") labels its metrics and log
 * lines (static). Returns NULL when out of memory. */
struct store_pool *store_pool_new(const char *conninfo, int size, const char *name);

/* A pool of one connection for the database watch: a stall neither
 * refuses nor interrupts it, and it gives up connecting after 2 s (not 5).
 * Returns NULL when out of memory. */
struct store_pool *store_watch_pool_new(const char *conninfo);

/* Connects to conninfo once (giving up after 5 s) and disconnects: for a
 * command-line tool, which tells its user why a database cannot be
 * reached. False with FE_UNAVAILABLE carrying libpq's own message (a
 * host, a socket path, a role: not for an HTTP answer). */
bool store_try_connect(const char *conninfo, struct floe_error *err) FLOE_WUR;

/* Closes every connection and frees the pool; sets *pool to NULL. */
void store_pool_free(struct store_pool **pool);

/* Applies the numbered migrations not yet recorded, each in its own
 * transaction, under an advisory lock shared by every replica. A
 * database with a migration recorded that this binary does not have (a
 * newer floe migrated it) is refused before anything is applied:
 * FE_INTERNAL naming the database's newest migration and this binary's. */
bool store_migrate(const char *conninfo, struct floe_error *err) FLOE_WUR;

/* Creates database dbname through the maintenance connection admin_conninfo
 * unless it exists (used by the embedded PostgreSQL). */
bool store_ensure_database(const char *admin_conninfo, const char *dbname,
			   struct floe_error *err) FLOE_WUR;

/* Grants floe's runtime role (the user of runtime_conninfo) what it needs
 * on the objects the owner role (owner_conninfo) created, and on the audit
 * log no more than INSERT and SELECT. Run after the migrations. */
bool store_grant_runtime(const char *owner_conninfo, const char *runtime_conninfo,
			 struct floe_error *err) FLOE_WUR;

/* In the embedded cluster, through a superuser connection to its floe
 * database: creates the roles floe_owner (owns the schema, runs the
 * migrations) and floe_runtime (floe's login) unless they exist, and
 * hands floe_owner every object of the database. */
bool store_embedded_roles(const char *superuser_conninfo, struct floe_error *err) FLOE_WUR;

#endif
