/*
 * schema.c - the rules of schemas, partition fields and sort fields:
 * walking a schema's types once to check their shape and collect their
 * ids, the types each format version has, and which transform applies to
 * which type. Not where ids are assigned (create.c, updates.c).
 */
#include "meta_internal.h"

#include "json.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static bool type_is_v3_only(const char *t)
{
	static const char *const v3[] = { "timestamp_ns", "timestamptz_ns", "variant", "unknown" };
	for (size_t i = 0; i < sizeof(v3) / sizeof(v3[0]); i++) {
		if (strcmp(t, v3[i]) == 0)
			return true;
	}
	return strncmp(t, "geometry", 8) == 0 || strncmp(t, "geography", 9) == 0;
}

/*
 * Walks a type, checking its shape and collecting ids: ids maps every
 * field, element, key and value id to its type (borrowed; 0 for none), so
 * a duplicate is found the moment it is seen, in one pass. format is the
 * table's format version (v3-only types and defaults are refused below v3).
 */
struct schema_walk {
	struct idmap *ids;
	int format;
	int64_t highest;
};

static bool walk_type(const json_t *type, struct schema_walk *w, struct floe_error *err);

static bool note_id(struct schema_walk *w, int64_t id, const json_t *type, struct floe_error *err)
{
	if (id < 0)
		return meta_bad(err, "schema: field id %" PRId64 " is negative", id);
	if (idmap_has(w->ids, id))
		return meta_bad(err, "schema: field id %" PRId64 " is used twice", id);
	if (!idmap_put(w->ids, id, (int64_t)(intptr_t)type))
		return meta_oom(err);
	if (id > w->highest)
		w->highest = id;
	return true;
}

static bool walk_field(const json_t *f, struct schema_walk *w, struct floe_error *err)
{
	int64_t id;

	if (!json_is_object(f))
		return meta_bad(err, "schema: a field must be an object");
	if (!fjson_get_int(f, "id", "schema field", NULL, &id, err))
		return false;
	if (!json_is_string(json_object_get(f, "name")))
		return meta_bad(err, "schema: field %" PRId64 " needs a string 'name'", id);
	if (!json_is_boolean(json_object_get(f, "required")))
		return meta_bad(err, "schema: field '%s' needs a boolean 'required'",
				fjson_get_str(f, "name"));
	if (w->format < 3) {
		json_t *d = json_object_get(f, "initial-default");
		if (d != NULL && !json_is_null(d))
			return meta_bad(
				err,
				"schema: field '%s' has an initial-default, which needs format version 3",
				fjson_get_str(f, "name"));
	}
	if (!note_id(w, id, json_object_get(f, "type"), err))
		return false;
	return walk_type(json_object_get(f, "type"), w, err);
}

static bool walk_type(const json_t *type, struct schema_walk *w, struct floe_error *err)
{
	if (json_is_string(type)) {
		const char *t = json_string_value(type);
		if (w->format < 3 && type_is_v3_only(t))
			return meta_bad(err, "schema: type %s needs format version 3", t);
		return true;
	}
	if (!json_is_object(type))
		return meta_bad(err, "schema: a type must be a string or an object");
	const char *kind = fjson_get_str(type, "type");
	if (kind == NULL)
		return meta_bad(err, "schema: a nested type needs a 'type'");
	if (strcmp(kind, "struct") == 0) {
		json_t *fields = json_object_get(type, "fields");
		size_t i;
		json_t *f;
		if (!json_is_array(fields))
			return meta_bad(err, "schema: a struct needs a 'fields' array");
		json_array_foreach(fields, i, f) {
			if (!walk_field(f, w, err))
				return false;
		}
		return true;
	}
	if (strcmp(kind, "list") == 0) {
		int64_t id;
		if (!fjson_get_int(type, "element-id", "list type", NULL, &id, err) ||
		    !note_id(w, id, json_object_get(type, "element"), err))
			return false;
		return walk_type(json_object_get(type, "element"), w, err);
	}
	if (strcmp(kind, "map") == 0) {
		int64_t kid, vid;
		if (!fjson_get_int(type, "key-id", "map type", NULL, &kid, err) ||
		    !fjson_get_int(type, "value-id", "map type", NULL, &vid, err) ||
		    !note_id(w, kid, json_object_get(type, "key"), err) ||
		    !note_id(w, vid, json_object_get(type, "value"), err))
			return false;
		return walk_type(json_object_get(type, "key"), w, err) &&
		       walk_type(json_object_get(type, "value"), w, err);
	}
	return meta_bad(err, "schema: unknown nested type '%s'", kind);
}

