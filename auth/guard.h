/*
 * guard.h - the token endpoint's answer to failed client authentications
 * (docs/auth.md "Repeated failures"), over two backoff tables (backoff.h):
 *
 * - per (client id, source address) pair, BACKOFF_FREE_FAILURES free
 *   failures a series: a client guessed at from one address waits there,
 *   and nowhere else; the real client on another address is never held
 *   back by someone else's failures;
 * - per source address, GUARD_ADDRESS_FREE_FAILURES free failures a
 *   series (much looser): one address trying one secret on many client
 *   ids, each pair failing once, waits too.
 *
 * A success clears its pair and its address. So an address that has not
 * failed is never refused, and the clients behind one address (a NAT, a
 * proxy) that keep succeeding keep its count down. What counts as a
 * failure and how a refusal is answered is the caller's business.
 *
 * Time is the caller's (seconds since the epoch). Thread safety: as
 * backoff.h; every function but guard_free from any thread at once.
 */
#ifndef FLOE_GUARD_H
#define FLOE_GUARD_H

#include <stddef.h>

#include "error.h"

#define GUARD_PAIRS 4096
#define GUARD_ADDRESSES 4096
#define GUARD_ADDRESS_FREE_FAILURES 50

struct guard;

/* A new guard with empty tables, or NULL when out of memory. */
struct guard *guard_new(void) FLOE_WUR;

/* Seconds the client at address addr must still wait at now before its
 * secret is checked (the larger of its pair's and its address's); 0: it
 * may try. client and addr are any strings; addr "" is one address. */
long long guard_wait(struct guard *g, const char *client, const char *addr, long long now);

/* Counts a failed authentication of client from addr at now. */
void guard_fail(struct guard *g, const char *client, const char *addr, long long now);

/* A successful one: clears the pair and the address. */
void guard_succeed(struct guard *g, const char *client, const char *addr);

/* Frees the guard; NULL is fine. */
void guard_free(struct guard *g);

#endif
