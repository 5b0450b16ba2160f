/*
 * finish.c - what follows the last update of a commit, as Iceberg's
 * TableMetadata.Builder.build does: the snapshot-log rewrite, the clock
 * skew limit, the metadata-log with its size limit, main agreeing with
 * current-snapshot-id, and the fields each format version writes. Not
 * the updates themselves (updates.c).
 */
#include "meta_internal.h"

#include "json.h"

#include <inttypes.h>
#include <stdlib.h>

#define PREVIOUS_VERSIONS_DEFAULT 100
#define CLOCK_SKEW_MS 60000

void finish_format_fields(json_t *m, const json_t *schema, const json_t *spec)
{
	int format = meta_format_of(m);
	json_t *cur = json_object_get(m, "current-snapshot-id");
	bool none = cur == NULL || json_is_null(cur) ||
		    (json_is_integer(cur) && json_integer_value(cur) == -1);

	/* v3 writes a missing current snapshot as null, older versions as -1. */
	if (none)
		json_object_set_new(m, "current-snapshot-id",
				    format >= 3 ? json_null() : json_integer(-1));
	/* v1 carries the current schema and default spec at the top level too. */
	if (format == 1) {
		if (schema != NULL)
			json_object_set(m, "schema", (json_t *)schema);
		if (spec != NULL)
			json_object_set(m, "partition-spec", json_object_get(spec, "fields"));
		json_object_del(m, "last-sequence-number");
	} else {
		json_object_del(m, "schema");
		json_object_del(m, "partition-spec");
		if (json_object_get(m, "last-sequence-number") == NULL)
			fjson_set_int(m, "last-sequence-number", 0);
	}
	if (format >= 3 && json_object_get(m, "next-row-id") == NULL)
		fjson_set_int(m, "next-row-id", 0);
	if (format < 3)
		json_object_del(m, "next-row-id");
	json_t *keys = json_object_get(m, "encryption-keys");
	if (keys != NULL && json_array_size(keys) == 0)
		json_object_del(m, "encryption-keys");
}

static int64_t previous_versions_max(const json_t *m)
{
	const char *v = fjson_get_str(json_object_get(m, "properties"),
				      "write.metadata.previous-versions-max");
	char *end = NULL;
	long long n;

	if (v == NULL)
		return PREVIOUS_VERSIONS_DEFAULT;
	n = strtoll(v, &end, 10);
	if (*v == '\0' || *end != '\0')
		return PREVIOUS_VERSIONS_DEFAULT;
	return n < 1 ? 1 : n;
}

static bool rewrite_snapshot_log(struct apply *a, struct floe_error *err)
{
	json_t *log = fjson_array_field(a->m, "snapshot-log");
	int64_t current = fjson_int_or(a->m, "current-snapshot-id", -1);
	struct idmap *intermediate = idmap_new(0);
	struct idmap *snaps = NULL;
	json_t *fresh = NULL;
	size_t i;
	json_t *v;
	bool ok = false;

	if (intermediate == NULL)
		return meta_oom(err);
	/* Snapshots added here that main passed through on the way. */
	json_array_foreach(a->main_targets, i, v) {
		int64_t id = json_integer_value(v);
		if (id != current && idmap_has(a->added_snapshots, id) &&
		    !idmap_put(intermediate, id, 1)) {
			meta_oom(err);
			goto done;
		}
	}
	if (idmap_count(intermediate) == 0 && !a->snapshots_removed) {
		ok = true;
		goto done;
	}
	snaps = apply_snapshot_index(a, err);
	fresh = json_array();
	if (snaps == NULL || fresh == NULL) {
		if (snaps != NULL)
			meta_oom(err);
		goto done;
	}
	json_array_foreach(log, i, v) {
		int64_t id = fjson_int_or(v, "snapshot-id", -1);
		if (idmap_has(snaps, id)) {
			if (!idmap_has(intermediate, id))
				json_array_append(fresh, v);
		} else {
			/* History before a removed snapshot would claim it was
			 * current when it no longer exists: drop it all. */
			json_array_clear(fresh);
		}
	}
	size_t n = json_array_size(fresh);
	if (current != -1 && n > 0 &&
	    fjson_int_or(json_array_get(fresh, n - 1), "snapshot-id", -1) != current) {
		meta_bad(
			err,
			"Cannot set invalid snapshot log: latest entry is not the current snapshot");
		goto done;
	}
	json_object_set(a->m, "snapshot-log", fresh);
	ok = true;
done:
	json_decref(fresh);
	idmap_free(intermediate);
	return ok;
}

