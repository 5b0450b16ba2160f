/*
 * test_viewmeta.c - the view metadata engine (meta/viewmeta.h): createView
 * building metadata, every view update and the requirement, accepted and
 * refused, and the document read back as written. Expected values come
 * from Iceberg's ViewMetadata.Builder semantics, not from running the code.
 * JSON is written with single quotes (J turns them into double ones).
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "viewmeta.h"

#define UUID "0b2a3f3e-6f1c-4a52-9a57-3c5d0e8f1a20"
#define NOW 1767225600000LL

static json_t *J(const char *text)
{
	char *s = strdup(text);
	json_error_t jerr;

	cr_assert_not_null(s);
	for (char *p = s; *p; p++) {
		if (*p == '\'')
			*p = '"';
	}
	json_t *v = json_loads(s, JSON_DECODE_ANY, &jerr);
	cr_assert_not_null(v, "bad test JSON: %s: %s", jerr.text, s);
	free(s);
	return v;
}

#define SCHEMA "{'type':'struct','fields':[{'id':1,'name':'x','required':true,'type':'long'}]}"
#define SCHEMA2 "{'type':'struct','fields':[{'id':1,'name':'y','required':false,'type':'string'}]}"

static const char *request_text =
	"{'name':'v','schema':" SCHEMA ",'view-version':{'version-id':7,'timestamp-ms':5,"
	"'schema-id':3,'summary':{'engine-name':'spark'},'default-namespace':['ns'],"
	"'representations':[{'type':'sql','sql':'select 1','dialect':'spark'}]},"
	"'properties':{'comment':'c'}}";

static json_t *created(void)
{
	struct floe_error err;
	json_t *req = J(request_text);
	json_t *m = viewmeta_create(req, "s3://w/ns/v/", UUID, NOW, &err);

	cr_assert_not_null(m, "%s", err.message);
	json_decref(req);
	return m;
}

/* Applies updates (text) to base; returns the result (must succeed). */
static json_t *apply_ok(const json_t *base, const char *updates, bool want_changed)
{
	struct floe_error err;
	json_t *u = J(updates);
	bool changed = !want_changed;
	json_t *m = viewmeta_apply(base, u, NOW + 1000, &changed, &err);

	cr_assert_not_null(m, "refused: %s", err.message);
	cr_assert_eq(changed, want_changed);
	if (!want_changed)
		cr_assert(json_equal(m, base));
	json_decref(u);
	return m;
}

/* Applies updates that must be refused with kind and a message holding want. */
static void apply_refused(const json_t *base, const char *updates, enum floe_errkind kind,
			  const char *want)
{
	struct floe_error err;
	json_t *u = J(updates);
	json_t *copy = json_deep_copy(base);
	bool changed = true;
	json_t *m = viewmeta_apply(base, u, NOW + 1000, &changed, &err);

	cr_assert_null(m, "accepted: %s", updates);
	cr_assert_eq(err.kind, kind, "kind %d: %s", err.kind, err.message);
	cr_assert_not_null(strstr(err.message, want), "message '%s' lacks '%s'", err.message, want);
	cr_assert_not(changed);
	cr_assert(json_equal(base, copy), "base was modified");
	json_decref(copy);
	json_decref(u);
}

static int64_t iv(const json_t *o, const char *k)
{
	return json_integer_value(json_object_get(o, k));
}

static const json_t *version(const json_t *m, int64_t id)
{
	size_t i;
	json_t *v;

	json_array_foreach(json_object_get(m, "versions"), i, v) {
		if (iv(v, "version-id") == id)
			return v;
	}
	return NULL;
}

