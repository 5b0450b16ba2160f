/*
 * history.h - a table's past: the list of its commits and its metadata
 * as it was at a time or a version (from the commit log), and the
 * undrop of a table dropped without purge (from dropped_tables).
 */
#ifndef FLOE_HISTORY_H
#define FLOE_HISTORY_H

#include <stdbool.h>
#include <stddef.h>
#include <jansson.h>

#include "error.h"
#include "ident.h"

struct store;

/* The largest page of commits one listing answers. */
#define HISTORY_PAGE_MAX 1000

/* A point in a table's history: a time (timestamp, a PostgreSQL
 * timestamptz text, UTC) or a version (>= 1), exactly one of them. */
struct table_point {
	char timestamp[48];
	long long version; /* -1 when the point is a time */
};

/*
 * Reads the query values as-of (RFC 3339 with a zone, or milliseconds
 * since the epoch) and as-of-version (a positive integer) into *out;
 * exactly one of them must be given. FE_BAD_REQUEST otherwise, naming
 * the value.
 */
bool table_point_parse(const char *as_of, const char *as_of_version, struct table_point *out,
		       struct floe_error *err) FLOE_WUR;

/*
 * loadTable as of a point: the LoadTableResult (new reference) whose
 * metadata is the file the table's newest commit at or before the point
 * wrote, read from storage; extra's members (borrowed; NULL: none) are
 * added, config included. FE_NO_SUCH_TABLE when the table is missing,
 * has no commit by then, or that commit's file is gone.
 */
json_t *table_load_at(struct store *s, const struct ns_ident *ns, const char *name,
		      const struct table_point *at, const json_t *extra,
		      struct floe_error *err) FLOE_WUR;

/* GET .../tables/{t}/commits: {"commits": [...], "next-page-token"}
 * (new reference), newest first; token is the previous page's (NULL:
 * from the newest). */
json_t *table_commits(struct store *s, const struct ns_ident *ns, const char *name,
		      const char *token, long page_size, struct floe_error *err) FLOE_WUR;

struct table_env;

/*
 * POST .../tables/{t}/undrop: puts back the newest table of that name
 * dropped without purge within env->undrop_retention_s, as it was (its
 * id, uuid, location, metadata and commit log), with a table.undropped
 * audit event in the same transaction. The LoadTableResult (new
 * reference). FE_NO_SUCH_TABLE when none is kept (or keeping is off);
 * FE_ALREADY_EXISTS when the name is taken, the uuid registered again or
 * the location since taken by another table; FE_NO_SUCH_NAMESPACE.
 * It puts the table's main back: TABLE_WRITE_MAIN on the table (asked
 * here, before anything is looked up). The table may not come back with
 * a weaker effective control than it was dropped with (effective.h: its
 * namespace dropped and made again without floe.wap.required, a hook
 * deleted), nor bring a main into a protected scope that did not protect
 * it when dropped: FE_FORBIDDEN naming POST /v1/controls/undrop.
 */
json_t *table_undrop(struct store *s, const struct table_env *env, const struct ns_ident *ns,
		     const char *name, struct floe_error *err) FLOE_WUR;

/* table_undrop through the control route: with reason (not NULL, stored in
 * the table.undropped event) the control checks are skipped. */
json_t *table_undrop_with(struct store *s, const struct table_env *env, const struct ns_ident *ns,
			  const char *name, const char *reason, struct floe_error *err) FLOE_WUR;

/* GET .../namespaces/{ns}/dropped-tables: the kept drops of ns, newest
 * first: {"dropped-tables": [...], "next-page-token"} (new reference). */
json_t *table_dropped_list(struct store *s, const struct table_env *env, const struct ns_ident *ns,
			   const char *token, long page_size, struct floe_error *err) FLOE_WUR;

#endif
