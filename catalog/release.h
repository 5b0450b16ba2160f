/*
 * release.h - write-audit-publish over many tables: a release stages one
 * branch name on every member table, one audit call per hook lists every
 * member, and one PostgreSQL transaction moves every member's main to
 * exactly its audited snapshot (each guarded by main at audit time) or
 * none moves. Members are WAP runs (wap.h) that belong to the release.
 */
#ifndef FLOE_RELEASE_H
#define FLOE_RELEASE_H

#include <stdbool.h>
#include <jansson.h>

#include "error.h"
#include "table.h"

struct store;
struct store_pool;

/* At most this many tables in one release. */
#define RELEASE_TABLES_MAX 1000

/*
 * A new release over the tables body names: "tables" (identifiers) and
 * "namespaces" (every table of each namespace and those below it), on
 * branch body.name (default release-<id>). Every member gets its branch
 * at its main snapshot, its run and the release in one transaction.
 * WAP_STAGE on every member.
 */
json_t *release_create(struct store *s, const struct table_env *env, const json_t *body,
		       struct floe_error *err) FLOE_WUR;

/* More members for an open release (body as for release_create); tables
 * already in it are left as they are. */
json_t *release_add(struct store *s, const struct table_env *env, const char *id,
		    const json_t *body, struct floe_error *err) FLOE_WUR;

/* The release with its members; TABLE_READ on every member. */
json_t *release_get(struct store *s, const struct table_env *env, const char *id,
		    struct floe_error *err) FLOE_WUR;

/* A page of the catalog's releases, newest first, without members. */
json_t *release_list(struct store *s, const char *token, long page_size,
		     struct floe_error *err) FLOE_WUR;

/* Drops every member's branch and abandons the release and its runs, in
 * one transaction. WAP_STAGE on every member. */
json_t *release_abandon(struct store *s, const struct table_env *env, const char *id,
			struct floe_error *err) FLOE_WUR;

/*
 * Audits the release as a whole and, when every hook passes, publishes
 * every member. Borrows connections of pool as wap_publish does: none is
 * held while the hooks run. WAP_PUBLISH on every member, and separation
 * of duties per member. body: {"keep-branch": bool}.
 */
json_t *release_publish(struct store_pool *pool, const struct table_env *env, const char *id,
			const json_t *body, struct floe_error *err) FLOE_WUR;

#endif
