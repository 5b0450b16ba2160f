/*
 * effective.h - a table's effective control, computed in one place: each
 * control property of policy.h in force for it (set to true on the table
 * or on a namespace above it) and the audit hooks in scope. Every route
 * that can alter it for a table (rename, register, undrop; a drop records
 * it for the undrop) computes it before and after, and refuses a
 * weakening outside the control route (control.h) with FE_FORBIDDEN.
 *
 * Weaker means: a control property in force before is not after; or, for
 * a protected table (floe.wap.required or floe.wap.release-required in
 * force), a hook in scope before is not after. Every hook in scope of a
 * protected table must pass its publish, so a hook added next to the
 * auditor does not make the auditor any less part of the control.
 *
 * Not the changes that touch many tables at once, which apply the same
 * rule to all of them in one decision: a namespace's own properties
 * (policy_check_ns_properties) and deleting a hook (store_hook_guards).
 */
#ifndef FLOE_EFFECTIVE_H
#define FLOE_EFFECTIVE_H

#include <stdbool.h>
#include <stddef.h>
#include <jansson.h>

#include "error.h"
#include "ident.h"
#include "policy.h"

struct store;

/* Room for "namespace <levels>" of the longest namespace floe shows. */
#define EFFECTIVE_WHERE_MAX 512

struct effective_hook {
	char id[40];
	char *name;
};

struct effective_control {
	/* For each policy_controls[i], what sets it: "the table" or
	 * "namespace <a.b>"; "" when it is not in force. */
	char where[POLICY_NCONTROLS][EFFECTIVE_WHERE_MAX];
	struct effective_hook *hooks; /* in scope, sorted by id */
	size_t nhooks;
};

/* Frees what e holds and zeroes it (an empty control). */
void effective_clear(struct effective_control *e);

/* The effective control of table name in ns whose metadata is m (may be
 * NULL: the table's own properties count as unset) into *out, which the
 * caller clears. The store's error. */
bool effective_of(struct store *s, const struct ns_ident *ns, const char *name, const json_t *m,
		  struct effective_control *out, struct floe_error *err) FLOE_WUR;

/* True when floe.wap.required or floe.wap.release-required is in force:
 * main moves only through a publish. */
bool effective_protected(const struct effective_control *e);

/* e as JSON (new reference; NULL when out of memory):
 * {"<property>": "<where>", ..., "hooks": [{"id", "name"}]}, with only
 * the properties in force. The form dropped_tables.controls keeps. */
json_t *effective_to_json(const struct effective_control *e);

/* effective_to_json's form v into *out (caller clears); false when v is
 * not of that form. */
bool effective_from_json(const json_t *v, struct effective_control *out) FLOE_WUR;

/* Whether after is weaker than before; when it is, what (len bytes)
 * describes the first weakening found, e.g. "floe.wap.required=true (set
 * by namespace sales) would no longer apply". */
bool effective_weakens(const struct effective_control *before,
		       const struct effective_control *after, char *what, size_t len);

/* FE_FORBIDDEN when after weakens before: "<change> weakens its
 * audited-publish control: <what>; only POST /v1/controls/<action> with a
 * reason may". change names the change and the table ("Renaming table
 * a.t to b.t"). */
bool effective_check(const struct effective_control *before, const struct effective_control *after,
		     const char *change, const char *action, struct floe_error *err) FLOE_WUR;

/*
 * A route that puts an existing main at table name (rename, undrop,
 * register) moves main there outside a publish when the name is protected
 * (after) and the main was not (before: nothing protected it, or there was
 * no table): FE_FORBIDDEN in policy_check_main_move's words, naming
 * POST /v1/controls/<action>. Metadata m without a main snapshot moves
 * nothing.
 */
bool effective_check_main_arrives(const struct effective_control *before,
				  const struct effective_control *after, const char *name,
				  const json_t *m, const char *action,
				  struct floe_error *err) FLOE_WUR;

#endif
