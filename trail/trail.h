/*
 * trail.h - the tamper-evident audit trail's cryptography: the canonical
 * form of an audit event and the SHA-256 chain over it (chain.c), and
 * checkpoints of the chain signed with an Ed25519 key kept out of the
 * database (checkpoint.c). Pure computation over libcrypto; which rows are
 * checked, and what a mismatch means, is decided in catalog/audittrail.c.
 */
#ifndef FLOE_TRAIL_H
#define FLOE_TRAIL_H

#include <stdbool.h>
#include <stddef.h>

#include "error.h"

#define TRAIL_HASH_LEN 32
#define TRAIL_HASH_HEX (2 * TRAIL_HASH_LEN + 1)
#define TRAIL_SIG_MAX 64
#define TRAIL_KEY_ID_LEN 32 /* hex digits */

/* An audit event's fields as the chain covers them, each the exact text
 * the database stores (NULL when the column is NULL): id, at in UTC as
 * YYYY-MM-DDTHH:MI:SS.ffffffZ, the namespace's levels joined by U+001F,
 * details the jsonb text. */
struct trail_event {
	long long position;
	const char *id;
	const char *at;
	const char *event;
	const char *principal;
	const char *client_id;
	const char *request_id;
	const char *ns;
	const char *table;
	const char *run_id;
	const char *details;
};

/* out = SHA-256(prev || the canonical form of e), as the database's
 * audit_chain_link computes it (store/migrations/0015_audit_chain.sql).
 * False only when libcrypto fails. */
bool trail_event_hash(const unsigned char prev[TRAIL_HASH_LEN], const struct trail_event *e,
		      unsigned char out[TRAIL_HASH_LEN]) FLOE_WUR;

/* The hash before the first event: 32 zero bytes. */
void trail_genesis(unsigned char out[TRAIL_HASH_LEN]);

/* Lower-case hex of a hash, into out (TRAIL_HASH_HEX bytes). */
void trail_hex(const unsigned char h[TRAIL_HASH_LEN], char out[TRAIL_HASH_HEX]);

/* Parses 64 hex digits (either case) into h; false when hex is not. */
bool trail_unhex(const char *hex, unsigned char h[TRAIL_HASH_LEN]) FLOE_WUR;

/* Lower-case hex of n bytes, into out (2n + 1 bytes). */
void trail_hex_bytes(const unsigned char *b, size_t n, char *out);

/* Parses hex digits (either case, an even number of them, at most 2 cap)
 * into b; *n is how many bytes. False when hex is not that. */
bool trail_unhex_bytes(const char *hex, unsigned char *b, size_t cap, size_t *n) FLOE_WUR;

/* A checkpoint key: an Ed25519 key pair (to sign) or public key (to
 * verify). */
struct trail_key;

/* Reads a PEM Ed25519 private key from path, which must be a regular file
 * of floe's user that no one else may read (chmod 0600). Returns the key
 * (trail_key_free) or NULL with err (FE_BAD_REQUEST: why the file is
 * refused). */
struct trail_key *trail_key_load(const char *path, struct floe_error *err) FLOE_WUR;

/* Parses a PEM Ed25519 public key (or a private one, whose public half is
 * taken). Returns the key (trail_key_free) or NULL with err. */
struct trail_key *trail_key_parse_public(const char *pem, size_t len,
					 struct floe_error *err) FLOE_WUR;

void trail_key_free(struct trail_key *k);

/* The key's identifier: the first 16 bytes of SHA-256 over its public key
 * (DER), in hex. Borrowed from k. */
const char *trail_key_id(const struct trail_key *k);

/* The public key as PEM text (caller frees), or NULL when out of memory. */
char *trail_key_public_pem(const struct trail_key *k) FLOE_WUR;

/* Signs the checkpoint (position, hash, signed_at, k's id): sig gets the
 * signature, *siglen its length. False when k holds no private key or
 * libcrypto fails. */
bool trail_checkpoint_sign(const struct trail_key *k, long long position,
			   const unsigned char hash[TRAIL_HASH_LEN], const char *signed_at,
			   unsigned char sig[TRAIL_SIG_MAX], size_t *siglen) FLOE_WUR;

/* Whether sig is k's signature of the checkpoint (position, hash,
 * signed_at, key_id); false as well when key_id is not k's. */
bool trail_checkpoint_verify(const struct trail_key *k, long long position,
			     const unsigned char hash[TRAIL_HASH_LEN], const char *signed_at,
			     const char *key_id, const unsigned char *sig, size_t siglen);

#endif
