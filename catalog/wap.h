/*
 * wap.h - write-audit-publish runs: stage new data on a branch, have every
 * audit hook in scope check exactly one snapshot of it, and only then move
 * main to that snapshot. Every state change and every hook call lands in
 * the append-only audit log.
 */
#ifndef FLOE_WAP_H
#define FLOE_WAP_H

#include <stdbool.h>
#include <jansson.h>

#include "error.h"
#include "ident.h"
#include "table.h"

struct store;
struct store_pool;

/* POST .../wap: a new run (201). */
json_t *wap_stage(struct store *s, const struct table_env *env, const struct ns_ident *ns,
		  const char *table, const json_t *body, struct floe_error *err) FLOE_WUR;

/* POST .../wap/{id}/publish. Borrows connections from pool itself so that
 * none is held while the hooks run. */
json_t *wap_publish(struct store_pool *pool, const struct table_env *env, const struct ns_ident *ns,
		    const char *table, const char *run_id, const json_t *body,
		    struct floe_error *err) FLOE_WUR;

/* GET .../wap/{id}. */
json_t *wap_get(struct store *s, const struct ns_ident *ns, const char *table, const char *run_id,
		struct floe_error *err) FLOE_WUR;

/* GET .../wap: {"runs", "next-page-token"}, newest first. token may be
 * NULL (everything) or "" (first page). */
json_t *wap_list(struct store *s, const struct ns_ident *ns, const char *table, const char *token,
		 long page_size, struct floe_error *err) FLOE_WUR;

/* DELETE .../wap/{id}: the run abandoned and its branch dropped. */
json_t *wap_abandon(struct store *s, const struct table_env *env, const struct ns_ident *ns,
		    const char *table, const char *run_id, struct floe_error *err) FLOE_WUR;

#endif
