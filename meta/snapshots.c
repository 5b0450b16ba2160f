/*
 * snapshots.c - the update actions on snapshots, the refs that point at
 * them and their statistics: add-snapshot with its sequence number and
 * row-lineage rules, set-snapshot-ref and the snapshot-log entry main
 * gets, remove-snapshots, and the statistics files of a snapshot. Found
 * through the table in updates.c; indexed through apply.c.
 */
#include "meta_internal.h"

#include "json.h"

#include <inttypes.h>
#include <string.h>
#include <strings.h>

/* Checks the v3 row lineage of snapshot snap with this id and advances
 * next-row-id (FE_COMMIT_FAILED when first-row-id is stale). */
static bool advance_row_id(struct apply *a, const json_t *snap, int64_t id, struct floe_error *err)
{
	int64_t first_row, added_rows;
	bool has_first, has_added;

	if (!fjson_get_int(snap, "first-row-id", "snapshot", &has_first, &first_row, err) ||
	    !fjson_get_int(snap, "added-rows", "snapshot", &has_added, &added_rows, err))
		return false;
	if (!has_first)
		return meta_bad(err, "snapshot %" PRId64 ": a v3 snapshot needs 'first-row-id'",
				id);
	if (!has_added || added_rows < 0)
		return meta_bad(err,
				"snapshot %" PRId64
				": a v3 snapshot needs a non-negative 'added-rows'",
				id);
	int64_t next_row = fjson_int_or(a->m, "next-row-id", 0);
	if (first_row < next_row)
		return floe_err(
			err, FE_COMMIT_FAILED,
			"Validation failed, please retry: Cannot add a snapshot whose first-row-id %" PRId64
			" is behind next-row-id %" PRId64,
			first_row, next_row);
	fjson_set_int(a->m, "next-row-id", next_row + added_rows);
	return true;
}

/* The snapshot as written (new): absent and null mean the same and the
 * written form omits nulls; sequence number 0 (v1) is written as absent. */
static json_t *snapshot_copy(const json_t *snap)
{
	json_t *copy = json_deep_copy(snap);
	const char *key;
	json_t *val;
	void *tmp;

	if (copy == NULL)
		return NULL;
	json_object_foreach_safe(copy, tmp, key, val) {
		if (json_is_null(val))
			json_object_del(copy, key);
	}
	if (fjson_int_or(copy, "sequence-number", -1) == 0)
		json_object_del(copy, "sequence-number");
	return copy;
}

bool snapshots_add(struct apply *a, const json_t *u, const struct action *act,
		   struct floe_error *err)
{
	const json_t *snap = json_object_get(u, "snapshot");
	json_t *snaps = fjson_array_field(a->m, "snapshots");
	int64_t id, ts, seq = 0, parent = 0;
	bool has_seq, has_parent;
	int format = meta_format_of(a->m);

	(void)act;
	if (!json_is_object(snap))
		return meta_bad(err, "add-snapshot: missing required field 'snapshot'");
	if (json_array_size(json_object_get(a->m, "schemas")) == 0 ||
	    json_array_size(json_object_get(a->m, "partition-specs")) == 0 ||
	    json_array_size(json_object_get(a->m, "sort-orders")) == 0)
		return meta_bad(
			err,
			"add-snapshot: the table needs a schema, a partition spec and a sort order first");
	if (!fjson_get_int(snap, "snapshot-id", "snapshot", NULL, &id, err) ||
	    !fjson_get_int(snap, "timestamp-ms", "snapshot", NULL, &ts, err) ||
	    !fjson_get_int(snap, "sequence-number", "snapshot", &has_seq, &seq, err) ||
	    !fjson_get_int(snap, "parent-snapshot-id", "snapshot", &has_parent, &parent, err))
		return false;
	if (!json_is_string(json_object_get(snap, "manifest-list")) &&
	    !(format == 1 && json_is_array(json_object_get(snap, "manifests"))))
		return meta_bad(err, "snapshot %" PRId64 ": missing required field 'manifest-list'",
				id);
	const json_t *summary = json_object_get(snap, "summary");
	if (summary != NULL && !json_is_null(summary) &&
	    (!json_is_object(summary) || !json_is_string(json_object_get(summary, "operation"))))
		return meta_bad(err,
				"snapshot %" PRId64
				": 'summary' must be an object with an 'operation'",
				id);
	struct idmap *index = apply_snapshot_index(a, err);
	if (index == NULL)
		return false;
	if (idmap_has(index, id))
		return meta_bad(err, "Snapshot already exists for id: %" PRId64, id);
	/* Re-adding an id removed earlier in this commit: the old snapshot's
	 * refs go now, not with the new one at the end. */
	if (a->removed != NULL && idmap_del(a->removed, id))
		apply_drop_removed_refs(a, &id);

