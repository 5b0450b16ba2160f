/*
 * refs.c - refs over the commit engine: each call reads the metadata,
 * decides, and commits set-snapshot-ref / remove-snapshot-ref guarded by
 * assert-ref-snapshot-id, so a concurrent change to the same ref is a 409
 * and never a lost update.
 */
#include "refs.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "idem.h"
#include "idmap.h"
#include "ports.h"
#include "tablemeta.h"
#include "wording.h"

static const char *const retention_keys[] = { "max-ref-age-ms", "max-snapshot-age-ms",
					      "min-snapshots-to-keep" };

json_t *refs_json(const char *name, const json_t *ref)
{
	json_t *out = json_pack("{s:s, s:O, s:O}", "name", name, "type",
				json_object_get(ref, "type"), "snapshot-id",
				json_object_get(ref, "snapshot-id"));
	for (size_t i = 0; out != NULL && i < 3; i++) {
		json_t *v = json_object_get(ref, retention_keys[i]);
		if (v != NULL && !json_is_null(v))
			json_object_set(out, retention_keys[i], v);
	}
	return out;
}

bool refs_is_ancestor(const json_t *m, long long ancestor, long long id)
{
	const json_t *snaps = json_object_get(m, "snapshots");
	size_t guard = json_array_size(snaps) + 1;
	struct idmap *parents = idmap_new(json_array_size(snaps));
	size_t i;
	json_t *s;
	bool found = false;

	/* One map of snapshot -> parent: a walk down a long history is then
	 * linear, not a scan of every snapshot per step. */
	if (parents == NULL)
		return false;
	json_array_foreach(snaps, i, s) {
		json_t *sid = json_object_get(s, "snapshot-id");
		json_t *parent = json_object_get(s, "parent-snapshot-id");
		if (!json_is_integer(sid) || idmap_has(parents, json_integer_value(sid)))
			continue;
		if (!idmap_put(parents, json_integer_value(sid),
			       json_is_integer(parent) ? json_integer_value(parent) : -1)) {
			idmap_free(parents);
			return false;
		}
	}
	while (guard-- > 0) {
		int64_t parent;
		if (id == ancestor) {
			found = true;
			break;
		}
		if (!idmap_get(parents, id, &parent) || parent == -1)
			break;
		id = parent;
	}
	idmap_free(parents);
	return found;
}

static int ref_name_cmp(const void *x, const void *y)
{
	const json_t *a = *(json_t *const *)x;
	const json_t *b = *(json_t *const *)y;

	return strcmp(json_string_value(json_object_get(a, "name")),
		      json_string_value(json_object_get(b, "name")));
}

json_t *refs_list(struct store *s, const struct ns_ident *ns, const char *table,
		  struct floe_error *err)
{
	json_t *m = table_load_metadata(s, ns, table, NULL, err);
	json_t *list;
	const char *name;
	json_t *ref;

	if (m == NULL)
		return NULL;
	list = json_array();
	json_object_foreach(json_object_get(m, "refs"), name, ref)
		json_array_append_new(list, refs_json(name, ref));
	/* jansson keeps insertion order; the answer is sorted by name
	 * (qsort: a table may have many thousands of tags). */
	size_t n = json_array_size(list);
	json_t **sorted = malloc((n ? n : 1) * sizeof(json_t *));
	if (sorted == NULL) {
		json_decref(list);
		json_decref(m);
		return floe_err(err, FE_INTERNAL, "out of memory"), NULL;
	}
	for (size_t i = 0; i < n; i++)
		sorted[i] = json_incref(json_array_get(list, i));
	qsort(sorted, n, sizeof(json_t *), ref_name_cmp);
	json_array_clear(list);
	for (size_t i = 0; i < n; i++)
		json_array_append_new(list, sorted[i]);
	free(sorted);
	json_decref(m);
	return json_pack("{s:o}", "refs", list);
}

json_t *refs_get(struct store *s, const struct ns_ident *ns, const char *table, const char *ref,
		 struct floe_error *err)
{
	json_t *m = table_load_metadata(s, ns, table, NULL, err);
	json_t *out = NULL;

	if (m == NULL)
		return NULL;
	json_t *r = json_object_get(json_object_get(m, "refs"), ref);
	if (r == NULL)
		wording_no_such_ref(ref, err);
	else
		out = refs_json(ref, r);
	json_decref(m);
	return out;
}

