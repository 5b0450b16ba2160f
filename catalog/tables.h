/*
 * tables.h - the questions about tables that change nothing: does one
 * exist, which a namespace holds; and the metrics reports engines send.
 * Not loads, commits or drops (table.h).
 */
#ifndef FLOE_TABLES_H
#define FLOE_TABLES_H

#include <stdbool.h>
#include <jansson.h>

#include "error.h"
#include "ident.h"
#include "namespace.h"

struct store;

/*
 * Words an error the store raised about table name in ns for the client,
 * as the Iceberg routes answer it; any other error is left as it is.
 * FE_NO_SUCH_TABLE asks the store whether ns is missing too: routes on a
 * table still answer NoSuchTableException then, saying so (engines read
 * that answer as "try the last name part as a branch or metadata table":
 * t.branch_x, t.refs); with ns_error (creating a table) a missing ns is
 * FE_NO_SUCH_NAMESPACE. FE_ALREADY_EXISTS names the table, or uuid when
 * the store found the uuid taken (SQLSTATE 23505); FE_NO_SUCH_NAMESPACE
 * names ns. Returns false.
 */
bool tables_word_error(struct store *s, const struct ns_ident *ns, const char *name,
		       const char *uuid, bool ns_error, struct floe_error *err);

/* HEAD .../tables/{table}: sets *exists (false also when the namespace is
 * missing). */
bool tables_exists(struct store *s, const struct ns_ident *ns, const char *name,
		   bool *exists, struct floe_error *err) FLOE_WUR;

/* GET .../tables: the names in ns sorting after `after` (NULL: from the
 * start), at most limit (< 0: all); *names is a new array of strings and
 * *more tells whether more follow. FE_NO_SUCH_NAMESPACE. */
bool tables_list(struct store *s, const struct ns_ident *ns, const char *after, long limit,
		 json_t **names, bool *more, struct floe_error *err) FLOE_WUR;

/* POST .../tables/{table}/metrics: keeps report (a JSON text) for the
 * table. FE_NO_SUCH_TABLE. */
bool tables_report_metrics(struct store *s, const struct ns_ident *ns, const char *name,
			   const char *report, struct floe_error *err) FLOE_WUR;

#endif
