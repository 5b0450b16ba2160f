/*
 * idmap.h - a small hash map from int64 ids to int64 values (open
 * addressing, linear probing), so that id lookups in table metadata
 * (field ids, snapshot ids, spec ids) cost O(1) instead of a scan.
 *
 * Not thread-safe; one map belongs to one caller. It grows as needed and
 * is bounded only by memory: every insert can fail with out of memory.
 */
#ifndef FLOE_IDMAP_H
#define FLOE_IDMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct idmap;

/* A new empty map sized for about expected entries; NULL when out of
 * memory. The caller frees it with idmap_free. */
struct idmap *idmap_new(size_t expected);

/* Frees the map; safe on NULL. */
void idmap_free(struct idmap *m);

/* Sets key to value (replacing an old value). False only when out of
 * memory, and then the map is unchanged. */
bool idmap_put(struct idmap *m, int64_t key, int64_t value) __attribute__((warn_unused_result));

/* True when key is in the map; *value (when not NULL) gets its value. */
bool idmap_get(const struct idmap *m, int64_t key, int64_t *value);

/* True when key is in the map. */
bool idmap_has(const struct idmap *m, int64_t key);

/* Removes key; true when it was there. */
bool idmap_del(struct idmap *m, int64_t key);

/* The number of keys in the map. */
size_t idmap_count(const struct idmap *m);

#endif
