/*
 * tablemeta.c - table metadata as the Iceberg Java reference builds it:
 * createTable's fresh ids, every commit requirement and update action, and
 * the post-processing of a commit (metadata-log, snapshot-log rewrites,
 * format-dependent fields).
 *
 * All work is on jansson values. A commit copies the base deeply, mutates
 * the copy, and either returns it or frees it; the base is never touched.
 */
#include "tablemeta.h"

#include "idmap.h"
#include "uuid.h"

#include <stdarg.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define PREVIOUS_VERSIONS_DEFAULT 100
#define PARTITION_DATA_ID_START 1000
#define CLOCK_SKEW_MS 60000

/* --- small JSON helpers --- */

static bool bad(struct floe_error *err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static bool bad(struct floe_error *err, const char *fmt, ...)
{
	va_list ap;
	char msg[FLOE_ERROR_MESSAGE_MAX];

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return floe_err(err, FE_BAD_REQUEST, "%s", msg);
}

/* Reads an integer field. Absent: *present false (if present is given)
 * or an error naming the field. */
static bool get_int(const json_t *obj, const char *key, const char *what,
		    bool *present, int64_t *out, struct floe_error *err)
{
	json_t *v = json_object_get(obj, key);

	if (present != NULL)
		*present = v != NULL && !json_is_null(v);
	if (v == NULL || json_is_null(v)) {
		if (present != NULL)
			return true;
		return bad(err, "%s: missing required field '%s'", what, key);
	}
	if (!json_is_integer(v))
		return bad(err, "%s: field '%s' must be an integer", what, key);
	*out = json_integer_value(v);
	return true;
}

static const char *get_str(const json_t *obj, const char *key)
{
	return json_string_value(json_object_get(obj, key));
}

static int64_t int_or(const json_t *obj, const char *key, int64_t dflt)
{
	json_t *v = json_object_get(obj, key);
	return json_is_integer(v) ? json_integer_value(v) : dflt;
}

static json_t *array_field(json_t *obj, const char *key)
{
	json_t *a = json_object_get(obj, key);

	if (!json_is_array(a)) {
		a = json_array();
		json_object_set_new(obj, key, a);
	}
	return a;
}

static json_t *object_field(json_t *obj, const char *key)
{
	json_t *o = json_object_get(obj, key);

	if (!json_is_object(o)) {
		o = json_object();
		json_object_set_new(obj, key, o);
	}
	return o;
}

/* The element of array whose integer field key equals id, or NULL. */
static json_t *find_by_id(const json_t *array, const char *key, int64_t id,
			  size_t *index)
{
	size_t i;
	json_t *e;

	json_array_foreach(array, i, e) {
		json_t *v = json_object_get(e, key);
		if (json_is_integer(v) && json_integer_value(v) == id) {
			if (index != NULL)
				*index = i;
			return e;
		}
	}
	return NULL;
}

static int64_t max_id(const json_t *array, const char *key, int64_t dflt)
{
	size_t i;
	json_t *e;
	int64_t m = dflt;

	json_array_foreach(array, i, e) {
		int64_t v = int_or(e, key, dflt);
		if (v > m)
			m = v;
	}
	return m;
}

static bool set_int(json_t *obj, const char *key, int64_t v)
{
	return json_object_set_new(obj, key, json_integer(v)) == 0;
}

/* --- schemas --- */

static bool type_is_v3_only(const char *t)
{
	static const char *const v3[] = { "timestamp_ns", "timestamptz_ns",
					   "variant", "unknown" };
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

static bool walk_type(const json_t *type, struct schema_walk *w,
		      struct floe_error *err);

static bool note_id(struct schema_walk *w, int64_t id, const json_t *type,
		    struct floe_error *err)
{
	if (id < 0)
		return bad(err, "schema: field id %" PRId64 " is negative", id);
	if (idmap_has(w->ids, id))
		return bad(err, "schema: field id %" PRId64 " is used twice", id);
	if (!idmap_put(w->ids, id, (int64_t)(intptr_t)type))
		return floe_err(err, FE_INTERNAL, "out of memory");
	if (id > w->highest)
		w->highest = id;
	return true;
}

static bool walk_field(const json_t *f, struct schema_walk *w,
		       struct floe_error *err)
{
	int64_t id;

	if (!json_is_object(f))
		return bad(err, "schema: a field must be an object");
	if (!get_int(f, "id", "schema field", NULL, &id, err))
		return false;
	if (!json_is_string(json_object_get(f, "name")))
		return bad(err, "schema: field %" PRId64 " needs a string 'name'", id);
	if (!json_is_boolean(json_object_get(f, "required")))
		return bad(err, "schema: field '%s' needs a boolean 'required'",
			   get_str(f, "name"));
	if (w->format < 3) {
		json_t *d = json_object_get(f, "initial-default");
		if (d != NULL && !json_is_null(d))
			return bad(err, "schema: field '%s' has an initial-default, which needs format version 3",
				   get_str(f, "name"));
	}
	if (!note_id(w, id, json_object_get(f, "type"), err))
		return false;
	return walk_type(json_object_get(f, "type"), w, err);
}

static bool walk_type(const json_t *type, struct schema_walk *w,
		      struct floe_error *err)
{
	if (json_is_string(type)) {
		const char *t = json_string_value(type);
		if (w->format < 3 && type_is_v3_only(t))
			return bad(err, "schema: type %s needs format version 3", t);
		return true;
	}
	if (!json_is_object(type))
		return bad(err, "schema: a type must be a string or an object");
	const char *kind = get_str(type, "type");
	if (kind == NULL)
		return bad(err, "schema: a nested type needs a 'type'");
	if (strcmp(kind, "struct") == 0) {
		json_t *fields = json_object_get(type, "fields");
		size_t i;
		json_t *f;
		if (!json_is_array(fields))
			return bad(err, "schema: a struct needs a 'fields' array");
		json_array_foreach(fields, i, f) {
			if (!walk_field(f, w, err))
				return false;
		}
		return true;
	}
	if (strcmp(kind, "list") == 0) {
		int64_t id;
		if (!get_int(type, "element-id", "list type", NULL, &id, err) ||
		    !note_id(w, id, json_object_get(type, "element"), err))
			return false;
		return walk_type(json_object_get(type, "element"), w, err);
	}
	if (strcmp(kind, "map") == 0) {
		int64_t kid, vid;
		if (!get_int(type, "key-id", "map type", NULL, &kid, err) ||
		    !get_int(type, "value-id", "map type", NULL, &vid, err) ||
		    !note_id(w, kid, json_object_get(type, "key"), err) ||
		    !note_id(w, vid, json_object_get(type, "value"), err))
			return false;
		return walk_type(json_object_get(type, "key"), w, err) &&
		       walk_type(json_object_get(type, "value"), w, err);
	}
	return bad(err, "schema: unknown nested type '%s'", kind);
}

/*
 * Checks a schema object; *highest gets its highest id (0 if none). With
 * index, *index gets the map of its ids to their types (caller frees).
 */
static bool schema_check(const json_t *schema, int format, int64_t *highest,
			 struct idmap **index, struct floe_error *err)
{
	struct schema_walk w = { idmap_new(64), format, 0 };
	bool ok;

	*highest = 0;
	if (index != NULL)
		*index = NULL;
	if (w.ids == NULL)
		return floe_err(err, FE_INTERNAL, "out of memory");
	if (!json_is_object(schema)) {
		idmap_free(w.ids);
		return bad(err, "schema must be an object");
	}
	ok = walk_type(schema, &w, err);
	*highest = w.highest;
	if (ok && index != NULL)
		*index = w.ids;
	else
		idmap_free(w.ids);
	return ok;
}

/* Adds every id of a stored type to index (first one wins); false only
 * when out of memory. Stored metadata is not re-validated here. */
static bool index_type(const json_t *type, struct idmap *index)
{
	const char *kind = get_str(type, "type");
	size_t i;
	json_t *f;

	if (!json_is_object(type) || kind == NULL)
		return true;
	if (strcmp(kind, "struct") == 0) {
		json_array_foreach(json_object_get(type, "fields"), i, f) {
			int64_t id = int_or(f, "id", -1);
			const json_t *t = json_object_get(f, "type");
			if (!idmap_has(index, id) &&
			    !idmap_put(index, id, (int64_t)(intptr_t)t))
				return false;
		}
		json_array_foreach(json_object_get(type, "fields"), i, f) {
			if (!index_type(json_object_get(f, "type"), index))
				return false;
		}
		return true;
	}
	const char *const keys[][2] = { { "element-id", "element" },
					{ "key-id", "key" }, { "value-id", "value" } };
	for (size_t k = 0; k < 3; k++) {
		json_t *idv = json_object_get(type, keys[k][0]);
		const json_t *t = json_object_get(type, keys[k][1]);
		if (!json_is_integer(idv))
			continue;
		if (!idmap_has(index, json_integer_value(idv)) &&
		    !idmap_put(index, json_integer_value(idv), (int64_t)(intptr_t)t))
			return false;
		if (!index_type(t, index))
			return false;
	}
	return true;
}

/* The ids of a stored schema mapped to their types (new; caller frees),
 * or NULL with FE_INTERNAL when out of memory. */
static struct idmap *schema_index(const json_t *schema, struct floe_error *err)
{
	struct idmap *index = idmap_new(64);

	if (index == NULL || !index_type(schema, index)) {
		idmap_free(index);
		floe_err(err, FE_INTERNAL, "out of memory");
		return NULL;
	}
	return index;
}

/* The type of the field (or element, key, value) id in a schema index, or
 * NULL; *found tells whether the id is in the schema at all. */
static const json_t *index_find_type(const struct idmap *index, int64_t id,
				     bool *found)
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
	static const char *const times[] = { "date", "timestamp", "timestamptz",
					      "timestamp_ns", "timestamptz_ns", NULL };
	static const char *const hours[] = { "timestamp", "timestamptz", "timestamp_ns",
					      "timestamptz_ns", NULL };
	static const char *const buckets[] = { "int", "long", "decimal", "date", "time",
						"timestamp", "timestamptz", "timestamp_ns",
						"timestamptz_ns", "string", "uuid", "fixed",
						"binary", NULL };
	static const char *const truncs[] = { "int", "long", "decimal", "string",
					       "binary", NULL };
	const char *t = json_string_value(type);
	const char *const *allowed = NULL;
	long n;

	if (strcmp(tr, "void") == 0)
		return true;
	if (strcmp(tr, "identity") == 0) {
		if (type != NULL && t == NULL)
			return bad(err, "%s: identity cannot apply to a nested type", what);
		if (t != NULL && (strcmp(t, "variant") == 0 || strncmp(t, "geo", 3) == 0))
			return bad(err, "%s: identity cannot apply to %s", what, t);
		return true;
	}
	if (transform_arg(tr, "bucket", &n))
		allowed = buckets;
	else if (transform_arg(tr, "truncate", &n))
		allowed = truncs;
	else if (strcmp(tr, "year") == 0 || strcmp(tr, "month") == 0 ||
		 strcmp(tr, "day") == 0)
		allowed = times;
	else if (strcmp(tr, "hour") == 0)
		allowed = hours;
	else
		return bad(err, "%s: unknown transform '%s'", what, tr);
	if (type == NULL)
		return true;
	if (t == NULL || !type_in(t, allowed))
		return bad(err, "%s: transform %s cannot apply to type %s", what, tr,
			   t ? t : "(nested)");
	return true;
}

/* --- fresh ids for createTable --- */

struct fresh_ids {
	struct idmap *map; /* old id -> new id */
	int64_t next;      /* last id assigned */
};

/*
 * Renumbers a type in place as Iceberg's AssignFreshIds does: every
 * direct field of a struct first, then each field's type in order; a
 * list's element id, a map's key and value ids, before recursing.
 */
static bool reassign_type(json_t *type, struct fresh_ids *m)
{
	if (!json_is_object(type))
		return true;
	const char *kind = get_str(type, "type");
	if (strcmp(kind, "struct") == 0) {
		json_t *fields = json_object_get(type, "fields");
		size_t i;
		json_t *f;
		json_array_foreach(fields, i, f) {
			int64_t fresh = ++m->next;
			if (!idmap_put(m->map, int_or(f, "id", -1), fresh) ||
			    !set_int(f, "id", fresh))
				return false;
		}
		json_array_foreach(fields, i, f) {
			if (!reassign_type(json_object_get(f, "type"), m))
				return false;
		}
		return true;
	}
	if (strcmp(kind, "list") == 0) {
		int64_t fresh = ++m->next;
		if (!idmap_put(m->map, int_or(type, "element-id", -1), fresh) ||
		    !set_int(type, "element-id", fresh))
			return false;
		return reassign_type(json_object_get(type, "element"), m);
	}
	if (strcmp(kind, "map") == 0) {
		int64_t k = ++m->next;
		int64_t v = ++m->next;
		if (!idmap_put(m->map, int_or(type, "key-id", -1), k) ||
		    !set_int(type, "key-id", k) ||
		    !idmap_put(m->map, int_or(type, "value-id", -1), v) ||
		    !set_int(type, "value-id", v))
			return false;
		return reassign_type(json_object_get(type, "key"), m) &&
		       reassign_type(json_object_get(type, "value"), m);
	}
	return true;
}

static bool valid_direction(const char *d)
{
	return d != NULL && (strcmp(d, "asc") == 0 || strcmp(d, "desc") == 0);
}

static bool valid_null_order(const char *n)
{
	return n != NULL &&
	       (strcmp(n, "nulls-first") == 0 || strcmp(n, "nulls-last") == 0);
}

/* Checks a sort field; schema is the index (schema_check, schema_index)
 * of the schema its source-id must be in (NULL: not checked). */
static bool sort_field_check(const json_t *f, const struct idmap *schema,
			     struct floe_error *err)
{
	int64_t src;
	bool found = false;
	const json_t *type = NULL;

	if (!json_is_object(f))
		return bad(err, "sort order: a field must be an object");
	if (!get_int(f, "source-id", "sort field", NULL, &src, err))
		return false;
	if (!json_is_string(json_object_get(f, "transform")))
		return bad(err, "sort field: 'transform' must be a string");
	if (!valid_direction(get_str(f, "direction")))
		return bad(err, "sort field: 'direction' must be asc or desc");
	if (!valid_null_order(get_str(f, "null-order")))
		return bad(err, "sort field: 'null-order' must be nulls-first or nulls-last");
	if (schema != NULL) {
		type = index_find_type(schema, src, &found);
		if (!found)
			return bad(err, "sort order: source id %" PRId64 " is not in the current schema", src);
	}
	return transform_check(get_str(f, "transform"), type, "sort field", err);
}

static bool partition_field_check(const json_t *f, const struct idmap *schema,
				  struct floe_error *err)
{
	int64_t src;
	bool found = false;
	const json_t *type = NULL;

	if (!json_is_object(f))
		return bad(err, "partition spec: a field must be an object");
	if (!get_int(f, "source-id", "partition field", NULL, &src, err))
		return false;
	if (!json_is_string(json_object_get(f, "transform")))
		return bad(err, "partition field: 'transform' must be a string");
	if (!json_is_string(json_object_get(f, "name")))
		return bad(err, "partition field: 'name' must be a string");
	if (schema != NULL) {
		type = index_find_type(schema, src, &found);
		if (!found)
			return bad(err, "partition spec: source id %" PRId64 " is not in the current schema", src);
	}
	return transform_check(get_str(f, "transform"), type, "partition field", err);
}

static const char *const reserved_properties[] = {
	"format-version", "uuid", "snapshot-count", "current-snapshot-id",
	"current-snapshot-summary", "current-snapshot-timestamp-ms",
	"current-schema", "default-partition-spec", "default-sort-order",
};

static bool is_reserved_property(const char *k)
{
	for (size_t i = 0; i < sizeof(reserved_properties) / sizeof(char *); i++) {
		if (strcmp(k, reserved_properties[i]) == 0)
			return true;
	}
	return false;
}

static bool check_string_map(const json_t *v, const char *what,
			     struct floe_error *err)
{
	const char *k;
	json_t *x;

	if (!json_is_object(v))
		return bad(err, "%s must be an object of strings", what);
	json_object_foreach((json_t *)v, k, x) {
		if (!json_is_string(x))
			return bad(err, "%s: the value of '%s' must be a string", what, k);
	}
	return true;
}

static char *strip_trailing_slash(const char *s)
{
	char *c = strdup(s);
	size_t n = c ? strlen(c) : 0;

	while (n > 1 && c[n - 1] == '/')
		c[--n] = '\0';
	return c;
}

/* Parses properties["format-version"]; *format stays as is when absent. */
static bool format_from_properties(const json_t *props, int *format,
				   struct floe_error *err)
{
	const char *fv = get_str(props, "format-version");
	char *end = NULL;
	long v;

	if (json_object_get(props, "format-version") == NULL)
		return true;
	if (fv == NULL)
		return bad(err, "property format-version must be a string");
	v = strtol(fv, &end, 10);
	if (*fv == '\0' || *end != '\0' || v < 1 ||
	    v > TABLEMETA_MAX_FORMAT_VERSION)
		return bad(err, "unsupported format-version '%s': floe supports 1 to %d",
			   fv, TABLEMETA_MAX_FORMAT_VERSION);
	*format = (int)v;
	return true;
}

/* commit.retry.* settings are integers; engines fail later on others. */
static bool retry_properties_valid(const json_t *props, struct floe_error *err)
{
	const char *k;
	json_t *v;

	json_object_foreach((json_t *)props, k, v) {
		const char *s = json_string_value(v);
		char *end = NULL;
		if (strncmp(k, "commit.retry.", 13) != 0)
			continue;
		strtoll(s, &end, 10);
		if (*s == '\0' || *end != '\0')
			return bad(err, "property %s must be an integer, not '%s'", k, s);
	}
	return true;
}

static json_t *empty_metadata(int format, int64_t now_ms)
{
	return json_pack("{s:i, s:I, s:i, s:[], s:i, s:[], s:i, s:i, s:[], s:i,"
			 " s:{}, s:I, s:{}, s:[], s:[], s:[], s:[], s:[]}",
			 "format-version", format,
			 "last-updated-ms", (json_int_t)now_ms,
			 "last-column-id", 0,
			 "schemas",
			 "current-schema-id", -1,
			 "partition-specs",
			 "default-spec-id", -1,
			 "last-partition-id", PARTITION_DATA_ID_START - 1,
			 "sort-orders",
			 "default-sort-order-id", -1,
			 "properties",
			 "current-snapshot-id", (json_int_t)-1,
			 "refs",
			 "snapshots",
			 "statistics",
			 "partition-statistics",
			 "snapshot-log",
			 "metadata-log");
}

static void normalize_format_fields(json_t *m);

json_t *tablemeta_create(const json_t *request, const char *location,
			 const char *uuid, int64_t now_ms, struct floe_error *err)
{
	json_t *m = NULL;
	json_t *schema = NULL;
	json_t *spec = NULL;
	json_t *order = NULL;
	json_t *props = NULL;
	struct fresh_ids ids = { idmap_new(64), 0 };
	struct idmap *rindex = NULL;
	const json_t *rprops = json_object_get(request, "properties");
	int format = 2;
	int64_t highest;
	char *loc = NULL;

	if (ids.map == NULL)
		goto oom;
	if (!json_is_string(json_object_get(request, "name"))) {
		bad(err, "missing required field 'name'");
		goto fail;
	}
	if (rprops != NULL && !json_is_null(rprops)) {
		if (!check_string_map(rprops, "properties", err) ||
		    !format_from_properties(rprops, &format, err) ||
		    !retry_properties_valid(rprops, err))
			goto fail;
	} else {
		rprops = NULL;
	}
	const json_t *rschema = json_object_get(request, "schema");
	if (rschema == NULL || json_is_null(rschema)) {
		bad(err, "missing required field 'schema'");
		goto fail;
	}
	if (!schema_check(rschema, format, &highest, &rindex, err))
		goto fail;

	/* Schema: fresh ids, schema-id 0, identifier fields remapped. */
	schema = json_deep_copy(rschema);
	if (schema == NULL || !reassign_type(schema, &ids))
		goto oom;
	set_int(schema, "schema-id", 0);
	json_object_set_new(schema, "type", json_string("struct"));
	json_t *idf = json_object_get(rschema, "identifier-field-ids");
	if (idf != NULL && !json_is_null(idf)) {
		json_t *fresh_idf = json_array();
		size_t i;
		json_t *v;
		if (!json_is_array(idf)) {
			json_decref(fresh_idf);
			bad(err, "schema: identifier-field-ids must be an array");
			goto fail;
		}
		json_array_foreach(idf, i, v) {
			int64_t fresh;
			if (!json_is_integer(v) ||
			    !idmap_get(ids.map, json_integer_value(v), &fresh)) {
				json_decref(fresh_idf);
				bad(err, "schema: identifier field %s is not in the schema",
				    json_is_integer(v) ? "id" : "(not an integer)");
				goto fail;
			}
			json_array_append_new(fresh_idf, json_integer(fresh));
		}
		json_object_set_new(schema, "identifier-field-ids", fresh_idf);
	}

	/* Partition spec: spec-id 0, source ids remapped, field ids 1000+. */
	const json_t *rspec = json_object_get(request, "partition-spec");
	json_t *pfields = json_array();
	spec = json_pack("{s:i, s:o}", "spec-id", 0, "fields", pfields);
	if (spec == NULL)
		goto oom;
	if (rspec != NULL && !json_is_null(rspec)) {
		json_t *rf = json_object_get(rspec, "fields");
		size_t i;
		json_t *f;
		if (!json_is_array(rf)) {
			bad(err, "partition-spec needs a 'fields' array");
			goto fail;
		}
		json_array_foreach(rf, i, f) {
			int64_t src;
			if (!partition_field_check(f, rindex, err))
				goto fail;
			if (!idmap_get(ids.map, int_or(f, "source-id", -1), &src)) {
				bad(err, "partition-spec: source id %" PRId64 " is not in the schema",
				    int_or(f, "source-id", -1));
				goto fail;
			}
			json_t *nf = json_pack("{s:s, s:O, s:I, s:I}",
					       "name", get_str(f, "name"),
					       "transform", json_object_get(f, "transform"),
					       "source-id", (json_int_t)src,
					       "field-id",
					       (json_int_t)(PARTITION_DATA_ID_START + (int64_t)i));
			if (nf == NULL || json_array_append_new(pfields, nf) != 0)
				goto oom;
		}
	}

	/* Sort order: unsorted is order 0; a sorted one is order 1. */
	const json_t *rorder = json_object_get(request, "write-order");
	json_t *ofields = json_array();
	json_t *rof = json_is_object(rorder) ? json_object_get(rorder, "fields") : NULL;
	if (rorder != NULL && !json_is_null(rorder) &&
	    (!json_is_object(rorder) || !json_is_array(rof))) {
		json_decref(ofields);
		bad(err, "write-order needs a 'fields' array");
		goto fail;
	}
	order = json_pack("{s:i, s:o}", "order-id",
			  json_array_size(rof) > 0 ? 1 : 0, "fields", ofields);
	if (order == NULL)
		goto oom;
	{
		size_t i;
		json_t *f;
		json_array_foreach(rof, i, f) {
			int64_t src;
			if (!sort_field_check(f, rindex, err))
				goto fail;
			if (!idmap_get(ids.map, int_or(f, "source-id", -1), &src)) {
				bad(err, "write-order: source id %" PRId64 " is not in the schema",
				    int_or(f, "source-id", -1));
				goto fail;
			}
			json_t *nf = json_deep_copy(f);
			if (nf == NULL || !set_int(nf, "source-id", src) ||
			    json_array_append_new(ofields, nf) != 0)
				goto oom;
		}
	}

	/* Properties: reserved keys dropped, zstd unless chosen. */
	props = json_object();
	if (props == NULL)
		goto oom;
	if (rprops != NULL) {
		const char *k;
		json_t *v;
		json_object_foreach((json_t *)rprops, k, v) {
			if (!is_reserved_property(k))
				json_object_set(props, k, v);
		}
	}
	if (json_object_get(props, "write.parquet.compression-codec") == NULL)
		json_object_set_new(props, "write.parquet.compression-codec",
				    json_string("zstd"));

	const json_t *rloc = json_object_get(request, "location");
	if (rloc != NULL && !json_is_null(rloc)) {
		if (!json_is_string(rloc) || json_string_length(rloc) == 0) {
			bad(err, "location must be a non-empty string");
			goto fail;
		}
		loc = strip_trailing_slash(json_string_value(rloc));
	} else {
		loc = strip_trailing_slash(location);
	}
	if (loc == NULL)
		goto oom;

	m = empty_metadata(format, now_ms);
	if (m == NULL)
		goto oom;
	json_object_set_new(m, "table-uuid", json_string(uuid));
	json_object_set_new(m, "location", json_string(loc));
	set_int(m, "last-sequence-number", 0);
	set_int(m, "last-column-id", ids.next);
	set_int(m, "current-schema-id", 0);
	json_array_append(json_object_get(m, "schemas"), schema);
	set_int(m, "default-spec-id", 0);
	json_array_append(json_object_get(m, "partition-specs"), spec);
	set_int(m, "last-partition-id",
		PARTITION_DATA_ID_START - 1 + (int64_t)json_array_size(pfields));
	set_int(m, "default-sort-order-id", int_or(order, "order-id", 0));
	json_array_append(json_object_get(m, "sort-orders"), order);
	json_object_set(m, "properties", props);
	if (format >= 3)
		set_int(m, "next-row-id", 0);
	normalize_format_fields(m);
	goto done;
oom:
	floe_err(err, FE_INTERNAL, "out of memory");
fail:
	json_decref(m);
	m = NULL;
done:
	idmap_free(ids.map);
	idmap_free(rindex);
	json_decref(schema);
	json_decref(spec);
	json_decref(order);
	json_decref(props);
	free(loc);
	return m;
}

/* --- requirements --- */

static bool req_failed(struct floe_error *err, const char *type,
		       const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static bool req_failed(struct floe_error *err, const char *type,
		       const char *fmt, ...)
{
	va_list ap;
	char msg[FLOE_ERROR_MESSAGE_MAX - 64];

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return floe_err(err, FE_COMMIT_FAILED, "Requirement failed: %s (%s)", msg,
			type);
}

/* The id a requirement asserts, as checked against a metadata field. */
static bool check_id_requirement(const json_t *base, const json_t *r,
				 const char *type, const char *field,
				 const char *meta_key, const char *what,
				 struct floe_error *err)
{
	int64_t want = 0;
	if (!get_int(r, field, type, NULL, &want, err))
		return false;
	int64_t have = int_or(base, meta_key, -1);
	if (want != have)
		return req_failed(err, type, "%s changed: expected id %" PRId64
				  " != %" PRId64, what, want, have);
	return true;
}

/* assert-ref-snapshot-id against the ref cur (NULL: absent). */
static bool check_ref_requirement(const json_t *cur, const char *ref, bool present,
				  int64_t want, const char *type,
				  struct floe_error *err)
{
	const char *kind = cur ? get_str(cur, "type") : NULL;

	if (kind == NULL)
		kind = "branch";
	if (!present && cur != NULL)
		return req_failed(err, type, "%s %s was created concurrently", kind, ref);
	if (present && cur == NULL)
		return req_failed(err, type, "branch or tag %s is missing, expected %" PRId64,
				  ref, want);
	if (present && int_or(cur, "snapshot-id", -1) != want)
		return req_failed(err, type,
				  "%s %s has changed: expected id %" PRId64 " != %" PRId64,
				  kind, ref, want, int_or(cur, "snapshot-id", -1));
	return true;
}

bool tablemeta_check_requirements(const json_t *base,
				  const json_t *requirements,
				  struct floe_error *err)
{
	size_t i;
	json_t *r;

	if (requirements == NULL || json_is_null(requirements))
		return true;
	if (!json_is_array(requirements))
		return bad(err, "'requirements' must be an array");
	json_array_foreach(requirements, i, r) {
		const char *type = get_str(r, "type");
		if (!json_is_object(r) || type == NULL)
			return bad(err, "requirement %zu needs a string 'type'", i);
		if (strcmp(type, "assert-create") == 0) {
			if (base != NULL)
				return req_failed(err, type, "table already exists");
			continue;
		}
		if (base == NULL)
			return bad(err, "requirement %s needs an existing table; only assert-create applies to a new one",
				   type);
		if (strcmp(type, "assert-table-uuid") == 0) {
			const char *want = get_str(r, "uuid");
			const char *have = get_str(base, "table-uuid");
			if (want == NULL)
				return bad(err, "assert-table-uuid: missing required field 'uuid'");
			if (have == NULL || strcasecmp(want, have) != 0)
				return req_failed(err, type,
						  "UUID does not match: expected %s != %s",
						  have ? have : "(none)", want);
		} else if (strcmp(type, "assert-ref-snapshot-id") == 0) {
			const char *ref = get_str(r, "ref");
			bool present;
			int64_t want = 0;
			if (ref == NULL)
				return bad(err, "assert-ref-snapshot-id: missing required field 'ref'");
			if (!get_int(r, "snapshot-id", type, &present, &want, err))
				return false;
			json_t *synth = NULL;
			json_t *cur = json_object_get(json_object_get(base, "refs"), ref);
			/* Metadata written before refs existed: main is the
			 * current snapshot. */
			if (json_object_get(base, "refs") == NULL && strcmp(ref, "main") == 0 &&
			    int_or(base, "current-snapshot-id", -1) != -1) {
				synth = json_pack("{s:I, s:s}", "snapshot-id",
						  (json_int_t)int_or(base, "current-snapshot-id", -1),
						  "type", "branch");
				cur = synth;
			}
			bool held = check_ref_requirement(cur, ref, present, want, type, err);
			json_decref(synth);
			if (!held)
				return false;
		} else if (strcmp(type, "assert-last-assigned-field-id") == 0) {
			if (!check_id_requirement(base, r, type, "last-assigned-field-id",
						  "last-column-id",
						  "last assigned field id", err))
				return false;
		} else if (strcmp(type, "assert-current-schema-id") == 0) {
			if (!check_id_requirement(base, r, type, "current-schema-id",
						  "current-schema-id", "current schema",
						  err))
				return false;
		} else if (strcmp(type, "assert-last-assigned-partition-id") == 0) {
			if (!check_id_requirement(base, r, type,
						  "last-assigned-partition-id",
						  "last-partition-id",
						  "last assigned partition id", err))
				return false;
		} else if (strcmp(type, "assert-default-spec-id") == 0) {
			if (!check_id_requirement(base, r, type, "default-spec-id",
						  "default-spec-id",
						  "default partition spec", err))
				return false;
		} else if (strcmp(type, "assert-default-sort-order-id") == 0) {
			if (!check_id_requirement(base, r, type, "default-sort-order-id",
						  "default-sort-order-id",
						  "default sort order", err))
				return false;
		} else {
			return bad(err, "unknown requirement type '%s'", type);
		}
	}
	return true;
}

/* --- updates --- */

/*
 * One of the lists whose entries have ids and are reused when an identical
 * one is added (schemas, partition specs, sort orders), indexed on first
 * use: positions by id, ids by content (content_key), and the highest id.
 */
struct id_list {
	struct idmap *pos;   /* id -> position; NULL: not built yet */
	json_t *by_content;  /* content key -> id (the first entry wins) */
	int64_t highest;
	bool highest_stale;  /* the highest was removed: rescan */
};

struct apply {
	json_t *m;           /* the working copy */
	int64_t now;
	bool changed;
	int64_t last_schema; /* last added in this commit, -2: none */
	int64_t last_spec;
	int64_t last_order;
	struct idmap *added[3];  /* schema, spec, sort order ids added here */
	struct idmap *added_snapshots; /* snapshot ids added in this commit */
	json_t *main_targets;    /* snapshot ids main was set to, in order */
	bool snapshots_removed;
	/*
	 * Built on first use, so a commit of thousands of updates on a table
	 * of thousands of snapshots stays linear. Removed entries become JSON
	 * null holes (positions stay valid) until finish() compacts them.
	 */
	struct idmap *snapshot_index;  /* snapshot id -> position in snapshots */
	struct idmap *stats_index[2];  /* snapshot id -> position in stats_lists[k] */
	struct idmap *removed;         /* snapshots removed here whose refs remain */
	json_t *key_index;             /* encryption key-id -> position */
	struct id_list lists[3];       /* schemas, specs, sort orders */
	struct idmap *cur_fields;      /* schema_index of schema cur_fields_of */
	int64_t cur_fields_of;
	bool holes;
};

#define NONE_ADDED (-2)

enum { LIST_SCHEMAS, LIST_SPECS, LIST_ORDERS };

static const struct {
	const char *list;
	const char *idkey;
	int64_t missing_id; /* what an entry without an id counts as */
} id_lists[3] = {
	{ "schemas", "schema-id", -1 },
	{ "partition-specs", "spec-id", -1 },
	{ "sort-orders", "order-id", 0 },
};

static const char *const stats_lists[2] = { "statistics", "partition-statistics" };

static bool oom(struct floe_error *err)
{
	return floe_err(err, FE_INTERNAL, "out of memory");
}

/*
 * A new index of array: the integer field key of each object -> its
 * position. The first entry wins; with drop_duplicates a later entry with
 * the same id becomes a hole (*holes is set), as a replace by id would
 * leave one entry. NULL when out of memory.
 */
static struct idmap *index_array(json_t *array, const char *key,
				 bool drop_duplicates, bool *holes,
				 struct floe_error *err)
{
	struct idmap *index = idmap_new(json_array_size(array));
	size_t i;
	json_t *e;

	if (index == NULL)
		return oom(err), NULL;
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
			return oom(err), NULL;
		}
	}
	return index;
}

