/*
 * tablewrite.h - the steps of writing a table that table.c (create,
 * register) and commit.c (the commit loop, transactions) share: location
 * rules, the metadata text, the answer under an Idempotency-Key, and
 * settling a commit whose connection broke. Defined in table.c; internal
 * to catalog/ (server/ uses table.h).
 */
#ifndef FLOE_TABLEWRITE_H
#define FLOE_TABLEWRITE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

#include "error.h"
#include "ident.h"
#include "table.h"

/* The wall clock in milliseconds (Iceberg timestamps). */
int64_t table_now_ms(void);

/*
 * Settles a commit whose connection broke while it was in flight: once
 * the database answers again (within a bounded wait), the status of the
 * transaction whose COMMIT was lost (store_xact_id, asked before anything
 * else runs on s) says whether version `version` of table uuid is the
 * file at location. Returns true when that is proved, with *landed; false
 * when the database stayed away or the transaction is still in progress
 * (a COMMIT waiting on a synchronous standby): the outcome is unknown,
 * the file must be kept, and the commit is handed to env->unsettled for
 * the janitor.
 */
bool table_settle_commit(struct store *s, const struct table_env *env, const char *uuid,
			 long long version, const char *location, bool *landed);

/* After table_settle_commit found that a commit did not land: fills err
 * with FE_UNAVAILABLE, outcome FO_FAILED ("nothing was committed, retry").
 * Returns false. */
bool table_not_landed(struct floe_error *err);

/* A table location floe may use: inside the warehouse (following no
 * symbolic link), of a length it can write under, and neither holding nor
 * held by another table's location. uuid: the table's own, or NULL; name:
 * the table's name for a create (a clash with a table of that name is
 * FE_ALREADY_EXISTS), or NULL. Else FE_BAD_REQUEST. An early answer only:
 * table_location_claim decides. */
bool table_location_usable(struct store *s, const struct table_env *env, const struct ns_ident *ns,
			   const char *name, const char *location, const char *uuid,
			   struct floe_error *err) FLOE_WUR;

/* The no-overlap rule, decided inside the transaction that then inserts or
 * swaps the row, under the lock every replica takes for it. key: the
 * canonical location. Errors as table_location_usable, or the store's. */
bool table_location_claim(struct store *s, const struct ns_ident *ns, const char *name,
			  const char *location, const char *key, const char *uuid,
			  struct floe_error *err) FLOE_WUR;

/* m as compact JSON text (caller frees) and its length, or NULL with
 * FE_INTERNAL. */
char *table_dump(const json_t *m, size_t *len, struct floe_error *err) FLOE_WUR;

/* The snapshots=refs form of m as text (caller frees), or NULL when it
 * would be the same as m. */
char *table_refs_text(const json_t *m);

/* Writes metadata m (borrowed) as the table's first metadata file and
 * creates its row (version 1), in one transaction with the location claim
 * and, under an Idempotency-Key, the answer (with_config: a
 * LoadTableResult). *location_out: the file's URL (caller frees). A file
 * written for a row that was not created is removed, unless the outcome is
 * unknown. */
bool table_create_row(struct store *s, const struct table_env *env, const struct ns_ident *ns,
		      const char *name, json_t *m, bool with_config, char **location_out,
		      struct floe_error *err) FLOE_WUR;

/* How many rounds a commit makes before it gives up on lost races
 * (commit.c, view.c). */
#define COMMIT_MAX_ATTEMPTS 40

/* Sleeps a random time that grows with attempt, so writers that collided
 * spread out (commit.c). */
void commit_backoff(int attempt);

struct table_row;

/*
 * After the swap of a commit to row (or the COMMIT of its transaction)
 * failed (commit.c): a known failure rolls back the transaction the swap
 * was in, if any, and then removes loc, the file written for it
 * (and sets *lost when PostgreSQL rolled back a deadlock or serialization
 * failure, which another round may get past); an unknown outcome is
 * settled from the commit log. Returns true when the swap landed after all
 * (err cleared).
 */
bool table_swap_failed(struct store *s, const struct table_env *env, const struct table_row *row,
		       const char *loc, bool *lost, struct floe_error *err);

/* A location (a metadata file's or an object's) floe may write below:
 * inside the warehouse, following no symbolic link, of a length it can
 * write under (table.c). FE_BAD_REQUEST. */
bool table_location_writable(const struct table_env *env, const char *location,
			     struct floe_error *err) FLOE_WUR;

/* The location a new object named name gets in ns when its create names
 * none: <namespace location>/<name>, or <that>-<uuid> when a table or a
 * dropped table's files hold it (table.c). A new string, or NULL with the
 * store's error or FE_INTERNAL. */
char *table_default_location(struct store *s, const struct table_env *env,
			     const struct ns_ident *ns, const char *name, const char *uuid,
			     struct floe_error *err) FLOE_WUR;

#endif