bool schema_check(const json_t *schema, int format, int64_t *highest, struct idmap **index,
		  struct floe_error *err)
{
	struct schema_walk w = { idmap_new(64), format, 0 };
	bool ok;

	*highest = 0;
	if (index != NULL)
		*index = NULL;
	if (w.ids == NULL)
		return meta_oom(err);
	if (!json_is_object(schema)) {
		idmap_free(w.ids);
		return meta_bad(err, "schema must be an object");
	}
	/* A schema is a struct: its fields are the table's columns. */
	const char *kind = fjson_get_str(schema, "type");
	if (kind == NULL || strcmp(kind, "struct") != 0) {
		idmap_free(w.ids);
		return meta_bad(err, "Cannot create schema, not a struct type: %s",
				kind != NULL ? kind : "(no type)");
	}
	ok = walk_type(schema, &w, err);
	*highest = w.highest;
	if (ok && index != NULL)
		*index = w.ids;
	else
		idmap_free(w.ids);
	return ok;
}

/* Maps id to type unless it is mapped already (the first one wins);
 * false only when out of memory. */
static bool index_id(struct idmap *index, int64_t id, const json_t *type)
{
	return idmap_has(index, id) || idmap_put(index, id, (int64_t)(intptr_t)type);
}

/* Adds every id of a stored type to index; false only when out of memory.
 * Stored metadata is not re-validated here. */
static bool index_type(const json_t *type, struct idmap *index)
{
	const char *kind = fjson_get_str(type, "type");
	size_t i;
	json_t *f;

	if (!json_is_object(type) || kind == NULL)
		return true;
	if (strcmp(kind, "struct") == 0) {
		json_array_foreach(json_object_get(type, "fields"), i, f) {
			if (!index_id(index, fjson_int_or(f, "id", -1), json_object_get(f, "type")))
				return false;
		}
		json_array_foreach(json_object_get(type, "fields"), i, f) {
			if (!index_type(json_object_get(f, "type"), index))
				return false;
		}
		return true;
	}
	const char *const keys[][2] = { { "element-id", "element" },
					{ "key-id", "key" },
					{ "value-id", "value" } };
	for (size_t k = 0; k < 3; k++) {
		json_t *idv = json_object_get(type, keys[k][0]);
		const json_t *t = json_object_get(type, keys[k][1]);
		if (!json_is_integer(idv))
			continue;
		if (!index_id(index, json_integer_value(idv), t) || !index_type(t, index))
			return false;
	}
	return true;
}

struct idmap *schema_index(const json_t *schema, struct floe_error *err)
{
	struct idmap *index = idmap_new(64);

	if (index == NULL || !index_type(schema, index)) {
		idmap_free(index);
		meta_oom(err);
		return NULL;
	}
	return index;
}

/* The type of the field (or element, key, value) id in a schema index, or
 * NULL; *found tells whether the id is in the schema at all. */
static const json_t *index_find_type(const struct idmap *index, int64_t id, bool *found)
{
	int64_t v = 0;

	*found = idmap_get(index, id, &v);
	return *found ? (const json_t *)(intptr_t)v : NULL;
}

static bool type_in(const char *t, const char *const *set)
{
	for (; *set; set++) {
		size_t n = strlen(*set);
		/* decimal(p,s) and fixed[n] match their family name. */
		if (strncmp(t, *set, n) == 0 && (t[n] == '\0' || t[n] == '(' || t[n] == '['))
			return true;
	}
	return false;
}

/* Parses "name[N]" with N > 0. */
static bool transform_arg(const char *tr, const char *name, long *n)
{
	size_t l = strlen(name);
	char *end = NULL;

	if (strncmp(tr, name, l) != 0 || tr[l] != '[')
		return false;
	*n = strtol(tr + l + 1, &end, 10);
	return end != tr + l + 1 && end[0] == ']' && end[1] == '\0' && *n > 0;
}

/*
 * Checks that a partition or sort transform is one Iceberg defines and
 * applies to the source field's type (NULL type: not checked).
 */
