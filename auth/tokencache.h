/*
 * tokencache.h - bearer tokens already verified, so that a request costs
 * a SHA-256 and a hash lookup instead of an ECDSA or RSA verification.
 * Keyed by the SHA-256 of the token's text (the text is not kept); the
 * value is a fixed-size copy of who the token names. Which token may be
 * cached (only one that has been verified and whose principal exists) is
 * the caller's business.
 *
 * Bounded: at most the capacity given to tokencache_new. A full cache
 * evicts the least recently used entry of the stripe the new key falls
 * in (the key space is split into TOKENCACHE_STRIPES stripes, each with
 * its own lock, table and recency list, so the cost is O(1) and two
 * threads rarely wait on each other).
 *
 * Thread safety: every function may be called from any number of
 * threads at once, except tokencache_free.
 */
#ifndef FLOE_TOKENCACHE_H
#define FLOE_TOKENCACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

#define TOKENCACHE_NAME_MAX 255 /* bytes of a principal name or client id */
#define TOKENCACHE_MAX_ROLES 32
#define TOKENCACHE_STRIPES 16
#define TOKENCACHE_DEFAULT_CAPACITY 10000

/* What a verified token names; copied in and out whole. */
struct tokencache_entry {
	int64_t principal_id;
	char principal_name[TOKENCACHE_NAME_MAX + 1]; /* NUL-terminated */
	char client_id[TOKENCACHE_NAME_MAX + 1];      /* NUL-terminated; "" when none */
	int64_t roles[TOKENCACHE_MAX_ROLES];
	size_t nroles;
	long long exp; /* the entry answers while now < exp (seconds since the epoch) */
	bool external; /* verified by an external issuer, not by floe's own keys */
};

struct tokencache;

/* A new empty cache of at most capacity entries (at least 1), or NULL
 * when out of memory. Its memory (about 850 bytes an entry) is reserved
 * up front. Free with tokencache_free. */
struct tokencache *tokencache_new(size_t capacity) FLOE_WUR;

/* The same with nstripes stripes (1 to TOKENCACHE_STRIPES; the
 * benchmark compares one lock with many). */
struct tokencache *tokencache_new_striped(size_t capacity, size_t nstripes) FLOE_WUR;

/*
 * Looks token[0..len) up at time now. True, with the entry copied into
 * *out, when it is cached and now < exp; false when it is absent or has
 * expired (an expired entry is removed). A hit makes the entry the most
 * recently used of its stripe.
 */
bool tokencache_get(struct tokencache *tc, const char *token, size_t len, long long now,
		    struct tokencache_entry *out) FLOE_WUR;

/* Caches entry (copied; a name or client id is cut to
 * TOKENCACHE_NAME_MAX bytes, nroles to TOKENCACHE_MAX_ROLES) under
 * token[0..len), replacing what that token had; a full stripe first
 * evicts its least recently used entry. */
void tokencache_put(struct tokencache *tc, const char *token, size_t len,
		    const struct tokencache_entry *entry);

/* Removes every entry of principal_id (a disabled principal's tokens
 * stop working at once); O(capacity). Returns how many. */
size_t tokencache_drop_principal(struct tokencache *tc, int64_t principal_id);

/* Removes every entry (a role or grant change, a key dropped). */
void tokencache_clear(struct tokencache *tc);

/* The number of entries (expired ones not yet looked up included). */
size_t tokencache_count(struct tokencache *tc);

/* Frees the cache; NULL is fine. */
void tokencache_free(struct tokencache *tc);

#endif
