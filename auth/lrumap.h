/*
 * lrumap.h - a fixed-capacity map from 32-byte digests (SHA-256) to slot
 * numbers 0..capacity-1, with a recency order: the index under the
 * token cache and the backoff table, whose values live in the caller's
 * own array indexed by slot. Every operation is O(1) (a chained hash
 * table and a doubly linked recency list, both threaded through the
 * slots by index); no allocation after lrumap_new.
 *
 * The keys are digests, uniform already, so their bytes are the hash.
 * Not thread-safe: the caller holds its own lock around every call.
 */
#ifndef FLOE_LRUMAP_H
#define FLOE_LRUMAP_H

#include <stdbool.h>
#include <stdint.h>

#include "error.h"

#define LRUMAP_KEY_LEN 32
#define LRUMAP_NONE UINT32_MAX
/* The largest capacity (the buckets are twice as many, in 32 bits). */
#define LRUMAP_MAX_CAPACITY (UINT32_MAX / 4)

struct lrumap;

/* A new empty map of capacity slots (1 to LRUMAP_MAX_CAPACITY), or NULL
 * when out of memory or out of range. Free with lrumap_free. */
struct lrumap *lrumap_new(uint32_t capacity) FLOE_WUR;

/* The slot of key, or LRUMAP_NONE; the recency order is not changed. */
uint32_t lrumap_find(const struct lrumap *m, const unsigned char key[LRUMAP_KEY_LEN]);

/* Makes slot the most recently used. */
void lrumap_touch(struct lrumap *m, uint32_t slot);

/* Adds key (not in the map) as the most recently used and returns its
 * slot. A full map first evicts its least recently used key: *evicted
 * is then that slot (the one returned), otherwise LRUMAP_NONE. */
uint32_t lrumap_insert(struct lrumap *m, const unsigned char key[LRUMAP_KEY_LEN],
		       uint32_t *evicted);

/* Removes the key of slot (a used slot). */
void lrumap_remove(struct lrumap *m, uint32_t slot);

/* True when slot holds a key. */
bool lrumap_used(const struct lrumap *m, uint32_t slot);

/* Removes every key. O(capacity). */
void lrumap_reset(struct lrumap *m);

uint32_t lrumap_capacity(const struct lrumap *m);
uint32_t lrumap_count(const struct lrumap *m);

/* Frees the map; NULL is fine. */
void lrumap_free(struct lrumap *m);

#endif
