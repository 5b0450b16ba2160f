/*
 * effective.c - a table's effective control (effective.h): read from the
 * table's own properties, the namespaces above it and the hooks in scope,
 * compared before and after a change.
 */
#include "effective.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ports.h"
#include "tablemeta.h"

void effective_clear(struct effective_control *e)
{
	for (size_t i = 0; i < e->nhooks; i++)
		free(e->hooks[i].name);
	free(e->hooks);
	memset(e, 0, sizeof(*e));
}

static int hook_cmp(const void *a, const void *b)
{
	return strcmp(((const struct effective_hook *)a)->id,
		      ((const struct effective_hook *)b)->id);
}

/* Adds hook id (name may be NULL) to e; false when out of memory. */
static bool hook_add(struct effective_control *e, const char *id, const char *name)
{
	struct effective_hook *grown = realloc(e->hooks, (e->nhooks + 1) * sizeof(*grown));

	if (grown == NULL)
		return false;
	e->hooks = grown;
	struct effective_hook *h = &e->hooks[e->nhooks];
	memset(h, 0, sizeof(*h));
	(void)snprintf(h->id, sizeof(h->id), "%s", id);
	h->name = strdup(name != NULL ? name : "");
	if (h->name == NULL)
		return false;
	e->nhooks++;
	return true;
}

bool effective_of(struct store *s, const struct ns_ident *ns, const char *name, const json_t *m,
		  struct effective_control *out, struct floe_error *err)
{
	struct hook_target *rows = NULL;
	size_t count = 0;

	memset(out, 0, sizeof(*out));
	for (size_t i = 0; i < POLICY_NCONTROLS; i++) {
		const char *property = policy_controls[i].property;
		char *where = NULL;

		if (policy_sets(m, property)) {
			(void)snprintf(out->where[i], sizeof(out->where[i]), "the table");
			continue;
		}
		if (!store_ns_property_true(s, ns, property, &where, err))
			goto fail;
		if (where != NULL)
			(void)snprintf(out->where[i], sizeof(out->where[i]), "namespace %s", where);
		free(where);
	}
	if (!store_hooks_in_scope(s, ns, name, &rows, &count, err))
		goto fail;
	for (size_t i = 0; i < count; i++) {
		if (!hook_add(out, rows[i].id, rows[i].name)) {
			floe_err(err, FE_INTERNAL, "out of memory");
			goto fail;
		}
	}
	store_hook_targets_free(rows, count);
	if (out->nhooks > 1)
		qsort(out->hooks, out->nhooks, sizeof(*out->hooks), hook_cmp);
	return true;
fail:
	store_hook_targets_free(rows, count);
	effective_clear(out);
	return false;
}

json_t *effective_to_json(const struct effective_control *e)
{
	json_t *out = json_object();
	json_t *hooks = json_array();

	if (out == NULL || hooks == NULL)
		goto oom;
	for (size_t i = 0; i < POLICY_NCONTROLS; i++) {
		if (e->where[i][0] != '\0' && json_object_set_new(out, policy_controls[i].property,
								  json_string(e->where[i])) != 0)
			goto oom;
	}
	for (size_t i = 0; i < e->nhooks; i++) {
		if (json_array_append_new(hooks, json_pack("{s:s, s:s}", "id", e->hooks[i].id,
							   "name", e->hooks[i].name)) != 0)
			goto oom;
	}
	if (json_object_set_new(out, "hooks", hooks) != 0) {
		hooks = NULL;
		goto oom;
	}
	return out;
oom:
	json_decref(hooks);
	json_decref(out);
	return NULL;
}

bool effective_from_json(const json_t *v, struct effective_control *out)
{
	const json_t *hooks = json_object_get(v, "hooks");
	size_t i;
	json_t *h;

	memset(out, 0, sizeof(*out));
	if (!json_is_object(v) || !json_is_array(hooks))
		return false;
	for (i = 0; i < POLICY_NCONTROLS; i++) {
		const json_t *where = json_object_get(v, policy_controls[i].property);
		if (where == NULL)
			continue;
		if (!json_is_string(where) || json_string_length(where) == 0 ||
		    json_string_length(where) >= sizeof(out->where[i]))
			goto bad;
		(void)snprintf(out->where[i], sizeof(out->where[i]), "%s",
			       json_string_value(where));
	}
	json_array_foreach((json_t *)hooks, i, h) {
		const char *id = json_string_value(json_object_get(h, "id"));
		const char *name = json_string_value(json_object_get(h, "name"));
		if (id == NULL || strlen(id) >= sizeof(out->hooks->id) || !hook_add(out, id, name))
			goto bad;
	}
	if (out->nhooks > 1)
		qsort(out->hooks, out->nhooks, sizeof(*out->hooks), hook_cmp);
	return true;
bad:
	effective_clear(out);
	return false;
}

static bool has_hook(const struct effective_control *e, const char *id)
{
	struct effective_hook key = { .name = NULL };

	(void)snprintf(key.id, sizeof(key.id), "%s", id);
	return e->nhooks > 0 &&
	       bsearch(&key, e->hooks, e->nhooks, sizeof(*e->hooks), hook_cmp) != NULL;
}

bool effective_weakens(const struct effective_control *before,
		       const struct effective_control *after, char *what, size_t len)
{
	for (size_t i = 0; i < POLICY_NCONTROLS; i++) {
		if (before->where[i][0] == '\0' || after->where[i][0] != '\0')
			continue;
		(void)snprintf(what, len, "%s=true (set by %s) would no longer apply",
			       policy_controls[i].property, before->where[i]);
		return true;
	}
	if (!effective_protected(before))
		return false;
	for (size_t i = 0; i < before->nhooks; i++) {
		if (has_hook(after, before->hooks[i].id))
			continue;
		(void)snprintf(what, len, "audit hook %s (%s) would no longer be in scope",
			       before->hooks[i].name, before->hooks[i].id);
		return true;
	}
	return false;
}

bool effective_check(const struct effective_control *before, const struct effective_control *after,
		     const char *change, const char *action, struct floe_error *err)
{
	char what[EFFECTIVE_WHERE_MAX + 128];

	if (!effective_weakens(before, after, what, sizeof(what)))
		return true;
	return floe_err(
		err, FE_FORBIDDEN,
		"%s weakens its audited-publish control: %s; only POST /v1/controls/%s with a reason may",
		change, what, action);
}

/* Where e's control property is set, "" when it is not in force. */
static const char *where_of(const struct effective_control *e, const char *property)
{
	for (size_t i = 0; i < POLICY_NCONTROLS; i++) {
		if (strcmp(policy_controls[i].property, property) == 0)
			return e->where[i];
	}
	return "";
}

bool effective_protected(const struct effective_control *e)
{
	return where_of(e, POLICY_PROPERTY)[0] != '\0' ||
	       where_of(e, POLICY_RELEASE_PROPERTY)[0] != '\0';
}

bool effective_check_main_arrives(const struct effective_control *before,
				  const struct effective_control *after, const char *name,
				  const json_t *m, const char *action, struct floe_error *err)
{
	char rule[EFFECTIVE_WHERE_MAX + 64];
	/* The rule named is the one policy_rule names first. */
	const char *property = where_of(after, POLICY_PROPERTY)[0] != '\0'
				       ? POLICY_PROPERTY
				       : POLICY_RELEASE_PROPERTY;

	if (tablemeta_current_snapshot(m) < 0 || !effective_protected(after) ||
	    effective_protected(before))
		return true;
	(void)snprintf(rule, sizeof(rule), "%s sets %s=true", where_of(after, property), property);
	return policy_refuse_main_move(name, rule, action, err);
}
