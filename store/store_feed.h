/*
 * store_feed.h - the store's change feed (change_events, migration 0020)
 * and event subscriptions (event_subscriptions, migration 0022). Part of
 * store.h, which includes it; kept apart so that header stays readable.
 */
#ifndef FLOE_STORE_FEED_H
#define FLOE_STORE_FEED_H

#include <stdbool.h>
#include <stddef.h>

#include "error.h"
#include "ident.h"

struct store;

/* One event of the change feed (change_events). */
struct feed_row {
	long long id;
	char xid[24];
	long long at_ms;
	char uuid[40];         /* "" when the event names none */
	long long xact_events; /* events its transaction wrote */
	char *operation;
	char *object_type;
	struct ns_ident ns;
	char *name;      /* NULL for a namespace */
	char *principal; /* NULL when not known */
	char *details;   /* JSON text */
};

void store_feed_row_clear(struct feed_row *row);
void store_feed_rows_free(struct feed_row *rows, size_t count);

/* A reader's place in a log kept in (xid, id) order (the change feed,
 * the audit log): after event (xid, id), as issued on a database's
 * timeline. */
struct feed_position {
	char xid[24]; /* "" with id 0: from the start */
	long long id;
	char system[24]; /* the issuing database; "" for a token without one */
	long timeline;
};

/* What a read of the feed asks for; each NULL (since_ms < 0) filter is
 * off. Lists are joined by \x1f; objects_by_name is a JSON array of
 * arrays of names. */
struct feed_query {
	struct feed_position after;
	long long since_ms;
	const char *operations;
	const char *object_types;
	const char *objects_by_name;
	const char *uuids;
};

/* The events after the query's position that match it, in (xid, id)
 * order, at most limit (*more when there are further ones). */
bool store_feed_list(struct store *s, const struct feed_query *q, long limit,
		     struct feed_row **rows, size_t *count, bool *more,
		     struct floe_error *err) FLOE_WUR;

/* Where the feed is read: this database's system identifier and the
 * timeline it writes on. */
struct feed_here {
	char system[24];
	long timeline;
};

enum feed_verdict {
	FEED_POSITION_OK,
	FEED_POSITION_BEYOND,         /* past what this database has: a lost future */
	FEED_POSITION_OTHER_DATABASE, /* issued by another database */
	FEED_POSITION_LOST,           /* an earlier timeline's, not in this one's history */
};

/* Where a reader of the change feed at pos stands on this database:
 * *here filled, *verdict whether reading on from pos misses nothing. A
 * position without a system identifier is taken as of this timeline.
 * store_event_position (store.h) is the same for the audit log. */
bool store_feed_position(struct store *s, const struct feed_position *pos, struct feed_here *here,
			 enum feed_verdict *verdict, struct floe_error *err) FLOE_WUR;

/* Names what the open transaction does for the change feed's events of
 * table creates and commits (register-table), until it ends. Only inside
 * store_begin ... store_commit. */
bool store_feed_operation(struct store *s, const char *operation, struct floe_error *err) FLOE_WUR;

/* The janitor: removes up to limit events older than older_than_s. */
bool store_feed_expire(struct store *s, long long older_than_s, int limit, long *deleted,
		       struct floe_error *err) FLOE_WUR;

/* One event subscription (migration 0022). Times are ms since the
 * epoch; -1 (or 0 for the error's time) when there is none. */
struct sub_row {
	char id[40];
	char *name;
	char *url;
	char *secret; /* sealed; only from store_sub_claim */
	char *filter; /* JSON text: the events endpoint's filter fields */
	long timeout_ms;
	int max_attempts;
	long long created_at_ms;
	char *created_by; /* NULL: authentication was off */
	char position_xid[24];
	long long position_id; /* delivered up to (position_xid, position_id) */
	long long delivered;
	long long last_delivered_at_ms;
	bool dead; /* the dead-letter state: the next event is held */
	int attempts;
	long long next_attempt_at_ms;
	long long last_error_event; /* -1: no failure yet */
	int last_error_status;      /* 0: no HTTP answer */
	char *last_error_reason;
	long long last_error_at_ms;
	long long held_since_ms;
	char *warehouse; /* "" the default */
};

void store_sub_row_clear(struct sub_row *row);
void store_sub_rows_free(struct sub_row *rows, size_t count);

/* A new subscription of s's warehouse from row's id, name, url, secret
 * (sealed), filter, timeout_ms, max_attempts and created_by, starting
 * after (start_xid, start_id), or (start_xid NULL) after every event
 * the feed shows now. */
bool store_sub_insert(struct store *s, const struct sub_row *row, const char *start_xid,
		      long long start_id, struct floe_error *err) FLOE_WUR;

/* The subscriptions of s's warehouse, oldest first (store_sub_rows_free). */
bool store_sub_list(struct store *s, struct sub_row **rows, size_t *count,
		    struct floe_error *err) FLOE_WUR;

/* *found false when s's warehouse has no subscription id; else *row is
 * filled (store_sub_row_clear). */
bool store_sub_get(struct store *s, const char *id, struct sub_row *row, bool *found,
		   struct floe_error *err) FLOE_WUR;

bool store_sub_delete(struct store *s, const char *id, bool *deleted,
		      struct floe_error *err) FLOE_WUR;

/* A dead-lettered subscription becomes active again, retrying its held
 * event or (skip) past it; *resumed false when id is no dead-lettered
 * subscription of s's warehouse. */
bool store_sub_resume(struct store *s, const char *id, bool skip, bool *resumed,
		      struct floe_error *err) FLOE_WUR;

/* Leases up to limit due active subscriptions of every warehouse to
 * owner, for each one's timeout and margin_s more (secret filled). */
bool store_sub_claim(struct store *s, const char *owner, int margin_s, int limit,
		     struct sub_row **rows, size_t *count, struct floe_error *err) FLOE_WUR;

/* The receiver acknowledged event (xid, event_id): the position moves
 * there. *kept false when owner's lease was lost (nothing written). */
bool store_sub_delivered(struct store *s, const char *id, const char *owner, const char *xid,
			 long long event_id, bool *kept, struct floe_error *err) FLOE_WUR;

/* A delivery of event (xid, event_id) failed: counted, retried after
 * about retry_ms, or held (*dead) when it was the last attempt allowed.
 * *kept false when owner's lease was lost. */
bool store_sub_failed(struct store *s, const char *id, const char *owner, const char *xid,
		      long long event_id, long http_status, const char *reason, long long retry_ms,
		      bool *kept, bool *dead, int *attempts, struct floe_error *err) FLOE_WUR;

/* owner had nothing to deliver: its lease ends. */
bool store_sub_idle(struct store *s, const char *id, const char *owner,
		    struct floe_error *err) FLOE_WUR;

/* Subscriptions of every warehouse by state. */
bool store_sub_counts(struct store *s, long long *active, long long *dead,
		      struct floe_error *err) FLOE_WUR;

#endif
