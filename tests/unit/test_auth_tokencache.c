/* The verified-token cache: a hit gives back what was put, byte for
 * byte; an unknown token, an expired one (then removed) and another
 * token of one byte's difference miss; a full cache evicts the least
 * recently used entry and keeps its size; a disabled principal's tokens
 * stop answering at once; a clear empties it. Threads sharing it:
 * stress_auth.c (which ThreadSanitizer runs too). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "tokencache.h"

#define NOW 1700000000LL

static struct tokencache_entry entry_of(int64_t id, const char *name, long long exp)
{
	struct tokencache_entry e;

	memset(&e, 0, sizeof(e));
	e.principal_id = id;
	(void)snprintf(e.principal_name, sizeof(e.principal_name), "%s", name);
	(void)snprintf(e.client_id, sizeof(e.client_id), "client-%s", name);
	e.nroles = 3;
	e.roles[0] = id * 10;
	e.roles[1] = id * 10 + 1;
	e.roles[2] = id * 10 + 2;
	e.exp = exp;
	return e;
}

static void put(struct tokencache *tc, const char *token, const struct tokencache_entry *e)
{
	tokencache_put(tc, token, strlen(token), e);
}

static bool get(struct tokencache *tc, const char *token, long long now,
		struct tokencache_entry *out)
{
	return tokencache_get(tc, token, strlen(token), now, out);
}

Test(auth_tokencache, a_hit_gives_back_the_entry)
{
	struct tokencache *tc = tokencache_new(TOKENCACHE_DEFAULT_CAPACITY);
	struct tokencache_entry e = entry_of(7, "alice", NOW + 3600);
	struct tokencache_entry out;

	cr_assert_not_null(tc);
	put(tc, "eyJ.a.b", &e);
	memset(&out, 0x5A, sizeof(out));
	cr_assert(get(tc, "eyJ.a.b", NOW, &out));
	cr_assert_eq(out.principal_id, 7);
	cr_assert_str_eq(out.principal_name, "alice");
	cr_assert_str_eq(out.client_id, "client-alice");
	cr_assert_eq(out.nroles, 3);
	cr_assert_eq(out.roles[2], 72);
	cr_assert_eq(out.exp, NOW + 3600);
	cr_assert_eq(tokencache_count(tc), 1);
	tokencache_free(tc);
}

Test(auth_tokencache, other_tokens_miss)
{
	struct tokencache *tc = tokencache_new(16);
	struct tokencache_entry e = entry_of(7, "alice", NOW + 3600);
	struct tokencache_entry out;
	const char token[] = "eyJ.a.b";

	put(tc, token, &e);
	cr_assert_not(get(tc, "eyJ.a.c", NOW, &out));
	cr_assert_not(get(tc, "eyJ.a.", NOW, &out));
	cr_assert_not(get(tc, "", NOW, &out));
	/* The length is the caller's: a prefix of the text is another token. */
	cr_assert_not(tokencache_get(tc, token, sizeof(token) - 2, NOW, &out));
	cr_assert(tokencache_get(tc, token, sizeof(token) - 1, NOW, &out));
	tokencache_free(tc);
}

Test(auth_tokencache, an_expired_entry_misses_and_is_removed)
{
	struct tokencache *tc = tokencache_new(16);
	struct tokencache_entry e = entry_of(7, "alice", NOW + 10);
	struct tokencache_entry out;

	put(tc, "t", &e);
	cr_assert(get(tc, "t", NOW + 9, &out));
	cr_assert_not(get(tc, "t", NOW + 10, &out));
	cr_assert_eq(tokencache_count(tc), 0);
	/* Gone, not merely hidden: an earlier clock does not bring it back. */
	cr_assert_not(get(tc, "t", NOW, &out));
	tokencache_free(tc);
}

Test(auth_tokencache, put_replaces_what_a_token_had)
{
	struct tokencache *tc = tokencache_new(16);
	struct tokencache_entry e = entry_of(7, "alice", NOW + 10);
	struct tokencache_entry f = entry_of(8, "bob", NOW + 20);
	struct tokencache_entry out;

	put(tc, "t", &e);
	put(tc, "t", &f);
	cr_assert_eq(tokencache_count(tc), 1);
	cr_assert(get(tc, "t", NOW + 15, &out));
	cr_assert_str_eq(out.principal_name, "bob");
	tokencache_free(tc);
}

Test(auth_tokencache, a_full_cache_evicts_the_least_recently_used)
{
	/* One stripe, so that the order is exact. */
	struct tokencache *tc = tokencache_new_striped(3, 1);
	struct tokencache_entry out;
	struct tokencache_entry e = entry_of(1, "a", NOW + 100);

	put(tc, "t1", &e);
	put(tc, "t2", &e);
	put(tc, "t3", &e);
	cr_assert(get(tc, "t1", NOW, &out)); /* t2 is now the least recent */
	put(tc, "t4", &e);
	cr_assert_eq(tokencache_count(tc), 3);
	cr_assert_not(get(tc, "t2", NOW, &out));
	cr_assert(get(tc, "t1", NOW, &out));
	cr_assert(get(tc, "t3", NOW, &out));
	cr_assert(get(tc, "t4", NOW, &out));
	tokencache_free(tc);
}

