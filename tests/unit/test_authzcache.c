/*
 * catalog/authzcache.c and its use by authz_check, through the store's
 * fakes: a kept set answers an allowed decision without the store, a
 * refusal always asks the store (a new grant counts at once), a forget or
 * a deaf cache stops every answer, a set read across a forget is never
 * kept, the order of the roles does not matter, objects do not answer
 * for each other, entries end with their lifetime and keys over the
 * limit are never kept.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "authz.h"
#include "authzcache.h"
#include "fakes.h"

static struct floe_error err;
static struct ns_ident ns_a, ns_b;
static long long role_id;
static struct principal alice;
static struct authz_cache *cache;

static void levels(struct ns_ident *ns, const char *name)
{
	memset(ns, 0, sizeof(*ns));
	ns->levels[0] = strdup(name);
	ns->nlevels = 1;
}

static void setup(void)
{
	fake_reset();
	floe_error_clear(&err);
	levels(&ns_a, "a");
	levels(&ns_b, "b");
	cr_assert(store_role_insert(fake_store(), "analysts", &role_id, &err));
	cache = authz_cache_new(64, 60000);
	cr_assert_not_null(cache);
	authz_cache_hear(cache, true);
	alice = (struct principal){
		.id = 7, .name = "alice", .roles = &role_id, .nroles = 1, .cache = cache
	};
}

static void teardown(void)
{
	authz_cache_free(cache);
	ident_ns_clear(&ns_a);
	ident_ns_clear(&ns_b);
}

TestSuite(authzcache, .init = setup, .fini = teardown, .timeout = 30);

static void grant(const char *priv, const struct ns_ident *ns)
{
	bool inserted = false;
	cr_assert(store_grant_insert(fake_store(), "analysts", priv, GRANT_ON_NAMESPACE, ns, NULL,
				     &inserted, &err),
		  "%s", err.message);
	cr_assert(inserted);
}

static void revoke(const char *priv, const struct ns_ident *ns)
{
	bool found = false;
	cr_assert(store_grant_delete(fake_store(), "analysts", priv, GRANT_ON_NAMESPACE, ns, NULL,
				     &found, &err),
		  "%s", err.message);
	cr_assert(found);
}

static bool allowed(enum privilege priv, const struct ns_ident *ns)
{
	struct authz_object obj = { .kind = AUTHZ_NAMESPACE, .ns = ns, .table = NULL };
	floe_error_clear(&err);
	bool ok = authz_check(fake_store(), &alice, priv, &obj, &err);
	if (!ok)
		cr_assert_eq(err.kind, FE_FORBIDDEN, "%s", err.message);
	return ok;
}

Test(authzcache, an_allowed_decision_is_kept_until_forgotten)
{
	grant("NAMESPACE_DROP", &ns_a);
	cr_assert(allowed(PRIV_NAMESPACE_DROP, &ns_a));
	revoke("NAMESPACE_DROP", &ns_a);
	/* Kept: the store is not asked (the daemon forgets on the change's
	 * notification). */
	cr_assert(allowed(PRIV_NAMESPACE_DROP, &ns_a));
	authz_cache_forget(cache);
	cr_assert_not(allowed(PRIV_NAMESPACE_DROP, &ns_a));
	cr_assert_str_eq(err.message, "Principal alice lacks NAMESPACE_DROP on namespace a");
}

Test(authzcache, a_refusal_asks_the_store_again)
{
	grant("NAMESPACE_READ", &ns_a);
	cr_assert(allowed(PRIV_NAMESPACE_READ, &ns_a));
	/* The kept set lacks NAMESPACE_DROP: the store is asked, so a grant
	 * made since counts at once, without a forget. */
	cr_assert_not(allowed(PRIV_NAMESPACE_DROP, &ns_a));
	grant("NAMESPACE_DROP", &ns_a);
	cr_assert(allowed(PRIV_NAMESPACE_DROP, &ns_a));
}

Test(authzcache, a_deaf_cache_answers_nothing_and_keeps_nothing)
{
	grant("NAMESPACE_DROP", &ns_a);
	cr_assert(allowed(PRIV_NAMESPACE_DROP, &ns_a));
	authz_cache_hear(cache, false);
	cr_assert_eq(authz_cache_ticket(cache), 0);
	revoke("NAMESPACE_DROP", &ns_a);
	cr_assert_not(allowed(PRIV_NAMESPACE_DROP, &ns_a));
	grant("NAMESPACE_DROP", &ns_a);
	cr_assert(allowed(PRIV_NAMESPACE_DROP, &ns_a)); /* asked, not kept */
	revoke("NAMESPACE_DROP", &ns_a);
	authz_cache_hear(cache, true);
	cr_assert_not(allowed(PRIV_NAMESPACE_DROP, &ns_a));
}

