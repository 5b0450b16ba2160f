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

/* The longest continuation token floe issues, with its NUL. */
#define FEED_TOKEN_MAX 96

/* Reads a continuation token into q's position: "<xid>.<id>.<timeline>.
 * <system identifier>" as floe issues it, or "<xid>.<id>" as floe issued
 * it before the database's identity was part of it (taken as of the
 * current timeline). FE_BAD_REQUEST when it is neither. */
bool feed_token_parse(const char *token, struct feed_query *q, struct floe_error *err) FLOE_WUR;

/* Whether reading on from q's position misses no event on this database
 * (a failover may have lost the history it points into); *here filled
 * with where the feed is read. FE_BAD_REQUEST names field and says why
 * not: a position past this database's last event, one of another
 * database, one of an earlier timeline after the switch. */
bool feed_position_check(struct store *s, const struct feed_query *q, const char *field,
			 struct feed_here *here, struct floe_error *err) FLOE_WUR;

/* Writes the token of position (xid, id) on here's timeline into out
 * (cap bytes, FEED_TOKEN_MAX is enough). */
void feed_token_format(char *out, size_t cap, const char *xid, long long id,
		       const struct feed_here *here);

/* One event as the events endpoint answers it (new reference, NULL when
 * out of memory). */
json_t *feed_event_json(const struct feed_row *e);

#endif
