/*
 * policy.c - the rules of the audited-publish control. A table is
 * protected when it, or its namespace or an ancestor, sets
 * floe.wap.required=true; then only a WAP publish moves its main, and an
 * ordinary change may not weaken the property. The route that may weaken
 * it is control.c's.
 */
#include "policy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "ports.h"

static bool value_true(const json_t *v)
{
	const char *s = json_string_value(v);
	return s != NULL && strcasecmp(s, "true") == 0;
}

const struct policy_control policy_controls[POLICY_NCONTROLS] = {
	{ POLICY_PROPERTY, "wap-required", "control.wap-required" },
	{ POLICY_SOD_PROPERTY, "separation-of-duties", "control.separation-of-duties" },
	{ POLICY_RELEASE_PROPERTY, "release-required", "control.release-required" },
};

const struct policy_control *policy_control_of(const char *property)
{
	for (size_t i = 0; i < POLICY_NCONTROLS; i++) {
		if (strcmp(policy_controls[i].property, property) == 0)
			return &policy_controls[i];
	}
	return NULL;
}

bool policy_sets(const json_t *m, const char *property)
{
	return value_true(json_object_get(json_object_get(m, "properties"), property));
}

bool policy_table_sets(const json_t *m)
{
	return policy_sets(m, POLICY_PROPERTY) || policy_sets(m, POLICY_RELEASE_PROPERTY);
}

/* rule: "the table sets P=true" or "namespace N sets P=true" for the
 * nearest of m and ns's namespaces that sets property, or "". */
static bool property_rule(struct store *s, const struct ns_ident *ns, const json_t *m,
			  const char *property, char *rule, size_t len, struct floe_error *err)
{
	char *where = NULL;

	rule[0] = '\0';
	if (policy_sets(m, property)) {
		(void)snprintf(rule, len, "the table sets %s=true", property);
		return true;
	}
	if (!store_ns_property_true(s, ns, property, &where, err))
		return false;
	if (where != NULL)
		(void)snprintf(rule, len, "namespace %s sets %s=true", where, property);
	free(where);
	return true;
}

bool policy_rule(struct store *s, const struct ns_ident *ns, const json_t *m, char *rule,
		 size_t len, struct floe_error *err)
{
	if (!property_rule(s, ns, m, POLICY_PROPERTY, rule, len, err))
		return false;
	if (rule[0] != '\0')
		return true;
	return property_rule(s, ns, m, POLICY_RELEASE_PROPERTY, rule, len, err);
}

bool policy_release_rule(struct store *s, const struct ns_ident *ns, const json_t *m, char *rule,
			 size_t len, struct floe_error *err)
{
	return property_rule(s, ns, m, POLICY_RELEASE_PROPERTY, rule, len, err);
}

bool policy_refuse_main_move(const char *name, const char *rule, const char *action,
			     struct floe_error *err)
{
	if (action == NULL)
		return floe_err(
			err, FE_FORBIDDEN,
			"Branch main of table %s can only move through a write-audit-publish run: %s",
			name, rule);
	return floe_err(
		err, FE_FORBIDDEN,
		"Branch main of table %s can only move through a write-audit-publish run: %s; only POST /v1/controls/%s with a reason may",
		name, rule, action);
}

bool policy_check_main_move_via(struct store *s, const struct ns_ident *ns, const char *name,
				const json_t *base, const json_t *m, const char *action,
				struct floe_error *err)
{
	char rule[256];

	/* The property before or after the change: a commit cannot set
	 * it to false and move main in one go. */
	if (policy_sets(m, POLICY_PROPERTY) && !policy_table_sets(base))
		(void)snprintf(rule, sizeof(rule), "the table sets " POLICY_PROPERTY "=true");
	else if (policy_sets(m, POLICY_RELEASE_PROPERTY) && !policy_table_sets(base))
		(void)snprintf(rule, sizeof(rule),
			       "the table sets " POLICY_RELEASE_PROPERTY "=true");
	else if (!policy_rule(s, ns, base, rule, sizeof(rule), err))
		return false;
	if (rule[0] == '\0')
		return true;
	return policy_refuse_main_move(name, rule, action, err);
}

bool policy_check_main_move(struct store *s, const struct ns_ident *ns, const char *name,
			    const json_t *base, const json_t *m, struct floe_error *err)
{
	return policy_check_main_move_via(s, ns, name, base, m, NULL, err);
}

bool policy_check_table_properties(const char *name, const json_t *base, const json_t *m,
				   struct floe_error *err)
{
	for (size_t i = 0; i < POLICY_NCONTROLS; i++) {
		const struct policy_control *c = &policy_controls[i];
		if (!policy_sets(base, c->property) || policy_sets(m, c->property))
			continue;
		return floe_err(
			err, FE_FORBIDDEN,
			"table %s sets %s=true: removing or changing it weakens the audited-publish control; only POST /v1/controls/%s with a reason may",
			name, c->property, c->action);
	}
	return true;
}

bool policy_ns_weakens(const json_t *old, const json_t *removals, const json_t *updates,
		       const char *property)
{
	const json_t *set = json_object_get(updates, property);
	bool removed = false;
	size_t i;
	json_t *v;

	if (!value_true(json_object_get(old, property)))
		return false;
	json_array_foreach((json_t *)removals, i, v) {
		if (strcmp(json_string_value(v), property) == 0)
			removed = true;
	}
	return set != NULL ? !value_true(set) : removed;
}

bool policy_check_ns_properties(const struct ns_ident *ns, const json_t *old,
				const json_t *removals, const json_t *updates,
				struct floe_error *err)
{
	for (size_t i = 0; i < POLICY_NCONTROLS; i++) {
		const struct policy_control *c = &policy_controls[i];
		if (!policy_ns_weakens(old, removals, updates, c->property))
			continue;
		char *shown = ident_ns_display(ns);
		floe_err(
			err, FE_FORBIDDEN,
			"namespace %s sets %s=true: removing or changing it weakens the audited-publish control; only POST /v1/controls/%s with a reason may",
			shown ? shown : "?", c->property, c->action);
		free(shown);
		return false;
	}
	return true;
}