static struct idmap *snapshot_index(struct apply *a, struct floe_error *err)
{
	if (a->snapshot_index == NULL)
		a->snapshot_index = index_array(array_field(a->m, "snapshots"),
						"snapshot-id", false, &a->holes, err);
	return a->snapshot_index;
}

static struct idmap *stats_index(struct apply *a, size_t k, struct floe_error *err)
{
	if (a->stats_index[k] == NULL)
		a->stats_index[k] = index_array(array_field(a->m, stats_lists[k]),
						"snapshot-id", true, &a->holes, err);
	return a->stats_index[k];
}

/* The snapshot with this id in the working copy (borrowed), or NULL; *ok
 * false when out of memory. */
static const json_t *apply_snapshot(struct apply *a, int64_t id, bool *ok,
				    struct floe_error *err)
{
	struct idmap *index = snapshot_index(a, err);
	int64_t pos;

	*ok = index != NULL;
	if (index == NULL || !idmap_get(index, id, &pos))
		return NULL;
	return json_array_get(json_object_get(a->m, "snapshots"), (size_t)pos);
}

/* Drops the entry for snapshot id from stats_lists[k] (leaves a hole). */
static bool drop_stats(struct apply *a, size_t k, int64_t id, bool *dropped,
		       struct floe_error *err)
{
	struct idmap *index = stats_index(a, k, err);
	int64_t pos;