/* The default (or current) entry of list kind, found through its index;
 * NULL when there is none. A missing list stays missing. */
static const json_t *default_entry(struct apply *a, int kind, bool *ok, struct floe_error *err)
{
	const struct list_kind *lk = &apply_lists[kind];

	*ok = true;
	if (!json_is_array(json_object_get(a->m, lk->list)))
		return NULL;
	return apply_list_get(a, kind, fjson_int_or(a->m, lk->current_key, -1), ok, err);
}

/* Checks that every source field of entry (a spec or a sort order) is
 * in the schema index; what names the entry and the fix. */
static bool sources_in(const json_t *entry, const struct idmap *index, const char *what,
		       const char *fix, struct floe_error *err)
{
	size_t i;
	json_t *f;

	json_array_foreach(json_object_get(entry, "fields"), i, f) {
		if (!idmap_has(index, fjson_int_or(f, "source-id", -1)))
			return meta_bad(err,
					"the default %s uses field %" PRId64
					", which the current schema no longer has; %s first",
					what, fjson_int_or(f, "source-id", -1), fix);
	}
	return true;
}

static bool spec_fits_schema(const json_t *schema, const json_t *spec, const json_t *order,
			     struct floe_error *err)
{
	bool ok;

	if (schema == NULL)
		return true;
	struct idmap *index = schema_index(schema, err);
	if (index == NULL)
		return false;
	ok = sources_in(spec, index, "partition spec", "evolve the spec", err) &&
	     sources_in(order, index, "sort order", "change the sort order", err);
	idmap_free(index);
	return ok;
}

/* A timestamp far ahead of this server's clock breaks time travel. */
static bool clock_fits_logs(const struct apply *a, struct floe_error *err)
{
	static const char *const logs[] = { "snapshot-log", "metadata-log" };

	for (size_t k = 0; k < 2; k++) {
		json_t *log = json_object_get(a->m, logs[k]);
		size_t n = json_array_size(log);
		if (n == 0)
			continue;
		int64_t last = fjson_int_or(json_array_get(log, n - 1), "timestamp-ms", 0);
		if (last - CLOCK_SKEW_MS > a->now)
			return meta_bad(err,
					"Invalid update timestamp %" PRId64
					": before the last %s entry %" PRId64,
					a->now, logs[k], last);
	}
	return true;
}

/* Appends base's file to the metadata-log, keeping the newest max - 1
 * entries before it (copied once). */
static bool log_previous_file(struct apply *a, const json_t *base, const char *base_location,
			      struct floe_error *err)
{
	json_t *mlog = fjson_array_field(a->m, "metadata-log");
	int64_t max = previous_versions_max(a->m);
	size_t n = json_array_size(mlog);

	if ((int64_t)n > max - 1) {
		json_t *kept = json_array();
		if (kept == NULL)
			return meta_oom(err);
		for (size_t i = n - (size_t)(max - 1); i < n; i++)
			json_array_append(kept, json_array_get(mlog, i));
		json_object_set_new(a->m, "metadata-log", kept);
		mlog = kept;
	}
	json_array_append_new(mlog, json_pack("{s:I, s:s}", "timestamp-ms",
					      (json_int_t)fjson_int_or(base, "last-updated-ms", 0),
					      "metadata-file", base_location));
	return true;
}

bool finish_commit(struct apply *a, const json_t *base, const char *base_location,
		   struct floe_error *err)
{
	const json_t *entry[LIST_COUNT];
	bool ok;

	apply_settle(a);
	if (!rewrite_snapshot_log(a, err))
		return false;
	for (int k = 0; k < LIST_COUNT; k++) {
		entry[k] = default_entry(a, k, &ok, err);
		if (!ok)
			return false;
	}
	if (!spec_fits_schema(entry[LIST_SCHEMAS], entry[LIST_SPECS], entry[LIST_ORDERS], err) ||
	    !clock_fits_logs(a, err))
		return false;
	if (base_location != NULL && base != NULL &&
	    !log_previous_file(a, base, base_location, err))
		return false;
	fjson_set_int(a->m, "last-updated-ms", a->now);
	/* Keep main and current-snapshot-id in agreement. */
	json_t *main_ref = json_object_get(json_object_get(a->m, "refs"), "main");
	int64_t current = fjson_int_or(a->m, "current-snapshot-id", -1);
	if (main_ref == NULL && current != -1)
		json_object_set_new(fjson_object_field(a->m, "refs"), "main",
				    meta_main_ref(current));
	finish_format_fields(a->m, entry[LIST_SCHEMAS], entry[LIST_SPECS]);
	return true;
}
