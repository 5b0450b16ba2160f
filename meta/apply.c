/*
 * apply.c - the working copy of one commit and its indexes: snapshots,
 * statistics, schemas, specs and sort orders found by id through id maps
 * (encryption keys by key-id through a JSON object), each built on first
 * use, so no update scans an array to find an entry.
 *
 * Not the rules of any update (updates.c) nor the end of a commit
 * (finish.c): only how entries are found, added and removed.
 */
#include "meta_internal.h"

#include "json.h"

#include <stdlib.h>
#include <string.h>

const struct list_kind apply_lists[LIST_COUNT] = {
	[LIST_SCHEMAS] = { "schemas", "schema-id", -1, "current-schema-id", "current schema",
			   "schema", "schema" },
	[LIST_SPECS] = { "partition-specs", "spec-id", -1, "default-spec-id",
			 "default partition spec", "spec", "spec" },
	[LIST_ORDERS] = { "sort-orders", "order-id", 0, "default-sort-order-id",
			  "default sort order", "order", "sort order" },
};

const char *const apply_stats_lists[STATS_COUNT] = {
	[STATS_SNAPSHOT] = "statistics",
	[STATS_PARTITION] = "partition-statistics",
};

bool apply_init(struct apply *a, json_t *m, int64_t now, struct floe_error *err)
{
	memset(a, 0, sizeof(*a));
	a->m = m;
	a->now = now;
	for (size_t k = 0; k < LIST_COUNT; k++) {
		a->last[k] = NONE_ADDED;
		a->added[k] = idmap_new(0);
		if (a->added[k] == NULL)
			return meta_oom(err);
	}
	a->added_snapshots = idmap_new(0);
	a->main_targets = json_array();
	if (a->added_snapshots == NULL || a->main_targets == NULL)
		return meta_oom(err);
	return true;
}

static void list_forget(struct id_list *l)
{
	idmap_free(l->pos);
	json_decref(l->by_content);
	l->pos = NULL;
	l->by_content = NULL;
}

/* Forgets every index that holds positions. */
static void forget_positions(struct apply *a)
{
	for (size_t k = 0; k < LIST_COUNT; k++)
		list_forget(&a->lists[k]);
	json_decref(a->key_index);
	a->key_index = NULL;
	idmap_free(a->snapshot_index);
	a->snapshot_index = NULL;
	for (size_t k = 0; k < STATS_COUNT; k++) {
		idmap_free(a->stats_index[k]);
		a->stats_index[k] = NULL;
	}
}

void apply_free(struct apply *a)
{
	forget_positions(a);
	for (size_t k = 0; k < LIST_COUNT; k++)
		idmap_free(a->added[k]);
	idmap_free(a->cur_fields);
	idmap_free(a->added_snapshots);
	json_decref(a->main_targets);
	idmap_free(a->removed);
}

/*
 * A new index of array: the integer field key of each object -> its
 * position. The first entry wins; with drop_duplicates a later entry with
 * the same id becomes a hole (*holes is set), as a replace by id would
 * leave one entry. NULL when out of memory.
 */
static struct idmap *index_array(json_t *array, const char *key, bool drop_duplicates, bool *holes,
				 struct floe_error *err)
{
	struct idmap *index = idmap_new(json_array_size(array));
	size_t i;
	json_t *e;

	if (index == NULL)
		return meta_oom(err), NULL;
	json_array_foreach(array, i, e) {
		json_t *v = json_object_get(e, key);
		if (!json_is_integer(v))
			continue;
		if (idmap_has(index, json_integer_value(v))) {
			if (drop_duplicates) {
				json_array_set_new(array, i, json_null());
				*holes = true;
			}
			continue;
		}
		if (!idmap_put(index, json_integer_value(v), (int64_t)i)) {
			idmap_free(index);
			return meta_oom(err), NULL;
		}
	}
	return index;
}

struct idmap *apply_snapshot_index(struct apply *a, struct floe_error *err)
{
	if (a->snapshot_index == NULL)
		a->snapshot_index = index_array(fjson_array_field(a->m, "snapshots"), "snapshot-id",
						false, &a->holes, err);
	return a->snapshot_index;
}

const json_t *apply_snapshot(struct apply *a, int64_t id, bool *ok, struct floe_error *err)
{
	struct idmap *index = apply_snapshot_index(a, err);
	int64_t pos;

	*ok = index != NULL;
	if (index == NULL || !idmap_get(index, id, &pos))
		return NULL;
	return json_array_get(json_object_get(a->m, "snapshots"), (size_t)pos);
}

struct idmap *apply_stats_index(struct apply *a, size_t k, struct floe_error *err)
{
	if (a->stats_index[k] == NULL)
		a->stats_index[k] = index_array(fjson_array_field(a->m, apply_stats_lists[k]),
						"snapshot-id", true, &a->holes, err);
	return a->stats_index[k];
}