	*dropped = false;
	if (index == NULL)
		return false;
	if (!idmap_get(index, id, &pos))
		return true;
	json_array_set_new(json_object_get(a->m, stats_lists[k]), (size_t)pos,
			   json_null());
	idmap_del(index, id);
	a->holes = true;
	*dropped = true;
	return true;
}

/*
 * Drops the refs that point at a snapshot removed in this commit (only at
 * snapshot *only when given), as Java's remove-snapshots does at once;
 * main going means no current snapshot.
 */
static void drop_removed_refs(struct apply *a, const int64_t *only)
{
	json_t *refs = object_field(a->m, "refs");
	const char *name;
	json_t *ref;
	void *tmp;

	json_object_foreach_safe(refs, tmp, name, ref) {
		int64_t target = int_or(ref, "snapshot-id", -1);
		bool gone = only != NULL ? target == *only
					 : idmap_has(a->removed, target);
		if (!gone)
			continue;
		if (strcmp(name, "main") == 0)
			set_int(a->m, "current-snapshot-id", -1);
		json_object_del(refs, name);
	}
}

/* Removes the holes of array in one pass. */
static void compact(json_t *array)
{
	size_t n = json_array_size(array);
	size_t keep = 0;

	for (size_t i = 0; i < n; i++) {
		json_t *e = json_array_get(array, i);
		if (json_is_null(e))
			continue;
		if (keep != i)
			json_array_set(array, keep, e);
		keep++;
	}
	while (json_array_size(array) > keep)
		json_array_remove(array, json_array_size(array) - 1);
}

