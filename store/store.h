/*
 * store.h - floe's persistence: every SQL statement floe runs lives behind
 * this interface, as a prepared statement with parameters.
 *
 * A struct store is one PostgreSQL connection with its statements
 * prepared. Worker threads borrow one from a store_pool for the span of a
 * request. A lost connection surfaces as FE_UNAVAILABLE (503) and is
 * re-established on a later acquire.
 *
 * This is what the domain uses; creating pools, migrations and the
 * database and role bootstrap are the daemon's start-up (store_admin.h).
 */
#ifndef FLOE_STORE_H
#define FLOE_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <jansson.h>

#include "error.h"
#include "ident.h"

struct gzip_part;

struct store;
struct store_pool;

/* Who makes a change, recorded with it in every commit_log row, audit
 * event and WAP run. Borrowed strings: request_id NULL is none, principal
 * NULL is recorded as "anonymous" (no authenticated principal), client_id
 * NULL as none. */
struct store_actor {
	const char *request_id;
	const char *principal;
	const char *client_id;
};

/* Borrows a connection, connecting (and preparing statements) when needed.
 * Fails with FE_UNAVAILABLE when the database cannot be reached, or when
 * no connection of the pool is free within the acquire timeout. */
struct store *store_pool_acquire(struct store_pool *pool, struct floe_error *err) FLOE_WUR;

/* Returns a connection borrowed from pool. */
void store_pool_release(struct store_pool *pool, struct store *s);

/*
 * Which warehouse's catalog the borrowed connection s reads and writes
 * until it is released: "" (or NULL) the default warehouse's, else the
 * name of a warehouse of --warehouses. Namespaces, and the tables, views,
 * grants, hooks, runs, purges and audit events that belong to them, are
 * each one warehouse's; every statement of s keeps to this one. A borrow
 * starts in the default warehouse. warehouse is borrowed for as long as
 * s is.
 */
void store_use_warehouse(struct store *s, const char *warehouse);

/* The warehouse s was told to use ("" the default). */
const char *store_warehouse(const struct store *s);

/* Round trip to the database. */
bool store_ping(struct store *s, struct floe_error *err) FLOE_WUR;

/* Round trip to the database, waiting at most deadline_ms for the answer
 * (a connection of store_watch_pool_new). False with err set when it
 * fails; *timed_out then tells whether the database did not answer in
 * time (its connection is then closed, and reopened by the next acquire). */
bool store_probe(struct store *s, int deadline_ms, bool *timed_out,
		 struct floe_error *err) FLOE_WUR;

/*
 * The database is stalled: it did not answer a probe within waited_ms.
 * Until store_stall_end, every acquire but the watch pool's fails at once
 * with FE_UNAVAILABLE ("did not answer within waited_ms"), and each
 * statement now waiting on the database is abandoned: its connection is
 * shut down, so it fails as at its own deadline (FE_UNAVAILABLE, or
 * FE_COMMIT_STATE_UNKNOWN for a COMMIT in flight). Thread-safe.
 */
void store_stall_begin(int waited_ms);

/* The database answers again: acquires go through. Thread-safe. */
void store_stall_end(void);

/* --- namespaces --- */

/* Not-found and conflict errors of namespaces and tables are plain kinds
 * with a short message that names nothing: catalog/ words them for the
 * client (ns_word_error, tables_word_error). */

/* Creates ns with properties (a JSON object of strings, borrowed).
 * FE_ALREADY_EXISTS; FE_NO_SUCH_NAMESPACE when the parent is missing. */
bool store_ns_create(struct store *s, const struct ns_ident *ns, const json_t *properties,
		     struct floe_error *err) FLOE_WUR;

/* Loads the properties of ns into *properties (new reference).
 * FE_NO_SUCH_NAMESPACE. */
bool store_ns_load(struct store *s, const struct ns_ident *ns, json_t **properties,
		   struct floe_error *err) FLOE_WUR;

/* Sets *exists. */
bool store_ns_exists(struct store *s, const struct ns_ident *ns, bool *exists,
		     struct floe_error *err) FLOE_WUR;

/* Lists the children of parent (NULL: the top level) whose levels sort
 * after `after` (NULL: from the start), at most limit (< 0: all), in byte
 * order. *rows is a new array of *count namespaces (store_ns_rows_free);
 * *more tells whether more follow. FE_NO_SUCH_NAMESPACE when parent is
 * missing. */
bool store_ns_list(struct store *s, const struct ns_ident *parent, const struct ns_ident *after,
		   long limit, struct ns_ident **rows, size_t *count, bool *more,
		   struct floe_error *err) FLOE_WUR;

/* Clears each of count namespaces and frees the array (NULL is fine). */
void store_ns_rows_free(struct ns_ident *rows, size_t count);

/* Drops ns; *properties receives the properties it had (new reference).
 * FE_NO_SUCH_NAMESPACE; FE_NAMESPACE_NOT_EMPTY when it holds tables or
 * child namespaces. */
bool store_ns_drop(struct store *s, const struct ns_ident *ns, json_t **properties,
		   struct floe_error *err) FLOE_WUR;

/* Atomically removes the keys in removals (a JSON array of strings) and
 * sets updates (a JSON object of strings), both borrowed. *old_properties
 * receives the properties before the change (new reference).
 * FE_NO_SUCH_NAMESPACE. */