bool apply_drop_stats(struct apply *a, size_t k, int64_t id, bool *dropped, struct floe_error *err)
{
	struct idmap *index = apply_stats_index(a, k, err);
	int64_t pos;

	*dropped = false;
	if (index == NULL)
		return false;
	if (!idmap_get(index, id, &pos))
		return true;
	json_array_set_new(json_object_get(a->m, apply_stats_lists[k]), (size_t)pos, json_null());
	idmap_del(index, id);
	a->holes = true;
	*dropped = true;
	return true;
}

void apply_drop_removed_refs(struct apply *a, const int64_t *only)
{
	json_t *refs = fjson_object_field(a->m, "refs");
	const char *name;
	json_t *ref;
	void *tmp;

	json_object_foreach_safe(refs, tmp, name, ref) {
		int64_t target = fjson_int_or(ref, "snapshot-id", -1);
		bool gone = only != NULL ? target == *only : idmap_has(a->removed, target);
		if (!gone)
			continue;
		if (strcmp(name, "main") == 0)
			fjson_set_int(a->m, "current-snapshot-id", -1);
		json_object_del(refs, name);
	}
}

/*
 * What makes two entries of list kind the same, as a string (new; caller
 * frees), or NULL when the entry can match nothing (or out of memory).
 */
static char *content_key(int kind, const json_t *entry)
{
	json_t *fields = json_object_get(entry, "fields");
	json_t *key = NULL;
	char *text = NULL;
	size_t i;
	json_t *f;

	if (fields == NULL)
		return NULL;
	if (kind == LIST_SCHEMAS) {
		json_t *idf = json_object_get(entry, "identifier-field-ids");
		key = json_pack("{s:O, s:o}", "fields", fields, "identifier-field-ids",
				idf != NULL ? json_incref(idf) : json_array());
	} else if (kind == LIST_SPECS) {
		if (!json_is_array(fields))
			return NULL;
		key = json_array();
		json_array_foreach(fields, i, f) {
			json_t *src = json_object_get(f, "source-id");
			json_t *tr = json_object_get(f, "transform");
			json_t *name = json_object_get(f, "name");
			if (!json_is_integer(src) || key == NULL) {
				json_decref(key);
				return NULL;
			}
			json_array_append_new(key,
					      json_pack("[O, O, O]", src, tr ? tr : json_null(),
							name ? name : json_null()));
		}
	} else {
		key = json_incref(fields);
	}
	if (key != NULL)
		text = json_dumps(key, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
	json_decref(key);
	return text;
}

/* Records that id has content key (the first id of a content wins);
 * false when out of memory. */
static bool note_content(struct id_list *l, const char *key, int64_t id)
{
	if (key == NULL || json_object_get(l->by_content, key) != NULL)
		return true;
	return json_object_set_new(l->by_content, key, json_integer(id)) == 0;
}

struct id_list *apply_list(struct apply *a, int kind, struct floe_error *err)
{
	const struct list_kind *lk = &apply_lists[kind];
	struct id_list *l = &a->lists[kind];
	json_t *arr = fjson_array_field(a->m, lk->list);
	size_t i;
	json_t *e;

	if (l->pos != NULL)
		return l;
	l->pos = idmap_new(json_array_size(arr));
	l->highest = lk->missing_id;
	l->highest_stale = false;
	if (l->pos == NULL)
		goto oom;
	json_array_foreach(arr, i, e) {
		int64_t id = fjson_int_or(e, lk->idkey, lk->missing_id);
		if (json_is_null(e))
			continue;
		if (id > l->highest)
			l->highest = id;
		if (!json_is_integer(json_object_get(e, lk->idkey)) || idmap_has(l->pos, id))
			continue;
		if (!idmap_put(l->pos, id, (int64_t)i))
			goto oom;
	}
	return l;
oom:
	list_forget(l);
	return meta_oom(err), NULL;
}

/*
 * List kind with its content index too, built from the entries that the
 * position index holds. It is built before the first add or remove, so it
 * sees the list as it was when the commit first looked at it.
 */
static struct id_list *list_with_contents(struct apply *a, int kind, struct floe_error *err)
{
	struct id_list *l = apply_list(a, kind, err);
	json_t *arr = json_object_get(a->m, apply_lists[kind].list);
	size_t i;
	json_t *e;

	if (l == NULL || l->by_content != NULL)
		return l;
	l->by_content = json_object();
	if (l->by_content == NULL)
		goto oom;
	json_array_foreach(arr, i, e) {
		json_t *idv = json_object_get(e, apply_lists[kind].idkey);
		int64_t pos;
		if (!json_is_integer(idv) || !idmap_get(l->pos, json_integer_value(idv), &pos) ||
		    pos != (int64_t)i)
			continue;
		char *key = content_key(kind, e);
		bool ok = note_content(l, key, json_integer_value(idv));
		free(key);
		if (!ok)
			goto oom;
	}
	return l;
oom:
	json_decref(l->by_content);
	l->by_content = NULL;
	return meta_oom(err), NULL;
}

const json_t *apply_list_get(struct apply *a, int kind, int64_t id, bool *ok,
			     struct floe_error *err)
{
	struct id_list *l = apply_list(a, kind, err);
	int64_t pos;

	*ok = l != NULL;
	if (l == NULL || !idmap_get(l->pos, id, &pos))
		return NULL;
	return json_array_get(json_object_get(a->m, apply_lists[kind].list), (size_t)pos);
}

int64_t apply_list_find(struct apply *a, int kind, const json_t *entry, bool *ok,
			struct floe_error *err)
{
	struct id_list *l = list_with_contents(a, kind, err);
	char *key;
	json_t *id;

	*ok = l != NULL;
	if (l == NULL)
		return NONE_ADDED;
	key = content_key(kind, entry);
	id = key != NULL ? json_object_get(l->by_content, key) : NULL;
	free(key);
	return id != NULL ? json_integer_value(id) : NONE_ADDED;
}

int64_t apply_list_highest(struct apply *a, int kind)
{
	const struct list_kind *lk = &apply_lists[kind];
	struct id_list *l = &a->lists[kind];

	if (l->highest_stale) {
		l->highest = fjson_max_id(json_object_get(a->m, lk->list), lk->idkey,
					  lk->missing_id);
		l->highest_stale = false;
	}
	return l->highest;
}

bool apply_list_add(struct apply *a, int kind, int64_t id, json_t *entry, struct floe_error *err)
{
	struct id_list *l = list_with_contents(a, kind, err);
	json_t *arr = fjson_array_field(a->m, apply_lists[kind].list);
	char *key;
	bool ok;

	if (l == NULL) {
		json_decref(entry);
		return false;
	}
	key = content_key(kind, entry);
	ok = json_array_append_new(arr, entry) == 0 &&
	     idmap_put(l->pos, id, (int64_t)json_array_size(arr) - 1) &&
	     idmap_put(a->added[kind], id, 1) && note_content(l, key, id);
	free(key);
	if (!ok)
		return meta_oom(err);
	if (!l->highest_stale && id > l->highest)
		l->highest = id;
	a->last[kind] = id;
	a->changed = true;
	return true;
}

bool apply_list_remove(struct apply *a, int kind, int64_t id, struct floe_error *err)
{
	struct id_list *l = list_with_contents(a, kind, err);
	json_t *arr = json_object_get(a->m, apply_lists[kind].list);
	int64_t pos;

	if (l == NULL)
		return false;
	if (!idmap_get(l->pos, id, &pos))
		return true;
	char *key = content_key(kind, json_array_get(arr, (size_t)pos));
	json_t *owner = key != NULL ? json_object_get(l->by_content, key) : NULL;
	if (owner != NULL && json_integer_value(owner) == id)
		json_object_del(l->by_content, key);
	free(key);
	json_array_set_new(arr, (size_t)pos, json_null());
	idmap_del(l->pos, id);
	if (id >= l->highest)
		l->highest_stale = true;
	a->holes = true;
	a->changed = true;
	return true;
}

const struct idmap *apply_current_fields(struct apply *a, int64_t id, const json_t *schema,
					 struct floe_error *err)
{
	/* Keyed by schema id; remove-schemas forgets it, as an id may then be
	 * given again. */
	if (a->cur_fields != NULL && a->cur_fields_of == id)
		return a->cur_fields;
	idmap_free(a->cur_fields);
	a->cur_fields = schema_index(schema, err);
	a->cur_fields_of = id;
	return a->cur_fields;
}

json_t *apply_key_index(struct apply *a, struct floe_error *err)
{
	json_t *keys = fjson_array_field(a->m, "encryption-keys");
	size_t i;
	json_t *k;

	if (a->key_index != NULL)
		return a->key_index;
	a->key_index = json_object();
	if (a->key_index == NULL)
		return meta_oom(err), NULL;
	json_array_foreach(keys, i, k) {
		const char *kid = fjson_get_str(k, "key-id");
		if (json_is_null(k) || json_object_get(a->key_index, kid ? kid : "") != NULL)
			continue;
		if (json_object_set_new(a->key_index, kid ? kid : "",
					json_integer((json_int_t)i)) != 0)
			return meta_oom(err), NULL;
	}
	return a->key_index;
}

void apply_settle(struct apply *a)
{
	if (a->removed != NULL) {
		apply_drop_removed_refs(a, NULL);
		idmap_free(a->removed);
		a->removed = NULL;
	}
	if (!a->holes)
		return;
	fjson_compact(fjson_array_field(a->m, "snapshots"));
	for (size_t k = 0; k < STATS_COUNT; k++)
		fjson_compact(fjson_array_field(a->m, apply_stats_lists[k]));
	fjson_compact(json_object_get(a->m, "encryption-keys"));
	for (size_t k = 0; k < LIST_COUNT; k++)
		fjson_compact(json_object_get(a->m, apply_lists[k].list));
	a->holes = false;
	forget_positions(a);
}

bool apply_put_entry(struct apply *a, json_t *arr, bool known, size_t pos, const json_t *entry,
		     bool *appended, struct floe_error *err)
{
	*appended = false;
	if (known) {
		if (json_equal(json_array_get(arr, pos), entry))
			return true;
		json_array_set(arr, pos, (json_t *)entry);
	} else {
		if (json_array_append(arr, (json_t *)entry) != 0)
			return meta_oom(err);
		*appended = true;
	}
	a->changed = true;
	return true;
}