/*
 * What makes two entries of list kind the same, as a string (new; caller
 * frees), or NULL when the entry can match nothing (or out of memory):
 * schemas by fields and identifier fields, specs by source id, transform
 * and name of each field (not the field ids), sort orders by fields.
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
			json_array_append_new(key, json_pack("[O, O, O]", src,
							     tr ? tr : json_null(),
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

static struct id_list *id_list(struct apply *a, int kind, struct floe_error *err)
{
	struct id_list *l = &a->lists[kind];
	json_t *arr = array_field(a->m, id_lists[kind].list);
	size_t i;
	json_t *e;

	if (l->pos != NULL)
		return l;
	l->pos = idmap_new(json_array_size(arr));
	l->by_content = json_object();
	l->highest = id_lists[kind].missing_id;
	l->highest_stale = false;
	if (l->pos == NULL || l->by_content == NULL)
		goto oom;
	json_array_foreach(arr, i, e) {
		int64_t id = int_or(e, id_lists[kind].idkey, id_lists[kind].missing_id);
		if (json_is_null(e))
			continue;
		if (id > l->highest)
			l->highest = id;
		if (!json_is_integer(json_object_get(e, id_lists[kind].idkey)) ||
		    idmap_has(l->pos, id))
			continue;
		if (!idmap_put(l->pos, id, (int64_t)i))
			goto oom;
		char *key = content_key(kind, e);
		if (key != NULL && json_object_get(l->by_content, key) == NULL &&
		    json_object_set_new(l->by_content, key, json_integer(id)) != 0) {
			free(key);
			goto oom;
		}
		free(key);
	}
	return l;
oom:
	idmap_free(l->pos);
	json_decref(l->by_content);
	l->pos = NULL;
	l->by_content = NULL;
	return oom(err), NULL;
}

static void id_list_forget(struct id_list *l)
{
	idmap_free(l->pos);
	json_decref(l->by_content);
	l->pos = NULL;
	l->by_content = NULL;
}

/* The entry of list kind with this id (borrowed), or NULL; *ok false when
 * out of memory. */
static const json_t *id_list_get(struct apply *a, int kind, int64_t id, bool *ok,
				 struct floe_error *err)
{
	struct id_list *l = id_list(a, kind, err);
	int64_t pos;

	*ok = l != NULL;
	if (l == NULL || !idmap_get(l->pos, id, &pos))
		return NULL;
	return json_array_get(json_object_get(a->m, id_lists[kind].list), (size_t)pos);
}

/* The id of an entry identical to entry (content_key), or NONE_ADDED. */
static int64_t id_list_find(const struct id_list *l, int kind, const json_t *entry)
{
	char *key = content_key(kind, entry);
	json_t *id = key != NULL ? json_object_get(l->by_content, key) : NULL;

	free(key);
	return id != NULL ? json_integer_value(id) : NONE_ADDED;
}

/* The highest id in list kind (missing_id when empty). */
static int64_t id_list_highest(struct apply *a, struct id_list *l, int kind)
{
	if (l->highest_stale) {
		l->highest = max_id(json_object_get(a->m, id_lists[kind].list),
				    id_lists[kind].idkey, id_lists[kind].missing_id);
		l->highest_stale = false;
	}
	return l->highest;
}

/* Appends entry (stolen) with this id to list kind and indexes it. */
static bool id_list_add(struct apply *a, struct id_list *l, int kind, int64_t id,
			json_t *entry, struct floe_error *err)
{
	json_t *arr = array_field(a->m, id_lists[kind].list);
	char *key = content_key(kind, entry);
	bool ok = json_array_append_new(arr, entry) == 0 &&
		  idmap_put(l->pos, id, (int64_t)json_array_size(arr) - 1) &&
		  idmap_put(a->added[kind], id, 1);

	if (ok && key != NULL && json_object_get(l->by_content, key) == NULL)
		ok = json_object_set_new(l->by_content, key, json_integer(id)) == 0;
	free(key);
	if (!ok)
		return oom(err);
	if (!l->highest_stale && id > l->highest)
		l->highest = id;
	return true;
}

/*
 * The field index (schema_index) of schema, the current schema, built once
 * per commit rather than once per add-spec or add-sort-order; it is keyed
 * by schema id, and forgotten when schemas are removed (an id may then be
 * given again). Borrowed; NULL when out of memory.
 */
static const struct idmap *current_schema_fields(struct apply *a, const json_t *schema,
						 struct floe_error *err)
{
	int64_t id = int_or(a->m, "current-schema-id", -1);

	if (a->cur_fields != NULL && a->cur_fields_of == id)
		return a->cur_fields;
	idmap_free(a->cur_fields);
	a->cur_fields = schema_index(schema, err);
	a->cur_fields_of = id;
	return a->cur_fields;
}

static const json_t *apply_current_schema(struct apply *a, bool *ok,
					  struct floe_error *err)
{
	return id_list_get(a, LIST_SCHEMAS, int_or(a->m, "current-schema-id", -1), ok, err);
}

/* Brings the working copy back to plain metadata: refs of removed
 * snapshots dropped, holes gone, indexes forgotten. */
static void settle_removals(struct apply *a)
{
	if (a->removed != NULL) {
		drop_removed_refs(a, NULL);
		idmap_free(a->removed);
		a->removed = NULL;
	}
	if (a->holes) {
		compact(array_field(a->m, "snapshots"));
		for (size_t k = 0; k < 2; k++)
			compact(array_field(a->m, stats_lists[k]));
		compact(json_object_get(a->m, "encryption-keys"));
		for (size_t k = 0; k < 3; k++)
			compact(json_object_get(a->m, id_lists[k].list));
		a->holes = false;
	}
	for (size_t k = 0; k < 3; k++)
		id_list_forget(&a->lists[k]);
	json_decref(a->key_index);
	a->key_index = NULL;
	idmap_free(a->snapshot_index);
	a->snapshot_index = NULL;
	for (size_t k = 0; k < 2; k++) {
		idmap_free(a->stats_index[k]);
		a->stats_index[k] = NULL;
	}
}

static int format_of(const json_t *m)
{
	return (int)int_or(m, "format-version", 2);
}

static const json_t *current_schema(const json_t *m)
{
	return find_by_id(json_object_get(m, "schemas"), "schema-id",
			  int_or(m, "current-schema-id", -1), NULL);
}

static bool up_assign_uuid(struct apply *a, const json_t *u, struct floe_error *err)
{
	const char *uuid = get_str(u, "uuid");
	if (uuid == NULL)
		return bad(err, "assign-uuid: missing required field 'uuid'");
	if (!uuid_is_canonical(uuid))
		return bad(err, "assign-uuid: '%.64s' is not a UUID (8-4-4-4-12 hex digits)",
			   uuid);
	/* As in Java's TableMetadata.Builder: the same uuid is a no-op, a
	 * table that has one keeps it. */
	const char *cur = get_str(a->m, "table-uuid");
	if (cur != NULL && strcasecmp(cur, uuid) == 0)
		return true;
	if (cur != NULL)
		return bad(err, "Cannot reassign uuid: the table's uuid is %s, not %s",
			   cur, uuid);
	json_object_set_new(a->m, "table-uuid", json_string(uuid));
	a->changed = true;
	return true;
}

