/*
 * tablemeta.h - Iceberg table metadata: building it for a new table and
 * applying commits to it (requirements, then updates, in order), exactly
 * as the Iceberg Java reference does. Metadata is handled as JSON (jansson)
 * so that fields floe does not interpret survive untouched.
 *
 * Pure functions: no I/O, no clock, no randomness (time and uuids are
 * parameters), so every rule is unit-tested from JSON fixtures.
 */
#ifndef FLOE_TABLEMETA_H
#define FLOE_TABLEMETA_H

#include <stdbool.h>
#include <stdint.h>
#include <jansson.h>

#include "error.h"

#define TABLEMETA_MAX_FORMAT_VERSION 3

/*
 * Builds the metadata of a new table from a createTable request body
 * ({name, location?, schema, partition-spec?, write-order?, properties?}).
 * location is the table location to use when the request has none (no
 * trailing '/'); uuid the new table uuid; now_ms the creation time.
 * Field ids, spec field ids and sort order ids are assigned afresh.
 * Returns new metadata, or NULL with FE_BAD_REQUEST.
 */
json_t *tablemeta_create(const json_t *request, const char *location, const char *uuid,
			 int64_t now_ms, struct floe_error *err) FLOE_WUR;

/*
 * Checks every requirement of a commit against base (NULL: the table does
 * not exist yet). A failed requirement is FE_COMMIT_FAILED (409) naming it
 * with the expected and the actual value; an unknown or malformed one is
 * FE_BAD_REQUEST.
 */
bool tablemeta_check_requirements(const json_t *base, const json_t *requirements,
				  struct floe_error *err) FLOE_WUR;

/* Checks that updates is an array of objects whose actions are all known,
 * before anything else is looked at (FE_BAD_REQUEST). */
bool tablemeta_check_actions(const json_t *updates, struct floe_error *err) FLOE_WUR;

/*
 * Applies updates (a JSON array of update objects) in order to a copy of
 * base. base_location is the metadata file base was read from (NULL when
 * base has never been written, as in a staged create). now_ms is the
 * commit time. On success returns the new metadata (a new reference) and
 * sets *changed; when nothing changed the result equals base and no new
 * metadata-log entry or timestamp is added. On failure returns NULL with
 * FE_BAD_REQUEST (an invalid update) or FE_COMMIT_FAILED (a stale
 * sequence number or row id: the client should retry).
 */
json_t *tablemeta_apply(const json_t *base, const char *base_location, const json_t *updates,
			int64_t now_ms, bool *changed, struct floe_error *err) FLOE_WUR;

/*
 * The metadata of a table created by a commit carrying assert-create (a
 * staged create): the updates are applied to an empty table of the format
 * version of the first upgrade-format-version update (else 2). uuid is
 * the table uuid when no assign-uuid sets one (NULL: one must).
 */
json_t *tablemeta_apply_create(const json_t *updates, const char *uuid, int64_t now_ms,
			       struct floe_error *err) FLOE_WUR;

/*
 * The metadata files a commit from base to m lets go of: with
 * write.metadata.delete-after-commit.enabled=true in m (case-insensitive,
 * as Java reads a boolean), the files of base's metadata-log that m's
 * metadata-log no longer holds (it keeps the newest
 * write.metadata.previous-versions-max), as Java's
 * CatalogUtil.deleteRemovedMetadataFiles chooses them; otherwise none.
 * Never a file m's log still names. A new array of strings, or NULL when
 * out of memory.
 */
json_t *tablemeta_dropped_metadata_files(const json_t *base, const json_t *m);

/* The snapshot with this id in metadata m (borrowed), or NULL. */
const json_t *tablemeta_snapshot(const json_t *m, long long id);

/* m's current snapshot id; -1 when it has none (-1, null or absent). */
long long tablemeta_current_snapshot(const json_t *m);

/* The refs m sets that base (may be NULL) did not have at the same
 * snapshot, 0x1F-joined ("" when none; caller frees), as the commit log
 * records them; NULL when out of memory. */
char *tablemeta_refs_set(const json_t *base, const json_t *m);

/*
 * The loadTable form of metadata with snapshots=refs: only snapshots that
 * some ref points at directly are kept. Returns a new reference.
 */
json_t *tablemeta_only_ref_snapshots(const json_t *metadata);

#endif
