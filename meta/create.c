/*
 * create.c - the metadata of a new table from a createTable request, as
 * Iceberg's TableMetadata.newTableMetadata builds it: fresh field ids in
 * AssignFreshIds order, spec 0 with field ids from 1000, sort order 0 or
 * 1, reserved properties dropped. Not staged creates (tablemeta.c applies
 * their updates to create_empty_metadata).
 */
#include "meta_internal.h"

#include "json.h"
#include "tablemeta.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

struct fresh_ids {
	struct idmap *map; /* old id -> new id */
	int64_t next;      /* last id assigned */
};

/* Gives the id field key of obj the fresh id, remembering the old one. */
static bool renumber(struct fresh_ids *m, json_t *obj, const char *key, int64_t fresh)
{
	return idmap_put(m->map, fjson_int_or(obj, key, -1), fresh) &&
	       fjson_set_int(obj, key, fresh);
}

/*
 * Renumbers a type in place as Iceberg's AssignFreshIds does: every
 * direct field of a struct first, then each field's type in order; a
 * list's element id, a map's key and value ids, before recursing.
 */
static bool reassign_type(json_t *type, struct fresh_ids *m)
{
	if (!json_is_object(type))
		return true;
	const char *kind = fjson_get_str(type, "type");
	if (strcmp(kind, "struct") == 0) {
		json_t *fields = json_object_get(type, "fields");
		size_t i;
		json_t *f;
		json_array_foreach(fields, i, f) {
			if (!renumber(m, f, "id", ++m->next))
				return false;
		}
		json_array_foreach(fields, i, f) {
			if (!reassign_type(json_object_get(f, "type"), m))
				return false;
		}
		return true;
	}
	if (strcmp(kind, "list") == 0)
		return renumber(m, type, "element-id", ++m->next) &&
		       reassign_type(json_object_get(type, "element"), m);
	if (strcmp(kind, "map") == 0) {
		int64_t k = ++m->next;
		int64_t v = ++m->next;
		return renumber(m, type, "key-id", k) && renumber(m, type, "value-id", v) &&
		       reassign_type(json_object_get(type, "key"), m) &&
		       reassign_type(json_object_get(type, "value"), m);
	}
	return true;
}

static const char *const reserved_properties[] = {
	"format-version",           "uuid",
	"snapshot-count",           "current-snapshot-id",
	"current-snapshot-summary", "current-snapshot-timestamp-ms",
	"current-schema",           "default-partition-spec",
	"default-sort-order",
};

static bool is_reserved_property(const char *k)
{
	for (size_t i = 0; i < sizeof(reserved_properties) / sizeof(char *); i++) {
		if (strcmp(k, reserved_properties[i]) == 0)
			return true;
	}
	return false;
}

char *create_strip_trailing_slash(const char *s)
{
	char *c = strdup(s);
	size_t n = c ? strlen(c) : 0;

	while (n > 1 && c[n - 1] == '/')
		c[--n] = '\0';
	return c;
}

/* Parses properties["format-version"]; *format stays as is when absent. */
static bool format_from_properties(const json_t *props, int *format, struct floe_error *err)
{
	const char *fv = fjson_get_str(props, "format-version");
	char *end = NULL;
	long v;

	if (json_object_get(props, "format-version") == NULL)
		return true;
	if (fv == NULL)
		return meta_bad(err, "property format-version must be a string");
	v = strtol(fv, &end, 10);
	if (*fv == '\0' || *end != '\0' || v < 1 || v > TABLEMETA_MAX_FORMAT_VERSION)
		return meta_bad(err, "unsupported format-version '%s': floe supports 1 to %d", fv,
				TABLEMETA_MAX_FORMAT_VERSION);
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
		(void)strtoll(s, &end, 10);
		if (*s == '\0' || *end != '\0')
			return meta_bad(err, "property %s must be an integer, not '%s'", k, s);
	}
	return true;
}

json_t *create_empty_metadata(int format, int64_t now_ms)
{
	return json_pack("{s:i, s:I, s:i, s:[], s:i, s:[], s:i, s:i, s:[], s:i,"
			 " s:{}, s:I, s:{}, s:[], s:[], s:[], s:[], s:[]}",
			 "format-version", format, "last-updated-ms", (json_int_t)now_ms,
			 "last-column-id", 0, "schemas", "current-schema-id", -1, "partition-specs",
			 "default-spec-id", -1, "last-partition-id",
			 META_PARTITION_DATA_ID_START - 1, "sort-orders", "default-sort-order-id",
			 -1, "properties", "current-snapshot-id", (json_int_t)-1, "refs",
			 "snapshots", "statistics", "partition-statistics", "snapshot-log",
			 "metadata-log");
}

