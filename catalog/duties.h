/*
 * duties.h - separation of duties for write-audit-publish: under
 * floe.wap.separation-of-duties=true (on the table, its namespace or an
 * ancestor) a run may not be published by the principal who staged it or
 * wrote to its branch. Not who may publish at all (the privileges), nor
 * the publish itself (wap.c).
 */
#ifndef FLOE_DUTIES_H
#define FLOE_DUTIES_H

#include <stdbool.h>
#include <jansson.h>

#include "error.h"
#include "ident.h"
#include "table.h"

struct store;

/*
 * Whether env's principal may publish run (the run as the API shows it:
 * its "id" and "branch" are read) of table (metadata m) in ns. True
 * when separation of duties is not in force or the principal neither
 * staged nor wrote the run, as the store tells (store_run_acted: every
 * writer, not the 100 the run's "written-by" shows). Otherwise FE_FORBIDDEN, and a
 * wap.publish-refused audit event naming the principal is written: the
 * principal staged the run, wrote to its branch, or there is none (no
 * authentication: the rule cannot be decided, so it fails closed). The
 * store's error when the rule cannot be read or the event not written.
 */
bool duties_check_publish(struct store *s, const struct table_env *env, const struct ns_ident *ns,
			  const char *table, const json_t *m, const json_t *run,
			  struct floe_error *err) FLOE_WUR;

#endif
