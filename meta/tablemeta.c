/*
 * tablemeta.c - the entry points of a commit (tablemeta.h): a copy of the
 * base, the updates applied to it (updates.c), then the post-processing
 * (finish.c); and the readers callers use on stored metadata. The base is
 * never touched. The rules themselves live in the other files of meta/
 * (meta_internal.h lists them).
 */
#include "tablemeta.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "json.h"
#include "meta_internal.h"

json_t *tablemeta_apply(const json_t *base, const char *base_location, const json_t *updates,
			int64_t now_ms, bool *changed, struct floe_error *err)
{
	struct apply a;
	json_t *m = json_deep_copy(base);

	*changed = false;
	if (m == NULL) {
		meta_oom(err);
		return NULL;
	}
	/* Older metadata may lack refs: main follows the current snapshot. */
	if (json_object_get(m, "refs") == NULL) {
		int64_t cur = fjson_int_or(m, "current-snapshot-id", -1);
		json_t *refs = json_object();
		if (cur != -1)
			json_object_set_new(refs, "main", meta_main_ref(cur));
		json_object_set_new(m, "refs", refs);
	}
	bool ok = apply_init(&a, m, now_ms, err) && updates_apply(&a, updates, err) &&
		  (!a.changed || finish_commit(&a, base, base_location, err));
	*changed = a.changed;
	apply_free(&a);
	return meta_commit_result(base, m, ok, changed);
}

/* Checks what a staged create must have set, and gives it the unsorted
 * spec and order when it added none. */
static bool staged_complete(json_t *m, struct floe_error *err)
{
	if (fjson_get_str(m, "table-uuid") == NULL)
		return meta_bad(err, "a staged create must assign the table uuid (assign-uuid)");
	if (json_array_size(json_object_get(m, "schemas")) == 0)
		return meta_bad(err, "a staged create must add a schema");
	if (fjson_int_or(m, "current-schema-id", -1) < 0)
		return meta_bad(err, "a staged create must set the current schema");
	if (fjson_get_str(m, "location") == NULL)
		return meta_bad(err, "a staged create must set the table location");
	if (json_array_size(json_object_get(m, "partition-specs")) == 0) {
		json_array_append_new(json_object_get(m, "partition-specs"),
				      json_pack("{s:i, s:[]}", "spec-id", 0, "fields"));
		fjson_set_int(m, "default-spec-id", 0);
	}
	if (json_array_size(json_object_get(m, "sort-orders")) == 0) {
		json_array_append_new(json_object_get(m, "sort-orders"),
				      json_pack("{s:i, s:[]}", "order-id", 0, "fields"));
		fjson_set_int(m, "default-sort-order-id", 0);
	}
	if (fjson_int_or(m, "default-spec-id", -1) < 0 ||
	    fjson_int_or(m, "default-sort-order-id", -1) < 0)
		return meta_bad(
			err, "a staged create must set the default partition spec and sort order");
	return true;
}

json_t *tablemeta_apply_create(const json_t *updates, const char *uuid, int64_t now_ms,
			       struct floe_error *err)
{
	struct apply a;
	int format;

	if (!json_is_array(updates)) {
		meta_bad(err, "'updates' must be an array");
		return NULL;
	}
	if (!updates_staged_format(updates, &format, err))
		return NULL;
	json_t *m = create_empty_metadata(format, now_ms);
	if (m == NULL) {
		meta_oom(err);
		return NULL;
	}
	if (format >= 2)
		fjson_set_int(m, "last-sequence-number", 0);
	bool ok = apply_init(&a, m, now_ms, err) && updates_apply(&a, updates, err);
	if (ok && fjson_get_str(m, "table-uuid") == NULL && uuid != NULL)
		json_object_set_new(m, "table-uuid", json_string(uuid));
	if (ok)
		ok = staged_complete(m, err);
	if (ok) {
		a.changed = true;
		ok = finish_commit(&a, NULL, NULL, err);
	}
	apply_free(&a);
	if (!ok) {
		json_decref(m);
		return NULL;
	}
	return m;
}

