/*
 * control.h - the audited-publish control (DESIGN.md "Enforced publish"):
 * which rule protects a table, which changes would weaken the control, and
 * the one explicit route through which a weakening may be made. Every
 * change here writes its audit event in the same database transaction.
 * Not the publish itself (wap.c) nor the calls to the hooks (hooks.c).
 */
#ifndef FLOE_CONTROL_H
#define FLOE_CONTROL_H

#include <stdbool.h>
#include <stddef.h>
#include <jansson.h>

#include "error.h"
#include "hooks.h"
#include "ident.h"
#include "table.h"

struct store;

#define CONTROL_PROPERTY "floe.wap.required"
#define CONTROL_REASON_MAX 1000

/* True when metadata m (may be NULL) sets floe.wap.required=true itself. */
bool control_table_sets(const json_t *m);

/* rule receives what protects a table with metadata m (may be NULL: only
 * the namespaces count) in ns, e.g. "namespace sales sets
 * floe.wap.required=true", or "" when nothing does. */
bool control_rule(struct store *s, const struct ns_ident *ns, const json_t *m,
		  char *rule, size_t len, struct floe_error *err) FLOE_WUR;

/* The one policy check of every path that moves main (base -> m) outside a
 * WAP publish: FE_FORBIDDEN naming the rule when the table is protected. */
bool control_check_main_move(struct store *s, const struct ns_ident *ns,
			     const char *name, const json_t *base, const json_t *m,
			     struct floe_error *err) FLOE_WUR;

/* An ordinary commit may not remove floe.wap.required=true from a table
 * (nor set it to anything else): FE_FORBIDDEN naming the control route. */
bool control_check_table_properties(const char *name, const json_t *base,
				    const json_t *m, struct floe_error *err) FLOE_WUR;

/* An ordinary namespace property change from old to new may not weaken
 * floe.wap.required: FE_FORBIDDEN naming the control route. */
bool control_check_ns_properties(const struct ns_ident *ns, const json_t *old,
				 const json_t *removals, const json_t *updates,
				 struct floe_error *err) FLOE_WUR;

/* POST /audit-hooks: the hook and its hook.registered event in one
 * transaction; *hook is the new hook (new reference). */
bool control_hook_register(struct store *s, const struct table_env *env, const char *id,
			   const struct hook_spec *spec, json_t **hook,
			   struct floe_error *err) FLOE_WUR;

/* DELETE /audit-hooks/{id}: the deletion and its hook.deleted event in one
 * transaction. Without reason, deleting the last hook that covers a
 * namespace or table setting floe.wap.required=true is FE_FORBIDDEN;
 * FE_NO_SUCH_HOOK for an unknown id. */
bool control_hook_delete(struct store *s, const struct table_env *env, const char *id,
			 const char *reason, struct floe_error *err) FLOE_WUR;

/* POST /controls/{action}: the explicit route that may weaken the control
 * (action wap-required, delete-hook, register or rename; body with a
 * mandatory "reason"). Answers {"action", "reason", "result"?} (new
 * reference). FE_BAD_REQUEST for an unknown action or a missing reason. */
json_t *control_apply(struct store *s, const struct table_env *env, const char *action,
		      const json_t *body, struct floe_error *err) FLOE_WUR;

#endif