bool store_ns_update_properties(struct store *s, const struct ns_ident *ns, const json_t *removals,
				const json_t *updates, json_t **old_properties,
				struct floe_error *err) FLOE_WUR;

/* --- tables --- */

/* One row of the tables relation. */
struct table_row {
	long long id;
	char uuid[40];
	char *metadata_location; /* NULL only for a row being created */
	char *metadata;          /* the current metadata JSON text */
	size_t metadata_len;
	long long version; /* bumped by every commit */
};

/* Frees what a load put into row. */
void store_table_row_clear(struct table_row *row);

/* Loads table name in ns. FE_NO_SUCH_TABLE (also when the namespace is
 * missing: store_ns_exists tells). */
bool store_table_load(struct store *s, const struct ns_ident *ns, const char *name,
		      struct table_row *row, struct floe_error *err) FLOE_WUR;

/* Like store_table_load; with refs_only, row->metadata is the form that
 * keeps only the snapshots refs point at (snapshots=refs). */
bool store_table_load_as(struct store *s, const struct ns_ident *ns, const char *name,
			 bool refs_only, struct table_row *row, struct floe_error *err) FLOE_WUR;

/*
 * loadTable's read: like store_table_load_as, but when the row keeps the
 * deflated form of this version's text (gzip.h), that is *part (new, the
 * caller gzip_part_clear()s it) and row->metadata is empty; otherwise
 * part->data is NULL and row->metadata is the text.
 */
bool store_table_load_gz(struct store *s, const struct ns_ident *ns, const char *name,
			 bool refs_only, struct table_row *row, struct gzip_part *part,
			 struct floe_error *err) FLOE_WUR;

/* The canonical location of table name in ns (*location, caller frees).
 * FE_NO_SUCH_TABLE (also when the namespace is missing). */
bool store_table_location(struct store *s, const struct ns_ident *ns, const char *name,
			  char **location, struct floe_error *err) FLOE_WUR;

/* Sets *exists (false also when the namespace is missing). */
bool store_table_exists(struct store *s, const struct ns_ident *ns, const char *name, bool *exists,
			struct floe_error *err) FLOE_WUR;

/* Inserts a new table at version 1 with its first commit_log row, by
 * who; refs: the refs the commit set, 0x1F-joined (NULL: none known).
 * refs_metadata: the snapshots=refs form, NULL when it equals metadata.
 * FE_ALREADY_EXISTS: the name is taken, or (err->sqlstate 23505) the
 * uuid; FE_NO_SUCH_TABLE when nothing was inserted and no such table
 * exists (the namespace is missing). */
bool store_table_create(struct store *s, const struct ns_ident *ns, const char *name,
			const char *uuid, const char *metadata_location, const char *metadata,
			const char *refs_metadata, const char *table_location,
			const struct store_actor *who, const char *refs,
			struct floe_error *err) FLOE_WUR;

/* Replaces a registered table's pointer (register with overwrite):
 * version bumped, commit_log row written. FE_NO_SUCH_TABLE;
 * FE_ALREADY_EXISTS (err->sqlstate 23505) when the uuid is another's. */
bool store_table_overwrite(struct store *s, const struct ns_ident *ns, const char *name,
			   const char *uuid, const char *metadata_location, const char *metadata,
			   const char *refs_metadata, const char *table_location,
			   const struct store_actor *who, const char *refs,
			   struct floe_error *err) FLOE_WUR;

/*
 * The compare-and-swap of a commit: moves table id from expected_version
 * to expected_version + 1 with the new pointer and metadata, and appends
 * the commit_log row (by who, naming refs as store_table_create does),
 * atomically. *won is false when another writer moved the table first
 * (nothing changed).
 */
bool store_table_cas(struct store *s, long long id, long long expected_version,
		     const char *metadata_location, const char *metadata, const char *refs_metadata,
		     const char *table_location, const char *previous_location,
		     const struct store_actor *who, const char *refs, bool *won,
		     struct floe_error *err) FLOE_WUR;

/*
 * Drops the connection of s and opens a new one (once, within the connect
 * timeout). Used to learn the outcome of a commit whose connection broke
 * while it was in flight. On failure s has no connection; the pool
 * reconnects it on a later acquire.
 */
bool store_reconnect(struct store *s, struct floe_error *err) FLOE_WUR;

/* The change feed and its subscriptions. */
#include "store_feed.h"

/* One commit_log row: a version of a table and the metadata file it made. */
struct commit_row {
	long long version;
	char uuid[40];
	char committed_at[40]; /* RFC 3339, UTC, milliseconds */
	long long committed_at_ms;
	char *metadata_location;
	char *previous_location; /* NULL for a create or register */
	char *principal;
	char *request_id; /* NULL when the request had none */
};

void store_commit_row_clear(struct commit_row *row);
void store_commit_rows_free(struct commit_row *rows, size_t count);

/* The commits of table name in ns, newest first, at most limit of them
 * (*more when there are further ones): only those at or before as_of (a
 * timestamptz text; NULL: any time), of version `version` (< 0: any) and
 * below version before (<= 0: no bound). No commit matching is no row.
 * FE_NO_SUCH_TABLE when the table is missing; FE_BAD_REQUEST when
 * PostgreSQL cannot read as_of as a time. */
