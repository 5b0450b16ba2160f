/*
 * requirements.c - the requirements of a commit, checked against the
 * current metadata before any update, as Iceberg's UpdateRequirement
 * does: one table of types, each failure a 409 naming the expected and
 * the actual value. Not the updates (updates.c).
 */
#include "meta_internal.h"

#include "json.h"
#include "tablemeta.h"
#include "viewmeta.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

struct requirement;

typedef bool requirement_fn(const json_t *base, const json_t *r, const struct requirement *q,
			    struct floe_error *err);

/* One type of requirement: its check, and for the ones that compare an
 * id with a metadata field, which field and how messages call it. */
struct requirement {
	const char *type;
	requirement_fn *check;
	const char *field;    /* the requirement's field */
	const char *meta_key; /* the metadata field it is compared with */
	const char *what;     /* "current schema" in "current schema changed" */
};

/* A failed requirement, in the words of Iceberg's UpdateRequirement
 * ("Requirement failed: current schema changed: expected id 1 != 2"),
 * which clients match on. */
static bool req_failed(struct floe_error *err, const char *fmt, ...) FLOE_PRINTF(2, 3);

static bool req_failed(struct floe_error *err, const char *fmt, ...)
{
	va_list ap;
	char msg[FLOE_ERROR_MESSAGE_MAX - 64];

	va_start(ap, fmt);
	(void)vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return floe_err(err, FE_COMMIT_FAILED, "Requirement failed: %s", msg);
}

static bool check_uuid(const json_t *base, const json_t *r, const struct requirement *q,
		       struct floe_error *err)
{
	const char *want = fjson_get_str(r, "uuid");
	const char *have = fjson_get_str(base, q->meta_key);

	if (want == NULL)
		return meta_bad(err, "%s: missing required field 'uuid'", q->type);
	if (have == NULL || strcasecmp(want, have) != 0)
		return req_failed(err, "%s does not match: expected %s != %s", q->what,
				  have ? have : "(none)", want);
	return true;
}

/* assert-ref-snapshot-id against the ref cur (NULL: absent). */
static bool check_ref_against(const json_t *cur, const char *ref, bool present, int64_t want,
			      struct floe_error *err)
{
	const char *kind = cur ? fjson_get_str(cur, "type") : NULL;

	if (kind == NULL)
		kind = "branch";
	if (!present && cur != NULL)
		return req_failed(err, "%s %s was created concurrently", kind, ref);
	if (present && cur == NULL)
		return req_failed(err, "branch or tag %s is missing, expected %" PRId64, ref, want);
	if (present && fjson_int_or(cur, "snapshot-id", -1) != want)
		return req_failed(err, "%s %s has changed: expected id %" PRId64 " != %" PRId64,
				  kind, ref, want, fjson_int_or(cur, "snapshot-id", -1));
	return true;
}

static bool check_ref(const json_t *base, const json_t *r, const struct requirement *q,
		      struct floe_error *err)
{
	const char *ref = fjson_get_str(r, "ref");
	bool present;
	int64_t want = 0;
	json_t *synth = NULL;

	if (ref == NULL)
		return meta_bad(err, "assert-ref-snapshot-id: missing required field 'ref'");
	if (!fjson_get_int(r, "snapshot-id", q->type, &present, &want, err))
		return false;
	json_t *cur = json_object_get(json_object_get(base, "refs"), ref);
	/* Metadata written before refs existed: main is the current snapshot. */
	if (json_object_get(base, "refs") == NULL && strcmp(ref, "main") == 0 &&
	    fjson_int_or(base, "current-snapshot-id", -1) != -1) {
		synth = meta_main_ref(fjson_int_or(base, "current-snapshot-id", -1));
		cur = synth;
	}
	bool held = check_ref_against(cur, ref, present, want, err);
	json_decref(synth);
	return held;
}

