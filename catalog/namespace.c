/*
 * namespace.c - namespace requests: what a valid body is, what the answer
 * looks like, and the page tokens of listings. The SQL is in the store.
 */
#include "namespace.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "access.h"
#include "auditlog.h"
#include "idem.h"
#include "policy.h"
#include "ports.h"
#include "rowjson.h"
#include "table.h"
#include "wording.h"

bool page_request_parse(const char *token, const char *size, struct page_request *out,
			struct floe_error *err)
{
	memset(out, 0, sizeof(*out));
	out->page_size = NS_PAGE_SIZE_DEFAULT;
	if (size != NULL) {
		char *end = NULL;
		long v = strtol(size, &end, 10);
		if (*size == '\0' || *end != '\0' || v < 1)
			return floe_err(err, FE_BAD_REQUEST, "pageSize must be a positive integer");
		out->page_size = v > NS_PAGE_SIZE_MAX ? NS_PAGE_SIZE_MAX : v;
	}
	if (token == NULL)
		return true;
	out->paginate = true;
	if (token[0] == '\0')
		return true;
	/* A token is the hex of the last key returned: opaque to clients,
	 * and it survives any URL encoding unchanged. */
	size_t len = strlen(token);
	if (len % 2 != 0 || len / 2 > (size_t)IDENT_MAX_LEVELS * (IDENT_MAX_NAME_BYTES + 1))
		goto bad;
	char *raw = malloc(len / 2 * 3 + 1);
	if (raw == NULL)
		return floe_err(err, FE_INTERNAL, "out of memory");
	/* Re-encode as %XX so ident_ns_parse validates the levels. */
	for (size_t i = 0; i < len; i += 2) {
		if (strchr("0123456789abcdef", token[i]) == NULL ||
		    strchr("0123456789abcdef", token[i + 1]) == NULL || token[i] == '\0' ||
		    token[i + 1] == '\0') {
			free(raw);
			goto bad;
		}
		raw[i / 2 * 3] = '%';
		raw[i / 2 * 3 + 1] = token[i];
		raw[i / 2 * 3 + 2] = token[i + 1];
	}
	raw[len / 2 * 3] = '\0';
	struct floe_error ignored;
	bool ok = ident_ns_parse(raw, len / 2 * 3, IDENT_PLUS_LITERAL, &out->after, &ignored);
	free(raw);
	if (ok)
		return true;
bad:
	return floe_err(err, FE_BAD_REQUEST, "pageToken is not a token this server issued");
}

void page_request_clear(struct page_request *page)
{
	ident_ns_clear(&page->after);
}

char *page_token_encode(const struct ns_ident *last)
{
	static const char hex[] = "0123456789abcdef";
	char *joined = ident_ns_join(last);
	char *token;
	size_t len;

	if (joined == NULL)
		return NULL;
	len = strlen(joined);
	token = malloc(len * 2 + 1);
	if (token != NULL) {
		for (size_t i = 0; i < len; i++) {
			token[2 * i] = hex[(unsigned char)joined[i] >> 4];
			token[2 * i + 1] = hex[(unsigned char)joined[i] & 0xF];
		}
		token[len * 2] = '\0';
	}
	free(joined);
	return token;
}

bool ns_check_string_map(const json_t *v, const char *field, struct floe_error *err)
{
	const char *key;
	json_t *value;

	if (!json_is_object(v))
		return floe_err(err, FE_BAD_REQUEST, "field '%s' must be an object of strings",
				field);
	json_object_foreach((json_t *)v, key, value) {
		if (!json_is_string(value))
			return floe_err(err, FE_BAD_REQUEST,
					"field '%s': the value of '%s' must be a string", field,
					key);
	}
	return true;
}

/* The answer {"namespace", "properties"} (properties stolen). A namespace
 * without a "location" property is answered with its default location, as
 * Iceberg's own catalogs do: engines (Trino) place new tables below it. */