Test(auth_tokencache, the_striped_cache_keeps_its_capacity)
{
	const size_t cap = 1000;
	struct tokencache *tc = tokencache_new(cap);
	struct tokencache_entry out;
	char token[32];
	size_t hits = 0;

	for (int i = 0; i < 5000; i++) {
		struct tokencache_entry e = entry_of(i, "p", NOW + 100);
		(void)snprintf(token, sizeof(token), "token-%d", i);
		put(tc, token, &e);
		cr_assert_leq(tokencache_count(tc), cap);
	}
	cr_assert_eq(tokencache_count(tc), cap);
	/* The newest are the ones kept: the last of each stripe's share. */
	for (int i = 5000 - 500; i < 5000; i++) {
		(void)snprintf(token, sizeof(token), "token-%d", i);
		if (get(tc, token, NOW, &out)) {
			cr_assert_eq(out.principal_id, i);
			hits++;
		}
	}
	cr_assert_geq(hits, 450, "%zu of the 500 newest kept", hits);
	(void)snprintf(token, sizeof(token), "token-%d", 0);
	cr_assert_not(get(tc, token, NOW, &out));
	tokencache_free(tc);
}

Test(auth_tokencache, a_small_cache_is_not_rounded_up_by_its_stripes)
{
	struct tokencache *tc = tokencache_new(2);
	struct tokencache_entry e = entry_of(1, "a", NOW + 100);

	put(tc, "t1", &e);
	put(tc, "t2", &e);
	put(tc, "t3", &e);
	put(tc, "t4", &e);
	/* Two stripes of one: two entries at most, whichever stripes the
	 * tokens fall in. */
	cr_assert_leq(tokencache_count(tc), 2);
	cr_assert_geq(tokencache_count(tc), 1);
	tokencache_free(tc);
	cr_assert_null(tokencache_new(0));
	cr_assert_null(tokencache_new_striped(10, 0));
	cr_assert_null(tokencache_new_striped(10, TOKENCACHE_STRIPES + 1));
}

Test(auth_tokencache, drop_principal_removes_its_tokens_only)
{
	/* Room for all: no stripe evicts. */
	struct tokencache *tc = tokencache_new(TOKENCACHE_DEFAULT_CAPACITY);
	struct tokencache_entry out;
	char token[32];

	for (int i = 0; i < 20; i++) {
		struct tokencache_entry e = entry_of(i % 2 == 0 ? 7 : 8, "x", NOW + 100);
		(void)snprintf(token, sizeof(token), "token-%d", i);
		put(tc, token, &e);
	}
	cr_assert_eq(tokencache_drop_principal(tc, 7), 10);
	cr_assert_eq(tokencache_count(tc), 10);
	for (int i = 0; i < 20; i++) {
		(void)snprintf(token, sizeof(token), "token-%d", i);
		cr_assert_eq(get(tc, token, NOW, &out), i % 2 == 1, "token %d", i);
	}
	cr_assert_eq(tokencache_drop_principal(tc, 7), 0);
	/* The freed places are used again. */
	struct tokencache_entry e = entry_of(9, "y", NOW + 100);
	put(tc, "new", &e);
	cr_assert(get(tc, "new", NOW, &out));
	cr_assert_eq(tokencache_count(tc), 11);
	tokencache_free(tc);
}

Test(auth_tokencache, clear_empties_it)
{
	struct tokencache *tc = tokencache_new(64);
	struct tokencache_entry e = entry_of(1, "a", NOW + 100);
	struct tokencache_entry out;

	put(tc, "t1", &e);
	put(tc, "t2", &e);
	tokencache_clear(tc);
	cr_assert_eq(tokencache_count(tc), 0);
	cr_assert_not(get(tc, "t1", NOW, &out));
	put(tc, "t1", &e);
	cr_assert(get(tc, "t1", NOW, &out));
	tokencache_free(tc);
}

Test(auth_tokencache, long_names_and_too_many_roles_are_cut)
{
	struct tokencache *tc = tokencache_new(4);
	struct tokencache_entry e = entry_of(1, "a", NOW + 100);
	struct tokencache_entry out;

	memset(e.principal_name, 'n', sizeof(e.principal_name));
	memset(e.client_id, 'c', sizeof(e.client_id));
	e.nroles = 1000;
	put(tc, "t", &e);
	cr_assert(get(tc, "t", NOW, &out));
	cr_assert_eq(strlen(out.principal_name), TOKENCACHE_NAME_MAX);
	cr_assert_eq(strlen(out.client_id), TOKENCACHE_NAME_MAX);
	cr_assert_eq(out.nroles, TOKENCACHE_MAX_ROLES);
	tokencache_free(tc);
}
