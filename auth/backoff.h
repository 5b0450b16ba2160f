/*
 * backoff.h - failed authentication attempts, counted per key (any
 * string: guard.h uses a client id with an address, and an address) in a
 * bounded table, and the wait they impose. What counts as a failure and what a refused attempt is
 * answered with (429 and Retry-After) is the caller's business.
 *
 * The policy: failures form a series while each comes within a minute
 * (BACKOFF_WINDOW_S) of the previous one, or of the end of the wait the
 * previous one imposed; a quiet minute ends the series. The first F
 * failures of a series are free (F: BACKOFF_FREE_FAILURES, or the table's
 * own number); from failure F+1 on, each imposes a wait of 2^(n-F)
 * seconds (n its number in the series: 2, 4, 8, ...), at most
 * BACKOFF_MAX_WAIT_S. A success clears the key. The caller refuses an
 * attempt while backoff_wait answers more than 0, without checking the
 * secret and without calling backoff_fail.
 *
 * Bounded: BACKOFF_CAPACITY keys; a new key in a full table pushes the
 * least recently used one out. A key is held as its SHA-256, so a key
 * of any length costs the same 32 bytes.
 *
 * Time is the caller's (seconds since the epoch), so that tests need no
 * sleeping. Thread safety: every function may be called from any thread
 * at once (one mutex), except backoff_free.
 */
#ifndef FLOE_BACKOFF_H
#define FLOE_BACKOFF_H

#include <stddef.h>

#include "error.h"

#define BACKOFF_CAPACITY 4096
#define BACKOFF_FREE_FAILURES 5 /* a series' failures that impose no wait */
#define BACKOFF_FREE_MAX 500
#define BACKOFF_WINDOW_S 60
#define BACKOFF_MAX_WAIT_S 300

struct backoff;

/* A new empty table of at most capacity keys (BACKOFF_CAPACITY in floe,
 * at least 1), or NULL when out of memory. */
struct backoff *backoff_new(size_t capacity) FLOE_WUR;

/* The same with free_failures free failures a series (1 to
 * BACKOFF_FREE_MAX) instead of BACKOFF_FREE_FAILURES; NULL when out of
 * bounds. */
struct backoff *backoff_new_with(size_t capacity, int free_failures) FLOE_WUR;

/* Seconds key must still wait at now before it may try again; 0: it may
 * try. A key whose series is over is forgotten. */
long long backoff_wait(struct backoff *b, const char *key, long long now);

/* Counts a failure of key at now. Returns the wait it imposes (0 for the
 * free failures of a series). */
long long backoff_fail(struct backoff *b, const char *key, long long now);

/* Forgets key (a success). */
void backoff_clear(struct backoff *b, const char *key);

/* The number of keys held. */
size_t backoff_count(struct backoff *b);

/* Frees the table; NULL is fine. */
void backoff_free(struct backoff *b);

#endif