bool store_table_commits(struct store *s, const struct ns_ident *ns, const char *name,
			 const char *as_of, long long version, long long before, long limit,
			 struct commit_row **rows, size_t *count, bool *more,
			 struct floe_error *err) FLOE_WUR;

/* What became of a commit whose answer was lost. */
enum store_commit_fate {
	STORE_COMMIT_LANDED,   /* it took effect */
	STORE_COMMIT_ABORTED,  /* proved not to: its transaction rolled back,
				  or is not in this database's history (a
				  failover lost it, and its id is unknown here
				  or was handed out again) */
	STORE_COMMIT_PENDING,  /* its transaction is still in progress: a COMMIT
				 waiting (on a synchronous standby, say) may
				 yet take effect */
	STORE_COMMIT_UNPROVED, /* the database cannot tell (no xid, or one so
				  old its status is gone) and the commit_log
				  does not hold it */
};

/* Asks, on s (a fresh session), what became of transaction xid (from
 * store_xact_id; "" or NULL: unknown), which was to write version
 * `version` of table table_uuid at metadata_location: pg_xact_status
 * decides, with the commit_log row that transaction writes (a committed
 * id without it was handed out again after a failover), and the
 * commit_log alone when the status is gone. Into *fate. */
bool store_commit_landed(struct store *s, const char *xid, const char *table_uuid,
			 long long version, const char *metadata_location,
			 enum store_commit_fate *fate, struct floe_error *err) FLOE_WUR;

/* Names another table (in *other, caller frees; NULL if none) whose
 * location equals, contains or lies inside location (canonical), counting
 * dropped tables whose files wait for their purge; index lookups, not a
 * scan. uuid is the table's own (excluded), or NULL. */
bool store_table_location_clash(struct store *s, const char *location, const char *uuid,
				char **other, struct floe_error *err) FLOE_WUR;

/* The shortest of the n canonical locations at which a table, or a
 * dropped table whose files are not purged yet, has exactly its location
 * (*taken, caller frees; NULL if none); an index lookup. A location
 * holding '\x1f' never matches. */
bool store_location_taken(struct store *s, const char *const *locations, size_t n, char **taken,
			  struct floe_error *err) FLOE_WUR;

/* Like store_table_location_clash over live tables only (the janitor's
 * last look before it purges a location). */
bool store_live_location_clash(struct store *s, const char *location, char **other,
			       struct floe_error *err) FLOE_WUR;

/* Takes the transaction-scoped locks that serialise, across replicas,
 * the check of canonical location with the insert or swap that follows
 * it, against the checks of every location that holds it or lies inside
 * it; checks of disjoint locations do not wait on each other. Only
 * inside store_begin ... store_commit; held until its end. */
bool store_location_lock(struct store *s, const char *location, struct floe_error *err) FLOE_WUR;

/* Where one table keeps its files. */
struct table_location {
	long long id;
	char *location; /* canonical */
};

/* Clears each of count rows and frees the array (NULL is fine). */
void store_table_locations_free(struct table_location *rows, size_t count);

/* The tables with id above after_id, at most limit, in id order: *rows is
 * a new array of *count (store_table_locations_free). */
bool store_table_locations_after(struct store *s, long long after_id, int limit,
				 struct table_location **rows, size_t *count,
				 struct floe_error *err) FLOE_WUR;

/* Lists table names in ns sorting after `after` (NULL: from the start),
 * at most limit (< 0: all). *names is a new array of *count names, one
 * allocation (store_names_free); *more tells whether more follow.
 * FE_NO_SUCH_NAMESPACE. */
bool store_table_list(struct store *s, const struct ns_ident *ns, const char *after, long limit,
		      char ***names, size_t *count, bool *more, struct floe_error *err) FLOE_WUR;

/* Frees each of count names and the array (NULL is fine). */
void store_names_free(char **names, size_t count);

/* Deletes the table; *row receives what it held. With purge, the same
 * statement records its location in purges for the janitor; without it
 * and with keep, it keeps the table in dropped_tables (dropped by `by`,
 * NULL: anonymous) for an undrop. FE_NO_SUCH_TABLE. */
bool store_table_drop(struct store *s, const struct ns_ident *ns, const char *name, bool purge,
		      bool keep, const char *by, struct table_row *row,
		      struct floe_error *err) FLOE_WUR;

/* A table dropped without purge and kept (dropped_tables). */
struct dropped_row {
	long long id; /* its id in tables, which an undrop gives back */
	char uuid[40];
	char dropped_at[40]; /* RFC 3339, UTC */
	long long version;
	char *name; /* listings only */
	char *location;
	char *metadata_location;
	char *metadata; /* store_dropped_find only */
	char *dropped_by;
	/* store_dropped_find only: the table's effective control when it was
	 * dropped, as JSON text (catalog/effective.h); NULL when none was
	 * recorded (a drop by a floe from before migration 0023) */
	char *controls;
};

void store_dropped_row_clear(struct dropped_row *row);
void store_dropped_rows_free(struct dropped_row *rows, size_t count);

/* The newest kept drop of name in ns dropped less than within_s seconds
 * ago, locked until the transaction ends (*found false: none). */