json_t *tablemeta_dropped_metadata_files(const json_t *base, const json_t *m)
{
	const char *flag = json_string_value(
		json_object_get(json_object_get(m, "properties"),
				"write.metadata.delete-after-commit.enabled"));
	json_t *dropped = json_array();
	json_t *kept = NULL;
	size_t i;
	json_t *e;

	if (dropped == NULL || flag == NULL || strcasecmp(flag, "true") != 0)
		return dropped;
	kept = json_object();
	if (kept == NULL)
		goto fail;
	json_array_foreach(json_object_get(m, "metadata-log"), i, e) {
		const char *f = json_string_value(json_object_get(e, "metadata-file"));
		if (f != NULL && json_object_set_new(kept, f, json_true()) != 0)
			goto fail;
	}
	json_array_foreach(json_object_get(base, "metadata-log"), i, e) {
		const char *f = json_string_value(json_object_get(e, "metadata-file"));
		if (f == NULL || json_object_get(kept, f) != NULL)
			continue;
		/* Once each, should the log name a file twice. */
		if (json_object_set_new(kept, f, json_true()) != 0 ||
		    json_array_append_new(dropped, json_string(f)) != 0)
			goto fail;
	}
	json_decref(kept);
	return dropped;
fail:
	json_decref(kept);
	json_decref(dropped);
	return NULL;
}

const json_t *tablemeta_snapshot(const json_t *m, long long id)
{
	/* One lookup: an index would cost a scan to build. */
	return fjson_find_by_id(json_object_get(m, "snapshots"), "snapshot-id", id);
}

long long tablemeta_current_snapshot(const json_t *m)
{
	return (long long)fjson_int_or(m, "current-snapshot-id", -1);
}

json_t *tablemeta_only_ref_snapshots(const json_t *metadata)
{
	json_t *m = json_copy((json_t *)metadata);
	json_t *kept = json_array();
	json_t *refs = json_object_get(metadata, "refs");
	struct idmap *targets = NULL;
	const char *name;
	json_t *ref;
	size_t i;
	json_t *s;

	if (m == NULL || kept == NULL)
		goto fail;
	/* Without refs (older metadata), main is the current snapshot. */
	targets = idmap_new(json_object_size(refs) + 1);
	if (targets == NULL)
		goto fail;
	if (refs == NULL && fjson_int_or(metadata, "current-snapshot-id", -1) != -1 &&
	    !idmap_put(targets, fjson_int_or(metadata, "current-snapshot-id", -1), 1))
		goto fail;
	json_object_foreach(refs, name, ref) {
		json_t *id = json_object_get(ref, "snapshot-id");
		if (json_is_integer(id) && !idmap_put(targets, json_integer_value(id), 1))
			goto fail;
	}
	json_array_foreach(json_object_get(metadata, "snapshots"), i, s) {
		json_t *id = json_object_get(s, "snapshot-id");
		if (json_is_integer(id) && idmap_has(targets, json_integer_value(id)) &&
		    json_array_append(kept, s) != 0)
			goto fail;
	}
	idmap_free(targets);
	json_object_set_new(m, "snapshots", kept);
	return m;
fail:
	idmap_free(targets);
	json_decref(m);
	json_decref(kept);
	return NULL;
}

char *tablemeta_refs_set(const json_t *base, const json_t *m)
{
	const json_t *before = json_object_get(base, "refs");
	const char *name;
	json_t *ref;
	size_t len = 1;
	char *out;

	json_object_foreach(json_object_get(m, "refs"), name, ref) {
		len += strlen(name) + 1;
	}
	out = malloc(len);
	if (out == NULL)
		return NULL;
	out[0] = '\0';
	size_t at = 0;
	json_object_foreach(json_object_get(m, "refs"), name, ref) {
		const json_t *was = json_object_get(json_object_get(before, name), "snapshot-id");
		const json_t *now = json_object_get(ref, "snapshot-id");
		if (was != NULL && json_equal(was, now))
			continue;
		size_t l = strlen(name);
		if (at > 0)
			out[at++] = '\x1f';
		memcpy(out + at, name, l + 1);
		at += l;
	}
	return out;
}