/* What createTable works with while it builds the new metadata. */
struct create {
	const json_t *request;
	struct fresh_ids ids;
	struct idmap *rindex; /* the request schema's ids -> types */
	json_t *schema;
	json_t *spec;
	json_t *order;
	json_t *props;
};

/* The schema: fresh ids, schema-id 0, identifier fields remapped. */
static bool create_schema(struct create *c, const json_t *rschema, struct floe_error *err)
{
	json_t *idf = json_object_get(rschema, "identifier-field-ids");
	json_t *fresh_idf = NULL;
	size_t i;
	json_t *v;

	c->schema = json_deep_copy(rschema);
	if (c->schema == NULL || !reassign_type(c->schema, &c->ids))
		return meta_oom(err);
	fjson_set_int(c->schema, "schema-id", 0);
	json_object_set_new(c->schema, "type", json_string("struct"));
	if (idf == NULL || json_is_null(idf))
		return true;
	if (!json_is_array(idf))
		return meta_bad(err, "schema: identifier-field-ids must be an array");
	fresh_idf = json_array();
	json_array_foreach(idf, i, v) {
		int64_t fresh;
		if (!json_is_integer(v) || !idmap_get(c->ids.map, json_integer_value(v), &fresh)) {
			json_decref(fresh_idf);
			return meta_bad(err, "schema: identifier field %s is not in the schema",
					json_is_integer(v) ? "id" : "(not an integer)");
		}
		json_array_append_new(fresh_idf, json_integer(fresh));
	}
	json_object_set_new(c->schema, "identifier-field-ids", fresh_idf);
	return true;
}

/* The fresh id of the source field of a spec or order field f. */
static bool fresh_source(const struct create *c, const json_t *f, const char *what, int64_t *src,
			 struct floe_error *err)
{
	if (!idmap_get(c->ids.map, fjson_int_or(f, "source-id", -1), src))
		return meta_bad(err, "%s: source id %" PRId64 " is not in the schema", what,
				fjson_int_or(f, "source-id", -1));
	return true;
}

/* The partition spec: spec-id 0, source ids remapped, field ids 1000+. */
static bool create_spec(struct create *c, struct floe_error *err)
{
	const json_t *rspec = json_object_get(c->request, "partition-spec");
	json_t *pfields = json_array();
	json_t *rf;
	size_t i;
	json_t *f;

	c->spec = json_pack("{s:i, s:o}", "spec-id", 0, "fields", pfields);
	if (c->spec == NULL)
		return meta_oom(err);
	if (rspec == NULL || json_is_null(rspec))
		return true;
	rf = json_object_get(rspec, "fields");
	if (!json_is_array(rf))
		return meta_bad(err, "partition-spec needs a 'fields' array");
	json_array_foreach(rf, i, f) {
		int64_t src;
		if (!schema_partition_field_check(f, c->rindex, err) ||
		    !fresh_source(c, f, "partition-spec", &src, err))
			return false;
		json_t *nf = json_pack("{s:s, s:O, s:I, s:I}", "name", fjson_get_str(f, "name"),
				       "transform", json_object_get(f, "transform"), "source-id",
				       (json_int_t)src, "field-id",
				       (json_int_t)(META_PARTITION_DATA_ID_START + (int64_t)i));
		if (nf == NULL || json_array_append_new(pfields, nf) != 0)
			return meta_oom(err);
	}
	return true;
}

/* The sort order: unsorted is order 0; a sorted one is order 1. */
static bool create_order(struct create *c, struct floe_error *err)
{
	const json_t *rorder = json_object_get(c->request, "write-order");
	json_t *rof = json_is_object(rorder) ? json_object_get(rorder, "fields") : NULL;
	json_t *ofields;
	size_t i;
	json_t *f;

	if (rorder != NULL && !json_is_null(rorder) &&
	    (!json_is_object(rorder) || !json_is_array(rof)))
		return meta_bad(err, "write-order needs a 'fields' array");
	ofields = json_array();
	c->order = json_pack("{s:i, s:o}", "order-id", json_array_size(rof) > 0 ? 1 : 0, "fields",
			     ofields);
	if (c->order == NULL)
		return meta_oom(err);
	json_array_foreach(rof, i, f) {
		int64_t src;
		if (!schema_sort_field_check(f, c->rindex, err) ||
		    !fresh_source(c, f, "write-order", &src, err))
			return false;
		json_t *nf = json_deep_copy(f);
		if (nf == NULL || !fjson_set_int(nf, "source-id", src) ||
		    json_array_append_new(ofields, nf) != 0)
			return meta_oom(err);
	}
	return true;
}