	int64_t last_seq = fjson_int_or(a->m, "last-sequence-number", 0);
	if (format >= 2 && has_parent && seq <= last_seq)
		return floe_err(
			err, FE_COMMIT_FAILED,
			"Validation failed, please retry: Cannot add snapshot with sequence number %" PRId64
			" older than last sequence number %" PRId64,
			seq, last_seq);
	json_t *copy = snapshot_copy(snap);
	if (copy == NULL)
		return meta_oom(err);
	if (format >= 3 && !advance_row_id(a, snap, id, err)) {
		json_decref(copy);
		return false;
	}
	if (json_array_append_new(snaps, copy) != 0 ||
	    !idmap_put(index, id, (int64_t)json_array_size(snaps) - 1) ||
	    !idmap_put(a->added_snapshots, id, 1))
		return meta_oom(err);
	if (format >= 2 && has_seq && seq > last_seq)
		fjson_set_int(a->m, "last-sequence-number", seq);
	a->changed = true;
	return true;
}

static bool ref_retention(const json_t *u, const char *key, bool *present, int64_t *v,
			  struct floe_error *err)
{
	if (!fjson_get_int(u, key, "set-snapshot-ref", present, v, err))
		return false;
	if (*present && *v <= 0)
		return meta_bad(err, "set-snapshot-ref: '%s' must be greater than 0", key);
	return true;
}

static void log_main_change(struct apply *a, const json_t *snap, int64_t id)
{
	int64_t ts = a->now;

	if (idmap_has(a->added_snapshots, id))
		ts = fjson_int_or(snap, "timestamp-ms", a->now);
	json_array_append_new(fjson_array_field(a->m, "snapshot-log"),
			      json_pack("{s:I, s:I}", "timestamp-ms", (json_int_t)ts, "snapshot-id",
					(json_int_t)id));
	json_array_append_new(a->main_targets, json_integer(id));
}

/* The ref a set-snapshot-ref update describes (new), or NULL with err. */
static json_t *ref_of_update(const json_t *u, const char *name, int64_t *id, struct floe_error *err)
{
	const char *type = fjson_get_str(u, "type");
	int64_t min_keep = 0, max_snap = 0, max_ref = 0;
	bool has_min, has_snap, has_ref;
	const char *kind;

	if (type == NULL)
		return meta_bad(err, "set-snapshot-ref: missing required field 'type'"), NULL;
	if (strcasecmp(type, "branch") == 0)
		kind = "branch";
	else if (strcasecmp(type, "tag") == 0)
		kind = "tag";
	else
		return meta_bad(err, "set-snapshot-ref: type must be branch or tag, not '%s'",
				type),
		       NULL;
	if (!fjson_get_int(u, "snapshot-id", "set-snapshot-ref", NULL, id, err) ||
	    !ref_retention(u, "min-snapshots-to-keep", &has_min, &min_keep, err) ||
	    !ref_retention(u, "max-snapshot-age-ms", &has_snap, &max_snap, err) ||
	    !ref_retention(u, "max-ref-age-ms", &has_ref, &max_ref, err))
		return NULL;
	if (strcmp(kind, "tag") == 0 && (has_min || has_snap))
		return meta_bad(
			       err,
			       "set-snapshot-ref: tags do not take min-snapshots-to-keep or max-snapshot-age-ms"),
		       NULL;
	if (strcmp(name, "main") == 0 && strcmp(kind, "branch") != 0)
		return meta_bad(err, "set-snapshot-ref: main must be a branch"), NULL;
	json_t *ref = json_pack("{s:I, s:s}", "snapshot-id", (json_int_t)*id, "type", kind);
	if (ref == NULL)
		return meta_oom(err), NULL;
	if (has_min)
		fjson_set_int(ref, "min-snapshots-to-keep", min_keep);
	if (has_snap)
		fjson_set_int(ref, "max-snapshot-age-ms", max_snap);
	if (has_ref)
		fjson_set_int(ref, "max-ref-age-ms", max_ref);
	return ref;
}

bool snapshots_set_ref(struct apply *a, const json_t *u, const struct action *act,
		       struct floe_error *err)
{
	const char *name = fjson_get_str(u, "ref-name");
	int64_t id = 0;
	bool ok;