static json_t *ns_answer(struct store *s, const char *warehouse, const struct ns_ident *ns,
			 json_t *properties, struct floe_error *err)
{
	json_t *levels = ident_ns_to_json(ns);
	char *loc = NULL;

	if (levels == NULL || properties == NULL)
		goto oom;
	if (json_object_get(properties, "location") == NULL) {
		if (!table_namespace_location(s, warehouse, ns, &loc, err))
			goto fail;
		json_t *copy = json_copy(properties);
		if (copy == NULL || json_object_set_new(copy, "location", json_string(loc)) != 0) {
			json_decref(copy);
			goto oom;
		}
		json_decref(properties);
		properties = copy;
	}
	free(loc);
	json_t *answer = json_pack("{s:o, s:o}", "namespace", levels, "properties", properties);
	if (answer == NULL)
		floe_err(err, FE_INTERNAL, "out of memory");
	return answer;
oom:
	floe_err(err, FE_INTERNAL, "out of memory");
fail:
	free(loc);
	json_decref(levels);
	json_decref(properties);
	return NULL;
}

/* The control properties (policy.h) among properties, as given: what a
 * namespace event shows of them (new reference; NULL when out of memory). */
static json_t *ns_controls(const json_t *properties)
{
	json_t *out = json_object();

	for (size_t i = 0; out != NULL && i < POLICY_NCONTROLS; i++) {
		json_t *v = json_object_get(properties, policy_controls[i].property);
		if (v != NULL && json_object_set(out, policy_controls[i].property, v) != 0) {
			json_decref(out);
			out = NULL;
		}
	}
	return out;
}

/* In the change's transaction: the namespace event `event` with the
 * control properties the namespace has (created) or had (dropped). */
static bool ns_event(struct store *s, const struct table_env *env, const char *event,
		     const struct ns_ident *ns, const json_t *properties, struct floe_error *err)
{
	json_t *controls = ns_controls(properties);
	json_t *details = controls != NULL ? json_pack("{s:o}", "controls", controls) : NULL;
	struct store_actor who = audit_actor(env);

	if (details == NULL)
		return floe_err(err, FE_INTERNAL, "out of memory");
	bool ok = store_event_insert(s, event, &who, ns, NULL, NULL, details, err);
	json_decref(details);
	return ok;
}

json_t *ns_create(struct store *s, const struct table_env *env, const json_t *body,
		  struct floe_error *err)
{
	struct ns_ident ns = { 0 };
	json_t *props = json_object_get(body, "properties");
	json_t *stored = NULL;
	json_t *answer = NULL;

	if (!ident_ns_from_json(json_object_get(body, "namespace"), "namespace", &ns, err))
		return NULL;
	if (props == NULL || json_is_null(props))
		props = NULL;
	else if (!ns_check_string_map(props, "properties", err))
		goto done;
	stored = props != NULL ? json_incref(props) : json_object();
	/* The namespace and its namespace.created event, or neither. */
	if (!store_begin(s, err))
		goto done;
	if (!store_ns_create(s, &ns, stored, err)) {
		/* Missing is the parent; existing is ns itself. */
		struct ns_ident parent = ns;
		if (parent.nlevels > 0)
			parent.nlevels--;
		ns_word_error(err->kind == FE_NO_SUCH_NAMESPACE ? &parent : &ns, err);
		store_rollback(s);
		goto done;
	}
	if (!ns_event(s, env, "namespace.created", &ns, stored, err)) {
		store_rollback(s);
		goto done;
	}
	/* The answer is made, and recorded under the key, before the COMMIT. */
	answer = ns_answer(s, env->warehouse, &ns, json_incref(stored), err);
	if (answer == NULL || !idem_record(s, env, 200, answer, err) || !store_commit(s, err)) {
		if (err->kind != FE_COMMIT_STATE_UNKNOWN)
			store_rollback(s);
		json_decref(answer);
		answer = NULL;
	}
done:
	json_decref(stored);
	ident_ns_clear(&ns);
	return answer;
}

