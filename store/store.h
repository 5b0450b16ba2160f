/*
 * store.h - floe's persistence: every SQL statement floe runs lives behind
 * this interface, as a prepared statement with parameters.
 *
 * A struct store is one PostgreSQL connection with its statements
 * prepared. Worker threads borrow one from a store_pool for the span of a
 * request. A lost connection surfaces as FE_UNAVAILABLE (503) and is
 * re-established on a later acquire.
 */
#ifndef FLOE_STORE_H
#define FLOE_STORE_H

#include <stdbool.h>
#include <jansson.h>

#include "error.h"
#include "ident.h"

struct store;
struct store_pool;

/* A new pool of `size` connections to conninfo, connected lazily.
 * Returns NULL when out of memory. */
struct store_pool *store_pool_new(const char *conninfo, int size);

/* Closes every connection and frees the pool; sets *pool to NULL. */
void store_pool_free(struct store_pool **pool);

/* Borrows a connection, connecting (and preparing statements) when needed.
 * Fails with FE_UNAVAILABLE when the database cannot be reached. */
struct store *store_pool_acquire(struct store_pool *pool,
				 struct floe_error *err) FLOE_WUR;

/* Returns a connection borrowed from pool. */
void store_pool_release(struct store_pool *pool, struct store *s);

/* Applies the numbered migrations not yet recorded, each in its own
 * transaction, under an advisory lock shared by every replica. */
bool store_migrate(const char *conninfo, struct floe_error *err) FLOE_WUR;

/* Creates database dbname through the maintenance connection admin_conninfo
 * unless it exists (used by the embedded PostgreSQL). */
bool store_ensure_database(const char *admin_conninfo, const char *dbname,
			   struct floe_error *err) FLOE_WUR;

/* Round trip to the database. */
bool store_ping(struct store *s, struct floe_error *err) FLOE_WUR;

/* --- namespaces --- */

/* Creates ns with properties (a JSON object of strings, borrowed).
 * FE_ALREADY_EXISTS; FE_NO_SUCH_NAMESPACE when the parent is missing. */
bool store_ns_create(struct store *s, const struct ns_ident *ns,
		     const json_t *properties, struct floe_error *err) FLOE_WUR;

/* Loads the properties of ns into *properties (new reference).
 * FE_NO_SUCH_NAMESPACE. */
bool store_ns_load(struct store *s, const struct ns_ident *ns,
		   json_t **properties, struct floe_error *err) FLOE_WUR;

/* Sets *exists. */
bool store_ns_exists(struct store *s, const struct ns_ident *ns,
		     bool *exists, struct floe_error *err) FLOE_WUR;

/* Lists the children of parent (NULL: the top level) whose levels sort
 * after `after` (NULL: from the start), at most limit (< 0: all), in byte
 * order. *out is a new array of level arrays; *more tells whether more
 * follow. FE_NO_SUCH_NAMESPACE when parent is missing. */
bool store_ns_list(struct store *s, const struct ns_ident *parent,
		   const struct ns_ident *after, long limit,
		   json_t **out, bool *more, struct floe_error *err) FLOE_WUR;

/* Drops ns. FE_NO_SUCH_NAMESPACE; FE_NAMESPACE_NOT_EMPTY when it holds
 * tables or child namespaces. */
bool store_ns_drop(struct store *s, const struct ns_ident *ns,
		   struct floe_error *err) FLOE_WUR;

/* Atomically removes the keys in removals (a JSON array of strings) and
 * sets updates (a JSON object of strings), both borrowed. *old_properties
 * receives the properties before the change (new reference).
 * FE_NO_SUCH_NAMESPACE. */
bool store_ns_update_properties(struct store *s, const struct ns_ident *ns,
				const json_t *removals, const json_t *updates,
				json_t **old_properties,
				struct floe_error *err) FLOE_WUR;

#endif