/* The id a requirement asserts, as checked against a metadata field. */
static bool check_id(const json_t *base, const json_t *r, const struct requirement *q,
		     struct floe_error *err)
{
	int64_t want = 0;

	if (!fjson_get_int(r, q->field, q->type, NULL, &want, err))
		return false;
	int64_t have = fjson_int_or(base, q->meta_key, -1);
	if (want != have)
		return req_failed(err, "%s changed: expected id %" PRId64 " != %" PRId64, q->what,
				  want, have);
	return true;
}

static const struct requirement requirement_types[] = {
	{ "assert-table-uuid", check_uuid, NULL, "table-uuid", "UUID" },
	{ "assert-ref-snapshot-id", check_ref, NULL, NULL, NULL },
	{ "assert-last-assigned-field-id", check_id, "last-assigned-field-id", "last-column-id",
	  "last assigned field id" },
	{ "assert-current-schema-id", check_id, "current-schema-id", "current-schema-id",
	  "current schema" },
	{ "assert-last-assigned-partition-id", check_id, "last-assigned-partition-id",
	  "last-partition-id", "last assigned partition id" },
	{ "assert-default-spec-id", check_id, "default-spec-id", "default-spec-id",
	  "default partition spec" },
	{ "assert-default-sort-order-id", check_id, "default-sort-order-id",
	  "default-sort-order-id", "default sort order" },
};

/* The one requirement of a view commit, in the words of Java's
 * UpdateRequirement.AssertViewUUID. */
static const struct requirement view_requirement_types[] = {
	{ "assert-view-uuid", check_uuid, NULL, "view-uuid", "view UUID" },
};

static const struct requirement *requirement_find(const struct requirement *types, size_t n,
						  const char *type)
{
	for (size_t i = 0; i < n; i++) {
		if (strcmp(types[i].type, type) == 0)
			return &types[i];
	}
	return NULL;
}

/* The type of requirement r, or NULL with FE_BAD_REQUEST (i: its place). */
static const char *requirement_type(const json_t *r, size_t i, struct floe_error *err)
{
	const char *type = fjson_get_str(r, "type");

	if (!json_is_object(r) || type == NULL)
		meta_bad(err, "requirement %zu needs a string 'type'", i);
	return type;
}

/* Checks every requirement against types (n of them); with creates,
 * assert-create is the one for a base that does not exist (NULL). */
static bool check_all(const json_t *base, const json_t *requirements,
		      const struct requirement *types, size_t n, bool creates,
		      struct floe_error *err)
{
	size_t i;
	json_t *r;

	if (requirements == NULL || json_is_null(requirements))
		return true;
	if (!json_is_array(requirements))
		return meta_bad(err, "'requirements' must be an array");
	json_array_foreach(requirements, i, r) {
		const char *type = requirement_type(r, i, err);
		if (type == NULL)
			return false;
		/* The one requirement of a table that does not exist yet. */
		if (creates && strcmp(type, "assert-create") == 0) {
			if (base != NULL)
				return req_failed(err, "table already exists");
			continue;
		}
		if (base == NULL)
			return meta_bad(
				err,
				"requirement %s needs an existing table; only assert-create applies to a new one",
				type);
		const struct requirement *q = requirement_find(types, n, type);
		if (q == NULL)
			return meta_bad(err, "unknown requirement type '%s'", type);
		if (!q->check(base, r, q, err))
			return false;
	}
	return true;
}

bool tablemeta_check_requirements(const json_t *base, const json_t *requirements,
				  struct floe_error *err)
{
	return check_all(base, requirements, requirement_types,
			 sizeof(requirement_types) / sizeof(requirement_types[0]), true, err);
}

bool viewmeta_check_requirements(const json_t *base, const json_t *requirements,
				 struct floe_error *err)
{
	return check_all(base, requirements, view_requirement_types,
			 sizeof(view_requirement_types) / sizeof(view_requirement_types[0]), false,
			 err);
}
