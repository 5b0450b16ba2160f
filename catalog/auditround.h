/*
 * auditround.h - one audit round of a publish, the part write-audit-publish
 * over one table (wap.c) and over many (release.c) share: claim the run or
 * release under a lease, call every hook in scope with no transaction open,
 * keep every call and verdict, and fence every later write on the lease.
 * Not what is audited (the payload) nor what a pass publishes: both are the
 * caller's, through struct auditround_ops.
 */
#ifndef FLOE_AUDITROUND_H
#define FLOE_AUDITROUND_H

#include <stdbool.h>
#include <stddef.h>
#include <jansson.h>

#include "error.h"
#include "ident.h"
#include "ports.h"
#include "table.h"
#include "uuid.h"

/* An audit lasts at most its longest hook timeout; past that and this
 * margin its floe is gone and the subject may be published again. */
#define AUDITROUND_LEASE_MARGIN_MS 10000

/* What differs between a run and a release, called back with ctx. */
struct auditround_ops {
	/* Moves the subject from one of the states from (comma separated, as
	 * store_run_transition takes them) to state to, with audits (NULL:
	 * as they are); lease_ms and lease are the lease of a move to
	 * "auditing", and fence a move out of it. *moved as the store's. */
	bool (*move)(struct store *s, void *ctx, const char *from, const char *to,
		     const json_t *audits, long lease_ms, const char *lease, bool *moved,
		     struct floe_error *err);
	/* The payload sent to hook h under delivery_id at now (RFC 3339), as
	 * JSON text: a new string, or NULL when it cannot be built (logged;
	 * the call is then an error verdict and nothing is sent). */
	char *(*payload)(void *ctx, const struct hook_target *h, const char *delivery_id,
			 const char *now);
	/* In the transaction that ends the round in state (not "published"),
	 * what moves with the subject (a release's member runs); audits as
	 * move's. NULL: nothing does. */
	bool (*settle)(struct store *s, void *ctx, const char *state, const json_t *audits,
		       struct floe_error *err);
};

/*
 * One round. The caller fills the fields above "filled by the round"
 * (the rest zero) and ends every round, claimed or not, with
 * auditround_end.
 */
struct auditround {
	const struct auditround_ops *ops;
	void *ctx;
	const struct table_env *env;
	const char *kind;          /* "wap" or "release": its events' prefix, its log tag */
	const char *noun;          /* "run" or "release", as messages name the subject */
	const char *id;            /* the run's or the release's */
	const struct ns_ident *ns; /* the events' table: NULL for a release */
	const char *table;
	const struct hook_target *hooks; /* borrowed, n of them, at least one */
	size_t n;
	json_t *call_extra; /* stolen, may be NULL: added to each call's event */

	/* filled by the round */
	char lease[UUID_STR_LEN];
	long lease_ms;
	char event[32]; /* "<kind>.audit", the payload's X-Floe-Event */
	json_t *audits; /* the verdicts as the subject shows them */
	json_t *called; /* each <kind>.hook-called event's details */
	bool lease_lost;
	struct hook_call *calls;
	char **bodies;
	char **opened;
	char (*deliveries)[UUID_STR_LEN];
};

/*
 * Takes the lease: moves the subject from one of the states from to
 * "auditing" and writes <kind>.audit-started (started, stolen, gains
 * "hooks" and "lease-ms") in one transaction. FE_RUN_STATE when the
 * subject is not in one of those states (another request is publishing
 * it); the store's error.
 */
bool auditround_claim(struct store *s, struct auditround *r, const char *from, json_t *started,
		      struct floe_error *err) FLOE_WUR;

/*
 * Calls every hook: builds the payloads, commits one <kind>.hook-calling
 * event per call before any is made (its hook, delivery id and timeout),
 * gives *s back to pool, calls the hooks in parallel with no connection
 * held, takes a connection again into *s, and keeps every verdict
 * (r->audits, r->called). False when memory ran out (FE_INTERNAL) or the
 * attempts cannot be recorded (the store's error; no hook is called): the
 * round then ended audit-failed; or when no connection came back (*s
 * NULL: the subject stays auditing until its lease runs out).
 */
bool auditround_call(struct store_pool *pool, struct store **s, struct auditround *r,
		     struct floe_error *err) FLOE_WUR;

/* How the hooks decided: HOOK_PASS when every one passed, else
 * HOOK_REJECT for the first that rejected or, when none did, HOOK_ERROR
 * for the first without a verdict; *which is that hook's index. */
enum hook_verdict auditround_verdict(const struct auditround *r, size_t *which);

/* Hook i's reason (borrowed, "" when none). */
const char *auditround_reason(const struct auditround *r, size_t i);

/*
 * Ends the round in state (not "published") while the lease holds: the
 * subject moves there with its audits, every call made is recorded, then
 * ops->settle, then event (NULL: none; details stolen), in one
 * transaction. FE_RUN_STATE when the lease was taken over (nothing is
 * written; auditround_end records the calls); the store's error. A
 * failure is logged, so a caller already failing for another reason may
 * ignore it.
 */
bool auditround_finish(struct store *s, struct auditround *r, const char *state, const char *event,
		       json_t *details, struct floe_error *err);

/*
 * Inside the transaction that publishes: moves the subject to "published"
 * with its audits while the lease holds and records every call made; the
 * caller then writes what it publishes. FE_RUN_STATE when the lease was
 * taken over (the caller must roll back).
 */
bool auditround_publish(struct store *s, struct auditround *r, struct floe_error *err) FLOE_WUR;

/*
 * Ends a round. When its lease was taken over after its hooks were called
 * and s is given, the calls it made are still recorded, with
 * <kind>.lease-lost, in a transaction of their own (a failure is logged:
 * the answer is already decided). Frees what the round holds.
 */
void auditround_end(struct store *s, struct auditround *r);

#endif
