/*
 * wording.h - the messages clients read when the store reports a missing
 * or taken namespace or table: the store reports plain kinds, and these
 * put the names in, in one place for every route.
 */
#ifndef FLOE_WORDING_H
#define FLOE_WORDING_H

#include <stdbool.h>

#include "error.h"
#include "ident.h"

struct store;

/* Words an error the store raised about ns for the client:
 * FE_NO_SUCH_NAMESPACE, FE_ALREADY_EXISTS or FE_NAMESPACE_NOT_EMPTY get
 * their message naming ns; any other error is left as it is. Returns
 * false, so a caller can write `return ns_word_error(ns, err)`. */
bool ns_word_error(const struct ns_ident *ns, struct floe_error *err);

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

#endif
