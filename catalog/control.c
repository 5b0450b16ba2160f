/*
 * control.c - the explicit route of the audited-publish control. Weakening
 * the control (removing floe.wap.required, deleting a hook in scope of a
 * protected table, registering over, renaming or undropping a table into
 * a weaker control: policy.c, effective.c) is refused through the
 * ordinary routes and allowed through POST /controls/{action} alone,
 * which always carries a reason into the audit log.
 */
#include "control.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "access.h"
#include "auditlog.h"
#include "history.h"
#include "hooksecrets.h"
#include "idem.h"
#include "log.h"
#include "namespace.h"
#include "ports.h"
#include "rowjson.h"
#include "wording.h"

bool control_finish_tx(struct store *s, bool ok, struct floe_error *err)
{
	if (ok && store_commit(s, err))
		return true;
	if (err->kind != FE_COMMIT_STATE_UNKNOWN)
		store_rollback(s);
	return false;
}

/* A hook as the API shows it (new reference; NULL when out of memory). */
static json_t *hook_json(const void *row)
{
	const struct hook_row *h = row;
	json_t *scope = json_object();

	if (scope != NULL && h->scope_ns.nlevels > 0)
		json_object_set_new(scope, "namespace", ident_ns_to_json(&h->scope_ns));
	if (scope != NULL && h->scope_table != NULL)
		json_object_set_new(scope, "table", json_string(h->scope_table));
	return json_pack("{s:s, s:s, s:s, s:o, s:I, s:b, s:s}", "id", h->id, "name", h->name, "url",
			 h->url, "scope", scope, "timeout-ms", (json_int_t)h->timeout_ms,
			 "has-secret", h->has_secret, "created-at", h->created_at);
}

/* Hook id as JSON in *hook, NULL when there is no such hook. */
static bool load_hook(struct store *s, const char *id, json_t **hook, struct floe_error *err)
{
	struct hook_row row;
	bool found = false;

	*hook = NULL;
	if (!store_hook_get(s, id, &row, &found, err))
		return false;
	if (!found)
		return true;
	*hook = hook_json(&row);
	store_hook_row_clear(&row);
	if (*hook == NULL)
		return floe_err(err, FE_INTERNAL, "out of memory");
	return true;
}

json_t *control_hook_get(struct store *s, const char *id, struct floe_error *err)
{
	json_t *hook = NULL;

	if (!load_hook(s, id, &hook, err))
		return NULL;
	if (hook == NULL)
		wording_no_such_hook(id, err);
	return hook;
}

json_t *control_hook_list(struct store *s, struct floe_error *err)
{
	struct hook_row *rows = NULL;
	size_t count = 0;

	if (!store_hook_list(s, &rows, &count, err))
		return NULL;
	json_t *hooks = rowjson_array(rows, count, sizeof(*rows), hook_json);
	store_hook_rows_free(rows, count);
	if (hooks == NULL)
		return floe_err(err, FE_INTERNAL, "out of memory"), NULL;
	return json_pack("{s:o}", "hooks", hooks);
}

static json_t *hook_details(const json_t *hook, const char *reason)
{
	return json_pack("{s:O, s:O, s:O, s:O, s:s*}", "hook-id", json_object_get(hook, "id"),
			 "hook-name", json_object_get(hook, "name"), "url",
			 json_object_get(hook, "url"), "scope", json_object_get(hook, "scope"),
			 "reason", reason);
}

bool control_hook_register(struct store *s, const struct table_env *env, const char *id,
			   const struct hook_spec *spec, json_t **hook, struct floe_error *err)
{
	char *sealed = NULL;
	bool ok;

	*hook = NULL;
	/* Only the sealed secret ever reaches the database. */
	if (spec->secret != NULL) {
		sealed = hooksecrets_seal(env->hook_sealer, id, spec->secret, err);
		if (sealed == NULL)
			return false;
	}
	if (!store_begin(s, err)) {
		free(sealed);
		return false;
	}
	ok = store_hook_insert(s, id, spec->name, spec->url, sealed, &spec->scope_ns,
			       spec->scope_table, spec->timeout_ms, err) &&
	     load_hook(s, id, hook, err);
	free(sealed);
	if (ok && *hook == NULL)
		ok = floe_err(err, FE_INTERNAL, "the new hook could not be read back");
	if (ok) {
		json_t *details = hook_details(*hook, NULL);
		struct store_actor who = audit_actor(env);
		ok = store_event_insert(s, "hook.registered", &who, &spec->scope_ns,
					spec->scope_table, NULL, details, err);
		json_decref(details);
	}
	ok = ok && idem_record(s, env, 201, *hook, err);
	if (!control_finish_tx(s, ok, err)) {
		json_decref(*hook);
		*hook = NULL;
		return false;
	}
	return true;
}

