/*
 * store_internal.h - what the files of store/ share among themselves and
 * nobody else sees: the connection, the statement registries, running a
 * prepared statement, and reading its columns.
 *
 * Each relation's file keeps its own statements (a registry); the pool
 * prepares every registry on every connection it opens.
 */
#ifndef FLOE_STORE_INTERNAL_H
#define FLOE_STORE_INTERNAL_H

#include <stdbool.h>
#include <pthread.h>
#include <stddef.h>
#include <libpq-fe.h>

#include "error.h"
#include "ident.h"
#include "store_feed.h"

/* The namespace levels parameter, as an expression: identifiers cross
 * into SQL as one text parameter with the levels joined by 0x1F (which no
 * valid level contains) and are split by string_to_array on the server,
 * so no value is ever formatted into SQL. */
#define LEVELS(p) "string_to_array(" p "::text, E'\\x1f')::text[] COLLATE \"C\""

/* A timestamp column as RFC 3339 UTC text. */
/* The namespace n (an alias) of the handle's warehouse, the parameter p
 * holding s->warehouse. */
#define IN_WH(n, p) n ".warehouse = " p "::text"

/* The details an audit event of warehouse wh (a text parameter) adds:
 * {"warehouse": wh} for a further warehouse, nothing for the default. */
#define EVENT_WAREHOUSE(wh)                              \
	"(CASE WHEN " wh "::text = '' THEN '{}'::jsonb " \
	"ELSE jsonb_build_object('warehouse', " wh "::text) END)"

#define TS(c) "to_char(" c " AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')"

/* --- positions in a log kept in (xid, id) order (feed.c) --- */

/* This database's identity: its system identifier (kept by every standby
 * made from it) and the timeline WAL is written on now (a promotion
 * starts a new one; the control file's copy lags until a checkpoint).
 * Only a primary answers: a standby has no insertion timeline. */
#define FEED_HERE                                                                             \
	"here AS (SELECT s.system_identifier::text AS sysid, "                                \
	"  ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::int AS tl " \
	"  FROM pg_control_system() s)"

/* Where a reader of the log kept in relation rel (its columns xid and id)
 * stands on this database. $1/$2: its position (xid, id); $3/$4: the
 * system identifier and timeline it was issued on (NULL: a token from
 * before they were part of it, taken as of this timeline). Answers this
 * database's identity and the verdict: ok; beyond (a position this
 * database has not reached: a lost future); other (another database);
 * lost (an earlier timeline's position past the switch, or an event no
 * longer here). A position before every event of a transaction (id 0:
 * where a subscription starts, or the start) names no event; its
 * transaction id alone places it. The timelines are feed_timelines'
 * (migration 0032). */
#define POSITION_VERDICT(rel)                                                            \
	"WITH " FEED_HERE " "                                                            \
	"SELECT h.sysid, h.tl, CASE "                                                    \
	"  WHEN $1::xid8 >= pg_snapshot_xmax(pg_current_snapshot()) THEN 'beyond' "      \
	"  WHEN $3::text IS NULL THEN 'ok' "                                             \
	"  WHEN $3::text <> h.sysid THEN 'other' "                                       \
	"  WHEN $4::int > h.tl THEN 'beyond' "                                           \
	"  WHEN $4::int = h.tl THEN 'ok' "                                               \
	"  WHEN $1::xid8 = '0'::xid8 AND $2::bigint = 0 THEN 'ok' "                      \
	"  WHEN $1::xid8 >= (SELECT min(f.first_xid) FROM feed_timelines f "             \
	"    WHERE f.system_identifier = h.sysid AND f.timeline > $4::int) THEN 'lost' " \
	"  WHEN $2::bigint > 0 AND NOT EXISTS (SELECT 1 FROM " rel " e "                 \
	"    WHERE e.xid = $1::xid8 AND e.id = $2::bigint) THEN 'lost' "                 \
	"  ELSE 'ok' END "                                                               \
	"FROM here h"

