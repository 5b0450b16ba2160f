/*
 * authzcache.h - the decisions of authorization a floe keeps
 * (docs/auth.md "Decisions kept"): for a set of roles and an object, the
 * effective privileges the store gave, so that a request allowed a
 * moment ago is allowed again without a query.
 *
 * Only what allowed a request is kept; a refusal always asks the store,
 * so a grant takes effect at the next request. What could make a kept
 * set too large (a revoked grant, a role taken away, an object dropped or
 * renamed) is forgotten by authz_cache_forget, which the daemon calls on
 * each change it makes and on each notification of the database
 * (another replica's change, or one made in SQL). While the daemon cannot
 * hear those notifications it marks the cache deaf: nothing is kept or
 * answered from it until it hears again. An entry also ends after its
 * lifetime, whatever happens.
 *
 * Fixed size: a slot per hash of the key (a newer set replaces an older
 * one in its slot), keys over AUTHZ_CACHE_KEY_MAX bytes are never kept.
 * Thread-safe: striped mutexes over the slots, atomics for the rest.
 */
#ifndef FLOE_AUTHZCACHE_H
#define FLOE_AUTHZCACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

struct authz_cache;
struct authz_object;

/* The longest key kept: the role ids, the kind and the object's name. */
#define AUTHZ_CACHE_KEY_MAX 320

/* A new cache of at least `slots` slots (rounded up to a power of two,
 * at most 1 << 20), whose entries live ttl_ms, deaf until
 * authz_cache_hear(c, true). NULL when out of memory. */
struct authz_cache *authz_cache_new(uint32_t slots, long long ttl_ms) FLOE_WUR;

/* Frees the cache; NULL is fine. */
void authz_cache_free(struct authz_cache *c);

/* Forgets every entry (O(1): entries of an older generation never
 * answer). */
void authz_cache_forget(struct authz_cache *c);

/* Whether changes are heard: false forgets everything and keeps nothing
 * more; true (after a new LISTEN) forgets everything and keeps again. */
void authz_cache_hear(struct authz_cache *c, bool hearing);

/* A ticket for a later authz_cache_put: the generation before the store
 * is asked, so that a set read across a forget is never kept. 0 when
 * nothing may be kept. */
uint64_t authz_cache_ticket(const struct authz_cache *c);

/* The kept privilege set of roles on obj into *set: false when there is
 * none (or c is NULL). */
bool authz_cache_get(struct authz_cache *c, const long long *roles, size_t nroles,
		     const struct authz_object *obj, uint32_t *set);

/* Keeps set for roles on obj under ticket (nothing when ticket is 0, or
 * the key is too long). */
void authz_cache_put(struct authz_cache *c, uint64_t ticket, const long long *roles, size_t nroles,
		     const struct authz_object *obj, uint32_t set);

#endif