Test(viewmeta, create_builds_version_1_bound_to_the_schema)
{
	json_t *m = created();
	const json_t *v = viewmeta_current_version(m);

	cr_assert_str_eq(json_string_value(json_object_get(m, "view-uuid")), UUID);
	cr_assert_eq(iv(m, "format-version"), 1);
	cr_assert_str_eq(json_string_value(json_object_get(m, "location")), "s3://w/ns/v");
	cr_assert_eq(iv(m, "current-version-id"), 1);
	cr_assert_eq(json_array_size(json_object_get(m, "schemas")), 1);
	/* The schema keeps its id (0 when absent) and its field ids. */
	const json_t *s = json_array_get(json_object_get(m, "schemas"), 0);
	cr_assert_eq(iv(s, "schema-id"), 0);
	json_t *want_fields = J("[{'id':1,'name':'x','required':true,'type':'long'}]");
	cr_assert(json_equal(json_object_get(s, "fields"), want_fields));
	json_decref(want_fields);
	cr_assert_not_null(v);
	cr_assert_eq(iv(v, "version-id"), 1);
	cr_assert_eq(iv(v, "schema-id"), 0);
	cr_assert_eq(iv(v, "timestamp-ms"), NOW);
	json_t *log = J("[{'timestamp-ms':1767225600000,'version-id':1}]");
	cr_assert(json_equal(json_object_get(m, "version-log"), log));
	json_decref(log);
	cr_assert_str_eq(json_string_value(
				 json_object_get(json_object_get(m, "properties"), "comment")),
			 "c");
	json_decref(m);
}

Test(viewmeta, create_uses_the_request_location_and_numbers_the_schema_0)
{
	struct floe_error err;
	json_t *req = J(request_text);
	json_object_set_new(req, "location", json_string("file:///elsewhere//"));
	json_object_set_new(json_object_get(req, "schema"), "schema-id", json_integer(4));
	json_t *m = viewmeta_create(req, "s3://w/ns/v", UUID, NOW, &err);

	cr_assert_not_null(m, "%s", err.message);
	cr_assert_str_eq(json_string_value(json_object_get(m, "location")), "file:///elsewhere");
	/* As Java's view builder: the first schema is 0, whatever id it came
	 * with, and the first version is bound to it. */
	cr_assert_eq(iv(json_array_get(json_object_get(m, "schemas"), 0), "schema-id"), 0);
	cr_assert_eq(iv(viewmeta_current_version(m), "schema-id"), 0);
	json_decref(m);
	json_decref(req);
}

Test(viewmeta, create_without_properties_has_empty_ones)
{
	struct floe_error err;
	json_t *req = J(request_text);
	json_object_del(req, "properties");
	json_t *m = viewmeta_create(req, "s3://w/ns/v", UUID, NOW, &err);

	cr_assert_not_null(m, "%s", err.message);
	cr_assert_eq(json_object_size(json_object_get(m, "properties")), 0);
	cr_assert(json_is_object(json_object_get(m, "properties")));
	json_decref(m);
	json_decref(req);
}

static void create_refused(const char *request, const char *want)
{
	struct floe_error err;
	json_t *req = J(request);
	json_t *m = viewmeta_create(req, "s3://w/v", UUID, NOW, &err);

	cr_assert_null(m, "accepted: %s", request);
	cr_assert_eq(err.kind, FE_BAD_REQUEST, "%s", err.message);
	cr_assert_not_null(strstr(err.message, want), "message '%s' lacks '%s'", err.message, want);
	json_decref(req);
}

#define VV(reps, ns)                                                                  \
	"'view-version':{'version-id':1,'timestamp-ms':5,'schema-id':0,'summary':{}," \
	"'default-namespace':" ns ",'representations':" reps "}"
#define REP(d) "{'type':'sql','sql':'select 1','dialect':'" d "'}"

Test(viewmeta, create_refusals)
{
	create_refused("{'schema':" SCHEMA "," VV("[]", "[]") "}", "'name'");
	create_refused("{'name':'v'," VV("[]", "[]") "}", "'schema'");
	create_refused("{'name':'v','schema':" SCHEMA "}", "'view-version'");
	create_refused("{'name':'v','schema':{'type':'list'}," VV("[]", "[]") "}",
		       "not a struct type");
	create_refused("{'name':'v','schema':" SCHEMA
		       "," VV("[" REP("spark") "," REP("SPARK") "]", "[]") "}",
		       "Invalid view version: Cannot add multiple queries for dialect spark");
	create_refused("{'name':'v','schema':" SCHEMA "," VV("[]", "null") "}",
		       "default-namespace");
	create_refused("{'name':'v','schema':" SCHEMA
		       "," VV("[{'type':'sql','sql':'x'}]", "[]") "}",
		       "'dialect'");
	create_refused("{'name':'v','schema':" SCHEMA
		       "," VV("[]", "[]") ",'properties':{'version.history.num-entries':'0'}}",
		       "version.history.num-entries must be positive but was 0");
	create_refused("{'name':'v','schema':" SCHEMA "," VV("[]", "[]") ",'properties':{'a':1}}",
		       "properties");
	create_refused("{'name':'v','schema':" SCHEMA "," VV("[]", "[]") ",'location':''}",
		       "location");
}