Test(authzcache, a_set_read_across_a_forget_is_not_kept)
{
	struct authz_object obj = { .kind = AUTHZ_NAMESPACE, .ns = &ns_a, .table = NULL };
	uint32_t set = 0;
	uint64_t ticket = authz_cache_ticket(cache);

	cr_assert_neq(ticket, 0);
	authz_cache_forget(cache); /* a change heard while the store answered */
	authz_cache_put(cache, ticket, alice.roles, alice.nroles, &obj, 0x1);
	cr_assert_not(authz_cache_get(cache, alice.roles, alice.nroles, &obj, &set));
	authz_cache_put(cache, authz_cache_ticket(cache), alice.roles, alice.nroles, &obj, 0x1);
	cr_assert(authz_cache_get(cache, alice.roles, alice.nroles, &obj, &set));
	cr_assert_eq(set, 0x1);
}

Test(authzcache, the_key_is_the_role_set_and_the_object)
{
	long long ab[] = { 3, 9 }, ba[] = { 9, 3 }, a_only[] = { 3 };
	struct authz_object on_a = { .kind = AUTHZ_NAMESPACE, .ns = &ns_a, .table = NULL };
	struct authz_object on_b = { .kind = AUTHZ_NAMESPACE, .ns = &ns_b, .table = NULL };
	struct authz_object t_in_a = { .kind = AUTHZ_TABLE, .ns = &ns_a, .table = "t" };
	struct authz_object catalog = { .kind = AUTHZ_CATALOG, .ns = NULL, .table = NULL };
	uint32_t set = 0;

	authz_cache_put(cache, authz_cache_ticket(cache), ab, 2, &on_a, 0x5);
	cr_assert(authz_cache_get(cache, ba, 2, &on_a, &set));
	cr_assert_eq(set, 0x5);
	cr_assert_not(authz_cache_get(cache, a_only, 1, &on_a, &set));
	cr_assert_not(authz_cache_get(cache, ab, 2, &on_b, &set));
	cr_assert_not(authz_cache_get(cache, ab, 2, &t_in_a, &set));
	cr_assert_not(authz_cache_get(cache, ab, 2, &catalog, &set));
	cr_assert_not(authz_cache_get(cache, NULL, 0, &on_a, &set));
}

Test(authzcache, the_same_object_in_two_warehouses_is_two_keys)
{
	long long roles[] = { 3 };
	struct authz_object mine = { .kind = AUTHZ_NAMESPACE, .ns = &ns_a, .warehouse = "" };
	struct authz_object theirs = { .kind = AUTHZ_NAMESPACE, .ns = &ns_a, .warehouse = "files" };
	struct authz_object unnamed = { .kind = AUTHZ_NAMESPACE, .ns = &ns_a };
	struct authz_object their_catalog = { .kind = AUTHZ_CATALOG, .warehouse = "files" };
	struct authz_object my_catalog = { .kind = AUTHZ_CATALOG };
	uint32_t set = 0;

	authz_cache_put(cache, authz_cache_ticket(cache), roles, 1, &theirs, 0x3);
	authz_cache_put(cache, authz_cache_ticket(cache), roles, 1, &their_catalog, 0x7);
	cr_assert(authz_cache_get(cache, roles, 1, &theirs, &set));
	cr_assert_eq(set, 0x3);
	cr_assert_not(authz_cache_get(cache, roles, 1, &mine, &set));
	cr_assert_not(authz_cache_get(cache, roles, 1, &my_catalog, &set));
	/* NULL is the default warehouse, as "" is. */
	authz_cache_put(cache, authz_cache_ticket(cache), roles, 1, &mine, 0x1);
	cr_assert(authz_cache_get(cache, roles, 1, &unnamed, &set));
	cr_assert_eq(set, 0x1);
}

Test(authzcache, entries_end_with_their_lifetime)
{
	struct authz_cache *brief = authz_cache_new(8, 20);
	struct authz_object on_a = { .kind = AUTHZ_NAMESPACE, .ns = &ns_a, .table = NULL };
	struct timespec pause = { 0, 60 * 1000000L };
	uint32_t set = 0;

	cr_assert_not_null(brief);
	cr_assert_eq(authz_cache_ticket(brief), 0, "a new cache is deaf");
	authz_cache_hear(brief, true);
	authz_cache_put(brief, authz_cache_ticket(brief), &role_id, 1, &on_a, 0x2);
	cr_assert(authz_cache_get(brief, &role_id, 1, &on_a, &set));
	nanosleep(&pause, NULL);
	cr_assert_not(authz_cache_get(brief, &role_id, 1, &on_a, &set));
	authz_cache_free(brief);
}

Test(authzcache, a_key_over_the_limit_is_never_kept)
{
	char name[AUTHZ_CACHE_KEY_MAX + 1];
	struct authz_object long_table = { .kind = AUTHZ_TABLE, .ns = &ns_a, .table = name };
	uint32_t set = 0;

	memset(name, 't', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	authz_cache_put(cache, authz_cache_ticket(cache), &role_id, 1, &long_table, 0x2);
	cr_assert_not(authz_cache_get(cache, &role_id, 1, &long_table, &set));
}
