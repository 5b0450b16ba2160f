/*
 * viewupdates.c - a view commit (viewmeta_apply), as Java's
 * ViewMetadata.Builder applies its updates: one table of view actions
 * (those shared with tables come from updates.c; schemas are indexed by
 * apply.c as for tables), then the end of the commit: the version-log
 * entry of a new current version, versions trimmed to
 * version.history.num-entries, the history of trimmed versions dropped.
 * Schemas no version uses any more are kept, as Java keeps them.
 */
#include "meta_internal.h"

#include "json.h"
#include "tablemeta.h"
#include "viewmeta.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A view commit: the working copy (a.m) with the table commit's schema
 * index, and the versions indexed by id and by content. */
struct view_commit {
	struct apply a;            /* first: an action gets &a and finds the rest */
	struct idmap *version_pos; /* version id -> position in versions */
	json_t *version_keys;      /* view_version_key -> version id (first wins) */
	struct idmap *added;       /* version ids added in this commit */
	int64_t highest;           /* the highest version id */
	int64_t last_version;      /* added last in this commit, NONE_ADDED */
	bool current_set;          /* the current version changed */
	int64_t history_ms;        /* the time of its version-log entry */
};

static struct view_commit *commit_of(struct apply *a)
{
	return (struct view_commit *)(void *)a;
}

static bool view_upgrade_format(struct apply *a, const json_t *u, const struct action *act,
				struct floe_error *err)
{
	int64_t v;
	int cur = (int)fjson_int_or(a->m, "format-version", 1);

	if (!fjson_get_int(u, "format-version", act->name, NULL, &v, err))
		return false;
	if (v > VIEWMETA_MAX_FORMAT_VERSION)
		return meta_bad(err,
				"Cannot upgrade view to unsupported format version: v%" PRId64
				" (supported: v%d)",
				v, VIEWMETA_MAX_FORMAT_VERSION);
	if (v < cur)
		return meta_bad(err, "Cannot downgrade v%d view to v%" PRId64, cur, v);
	return true; /* v == cur: only one format version exists */
}

/*
 * add-schema: an identical schema (fields and identifier fields) keeps its
 * id and leaves the one last added as it was; a new one gets the highest
 * id + 1. Its last-column-id is not
 * view metadata and is ignored.
 */
static bool view_add_schema(struct apply *a, const json_t *u, const struct action *act,
			    struct floe_error *err)
{
	const json_t *schema = json_object_get(u, "schema");
	int64_t highest, id;
	bool ok;

	(void)act;
	if (schema == NULL)
		return meta_bad(err, "add-schema: missing required field 'schema'");
	if (!schema_check(schema, TABLEMETA_MAX_FORMAT_VERSION, &highest, NULL, err))
		return false;
	json_t *copy = json_deep_copy(schema);
	if (copy == NULL)
		return meta_oom(err);
	json_object_set_new(copy, "type", json_string("struct"));
	id = apply_list_find(a, LIST_SCHEMAS, copy, &ok, err);
	if (!ok || id != NONE_ADDED) {
		json_decref(copy);
		return ok;
	}
	/* A new schema gets the highest id + 1, whatever id it was sent
	 * with, as Java's view builder numbers them. */
	id = apply_list_highest(a, LIST_SCHEMAS) + 1;
	if (!view_id_in_range(id)) {
		json_decref(copy);
		return meta_bad(err, "add-schema: schema id %" PRId64 " is out of range", id);
	}
	fjson_set_int(copy, "schema-id", id);
	return apply_list_add(a, LIST_SCHEMAS, id, copy, err);
}

/* Resolves a -1 of update u to what this commit added last. */
static bool resolve_last(int64_t *id, int64_t last, const char *msg, struct floe_error *err)
{
	if (*id != -1)
		return true;
	if (last == NONE_ADDED)
		return meta_bad(err, "%s", msg);
	*id = last;
	return true;
}

/* Appends version v (stolen) as id; false when out of memory. */
static bool version_append(struct view_commit *c, json_t *v, int64_t id, const char *key,
			   struct floe_error *err)
{
	json_t *versions = fjson_array_field(c->a.m, "versions");

	if (json_array_append_new(versions, v) != 0 ||
	    !idmap_put(c->version_pos, id, (int64_t)json_array_size(versions) - 1) ||
	    !idmap_put(c->added, id, 1) ||
	    json_object_set_new(c->version_keys, key, json_integer(id)) != 0)
		return meta_oom(err);
	if (id > c->highest)
		c->highest = id;
	c->last_version = id;
	c->a.changed = true;
	return true;
}

/*
 * add-view-version: schema-id -1 is the schema added last in this commit;
 * a version the same as one the view has (all but id and timestamp) is
 * that one, and the one last added only if this commit added it; a new
 * one keeps its id unless that is taken, then gets the highest + 1.
 */