static bool up_upgrade_format(struct apply *a, const json_t *u, struct floe_error *err)
{
	int64_t v;
	if (!get_int(u, "format-version", "upgrade-format-version", NULL, &v, err))
		return false;
	int cur = format_of(a->m);
	if (v > TABLEMETA_MAX_FORMAT_VERSION || v < 1)
		return bad(err, "Cannot upgrade table to unsupported format version: v%" PRId64
			   " (floe supports up to v%d)", v, TABLEMETA_MAX_FORMAT_VERSION);
	if (v < cur)
		return bad(err, "Cannot downgrade v%d table to v%" PRId64, cur, v);
	if (v == cur)
		return true;
	set_int(a->m, "format-version", v);
	if (v >= 3 && json_object_get(a->m, "next-row-id") == NULL)
		set_int(a->m, "next-row-id", 0);
	a->changed = true;
	return true;
}

static bool up_add_schema(struct apply *a, const json_t *u, struct floe_error *err)
{
	const json_t *schema = json_object_get(u, "schema");
	int64_t highest;

	if (schema == NULL)
		return bad(err, "add-schema: missing required field 'schema'");
	if (!schema_check(schema, format_of(a->m), &highest, NULL, err))
		return false;
	int64_t last_col = int_or(a->m, "last-column-id", 0);
	int64_t new_last = highest > last_col ? highest : last_col;
	struct id_list *l = id_list(a, LIST_SCHEMAS, err);
	if (l == NULL)
		return false;

	/* An identical schema (fields and identifier fields) keeps its id. */
	int64_t found = id_list_find(l, LIST_SCHEMAS, schema);
	if (found != NONE_ADDED && new_last == last_col) {
		a->last_schema = idmap_has(a->added[LIST_SCHEMAS], found) ? found
									 : NONE_ADDED;
		return true;
	}
	if (found == NONE_ADDED) {
		int64_t id = idmap_count(l->pos) == 0
				     ? 0 : id_list_highest(a, l, LIST_SCHEMAS) + 1;
		json_t *copy = json_deep_copy(schema);
		if (copy == NULL)
			return floe_err(err, FE_INTERNAL, "out of memory");
		json_object_set_new(copy, "type", json_string("struct"));
		set_int(copy, "schema-id", id);
		if (!id_list_add(a, l, LIST_SCHEMAS, id, copy, err))
			return false;
		found = id;
	}
	set_int(a->m, "last-column-id", new_last);
	a->last_schema = found;
	a->changed = true;
	return true;
}

/* Resolves -1 to the one added last in this commit. */
static bool resolve_last(int64_t *id, int64_t last, const char *what,
			 struct floe_error *err)
{
	if (*id != -1)
		return true;
	if (last == NONE_ADDED)
		return bad(err, "Cannot set last added %s: no %s has been added", what,
			   what);
	*id = last;
	return true;
}

static bool up_set_current_schema(struct apply *a, const json_t *u, struct floe_error *err)
{
	int64_t id;
	if (!get_int(u, "schema-id", "set-current-schema", NULL, &id, err) ||
	    !resolve_last(&id, a->last_schema, "schema", err))
		return false;
	if (id == int_or(a->m, "current-schema-id", -1))
		return true;
	bool ok;
	if (id_list_get(a, LIST_SCHEMAS, id, &ok, err) == NULL)
		return ok ? bad(err, "Cannot set current schema to unknown schema: %" PRId64, id)
			  : false;
	set_int(a->m, "current-schema-id", id);
	a->changed = true;
	return true;
}

static bool up_add_spec(struct apply *a, const json_t *u, struct floe_error *err)
{
	const json_t *spec = json_object_get(u, "spec");
	const json_t *fields = json_object_get(spec, "fields");
	bool ok;
	const json_t *schema = apply_current_schema(a, &ok, err);
	size_t i;
	json_t *f;

	if (!ok)
		return false;

	if (!json_is_object(spec) || !json_is_array(fields))
		return bad(err, "add-spec: 'spec' must be an object with a 'fields' array");
	if (schema == NULL)
		return bad(err, "add-spec: the table has no current schema");
	const struct idmap *index = current_schema_fields(a, schema, err);
	if (index == NULL)
		return false;
	int64_t last_pid = int_or(a->m, "last-partition-id",
				  PARTITION_DATA_ID_START - 1);
	int64_t next_pid = last_pid;
	json_t *nfields = json_array();
	json_array_foreach(fields, i, f) {
		bool present;
		int64_t fid = 0;
		if (!partition_field_check(f, index, err) ||
		    !get_int(f, "field-id", "partition field", &present, &fid, err)) {
			json_decref(nfields);
			return false;
		}
		if (!present)
			fid = ++next_pid;
		if (format_of(a->m) == 1 &&
		    fid != PARTITION_DATA_ID_START + (int64_t)i) {
			json_decref(nfields);
			return bad(err, "add-spec: a v1 spec needs sequential field ids from %d",
				   PARTITION_DATA_ID_START);
		}
		json_t *nf = json_deep_copy(f);
		set_int(nf, "field-id", fid);
		json_array_append_new(nfields, nf);
		if (fid > next_pid)
			next_pid = fid;
	}
	json_t *nspec = json_pack("{s:I, s:o}", "spec-id", (json_int_t)0, "fields", nfields);
	struct id_list *l = id_list(a, LIST_SPECS, err);
	if (nspec == NULL || l == NULL) {
		json_decref(nspec);
		return l == NULL ? false : oom(err);
	}
	int64_t found = id_list_find(l, LIST_SPECS, nspec);
	if (found != NONE_ADDED) {
		json_decref(nspec);
		a->last_spec = idmap_has(a->added[LIST_SPECS], found) ? found : NONE_ADDED;
		return true;
	}
	int64_t id = idmap_count(l->pos) == 0 ? 0 : id_list_highest(a, l, LIST_SPECS) + 1;
	set_int(nspec, "spec-id", id);
	if (!id_list_add(a, l, LIST_SPECS, id, nspec, err))
		return false;
	set_int(a->m, "last-partition-id", next_pid > last_pid ? next_pid : last_pid);
	a->last_spec = id;
	a->changed = true;
	return true;
}

static bool up_set_default_spec(struct apply *a, const json_t *u, struct floe_error *err)
{
	int64_t id;
	if (!get_int(u, "spec-id", "set-default-spec", NULL, &id, err) ||
	    !resolve_last(&id, a->last_spec, "spec", err))
		return false;
	if (id == int_or(a->m, "default-spec-id", -1))
		return true;
	bool ok;
	if (id_list_get(a, LIST_SPECS, id, &ok, err) == NULL)
		return ok ? bad(err, "Cannot set default partition spec to unknown spec: %" PRId64, id)
			  : false;
	set_int(a->m, "default-spec-id", id);
	a->changed = true;
	return true;
}

static bool up_add_sort_order(struct apply *a, const json_t *u, struct floe_error *err)
{
	const json_t *order = json_object_get(u, "sort-order");
	const json_t *fields = json_object_get(order, "fields");
	bool ok;
	const json_t *schema = apply_current_schema(a, &ok, err);
	size_t i;
	json_t *f;

	if (!ok)
		return false;

	if (!json_is_object(order) || !json_is_array(fields))
		return bad(err, "add-sort-order: 'sort-order' must be an object with a 'fields' array");
	const struct idmap *index = NULL;
	if (json_array_size(fields) > 0 && schema != NULL) {
		index = current_schema_fields(a, schema, err);
		if (index == NULL)
			return false;
	}
	json_array_foreach(fields, i, f) {
		if (!sort_field_check(f, index, err))
			return false;
	}
	if (json_array_size(fields) > 0 && schema == NULL)
		return bad(err, "add-sort-order: the table has no current schema");
	struct id_list *l = id_list(a, LIST_ORDERS, err);
	if (l == NULL)
		return false;
	int64_t found = id_list_find(l, LIST_ORDERS, order);
	if (found != NONE_ADDED) {
		a->last_order = idmap_has(a->added[LIST_ORDERS], found) ? found : NONE_ADDED;
		return true;
	}
	int64_t id = 0;
	if (json_array_size(fields) > 0) {
		id = id_list_highest(a, l, LIST_ORDERS) + 1;
		if (id < 1)
			id = 1;
	}
	json_t *norder = json_pack("{s:I, s:O}", "order-id", (json_int_t)id, "fields", fields);
	if (norder == NULL)
		return oom(err);
	if (!id_list_add(a, l, LIST_ORDERS, id, norder, err))
		return false;
	a->last_order = id;
	a->changed = true;
	return true;
}

static bool up_set_default_sort_order(struct apply *a, const json_t *u, struct floe_error *err)
{
	int64_t id;
	if (!get_int(u, "sort-order-id", "set-default-sort-order", NULL, &id, err) ||
	    !resolve_last(&id, a->last_order, "sort order", err))
		return false;
	if (id == int_or(a->m, "default-sort-order-id", -1))
		return true;
	bool ok;
	if (id_list_get(a, LIST_ORDERS, id, &ok, err) == NULL)
		return ok ? bad(err, "Cannot set default sort order to unknown order: %" PRId64, id)
			  : false;
	set_int(a->m, "default-sort-order-id", id);
	a->changed = true;
	return true;
}

static bool up_add_snapshot(struct apply *a, const json_t *u, struct floe_error *err)
{
	const json_t *snap = json_object_get(u, "snapshot");
	json_t *snaps = array_field(a->m, "snapshots");
	int64_t id, ts, seq = 0, parent = 0;
	bool has_seq, has_parent;
	int format = format_of(a->m);

	if (!json_is_object(snap))
		return bad(err, "add-snapshot: missing required field 'snapshot'");
	if (json_array_size(json_object_get(a->m, "schemas")) == 0 ||
	    json_array_size(json_object_get(a->m, "partition-specs")) == 0 ||
	    json_array_size(json_object_get(a->m, "sort-orders")) == 0)
		return bad(err, "add-snapshot: the table needs a schema, a partition spec and a sort order first");
	if (!get_int(snap, "snapshot-id", "snapshot", NULL, &id, err) ||
	    !get_int(snap, "timestamp-ms", "snapshot", NULL, &ts, err) ||
	    !get_int(snap, "sequence-number", "snapshot", &has_seq, &seq, err) ||
	    !get_int(snap, "parent-snapshot-id", "snapshot", &has_parent, &parent, err))
		return false;
	if (!json_is_string(json_object_get(snap, "manifest-list")) &&
	    !(format == 1 && json_is_array(json_object_get(snap, "manifests"))))
		return bad(err, "snapshot %" PRId64 ": missing required field 'manifest-list'", id);
	const json_t *summary = json_object_get(snap, "summary");
	if (summary != NULL && !json_is_null(summary) &&
	    (!json_is_object(summary) || !json_is_string(json_object_get(summary, "operation"))))
		return bad(err, "snapshot %" PRId64 ": 'summary' must be an object with an 'operation'", id);
	struct idmap *index = snapshot_index(a, err);
	if (index == NULL)
		return false;
	if (idmap_has(index, id))
		return bad(err, "Snapshot already exists for id: %" PRId64, id);
	/* Re-adding an id removed earlier in this commit: the old snapshot's
	 * refs go now, not with the new one at the end. */
	if (a->removed != NULL && idmap_del(a->removed, id))
		drop_removed_refs(a, &id);

	int64_t last_seq = int_or(a->m, "last-sequence-number", 0);
	if (format >= 2 && has_parent && seq <= last_seq)
		return floe_err(err, FE_COMMIT_FAILED,
				"Validation failed, please retry: Cannot add snapshot with sequence number %" PRId64
				" older than last sequence number %" PRId64, seq, last_seq);

	json_t *copy = json_deep_copy(snap);
	if (copy == NULL)
		return floe_err(err, FE_INTERNAL, "out of memory");
	/* Absent and null mean the same; the written form omits nulls. */
	const char *key;
	json_t *val;
	void *tmp;
	json_object_foreach_safe(copy, tmp, key, val) {
		if (json_is_null(val))
			json_object_del(copy, key);
	}
	/* Sequence number 0 (v1) is written as absent. */
	if (int_or(copy, "sequence-number", -1) == 0)
		json_object_del(copy, "sequence-number");
	if (format >= 3) {
		int64_t first_row, added_rows;
		bool has_first, has_added;
		if (!get_int(snap, "first-row-id", "snapshot", &has_first, &first_row, err) ||
		    !get_int(snap, "added-rows", "snapshot", &has_added, &added_rows, err)) {
			json_decref(copy);
			return false;
		}
		if (!has_first) {
			json_decref(copy);
			return bad(err, "snapshot %" PRId64 ": a v3 snapshot needs 'first-row-id'", id);
		}
		if (!has_added || added_rows < 0) {
			json_decref(copy);
			return bad(err, "snapshot %" PRId64 ": a v3 snapshot needs a non-negative 'added-rows'", id);
		}
		int64_t next_row = int_or(a->m, "next-row-id", 0);
		if (first_row < next_row) {
			json_decref(copy);
			return floe_err(err, FE_COMMIT_FAILED,
					"Validation failed, please retry: Cannot add a snapshot whose first-row-id %" PRId64
					" is behind next-row-id %" PRId64, first_row, next_row);
		}
		set_int(a->m, "next-row-id", next_row + added_rows);
	}
	if (json_array_append_new(snaps, copy) != 0 ||
	    !idmap_put(index, id, (int64_t)json_array_size(snaps) - 1) ||
	    !idmap_put(a->added_snapshots, id, 1))
		return oom(err);
	if (format >= 2 && has_seq && seq > last_seq)
		set_int(a->m, "last-sequence-number", seq);
	a->changed = true;
	return true;
}

