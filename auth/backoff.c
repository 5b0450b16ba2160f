/*
 * backoff.c - the failure table: an lrumap of key digests and, by slot,
 * each key's series (how many failures, the last one, the end of the
 * wait it imposed), under one mutex. The table is touched once or twice
 * per token request, so one lock is enough.
 */
#include "backoff.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "lrumap.h"

/* Counting stops here: the wait is at its cap long before. */
#define BACKOFF_COUNT_MAX (BACKOFF_FREE_MAX + 1000)

struct backoff_series {
	int failures;
	long long last;  /* the time of the last failure */
	long long until; /* no attempt before this time */
};

struct backoff {
	EVP_MD *sha256;    /* fetched once, not on every digest */
	int free_failures; /* of a series, imposing no wait */
	pthread_mutex_t lock;
	struct lrumap *map;
	struct backoff_series *series; /* by slot */
};

struct backoff *backoff_new(size_t capacity)
{
	return backoff_new_with(capacity, BACKOFF_FREE_FAILURES);
}

struct backoff *backoff_new_with(size_t capacity, int free_failures)
{
	struct backoff *b = NULL;

	if (capacity == 0 || capacity > LRUMAP_MAX_CAPACITY || free_failures < 1 ||
	    free_failures > BACKOFF_FREE_MAX)
		return NULL;
	b = calloc(1, sizeof(*b));
	if (b == NULL)
		return NULL;
	b->free_failures = free_failures;
	b->sha256 = EVP_MD_fetch(NULL, "SHA256", NULL);
	b->map = lrumap_new((uint32_t)capacity);
	b->series = calloc(capacity, sizeof(*b->series));
	if (b->sha256 == NULL || b->map == NULL || b->series == NULL ||
	    pthread_mutex_init(&b->lock, NULL) != 0) {
		EVP_MD_free(b->sha256);
		lrumap_free(b->map);
		free(b->series);
		free(b);
		return NULL;
	}
	return b;
}

void backoff_free(struct backoff *b)
{
	if (b == NULL)
		return;
	pthread_mutex_destroy(&b->lock);
	EVP_MD_free(b->sha256);
	lrumap_free(b->map);
	free(b->series);
	free(b);
}

static bool backoff_digest(const struct backoff *b, const char *key,
			   unsigned char out[LRUMAP_KEY_LEN])
{
	return EVP_Digest(key, strlen(key), out, NULL, b->sha256, NULL) == 1;
}

/* A quiet minute after the last failure and after its wait ends the
 * series. */
static bool backoff_over(const struct backoff_series *s, long long now)
{
	long long quiet_from = s->until > s->last ? s->until : s->last;

	return now - quiet_from >= BACKOFF_WINDOW_S;
}

/* The wait the n-th failure of a series imposes. */
static long long backoff_delay(const struct backoff *b, int n)
{
	int e = n - b->free_failures;

	if (e <= 0)
		return 0;
	if (e >= 9) /* 2^9 = 512 is past the cap */
		return BACKOFF_MAX_WAIT_S;
	long long w = 1LL << e;
	return w < BACKOFF_MAX_WAIT_S ? w : BACKOFF_MAX_WAIT_S;
}

long long backoff_wait(struct backoff *b, const char *key, long long now)
{
	unsigned char d[LRUMAP_KEY_LEN];
	long long wait = 0;

	if (!backoff_digest(b, key, d))
		return 0;
	(void)pthread_mutex_lock(&b->lock);
	uint32_t slot = lrumap_find(b->map, d);
	if (slot != LRUMAP_NONE) {
		const struct backoff_series *s = &b->series[slot];
		if (backoff_over(s, now)) {
			lrumap_remove(b->map, slot);
		} else {
			lrumap_touch(b->map, slot);
			wait = s->until > now ? s->until - now : 0;
		}
	}
	(void)pthread_mutex_unlock(&b->lock);
	return wait;
}

long long backoff_fail(struct backoff *b, const char *key, long long now)
{
	unsigned char d[LRUMAP_KEY_LEN];
	uint32_t evicted = LRUMAP_NONE;
	long long wait = 0;

	/* A digest that fails cannot be counted; a refusal of the attempt
	 * is the caller's (it has failed already). */
	if (!backoff_digest(b, key, d))
		return 0;
	(void)pthread_mutex_lock(&b->lock);
	uint32_t slot = lrumap_find(b->map, d);
	struct backoff_series *s = NULL;
	if (slot == LRUMAP_NONE) {
		slot = lrumap_insert(b->map, d, &evicted);
		s = &b->series[slot];
		memset(s, 0, sizeof(*s));
	} else {
		lrumap_touch(b->map, slot);
		s = &b->series[slot];
		if (backoff_over(s, now))
			memset(s, 0, sizeof(*s));
	}
	if (s->failures < BACKOFF_COUNT_MAX)
		s->failures++;
	s->last = now;
	wait = backoff_delay(b, s->failures);
	if (wait > 0)
		s->until = now + wait;
	(void)pthread_mutex_unlock(&b->lock);
	return wait;
}

void backoff_clear(struct backoff *b, const char *key)
{
	unsigned char d[LRUMAP_KEY_LEN];

	if (!backoff_digest(b, key, d))
		return;
	(void)pthread_mutex_lock(&b->lock);
	uint32_t slot = lrumap_find(b->map, d);
	if (slot != LRUMAP_NONE)
		lrumap_remove(b->map, slot);
	(void)pthread_mutex_unlock(&b->lock);
}

size_t backoff_count(struct backoff *b)
{
	size_t n = 0;

	(void)pthread_mutex_lock(&b->lock);
	n = lrumap_count(b->map);
	(void)pthread_mutex_unlock(&b->lock);
	return n;
}