static bool view_add_version(struct apply *a, const json_t *u, const struct action *act,
			     struct floe_error *err)
{
	struct view_commit *c = commit_of(a);
	const json_t *rv = json_object_get(u, "view-version");
	int64_t sid, id;
	bool ok;

	if (!json_is_object(rv))
		return meta_bad(err, "%s: missing required field 'view-version'", act->name);
	if (!fjson_get_int(rv, "schema-id", "view-version", NULL, &sid, err) ||
	    !resolve_last(&sid, a->last[LIST_SCHEMAS],
			  "Cannot set last added schema: no schema has been added", err))
		return false;
	json_t *v = json_deep_copy(rv);
	if (v == NULL || !fjson_set_int(v, "schema-id", sid)) {
		json_decref(v);
		return meta_oom(err);
	}
	if (!view_version_check(v, err)) {
		json_decref(v);
		return false;
	}
	if (apply_list_get(a, LIST_SCHEMAS, sid, &ok, err) == NULL) {
		json_decref(v);
		return ok ? meta_bad(err, "Cannot add version with unknown schema: %" PRId64, sid)
			  : false;
	}
	char *key = view_version_key(v);
	if (key == NULL) {
		json_decref(v);
		return meta_oom(err);
	}
	json_t *known = json_object_get(c->version_keys, key);
	if (known != NULL) {
		id = json_integer_value(known);
		c->last_version = idmap_has(c->added, id) ? id : NONE_ADDED;
		json_decref(v);
		free(key);
		return true;
	}
	id = fjson_int_or(v, "version-id", 0);
	if (id <= c->highest)
		id = c->highest + 1;
	fjson_set_int(v, "version-id", id);
	ok = version_append(c, v, id, key, err);
	free(key);
	return ok;
}

/* set-current-view-version: -1 is the version added last in this commit. */
static bool view_set_current(struct apply *a, const json_t *u, const struct action *act,
			     struct floe_error *err)
{
	struct view_commit *c = commit_of(a);
	int64_t id, pos;

	if (!fjson_get_int(u, "view-version-id", act->name, NULL, &id, err) ||
	    !resolve_last(&id, c->last_version,
			  "Cannot set last version id: no current version id has been set", err))
		return false;
	if (id == fjson_int_or(a->m, "current-version-id", -1))
		return true;
	if (!idmap_get(c->version_pos, id, &pos))
		return meta_bad(err, "Cannot set current version to unknown version: %" PRId64, id);
	const json_t *v = json_array_get(json_object_get(a->m, "versions"), (size_t)pos);
	fjson_set_int(a->m, "current-version-id", id);
	/* A version added in this commit is logged at its own time; one made
	 * current again at the commit's. */
	c->history_ms = idmap_has(c->added, id) ? fjson_int_or(v, "timestamp-ms", a->now) : a->now;
	c->current_set = true;
	a->changed = true;
	return true;
}

/* Every view update action: the one list of their names. */
static const struct action view_actions[] = {
	{ "assign-uuid", updates_assign_uuid, 0, "view-uuid" },
	{ "upgrade-format-version", view_upgrade_format, 0, NULL },
	{ "add-schema", view_add_schema, 0, NULL },
	{ "set-location", updates_set_location, 0, NULL },
	{ "set-properties", updates_set_properties, 0, NULL },
	{ "remove-properties", updates_remove_properties, 0, NULL },
	{ "add-view-version", view_add_version, 0, NULL },
	{ "set-current-view-version", view_set_current, 0, NULL },
};

static const struct action *view_action_of(const json_t *u, size_t i, struct floe_error *err)
{
	const char *name = fjson_get_str(u, "action");

	if (!json_is_object(u) || name == NULL)
		return meta_bad(err, "update %zu needs a string 'action'", i), NULL;
	for (size_t k = 0; k < sizeof(view_actions) / sizeof(view_actions[0]); k++) {
		if (strcmp(view_actions[k].name, name) == 0)
			return &view_actions[k];
	}
	return meta_bad(err, "unknown view update action '%s'", name), NULL;
}

bool viewmeta_check_actions(const json_t *updates, struct floe_error *err)
{
	size_t i;
	json_t *u;

	if (!json_is_array(updates))
		return meta_bad(err, "'updates' must be an array");
	json_array_foreach(updates, i, u) {
		if (view_action_of(u, i, err) == NULL)
			return false;
	}
	return true;
}

