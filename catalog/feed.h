/*
 * feed.h - the change feed: the Iceberg REST events endpoint over the
 * outbox that every change writes in its own transaction.
 */
#ifndef FLOE_FEED_H
#define FLOE_FEED_H

#include <jansson.h>

#include "error.h"

struct store;

#define FEED_PAGE_DEFAULT 100
#define FEED_PAGE_MAX 1000

/*
 * POST /v1/{prefix}/events: body is a QueryEventsRequest (borrowed).
 * The QueryEventsResponse (new reference): the events after the
 * continuation token that match every filter, oldest first, and the
 * token to resume from (given even when no event is new, so a reader
 * polls with it). FE_BAD_REQUEST names a field that is not as the
 * request defines it.
 */
json_t *feed_query(struct store *s, const json_t *body, struct floe_error *err) FLOE_WUR;

#endif