static bool ref_retention(const json_t *u, const char *key, bool *present,
			  int64_t *v, struct floe_error *err)
{
	if (!get_int(u, key, "set-snapshot-ref", present, v, err))
		return false;
	if (*present && *v <= 0)
		return bad(err, "set-snapshot-ref: '%s' must be greater than 0", key);
	return true;
}

static void log_main_change(struct apply *a, const json_t *snap, int64_t id)
{
	int64_t ts = a->now;
	if (idmap_has(a->added_snapshots, id))
		ts = int_or(snap, "timestamp-ms", a->now);
	json_array_append_new(array_field(a->m, "snapshot-log"),
			      json_pack("{s:I, s:I}", "timestamp-ms", (json_int_t)ts,
					"snapshot-id", (json_int_t)id));
	json_array_append_new(a->main_targets, json_integer(id));
}

static bool up_set_snapshot_ref(struct apply *a, const json_t *u, struct floe_error *err)
{
	const char *name = get_str(u, "ref-name");
	const char *type = get_str(u, "type");
	int64_t id, min_keep = 0, max_snap = 0, max_ref = 0;
	bool has_min, has_snap, has_ref;
	char kind[8];

	if (name == NULL || *name == '\0')
		return bad(err, "set-snapshot-ref: missing required field 'ref-name'");
	if (type == NULL)
		return bad(err, "set-snapshot-ref: missing required field 'type'");
	if (strcasecmp(type, "branch") == 0)
		snprintf(kind, sizeof(kind), "branch");
	else if (strcasecmp(type, "tag") == 0)
		snprintf(kind, sizeof(kind), "tag");
	else
		return bad(err, "set-snapshot-ref: type must be branch or tag, not '%s'", type);
	if (!get_int(u, "snapshot-id", "set-snapshot-ref", NULL, &id, err) ||
	    !ref_retention(u, "min-snapshots-to-keep", &has_min, &min_keep, err) ||
	    !ref_retention(u, "max-snapshot-age-ms", &has_snap, &max_snap, err) ||
	    !ref_retention(u, "max-ref-age-ms", &has_ref, &max_ref, err))
		return false;
	if (strcmp(kind, "tag") == 0 && (has_min || has_snap))
		return bad(err, "set-snapshot-ref: tags do not take min-snapshots-to-keep or max-snapshot-age-ms");
	if (strcmp(name, "main") == 0 && strcmp(kind, "branch") != 0)
		return bad(err, "set-snapshot-ref: main must be a branch");
	bool ok;
	const json_t *snap = apply_snapshot(a, id, &ok, err);
	if (!ok)
		return false;
	if (snap == NULL)
		return bad(err, "Cannot set %s to unknown snapshot: %" PRId64, name, id);

	json_t *ref = json_pack("{s:I, s:s}", "snapshot-id", (json_int_t)id, "type", kind);
	if (has_min)
		set_int(ref, "min-snapshots-to-keep", min_keep);
	if (has_snap)
		set_int(ref, "max-snapshot-age-ms", max_snap);
	if (has_ref)
		set_int(ref, "max-ref-age-ms", max_ref);
	json_t *refs = object_field(a->m, "refs");
	if (json_equal(json_object_get(refs, name), ref)) {
		json_decref(ref);
		return true;
	}
	json_object_set_new(refs, name, ref);
	if (strcmp(name, "main") == 0) {
		set_int(a->m, "current-snapshot-id", id);
		log_main_change(a, snap, id);
	}
	a->changed = true;
	return true;
}

static bool up_remove_snapshot_ref(struct apply *a, const json_t *u, struct floe_error *err)
{
	const char *name = get_str(u, "ref-name");
	json_t *refs = object_field(a->m, "refs");

	if (name == NULL)
		return bad(err, "remove-snapshot-ref: missing required field 'ref-name'");
	if (json_object_get(refs, name) == NULL)
		return true;
	json_object_del(refs, name);
	if (strcmp(name, "main") == 0)
		set_int(a->m, "current-snapshot-id", -1);
	a->changed = true;
	return true;
}

static bool up_remove_snapshots(struct apply *a, const json_t *u, struct floe_error *err)
{
	const json_t *ids = json_object_get(u, "snapshot-ids");
	json_t *snaps = array_field(a->m, "snapshots");
	size_t i;
	json_t *v;

	if (!json_is_array(ids))
		return bad(err, "remove-snapshots: 'snapshot-ids' must be an array of integers");
	json_array_foreach(ids, i, v) {
		if (!json_is_integer(v))
			return bad(err, "remove-snapshots: 'snapshot-ids' must be an array of integers");
	}
	struct idmap *index = snapshot_index(a, err);
	if (index == NULL)
		return false;
	/* Each removal is O(1): a hole in the arrays and an entry in
	 * a->removed; refs and holes are settled once, in finish(). */
	json_array_foreach(ids, i, v) {
		int64_t id = json_integer_value(v);
		int64_t pos;
		bool dropped;
		if (!idmap_get(index, id, &pos))
			continue;
		json_array_set_new(snaps, (size_t)pos, json_null());
		idmap_del(index, id);
		a->holes = true;
		for (size_t k = 0; k < 2; k++) {
			if (!drop_stats(a, k, id, &dropped, err))
				return false;
		}
		if (a->removed == NULL)
			a->removed = idmap_new(json_array_size(ids));
		if (a->removed == NULL || !idmap_put(a->removed, id, 1))
			return oom(err);
		a->snapshots_removed = true;
		a->changed = true;
	}
	return true;
}

static bool up_set_location(struct apply *a, const json_t *u, struct floe_error *err)
{
	const char *loc = get_str(u, "location");
	if (loc == NULL || *loc == '\0')
		return bad(err, "set-location: missing required field 'location'");
	char *s = strip_trailing_slash(loc);
	if (s == NULL)
		return floe_err(err, FE_INTERNAL, "out of memory");
	const char *cur = get_str(a->m, "location");
	if (cur == NULL || strcmp(cur, s) != 0) {
		json_object_set_new(a->m, "location", json_string(s));
		a->changed = true;
	}
	free(s);
	return true;
}

static bool up_set_properties(struct apply *a, const json_t *u, struct floe_error *err)
{
	const json_t *upd = json_object_get(u, "updates");
	const char *k;
	json_t *v;

	if (upd == NULL)
		upd = json_object_get(u, "updated");
	if (upd == NULL)
		return bad(err, "set-properties: missing required field 'updates'");
	if (!check_string_map(upd, "set-properties updates", err))
		return false;
	json_t *props = object_field(a->m, "properties");
	json_object_foreach((json_t *)upd, k, v) {
		if (!json_equal(json_object_get(props, k), v)) {
			json_object_set(props, k, v);
			a->changed = true;
		}
	}
	return true;
}

static bool up_remove_properties(struct apply *a, const json_t *u, struct floe_error *err)
{
	const json_t *rem = json_object_get(u, "removals");
	size_t i;
	json_t *v;

	if (rem == NULL)
		rem = json_object_get(u, "removed");
	if (!json_is_array(rem))
		return bad(err, "remove-properties: 'removals' must be an array of strings");
	json_array_foreach(rem, i, v) {
		if (!json_is_string(v))
			return bad(err, "remove-properties: 'removals' must be an array of strings");
	}
	json_t *props = object_field(a->m, "properties");
	json_array_foreach(rem, i, v) {
		if (json_object_del(props, json_string_value(v)) == 0)
			a->changed = true;
	}
	return true;
}

/* set-statistics and set-partition-statistics: replace by snapshot id
 * (k: the index of the list in stats_lists). */
static bool set_stats(struct apply *a, const json_t *u, const char *field,
		      size_t k, struct floe_error *err)
{
	const json_t *st = json_object_get(u, field);
	int64_t id, pos;

	if (!json_is_object(st))
		return bad(err, "missing required field '%s'", field);
	if (!get_int(st, "snapshot-id", field, NULL, &id, err))
		return false;
	if (!json_is_string(json_object_get(st, "statistics-path")))
		return bad(err, "%s: missing required field 'statistics-path'", field);
	json_t *arr = array_field(a->m, stats_lists[k]);
	struct idmap *index = stats_index(a, k, err);
	if (index == NULL)
		return false;
	if (idmap_get(index, id, &pos)) {
		if (json_equal(json_array_get(arr, (size_t)pos), st))
			return true;
		json_array_set(arr, (size_t)pos, (json_t *)st);
	} else if (json_array_append(arr, (json_t *)st) != 0 ||
		   !idmap_put(index, id, (int64_t)json_array_size(arr) - 1)) {
		return oom(err);
	}
	a->changed = true;
	return true;
}

static bool remove_stats(struct apply *a, const json_t *u, size_t k,
			 const char *what, struct floe_error *err)
{
	int64_t id = 0;
	bool dropped;

	if (!get_int(u, "snapshot-id", what, NULL, &id, err) ||
	    !drop_stats(a, k, id, &dropped, err))
		return false;
	if (dropped)
		a->changed = true;
	return true;
}

