/*
 * policy.h - the rules of the audited-publish control (DESIGN.md
 * "Enforced publish"): which rule protects a table, the one policy check
 * of every path that moves main, and which ordinary changes would weaken
 * the control. The explicit route that may weaken it is control.h's.
 */
#ifndef FLOE_POLICY_H
#define FLOE_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <jansson.h>

#include "error.h"
#include "ident.h"

struct store;

#define POLICY_PROPERTY "floe.wap.required"

/* True when metadata m (may be NULL) sets floe.wap.required=true itself. */
bool policy_table_sets(const json_t *m);

/* rule receives what protects a table with metadata m (may be NULL: only
 * the namespaces count) in ns, e.g. "namespace sales sets
 * floe.wap.required=true", or "" when nothing does. */
bool policy_rule(struct store *s, const struct ns_ident *ns, const json_t *m, char *rule,
		 size_t len, struct floe_error *err) FLOE_WUR;

/* The one policy check of every path that moves main (base -> m) outside a
 * WAP publish: FE_FORBIDDEN naming the rule when the table is protected. */
bool policy_check_main_move(struct store *s, const struct ns_ident *ns, const char *name,
			    const json_t *base, const json_t *m, struct floe_error *err) FLOE_WUR;

/* An ordinary commit may not remove floe.wap.required=true from a table
 * (nor set it to anything else): FE_FORBIDDEN naming the control route. */
bool policy_check_table_properties(const char *name, const json_t *base, const json_t *m,
				   struct floe_error *err) FLOE_WUR;

/* An ordinary namespace property change from old to new may not weaken
 * floe.wap.required: FE_FORBIDDEN naming the control route. */
bool policy_check_ns_properties(const struct ns_ident *ns, const json_t *old,
				const json_t *removals, const json_t *updates,
				struct floe_error *err) FLOE_WUR;

#endif