/* One prepared statement: its name on the connection and its SQL. */
struct store_statement {
	const char *name;
	const char *sql;
};

struct store;

/* The statements of one file of store/. */
struct store_statements {
	const struct store_statement *list;
	size_t count;
	/* NULL, or what a relation's file runs on every new connection once
	 * the statements are prepared, before its first request (false, err
	 * set: the connection is not used). */
	bool (*on_connect)(struct store *s, struct floe_error *err);
};

/* Runs every registry's on_connect on s, in the registries' order. */
bool store_on_connect(struct store *s, struct floe_error *err) FLOE_WUR;

extern const struct store_statements store_pool_statements;
extern const struct store_statements store_ns_statements;
extern const struct store_statements store_table_statements;
extern const struct store_statements store_purge_statements;
extern const struct store_statements store_metrics_statements;
extern const struct store_statements store_idem_statements;
extern const struct store_statements store_hook_statements;
extern const struct store_statements store_run_statements;
extern const struct store_statements store_release_statements;
extern const struct store_statements store_event_statements;
extern const struct store_statements store_trail_statements;
extern const struct store_statements store_principal_statements;
extern const struct store_statements store_role_statements;
extern const struct store_statements store_grant_statements;
extern const struct store_statements store_feed_statements;
extern const struct store_statements store_sub_statements;

struct store_pool;

/* One connection of a pool. */
struct store {
	PGconn *conn;
	const char *conninfo;    /* the pool's */
	struct store_pool *pool; /* the pool it belongs to */
	bool busy;
	int index;
	/* The socket a statement of this connection is waiting on, -1 when
	 * none, and whether a stall of the database (store_stall_begin) shut
	 * it down; both under wait_mu, so the socket is never shut down after
	 * its owner closed it. */
	pthread_mutex_t wait_mu;
	int waiting_fd;
	bool interrupted;
	char sqlstate[6]; /* of the last failed statement, "" if none */
	/* Whose catalog the borrower reads and writes (store_use_warehouse):
	 * "" the default warehouse's; never NULL; borrowed. */
	const char *warehouse;
	/* The transaction id (xid8, as text) of the transaction last sent
	 * COMMIT on this handle, learnt before the COMMIT went out: a
	 * commit whose answer is lost is settled by it (store_xact_id). ""
	 * when the transaction wrote nothing or none was begun. Kept across
	 * store_reconnect. */
	char xid[24];
	/* BEGIN ran and no COMMIT, ROLLBACK or lost connection ended it yet:
	 * the thread's txguard counts it. */
	bool in_tx;
};

/* --- connections (pool.c) --- */

/* Opens one session to conninfo; bounded sessions get floe's statement
 * and lock timeouts. NULL with err set (FE_UNAVAILABLE) on failure. */
PGconn *store_connect_as(const char *conninfo, bool bounded, struct floe_error *err);

/* store_connect_as, bounded. */
PGconn *store_connect(const char *conninfo, struct floe_error *err);

/*
 * Runs a prepared statement. Returns the result (caller PQclear()s it) or
 * NULL with err set and its SQLSTATE and outcome filled in (see
 * store_classify); the SQLSTATE is also kept in s->sqlstate for the
 * caller to map (unique violations and the like).
 */
PGresult *store_exec(struct store *s, const struct store_statement *st, int nparams,
		     const char *const *params, struct floe_error *err);

/* store_exec with the columns in binary format: text columns come as
 * their bytes, bytea without hex; any other column must be cast to text
 * in the SQL. */
PGresult *store_exec_binary(struct store *s, const struct store_statement *st, int nparams,
			    const char *const *params, struct floe_error *err);

/* Records xid (the text of a pg_current_xact_id() a statement of the
 * open transaction returned) as s->xid, so that store_commit need not ask
 * for it. NULL or "" is ignored. */
void store_note_xid(struct store *s, const char *xid);

