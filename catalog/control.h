/*
 * control.h - the one explicit route through which the audited-publish
 * control (policy.h) may be weakened, and the audit hooks' registration
 * and deletion. Every change here writes its audit event in the same
 * database transaction.
 * Not the publish itself (wap.c) nor the calls to the hooks (hooks/deliver.c).
 */
#ifndef FLOE_CONTROL_H
#define FLOE_CONTROL_H

#include <stdbool.h>
#include <stddef.h>
#include <jansson.h>

#include "error.h"
#include "hookspec.h"
#include "ident.h"
#include "policy.h"
#include "ports.h"
#include "table.h"

struct store;

#define CONTROL_REASON_MAX 1000

/* Ends a transaction begun by the caller: commit when ok, else roll back
 * (unless the commit's own outcome is unknown). */
bool control_finish_tx(struct store *s, bool ok, struct floe_error *err) FLOE_WUR;

/* POST /audit-hooks: the hook and its hook.registered event in one
 * transaction; *hook is the new hook (new reference). */
bool control_hook_register(struct store *s, const struct table_env *env, const char *id,
			   const struct hook_spec *spec, json_t **hook,
			   struct floe_error *err) FLOE_WUR;

/* GET /audit-hooks: {"hooks": [...]}, oldest first (new reference). */
json_t *control_hook_list(struct store *s, struct floe_error *err) FLOE_WUR;

/* GET /audit-hooks/{id}: the hook (new reference); FE_NO_SUCH_HOOK. */
json_t *control_hook_get(struct store *s, const char *id, struct floe_error *err) FLOE_WUR;

/* DELETE /audit-hooks/{id}: the deletion and its hook.deleted event in one
 * transaction. Without reason, deleting a hook that covers a protected
 * namespace or table (floe.wap.required or floe.wap.release-required in
 * force: store_hook_guards), whichever other hooks cover it, is
 * FE_FORBIDDEN; FE_NO_SUCH_HOOK for an unknown id. */
bool control_hook_delete(struct store *s, const struct table_env *env, const char *id,
			 const char *reason, struct floe_error *err) FLOE_WUR;

/* POST /controls/{action}: the explicit route that may weaken the control
 * (action wap-required, separation-of-duties, release-required,
 * delete-hook, register, rename or undrop; body with a mandatory
 * "reason"). register, rename and undrop also ask the privileges their
 * ordinary routes ask. Answers {"action", "reason", "result"?} (new
 * reference). FE_BAD_REQUEST for an unknown action or a missing reason. */
json_t *control_apply(struct store *s, const struct table_env *env, const char *action,
		      const json_t *body, struct floe_error *err) FLOE_WUR;

#endif
