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
#define POLICY_SOD_PROPERTY "floe.wap.separation-of-duties"
/* Main moves only through a release's publish (release.h): stronger than
 * floe.wap.required, which it implies. */
#define POLICY_RELEASE_PROPERTY "floe.wap.release-required"

/* A control property: set to true on a table or namespace it is in force;
 * weakening it (removing it, or setting anything but true) is refused
 * outside the control route POST /v1/controls/<action>, and every change
 * of it is the audit event `event`. */
struct policy_control {
	const char *property;
	const char *action;
	const char *event;
};

/* floe.wap.required, floe.wap.separation-of-duties and
 * floe.wap.release-required. */
#define POLICY_NCONTROLS 3
extern const struct policy_control policy_controls[POLICY_NCONTROLS];

/* The control of property, or NULL when it is none. */
const struct policy_control *policy_control_of(const char *property);

/* True when metadata m (may be NULL) sets property=true itself. */
bool policy_sets(const json_t *m, const char *property);

/* True when metadata m (may be NULL) sets floe.wap.required=true or
 * floe.wap.release-required=true itself. */
bool policy_table_sets(const json_t *m);

/* rule receives what protects a table with metadata m (may be NULL: only
 * the namespaces count) in ns, e.g. "namespace sales sets
 * floe.wap.required=true", or "" when nothing does. */
bool policy_rule(struct store *s, const struct ns_ident *ns, const json_t *m, char *rule,
		 size_t len, struct floe_error *err) FLOE_WUR;

/* policy_rule for floe.wap.release-required alone: what makes the table's
 * main move only through a release, or "". */
bool policy_release_rule(struct store *s, const struct ns_ident *ns, const json_t *m, char *rule,
			 size_t len, struct floe_error *err) FLOE_WUR;

/* The one policy check of every path that moves main (base -> m) outside a
 * WAP publish: FE_FORBIDDEN naming the rule when the table is protected. */
bool policy_check_main_move(struct store *s, const struct ns_ident *ns, const char *name,
			    const json_t *base, const json_t *m, struct floe_error *err) FLOE_WUR;

/* policy_check_main_move for a route that POST /v1/controls/<action> may
 * take instead (register): the refusal names it. */
bool policy_check_main_move_via(struct store *s, const struct ns_ident *ns, const char *name,
				const json_t *base, const json_t *m, const char *action,
				struct floe_error *err) FLOE_WUR;

/* The refusal of a main move of table name under rule (e.g. "namespace
 * sales sets floe.wap.required=true"), naming POST /v1/controls/<action>
 * when action is not NULL. Always false, with FE_FORBIDDEN in err. */
bool policy_refuse_main_move(const char *name, const char *rule, const char *action,
			     struct floe_error *err);

/* An ordinary commit may not remove a control property set to true from a
 * table (nor set it to anything else): FE_FORBIDDEN naming its control
 * route. */
bool policy_check_table_properties(const char *name, const json_t *base, const json_t *m,
				   struct floe_error *err) FLOE_WUR;

/* True when a namespace change (removals, updates) of properties old
 * takes property from true to anything else. */
bool policy_ns_weakens(const json_t *old, const json_t *removals, const json_t *updates,
		       const char *property);

/* An ordinary namespace property change from old to new may not weaken a
 * control property: FE_FORBIDDEN naming its control route. */
bool policy_check_ns_properties(const struct ns_ident *ns, const json_t *old,
				const json_t *removals, const json_t *updates,
				struct floe_error *err) FLOE_WUR;

#endif
