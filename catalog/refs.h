/*
 * refs.h - branches and tags as a REST resource. Every change is an
 * ordinary commit through the table commit engine, so it serialises with
 * engine commits and leaves a metadata file and a commit_log row.
 */
#ifndef FLOE_REFS_H
#define FLOE_REFS_H

#include <stdbool.h>
#include <jansson.h>

#include "error.h"
#include "ident.h"
#include "table.h"

struct store;

/* True when ancestor is snapshot id or one of its ancestors in m (false
 * also when out of memory). Linear in the number of snapshots. */
bool refs_is_ancestor(const json_t *m, long long ancestor, long long id);

/* {"refs": [Ref]} sorted by name. */
json_t *refs_list(struct store *s, const struct ns_ident *ns, const char *table,
		  struct floe_error *err) FLOE_WUR;

/* One Ref; FE_NO_SUCH_REFERENCE. */
json_t *refs_get(struct store *s, const struct ns_ident *ns, const char *table, const char *ref,
		 struct floe_error *err) FLOE_WUR;

/* Creates (or with "replace" replaces) a ref from the request body. */
json_t *refs_create(struct store *s, const struct table_env *env, const struct ns_ident *ns,
		    const char *table, const json_t *body, struct floe_error *err) FLOE_WUR;

/* Drops a ref (never main). */
bool refs_drop(struct store *s, const struct table_env *env, const struct ns_ident *ns,
	       const char *table, const char *ref, struct floe_error *err) FLOE_WUR;

/* Moves ref forward to {"to": ref} or {"snapshot-id": N}. */
json_t *refs_fast_forward(struct store *s, const struct table_env *env, const struct ns_ident *ns,
			  const char *table, const char *ref, const json_t *body,
			  struct floe_error *err) FLOE_WUR;

/* The Ref answer for name and its metadata entry (new reference). */
json_t *refs_json(const char *name, const json_t *ref);

#endif
