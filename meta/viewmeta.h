/*
 * viewmeta.h - Iceberg view metadata: building it for a new view,
 * applying a view commit to it (requirements, then updates, in order) as
 * Java's ViewMetadata.Builder does, and reading and writing the metadata
 * document. Metadata is handled as JSON (jansson) so that fields floe does
 * not interpret survive untouched.
 *
 * Pure functions: no I/O, no clock, no randomness (time and uuids are
 * parameters). The commit path of a view is that of a table: parse the
 * current document (viewmeta_parse), viewmeta_check_requirements,
 * viewmeta_apply, viewmeta_serialise, then write and swap.
 */
#ifndef FLOE_VIEWMETA_H
#define FLOE_VIEWMETA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

#include "error.h"

/* The view format versions there are (1 only). */
#define VIEWMETA_MAX_FORMAT_VERSION 1

/* How many versions a view keeps without version.history.num-entries. */
#define VIEWMETA_HISTORY_DEFAULT 10

/* The largest metadata document viewmeta_parse reads. */
#define VIEWMETA_MAX_DOCUMENT_BYTES ((size_t)16 * 1024 * 1024)

/*
 * Builds the metadata of a new view from a createView request body
 * ({name, location?, schema, view-version, properties?}), as Java's
 * BaseViewBuilder.create: format version 1, the schema as sent (its
 * schema-id, 0 when absent; field ids are not reassigned), version 1 bound
 * to that schema at now_ms, one version-log entry. location is the view
 * location to use when the request has none (no trailing '/'); uuid the
 * new view uuid. Returns new metadata, or NULL with FE_BAD_REQUEST.
 */
json_t *viewmeta_create(const json_t *request, const char *location, const char *uuid,
			int64_t now_ms, struct floe_error *err) FLOE_WUR;

/*
 * Checks every requirement of a view commit (only assert-view-uuid
 * exists) against base. A failed one is FE_COMMIT_FAILED (409) in
 * Iceberg's words ("Requirement failed: view UUID does not match: expected
 * A != B"); an unknown or malformed one is FE_BAD_REQUEST.
 */
bool viewmeta_check_requirements(const json_t *base, const json_t *requirements,
				 struct floe_error *err) FLOE_WUR;

/* Checks that updates is an array of objects whose actions are all view
 * actions, before anything else is looked at (FE_BAD_REQUEST). */
bool viewmeta_check_actions(const json_t *updates, struct floe_error *err) FLOE_WUR;

/*
 * Applies updates (a JSON array of view updates) in order to a copy of
 * base (valid view metadata, as viewmeta_parse gives). now_ms is the
 * commit time (the version-log entry of a version made current again).
 * On success returns the new metadata (a new reference, valid) and sets
 * *changed; when nothing changed the result equals base. On failure
 * returns NULL with FE_BAD_REQUEST (an invalid update).
 */
json_t *viewmeta_apply(const json_t *base, const json_t *updates, int64_t now_ms, bool *changed,
		       struct floe_error *err) FLOE_WUR;

/*
 * Checks that m is view metadata floe can work on: format version 1, a
 * uuid, a location, schemas (each valid, ids unique), versions (each
 * valid, ids unique, schemas known), the current version among them, a
 * version log, string properties. FE_BAD_REQUEST naming what is wrong.
 */
bool viewmeta_validate(const json_t *m, struct floe_error *err) FLOE_WUR;

/*
 * Reads a view metadata document (len bytes of JSON, at most
 * VIEWMETA_MAX_DOCUMENT_BYTES) and validates it. Returns new metadata, or
 * NULL with FE_BAD_REQUEST ("invalid view metadata: ..."); a caller
 * reading its own stored file answers that as FE_INTERNAL.
 */
json_t *viewmeta_parse(const char *text, size_t len, struct floe_error *err) FLOE_WUR;

/*
 * The metadata document of m: compact JSON, the spec's fields first in
 * the spec's order ("view-uuid", "format-version", "location", "schemas",
 * "current-version-id", "versions", "version-log", "properties"), then
 * any other field m carries. New string (caller frees; *len its length),
 * or NULL with FE_INTERNAL when out of memory.
 */
char *viewmeta_serialise(const json_t *m, size_t *len, struct floe_error *err) FLOE_WUR;

/* The current version of valid metadata m (borrowed), or NULL. */
const json_t *viewmeta_current_version(const json_t *m);

#endif