/* The hook.deleted event of hook (as hook_json shows it), under its
 * scope's namespace and table so a filter of the audit log finds it. */
static bool hook_deleted_event(struct store *s, const struct table_env *env, const json_t *hook,
			       const char *reason, struct floe_error *err)
{
	const json_t *scope = json_object_get(hook, "scope");
	const json_t *levels = json_object_get(scope, "namespace");
	struct ns_ident ns = { 0 };
	struct store_actor who = audit_actor(env);
	json_t *details = NULL;
	bool ok = false;

	if (levels != NULL && !ident_ns_from_json(levels, "namespace", &ns, err))
		return false;
	details = hook_details(hook, reason);
	if (details == NULL) {
		floe_err(err, FE_INTERNAL, "out of memory");
		goto done;
	}
	ok = store_event_insert(s, "hook.deleted", &who, &ns,
				json_string_value(json_object_get(scope, "table")), NULL, details,
				err);
done:
	json_decref(details);
	ident_ns_clear(&ns);
	return ok;
}

bool control_hook_delete(struct store *s, const struct table_env *env, const char *id,
			 const char *reason, struct floe_error *err)
{
	json_t *hook = NULL;
	char *guarded = NULL;
	char *property = NULL;
	bool deleted = false;
	bool ok;

	if (!store_begin(s, err))
		return false;
	ok = store_hook_lock(s, err) && load_hook(s, id, &hook, err);
	if (ok && hook == NULL)
		ok = wording_no_such_hook(id, err);
	/* Every hook in scope of a protected table is part of its effective
	 * control (effective.h), whichever others cover it too: a hook that
	 * always passes, added next to the auditor, must not let the
	 * auditor go. */
	if (ok && reason == NULL) {
		ok = store_hook_guards(s, id, &guarded, &property, err);
		if (ok && guarded != NULL)
			ok = floe_err(
				err, FE_FORBIDDEN,
				"audit hook %s covers %s, protected by %s=true: deleting it weakens the audited-publish control (every hook in scope of a protected table must pass); only POST /v1/controls/delete-hook with a reason may",
				id, guarded, property);
	}
	if (ok)
		ok = store_hook_delete(s, id, &deleted, err);
	if (ok && !deleted)
		ok = wording_no_such_hook(id, err);
	if (ok)
		ok = hook_deleted_event(s, env, hook, reason, err);
	ok = ok && idem_record(s, env, 204, NULL, err);
	free(guarded);
	free(property);
	json_decref(hook);
	return control_finish_tx(s, ok, err);
}

/* --- the control route --- */

struct control_event {
	const struct table_env *env;
	const struct policy_control *control;
	const struct ns_ident *ns;
	const char *table;
	bool required;
	const char *reason;
};

/* In the table commit's transaction: the control's event. */
static bool table_control_also(struct store *s, void *ctx, const json_t *result,
			       struct floe_error *err)
{
	struct control_event *c = ctx;

	(void)result;
	json_t *details = json_pack("{s:b, s:s}", "required", c->required, "reason", c->reason);
	struct store_actor who = audit_actor(c->env);
	bool ok = store_event_insert(s, c->control->event, &who, c->ns, c->table, NULL, details,
				     err);
	json_decref(details);
	return ok && idem_record(s, c->env, 200, result, err);
}

/* Sets or (weakening it) removes control's property on a table or a
 * namespace. */
