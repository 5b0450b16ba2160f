/*
 * view.c - the view metadata document (viewmeta.h): building it for a new
 * view as Java's BaseViewBuilder.create does, checking a document (the
 * rules of ViewMetadata and ViewVersion), reading and writing it. The
 * updates of a view commit are in viewupdates.c.
 */
#include "meta_internal.h"

#include "json.h"
#include "tablemeta.h"
#include "viewmeta.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define HISTORY_PROPERTY "version.history.num-entries"

/* Checks a view representation; dialects collects the lowercased SQL
 * dialects seen so far in the version. */
static bool representation_check(const json_t *r, json_t *dialects, struct floe_error *err)
{
	const char *type = fjson_get_str(r, "type");
	const char *dialect = fjson_get_str(r, "dialect");
	char lower[256];
	size_t i;

	if (!json_is_object(r) || type == NULL)
		return meta_bad(err, "view-version: a representation needs a string 'type'");
	/* Other types are kept as they are, as Java keeps them unknown. */
	if (strcasecmp(type, "sql") != 0)
		return true;
	if (!json_is_string(json_object_get(r, "sql")))
		return meta_bad(err, "view-version: an sql representation needs a string 'sql'");
	if (dialect == NULL)
		return meta_bad(err,
				"view-version: an sql representation needs a string 'dialect'");
	for (i = 0; i < sizeof(lower) - 1 && dialect[i] != '\0'; i++)
		lower[i] = (char)tolower((unsigned char)dialect[i]);
	lower[i] = '\0';
	if (dialect[i] != '\0')
		return meta_bad(err, "view-version: dialect '%.64s...' is too long", dialect);
	if (json_object_get(dialects, lower) != NULL)
		return meta_bad(err,
				"Invalid view version: Cannot add multiple queries for dialect %s",
				lower);
	if (json_object_set_new(dialects, lower, json_true()) != 0)
		return meta_oom(err);
	return true;
}

bool view_version_check(const json_t *v, struct floe_error *err)
{
	static const char *const ints[] = { "version-id", "schema-id", "timestamp-ms" };
	const json_t *reps = json_object_get(v, "representations");
	const json_t *cat = json_object_get(v, "default-catalog");
	json_t *dialects = NULL;
	size_t i;
	json_t *r;
	int64_t n;

	if (!json_is_object(v))
		return meta_bad(err, "view-version must be an object");
	for (i = 0; i < sizeof(ints) / sizeof(ints[0]); i++) {
		if (!fjson_get_int(v, ints[i], "view-version", NULL, &n, err))
			return false;
		/* Ids are Java ints. */
		if (i < 2 && !view_id_in_range(n))
			return meta_bad(err, "view-version: %s %" PRId64 " is out of range",
					ints[i], n);
	}
	if (!fjson_check_string_map(json_object_get(v, "summary"), "view-version summary", err))
		return false;
	if (!fjson_is_array_of(json_object_get(v, "default-namespace"), JSON_STRING))
		return meta_bad(err,
				"view-version: 'default-namespace' must be an array of strings");
	if (cat != NULL && !json_is_null(cat) && !json_is_string(cat))
		return meta_bad(err, "view-version: 'default-catalog' must be a string");
	if (!json_is_array(reps))
		return meta_bad(err, "view-version: 'representations' must be an array");
	dialects = json_object();
	if (dialects == NULL)
		return meta_oom(err);
	json_array_foreach(reps, i, r) {
		if (!representation_check(r, dialects, err)) {
			json_decref(dialects);
			return false;
		}
	}
	json_decref(dialects);
	return true;
}

bool view_id_in_range(int64_t id)
{
	return id >= INT32_MIN && id <= INT32_MAX;
}

char *view_version_key(const json_t *v)
{
	const json_t *cat = json_object_get(v, "default-catalog");
	json_t *key = json_pack("{s:O?, s:O?, s:O, s:O?, s:O?}", "summary",
				json_object_get(v, "summary"), "representations",
				json_object_get(v, "representations"), "default-catalog",
				cat != NULL ? cat : json_null(), "default-namespace",
				json_object_get(v, "default-namespace"), "schema-id",
				json_object_get(v, "schema-id"));
	char *text = key != NULL ? json_dumps(key, JSON_COMPACT | JSON_SORT_KEYS) : NULL;

	json_decref(key);
	return text;
}

bool view_history_size(const json_t *props, int64_t *size, struct floe_error *err)
{
	const json_t *v = json_object_get(props, HISTORY_PROPERTY);
	const char *s = json_string_value(v);
	char *end = NULL;
	long long n;

	*size = VIEWMETA_HISTORY_DEFAULT;
	if (v == NULL)
		return true;
	if (s == NULL)
		return meta_bad(err, "property %s must be a string", HISTORY_PROPERTY);
	errno = 0;
	n = strtoll(s, &end, 10);
	if (*s == '\0' || *end != '\0' || errno != 0 || n > INT32_MAX)
		return meta_bad(err, "property %s must be an integer, not '%.64s'",
				HISTORY_PROPERTY, s);
	if (n <= 0)
		return meta_bad(err, "%s must be positive but was %lld", HISTORY_PROPERTY, n);
	*size = n;
	return true;
}