/* remove-partition-specs and remove-schemas. */
static bool remove_ids(struct apply *a, const json_t *u, const char *field,
		       int kind, const char *current_key, const char *what,
		       struct floe_error *err)
{
	const json_t *ids = json_object_get(u, field);
	size_t i;
	json_t *v;

	if (!json_is_array(ids))
		return bad(err, "'%s' must be an array of integers", field);
	json_array_foreach(ids, i, v) {
		if (!json_is_integer(v))
			return bad(err, "'%s' must be an array of integers", field);
		if (json_integer_value(v) == int_or(a->m, current_key, -1))
			return bad(err, "Cannot remove the %s %" PRId64, what,
				   (int64_t)json_integer_value(v));
	}
	struct id_list *l = id_list(a, kind, err);
	if (l == NULL)
		return false;
	if (kind == LIST_SCHEMAS) {
		idmap_free(a->cur_fields);
		a->cur_fields = NULL;
	}
	json_t *arr = json_object_get(a->m, id_lists[kind].list);
	/* Each removal leaves a hole (positions stay valid); finish()
	 * compacts. */
	json_array_foreach(ids, i, v) {
		int64_t id = json_integer_value(v);
		int64_t pos;
		if (!idmap_get(l->pos, id, &pos))
			continue;
		json_t *e = json_array_get(arr, (size_t)pos);
		char *key = content_key(kind, e);
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
	}
	return true;
}

/* The encryption keys by key-id -> position, built on first use (a key
 * without a key-id is found as ""; the first entry wins). */
static json_t *key_index(struct apply *a, struct floe_error *err)
{
	json_t *keys = array_field(a->m, "encryption-keys");
	size_t i;
	json_t *k;

	if (a->key_index != NULL)
		return a->key_index;
	a->key_index = json_object();
	if (a->key_index == NULL)
		return oom(err), NULL;
	json_array_foreach(keys, i, k) {
		const char *kid = get_str(k, "key-id");
		if (json_is_null(k) || json_object_get(a->key_index, kid ? kid : "") != NULL)
			continue;
		if (json_object_set_new(a->key_index, kid ? kid : "", json_integer((json_int_t)i)) != 0)
			return oom(err), NULL;
	}
	return a->key_index;
}

static bool up_add_encryption_key(struct apply *a, const json_t *u, struct floe_error *err)
{
	const json_t *key = json_object_get(u, "encryption-key");
	const char *kid = get_str(key, "key-id");

	if (!json_is_object(key) || kid == NULL)
		return bad(err, "add-encryption-key: 'encryption-key' needs a string 'key-id'");
	if (!json_is_string(json_object_get(key, "encrypted-key-metadata")))
		return bad(err, "add-encryption-key: 'encryption-key' needs 'encrypted-key-metadata'");
	json_t *keys = array_field(a->m, "encryption-keys");
	json_t *index = key_index(a, err);
	if (index == NULL)
		return false;
	json_t *pos = json_object_get(index, kid);
	if (pos != NULL) {
		size_t i = (size_t)json_integer_value(pos);
		if (json_equal(json_array_get(keys, i), key))
			return true;
		json_array_set(keys, i, (json_t *)key);
	} else if (json_array_append(keys, (json_t *)key) != 0 ||
		   json_object_set_new(index, kid,
				       json_integer((json_int_t)json_array_size(keys) - 1)) != 0) {
		return oom(err);
	}
	a->changed = true;
	return true;
}

static bool up_remove_encryption_key(struct apply *a, const json_t *u, struct floe_error *err)
{
	const char *kid = get_str(u, "key-id");

	if (kid == NULL)
		return bad(err, "remove-encryption-key: missing required field 'key-id'");
	json_t *keys = array_field(a->m, "encryption-keys");
	json_t *index = key_index(a, err);
	if (index == NULL)
		return false;
	json_t *pos = json_object_get(index, kid);
	if (pos == NULL)
		return true;
	size_t i = (size_t)json_integer_value(pos);
	if (get_str(json_array_get(keys, i), "key-id") == NULL)
		return true;
	/* A hole keeps the other positions; finish() compacts. */
	json_array_set_new(keys, i, json_null());
	json_object_del(index, kid);
	a->holes = true;
	a->changed = true;
	return true;
}

static const char *const known_actions[] = {
	"assign-uuid", "upgrade-format-version", "add-schema", "set-current-schema",
	"add-spec", "set-default-spec", "add-sort-order", "set-default-sort-order",
	"add-snapshot", "set-snapshot-ref", "remove-snapshot-ref", "remove-snapshots",
	"set-location", "set-properties", "remove-properties", "set-statistics",
	"remove-statistics", "set-partition-statistics", "remove-partition-statistics",
	"remove-partition-specs", "remove-schemas", "add-encryption-key",
	"remove-encryption-key", NULL,
};

bool tablemeta_check_actions(const json_t *updates, struct floe_error *err)
{
	size_t i;
	json_t *u;

	if (!json_is_array(updates))
		return bad(err, "'updates' must be an array");
	json_array_foreach(updates, i, u) {
		const char *action = get_str(u, "action");
		const char *const *k;
		if (!json_is_object(u) || action == NULL)
			return bad(err, "update %zu needs a string 'action'", i);
		for (k = known_actions; *k != NULL; k++) {
			if (strcmp(*k, action) == 0)
				break;
		}
		if (*k == NULL)
			return bad(err, "unknown update action '%s'", action);
	}
	return true;
}

static bool apply_one(struct apply *a, const json_t *u, struct floe_error *err)
{
	const char *action = get_str(u, "action");

	if (!json_is_object(u) || action == NULL)
		return bad(err, "an update needs a string 'action'");
	if (strcmp(action, "assign-uuid") == 0)
		return up_assign_uuid(a, u, err);
	if (strcmp(action, "upgrade-format-version") == 0)
		return up_upgrade_format(a, u, err);
	if (strcmp(action, "add-schema") == 0)
		return up_add_schema(a, u, err);
	if (strcmp(action, "set-current-schema") == 0)
		return up_set_current_schema(a, u, err);
	if (strcmp(action, "add-spec") == 0)
		return up_add_spec(a, u, err);
	if (strcmp(action, "set-default-spec") == 0)
		return up_set_default_spec(a, u, err);
	if (strcmp(action, "add-sort-order") == 0)
		return up_add_sort_order(a, u, err);
	if (strcmp(action, "set-default-sort-order") == 0)
		return up_set_default_sort_order(a, u, err);
	if (strcmp(action, "add-snapshot") == 0)
		return up_add_snapshot(a, u, err);
	if (strcmp(action, "set-snapshot-ref") == 0)
		return up_set_snapshot_ref(a, u, err);
	if (strcmp(action, "remove-snapshot-ref") == 0)
		return up_remove_snapshot_ref(a, u, err);
	if (strcmp(action, "remove-snapshots") == 0)
		return up_remove_snapshots(a, u, err);
	if (strcmp(action, "set-location") == 0)
		return up_set_location(a, u, err);
	if (strcmp(action, "set-properties") == 0)
		return up_set_properties(a, u, err);
	if (strcmp(action, "remove-properties") == 0)
		return up_remove_properties(a, u, err);
	if (strcmp(action, "set-statistics") == 0)
		return set_stats(a, u, "statistics", 0, err);
	if (strcmp(action, "remove-statistics") == 0)
		return remove_stats(a, u, 0, "remove-statistics", err);
	if (strcmp(action, "set-partition-statistics") == 0)
		return set_stats(a, u, "partition-statistics", 1, err);
	if (strcmp(action, "remove-partition-statistics") == 0)
		return remove_stats(a, u, 1, "remove-partition-statistics", err);
	if (strcmp(action, "remove-partition-specs") == 0)
		return remove_ids(a, u, "spec-ids", LIST_SPECS, "default-spec-id",
				  "default partition spec", err);
	if (strcmp(action, "remove-schemas") == 0)
		return remove_ids(a, u, "schema-ids", LIST_SCHEMAS, "current-schema-id",
				  "current schema", err);
	if (strcmp(action, "add-encryption-key") == 0)
		return up_add_encryption_key(a, u, err);
	if (strcmp(action, "remove-encryption-key") == 0)
		return up_remove_encryption_key(a, u, err);
	return bad(err, "unknown update action '%s'", action);
}

/* --- post-processing --- */

/* v1 carries the current schema and default spec at the top level too;
 * v3 writes a missing current snapshot as null, older versions as -1. */
static void normalize_format_fields(json_t *m)
{
	int format = format_of(m);
	json_t *cur = json_object_get(m, "current-snapshot-id");
	bool none = cur == NULL || json_is_null(cur) ||
		    (json_is_integer(cur) && json_integer_value(cur) == -1);

	if (none)
		json_object_set_new(m, "current-snapshot-id",
				    format >= 3 ? json_null() : json_integer(-1));
	if (format == 1) {
		const json_t *schema = current_schema(m);
		const json_t *spec = find_by_id(json_object_get(m, "partition-specs"),
						"spec-id", int_or(m, "default-spec-id", -1),
						NULL);
		if (schema != NULL)
			json_object_set(m, "schema", (json_t *)schema);
		if (spec != NULL)
			json_object_set(m, "partition-spec", json_object_get(spec, "fields"));
		json_object_del(m, "last-sequence-number");
	} else {
		json_object_del(m, "schema");
		json_object_del(m, "partition-spec");
		if (json_object_get(m, "last-sequence-number") == NULL)
			set_int(m, "last-sequence-number", 0);
	}
	if (format >= 3 && json_object_get(m, "next-row-id") == NULL)
		set_int(m, "next-row-id", 0);
	if (format < 3)
		json_object_del(m, "next-row-id");
	json_t *keys = json_object_get(m, "encryption-keys");
	if (keys != NULL && json_array_size(keys) == 0)
		json_object_del(m, "encryption-keys");
}