bool store_dropped_find(struct store *s, const struct ns_ident *ns, const char *name, int within_s,
			struct dropped_row *row, bool *found, struct floe_error *err) FLOE_WUR;

/* Records controls (JSON text) as the effective control of kept drop id,
 * in the transaction of its drop; a drop that was not kept has no row and
 * nothing is written. */
bool store_dropped_set_controls(struct store *s, long long id, const char *controls,
				struct floe_error *err) FLOE_WUR;

/* Puts kept drop id back as table name of ns and forgets the kept row.
 * FE_NO_SUCH_NAMESPACE; FE_ALREADY_EXISTS when the name is taken or the
 * uuid registered again (sqlstate 23505). */
bool store_table_undrop(struct store *s, long long id, const struct ns_ident *ns, const char *name,
			struct floe_error *err) FLOE_WUR;

/* The kept drops of ns dropped less than within_s seconds ago, newest
 * first, below id before_id (<= 0: from the newest), at most limit. */
bool store_dropped_list(struct store *s, const struct ns_ident *ns, int within_s,
			long long before_id, long limit, struct dropped_row **rows, size_t *count,
			bool *more, struct floe_error *err) FLOE_WUR;

/* The janitor: removes up to limit kept drops older than older_than_s. */
bool store_dropped_expire(struct store *s, long long older_than_s, int limit, long *deleted,
			  struct floe_error *err) FLOE_WUR;

/* Renames a table, possibly into another namespace. FE_NO_SUCH_TABLE,
 * FE_NO_SUCH_NAMESPACE (destination), FE_ALREADY_EXISTS. */
bool store_table_rename(struct store *s, const struct ns_ident *from_ns, const char *from,
			const struct ns_ident *to_ns, const char *to,
			struct floe_error *err) FLOE_WUR;

/* What holds the name in ns: kind "table" or "view", "" when nothing
 * does (also when the namespace is missing). */
bool store_name_kind(struct store *s, const struct ns_ident *ns, const char *name, char *kind,
		     size_t kindlen, struct floe_error *err) FLOE_WUR;

/*
 * Views (views.c) live in the relation of tables, with kind 'view', so
 * they share its names, its locations and its compare-and-swap
 * (store_table_cas, with refs NULL). Errors as the table functions give
 * them, with FE_NO_SUCH_VIEW for a view that is not there.
 */
bool store_view_load(struct store *s, const struct ns_ident *ns, const char *name,
		     struct table_row *row, struct floe_error *err) FLOE_WUR;

/* Inserts a new view at version 1 with its first commit_log row.
 * FE_ALREADY_EXISTS: the name is taken (store_name_kind says by what), or
 * (err->sqlstate 23505) the uuid; FE_NO_SUCH_VIEW when the namespace is
 * missing. */
bool store_view_create(struct store *s, const struct ns_ident *ns, const char *name,
		       const char *uuid, const char *metadata_location, const char *metadata,
		       const char *view_location, const struct store_actor *who,
		       struct floe_error *err) FLOE_WUR;

/* Deletes the view; *row receives what it held (its files stay).
 * FE_NO_SUCH_VIEW. */
bool store_view_drop(struct store *s, const struct ns_ident *ns, const char *name,
		     struct table_row *row, struct floe_error *err) FLOE_WUR;

/* Renames a view, possibly into another namespace. FE_NO_SUCH_VIEW,
 * FE_NO_SUCH_NAMESPACE (destination), FE_ALREADY_EXISTS. */
bool store_view_rename(struct store *s, const struct ns_ident *from_ns, const char *from,
		       const struct ns_ident *to_ns, const char *to,
		       struct floe_error *err) FLOE_WUR;

/* View names as store_table_list gives table names; _visible as
 * store_table_list_visible. */
bool store_view_list(struct store *s, const struct ns_ident *ns, const char *after, long limit,
		     char ***names, size_t *count, bool *more, struct floe_error *err) FLOE_WUR;
bool store_view_list_visible(struct store *s, const long long *role_ids, size_t nroles,
			     const struct ns_ident *ns, const char *after, long limit,
			     char ***names, size_t *count, bool *more,
			     struct floe_error *err) FLOE_WUR;

/* Keeps a metrics report (a JSON text) sent for a table. */
bool store_metrics_insert(struct store *s, const struct ns_ident *ns, const char *name,
			  const char *report, struct floe_error *err) FLOE_WUR;

/* Deletes at most limit metrics reports older than older_than_days. */
bool store_metrics_expire(struct store *s, long long older_than_days, int limit, long *deleted,
			  struct floe_error *err) FLOE_WUR;

/* Moves at most limit runs still "auditing" past_lease_s after their
 * audit lease ran out (the floe auditing them stopped) to "audit-failed",
 * each with a wap.lease-expired audit event, atomically. */
bool store_run_expire_stale(struct store *s, long long past_lease_s, int limit, long *expired,
			    struct floe_error *err) FLOE_WUR;

/* --- purges (dropped tables whose files wait for the janitor) --- */

struct purge_row {
	long long id;
	char *location; /* canonical */
	char uuid[40];
	int attempts;
	/* Filled by store_purge_list only: */
	char dropped_at[40]; /* RFC 3339 UTC */
	char *last_error;    /* NULL when no attempt failed */
	char state[16];      /* "pending" or "failed" */
};

