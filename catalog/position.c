/*
 * position.c - positions in floe's (xid, id) logs as tokens, and the
 * verdict on one after a failover (position.h). The verdict itself is the
 * store's (POSITION_VERDICT over feed_timelines, migration 0032); here it
 * is worded for the client.
 */
#include "position.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Reads the digits at *p up to a '.' or the end into out (cap bytes with
 * the NUL); *p moves past them and the dot. */
static bool token_part(const char **p, char *out, size_t cap)
{
	size_t n = 0;

	while ((*p)[n] >= '0' && (*p)[n] <= '9')
		n++;
	if (n == 0 || n >= cap || ((*p)[n] != '.' && (*p)[n] != '\0'))
		return false;
	memcpy(out, *p, n);
	out[n] = '\0';
	*p += n + ((*p)[n] == '.' ? 1 : 0);
	return true;
}

bool position_parse(const char *t, struct feed_position *pos)
{
	char id[24], tl[12];
	const char *p = t;

	memset(pos, 0, sizeof(*pos));
	/* "<xid>.<id>", and since migration 0032 ".<timeline>.<system>". */
	bool ok = token_part(&p, pos->xid, sizeof(pos->xid)) && p[-1] == '.' &&
		  token_part(&p, id, sizeof(id));
	if (ok && *p != '\0')
		ok = p[-1] == '.' && token_part(&p, tl, sizeof(tl)) && p[-1] == '.' &&
		     token_part(&p, pos->system, sizeof(pos->system)) && *p == '\0';
	if (ok) {
		/* Each within its column's range (xid8, bigint, int), so that
		 * no token reaches PostgreSQL as a value it cannot hold. */
		errno = 0;
		(void)strtoull(pos->xid, NULL, 10);
		pos->id = strtoll(id, NULL, 10);
		long long timeline = pos->system[0] != '\0' ? strtoll(tl, NULL, 10) : 0;
		ok = errno == 0 && timeline <= INT_MAX;
		pos->timeline = ok ? (long)timeline : 0;
	}
	if (!ok)
		memset(pos, 0, sizeof(*pos));
	return ok;
}

bool position_check(struct store *s, enum position_log log, const struct feed_position *pos,
		    const char *field, struct feed_here *here, struct floe_error *err)
{
	enum feed_verdict verdict = FEED_POSITION_OK;
	const char *again = log == POSITION_AUDIT_LOG
				    ? "read the audit log again from a time (since) or the start"
				    : "read the feed again from a timestamp or the start";
	bool ok = log == POSITION_AUDIT_LOG ? store_event_position(s, pos, here, &verdict, err)
					    : store_feed_position(s, pos, here, &verdict, err);

	if (!ok)
		return false;
	switch (verdict) {
	case FEED_POSITION_OK:
		return true;
	case FEED_POSITION_BEYOND:
		return floe_err(err, FE_BAD_REQUEST,
				"%s is past the last event this database has (a history lost "
				"in a failover or a restore); %s",
				field, again);
	case FEED_POSITION_OTHER_DATABASE:
		return floe_err(err, FE_BAD_REQUEST,
				"%s was issued by another catalog database; %s", field, again);
	case FEED_POSITION_LOST:
		break;
	}
	return floe_err(err, FE_BAD_REQUEST,
			"%s points into a history this database no longer has (it failed "
			"over to timeline %ld and the events after the switch were lost); %s",
			field, here->timeline, again);
}

bool position_here(struct store *s, struct feed_here *here, struct floe_error *err)
{
	const struct feed_position start = { .id = 0 };
	enum feed_verdict verdict;

	/* The start of the feed is a position every database has. */
	return store_feed_position(s, &start, here, &verdict, err);
}

void position_format(char *out, size_t cap, const char *xid, long long id,
		     const struct feed_here *here)
{
	(void)snprintf(out, cap, "%s.%lld.%ld.%s", xid[0] != '\0' ? xid : "0", id, here->timeline,
		       here->system);
}