static json_t *apply_property(struct store *s, const struct table_env *env,
			      const struct policy_control *control, const json_t *body,
			      const char *reason, struct floe_error *err)
{
	struct ns_ident ns = { 0 };
	const json_t *table = json_object_get(body, "table");
	const json_t *required = json_object_get(body, "required");
	json_t *out = NULL;
	json_t *change = NULL;

	if (!json_is_boolean(required))
		return floe_err(err, FE_BAD_REQUEST, "field 'required' must be a boolean"), NULL;
	if (table != NULL && !json_is_null(table)) {
		if (!json_is_string(table))
			return floe_err(err, FE_BAD_REQUEST, "field 'table' must be a string"),
			       NULL;
		if (!ident_name_check(json_string_value(table), json_string_length(table), "table",
				      err))
			return NULL;
	}
	if (!ident_ns_from_json(json_object_get(body, "namespace"), "namespace", &ns, err))
		return NULL;
	if (json_is_string(table)) {
		struct control_event c = {
			.env = env,
			.control = control,
			.ns = &ns,
			.table = json_string_value(table),
			.required = json_is_true(required),
			.reason = reason,
		};
		change = json_is_true(required)
				 ? json_pack("[{s:s, s:{s:s}}]", "action", "set-properties",
					     "updates", control->property, "true")
				 : json_pack("[{s:s, s:[s]}]", "action", "remove-properties",
					     "removals", control->property);
		json_t *res = table_commit_with(s, env, &ns, c.table, NULL, change,
						TABLE_COMMIT_CONTROL, table_control_also, &c, err);
		if (res == NULL)
			goto done;
		json_decref(res);
	} else {
		change = json_is_true(required)
				 ? json_pack("{s:{s:s}}", "updates", control->property, "true")
				 : json_pack("{s:[s]}", "removals", control->property);
		json_t *res = ns_update_properties(s, &ns, change, env, reason, err);
		if (res == NULL)
			goto done;
		json_decref(res);
	}
	out = json_pack("{s:o, s:s*, s:b}", "namespace", ident_ns_to_json(&ns), "table",
			json_string_value(table), "required", json_is_true(required));
done:
	json_decref(change);
	ident_ns_clear(&ns);
	return out;
}

static json_t *apply_wap_required(struct store *s, const struct table_env *env, const json_t *body,
				  const char *reason, struct floe_error *err)
{
	return apply_property(s, env, policy_control_of(POLICY_PROPERTY), body, reason, err);
}

static json_t *apply_separation_of_duties(struct store *s, const struct table_env *env,
					  const json_t *body, const char *reason,
					  struct floe_error *err)
{
	return apply_property(s, env, policy_control_of(POLICY_SOD_PROPERTY), body, reason, err);
}

static json_t *apply_release_required(struct store *s, const struct table_env *env,
				      const json_t *body, const char *reason,
				      struct floe_error *err)
{
	return apply_property(s, env, policy_control_of(POLICY_RELEASE_PROPERTY), body, reason,
			      err);
}

static json_t *apply_delete_hook(struct store *s, const struct table_env *env, const json_t *body,
				 const char *reason, struct floe_error *err)
{
	const char *id = json_string_value(json_object_get(body, "hook-id"));

	if (id == NULL)
		return floe_err(err, FE_BAD_REQUEST, "missing required field 'hook-id'"), NULL;
	if (!hook_id_valid(id))
		return wording_no_such_hook(id, err), NULL;
	if (!control_hook_delete(s, env, id, reason, err))
		return NULL;
	return json_pack("{s:s}", "hook-id", id);
}

static json_t *apply_register(struct store *s, const struct table_env *env, const json_t *body,
			      const char *reason, struct floe_error *err)
{
	struct ns_ident ns = { 0 };
	json_t *out = NULL;
	json_t *reg = NULL;

	if (!ident_ns_from_json(json_object_get(body, "namespace"), "namespace", &ns, err))
		return NULL;
	reg = json_deep_copy(body);
	if (reg == NULL || json_object_set_new(reg, "overwrite", json_true()) != 0) {
		floe_err(err, FE_INTERNAL, "out of memory");
		goto done;
	}
	/* What a register asks, besides CONTROLS_MANAGE, was the gate's
	 * (server/routes.c, the control route's demands). */
	out = table_register_with(s, env, &ns, reg, reason, err);
done:
	json_decref(reg);
	ident_ns_clear(&ns);
	return out;
}

/* POST /controls/undrop {"namespace", "name", "reason"}: an undrop that
 * may weaken the table's control; it asks what an undrop asks. */
