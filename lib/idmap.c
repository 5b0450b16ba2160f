/*
 * idmap.c - int64 -> int64 hash map with linear probing and backward-shift
 * deletion (no tombstones, so lookups stay short after many deletes).
 * The table is a power of two and at most half full.
 */
#include "idmap.h"

#include <stdlib.h>

#define IDMAP_MIN_CAPACITY 16

struct idmap_slot {
	int64_t key;
	int64_t value;
	bool used;
};

struct idmap {
	struct idmap_slot *slots;
	size_t capacity; /* a power of two */
	size_t count;
};

/* splitmix64's finaliser: ids are often sequential, so mix every bit. */
static size_t idmap_hash(int64_t key, size_t capacity)
{
	uint64_t x = (uint64_t)key;

	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	x ^= x >> 31;
	return (size_t)(x & (capacity - 1));
}

static size_t idmap_capacity_for(size_t expected)
{
	size_t cap = IDMAP_MIN_CAPACITY;

	while (cap / 2 < expected && cap < SIZE_MAX / 4)
		cap *= 2;
	return cap;
}

struct idmap *idmap_new(size_t expected)
{
	struct idmap *m = malloc(sizeof(*m));

	if (m == NULL)
		return NULL;
	m->capacity = idmap_capacity_for(expected);
	m->count = 0;
	m->slots = calloc(m->capacity, sizeof(*m->slots));
	if (m->slots == NULL) {
		free(m);
		return NULL;
	}
	return m;
}

void idmap_free(struct idmap *m)
{
	if (m == NULL)
		return;
	free(m->slots);
	free(m);
}

/* The slot holding key, or the empty slot where it would go. */
static size_t idmap_find(const struct idmap *m, int64_t key)
{
	size_t i = idmap_hash(key, m->capacity);

	while (m->slots[i].used && m->slots[i].key != key)
		i = (i + 1) & (m->capacity - 1);
	return i;
}

static bool idmap_grow(struct idmap *m)
{
	size_t old_cap = m->capacity;
	struct idmap_slot *old = m->slots;
	struct idmap_slot *fresh;

	if (old_cap > SIZE_MAX / 2 / sizeof(*fresh))
		return false;
	fresh = calloc(old_cap * 2, sizeof(*fresh));
	if (fresh == NULL)
		return false;
	m->slots = fresh;
	m->capacity = old_cap * 2;
	for (size_t i = 0; i < old_cap; i++) {
		if (old[i].used)
			m->slots[idmap_find(m, old[i].key)] = old[i];
	}
	free(old);
	return true;
}

bool idmap_put(struct idmap *m, int64_t key, int64_t value)
{
	size_t i = idmap_find(m, key);

	if (m->slots[i].used) {
		m->slots[i].value = value;
		return true;
	}
	if ((m->count + 1) * 2 > m->capacity) {
		if (!idmap_grow(m))
			return false;
		i = idmap_find(m, key);
	}
	m->slots[i].key = key;
	m->slots[i].value = value;
	m->slots[i].used = true;
	m->count++;
	return true;
}

bool idmap_get(const struct idmap *m, int64_t key, int64_t *value)
{
	size_t i = idmap_find(m, key);

	if (!m->slots[i].used)
		return false;
	if (value != NULL)
		*value = m->slots[i].value;
	return true;
}

bool idmap_has(const struct idmap *m, int64_t key)
{
	return idmap_get(m, key, NULL);
}

bool idmap_del(struct idmap *m, int64_t key)
{
	size_t mask = m->capacity - 1;
	size_t hole = idmap_find(m, key);
	size_t i;

	if (!m->slots[hole].used)
		return false;
	m->slots[hole].used = false;
	m->count--;
	/* Move later members of the probe run back into the hole when their
	 * home slot is not between the hole and where they sit. */
	i = (hole + 1) & mask;
	while (m->slots[i].used) {
		size_t home = idmap_hash(m->slots[i].key, m->capacity);
		bool stays = hole <= i ? (hole < home && home <= i) : (hole < home || home <= i);
		if (!stays) {
			m->slots[hole] = m->slots[i];
			m->slots[i].used = false;
			hole = i;
		}
		i = (i + 1) & mask;
	}
	return true;
}

size_t idmap_count(const struct idmap *m)
{
	return m->count;
}
