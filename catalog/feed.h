/*
 * feed.h - the change feed: the Iceberg REST events endpoint over the
 * outbox that every change writes in its own transaction.
 */
#ifndef FLOE_FEED_H
#define FLOE_FEED_H

#include <jansson.h>

#include "ports.h"

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

/* The filter fields of a QueryEventsRequest (operation-types,
 * object-types, catalog-objects-by-name, catalog-objects-by-id), each
 * NULL when absent or empty, as the store's feed_query takes them. */
struct feed_filter {
	char *operations;
	char *object_types;
	char *objects_by_name;
	char *uuids;
};

/* Reads the filter fields of body (a JSON object; borrowed) into f
 * (feed_filter_clear after a success). FE_BAD_REQUEST names the field. */
bool feed_filter_parse(const json_t *body, struct feed_filter *f, struct floe_error *err) FLOE_WUR;

void feed_filter_clear(struct feed_filter *f);

/* Points q's filters at f's (borrowed for as long as q is used). */
void feed_filter_apply(const struct feed_filter *f, struct feed_query *q);

/* One event as the events endpoint answers it (new reference, NULL when
 * out of memory). */
json_t *feed_event_json(const struct feed_row *e);

#endif