static json_t *apply_undrop(struct store *s, const struct table_env *env, const json_t *body,
			    const char *reason, struct floe_error *err)
{
	struct ns_ident ns = { 0 };
	const json_t *name = json_object_get(body, "name");
	json_t *out = NULL;

	if (!json_is_string(name))
		return floe_err(err, FE_BAD_REQUEST, "missing required field 'name'"), NULL;
	if (!ident_name_check(json_string_value(name), json_string_length(name), "table name", err))
		return NULL;
	if (!ident_ns_from_json(json_object_get(body, "namespace"), "namespace", &ns, err))
		return NULL;
	/* What an undrop asks was the gate's (the control route's demands). */
	out = table_undrop_with(s, env, &ns, json_string_value(name), reason, err);
	ident_ns_clear(&ns);
	return out;
}

static json_t *apply_rename(struct store *s, const struct table_env *env, const json_t *body,
			    const char *reason, struct floe_error *err)
{
	if (!table_rename(s, env, body, reason, err))
		return NULL;
	return json_pack("{s:O, s:O}", "source", json_object_get(body, "source"), "destination",
			 json_object_get(body, "destination"));
}

typedef json_t *(*control_action_fn)(struct store *s, const struct table_env *env,
				     const json_t *body, const char *reason,
				     struct floe_error *err);

static const struct {
	const char *name;
	control_action_fn apply;
} control_actions[] = {
	{ "wap-required", apply_wap_required },
	{ "separation-of-duties", apply_separation_of_duties },
	{ "release-required", apply_release_required },
	{ "delete-hook", apply_delete_hook },
	{ "register", apply_register },
	{ "rename", apply_rename },
	{ "undrop", apply_undrop },
};

/* An action's result when the body alone tells it (as the action
 * answers it): new reference, or NULL when the change's own answer is
 * the result (register, undrop) or the body is not the action's. */
static json_t *known_result(const char *action, const json_t *body)
{
	const json_t *table = json_object_get(body, "table");

	if (strcmp(action, "delete-hook") == 0)
		return json_pack("{s:O?}", "hook-id", json_object_get(body, "hook-id"));
	if (strcmp(action, "rename") == 0)
		return json_pack("{s:O?, s:O?}", "source", json_object_get(body, "source"),
				 "destination", json_object_get(body, "destination"));
	if (strcmp(action, "register") == 0 || strcmp(action, "undrop") == 0)
		return NULL;
	return json_pack("{s:O?, s:s*, s:b}", "namespace", json_object_get(body, "namespace"),
			 "table", json_string_value(table), "required",
			 json_is_true(json_object_get(body, "required")));
}

json_t *control_apply(struct store *s, const struct table_env *env, const char *action,
		      const json_t *body, struct floe_error *err)
{
	const json_t *reason = json_object_get(body, "reason");
	control_action_fn apply = NULL;

	for (size_t i = 0; i < sizeof(control_actions) / sizeof(*control_actions); i++) {
		if (strcmp(control_actions[i].name, action) == 0)
			apply = control_actions[i].apply;
	}
	if (apply == NULL)
		return floe_err(
			       err, FE_BAD_REQUEST,
			       "no control action %s (wap-required, separation-of-duties, release-required, delete-hook, register, rename, undrop)",
			       action),
		       NULL;
	if (!json_is_object(body))
		return floe_err(err, FE_BAD_REQUEST, "the body must be a JSON object"), NULL;
	if (!json_is_string(reason) || json_string_length(reason) == 0 ||
	    json_string_length(reason) > CONTROL_REASON_MAX)
		return floe_err(
			       err, FE_BAD_REQUEST,
			       "field 'reason' is required: a non-empty string of at most %d bytes that goes into the audit log",
			       CONTROL_REASON_MAX),
		       NULL;
	/* The action's change records this route's answer under the
	 * Idempotency-Key: the result known before the change, else the
	 * change's own answer. */
	json_t *known = known_result(action, body);
	struct idem_as as = { .action = action, .reason = reason, .result = known };
	struct table_env e = *env;
	e.idem_as = &as;
	json_t *result = apply(s, &e, body, json_string_value(reason), err);
	json_decref(known);
	if (result == NULL)
		return NULL;
	log_info("control",
		 "%s done through the control route (the reason is in the audit log) rid=%s",
		 action, env->request_id);
	return json_pack("{s:s, s:O, s:o}", "action", action, "reason", reason, "result", result);
}
