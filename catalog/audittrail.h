/*
 * audittrail.h - the tamper-evident audit trail: verifying the hash chain
 * over the audit log against its signed checkpoints, signing a checkpoint
 * of the chain's head, and the export that can be verified offline
 * (docs/audit-trail.md). The chain itself is written by the database in
 * the transaction of each event (store/migrations/0015_audit_chain.sql).
 */
#ifndef FLOE_AUDITTRAIL_H
#define FLOE_AUDITTRAIL_H

#include <stdbool.h>
#include <jansson.h>

#include "error.h"
#include "ports.h"
#include "trail.h"

struct table_env;

/* The most problems a report lists (it says when there were more). */
#define TRAIL_PROBLEMS_MAX 100

/* A verification in progress: fed the checkpoints first, then every link
 * in position order, then the events no link names. */
struct trail_verifier;

/* Starts one; key (borrowed, may be NULL: signatures are not checked)
 * verifies the checkpoints' signatures. NULL when out of memory. */
struct trail_verifier *trail_verifier_new(const struct trail_key *key);

/* A checkpoint, before any link. False when out of memory. */
bool trail_verifier_checkpoint(struct trail_verifier *v, const struct checkpoint_row *cp);

/* The next link (links come in position order). */
void trail_verifier_link(struct trail_verifier *v, const struct chain_row *row);

/* An event that no link names. */
void trail_verifier_unlinked(struct trail_verifier *v, long long event_id);

/* Ends the verification against the chain's recorded head and frees v:
 * the report {"valid", "links", "head", "checkpoints", "problems",
 * "problems-truncated"} (new reference; NULL when out of memory). */
json_t *trail_verifier_finish(struct trail_verifier *v, long long head_position,
			      const char *head_hash);

/* Frees v unfinished. NULL-safe. */
void trail_verifier_free(struct trail_verifier *v);

/* Verifies the chain in the database (GET .../audit-log/verify, floe
 * audit verify). FE_UNAVAILABLE when the database cannot be read. */
json_t *audittrail_verify(struct store *s, const struct trail_key *key,
			  struct floe_error *err) FLOE_WUR;

/* Signs the chain's head with key and records the checkpoint: the
 * checkpoint's JSON (new reference), with "created" false when that key
 * had signed that position already; with env (may be NULL), the answer
 * under its Idempotency-Key (201, or 200 when not created) in the same
 * transaction. */
json_t *audittrail_checkpoint(struct store *s, const struct table_env *env,
			      const struct trail_key *key, struct floe_error *err) FLOE_WUR;

/* GET .../audit-log/checkpoints: {"checkpoints", "next-page-token",
 * "key-id", "public-key"} oldest first; key may be NULL (no key
 * configured). */
json_t *audittrail_checkpoints(struct store *s, const struct trail_key *key, const char *token,
			       long page_size, struct floe_error *err) FLOE_WUR;

/* A checkpoint row as JSON (new reference, NULL when out of memory). */
json_t *audittrail_checkpoint_json(const struct checkpoint_row *cp);

/* Receives each line of an export; false stops it (the writer failed). */
typedef bool (*trail_emit_fn)(void *ctx, const json_t *line);

/* The export, a line at a time to emit: a header, the checkpoints, every
 * link with its event, the unlinked events (docs/audit-trail.md). False
 * with err when the database cannot be read or emit fails
 * (FE_INTERNAL). */
bool audittrail_export(struct store *s, const struct trail_key *key, trail_emit_fn emit, void *ctx,
		       struct floe_error *err) FLOE_WUR;

/* Gives the next line of an export, parsed (new reference), or NULL at
 * its end, or NULL with err set when it cannot be read or parsed. */
typedef json_t *(*trail_line_fn)(void *ctx, struct floe_error *err);

/* Verifies an export read a line at a time from next (floe audit verify
 * --file): the report of trail_verifier_finish, with "key-source" when
 * pinned (borrowed, may be NULL) is not given: the export's own public
 * key is used then. NULL with err: FE_BAD_REQUEST when the lines are no
 * export, else next's error or FE_INTERNAL. */
json_t *audittrail_verify_export(trail_line_fn next, void *ctx, const struct trail_key *pinned,
				 struct floe_error *err) FLOE_WUR;

#endif
