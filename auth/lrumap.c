/*
 * lrumap.c - digest-keyed slots with a recency list: the hash chains
 * and the list are indices into one array of slots, so the map never
 * allocates after it is made and never holds a pointer into itself.
 */
#include "lrumap.h"

#include <stdlib.h>
#include <string.h>

struct lrumap_slot {
	unsigned char key[LRUMAP_KEY_LEN];
	uint32_t hnext; /* the next slot of the bucket's chain, or of the free list */
	uint32_t prev;  /* toward the most recently used */
	uint32_t next;  /* toward the least recently used */
	bool used;
};

struct lrumap {
	struct lrumap_slot *slots; /* capacity of them */
	uint32_t *buckets;         /* nbuckets chain heads */
	uint32_t nbuckets;         /* a power of two */
	uint32_t capacity;
	uint32_t count;
	uint32_t free_head;
	uint32_t mru;
	uint32_t lru;
};

void lrumap_reset(struct lrumap *m)
{
	for (uint32_t i = 0; i < m->nbuckets; i++)
		m->buckets[i] = LRUMAP_NONE;
	for (uint32_t i = 0; i < m->capacity; i++) {
		m->slots[i].used = false;
		m->slots[i].prev = LRUMAP_NONE;
		m->slots[i].next = LRUMAP_NONE;
		m->slots[i].hnext = i + 1 < m->capacity ? i + 1 : LRUMAP_NONE;
	}
	m->free_head = 0;
	m->count = 0;
	m->mru = LRUMAP_NONE;
	m->lru = LRUMAP_NONE;
}

struct lrumap *lrumap_new(uint32_t capacity)
{
	struct lrumap *m = NULL;
	uint32_t nb = 1;

	if (capacity == 0 || capacity > LRUMAP_MAX_CAPACITY)
		return NULL;
	while (nb < capacity * 2)
		nb *= 2;
	m = calloc(1, sizeof(*m));
	if (m == NULL)
		return NULL;
	m->capacity = capacity;
	m->nbuckets = nb;
	m->slots = calloc(capacity, sizeof(*m->slots));
	m->buckets = calloc(nb, sizeof(*m->buckets));
	if (m->slots == NULL || m->buckets == NULL) {
		lrumap_free(m);
		return NULL;
	}
	lrumap_reset(m);
	return m;
}

void lrumap_free(struct lrumap *m)
{
	if (m == NULL)
		return;
	free(m->slots);
	free(m->buckets);
	free(m);
}

static uint32_t lrumap_bucket(const struct lrumap *m, const unsigned char *key)
{
	uint32_t v = (uint32_t)key[0] << 24 | (uint32_t)key[1] << 16 | (uint32_t)key[2] << 8 |
		     (uint32_t)key[3];

	return v & (m->nbuckets - 1);
}

uint32_t lrumap_find(const struct lrumap *m, const unsigned char key[LRUMAP_KEY_LEN])
{
	uint32_t i = m->buckets[lrumap_bucket(m, key)];

	while (i != LRUMAP_NONE && memcmp(m->slots[i].key, key, LRUMAP_KEY_LEN) != 0)
		i = m->slots[i].hnext;
	return i;
}

static void lrumap_unlink(struct lrumap *m, uint32_t i)
{
	struct lrumap_slot *s = &m->slots[i];

	if (s->prev != LRUMAP_NONE)
		m->slots[s->prev].next = s->next;
	else
		m->mru = s->next;
	if (s->next != LRUMAP_NONE)
		m->slots[s->next].prev = s->prev;
	else
		m->lru = s->prev;
	s->prev = LRUMAP_NONE;
	s->next = LRUMAP_NONE;
}

static void lrumap_push_front(struct lrumap *m, uint32_t i)
{
	struct lrumap_slot *s = &m->slots[i];

	s->prev = LRUMAP_NONE;
	s->next = m->mru;
	if (m->mru != LRUMAP_NONE)
		m->slots[m->mru].prev = i;
	m->mru = i;
	if (m->lru == LRUMAP_NONE)
		m->lru = i;
}

void lrumap_touch(struct lrumap *m, uint32_t slot)
{
	if (m->mru == slot)
		return;
	lrumap_unlink(m, slot);
	lrumap_push_front(m, slot);
}

void lrumap_remove(struct lrumap *m, uint32_t slot)
{
	uint32_t *link = &m->buckets[lrumap_bucket(m, m->slots[slot].key)];

	while (*link != LRUMAP_NONE && *link != slot)
		link = &m->slots[*link].hnext;
	if (*link != slot)
		return;
	*link = m->slots[slot].hnext;
	lrumap_unlink(m, slot);
	m->slots[slot].used = false;
	m->slots[slot].hnext = m->free_head;
	m->free_head = slot;
	m->count--;
}

uint32_t lrumap_insert(struct lrumap *m, const unsigned char key[LRUMAP_KEY_LEN], uint32_t *evicted)
{
	uint32_t *head = &m->buckets[lrumap_bucket(m, key)];
	uint32_t i = 0;

	*evicted = LRUMAP_NONE;
	if (m->free_head == LRUMAP_NONE) {
		*evicted = m->lru;
		lrumap_remove(m, m->lru);
	}
	i = m->free_head;
	m->free_head = m->slots[i].hnext;
	memcpy(m->slots[i].key, key, LRUMAP_KEY_LEN);
	m->slots[i].used = true;
	m->slots[i].hnext = *head;
	*head = i;
	lrumap_push_front(m, i);
	m->count++;
	return i;
}

bool lrumap_used(const struct lrumap *m, uint32_t slot)
{
	return slot < m->capacity && m->slots[slot].used;
}

uint32_t lrumap_capacity(const struct lrumap *m)
{
	return m->capacity;
}

uint32_t lrumap_count(const struct lrumap *m)
{
	return m->count;
}
