/*
 * view.h - the view operations of the Iceberg REST API: create, load,
 * replace (the view commit, with the optimistic retry loop of tables),
 * rename and drop. Each ties viewmeta (the rules), fileio (the metadata
 * files) and the store (views live in the relation of tables, so names,
 * locations and the compare-and-swap are shared with tables).
 */
#ifndef FLOE_VIEW_H
#define FLOE_VIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <jansson.h>

#include "error.h"
#include "ident.h"
#include "table.h"

struct store;

/* createView: the LoadViewResult (new reference). FE_ALREADY_EXISTS when
 * a view or a table holds the name; FE_NO_SUCH_NAMESPACE; FE_BAD_REQUEST
 * for a request viewmeta refuses or a location outside the warehouse. */
json_t *view_create(struct store *s, const struct table_env *env, const struct ns_ident *ns,
		    const json_t *body, struct floe_error *err) FLOE_WUR;

/* registerView: a view of the metadata file the body's metadata-location
 * names (in the warehouse, read as it is, never rewritten). The
 * LoadViewResult (new reference). Errors as view_create, and
 * FE_BAD_REQUEST for a file that is no view metadata. */
json_t *view_register(struct store *s, const struct table_env *env, const struct ns_ident *ns,
		      const json_t *body, struct floe_error *err) FLOE_WUR;

/* loadView: the LoadViewResult as text (caller frees; *len bytes), the
 * stored metadata spliced in as it is. FE_NO_SUCH_VIEW "View does not
 * exist: a.v". */
char *view_load(struct store *s, const struct ns_ident *ns, const char *name, size_t *len,
		struct floe_error *err) FLOE_WUR;

/* viewExists: sets *exists (false also when the namespace is missing). */
bool view_exists(struct store *s, const struct ns_ident *ns, const char *name, bool *exists,
		 struct floe_error *err) FLOE_WUR;

/* replaceView: requirements, then updates, applied to the current
 * metadata and swapped in; retried on a lost race. The LoadViewResult
 * (new reference). FE_COMMIT_FAILED for a failed requirement. */
json_t *view_commit(struct store *s, const struct table_env *env, const struct ns_ident *ns,
		    const char *name, const json_t *body, struct floe_error *err) FLOE_WUR;

/* dropView, with its view.dropped audit event in the same transaction.
 * The view's metadata files stay. */
bool view_drop(struct store *s, const struct table_env *env, const struct ns_ident *ns,
	       const char *name, struct floe_error *err) FLOE_WUR;

/* renameView from a {"source", "destination"} body, with its
 * view.renamed audit event in the same transaction. */
bool view_rename(struct store *s, const struct table_env *env, const json_t *body,
		 struct floe_error *err) FLOE_WUR;

#endif
