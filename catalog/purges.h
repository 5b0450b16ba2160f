/*
 * purges.h - the purges of dropped tables as an operator sees them:
 * pending or failed, oldest first. Read-only; the janitor (janitor.h)
 * does the purging.
 */
#ifndef FLOE_PURGES_H
#define FLOE_PURGES_H

#include <jansson.h>

#include "error.h"

struct store;

/* The oldest limit purges: {"purges": [{"location", "table-uuid",
 * "dropped-at", "attempts", "state", "last-error"?}]} (new reference). */
json_t *purges_list(struct store *s, int limit, struct floe_error *err) FLOE_WUR;

#endif