Test(viewmeta, serialise_then_parse_is_the_same_metadata)
{
	struct floe_error err;
	json_t *m = created();
	json_object_set_new(m, "x-extra", json_string("kept"));
	size_t len;
	char *text = viewmeta_serialise(m, &len, &err);

	cr_assert_not_null(text);
	cr_assert_eq(len, strlen(text));
	/* The spec's fields come first, in the spec's order. */
	const char *order[] = { "\"view-uuid\"",   "\"format-version\"",     "\"location\"",
				"\"schemas\"",     "\"current-version-id\"", "\"versions\"",
				"\"version-log\"", "\"properties\"",         "\"x-extra\"" };
	const char *at = text;
	for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
		const char *p = strstr(at, order[i]);
		cr_assert_not_null(p, "%s missing or out of order in %s", order[i], text);
		at = p;
	}
	json_t *back = viewmeta_parse(text, len, &err);
	cr_assert_not_null(back, "%s", err.message);
	cr_assert(json_equal(back, m));
	free(text);
	json_decref(back);
	json_decref(m);
}

static void parse_refused(const char *text, const char *want)
{
	struct floe_error err;
	json_t *m = viewmeta_parse(text, strlen(text), &err);

	cr_assert_null(m, "accepted: %s", text);
	cr_assert_eq(err.kind, FE_BAD_REQUEST, "%s", err.message);
	cr_assert_not_null(strstr(err.message, want), "message '%s' lacks '%s'", err.message, want);
}

/* A valid document with one field replaced (value: JSON text, or NULL to
 * drop the field), as text. */
static char *doc_with(const char *key, const char *value)
{
	struct floe_error err;
	json_t *m = created();
	size_t len;

	if (value == NULL)
		json_object_del(m, key);
	else
		json_object_set_new(m, key, J(value));
	char *text = viewmeta_serialise(m, &len, &err);
	json_decref(m);
	cr_assert_not_null(text);
	return text;
}