/* The request's properties, checked (NULL when it has none). */
static bool create_properties(const json_t *request, const json_t **props, struct floe_error *err)
{
	int64_t size;

	*props = json_object_get(request, "properties");
	if (json_is_null(*props))
		*props = NULL;
	if (*props == NULL)
		return true;
	return fjson_check_string_map(*props, "properties", err) &&
	       view_history_size(*props, &size, err);
}

/* The first version of a new view: the request's view-version as id 1,
 * made at now_ms, bound to schema sid. New, or NULL with err set. */
static json_t *create_version(const json_t *request, int64_t sid, int64_t now_ms,
			      struct floe_error *err)
{
	const json_t *rv = json_object_get(request, "view-version");
	json_t *v;

	if (!json_is_object(rv)) {
		meta_bad(err, "missing required field 'view-version'");
		return NULL;
	}
	v = json_deep_copy(rv);
	if (v == NULL || !fjson_set_int(v, "version-id", 1) ||
	    !fjson_set_int(v, "schema-id", sid) || !fjson_set_int(v, "timestamp-ms", now_ms) ||
	    (json_object_get(v, "summary") == NULL &&
	     json_object_set_new(v, "summary", json_object()) != 0)) {
		json_decref(v);
		meta_oom(err);
		return NULL;
	}
	if (!view_version_check(v, err)) {
		json_decref(v);
		return NULL;
	}
	return v;
}

json_t *viewmeta_create(const json_t *request, const char *location, const char *uuid,
			int64_t now_ms, struct floe_error *err)
{
	const json_t *rschema = json_object_get(request, "schema");
	const json_t *props = NULL;
	json_t *schema = NULL;
	json_t *version = NULL;
	json_t *m = NULL;
	char *loc = NULL;
	int64_t highest, sid;

	if (!json_is_object(request) || !json_is_string(json_object_get(request, "name"))) {
		meta_bad(err, "missing required field 'name'");
		goto done;
	}
	if (!create_properties(request, &props, err))
		goto done;
	if (rschema == NULL || json_is_null(rschema)) {
		meta_bad(err, "missing required field 'schema'");
		goto done;
	}
	if (!schema_check(rschema, TABLEMETA_MAX_FORMAT_VERSION, &highest, NULL, err))
		goto done;
	/* As Java's view builder: the first schema is schema 0, whatever id
	 * the request gave it; its field ids are kept (a view assigns no
	 * fresh ones). */
	sid = 0;
	schema = json_deep_copy(rschema);
	if (schema == NULL || !fjson_set_int(schema, "schema-id", sid)) {
		meta_oom(err);
		goto done;
	}
	version = create_version(request, sid, now_ms, err);
	if (version == NULL)
		goto done;
	loc = create_location(request, location, err);
	if (loc == NULL)
		goto done;
	m = json_pack("{s:s, s:i, s:s, s:[O], s:i, s:[O], s:[{s:I, s:i}], s:o}", "view-uuid", uuid,
		      "format-version", 1, "location", loc, "schemas", schema, "current-version-id",
		      1, "versions", version, "version-log", "timestamp-ms", (json_int_t)now_ms,
		      "version-id", 1, "properties",
		      props != NULL ? json_incref((json_t *)props) : json_object());
	if (m == NULL)
		meta_oom(err);
	else if (!viewmeta_validate(m, err)) {
		json_decref(m);
		m = NULL;
	}
done:
	json_decref(schema);
	json_decref(version);
	free(loc);
	return m;
}

/* FE_BAD_REQUEST "invalid view metadata: <what>"; always false. */
static bool invalid(struct floe_error *err, const char *what)
{
	return meta_bad(err, "invalid view metadata: %s", what);
}

/* Checks the schemas of m, each schema id into ids. */
static bool validate_schemas(const json_t *m, struct idmap *ids, struct floe_error *err)
{
	const json_t *schemas = json_object_get(m, "schemas");
	size_t i;
	json_t *s;
	int64_t highest, id;

	if (!json_is_array(schemas) || json_array_size(schemas) == 0)
		return invalid(err, "'schemas' must be a non-empty array");
	json_array_foreach(schemas, i, s) {
		if (!schema_check(s, TABLEMETA_MAX_FORMAT_VERSION, &highest, NULL, err) ||
		    !fjson_get_int(s, "schema-id", "schema", NULL, &id, err))
			return false;
		if (!view_id_in_range(id))
			return meta_bad(err,
					"invalid view metadata: schema id %" PRId64
					" is out of range",
					id);
		if (idmap_has(ids, id))
			return meta_bad(err,
					"invalid view metadata: schema id %" PRId64
					" is used twice",
					id);
		if (!idmap_put(ids, id, 1))
			return meta_oom(err);
	}
	return true;
}

/* Checks the versions of m against the schema ids. */
static bool validate_versions(const json_t *m, const struct idmap *schema_ids,
			      struct floe_error *err)
{
	const json_t *versions = json_object_get(m, "versions");
	struct idmap *ids;
	size_t i;
	json_t *v;
	bool ok = true;