/* Frees what row holds and zeroes it. */
void store_purge_row_clear(struct purge_row *row);

/* Clears each of count rows and frees the array (NULL is fine). */
void store_purge_rows_free(struct purge_row *rows, size_t count);

/* Leases the next due pending purge to owner for lease_s seconds, in a
 * statement of its own (no transaction may be open: the files are
 * removed after it, outside any). A row whose lease ran out, or whose
 * janitor's database session is gone (its floe stopped), is taken over.
 * *found false when none is due. */
bool store_purge_claim(struct store *s, const char *owner, int lease_s, struct purge_row *row,
		       bool *found, struct floe_error *err) FLOE_WUR;

/* The purge is done: its row goes (and the location is free again), if
 * owner still holds its lease; *kept false when it did not any more. */
bool store_purge_done(struct store *s, long long id, const char *owner, bool *kept,
		      struct floe_error *err) FLOE_WUR;

/* Records a failed attempt under owner's lease and ends it: retried in
 * retry_in_s, or state "failed" once max_attempts are spent or when
 * permanent. *attempts and *gave_up tell the result; *kept false when
 * the lease was lost (nothing recorded). */
bool store_purge_failed(struct store *s, long long id, const char *owner, const char *error,
			int max_attempts, int retry_in_s, bool permanent, int *attempts,
			bool *gave_up, bool *kept, struct floe_error *err) FLOE_WUR;

/* The oldest limit purges, oldest first: *rows is a new array of *count
 * (store_purge_rows_free). */
bool store_purge_list(struct store *s, int limit, struct purge_row **rows, size_t *count,
		      struct floe_error *err) FLOE_WUR;

/* --- transactions --- */

bool store_begin(struct store *s, struct floe_error *err) FLOE_WUR;
/* Commits the open transaction, having learnt its xid first (one more
 * round trip unless a statement of the transaction returned it). A COMMIT
 * whose answer is lost is FE_COMMIT_STATE_UNKNOWN with FO_UNKNOWN: settle
 * it with store_xact_id and store_commit_landed. */
bool store_commit(struct store *s, struct floe_error *err) FLOE_WUR;

/* Writes into xid (len bytes; 24 suffice) the transaction id (xid8, full
 * 64 bits, as text) of the transaction last committed or sent COMMIT on
 * s; "" when it wrote nothing. Read it before anything else runs on s. */
void store_xact_id(const struct store *s, char *xid, size_t len);
/* Rolls back; never fails (a broken connection is reset later). */
void store_rollback(struct store *s);

/* --- idempotency keys --- */

/*
 * Claims key for a request (route says which) on behalf of owner (a token
 * unique to this request) for lease_s seconds, recording s's database
 * session (pid, backend_start) as the claimant. Returns true with *claimed
 * when this request owns it: the key is new, older than lifetime_s, or
 * its claim is unanswered and either ran out of lease or names a session
 * PostgreSQL no longer has (the floe that held it died). Otherwise *other_route is set when the key was used for
 * another route or body, else *status and *response (caller frees) hold
 * the stored answer, or *status is 0 while the first request is still
 * running.
 */
bool store_idem_claim(struct store *s, const char *key, const char *route, const char *owner,
		      int lifetime_s, int lease_s, bool *claimed, bool *other_route, int *status,
		      char **response, struct floe_error *err) FLOE_WUR;

/* The answer stored under key for route: *status 0 when there is none
 * (no such key, another route's, or still running); *response (caller
 * frees) may be NULL. */
bool store_idem_answer(struct store *s, const char *key, const char *route, int *status,
		       char **response, struct floe_error *err) FLOE_WUR;

/* Records the final answer of a key owner still holds; *recorded is false
 * when the key is no longer its (already answered, or claimed again after
 * the lease ran out). Run inside a commit's transaction, that makes the
 * answer and the commit one. */
bool store_idem_finish(struct store *s, const char *key, const char *owner, int status,
		       const char *response, bool *recorded, struct floe_error *err) FLOE_WUR;

/* Releases a key owner claimed and did not answer (a 5xx is not replayed). */
void store_idem_release(struct store *s, const char *key, const char *owner);

/* Deletes at most limit keys claimed more than older_than_s ago. */
bool store_idem_expire(struct store *s, long long older_than_s, int limit, long *deleted,
		       struct floe_error *err) FLOE_WUR;

/* --- write-audit-publish --- */

/* *where names the nearest namespace of ns (itself or an ancestor) with
 * property=true (caller frees), or NULL when none has it: floe's control
 * properties (floe.wap.required and the others of catalog/policy.h). */
bool store_ns_property_true(struct store *s, const struct ns_ident *ns, const char *property,
			    char **where, struct floe_error *err) FLOE_WUR;

/* One audit hook as stored; its secret stays in the database. */
struct hook_row {
	char id[40];
	char *name;
	char *url;
	bool has_secret;
	struct ns_ident scope_ns; /* no levels: every table */
	char *scope_table;        /* NULL: all of scope_ns */
	long long timeout_ms;
	char created_at[40]; /* RFC 3339 UTC */
};

/* Frees what row holds and zeroes it. */
void store_hook_row_clear(struct hook_row *row);

/* Clears each of count rows and frees the array (NULL is fine). */
void store_hook_rows_free(struct hook_row *rows, size_t count);

