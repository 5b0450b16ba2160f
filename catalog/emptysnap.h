/*
 * emptysnap.h - the empty snapshot a branch of a table without snapshots
 * starts from (as Iceberg's createBranch does on an empty table): no data
 * files, and a manifest list (an Avro file) with no manifests, so that
 * engines writing to the branch read a real parent.
 */
#ifndef FLOE_EMPTYSNAP_H
#define FLOE_EMPTYSNAP_H

#include <stdbool.h>
#include <jansson.h>

#include "error.h"

/* A new snapshot for metadata m (the Iceberg Snapshot JSON, new
 * reference) whose manifest list is written under m's location;
 * *manifest_list receives that file's URL (caller frees; remove it when
 * the snapshot is not committed). */
json_t *emptysnap_create(const json_t *m, long long now_ms, char **manifest_list,
			 struct floe_error *err) FLOE_WUR;

#endif
