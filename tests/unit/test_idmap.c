/* The int64 id map: insert, replace, lookup, delete, growth. */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "idmap.h"

Test(idmap, put_get_replace)
{
	struct idmap *m = idmap_new(0);
	int64_t v = 0;

	cr_assert_not_null(m);
	cr_assert_not(idmap_get(m, 7, &v));
	cr_assert(idmap_put(m, 7, 70));
	cr_assert(idmap_put(m, -1, 10));
	cr_assert(idmap_put(m, INT64_MIN, 1));
	cr_assert(idmap_put(m, INT64_MAX, 2));
	cr_assert(idmap_get(m, 7, &v));
	cr_assert_eq(v, 70);
	cr_assert(idmap_put(m, 7, 71));
	cr_assert(idmap_get(m, 7, &v));
	cr_assert_eq(v, 71);
	cr_assert(idmap_get(m, INT64_MIN, &v));
	cr_assert_eq(v, 1);
	cr_assert(idmap_has(m, INT64_MAX));
	cr_assert(idmap_has(m, -1));
	cr_assert_eq(idmap_count(m), 4);
	idmap_free(m);
}

Test(idmap, grows_past_its_first_size)
{
	struct idmap *m = idmap_new(2);
	int64_t v;

	for (int64_t i = 0; i < 100000; i++)
		cr_assert(idmap_put(m, i * 7919, i));
	cr_assert_eq(idmap_count(m), 100000);
	for (int64_t i = 0; i < 100000; i++) {
		cr_assert(idmap_get(m, i * 7919, &v));
		cr_assert_eq(v, i);
	}
	cr_assert_not(idmap_has(m, 1));
	idmap_free(m);
}

/* Deleting from the middle of probe runs keeps every other key findable
 * (a wrong backward shift loses keys that collided). */
Test(idmap, delete_keeps_the_others)
{
	struct idmap *m = idmap_new(8);
	const int64_t n = 20000;

	for (int64_t i = 0; i < n; i++)
		cr_assert(idmap_put(m, i, -i));
	for (int64_t i = 0; i < n; i += 2)
		cr_assert(idmap_del(m, i));
	cr_assert_not(idmap_del(m, 0));
	cr_assert_eq(idmap_count(m), (size_t)n / 2);
	for (int64_t i = 0; i < n; i++) {
		int64_t v = 1;
		if (i % 2 == 0) {
			cr_assert_not(idmap_has(m, i), "deleted key %lld still there",
				      (long long)i);
		} else {
			cr_assert(idmap_get(m, i, &v), "key %lld lost", (long long)i);
			cr_assert_eq(v, -i);
		}
	}
	/* Reinsert after deletes. */
	for (int64_t i = 0; i < n; i += 2)
		cr_assert(idmap_put(m, i, i));
	cr_assert_eq(idmap_count(m), (size_t)n);
	idmap_free(m);
}

/* A pseudo-random workload checked against a plain array. */
Test(idmap, random_workload_matches_a_reference)
{
	enum { KEYS = 512, STEPS = 200000 };
	static int64_t ref[KEYS];
	static bool present[KEYS];
	struct idmap *m = idmap_new(0);
	uint64_t x = 88172645463325252ULL;

	for (int s = 0; s < STEPS; s++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		int k = (int)(x % KEYS);
		int64_t key = (int64_t)k * 1000003 - 250000;
		if ((x >> 20) % 3 == 0) {
			cr_assert_eq(idmap_del(m, key), present[k]);
			present[k] = false;
		} else {
			cr_assert(idmap_put(m, key, (int64_t)s));
			ref[k] = s;
			present[k] = true;
		}
	}
	size_t count = 0;
	for (int k = 0; k < KEYS; k++) {
		int64_t v;
		int64_t key = (int64_t)k * 1000003 - 250000;
		cr_assert_eq(idmap_get(m, key, &v), present[k]);
		if (present[k]) {
			cr_assert_eq(v, ref[k]);
			count++;
		}
	}
	cr_assert_eq(idmap_count(m), count);
	idmap_free(m);
}

Test(idmap, free_null_is_safe)
{
	idmap_free(NULL);
}