/* The ref a commit's answer shows for name: a Ref, or null when it is
 * gone (new reference; NULL when out of memory). */
static json_t *ref_answer(const json_t *result, const char *name)
{
	json_t *r = json_object_get(json_object_get(json_object_get(result, "metadata"), "refs"),
				    name);

	return r != NULL ? refs_json(name, r) : json_null();
}

/* What a ref route answers, recorded under its Idempotency-Key with the
 * swap. */
struct ref_answer {
	const struct table_env *env;
	const char *name;
	int status; /* 204: no body */
};

static bool ref_answer_also(struct store *s, void *ctx, const json_t *result,
			    struct floe_error *err)
{
	const struct ref_answer *a = ctx;

	if (a->status == 204)
		return idem_record(s, a->env, 204, NULL, err);
	json_t *answer = ref_answer(result, a->name);
	if (answer == NULL)
		return floe_err(err, FE_INTERNAL, "out of memory");
	bool ok = idem_record(s, a->env, a->status, answer, err);
	json_decref(answer);
	return ok;
}

/* Commits one ref update guarded by the ref's current snapshot (or its
 * absence); returns the new metadata's ref entry as a Ref. The route's
 * answer (status) is recorded with the swap. */
static json_t *commit_ref(struct store *s, const struct table_env *env, const struct ns_ident *ns,
			  const char *table, const char *name, const json_t *current,
			  json_t *update, int status, struct floe_error *err)
{
	json_t *req = json_pack("{s:s, s:s}", "type", "assert-ref-snapshot-id", "ref", name);
	json_t *out = NULL;
	struct ref_answer a = { .env = env, .name = name, .status = status };

	if (current != NULL)
		json_object_set(req, "snapshot-id", json_object_get(current, "snapshot-id"));
	json_t *reqs = json_pack("[o]", req);
	json_t *updates = json_pack("[o]", update);
	json_t *result = table_commit_with(s, env, ns, table, reqs, updates, 0, ref_answer_also, &a,
					   err);
	if (result != NULL) {
		out = ref_answer(result, name);
		if (out == NULL)
			floe_err(err, FE_INTERNAL, "out of memory");
	}
	json_decref(result);
	json_decref(reqs);
	json_decref(updates);
	return out;
}

static bool name_ok(const json_t *v, struct floe_error *err)
{
	if (!json_is_string(v))
		return floe_err(err, FE_BAD_REQUEST, "missing required field 'name'");
	return ident_name_check(json_string_value(v), json_string_length(v), "ref name", err);
}

json_t *refs_create(struct store *s, const struct table_env *env, const struct ns_ident *ns,
		    const char *table, const json_t *body, struct floe_error *err)
{
	const json_t *name = json_object_get(body, "name");
	const json_t *type = json_object_get(body, "type");
	const json_t *snap = json_object_get(body, "snapshot-id");
	const json_t *replace = json_object_get(body, "replace");
	json_t *m = NULL;
	json_t *out = NULL;

	if (!name_ok(name, err))
		return NULL;
	if (!json_is_string(type) || (strcasecmp(json_string_value(type), "branch") != 0 &&
				      strcasecmp(json_string_value(type), "tag") != 0))
		return floe_err(err, FE_BAD_REQUEST, "field 'type' must be branch or tag"), NULL;
	if (snap != NULL && !json_is_null(snap) && !json_is_integer(snap))
		return floe_err(err, FE_BAD_REQUEST, "field 'snapshot-id' must be an integer"),
		       NULL;
	if (replace != NULL && !json_is_null(replace) && !json_is_boolean(replace))
		return floe_err(err, FE_BAD_REQUEST, "field 'replace' must be a boolean"), NULL;
	m = table_load_metadata(s, ns, table, NULL, err);
	if (m == NULL)
		return NULL;
	const char *n = json_string_value(name);
	json_t *current = json_object_get(json_object_get(m, "refs"), n);
	if (current != NULL && !json_is_true(replace)) {
		floe_err(err, FE_ALREADY_EXISTS, "table %s already has a %s %s", table,
			 json_string_value(json_object_get(current, "type")), n);
		goto done;
	}
	long long id;
	if (json_is_integer(snap)) {
		id = json_integer_value(snap);
	} else {
		json_t *cur = json_object_get(m, "current-snapshot-id");
		if (!json_is_integer(cur) || json_integer_value(cur) < 0) {
			floe_err(err, FE_BAD_REQUEST,
				 "Branch main has no snapshot yet; give a snapshot-id");
			goto done;
		}
		id = json_integer_value(cur);
	}
	if (tablemeta_snapshot(m, id) == NULL) {
		wording_no_such_snapshot(id, err);
		goto done;
	}
	json_t *update = json_pack("{s:s, s:s, s:s, s:I}", "action", "set-snapshot-ref", "ref-name",
				   n, "type", json_string_value(type), "snapshot-id",
				   (json_int_t)id);
	for (size_t i = 0; i < 3; i++) {
		json_t *v = json_object_get(body, retention_keys[i]);
		if (v != NULL && !json_is_null(v))
			json_object_set(update, retention_keys[i], v);
	}
	out = commit_ref(s, env, ns, table, n, current, update, 201, err);
done:
	json_decref(m);
	return out;
}