	(void)act;
	if (name == NULL || *name == '\0')
		return meta_bad(err, "set-snapshot-ref: missing required field 'ref-name'");
	json_t *ref = ref_of_update(u, name, &id, err);
	if (ref == NULL)
		return false;
	const json_t *snap = apply_snapshot(a, id, &ok, err);
	if (snap == NULL) {
		json_decref(ref);
		return ok ? meta_bad(err, "Cannot set %s to unknown snapshot: %" PRId64, name, id)
			  : false;
	}
	json_t *refs = fjson_object_field(a->m, "refs");
	if (json_equal(json_object_get(refs, name), ref)) {
		json_decref(ref);
		return true;
	}
	json_object_set_new(refs, name, ref);
	if (strcmp(name, "main") == 0) {
		fjson_set_int(a->m, "current-snapshot-id", id);
		log_main_change(a, snap, id);
	}
	a->changed = true;
	return true;
}

bool snapshots_remove_ref(struct apply *a, const json_t *u, const struct action *act,
			  struct floe_error *err)
{
	const char *name = fjson_get_str(u, "ref-name");
	json_t *refs = fjson_object_field(a->m, "refs");

	(void)act;
	if (name == NULL)
		return meta_bad(err, "remove-snapshot-ref: missing required field 'ref-name'");
	if (json_object_get(refs, name) == NULL)
		return true;
	json_object_del(refs, name);
	if (strcmp(name, "main") == 0)
		fjson_set_int(a->m, "current-snapshot-id", -1);
	a->changed = true;
	return true;
}

bool snapshots_remove(struct apply *a, const json_t *u, const struct action *act,
		      struct floe_error *err)
{
	const json_t *ids = json_object_get(u, "snapshot-ids");
	json_t *snaps = fjson_array_field(a->m, "snapshots");
	size_t i;
	json_t *v;

	(void)act;
	if (!fjson_is_array_of(ids, JSON_INTEGER))
		return meta_bad(err,
				"remove-snapshots: 'snapshot-ids' must be an array of integers");
	struct idmap *index = apply_snapshot_index(a, err);
	if (index == NULL)
		return false;
	/* Each removal is O(1): a hole in the arrays and an entry in
	 * a->removed; refs and holes are settled once, in finish_commit. */
	json_array_foreach(ids, i, v) {
		int64_t id = json_integer_value(v);
		int64_t pos;
		bool dropped;
		if (!idmap_get(index, id, &pos))
			continue;
		json_array_set_new(snaps, (size_t)pos, json_null());
		idmap_del(index, id);
		a->holes = true;
		for (size_t k = 0; k < STATS_COUNT; k++) {
			if (!apply_drop_stats(a, k, id, &dropped, err))
				return false;
		}
		if (a->removed == NULL)
			a->removed = idmap_new(json_array_size(ids));
		if (a->removed == NULL || !idmap_put(a->removed, id, 1))
			return meta_oom(err);
		a->snapshots_removed = true;
		a->changed = true;
	}
	return true;
}

/* set-statistics and set-partition-statistics: replace by snapshot id. */
bool snapshots_set_stats(struct apply *a, const json_t *u, const struct action *act,
			 struct floe_error *err)
{
	const char *field = apply_stats_lists[act->kind];
	const json_t *st = json_object_get(u, field);
	int64_t id, pos = 0;
	bool appended;

	if (!json_is_object(st))
		return meta_bad(err, "missing required field '%s'", field);
	if (!fjson_get_int(st, "snapshot-id", field, NULL, &id, err))
		return false;
	if (!json_is_string(json_object_get(st, "statistics-path")))
		return meta_bad(err, "%s: missing required field 'statistics-path'", field);
	json_t *arr = fjson_array_field(a->m, field);
	struct idmap *index = apply_stats_index(a, (size_t)act->kind, err);
	if (index == NULL)
		return false;
	bool known = idmap_get(index, id, &pos);
	if (!apply_put_entry(a, arr, known, (size_t)pos, st, &appended, err))
		return false;
	if (appended && !idmap_put(index, id, (int64_t)json_array_size(arr) - 1))
		return meta_oom(err);
	return true;
}

/* remove-statistics and remove-partition-statistics. */
bool snapshots_remove_stats(struct apply *a, const json_t *u, const struct action *act,
			    struct floe_error *err)
{
	int64_t id = 0;
	bool dropped;

	if (!fjson_get_int(u, "snapshot-id", act->name, NULL, &id, err) ||
	    !apply_drop_stats(a, (size_t)act->kind, id, &dropped, err))
		return false;
	if (dropped)
		a->changed = true;
	return true;
}