/* --- positions (feed.c) --- */

/* Runs st, a POSITION_VERDICT statement of a relation's file, for pos:
 * *here and *verdict filled. FE_INTERNAL when it answers no row. */
bool store_position_verdict(struct store *s, const struct store_statement *st,
			    const struct feed_position *pos, struct feed_here *here,
			    enum feed_verdict *verdict, struct floe_error *err) FLOE_WUR;

/* --- SQLSTATE classification (sqlstate.c) --- */

/*
 * Fills err for statement, which failed with result r (sqlstate: its
 * SQLSTATE, "" if none) on conn. outcome_unknown: the statement may have
 * taken effect had the connection broken (a COMMIT, or a write outside
 * BEGIN). FE_UNAVAILABLE when the connection is gone (FO_UNKNOWN only
 * when outcome_unknown), when the transaction was rolled back (class 40)
 * or the server gave up (timeouts, shutdown); otherwise FE_INTERNAL with
 * the detail logged. r stays the caller's.
 */
void store_classify(const char *statement, PGresult *r, const char *sqlstate, PGconn *conn,
		    bool outcome_unknown, struct floe_error *err);

/* Records the outcome and SQLSTATE of a failure in err (when not NULL). */
void store_error_detail(struct floe_error *err, enum floe_outcome outcome, const char *sqlstate);

/* --- statements and columns (rows.c) --- */

/* The 0x1F-joined levels of ns, as a new string or NULL (err set). */
char *store_levels_param(const struct ns_ident *ns, struct floe_error *err);

/* Runs a statement with no parameters whose rows do not matter. */
bool store_exec_noparams(struct store *s, const struct store_statement *st, struct floe_error *err);

/* Runs a statement whose answer is at most one text value: *out is a copy
 * of the first column of the first row (caller frees), or NULL when there
 * is no row. */
bool store_exec_text(struct store *s, const struct store_statement *st, int nparams,
		     const char *const *params, char **out, struct floe_error *err);

/* Runs a bounded DELETE with (age, limit) parameters; *deleted counts.
 * The age is 64-bit: a retention of 36,500 days is 3,153,600,000 s. */
bool store_exec_expire(struct store *s, const struct store_statement *st, long long age, int limit,
		       long *deleted, struct floe_error *err);

/* --- C structs from rows (rows.c) --- */

/* *out: a copy of column c of row i (caller frees), NULL when the column
 * is NULL. False when out of memory. */
bool store_col_copy(PGresult *r, int i, int c, char **out);

/* Column c of row i into buf (truncated to len). */
void store_col_text(PGresult *r, int i, int c, char *buf, size_t len);

/* Column c of row i as an integer (0 when NULL). */
long long store_col_ll(PGresult *r, int i, int c);

/* A 0x1F-joined levels column into ns (no levels when NULL; caller
 * ident_ns_clear()s). False when out of memory or too deep. */
bool store_col_ns(PGresult *r, int i, int c, struct ns_ident *ns);

/* Clears each of count rows of size bytes with clear and frees rows. */
void store_rows_free(void *rows, size_t count, size_t size, void (*clear)(void *row));

/* The clear functions of rowfree.c in the shape store_rows_read and
 * store_rows_free take: each frees what one row owns and zeroes it. */
void store_event_clear(void *row);
void store_hook_clear(void *row);
void store_hook_target_clear(void *row);
void store_run_clear(void *row);
void store_principal_clear(void *row);
void store_role_clear(void *row);
void store_grant_clear(void *row);

/* Reads rows [0, nrows) of r into *rows, a new array of *count rows of
 * size bytes, each filled by fill (which cleans up after its own
 * failure). On failure nothing is left and err is FE_INTERNAL. */
bool store_rows_read(PGresult *r, int nrows, size_t size,
		     bool (*fill)(PGresult *r, int i, void *row), void (*clear)(void *row),
		     void **rows, size_t *count, struct floe_error *err);

