/*
 * wapint.h - what write-audit-publish over one table (wap.c) and over
 * many (release.c) share; not an interface for other layers.
 */
#ifndef FLOE_WAPINT_H
#define FLOE_WAPINT_H

#include <stddef.h>
#include <jansson.h>

#include "error.h"

/* A run (a struct run_row) as the API shows it (new reference). */
json_t *wap_run_json(const void *row);

/* The schema snapshot snap of metadata m was written with, else the
 * current one (borrowed; JSON null when there is none). */
const json_t *wap_snapshot_schema(const json_t *m, const json_t *snap);

/* Counts how a publish ended (out: its answer, else err) in
 * floe_wap_runs_total (lib/metric.h). */
void wap_count_publish(const json_t *out, const struct floe_error *err);

#endif
