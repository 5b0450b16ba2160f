/*
 * position.h - a reader's place in one of floe's logs kept in (xid, id)
 * order (the change feed, the audit log, an event subscription), as the
 * token a client keeps: "<xid>.<id>.<timeline>.<system identifier>". The
 * database and timeline it was issued on let a position from a history
 * lost in a failover be refused instead of read on from past the new
 * primary's events. Not for the pages of other listings (their keys are
 * names or ids that no failover hands out again).
 */
#ifndef FLOE_POSITION_H
#define FLOE_POSITION_H

#include <stdbool.h>
#include <stddef.h>

#include "error.h"
#include "ports.h"

struct store;

/* The longest token floe issues, with its NUL. */
#define POSITION_TOKEN_MAX 96

/* The log a position is in: what its event is checked against, and what
 * a refusal tells the reader to do instead. */
enum position_log {
	POSITION_CHANGE_FEED, /* change_events: the events endpoint, subscriptions */
	POSITION_AUDIT_LOG,   /* audit_events: GET /audit-log */
};

/* Reads token into *pos: "<xid>.<id>.<timeline>.<system identifier>" as
 * floe issues it, or "<xid>.<id>" as floe issued it before the database's
 * identity was part of it (pos->system "": taken as of the current
 * timeline). False, *pos zeroed, when it is neither; the caller words the
 * refusal with its field's name. */
bool position_parse(const char *token, struct feed_position *pos) FLOE_WUR;

/* Whether reading log on from pos misses no event on this database (a
 * failover may have lost the history it points into); *here filled with
 * where the log is read now. FE_BAD_REQUEST names field and says why not
 * (a position past this database's last event, one of another database,
 * one of an earlier timeline after the switch) and how to read again. */
bool position_check(struct store *s, enum position_log log, const struct feed_position *pos,
		    const char *field, struct feed_here *here, struct floe_error *err) FLOE_WUR;

/* Where positions are issued now: this database's identity and timeline
 * into *here. */
bool position_here(struct store *s, struct feed_here *here, struct floe_error *err) FLOE_WUR;

/* Writes the token of position (xid, id) on here's timeline into out
 * (cap bytes; POSITION_TOKEN_MAX is enough). xid "" is "0". */
void position_format(char *out, size_t cap, const char *xid, long long id,
		     const struct feed_here *here);

#endif