static int64_t previous_versions_max(const json_t *m)
{
	const char *v = get_str(json_object_get(m, "properties"),
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
	json_t *log = array_field(a->m, "snapshot-log");
	int64_t current = int_or(a->m, "current-snapshot-id", -1);
	struct idmap *intermediate = idmap_new(0);
	struct idmap *snaps = NULL;
	json_t *fresh = NULL;
	size_t i;
	json_t *v;
	bool ok = false;

	if (intermediate == NULL)
		return oom(err);
	/* Snapshots added here that main passed through on the way. */
	json_array_foreach(a->main_targets, i, v) {
		int64_t id = json_integer_value(v);
		if (id != current && idmap_has(a->added_snapshots, id) &&
		    !idmap_put(intermediate, id, 1)) {
			oom(err);
			goto done;
		}
	}
	if (idmap_count(intermediate) == 0 && !a->snapshots_removed) {
		ok = true;
		goto done;
	}
	snaps = snapshot_index(a, err);
	fresh = json_array();
	if (snaps == NULL || fresh == NULL) {
		if (snaps != NULL)
			oom(err);
		goto done;
	}
	json_array_foreach(log, i, v) {
		int64_t id = int_or(v, "snapshot-id", -1);
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
	    int_or(json_array_get(fresh, n - 1), "snapshot-id", -1) != current) {
		bad(err, "Cannot set invalid snapshot log: latest entry is not the current snapshot");
		goto done;
	}
	json_object_set(a->m, "snapshot-log", fresh);
	ok = true;
done:
	json_decref(fresh);
	idmap_free(intermediate);
	return ok;
}

static bool spec_fits_schema(const json_t *m, struct floe_error *err)
{
	const json_t *schema = current_schema(m);
	const json_t *spec = find_by_id(json_object_get(m, "partition-specs"), "spec-id",
					int_or(m, "default-spec-id", -1), NULL);
	const json_t *order = find_by_id(json_object_get(m, "sort-orders"), "order-id",
					 int_or(m, "default-sort-order-id", -1), NULL);
	size_t i;
	json_t *f;
	bool ok = true;

	if (schema == NULL)
		return true;
	struct idmap *index = schema_index(schema, err);
	if (index == NULL)
		return false;
	json_array_foreach(json_object_get(spec, "fields"), i, f) {
		if (!idmap_has(index, int_or(f, "source-id", -1))) {
			ok = bad(err, "the default partition spec uses field %" PRId64
				 ", which the current schema no longer has; evolve the spec first",
				 int_or(f, "source-id", -1));
			goto done;
		}
	}
	json_array_foreach(json_object_get(order, "fields"), i, f) {
		if (!idmap_has(index, int_or(f, "source-id", -1))) {
			ok = bad(err, "the default sort order uses field %" PRId64
				 ", which the current schema no longer has; change the sort order first",
				 int_or(f, "source-id", -1));
			goto done;
		}
	}
done:
	idmap_free(index);
	return ok;
}

static bool finish(struct apply *a, const json_t *base, const char *base_location,
		   struct floe_error *err)
{
	settle_removals(a);
	if (!rewrite_snapshot_log(a, err) || !spec_fits_schema(a->m, err))
		return false;
	/* A timestamp far ahead of this server's clock breaks time travel. */
	const char *logs[] = { "snapshot-log", "metadata-log" };
	for (size_t k = 0; k < 2; k++) {
		json_t *log = json_object_get(a->m, logs[k]);
		size_t n = json_array_size(log);
		if (n > 0) {
			int64_t last = int_or(json_array_get(log, n - 1), "timestamp-ms", 0);
			if (last - CLOCK_SKEW_MS > a->now)
				return bad(err, "Invalid update timestamp %" PRId64
					   ": before the last %s entry %" PRId64,
					   a->now, logs[k], last);
		}
	}
	if (base_location != NULL && base != NULL) {
		json_t *mlog = array_field(a->m, "metadata-log");
		int64_t max = previous_versions_max(a->m);
		size_t n = json_array_size(mlog);
		/* Keep the newest max - 1 entries, copied once. */
		if ((int64_t)n > max - 1) {
			json_t *kept = json_array();
			if (kept == NULL)
				return oom(err);
			for (size_t i = n - (size_t)(max - 1); i < n; i++)
				json_array_append(kept, json_array_get(mlog, i));
			json_object_set_new(a->m, "metadata-log", kept);
			mlog = kept;
		}
		json_array_append_new(mlog, json_pack("{s:I, s:s}", "timestamp-ms",
						      (json_int_t)int_or(base, "last-updated-ms", 0),
						      "metadata-file", base_location));
	}
	set_int(a->m, "last-updated-ms", a->now);
	/* Keep main and current-snapshot-id in agreement. */
	json_t *main_ref = json_object_get(json_object_get(a->m, "refs"), "main");
	int64_t current = int_or(a->m, "current-snapshot-id", -1);
	if (main_ref == NULL && current != -1)
		json_object_set_new(object_field(a->m, "refs"), "main",
				    json_pack("{s:I, s:s}", "snapshot-id",
					      (json_int_t)current, "type", "branch"));
	normalize_format_fields(a->m);
	return true;
}

static bool apply_init(struct apply *a, json_t *m, int64_t now,
		       struct floe_error *err)
{
	memset(a, 0, sizeof(*a));
	a->m = m;
	a->now = now;
	a->last_schema = a->last_spec = a->last_order = NONE_ADDED;
	for (size_t k = 0; k < 3; k++)
		a->added[k] = idmap_new(0);
	a->added_snapshots = idmap_new(0);
	a->main_targets = json_array();
	if (a->added[0] == NULL || a->added[1] == NULL ||
	    a->added[2] == NULL || a->added_snapshots == NULL ||
	    a->main_targets == NULL)
		return oom(err);
	return true;
}

static void apply_free(struct apply *a)
{
	for (size_t k = 0; k < 3; k++) {
		idmap_free(a->added[k]);
		id_list_forget(&a->lists[k]);
	}
	idmap_free(a->cur_fields);
	idmap_free(a->added_snapshots);
	json_decref(a->main_targets);
	idmap_free(a->snapshot_index);
	idmap_free(a->stats_index[0]);
	idmap_free(a->stats_index[1]);
	idmap_free(a->removed);
	json_decref(a->key_index);
}

static bool apply_all(struct apply *a, const json_t *updates, struct floe_error *err)
{
	size_t i;
	json_t *u;

	if (updates == NULL || json_is_null(updates))
		return true;
	if (!json_is_array(updates))
		return bad(err, "'updates' must be an array");
	json_array_foreach(updates, i, u) {
		if (!apply_one(a, u, err))
			return false;
	}
	return true;
}

json_t *tablemeta_apply(const json_t *base, const char *base_location,
			const json_t *updates, int64_t now_ms, bool *changed,
			struct floe_error *err)
{
	struct apply a;
	json_t *m = json_deep_copy(base);

	*changed = false;
	if (m == NULL) {
		floe_err(err, FE_INTERNAL, "out of memory");
		return NULL;
	}
	/* Older metadata may lack refs: main follows the current snapshot. */
	if (json_object_get(m, "refs") == NULL) {
		int64_t cur = int_or(m, "current-snapshot-id", -1);
		json_t *refs = json_object();
		if (cur != -1)
			json_object_set_new(refs, "main",
					    json_pack("{s:I, s:s}", "snapshot-id",
						      (json_int_t)cur, "type", "branch"));
		json_object_set_new(m, "refs", refs);
	}
	bool ok = apply_init(&a, m, now_ms, err) && apply_all(&a, updates, err) &&
		  (!a.changed || finish(&a, base, base_location, err));
	*changed = a.changed;
	apply_free(&a);
	if (!ok) {
		json_decref(m);
		*changed = false;
		return NULL;
	}
	if (!*changed) {
		json_decref(m);
		return json_deep_copy(base);
	}
	return m;
}

json_t *tablemeta_apply_create(const json_t *updates, const char *uuid,
			       int64_t now_ms, struct floe_error *err)
{
	struct apply a;
	int format = 2;
	size_t i;
	json_t *u;

	if (!json_is_array(updates)) {
		bad(err, "'updates' must be an array");
		return NULL;
	}
	json_array_foreach(updates, i, u) {
		const char *action = get_str(u, "action");
		if (action != NULL && strcmp(action, "upgrade-format-version") == 0) {
			int64_t v;
			if (!get_int(u, "format-version", "upgrade-format-version", NULL, &v,
				     err))
				return NULL;
			if (v < 1 || v > TABLEMETA_MAX_FORMAT_VERSION) {
				bad(err, "unsupported format version %" PRId64 ": floe supports 1 to %d",
				    v, TABLEMETA_MAX_FORMAT_VERSION);
				return NULL;
			}
			format = (int)v;
			break;
		}
	}
	json_t *m = empty_metadata(format, now_ms);
	if (m == NULL) {
		floe_err(err, FE_INTERNAL, "out of memory");
		return NULL;
	}
	if (format >= 2)
		set_int(m, "last-sequence-number", 0);
	bool ok = apply_init(&a, m, now_ms, err) && apply_all(&a, updates, err);
	if (ok && get_str(m, "table-uuid") == NULL && uuid != NULL)
		json_object_set_new(m, "table-uuid", json_string(uuid));
	if (ok && get_str(m, "table-uuid") == NULL)
		ok = bad(err, "a staged create must assign the table uuid (assign-uuid)");
	if (ok && json_array_size(json_object_get(m, "schemas")) == 0)
		ok = bad(err, "a staged create must add a schema");
	if (ok && int_or(m, "current-schema-id", -1) < 0)
		ok = bad(err, "a staged create must set the current schema");
	if (ok && get_str(m, "location") == NULL)
		ok = bad(err, "a staged create must set the table location");
	if (ok && json_array_size(json_object_get(m, "partition-specs")) == 0) {
		json_array_append_new(json_object_get(m, "partition-specs"),
				      json_pack("{s:i, s:[]}", "spec-id", 0, "fields"));
		set_int(m, "default-spec-id", 0);
	}
	if (ok && json_array_size(json_object_get(m, "sort-orders")) == 0) {
		json_array_append_new(json_object_get(m, "sort-orders"),
				      json_pack("{s:i, s:[]}", "order-id", 0, "fields"));
		set_int(m, "default-sort-order-id", 0);
	}
	if (ok && (int_or(m, "default-spec-id", -1) < 0 ||
		   int_or(m, "default-sort-order-id", -1) < 0))
		ok = bad(err, "a staged create must set the default partition spec and sort order");
	if (ok) {
		a.changed = true;
		ok = finish(&a, NULL, NULL, err);
	}
	apply_free(&a);
	if (!ok) {
		json_decref(m);
		return NULL;
	}
	return m;
}

const json_t *tablemeta_snapshot(const json_t *m, long long id)
{
	return find_by_id(json_object_get(m, "snapshots"), "snapshot-id", id, NULL);
}

long long tablemeta_current_snapshot(const json_t *m)
{
	return (long long)int_or(m, "current-snapshot-id", -1);
}

json_t *tablemeta_only_ref_snapshots(const json_t *metadata)
{
	json_t *m = json_copy((json_t *)metadata);
	json_t *kept = json_array();
	json_t *refs = json_object_get(metadata, "refs");
	size_t i;
	json_t *s;

	if (m == NULL || kept == NULL) {
		json_decref(m);
		json_decref(kept);
		return NULL;
	}
	/* Without refs (older metadata), main is the current snapshot. */
	struct idmap *targets = idmap_new(json_object_size(refs) + 1);
	const char *name;
	json_t *ref;
	if (targets == NULL)
		goto oom;
	if (refs == NULL && int_or(metadata, "current-snapshot-id", -1) != -1 &&
	    !idmap_put(targets, int_or(metadata, "current-snapshot-id", -1), 1))
		goto oom;
	json_object_foreach(refs, name, ref) {
		json_t *id = json_object_get(ref, "snapshot-id");
		if (json_is_integer(id) && !idmap_put(targets, json_integer_value(id), 1))
			goto oom;
	}
	json_array_foreach(json_object_get(metadata, "snapshots"), i, s) {
		json_t *id = json_object_get(s, "snapshot-id");
		if (json_is_integer(id) && idmap_has(targets, json_integer_value(id)) &&
		    json_array_append(kept, s) != 0)
			goto oom;
	}
	idmap_free(targets);
	json_object_set_new(m, "snapshots", kept);
	return m;
oom:
	idmap_free(targets);
	json_decref(m);
	json_decref(kept);
	return NULL;
}