static bool transform_check(const char *tr, const json_t *type, const char *what,
			    struct floe_error *err)
{
	static const char *const times[] = { "date",         "timestamp",      "timestamptz",
					     "timestamp_ns", "timestamptz_ns", NULL };
	static const char *const hours[] = { "timestamp", "timestamptz", "timestamp_ns",
					     "timestamptz_ns", NULL };
	static const char *const buckets[] = { "int",
					       "long",
					       "decimal",
					       "date",
					       "time",
					       "timestamp",
					       "timestamptz",
					       "timestamp_ns",
					       "timestamptz_ns",
					       "string",
					       "uuid",
					       "fixed",
					       "binary",
					       NULL };
	static const char *const truncs[] = { "int", "long", "decimal", "string", "binary", NULL };
	const char *t = json_string_value(type);
	const char *const *allowed = NULL;
	long n;

	if (strcmp(tr, "void") == 0)
		return true;
	if (strcmp(tr, "identity") == 0) {
		if (type != NULL && t == NULL)
			return meta_bad(err, "%s: identity cannot apply to a nested type", what);
		if (t != NULL && (strcmp(t, "variant") == 0 || strncmp(t, "geo", 3) == 0))
			return meta_bad(err, "%s: identity cannot apply to %s", what, t);
		return true;
	}
	if (transform_arg(tr, "bucket", &n))
		allowed = buckets;
	else if (transform_arg(tr, "truncate", &n))
		allowed = truncs;
	else if (strcmp(tr, "year") == 0 || strcmp(tr, "month") == 0 || strcmp(tr, "day") == 0)
		allowed = times;
	else if (strcmp(tr, "hour") == 0)
		allowed = hours;
	else
		return meta_bad(err, "%s: unknown transform '%s'", what, tr);
	if (type == NULL)
		return true;
	if (t == NULL || !type_in(t, allowed))
		return meta_bad(err, "%s: transform %s cannot apply to type %s", what, tr,
				t ? t : "(nested)");
	return true;
}

/* The start every partition or sort field shares: an object with an
 * integer source-id and a string transform (owner: "partition spec",
 * what: "partition field"). */
static bool field_head(const json_t *f, const char *owner, const char *what, int64_t *src,
		       struct floe_error *err)
{
	if (!json_is_object(f))
		return meta_bad(err, "%s: a field must be an object", owner);
	if (!fjson_get_int(f, "source-id", what, NULL, src, err))
		return false;
	if (!json_is_string(json_object_get(f, "transform")))
		return meta_bad(err, "%s: 'transform' must be a string", what);
	return true;
}

/* The end they share: the source is in the schema of index (NULL: not
 * checked) and the transform applies to its type. */
static bool field_tail(const json_t *f, int64_t src, const struct idmap *index, const char *owner,
		       const char *what, struct floe_error *err)
{
	bool found = false;
	const json_t *type = NULL;

	if (index != NULL) {
		type = index_find_type(index, src, &found);
		if (!found)
			return meta_bad(err,
					"%s: source id %" PRId64 " is not in the current schema",
					owner, src);
	}
	return transform_check(fjson_get_str(f, "transform"), type, what, err);
}

static bool valid_direction(const char *d)
{
	return d != NULL && (strcmp(d, "asc") == 0 || strcmp(d, "desc") == 0);
}

static bool valid_null_order(const char *n)
{
	return n != NULL && (strcmp(n, "nulls-first") == 0 || strcmp(n, "nulls-last") == 0);
}

bool schema_sort_field_check(const json_t *f, const struct idmap *index, struct floe_error *err)
{
	int64_t src = 0;

	if (!field_head(f, "sort order", "sort field", &src, err))
		return false;
	if (!valid_direction(fjson_get_str(f, "direction")))
		return meta_bad(err, "sort field: 'direction' must be asc or desc");
	if (!valid_null_order(fjson_get_str(f, "null-order")))
		return meta_bad(err, "sort field: 'null-order' must be nulls-first or nulls-last");
	return field_tail(f, src, index, "sort order", "sort field", err);
}

bool schema_partition_field_check(const json_t *f, const struct idmap *index,
				  struct floe_error *err)
{
	int64_t src = 0;

	if (!field_head(f, "partition spec", "partition field", &src, err))
		return false;
	if (!json_is_string(json_object_get(f, "name")))
		return meta_bad(err, "partition field: 'name' must be a string");
	return field_tail(f, src, index, "partition spec", "partition field", err);
}