bool refs_drop(struct store *s, const struct table_env *env, const struct ns_ident *ns,
	       const char *table, const char *ref, struct floe_error *err)
{
	json_t *m;
	json_t *out;

	if (strcmp(ref, "main") == 0)
		return floe_err(err, FE_BAD_REQUEST, "Branch main cannot be dropped");
	m = table_load_metadata(s, ns, table, NULL, err);
	if (m == NULL)
		return false;
	json_t *current = json_object_get(json_object_get(m, "refs"), ref);
	if (current == NULL) {
		json_decref(m);
		return wording_no_such_ref(ref, err);
	}
	out = commit_ref(s, env, ns, table, ref, current,
			 json_pack("{s:s, s:s}", "action", "remove-snapshot-ref", "ref-name", ref),
			 204, err);
	json_decref(m);
	json_decref(out);
	return out != NULL;
}

json_t *refs_fast_forward(struct store *s, const struct table_env *env, const struct ns_ident *ns,
			  const char *table, const char *ref, const json_t *body,
			  struct floe_error *err)
{
	const json_t *to = json_object_get(body, "to");
	const json_t *snap = json_object_get(body, "snapshot-id");
	json_t *m;
	json_t *out = NULL;
	long long target;

	if ((to == NULL || json_is_null(to)) == (snap == NULL || json_is_null(snap)))
		return floe_err(err, FE_BAD_REQUEST,
				"give exactly one of 'to' (a ref name) or 'snapshot-id'"),
		       NULL;
	if (to != NULL && !json_is_null(to) && !json_is_string(to))
		return floe_err(err, FE_BAD_REQUEST, "field 'to' must be a ref name"), NULL;
	if (snap != NULL && !json_is_null(snap) && !json_is_integer(snap))
		return floe_err(err, FE_BAD_REQUEST, "field 'snapshot-id' must be an integer"),
		       NULL;
	m = table_load_metadata(s, ns, table, NULL, err);
	if (m == NULL)
		return NULL;
	json_t *refs = json_object_get(m, "refs");
	json_t *current = json_object_get(refs, ref);
	if (current == NULL) {
		wording_no_such_ref(ref, err);
		goto done;
	}
	if (json_is_string(to)) {
		json_t *t = json_object_get(refs, json_string_value(to));
		if (t == NULL) {
			wording_no_such_ref(json_string_value(to), err);
			goto done;
		}
		target = json_integer_value(json_object_get(t, "snapshot-id"));
	} else {
		target = json_integer_value(snap);
		if (tablemeta_snapshot(m, target) == NULL) {
			wording_no_such_snapshot(target, err);
			goto done;
		}
	}
	long long from = json_integer_value(json_object_get(current, "snapshot-id"));
	if (!refs_is_ancestor(m, from, target)) {
		floe_err(
			err, FE_NOT_FAST_FORWARD,
			"Branch or tag %s cannot be fast-forwarded: its snapshot %lld is not an ancestor of %lld",
			ref, from, target);
		goto done;
	}
	/* The ref keeps its type and retention; only its snapshot moves. */
	json_t *update = json_pack("{s:s, s:s, s:O, s:I}", "action", "set-snapshot-ref", "ref-name",
				   ref, "type", json_object_get(current, "type"), "snapshot-id",
				   (json_int_t)target);
	for (size_t i = 0; i < 3; i++) {
		json_t *v = json_object_get(current, retention_keys[i]);
		if (v != NULL)
			json_object_set(update, retention_keys[i], v);
	}
	out = commit_ref(s, env, ns, table, ref, current, update, 200, err);
done:
	json_decref(m);
	return out;
}