Test(viewmeta, parse_refuses_bad_documents)
{
	static const struct {
		const char *key, *value, *want;
	} cases[] = {
		{ "format-version", "2", "Unsupported format version: 2" },
		{ "format-version", "'1'", "format-version" },
		{ "view-uuid", NULL, "view-uuid" },
		{ "location", "3", "location" },
		{ "schemas", "[]", "'schemas'" },
		{ "schemas", "[" SCHEMA "]", "schema-id" },
		{ "versions", "[]", "'versions'" },
		{ "current-version-id", "9", "Cannot find current version 9" },
		{ "version-log", "[]", "'version-log'" },
		{ "version-log", "[{'version-id':1}]", "timestamp-ms" },
		{ "properties", "{'a':[]}", "properties" },
		{ "versions",
		  "[{'version-id':1,'timestamp-ms':1,'schema-id':5,'summary':{},"
		  "'default-namespace':[],'representations':[]}]",
		  "unknown schema 5" },
		{ "versions",
		  "[{'version-id':1,'timestamp-ms':1,'schema-id':0,'summary':{},"
		  "'default-namespace':[],'representations':[]},"
		  "{'version-id':1,'timestamp-ms':2,'schema-id':0,'summary':{},"
		  "'default-namespace':[],'representations':[]}]",
		  "version id 1 is used twice" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *text = doc_with(cases[i].key, cases[i].value);
		parse_refused(text, cases[i].want);
		free(text);
	}
	parse_refused("{", "invalid view metadata");
	parse_refused("[]", "must be an object");
	parse_refused("{\"a\":1,\"a\":2}", "invalid view metadata");
}

Test(viewmeta, parse_refuses_a_document_over_the_bound)
{
	struct floe_error err;
	size_t n = (size_t)VIEWMETA_MAX_DOCUMENT_BYTES + 1;
	char *big = malloc(n);

	cr_assert_not_null(big);
	memset(big, ' ', n);
	cr_assert_null(viewmeta_parse(big, n, &err));
	cr_assert_not_null(strstr(err.message, "larger than"));
	free(big);
}

Test(viewmeta, assert_view_uuid)
{
	struct floe_error err;
	json_t *m = created();
	json_t *ok = J("[{'type':'assert-view-uuid','uuid':'" UUID "'}]");
	json_t *upper = J(
		"[{'type':'assert-view-uuid','uuid':'0B2A3F3E-6F1C-4A52-9A57-3C5D0E8F1A20'}]");
	json_t *other = J(
		"[{'type':'assert-view-uuid','uuid':'11111111-2222-3333-4444-555555555555'}]");
	json_t *bad = J("[{'type':'assert-view-uuid'}]");
	json_t *table = J("[{'type':'assert-table-uuid','uuid':'" UUID "'}]");

	cr_assert(viewmeta_check_requirements(m, ok, &err));
	cr_assert(viewmeta_check_requirements(m, upper, &err));
	cr_assert(viewmeta_check_requirements(m, NULL, &err));
	cr_assert_not(viewmeta_check_requirements(m, other, &err));
	cr_assert_eq(err.kind, FE_COMMIT_FAILED);
	cr_assert_str_eq(err.message, "Requirement failed: view UUID does not match: expected " UUID
				      " != 11111111-2222-3333-4444-555555555555");
	cr_assert_not(viewmeta_check_requirements(m, bad, &err));
	cr_assert_eq(err.kind, FE_BAD_REQUEST);
	cr_assert_not(viewmeta_check_requirements(m, table, &err));
	cr_assert_eq(err.kind, FE_BAD_REQUEST);
	cr_assert_not_null(strstr(err.message, "assert-table-uuid"));
	json_decref(ok);
	json_decref(upper);
	json_decref(other);
	json_decref(bad);
	json_decref(table);
	json_decref(m);
}

Test(viewmeta, check_actions_knows_only_view_actions)
{
	struct floe_error err;
	json_t *good = J("[{'action':'set-location','location':'x'},"
			 "{'action':'add-view-version','view-version':{}}]");
	json_t *table = J("[{'action':'add-snapshot'}]");
	json_t *shape = J("[3]");

	cr_assert(viewmeta_check_actions(good, &err));
	cr_assert_not(viewmeta_check_actions(table, &err));
	cr_assert_not_null(strstr(err.message, "unknown view update action 'add-snapshot'"));
	cr_assert_not(viewmeta_check_actions(shape, &err));
	cr_assert_eq(err.kind, FE_BAD_REQUEST);
	json_decref(good);
	json_decref(table);
	json_decref(shape);
}

Test(viewmeta, assign_uuid)
{
	json_t *m = created();
	json_t *r = apply_ok(m, "[{'action':'assign-uuid','uuid':'" UUID "'}]", false);

	json_decref(r);
	apply_refused(m, "[{'action':'assign-uuid','uuid':'11111111-2222-3333-4444-555555555555'}]",
		      FE_BAD_REQUEST, "Cannot reassign uuid");
	apply_refused(m, "[{'action':'assign-uuid','uuid':'nope'}]", FE_BAD_REQUEST,
		      "is not a UUID");
	apply_refused(m, "[{'action':'assign-uuid'}]", FE_BAD_REQUEST, "'uuid'");
	json_decref(m);
}

Test(viewmeta, upgrade_format_version)
{
	json_t *m = created();
	json_t *r = apply_ok(m, "[{'action':'upgrade-format-version','format-version':1}]", false);

	json_decref(r);
	apply_refused(m, "[{'action':'upgrade-format-version','format-version':2}]", FE_BAD_REQUEST,
		      "Cannot upgrade view to unsupported format version: v2");
	apply_refused(m, "[{'action':'upgrade-format-version','format-version':0}]", FE_BAD_REQUEST,
		      "Cannot downgrade v1 view to v0");
	apply_refused(m, "[{'action':'upgrade-format-version'}]", FE_BAD_REQUEST, "format-version");
	json_decref(m);
}

Test(viewmeta, add_schema_assigns_ids_and_reuses_identical_ones)
{
	json_t *m = created();
	/* Identical fields: the schema of id 0 is it; nothing changes. */
	json_t *same = apply_ok(m,
				"[{'action':'add-schema','schema':" SCHEMA ",'last-column-id':1}]",
				false);
	json_t *r = apply_ok(m, "[{'action':'add-schema','schema':" SCHEMA2 "}]", true);
	const json_t *schemas = json_object_get(r, "schemas");

	cr_assert_eq(json_array_size(schemas), 2);
	cr_assert_eq(iv(json_array_get(schemas, 1), "schema-id"), 1);
	cr_assert_null(json_object_get(r, "last-column-id"));
	/* An id sent with the schema is not kept: the next one is taken. */
	json_t *s7 = J(SCHEMA2);
	json_object_set_new(s7, "schema-id", json_integer(7));
	json_t *u = json_pack("[{s:s, s:O}]", "action", "add-schema", "schema", s7);
	char *ut = json_dumps(u, 0);
	json_t *r7 = apply_ok(m, ut, true);
	cr_assert_eq(iv(json_array_get(json_object_get(r7, "schemas"), 1), "schema-id"), 1);
	apply_refused(m, "[{'action':'add-schema'}]", FE_BAD_REQUEST, "'schema'");
	apply_refused(m, "[{'action':'add-schema','schema':{'type':'struct','fields':[3]}}]",
		      FE_BAD_REQUEST, "schema");
	free(ut);
	json_decref(u);
	json_decref(s7);
	json_decref(r7);
	json_decref(r);
	json_decref(same);
	json_decref(m);
}

Test(viewmeta, location_and_properties)
{
	json_t *m = created();
	json_t *loc = apply_ok(m, "[{'action':'set-location','location':'s3://x/y/'}]", true);
	cr_assert_str_eq(json_string_value(json_object_get(loc, "location")), "s3://x/y");
	json_t *same = apply_ok(m, "[{'action':'set-location','location':'s3://w/ns/v'}]", false);
	json_t *props = apply_ok(m,
				 "[{'action':'set-properties','updates':{'a':'1'}},"
				 "{'action':'remove-properties','removals':['comment','absent']}]",
				 true);
	json_t *want = J("{'a':'1'}");
	cr_assert(json_equal(json_object_get(props, "properties"), want));
	/* Properties never make a version-log entry. */
	cr_assert_eq(json_array_size(json_object_get(props, "version-log")), 1);
	apply_refused(m, "[{'action':'set-location'}]", FE_BAD_REQUEST, "'location'");
	apply_refused(m, "[{'action':'set-properties','updates':{'a':1}}]", FE_BAD_REQUEST,
		      "set-properties");
	apply_refused(m, "[{'action':'remove-properties','removals':[1]}]", FE_BAD_REQUEST,
		      "removals");
	apply_refused(m,
		      "[{'action':'set-properties','updates':{'version.history.num-entries':'x'}}]",
		      FE_BAD_REQUEST, "version.history.num-entries");
	json_decref(want);
	json_decref(props);
	json_decref(same);
	json_decref(loc);
	json_decref(m);
}

#define NEWVER(sid, reps)                                                                   \
	"{'action':'add-view-version','view-version':{'version-id':1,'timestamp-ms':4242,"  \
	"'schema-id':" sid ",'summary':{'engine-name':'trino'},'default-namespace':['ns']," \
	"'representations':" reps "}}"
#define SETCUR(id) "{'action':'set-current-view-version','view-version-id':" id "}"

Test(viewmeta, replace_with_last_added_schema_and_version)
{
	json_t *m = created();
	json_t *r = apply_ok(m,
			     "[{'action':'add-schema','schema':" SCHEMA2
			     "}," NEWVER("-1", "[" REP("trino") "," REP("spark") "]") "," SETCUR(
				     "-1") "]",
			     true);
	const json_t *v = viewmeta_current_version(r);

	cr_assert_eq(iv(r, "current-version-id"), 2);
	cr_assert_eq(iv(v, "version-id"), 2);
	cr_assert_eq(iv(v, "schema-id"), 1);
	/* A version added in this commit is logged at its own time. */
	json_t *log = J("[{'timestamp-ms':1767225600000,'version-id':1},"
			"{'timestamp-ms':4242,'version-id':2}]");
	cr_assert(json_equal(json_object_get(r, "version-log"), log));
	cr_assert_eq(json_array_size(json_object_get(r, "versions")), 2);
	json_decref(log);
	json_decref(r);
	json_decref(m);
}

Test(viewmeta, last_added_needs_something_added)
{
	json_t *m = created();

	apply_refused(m, "[" NEWVER("-1", "[]") "]", FE_BAD_REQUEST,
		      "Cannot set last added schema: no schema has been added");
	/* An identical schema is no schema added. */
	apply_refused(m, "[{'action':'add-schema','schema':" SCHEMA "}," NEWVER("-1", "[]") "]",
		      FE_BAD_REQUEST, "Cannot set last added schema: no schema has been added");
	apply_refused(m, "[" SETCUR("-1") "]", FE_BAD_REQUEST,
		      "Cannot set last version id: no current version id has been set");
	json_decref(m);
}

Test(viewmeta, an_identical_version_is_reused)
{
	json_t *m = created();
	/* The created version again, with another id and time: it is version 1. */
	json_t *same = apply_ok(m,
				"[{'action':'add-view-version','view-version':{'version-id':9,"
				"'timestamp-ms':1,'schema-id':0,'summary':{'engine-name':'spark'},"
				"'default-namespace':['ns'],'representations':[" REP(
					"spark") "]}}," SETCUR("1") "]",
				false);
	/* Added twice in one commit: one version, and -1 is it. */
	json_t *twice = apply_ok(m,
				 "[" NEWVER("0", "[]") "," NEWVER("0", "[]") "," SETCUR("-1") "]",
				 true);
	cr_assert_eq(json_array_size(json_object_get(twice, "versions")), 2);
	cr_assert_eq(iv(twice, "current-version-id"), 2);
	/* Reusing an older version is no version added in this commit. */
	apply_refused(m,
		      "[{'action':'add-view-version','view-version':{'version-id':9,"
		      "'timestamp-ms':1,'schema-id':0,'summary':{'engine-name':'spark'},"
		      "'default-namespace':['ns'],'representations':[" REP("spark") "]}}," SETCUR(
			      "-1") "]",
		      FE_BAD_REQUEST, "Cannot set last version id");
	json_decref(twice);
	json_decref(same);
	json_decref(m);
}

Test(viewmeta, add_view_version_refusals)
{
	json_t *m = created();

	apply_refused(m, "[" NEWVER("0", "[" REP("Spark") "," REP("spark") "]") "]", FE_BAD_REQUEST,
		      "Invalid view version: Cannot add multiple queries for dialect spark");
	apply_refused(m, "[" NEWVER("5", "[]") "]", FE_BAD_REQUEST,
		      "Cannot add version with unknown schema: 5");
	apply_refused(m,
		      "[{'action':'add-view-version','view-version':{'version-id':2,"
		      "'timestamp-ms':1,'schema-id':0,'summary':{},'representations':[]}}]",
		      FE_BAD_REQUEST, "default-namespace");
	apply_refused(m,
		      "[{'action':'add-view-version','view-version':{'version-id':2,"
		      "'schema-id':0,'summary':{},'default-namespace':[],'representations':[]}}]",
		      FE_BAD_REQUEST, "timestamp-ms");
	apply_refused(m, "[{'action':'add-view-version'}]", FE_BAD_REQUEST, "'view-version'");
	apply_refused(m,
		      "[{'action':'add-view-version','view-version':{'version-id':2147483648,"
		      "'timestamp-ms':1,'schema-id':0,'summary':{},'default-namespace':[],"
		      "'representations':[]}}]",
		      FE_BAD_REQUEST, "out of range");
	apply_refused(m, "[" NEWVER("0", "[{'type':'sql','dialect':'x'}]") "]", FE_BAD_REQUEST,
		      "'sql'");
	/* A representation of another type is kept as it is. */
	json_t *r = apply_ok(m, "[" NEWVER("0", "[{'type':'other'}]") "]", true);
	json_decref(r);
	json_decref(m);
}

Test(viewmeta, set_current_view_version)
{
	json_t *m = created();
	json_t *two = apply_ok(m, "[" NEWVER("0", "[]") "," SETCUR("-1") "]", true);

	/* Back to version 1: logged at the commit's time. */
	json_t *back = apply_ok(two, "[" SETCUR("1") "]", true);
	cr_assert_eq(iv(back, "current-version-id"), 1);
	const json_t *log = json_object_get(back, "version-log");
	cr_assert_eq(json_array_size(log), 3);
	cr_assert_eq(iv(json_array_get(log, 2), "timestamp-ms"), NOW + 1000);
	cr_assert_eq(iv(json_array_get(log, 2), "version-id"), 1);
	json_t *same = apply_ok(two, "[" SETCUR("2") "]", false);
	apply_refused(two, "[" SETCUR("3") "]", FE_BAD_REQUEST,
		      "Cannot set current version to unknown version: 3");
	apply_refused(two, "[{'action':'set-current-view-version'}]", FE_BAD_REQUEST,
		      "view-version-id");
	json_decref(same);
	json_decref(back);
	json_decref(two);
	json_decref(m);
}

Test(viewmeta, versions_are_trimmed_keeping_the_current_one)
{
	json_t *first = created();
	json_t *cur = apply_ok(first,
			       "[{'action':'set-properties','updates':"
			       "{'version.history.num-entries':'2'}}]",
			       true);

	json_decref(first);
	/* Versions 2, 3, 4, each made current in its own commit. */
	for (int i = 2; i <= 4; i++) {
		char upd[512];
		(void)snprintf(upd, sizeof(upd),
			       "[{'action':'add-view-version','view-version':{'version-id':1,"
			       "'timestamp-ms':%d,'schema-id':0,'summary':{},"
			       "'default-namespace':['n%d'],'representations':[]}}," SETCUR(
				       "-1") "]",
			       i, i);
		json_t *next = apply_ok(cur, upd, true);
		json_decref(cur);
		cur = next;
	}
	const json_t *versions = json_object_get(cur, "versions");
	cr_assert_eq(json_array_size(versions), 2);
	cr_assert_not_null(version(cur, 4));
	cr_assert_not_null(version(cur, 3));
	json_t *log = J("[{'timestamp-ms':3,'version-id':3},{'timestamp-ms':4,'version-id':4}]");
	cr_assert(json_equal(json_object_get(cur, "version-log"), log));
	json_decref(log);

	/* Current set back to 3, then a new version 5 added but not made
	 * current: the current one stays, with the newest. */
	json_t *b = apply_ok(cur, "[" SETCUR("3") "]", true);
	json_t *c = apply_ok(b, "[" NEWVER("0", "[]") "]", true);
	cr_assert_eq(iv(c, "current-version-id"), 3);
	cr_assert_eq(json_array_size(json_object_get(c, "versions")), 2);
	cr_assert_not_null(version(c, 3));
	cr_assert_not_null(version(c, 5));
	cr_assert_null(version(c, 4));
	/* The log up to the last entry of version 4 is gone. */
	const json_t *clog = json_object_get(c, "version-log");
	cr_assert_eq(json_array_size(clog), 1);
	cr_assert_eq(iv(json_array_get(clog, 0), "version-id"), 3);

	/* A commit adding more than the limit keeps as many as it added, as
	 * Java does: the current one and the newest. */
	json_t *many = apply_ok(c,
				"[" NEWVER("0", "[" REP("a") "]") "," NEWVER(
					"0", "[" REP("b") "]") "," NEWVER("0",
									  "[" REP("c") "]") "]",
				true);
	cr_assert_eq(json_array_size(json_object_get(many, "versions")), 3);
	cr_assert_not_null(version(many, 3));
	cr_assert_not_null(version(many, 8));
	cr_assert_not_null(version(many, 7));
	json_decref(many);
	json_decref(c);
	json_decref(b);
	json_decref(cur);
}

Test(viewmeta, a_bad_update_is_refused_whole)
{
	json_t *m = created();

	apply_refused(m, "[{'action':'set-location','location':'s3://x'},{'action':'add-spec'}]",
		      FE_BAD_REQUEST, "unknown view update action 'add-spec'");
	apply_refused(m, "{}", FE_BAD_REQUEST, "'updates' must be an array");
	apply_refused(m, "[{'no':'action'}]", FE_BAD_REQUEST, "'action'");
	json_t *none = apply_ok(m, "[]", false);
	json_decref(none);
	json_decref(m);
}
