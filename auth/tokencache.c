/*
 * tokencache.c - the verified-token cache: TOKENCACHE_STRIPES stripes,
 * each an lrumap of token digests and an array of entries by slot under
 * one mutex. The digest is computed outside any lock; its last bytes
 * pick the stripe (lrumap hashes by the first ones), being uniform.
 */
#include "tokencache.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "lrumap.h"

struct tc_stripe {
	pthread_mutex_t lock;
	struct lrumap *map;
	struct tokencache_entry *entries; /* by slot */
};

struct tokencache {
	EVP_MD *sha256; /* fetched once: an implicit fetch on every digest costs more than the lookup */
	size_t nstripes;
	struct tc_stripe stripes[TOKENCACHE_STRIPES];
};

struct tokencache *tokencache_new_striped(size_t capacity, size_t nstripes)
{
	struct tokencache *tc = NULL;

	if (capacity == 0 || capacity > LRUMAP_MAX_CAPACITY || nstripes == 0 ||
	    nstripes > TOKENCACHE_STRIPES)
		return NULL;
	/* Never more stripes than entries: each stripe holds one at least. */
	if (nstripes > capacity)
		nstripes = capacity;
	tc = calloc(1, sizeof(*tc));
	if (tc == NULL)
		return NULL;
	tc->sha256 = EVP_MD_fetch(NULL, "SHA256", NULL);
	if (tc->sha256 == NULL) {
		free(tc);
		return NULL;
	}
	for (size_t i = 0; i < nstripes; i++) {
		/* The capacity is shared out; the first stripes take the rest. */
		size_t cap = capacity / nstripes + (i < capacity % nstripes ? 1 : 0);
		struct tc_stripe *s = &tc->stripes[i];
		s->map = lrumap_new((uint32_t)cap);
		s->entries = calloc(cap, sizeof(*s->entries));
		if (s->map == NULL || s->entries == NULL ||
		    pthread_mutex_init(&s->lock, NULL) != 0) {
			lrumap_free(s->map);
			free(s->entries);
			tc->nstripes = i;
			tokencache_free(tc);
			return NULL;
		}
	}
	tc->nstripes = nstripes;
	return tc;
}

struct tokencache *tokencache_new(size_t capacity)
{
	return tokencache_new_striped(capacity, TOKENCACHE_STRIPES);
}

/* The digest of the token and the stripe it falls in; NULL when the
 * digest fails. */
static struct tc_stripe *tc_locate(struct tokencache *tc, const char *token, size_t len,
				   unsigned char key[LRUMAP_KEY_LEN])
{
	if (EVP_Digest(token, len, key, NULL, tc->sha256, NULL) != 1)
		return NULL;
	uint32_t v = (uint32_t)key[28] << 24 | (uint32_t)key[29] << 16 | (uint32_t)key[30] << 8 |
		     (uint32_t)key[31];
	return &tc->stripes[v % tc->nstripes];
}

bool tokencache_get(struct tokencache *tc, const char *token, size_t len, long long now,
		    struct tokencache_entry *out)
{
	unsigned char key[LRUMAP_KEY_LEN];
	struct tc_stripe *s = tc_locate(tc, token, len, key);
	bool hit = false;

	if (s == NULL)
		return false;
	(void)pthread_mutex_lock(&s->lock);
	uint32_t slot = lrumap_find(s->map, key);
	if (slot != LRUMAP_NONE) {
		if (now < s->entries[slot].exp) {
			*out = s->entries[slot];
			lrumap_touch(s->map, slot);
			hit = true;
		} else {
			lrumap_remove(s->map, slot);
		}
	}
	(void)pthread_mutex_unlock(&s->lock);
	return hit;
}

void tokencache_put(struct tokencache *tc, const char *token, size_t len,
		    const struct tokencache_entry *entry)
{
	unsigned char key[LRUMAP_KEY_LEN];
	struct tc_stripe *s = tc_locate(tc, token, len, key);
	uint32_t evicted = LRUMAP_NONE;

	if (s == NULL)
		return;
	(void)pthread_mutex_lock(&s->lock);
	uint32_t slot = lrumap_find(s->map, key);
	if (slot == LRUMAP_NONE)
		slot = lrumap_insert(s->map, key, &evicted);
	else
		lrumap_touch(s->map, slot);
	struct tokencache_entry *e = &s->entries[slot];
	*e = *entry;
	e->principal_name[TOKENCACHE_NAME_MAX] = '\0';
	e->client_id[TOKENCACHE_NAME_MAX] = '\0';
	if (e->nroles > TOKENCACHE_MAX_ROLES)
		e->nroles = TOKENCACHE_MAX_ROLES;
	(void)pthread_mutex_unlock(&s->lock);
}

size_t tokencache_drop_principal(struct tokencache *tc, int64_t principal_id)
{
	size_t dropped = 0;

	for (size_t k = 0; k < tc->nstripes; k++) {
		struct tc_stripe *s = &tc->stripes[k];
		(void)pthread_mutex_lock(&s->lock);
		for (uint32_t i = 0; i < lrumap_capacity(s->map); i++) {
			if (lrumap_used(s->map, i) && s->entries[i].principal_id == principal_id) {
				lrumap_remove(s->map, i);
				dropped++;
			}
		}
		(void)pthread_mutex_unlock(&s->lock);
	}
	return dropped;
}

void tokencache_clear(struct tokencache *tc)
{
	for (size_t k = 0; k < tc->nstripes; k++) {
		struct tc_stripe *s = &tc->stripes[k];
		(void)pthread_mutex_lock(&s->lock);
		lrumap_reset(s->map);
		(void)pthread_mutex_unlock(&s->lock);
	}
}

size_t tokencache_count(struct tokencache *tc)
{
	size_t n = 0;

	for (size_t k = 0; k < tc->nstripes; k++) {
		struct tc_stripe *s = &tc->stripes[k];
		(void)pthread_mutex_lock(&s->lock);
		n += lrumap_count(s->map);
		(void)pthread_mutex_unlock(&s->lock);
	}
	return n;
}

void tokencache_free(struct tokencache *tc)
{
	if (tc == NULL)
		return;
	for (size_t k = 0; k < tc->nstripes; k++) {
		pthread_mutex_destroy(&tc->stripes[k].lock);
		lrumap_free(tc->stripes[k].map);
		free(tc->stripes[k].entries);
	}
	EVP_MD_free(tc->sha256);
	free(tc);
}