/* Rows [0, n) of column c of r as one allocation of names
 * (store_names_free): *names, *count. */
bool store_names_read(PGresult *r, int n, int c, char ***names, size_t *count,
		      struct floe_error *err);

/* Role ids as a bigint[] parameter ("{1,2}"), a new string or NULL (err
 * set). */
char *store_ids_param(const long long *ids, size_t n, struct floe_error *err);

/* The rows of a page of at most limit (< 0: all) of r, which was asked
 * for one row more: *more tells whether that one came. */
int store_page(PGresult *r, long limit, bool *more);

/* Runs st with ($1 after, $2 limit + 1 or NULL for all) and reads the
 * page as store_rows_read does; *more tells whether more follow. */
bool store_list_after(struct store *s, const struct store_statement *st, const char *after,
		      long limit, size_t size, bool (*fill)(PGresult *r, int i, void *row),
		      void (*clear)(void *row), void **rows, size_t *count, bool *more,
		      struct floe_error *err);

/* Runs a one-parameter statement and fills row from its first row with
 * fill; *found is false when there is none. */
bool store_get_row(struct store *s, const struct store_statement *st, const char *key,
		   bool (*fill)(PGresult *r, int i, void *row), void *row, bool *found,
		   struct floe_error *err);

/* store_get_row with nparams parameters. */
bool store_get_row_by(struct store *s, const struct store_statement *st, int nparams,
		      const char *const *params, bool (*fill)(PGresult *r, int i, void *row),
		      void *row, bool *found, struct floe_error *err);

/* --- grants (grants.c), used by namespaces.c and tables.c --- */

/* Whether roles (a bigint[] parameter) hold a grant on the catalog of
 * warehouse wh (a text parameter; ADMIN holds in every warehouse), on the
 * namespace of wh with levels lv (an SQL expression of type text[]) or on
 * a namespace above it. Each ancestor is found by the unique index. */
#define GRANT_AT_OR_ABOVE(roles, lv, wh)                                               \
	"EXISTS (SELECT 1 FROM grants ga WHERE ga.role_id = ANY(" roles "::bigint[]) " \
	"AND ((ga.object_kind = 'catalog' AND (ga.warehouse = " wh "::text "           \
	"  OR ga.privilege = 'ADMIN')) OR ga.namespace_id IN (SELECT a.id FROM "       \
	"generate_series(1, cardinality(" lv ")) k JOIN namespaces a "                 \
	"ON a.warehouse = " wh "::text AND a.levels = (" lv ")[1:k])))"

/* Whether roles hold a grant on a namespace of warehouse wh at or below
 * lv, or on a table in one. */
#define GRANT_AT_OR_BELOW(roles, lv, wh)                                                \
	"(EXISTS (SELECT 1 FROM grants gb JOIN namespaces d ON d.id = gb.namespace_id " \
	"WHERE gb.role_id = ANY(" roles "::bigint[]) AND d.warehouse = " wh "::text "   \
	"AND d.levels[1:cardinality(" lv ")] = " lv ") "                                \
	"OR EXISTS (SELECT 1 FROM grants gt JOIN tables t ON t.id = gt.table_id "       \
	"JOIN namespaces d ON d.id = t.namespace_id "                                   \
	"WHERE gt.role_id = ANY(" roles "::bigint[]) AND d.warehouse = " wh "::text "   \
	"AND d.levels[1:cardinality(" lv ")] = " lv "))"

/* --- namespaces (namespaces.c), used by tables.c --- */

/* Looks up the id of the namespace with 0x1F-joined levels into id. */
bool store_ns_lookup_id(struct store *s, const char *levels, char *id, size_t idlen, bool *found,
			struct floe_error *err);

/* Fills err with FE_NO_SUCH_NAMESPACE (the catalog words it); returns
 * false. */
bool store_ns_missing(struct floe_error *err);

#endif