json_t *ns_load(struct store *s, const char *warehouse, const struct ns_ident *ns,
		struct floe_error *err)
{
	json_t *props = NULL;
	json_t *answer;

	if (!store_ns_load(s, ns, &props, err))
		return ns_word_error(ns, err), NULL;
	answer = ns_answer(s, warehouse, ns, props, err);
	return answer;
}

bool ns_exists(struct store *s, const struct ns_ident *ns, bool *exists, struct floe_error *err)
{
	return store_ns_exists(s, ns, exists, err);
}

bool ns_drop(struct store *s, const struct table_env *env, const struct ns_ident *ns,
	     struct floe_error *err)
{
	json_t *props = NULL;

	/* A namespace holds no table when it is dropped, so no table's
	 * effective control changes; a table kept for an undrop recorded its
	 * own (effective.h). The drop is an audit event with the controls
	 * the namespace set, in its transaction. */
	if (!store_begin(s, err))
		return false;
	if (!store_ns_drop(s, ns, &props, err)) {
		ns_word_error(ns, err);
		store_rollback(s);
		return false;
	}
	bool ok = ns_event(s, env, "namespace.dropped", ns, props, err) &&
		  idem_record(s, env, 204, NULL, err) && store_commit(s, err);
	if (!ok && err->kind != FE_COMMIT_STATE_UNKNOWN)
		store_rollback(s);
	json_decref(props);
	return ok;
}

/* A namespace's levels as a JSON array (rowjson_array's converter). */
static json_t *ns_levels_json(const void *row)
{
	return ident_ns_to_json(row);
}

json_t *ns_list(struct store *s, const struct principal *who, const struct ns_ident *parent,
		const struct page_request *page, struct floe_error *err)
{
	struct ns_ident *rows = NULL;
	size_t count = 0;
	json_t *token = json_null();
	bool more = false;
	long limit = page->paginate ? page->page_size : -1;
	const struct ns_ident *after = page->after.nlevels > 0 ? &page->after : NULL;

	/* Whether who may list parent at all was the gate's (ROUTE_ON_LISTING);
	 * what the page shows is decided here. */
	bool listed = who == NULL
			      ? store_ns_list(s, parent, after, limit, &rows, &count, &more, err)
			      : store_ns_list_visible(s, who->roles, who->nroles, parent, after,
						      limit, &rows, &count, &more, err);
	if (!listed) {
		if (parent != NULL)
			ns_word_error(parent, err);
		return NULL;
	}
	json_t *list = rowjson_array(rows, count, sizeof(*rows), ns_levels_json);
	if (list != NULL && more && count > 0) {
		char *t = page_token_encode(&rows[count - 1]);

		if (t == NULL) {
			json_decref(list);
			list = NULL;
		}
		token = t != NULL ? json_string(t) : token;
		free(t);
	}
	store_ns_rows_free(rows, count);
	if (list == NULL)
		return floe_err(err, FE_INTERNAL, "out of memory"), NULL;
	return json_pack("{s:o, s:o}", "namespaces", list, "next-page-token", token);
}

static bool value_is_true(const json_t *v)
{
	const char *s = json_string_value(v);
	return s != NULL && strcasecmp(s, "true") == 0;
}

/* True when the string array arr holds key. */
static bool array_has_string(const json_t *arr, const char *key)
{
	size_t i;
	json_t *v;

	json_array_foreach((json_t *)arr, i, v) {
		if (strcmp(json_string_value(v), key) == 0)
			return true;
	}
	return false;
}

/* The answer of a properties update over the properties old it replaced:
 * {"updated", "removed", "missing"} (new reference; NULL when out of
 * memory). */
