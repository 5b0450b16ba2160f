/*
 * authzcache.c - the kept decisions of authorization: a direct-mapped
 * table of privilege sets keyed by the roles and the object, with a
 * generation that forgets them all at once.
 */
#include "authzcache.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "authz.h"

#define STRIPES 64
#define MAX_SLOTS (1u << 20)
/* A principal's roles as the middleware resolves them: more are never
 * kept (the store is asked). */
#define MAX_ROLES 32

struct slot {
	uint64_t gen; /* 0: empty */
	long long until_ms;
	uint64_t hash;
	uint32_t set;
	uint16_t keylen;
	unsigned char key[AUTHZ_CACHE_KEY_MAX];
};

struct authz_cache {
	struct slot *slots;
	uint32_t mask;
	long long ttl_ms;
	atomic_uint_fast64_t gen; /* starts at 1 */
	atomic_bool hearing;
	pthread_mutex_t locks[STRIPES];
};

static long long now_ms(void)
{
	struct timespec ts;

	(void)clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

struct authz_cache *authz_cache_new(uint32_t slots, long long ttl_ms)
{
	struct authz_cache *c = NULL;
	uint32_t n = 1;

	if (slots > MAX_SLOTS)
		slots = MAX_SLOTS;
	while (n < slots)
		n <<= 1;
	c = calloc(1, sizeof(*c));
	if (c == NULL)
		return NULL;
	c->slots = calloc(n, sizeof(*c->slots));
	if (c->slots == NULL) {
		free(c);
		return NULL;
	}
	c->mask = n - 1;
	c->ttl_ms = ttl_ms;
	atomic_init(&c->gen, 1);
	atomic_init(&c->hearing, false);
	for (int i = 0; i < STRIPES; i++)
		(void)pthread_mutex_init(&c->locks[i], NULL);
	return c;
}

void authz_cache_free(struct authz_cache *c)
{
	if (c == NULL)
		return;
	for (int i = 0; i < STRIPES; i++)
		(void)pthread_mutex_destroy(&c->locks[i]);
	free(c->slots);
	free(c);
}

void authz_cache_forget(struct authz_cache *c)
{
	if (c != NULL)
		atomic_fetch_add(&c->gen, 1);
}

void authz_cache_hear(struct authz_cache *c, bool hearing)
{
	if (c == NULL)
		return;
	/* Deaf: stop answering first, then make every ticket given so far
	 * stale. Hearing again: forget what was kept while deaf (nothing
	 * was), then answer. */
	if (!hearing)
		atomic_store(&c->hearing, false);
	atomic_fetch_add(&c->gen, 1);
	if (hearing)
		atomic_store(&c->hearing, true);
}

uint64_t authz_cache_ticket(const struct authz_cache *c)
{
	if (c == NULL || !atomic_load(&c->hearing))
		return 0;
	return atomic_load(&c->gen);
}

/* The key of roles (sorted, so the order a token lists them in does not
 * matter) and obj into key; its length, or 0 when it is too long. */
static size_t make_key(const long long *roles, size_t nroles, const struct authz_object *obj,
		       unsigned char key[AUTHZ_CACHE_KEY_MAX])
{
	long long sorted[MAX_ROLES];
	size_t len = 0;

	if (nroles > MAX_ROLES)
		return 0;
	/* roles may be NULL when there are none: nothing to copy then. */
	for (size_t i = 0; i < nroles; i++)
		sorted[i] = roles[i];
	for (size_t i = 1; i < nroles; i++) {
		long long v = sorted[i];
		size_t j = i;
		while (j > 0 && sorted[j - 1] > v) {
			sorted[j] = sorted[j - 1];
			j--;
		}
		sorted[j] = v;
	}
	/* How many roles, the roles, the kind: a fixed-length head. */
	key[len++] = (unsigned char)nroles;
	for (size_t i = 0; i < nroles; i++) {
		memcpy(key + len, &sorted[i], sizeof(sorted[i]));
		len += sizeof(sorted[i]);
	}
	key[len++] = (unsigned char)obj->kind;
	/* The warehouse (a name holds no NUL): the same levels in two
	 * warehouses are two objects. */
	const char *wh = obj->warehouse != NULL ? obj->warehouse : "";
	size_t wl = strlen(wh);
	if (len + wl + 1 > AUTHZ_CACHE_KEY_MAX)
		return 0;
	memcpy(key + len, wh, wl);
	len += wl;
	key[len++] = 0;
	if (obj->kind == AUTHZ_CATALOG)
		return len;
	/* The levels and the table each end with a byte no name holds
	 * (names are UTF-8 without NUL). */
	for (size_t i = 0; i < obj->ns->nlevels; i++) {
		size_t l = strlen(obj->ns->levels[i]);
		if (len + l + 1 > AUTHZ_CACHE_KEY_MAX)
			return 0;
		memcpy(key + len, obj->ns->levels[i], l);
		len += l;
		key[len++] = 0;
	}
	if (obj->kind == AUTHZ_TABLE) {
		size_t l = strlen(obj->table);
		if (len + l + 2 > AUTHZ_CACHE_KEY_MAX)
			return 0;
		key[len++] = 0xfe;
		memcpy(key + len, obj->table, l);
		len += l;
		key[len++] = 0;
	}
	return len;
}

/* FNV-1a, 64 bits. */
static uint64_t hash_key(const unsigned char *key, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (size_t i = 0; i < len; i++) {
		h ^= key[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

bool authz_cache_get(struct authz_cache *c, const long long *roles, size_t nroles,
		     const struct authz_object *obj, uint32_t *set)
{
	unsigned char key[AUTHZ_CACHE_KEY_MAX];
	bool found = false;

	if (c == NULL)
		return false;
	uint64_t gen = atomic_load(&c->gen);
	size_t len = atomic_load(&c->hearing) ? make_key(roles, nroles, obj, key) : 0;
	if (len == 0)
		return false;
	uint64_t h = hash_key(key, len);
	uint32_t i = (uint32_t)h & c->mask;
	struct slot *sl = &c->slots[i];
	pthread_mutex_t *lock = &c->locks[i % STRIPES];

	(void)pthread_mutex_lock(lock);
	if (sl->gen == gen && sl->hash == h && sl->keylen == len &&
	    memcmp(sl->key, key, len) == 0 && now_ms() < sl->until_ms) {
		*set = sl->set;
		found = true;
	}
	(void)pthread_mutex_unlock(lock);
	return found;
}

void authz_cache_put(struct authz_cache *c, uint64_t ticket, const long long *roles, size_t nroles,
		     const struct authz_object *obj, uint32_t set)
{
	unsigned char key[AUTHZ_CACHE_KEY_MAX];

	if (c == NULL || ticket == 0)
		return;
	size_t len = make_key(roles, nroles, obj, key);
	if (len == 0)
		return;
	uint64_t h = hash_key(key, len);
	uint32_t i = (uint32_t)h & c->mask;
	struct slot *sl = &c->slots[i];
	pthread_mutex_t *lock = &c->locks[i % STRIPES];

	(void)pthread_mutex_lock(lock);
	sl->gen = ticket;
	sl->hash = h;
	sl->until_ms = now_ms() + c->ttl_ms;
	sl->set = set;
	sl->keylen = (uint16_t)len;
	memcpy(sl->key, key, len);
	(void)pthread_mutex_unlock(lock);
}