/* Properties: reserved keys dropped, zstd unless chosen. */
static bool create_properties(struct create *c, const json_t *rprops, struct floe_error *err)
{
	const char *k;
	json_t *v;

	c->props = json_object();
	if (c->props == NULL)
		return meta_oom(err);
	json_object_foreach((json_t *)rprops, k, v) {
		if (!is_reserved_property(k))
			json_object_set(c->props, k, v);
	}
	if (json_object_get(c->props, "write.parquet.compression-codec") == NULL)
		json_object_set_new(c->props, "write.parquet.compression-codec",
				    json_string("zstd"));
	return true;
}

char *create_location(const json_t *request, const char *location, struct floe_error *err)
{
	const json_t *rloc = json_object_get(request, "location");
	char *loc;

	if (rloc != NULL && !json_is_null(rloc)) {
		if (!json_is_string(rloc) || json_string_length(rloc) == 0) {
			meta_bad(err, "location must be a non-empty string");
			return NULL;
		}
		loc = create_strip_trailing_slash(json_string_value(rloc));
	} else {
		loc = create_strip_trailing_slash(location);
	}
	if (loc == NULL)
		meta_oom(err);
	return loc;
}

/* Puts the parts built into new metadata m. */
static void create_fill(json_t *m, const struct create *c, const char *uuid, const char *loc,
			int format)
{
	json_object_set_new(m, "table-uuid", json_string(uuid));
	json_object_set_new(m, "location", json_string(loc));
	fjson_set_int(m, "last-sequence-number", 0);
	fjson_set_int(m, "last-column-id", c->ids.next);
	fjson_set_int(m, "current-schema-id", 0);
	json_array_append(json_object_get(m, "schemas"), c->schema);
	fjson_set_int(m, "default-spec-id", 0);
	json_array_append(json_object_get(m, "partition-specs"), c->spec);
	fjson_set_int(m, "last-partition-id",
		      META_PARTITION_DATA_ID_START - 1 +
			      (int64_t)json_array_size(json_object_get(c->spec, "fields")));
	fjson_set_int(m, "default-sort-order-id", fjson_int_or(c->order, "order-id", 0));
	json_array_append(json_object_get(m, "sort-orders"), c->order);
	json_object_set(m, "properties", c->props);
	if (format >= 3)
		fjson_set_int(m, "next-row-id", 0);
	finish_format_fields(m, c->schema, c->spec);
}

json_t *tablemeta_create(const json_t *request, const char *location, const char *uuid,
			 int64_t now_ms, struct floe_error *err)
{
	struct create c = { .request = request, .ids = { idmap_new(64), 0 } };
	const json_t *rprops = json_object_get(request, "properties");
	const json_t *rschema = json_object_get(request, "schema");
	json_t *m = NULL;
	int format = 2;
	int64_t highest;
	char *loc = NULL;

	if (c.ids.map == NULL) {
		meta_oom(err);
		goto fail;
	}
	if (!json_is_string(json_object_get(request, "name"))) {
		meta_bad(err, "missing required field 'name'");
		goto fail;
	}
	if (json_is_null(rprops))
		rprops = NULL;
	if (rprops != NULL &&
	    (!fjson_check_string_map(rprops, "properties", err) ||
	     !format_from_properties(rprops, &format, err) || !retry_properties_valid(rprops, err)))
		goto fail;
	if (rschema == NULL || json_is_null(rschema)) {
		meta_bad(err, "missing required field 'schema'");
		goto fail;
	}
	if (!schema_check(rschema, format, &highest, &c.rindex, err) ||
	    !create_schema(&c, rschema, err) || !create_spec(&c, err) || !create_order(&c, err) ||
	    !create_properties(&c, rprops, err))
		goto fail;
	loc = create_location(request, location, err);
	if (loc == NULL)
		goto fail;
	m = create_empty_metadata(format, now_ms);
	if (m == NULL) {
		meta_oom(err);
		goto fail;
	}
	create_fill(m, &c, uuid, loc, format);
	goto done;
fail:
	json_decref(m);
	m = NULL;
done:
	idmap_free(c.ids.map);
	idmap_free(c.rindex);
	json_decref(c.schema);
	json_decref(c.spec);
	json_decref(c.order);
	json_decref(c.props);
	free(loc);
	return m;
}