/* Audit hooks. scope_ns NULL or without levels: every table. secret is
 * the sealed secret (catalog/hooksecrets.h), never the plain one; NULL:
 * the hook has none. */
bool store_hook_insert(struct store *s, const char *id, const char *name, const char *url,
		       const char *secret, const struct ns_ident *scope_ns, const char *scope_table,
		       long timeout_ms, struct floe_error *err) FLOE_WUR;
/* Every hook, oldest first: *rows is a new array of *count
 * (store_hook_rows_free). */
bool store_hook_list(struct store *s, struct hook_row **rows, size_t *count,
		     struct floe_error *err) FLOE_WUR;
/* *found is false when there is no such hook; else *row is filled
 * (store_hook_row_clear). */
bool store_hook_get(struct store *s, const char *id, struct hook_row *row, bool *found,
		    struct floe_error *err) FLOE_WUR;
bool store_hook_delete(struct store *s, const char *id, bool *deleted,
		       struct floe_error *err) FLOE_WUR;
/* Takes the transaction-scoped lock that serialises hook deletions. */
bool store_hook_lock(struct store *s, struct floe_error *err) FLOE_WUR;
/* *target names (caller frees) the first protected namespace or table
 * that hook id covers, and *property (caller frees) the control property
 * that protects it: a namespace is protected when it or a namespace above
 * sets floe.wap.required=true or floe.wap.release-required=true, a table
 * when it does or its namespace is. Both NULL when the hook covers none. */
bool store_hook_guards(struct store *s, const char *id, char **target, char **property,
		       struct floe_error *err) FLOE_WUR;
/* A hook to call for a table, with its secret. */
struct hook_target {
	char id[40];
	char *name;
	char *url;
	char *secret; /* NULL: the calls are not signed */
	long long timeout_ms;
	/* secret is sealed; false: the plain text a floe from before
	 * migration 0010 stored, until a start seals it */
	bool secret_sealed;
};

/* Clears each of count targets and frees the array (NULL is fine). */
void store_hook_targets_free(struct hook_target *rows, size_t count);

/* The hooks whose scope covers table in ns, oldest first: *rows is a new
 * array of *count (store_hook_targets_free). */
bool store_hooks_in_scope(struct store *s, const struct ns_ident *ns, const char *table,
			  struct hook_target **rows, size_t *count,
			  struct floe_error *err) FLOE_WUR;

/* The hooks whose secret is stored in plain text (secret_sealed false),
 * by id: only id and secret are filled (store_hook_targets_free). */
bool store_hook_plain_secrets(struct store *s, struct hook_target **rows, size_t *count,
			      struct floe_error *err) FLOE_WUR;

/* Replaces hook id's plain secret plain by sealed, unless the row no
 * longer holds plain text or that text (another floe sealed it first):
 * *done says whether this call changed it. */
bool store_hook_seal_secret(struct store *s, const char *id, const char *plain, const char *sealed,
			    bool *done, struct floe_error *err) FLOE_WUR;

/* One write-audit-publish run. */
struct run_row {
	char id[40];
	char table_uuid[40];
	struct ns_ident ns;
	char *table_name;
	char *branch;
	char *state;
	bool has_base, has_audited, has_published; /* the snapshot ids below */
	long long base_snapshot_id;
	long long audited_snapshot_id;
	long long published_snapshot_id;
	char *audits;        /* JSON text of the hooks' verdicts */
	char created_at[40]; /* RFC 3339 UTC */
	char updated_at[40];
	long long seq;             /* listing order */
	char *staged_by;           /* "anonymous" when no principal staged it */
	char *staged_client_id;    /* NULL when none */
	char *published_by;        /* NULL until published */
	char *published_client_id; /* NULL when none */
	char *abandoned_by;        /* NULL unless abandoned */
	char *abandoned_client_id; /* NULL when none */
	/* JSON text: the distinct principals of the commits that set the
	 * run's branch after it was staged (adopted: all recorded) and not
	 * after it was published or abandoned, sorted, at most 100: for
	 * display only, store_run_acted decides. */
	char *written_by;
	char release_id[40]; /* "" unless the run is a release's member */
};

/* Frees what row holds and zeroes it. */
void store_run_row_clear(struct run_row *row);

/* Clears each of count rows and frees the array (NULL is fine). */
void store_run_rows_free(struct run_row *rows, size_t count);

/* WAP runs: staged by who, a member of release_id (NULL: of none). A
 * run that made its branch (not adopted) is inserted in the transaction
 * of the commit that made it, after it: the commits to the branch after
 * that one are its writes. */
bool store_run_insert(struct store *s, const char *id, const char *table_uuid,
		      const struct ns_ident *ns, const char *table, const char *branch,
		      long long base_snapshot, bool adopted, const char *release_id,
		      const struct store_actor *who, struct floe_error *err) FLOE_WUR;
/* The member runs of release_id, ordered by namespace and table name, at
 * most limit: *rows is a new array of *count (store_run_rows_free); *more
 * tells whether more follow. */
bool store_run_members(struct store *s, const char *release_id, long limit, struct run_row **rows,
		       size_t *count, bool *more, struct floe_error *err) FLOE_WUR;
/* *found is false when there is no such run; else *row is filled
 * (store_run_row_clear). */
