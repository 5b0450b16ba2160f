/*
 * auditlog.h - the audit log (audit_events): every step of a publish, every
 * change to the controls, appended in the transaction of the change it
 * records; append-only in the database.
 */
#ifndef FLOE_AUDITLOG_H
#define FLOE_AUDITLOG_H

#include <stdbool.h>
#include <jansson.h>

#include "error.h"
#include "ident.h"
#include "ports.h"
#include "table.h"

/* GET /audit-log: {"events", "next-page-token"}, oldest first. Any filter
 * may be NULL; token NULL or "" starts at the beginning. */
json_t *audit_log_list(struct store *s, const struct ns_ident *ns, const char *table,
		       const char *run_id, const char *since, const char *token, long page_size,
		       struct floe_error *err) FLOE_WUR;

/* Who env's request acts as, as the store records it (borrows env's
 * strings). */
struct store_actor audit_actor(const struct table_env *env);

/* The principal env's request acts as: "anonymous" when it has none. */
const char *audit_principal(const struct table_env *env);

/* Appends an event. A failure is logged and raised: the caller must not
 * let the change it records stand without it. details is stolen. */
bool audit_record(struct store *s, const struct table_env *env, const char *event,
		  const struct ns_ident *ns, const char *table, const char *run_id,
		  json_t *details /* stolen */, struct floe_error *err) FLOE_WUR;

#endif