/* Indexes the versions of the working copy. */
static bool commit_init(struct view_commit *c, json_t *m, int64_t now, struct floe_error *err)
{
	const json_t *versions = json_object_get(m, "versions");
	size_t i;
	json_t *v;

	memset(c, 0, sizeof(*c));
	c->last_version = NONE_ADDED;
	if (!apply_init(&c->a, m, now, err))
		return false;
	c->version_pos = idmap_new(json_array_size(versions));
	c->added = idmap_new(0);
	c->version_keys = json_object();
	if (c->version_pos == NULL || c->added == NULL || c->version_keys == NULL)
		return meta_oom(err);
	json_array_foreach(versions, i, v) {
		int64_t id = fjson_int_or(v, "version-id", -1);
		char *key = view_version_key(v);
		bool ok = key != NULL && idmap_put(c->version_pos, id, (int64_t)i) &&
			  (json_object_get(c->version_keys, key) != NULL ||
			   json_object_set_new(c->version_keys, key, json_integer(id)) == 0);
		free(key);
		if (!ok)
			return meta_oom(err);
		if (id > c->highest)
			c->highest = id;
	}
	return true;
}

static void commit_free(struct view_commit *c)
{
	apply_free(&c->a);
	idmap_free(c->version_pos);
	idmap_free(c->added);
	json_decref(c->version_keys);
}

/* Orders version ids newest (highest) first. */
static int newest_first(const void *x, const void *y)
{
	int64_t a = *(const int64_t *)x;
	int64_t b = *(const int64_t *)y;

	return (a < b) - (a > b);
}

/*
 * The versions kept: the current one and the newest by id up to keep in
 * all (their order in the document stays); the version-log loses every
 * entry up to the last one of a version that is gone, as Java's
 * updateHistory does.
 */
static bool trim_versions(struct view_commit *c, int64_t keep, struct floe_error *err)
{
	json_t *versions = json_object_get(c->a.m, "versions");
	json_t *log = json_object_get(c->a.m, "version-log");
	size_t n = json_array_size(versions);
	struct idmap *kept = NULL;
	int64_t *ids = NULL;
	size_t i, from = 0;
	json_t *v;
	bool ok = false;

	if ((int64_t)n <= keep)
		return true;
	kept = idmap_new((size_t)keep + 1);
	ids = calloc(n, sizeof(*ids));
	if (kept == NULL || ids == NULL ||
	    !idmap_put(kept, fjson_int_or(c->a.m, "current-version-id", -1), 1))
		goto oom;
	json_array_foreach(versions, i, v) {
		ids[i] = fjson_int_or(v, "version-id", -1);
	}
	qsort(ids, n, sizeof(*ids), newest_first);
	for (i = 0; i < n && (int64_t)idmap_count(kept) < keep; i++) {
		if (!idmap_put(kept, ids[i], 1))
			goto oom;
	}
	json_array_foreach(versions, i, v) {
		if (!idmap_has(kept, fjson_int_or(v, "version-id", -1)))
			json_array_set_new(versions, i, json_null());
	}
	fjson_compact(versions);
	json_array_foreach(log, i, v) {
		if (!idmap_has(kept, fjson_int_or(v, "version-id", -1)))
			from = i + 1;
	}
	for (i = 0; i < from; i++)
		json_array_set_new(log, i, json_null());
	fjson_compact(log);
	ok = true;
	goto done;
oom:
	meta_oom(err);
done:
	idmap_free(kept);
	free(ids);
	return ok;
}

/* The end of a commit that changed something. */
static bool commit_finish(struct view_commit *c, struct floe_error *err)
{
	int64_t size;

	apply_settle(&c->a);
	if (!view_history_size(json_object_get(c->a.m, "properties"), &size, err))
		return false;
	if (c->current_set) {
		json_t *e = json_pack("{s:I, s:I}", "timestamp-ms", (json_int_t)c->history_ms,
				      "version-id",
				      (json_int_t)fjson_int_or(c->a.m, "current-version-id", -1));
		if (e == NULL ||
		    json_array_append_new(fjson_array_field(c->a.m, "version-log"), e) != 0)
			return meta_oom(err);
	}
	/* Versions added in this commit all stay, as in Java. */
	int64_t added = (int64_t)idmap_count(c->added);
	return trim_versions(c, added > size ? added : size, err) && viewmeta_validate(c->a.m, err);
}

json_t *viewmeta_apply(const json_t *base, const json_t *updates, int64_t now_ms, bool *changed,
		       struct floe_error *err)
{
	struct view_commit c;
	json_t *m = json_deep_copy(base);
	size_t i;
	json_t *u;

	*changed = false;
	if (m == NULL) {
		meta_oom(err);
		return NULL;
	}
	bool ok = commit_init(&c, m, now_ms, err);
	if (ok && !json_is_array(updates))
		ok = meta_bad(err, "'updates' must be an array");
	json_array_foreach(ok ? updates : NULL, i, u) {
		const struct action *act = view_action_of(u, i, err);
		if (act == NULL || !act->apply(&c.a, u, act, err)) {
			ok = false;
			break;
		}
	}
	if (ok && c.a.changed)
		ok = commit_finish(&c, err);
	*changed = c.a.changed;
	commit_free(&c);
	return meta_commit_result(base, m, ok, changed);
}