bool store_run_get(struct store *s, const char *id, struct run_row *row, bool *found,
		   struct floe_error *err) FLOE_WUR;
/* Newest first, runs with seq below before_seq (0: from the newest), at
 * most limit (< 0: all): *rows is a new array of *count
 * (store_run_rows_free); *more tells whether more follow. */
bool store_run_list(struct store *s, const char *table_uuid, long long before_seq, long limit,
		    struct run_row **rows, size_t *count, bool *more,
		    struct floe_error *err) FLOE_WUR;
/* Whether principal staged run id (*staged) and whether any commit of
 * principal wrote to the run (*wrote: a commit counted as written_by
 * counts them, over every writer, not only the 100 written_by shows).
 * Both false when there is no such run. */
bool store_run_acted(struct store *s, const char *id, const char *principal, bool *staged,
		     bool *wrote, struct floe_error *err) FLOE_WUR;
/* Moves run id to to_state if its state is one of from_states (comma
 * separated; "auditing-stale" matches a run whose audit lease ran out:
 * the floe auditing it stopped). audited/published < 0 and audits NULL
 * leave those as they are; lease_ms and lease_owner (a UUID) are the
 * lease of a move to "auditing". A move out of "auditing" happens only
 * while lease_owner still holds the lease (a run taken over by another
 * publish is not this one's to finish). *moved is false when the state
 * or the lease did not match. A move to "published" or "abandoned"
 * records who (may be NULL: anonymous) as the one who did it. */
bool store_run_transition(struct store *s, const char *id, const char *from_states,
			  const char *to_state, long long audited, long long published,
			  const json_t *audits, long lease_ms, const char *lease_owner,
			  const struct store_actor *who, bool *moved,
			  struct floe_error *err) FLOE_WUR;

/* One release: write-audit-publish over many tables (migration 0021). */
struct release_row {
	char id[40];
	char *branch;
	char *state;
	char *audits;        /* JSON text of the hooks' verdicts */
	char created_at[40]; /* RFC 3339 UTC */
	char updated_at[40];
	long long seq;      /* listing order */
	char *staged_by;    /* "anonymous" when no principal staged it */
	char *published_by; /* NULL until published */
	char *abandoned_by; /* NULL unless abandoned */
};

/* Frees what row holds and zeroes it. */
void store_release_row_clear(struct release_row *row);

/* Clears each of count rows and frees the array (NULL is fine). */
void store_release_rows_free(struct release_row *rows, size_t count);

/* A new release id of the handle's warehouse, staged by who, its members
 * staged on branch. */
bool store_release_insert(struct store *s, const char *id, const char *branch,
			  const struct store_actor *who, struct floe_error *err) FLOE_WUR;
/* *found is false when the handle's warehouse has no release id; else
 * *row is filled (store_release_row_clear). */
bool store_release_get(struct store *s, const char *id, struct release_row *row, bool *found,
		       struct floe_error *err) FLOE_WUR;
/* Newest first, the releases of the handle's warehouse with seq below
 * before_seq (0: from the newest), at most limit: *rows is a new array of
 * *count (store_release_rows_free); *more tells whether more follow. */
bool store_release_list(struct store *s, long long before_seq, long limit,
			struct release_row **rows, size_t *count, bool *more,
			struct floe_error *err) FLOE_WUR;
/* store_run_transition's rules for a release (its audits, lease and
 * who), with FOR UPDATE on its row: a transaction that moved it holds it
 * until it ends. */
bool store_release_transition(struct store *s, const char *id, const char *from_states,
			      const char *to_state, const json_t *audits, long lease_ms,
			      const char *lease_owner, const struct store_actor *who, bool *moved,
			      struct floe_error *err) FLOE_WUR;
/* Moves at most limit releases still "auditing" past_lease_s after their
 * lease ran out to "audit-failed", with a release.lease-expired event
 * each; *expired is how many. */
bool store_release_expire_stale(struct store *s, long long past_lease_s, int limit, long *expired,
				struct floe_error *err) FLOE_WUR;
/* The tables (not views) in ns and every namespace below it, ordered by
 * namespace then name, at most limit: *names is a new array of *count
 * strings "level\x1flevel\x1ename" (store_names_free); *more tells
 * whether more follow. */
bool store_tables_below(struct store *s, const struct ns_ident *ns, long limit, char ***names,
			size_t *count, bool *more, struct floe_error *err) FLOE_WUR;

/* The audit log (append-only), an event by who. An event that cannot be
 * written is FE_UNAVAILABLE: the change it records must be rolled back
 * with it. */
bool store_event_insert(struct store *s, const char *event, const struct store_actor *who,
			const struct ns_ident *ns, const char *table, const char *run_id,
			const json_t *details, struct floe_error *err) FLOE_WUR;

/* The newest drop of the table uuid the audit log records, in any
 * warehouse: *found, and *controls (caller frees) the table's effective
 * control then, as JSON text (catalog/effective.h), NULL when that drop
 * recorded none (a floe from before the record). */
bool store_event_dropped_controls(struct store *s, const char *uuid, bool *found, char **controls,
				  struct floe_error *err) FLOE_WUR;
