/*
 * unsettled.h - commits whose outcome floe could not learn in time: the
 * connection broke while their COMMIT was in flight and the database did
 * not answer again within the commit's own wait, or answered that the
 * transaction is still in progress (a COMMIT waiting on a synchronous
 * standby). The client was told "unknown" (500); the janitor settles each
 * one by its transaction's status, logs the truth, and removes the
 * metadata file only of one proved aborted: one still in progress is
 * asked again next round, one the database cannot tell about keeps its
 * file. Bounded; thread-safe; in memory only (a floe that stops first
 * leaves the file, which is harmless whichever way the commit went).
 */
#ifndef FLOE_UNSETTLED_H
#define FLOE_UNSETTLED_H

#include <stdbool.h>

#define UNSETTLED_MAX 1024

struct unsettled;

/* A new, empty list, or NULL when out of memory. */
struct unsettled *unsettled_new(void);

/* Frees the list; sets *u to NULL. NULL-safe. */
void unsettled_free(struct unsettled **u);

/* Remembers that version `version` of table table_uuid may or may not be
 * the file at location, as transaction xid (xid8 text; "": not known)
 * commits or not. Returns false (logged) when the list is full or out of
 * memory; the file is then simply kept. NULL-safe. */
bool unsettled_add(struct unsettled *u, const char *xid, const char *table_uuid, long long version,
		   const char *location, const char *request_id);

/* One commit to settle. */
struct unsettled_commit {
	char xid[24];
	char table_uuid[40];
	long long version;
	char *location;
	char request_id[40];
};

/*
 * Calls settle(ctx, c) on each remembered commit. settle returns true when
 * it learnt the outcome (the entry is dropped), false to keep it for the
 * next round. Runs outside the list's lock, so adds go on meanwhile.
 */
void unsettled_drain(struct unsettled *u,
		     bool (*settle)(void *ctx, const struct unsettled_commit *c), void *ctx);

#endif