static json_t *properties_answer(const json_t *old, json_t *updates, json_t *removals)
{
	json_t *updated = json_array();
	json_t *removed = json_array();
	json_t *missing = json_array();
	json_t *answer = NULL;
	const char *key;
	json_t *v;
	size_t i;

	if (updated == NULL || removed == NULL || missing == NULL)
		goto done;
	if (updates != NULL) {
		json_object_foreach(updates, key, v) {
			if (json_array_append_new(updated, json_string(key)) != 0)
				goto done;
		}
	}
	if (removals != NULL) {
		json_array_foreach(removals, i, v) {
			const char *k = json_string_value(v);
			json_t *target = json_object_get(old, k) != NULL ? removed : missing;
			if (array_has_string(target, k))
				continue;
			if (json_array_append_new(target, json_string(k)) != 0)
				goto done;
		}
	}
	answer = json_pack("{s:O, s:O, s:O}", "updated", updated, "removed", removed, "missing",
			   missing);
done:
	json_decref(updated);
	json_decref(removed);
	json_decref(missing);
	return answer;
}

json_t *ns_update_properties(struct store *s, const struct ns_ident *ns, const json_t *body,
			     const struct table_env *env, const char *reason,
			     struct floe_error *err)
{
	json_t *removals = json_object_get(body, "removals");
	json_t *updates = json_object_get(body, "updates");
	json_t *old = NULL;
	json_t *answer = NULL;
	json_t *v;
	size_t i;

	if (removals == NULL || json_is_null(removals))
		removals = NULL;
	if (updates == NULL || json_is_null(updates))
		updates = NULL;
	if (removals != NULL) {
		if (!json_is_array(removals))
			return floe_err(err, FE_BAD_REQUEST,
					"field 'removals' must be an array of strings"),
			       NULL;
		json_array_foreach(removals, i, v) {
			if (!json_is_string(v))
				return floe_err(err, FE_BAD_REQUEST,
						"field 'removals' must be an array of strings"),
				       NULL;
		}
	}
	if (updates != NULL && !ns_check_string_map(updates, "updates", err))
		return NULL;
	if (removals != NULL && updates != NULL) {
		json_array_foreach(removals, i, v) {
			if (json_object_get(updates, json_string_value(v)) != NULL)
				return floe_err(err, FE_UNPROCESSABLE,
						"property '%s' is both set and removed",
						json_string_value(v)),
				       NULL;
		}
	}

	/* The change, the control's check of it, its audit event and (the
	 * properties route's) answer under an Idempotency-Key are one
	 * transaction: the check sees the properties the change replaced. */
	json_t *empty_arr = json_array();
	json_t *empty_obj = json_object();
	const json_t *rem = removals ? removals : empty_arr;
	const json_t *upd = updates ? updates : empty_obj;
	bool ok = store_begin(s, err);
	if (ok && !store_ns_update_properties(s, ns, rem, upd, &old, err))
		ok = ns_word_error(ns, err);
	if (ok && reason == NULL)
		ok = policy_check_ns_properties(ns, old, rem, upd, err);
	struct store_actor who = audit_actor(env);
	for (size_t c = 0; ok && c < POLICY_NCONTROLS; c++) {
		const char *prop = policy_controls[c].property;
		bool before = value_is_true(json_object_get(old, prop));
		const json_t *set = json_object_get(upd, prop);
		bool touched = set != NULL || array_has_string(rem, prop);
		bool after = set != NULL ? value_is_true(set)
					 : before && !array_has_string(rem, prop);
		if (before != after || (reason != NULL && touched)) {
			json_t *details = json_pack("{s:b, s:s*}", "required", after, "reason",
						    reason);
			ok = store_event_insert(s, policy_controls[c].event, &who, ns, NULL, NULL,
						details, err);
			json_decref(details);
		}
	}
	json_decref(empty_arr);
	json_decref(empty_obj);
	if (ok) {
		answer = properties_answer(old, updates, removals);
		ok = answer != NULL || floe_err(err, FE_INTERNAL, "out of memory");
	}
	if (ok)
		ok = idem_record(s, env, 200, answer, err);
	if (ok)
		ok = store_commit(s, err);
	else if (err->kind != FE_COMMIT_STATE_UNKNOWN)
		store_rollback(s);
	json_decref(old);
	if (!ok) {
		json_decref(answer);
		return NULL;
	}
	return answer;
}