/* One event of the audit log. */
struct event_row {
	long long id;
	char at[40]; /* RFC 3339 UTC */
	char *event;
	char *principal;
	char *client_id;          /* NULL when none */
	char *request_id;         /* NULL when none */
	struct ns_ident ns;       /* no levels: none */
	char *table;              /* NULL when none */
	char *run_id;             /* NULL when none */
	char *details;            /* JSON text */
	char xid[24];             /* its transaction, for the paging cursor */
	long long chain_position; /* its link in the audit chain; 0: none */
	char chain_hash[65];      /* that link's hash (hex); "": none */
};

/* Frees what row holds and zeroes it. */
void store_event_row_clear(struct event_row *row);

/* Clears each of count rows and frees the array (NULL is fine). */
void store_event_rows_free(struct event_row *rows, size_t count);

/* Events after the cursor (after_xid, after_id) in (xid, id) order, only
 * of transactions older than every transaction still running: that set
 * no longer grows, so paging it skips nothing. after_xid NULL: "0". At
 * most limit (< 0: all): *rows is a new array of *count
 * (store_event_rows_free); *more tells whether more follow.
 * FE_BAD_REQUEST (a plain message) when since is no timestamp. */
bool store_event_list(struct store *s, const char *after_xid, long long after_id,
		      const struct ns_ident *ns, const char *table, const char *run_id,
		      const char *since, long limit, struct event_row **rows, size_t *count,
		      bool *more, struct floe_error *err) FLOE_WUR;

/* Where a reader of the audit log at pos (a page token's) stands on this
 * database, as store_feed_position is for the change feed: *here filled,
 * *verdict whether paging on from pos misses nothing after a failover. */
bool store_event_position(struct store *s, const struct feed_position *pos, struct feed_here *here,
			  enum feed_verdict *verdict, struct floe_error *err) FLOE_WUR;

/* --- the audit trail: the hash chain and its checkpoints (trail.c) --- */

/* The fields of an audit event the chain covers, in canonical order. */
enum {
	CHAIN_F_ID,
	CHAIN_F_AT,
	CHAIN_F_EVENT,
	CHAIN_F_PRINCIPAL,
	CHAIN_F_CLIENT_ID,
	CHAIN_F_REQUEST_ID,
	CHAIN_F_NAMESPACE,
	CHAIN_F_TABLE,
	CHAIN_F_RUN_ID,
	CHAIN_F_DETAILS,
	CHAIN_FIELDS
};

/* One link of the chain and the event it names, each field the exact
 * text stored (NULL: NULL, or no event row at all when !present). */
struct chain_row {
	long long position;
	char hash[65]; /* hex */
	long long event_id;
	bool present;
	char *f[CHAIN_FIELDS];
};

void store_chain_row_clear(void *row);
void store_chain_rows_free(struct chain_row *rows, size_t count);

/* Links after position after, in order, at most limit: *rows is a new
 * array of *count (store_chain_rows_free); *more tells whether more
 * follow. */
bool store_chain_page(struct store *s, long long after, long limit, struct chain_row **rows,
		      size_t *count, bool *more, struct floe_error *err) FLOE_WUR;

/* Ids of at most limit events that have no link in the chain, in id
 * order, into ids (room for limit). */
bool store_chain_unlinked(struct store *s, long limit, long long *ids, size_t *count,
			  struct floe_error *err) FLOE_WUR;

/* The chain's head: its last position (0: empty) and hash (hex). */
bool store_chain_head(struct store *s, long long *position, char hash[65],
		      struct floe_error *err) FLOE_WUR;

/* A signed checkpoint of the chain; texts are hex where binary. */
struct checkpoint_row {
	long long id;
	long long position;
	char hash[65];
	char signed_at[40];
	char key_id[40];
	char signature[160];
};

/* Records cp (its id ignored); *inserted false when that key already
 * signed that position, else *id is the new row's. */
bool store_checkpoint_insert(struct store *s, const struct checkpoint_row *cp, bool *inserted,
			     long long *id, struct floe_error *err) FLOE_WUR;

/* Checkpoints after id after_id, oldest first, at most limit (< 0: all):
 * *rows a new array of *count (free()); *more whether more follow. */
bool store_checkpoint_list(struct store *s, long long after_id, long limit,
			   struct checkpoint_row **rows, size_t *count, bool *more,
			   struct floe_error *err) FLOE_WUR;

/* Principals, roles and grants. */
#include "store_identity.h"

/* --- notifications (listen.c): for the caches that must forget what
 * another session changed --- */

struct store_listener;

/*
 * A session of its own to conninfo that listens on channel (a lower-case
 * identifier): NULL with err set (FE_UNAVAILABLE) when it cannot connect
 * or listen. Free with store_listener_free.
 */
struct store_listener *store_listen(const char *conninfo, const char *channel,
				    struct floe_error *err) FLOE_WUR;

/*
 * Waits up to timeout_ms for notifications and calls on_notify with each
 * one's payload (borrowed for the call). Returns how many came (0: none
 * within the time), or -1 when the session is lost: then nothing said
 * about the time since the last wait can be trusted, and the caller
 * opens a new listener.
 */
int store_listener_wait(struct store_listener *l, int timeout_ms,
			void (*on_notify)(void *arg, const char *payload), void *arg);

/* Closes the session; NULL is fine. */
void store_listener_free(struct store_listener *l);

#endif
