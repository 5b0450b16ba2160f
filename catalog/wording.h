/*
 * wording.h - the messages clients read when something is missing or
 * taken: the store reports plain kinds, and these put the names in, in
 * one place for every route. The wording is Iceberg's (its catalogs and
 * REST server say "Table does not exist: a.b.t"), which clients and
 * tools match on.
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
 * table still answer NoSuchTableException then, as Iceberg does (engines read
 * that answer as "try the last name part as a branch or metadata table":
 * t.branch_x, t.refs); with ns_error (creating a table) a missing ns is
 * FE_NO_SUCH_NAMESPACE. FE_ALREADY_EXISTS names the table, or uuid when
 * the store found the uuid taken (SQLSTATE 23505); FE_NO_SUCH_NAMESPACE
 * names ns. Returns false.
 */
bool tables_word_error(struct store *s, const struct ns_ident *ns, const char *name,
		       const char *uuid, bool ns_error, struct floe_error *err);

/* Each fills err with its kind and Iceberg's wording naming the missing
 * or taken thing, and returns false. */
bool wording_no_such_namespace(const struct ns_ident *ns, struct floe_error *err);
bool wording_no_such_table(const struct ns_ident *ns, const char *name, struct floe_error *err);
bool wording_table_exists(const struct ns_ident *ns, const char *name, struct floe_error *err);
/* floe's own resources, worded the same way. */
bool wording_no_such_view(const struct ns_ident *ns, const char *name, struct floe_error *err);

/* FE_ALREADY_EXISTS for a create (of a view, or a table) whose name is
 * taken, in the words of what holds it: "Table already exists: a.t",
 * "View with same name already exists: a.t" (a table's create), "View
 * already exists: a.v", "Table with same name already exists: a.v" (a
 * view's create). Returns false. */
bool wording_name_taken(struct store *s, const struct ns_ident *ns, const char *name, bool view,
			struct floe_error *err);

/* FE_ALREADY_EXISTS for a rename (of a view, or a table) onto a taken
 * name, in the words of Iceberg's view catalog tests: "Cannot rename a.v
 * to a.u. View already exists" (or Table, as the holder is); a table onto
 * a table keeps "Table already exists: a.u". Returns false. */
bool wording_rename_taken(struct store *s, bool view, const struct ns_ident *from_ns,
			  const char *from, const struct ns_ident *to_ns, const char *to,
			  struct floe_error *err);

/* tables_word_error for views: FE_NO_SUCH_VIEW "View does not exist: a.v"
 * (or the namespace's), the name taken, the uuid registered. */
bool views_word_error(struct store *s, const struct ns_ident *ns, const char *name,
		      struct floe_error *err);

bool wording_no_such_ref(const char *ref, struct floe_error *err);
bool wording_no_such_snapshot(long long id, struct floe_error *err);
bool wording_no_such_hook(const char *id, struct floe_error *err);
bool wording_no_such_subscription(const char *id, struct floe_error *err);
bool wording_no_such_run(const char *id, struct floe_error *err);
bool wording_no_such_warehouse(const char *name, struct floe_error *err);

#endif