	if (!json_is_array(versions) || json_array_size(versions) == 0)
		return invalid(err, "'versions' must be a non-empty array");
	ids = idmap_new(json_array_size(versions));
	if (ids == NULL)
		return meta_oom(err);
	json_array_foreach(versions, i, v) {
		int64_t id = fjson_int_or(v, "version-id", -1);
		int64_t sid = fjson_int_or(v, "schema-id", -1);
		ok = view_version_check(v, err);
		if (ok && idmap_has(ids, id))
			ok = meta_bad(err,
				      "invalid view metadata: version id %" PRId64 " is used twice",
				      id);
		if (ok && !idmap_has(schema_ids, sid))
			ok = meta_bad(err,
				      "invalid view metadata: version %" PRId64
				      " has unknown schema %" PRId64,
				      id, sid);
		if (ok && !idmap_put(ids, id, 1))
			ok = meta_oom(err);
		if (!ok)
			break;
	}
	idmap_free(ids);
	return ok;
}

static bool validate_log(const json_t *m, struct floe_error *err)
{
	const json_t *log = json_object_get(m, "version-log");
	size_t i;
	json_t *e;
	int64_t n;

	if (!json_is_array(log) || json_array_size(log) == 0)
		return invalid(err, "'version-log' must be a non-empty array");
	json_array_foreach(log, i, e) {
		if (!json_is_object(e))
			return invalid(err, "a version-log entry must be an object");
		if (!fjson_get_int(e, "timestamp-ms", "version-log entry", NULL, &n, err) ||
		    !fjson_get_int(e, "version-id", "version-log entry", NULL, &n, err))
			return false;
	}
	return true;
}

bool viewmeta_validate(const json_t *m, struct floe_error *err)
{
	const json_t *props = json_object_get(m, "properties");
	struct idmap *schema_ids = NULL;
	int64_t format, size;
	bool ok = false;

	if (!json_is_object(m))
		return invalid(err, "the document must be an object");
	if (!fjson_get_int(m, "format-version", "view metadata", NULL, &format, err))
		return false;
	if (format < 1 || format > VIEWMETA_MAX_FORMAT_VERSION)
		return meta_bad(err, "Unsupported format version: %" PRId64, format);
	if (fjson_get_str(m, "view-uuid") == NULL)
		return invalid(err, "missing required field 'view-uuid'");
	if (fjson_get_str(m, "location") == NULL)
		return invalid(err, "missing required field 'location'");
	if (props != NULL && (!fjson_check_string_map(props, "properties", err) ||
			      !view_history_size(props, &size, err)))
		return false;
	schema_ids = idmap_new(8);
	if (schema_ids == NULL)
		return meta_oom(err);
	if (!validate_schemas(m, schema_ids, err) || !validate_versions(m, schema_ids, err) ||
	    !validate_log(m, err))
		goto done;
	if (viewmeta_current_version(m) == NULL) {
		meta_bad(err,
			 "invalid view metadata: Cannot find current version %" PRId64
			 " in view versions",
			 fjson_int_or(m, "current-version-id", -1));
		goto done;
	}
	ok = true;
done:
	idmap_free(schema_ids);
	return ok;
}

json_t *viewmeta_parse(const char *text, size_t len, struct floe_error *err)
{
	json_error_t jerr;
	json_t *m;

	if (len > VIEWMETA_MAX_DOCUMENT_BYTES) {
		meta_bad(err, "invalid view metadata: the document is larger than %zu bytes",
			 VIEWMETA_MAX_DOCUMENT_BYTES);
		return NULL;
	}
	m = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
	if (m == NULL) {
		meta_bad(err, "invalid view metadata: %s (line %d)", jerr.text, jerr.line);
		return NULL;
	}
	if (!viewmeta_validate(m, err)) {
		json_decref(m);
		return NULL;
	}
	return m;
}

char *viewmeta_serialise(const json_t *m, size_t *len, struct floe_error *err)
{
	static const char *const order[] = { "view-uuid",   "format-version",     "location",
					     "schemas",     "current-version-id", "versions",
					     "version-log", "properties" };
	json_t *doc = json_object();
	char *text = NULL;
	const char *k;
	json_t *v;

	*len = 0;
	if (doc == NULL)
		goto oom;
	for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
		v = json_object_get(m, order[i]);
		if (v != NULL && json_object_set(doc, order[i], v) != 0)
			goto oom;
	}
	json_object_foreach((json_t *)m, k, v) {
		if (json_object_get(doc, k) == NULL && json_object_set(doc, k, v) != 0)
			goto oom;
	}
	text = json_dumps(doc, JSON_COMPACT);
	if (text == NULL)
		goto oom;
	json_decref(doc);
	*len = strlen(text);
	return text;
oom:
	json_decref(doc);
	meta_oom(err);
	return NULL;
}

const json_t *viewmeta_current_version(const json_t *m)
{
	json_t *id = json_object_get(m, "current-version-id");

	if (!json_is_integer(id))
		return NULL;
	return fjson_find_by_id(json_object_get(m, "versions"), "version-id",
				json_integer_value(id));
}
