/*
 * test_tablemeta.c - runs the JSON fixtures in FLOE_FIXTURE_DIR/commit and
 * FLOE_FIXTURE_DIR/create against meta/, one Criterion test
 * per fixture file (a crash in one case cannot hide the others). Expected
 * values come from the Iceberg Java semantics (metadata-semantics.md), not
 * from running the code.
 *
 * Fixture format: one case per file, NNN-short-name.json, run in name order.
 *
 * commit/NNN-name.json, a commit:
 *   { "description": "what a user relies on",
 *     "base": {table metadata} | null,       null: the table does not exist
 *     "base-location": "<metadata file of base>" | null,
 *     "now-ms": <commit time>,
 *     "create": true,                        optional: a staged create, i.e.
 *                                            tablemeta_apply_create (base null)
 *     "uuid": "...",                         optional, with create: the uuid
 *                                            used when no assign-uuid sets one
 *     "requirements": [...],                 tablemeta_check_requirements first
 *     "updates": [...],                      then tablemeta_apply(_create)
 *     "expect": <expectation> }
 * commit/NNN-name.json, loading with snapshots=refs:
 *   { "description", "only-ref-snapshots": true, "base": {...},
 *     "expect": <expectation> }              tablemeta_only_ref_snapshots(base)
 * create/NNN-name.json, a createTable request:
 *   { "description", "request": {createTable body},
 *     "location": "<catalog default location>", "uuid": "...", "now-ms": ...,
 *     "expect": <expectation> }
 *
 * An expectation is either a failure:
 *   { "error": { "code": 409, "type": "CommitFailedException",
 *                "message-contains": ["...", ...] } }
 * (code and type via floe_errkind_status/type; every substring must occur
 * in err.message, compared case-insensitively), or a success:
 *   { "changed": true|false,   optional; false also demands result == base
 *     "metadata": {...},       each top-level key must be json_equal in result
 *     "absent": ["key", ...],  keys that must not be in the result
 *     "exact": true,           optional: result has no keys beyond "metadata"
 *     "dropped-files": [...] } optional, commits: the metadata files
 *                              tablemeta_dropped_metadata_files names
 * Every case also checks that base and request are left unmodified.
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <glob.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tablemeta.h"

#ifndef FLOE_FIXTURE_DIR
#error "FLOE_FIXTURE_DIR must be defined as the tests/fixtures directory"
#endif

#define FIXTURE_PATH_MAX 512
#define REPORT_MAX 16384
#define DUMP_MAX 600

struct fixture {
	char path[FIXTURE_PATH_MAX];
};

/* The reasons one case failed, appended to a bounded buffer. */
struct report {
	char buf[REPORT_MAX];
	size_t len;
	int count;
};

static void report_add(struct report *r, const char *fmt, ...) FLOE_PRINTF(2, 3);

static void report_add(struct report *r, const char *fmt, ...)
{
	va_list ap;
	int n;

	r->count++;
	if (r->len + 2 >= sizeof(r->buf))
		return;
	r->buf[r->len++] = '\n';
	r->buf[r->len++] = ' ';
	va_start(ap, fmt);
	n = vsnprintf(r->buf + r->len, sizeof(r->buf) - r->len, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	r->len += (size_t)n;
	if (r->len >= sizeof(r->buf))
		r->len = sizeof(r->buf) - 1;
}

/* A compact, key-sorted, bounded rendering of v for failure messages. */
static void dump_json(const json_t *v, char *out, size_t size)
{
	char *s;

	if (v == NULL) {
		snprintf(out, size, "(absent)");
		return;
	}
	s = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
	if (s == NULL) {
		snprintf(out, size, "(unprintable)");
		return;
	}
	if (strlen(s) > DUMP_MAX)
		snprintf(out, size, "%.*s...", DUMP_MAX, s);
	else
		snprintf(out, size, "%s", s);
	free(s);
}

static void report_mismatch(struct report *r, const char *what, const json_t *expected,
			    const json_t *got)
{
	char e[DUMP_MAX + 16];
	char g[DUMP_MAX + 16];

	dump_json(expected, e, sizeof(e));
	dump_json(got, g, sizeof(g));
	report_add(r, "%s: expected %s, got %s", what, e, g);
}

/* Compares a failure (err filled, no result) with expect.error. */
static void check_failure(const json_t *expect, const struct floe_error *err, struct report *r)
{
	const json_t *want = json_object_get(expect, "error");
	const json_t *subs = json_object_get(want, "message-contains");
	json_int_t code = json_integer_value(json_object_get(want, "code"));
	const char *type = json_string_value(json_object_get(want, "type"));
	int status = floe_errkind_status(err->kind);
	size_t i;
	const json_t *sub;

	if (want == NULL) {
		report_add(r, "unexpected error %d %s: %s", status, floe_errkind_type(err->kind),
			   err->message);
		return;
	}
	if (status != code)
		report_add(r, "status: expected %lld, got %d (%s: %s)", (long long)code, status,
			   floe_errkind_type(err->kind), err->message);
	if (type != NULL && strcmp(type, floe_errkind_type(err->kind)) != 0)
		report_add(r, "type: expected %s, got %s", type, floe_errkind_type(err->kind));
	json_array_foreach(subs, i, sub) {
		const char *s = json_string_value(sub);

		if (s != NULL && strcasestr(err->message, s) == NULL)
			report_add(r, "message \"%s\" lacks \"%s\"", err->message, s);
	}
}

/* Compares a result with a success expectation. base is the input
 * metadata (NULL for a create), changed NULL when not reported. */
static void check_success(const json_t *expect, const json_t *result, const json_t *base,
			  const bool *changed, struct report *r)
{
	const json_t *want_md = json_object_get(expect, "metadata");
	const json_t *want_changed = json_object_get(expect, "changed");
	const json_t *absent = json_object_get(expect, "absent");
	const json_t *v;
	const char *key;
	size_t i;

	if (json_object_get(expect, "error") != NULL) {
		char g[DUMP_MAX + 16];

		dump_json(result, g, sizeof(g));
		report_add(r, "expected an error, got success: %s", g);
		return;
	}
	if (!json_is_object(result)) {
		report_add(r, "result is not a JSON object");
		return;
	}
	if (want_changed != NULL && changed != NULL) {
		if (json_is_true(want_changed) != *changed)
			report_add(r, "changed: expected %s, got %s",
				   json_is_true(want_changed) ? "true" : "false",
				   *changed ? "true" : "false");
		if (json_is_false(want_changed) && base != NULL && !json_equal(result, base))
			report_mismatch(r, "no-op result differs from base", base, result);
	}
	json_object_foreach((json_t *)want_md, key, v) {
		const json_t *got = json_object_get(result, key);

		if (!json_equal(v, got))
			report_mismatch(r, key, v, got);
	}
	json_array_foreach(absent, i, v) {
		const char *name = json_string_value(v);

		if (name != NULL && json_object_get(result, name) != NULL)
			report_mismatch(r, name, NULL, json_object_get(result, name));
	}
	if (json_is_true(json_object_get(expect, "exact"))) {
		json_object_foreach((json_t *)result, key, v) {
			if (json_object_get(want_md, key) == NULL)
				report_mismatch(r, key, NULL, v);
		}
	}
}

static void run_only_refs(const json_t *fx, struct report *r)
{
	const json_t *base = json_object_get(fx, "base");
	const json_t *expect = json_object_get(fx, "expect");
	json_t *result = tablemeta_only_ref_snapshots(base);

	if (result == NULL)
		report_add(r, "tablemeta_only_ref_snapshots returned NULL");
	else
		check_success(expect, result, NULL, NULL, r);
	json_decref(result);
}

static void run_commit(const json_t *fx, struct report *r)
{
	const json_t *base = json_object_get(fx, "base");
	const json_t *expect = json_object_get(fx, "expect");
	const json_t *reqs = json_object_get(fx, "requirements");
	const json_t *updates = json_object_get(fx, "updates");
	const char *base_location = json_string_value(json_object_get(fx, "base-location"));
	int64_t now_ms = json_integer_value(json_object_get(fx, "now-ms"));
	bool create = json_is_true(json_object_get(fx, "create"));
	struct floe_error err;
	json_t *empty = json_array();
	json_t *result = NULL;
	bool changed = false;

	floe_error_clear(&err);
	if (json_is_null(base))
		base = NULL;
	if (reqs == NULL)
		reqs = empty;
	if (!create && base == NULL) {
		report_add(r, "fixture has no base and is not a create");
		goto done;
	}
	if (!tablemeta_check_requirements(base, reqs, &err)) {
		check_failure(expect, &err, r);
		goto done;
	}
	if (create)
		result = tablemeta_apply_create(updates,
						json_string_value(json_object_get(fx, "uuid")),
						now_ms, &err);
	else
		result = tablemeta_apply(base, base_location, updates, now_ms, &changed, &err);
	if (result == NULL)
		check_failure(expect, &err, r);
	else
		check_success(expect, result, base, create ? NULL : &changed, r);
	const json_t *want_dropped = json_object_get(expect, "dropped-files");
	if (result != NULL && want_dropped != NULL) {
		json_t *dropped = tablemeta_dropped_metadata_files(base, result);
		if (!json_equal(dropped, want_dropped))
			report_mismatch(r, "dropped-files", want_dropped, dropped);
		json_decref(dropped);
	}
done:
	json_decref(result);
	json_decref(empty);
}

static void run_create(const json_t *fx, struct report *r)
{
	const json_t *expect = json_object_get(fx, "expect");
	struct floe_error err;
	json_t *result;

	floe_error_clear(&err);
	result = tablemeta_create(json_object_get(fx, "request"),
				  json_string_value(json_object_get(fx, "location")),
				  json_string_value(json_object_get(fx, "uuid")),
				  json_integer_value(json_object_get(fx, "now-ms")), &err);
	if (result == NULL)
		check_failure(expect, &err, r);
	else
		check_success(expect, result, NULL, NULL, r);
	json_decref(result);
}

/* Loads and runs one fixture; fails the test with every reason found. */
static void run_fixture(const struct fixture *f, bool is_create)
{
	static struct report r;
	json_error_t jerr;
	json_t *fx = NULL;
	json_t *before = NULL;
	char desc[256];
	const char *name;

	memset(&r, 0, sizeof(r));
	cr_assert(f->path[0] != '\0', "no fixtures found under %s", FLOE_FIXTURE_DIR);
	name = strrchr(f->path, '/');
	name = name != NULL ? name + 1 : f->path;
	fx = json_load_file(f->path, 0, &jerr);
	cr_assert_not_null(fx, "%s: invalid JSON at line %d: %s", name, jerr.line, jerr.text);
	/* copied: the failure message outlives fx */
	snprintf(desc, sizeof(desc), "%s",
		 json_string_value(json_object_get(fx, "description")) != NULL
			 ? json_string_value(json_object_get(fx, "description"))
			 : "no description");
	/* The functions take const input: the fixture must come out as it
	 * went in (base, request, updates alike). */
	before = json_deep_copy(fx);

	if (is_create)
		run_create(fx, &r);
	else if (json_is_true(json_object_get(fx, "only-ref-snapshots")))
		run_only_refs(fx, &r);
	else
		run_commit(fx, &r);
	if (!json_equal(before, fx))
		report_add(&r, "the input (base, request or updates) was modified");

	json_decref(before);
	json_decref(fx);
	cr_assert(r.count == 0, "%s (%s): %d problem(s):%s", name, desc, r.count, r.buf);
}

static void free_fixtures(struct criterion_test_params *crp)
{
	cr_free(crp->params);
}

/* The sorted fixture files of one subdirectory, in cr_malloc memory. A
 * missing or empty directory yields one empty path, which fails. */
static struct fixture *list_fixtures(const char *subdir, size_t *count)
{
	char pattern[FIXTURE_PATH_MAX];
	struct fixture *list;
	glob_t g;
	size_t n = 0;
	size_t i;

	snprintf(pattern, sizeof(pattern), "%s/%s/*.json", FLOE_FIXTURE_DIR, subdir);
	memset(&g, 0, sizeof(g));
	if (glob(pattern, 0, NULL, &g) == 0)
		n = g.gl_pathc;
	list = cr_malloc(sizeof(*list) * (n > 0 ? n : 1));
	memset(list, 0, sizeof(*list) * (n > 0 ? n : 1));
	for (i = 0; i < n; i++)
		snprintf(list[i].path, sizeof(list[i].path), "%s", g.gl_pathv[i]);
	globfree(&g);
	*count = n > 0 ? n : 1;
	return list;
}

ParameterizedTestParameters(tablemeta, commit)
{
	size_t n;
	struct fixture *list = list_fixtures("commit", &n);

	return cr_make_param_array(struct fixture, list, n, free_fixtures);
}

ParameterizedTest(struct fixture *f, tablemeta, commit)
{
	run_fixture(f, false);
}

ParameterizedTestParameters(tablemeta, create)
{
	size_t n;
	struct fixture *list = list_fixtures("create", &n);

	return cr_make_param_array(struct fixture, list, n, free_fixtures);
}

ParameterizedTest(struct fixture *f, tablemeta, create)
{
	run_fixture(f, true);
}
