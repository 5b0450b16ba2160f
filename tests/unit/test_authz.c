/*
 * catalog/authz.c and the first start's bootstrap, driven through the
 * store's fakes (tests/unit/fakes): every implication of docs/auth.md,
 * grants inherited from the catalog and from namespaces above, the 403
 * and its exact message, a store failure that allows nothing, and the
 * administrator made once.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "authz.h"
#include "fakes.h"
#include "principals.h"

static struct floe_error err;
static struct ns_ident ns_a, ns_ab, ns_abc, ns_x;
static long long role_id, other_role_id;
static struct principal alice;

static void levels(struct ns_ident *ns, int n, const char *const *names)
{
	memset(ns, 0, sizeof(*ns));
	for (int i = 0; i < n; i++)
		ns->levels[i] = strdup(names[i]);
	ns->nlevels = (size_t)n;
}

static void setup(void)
{
	static const char *const abc[] = { "a", "b", "c" };
	static const char *const x[] = { "x" };

	fake_reset();
	floe_error_clear(&err);
	levels(&ns_a, 1, abc);
	levels(&ns_ab, 2, abc);
	levels(&ns_abc, 3, abc);
	levels(&ns_x, 1, x);
	cr_assert(store_role_insert(fake_store(), "analysts", &role_id, &err));
	cr_assert(store_role_insert(fake_store(), "others", &other_role_id, &err));
	alice = (struct principal){ .id = 7, .name = "alice", .roles = &role_id, .nroles = 1 };
}

static void teardown(void)
{
	ident_ns_clear(&ns_a);
	ident_ns_clear(&ns_ab);
	ident_ns_clear(&ns_abc);
	ident_ns_clear(&ns_x);
}

TestSuite(authz, .init = setup, .fini = teardown, .timeout = 30);

static void grant(const char *role, const char *priv, enum grant_on on, const struct ns_ident *ns,
		  const char *table)
{
	bool inserted = false;
	cr_assert(store_grant_insert(fake_store(), role, priv, on, ns, table, &inserted, &err),
		  "%s", err.message);
	cr_assert(inserted);
}

static const struct authz_object catalog = { .kind = AUTHZ_CATALOG, .ns = NULL, .table = NULL };

static struct authz_object on_ns(const struct ns_ident *ns)
{
	return (struct authz_object){ .kind = AUTHZ_NAMESPACE, .ns = ns, .table = NULL };
}

static struct authz_object on_table(const struct ns_ident *ns, const char *t)
{
	return (struct authz_object){ .kind = AUTHZ_TABLE, .ns = ns, .table = t };
}

static bool allowed(enum privilege priv, struct authz_object obj)
{
	floe_error_clear(&err);
	bool ok = authz_check(fake_store(), &alice, priv, &obj, &err);
	if (!ok)
		cr_assert_eq(err.kind, FE_FORBIDDEN, "%s", err.message);
	return ok;
}

/* The effective privileges on obj as one comma-separated string. */
static char *effective(struct authz_object obj)
{
	json_t *arr = NULL;
	cr_assert(authz_privileges(fake_store(), &alice, &obj, &arr, &err), "%s", err.message);
	char *text = json_dumps(arr, JSON_COMPACT);
	json_decref(arr);
	return text;
}

Test(authz, names_round_trip_and_are_sorted)
{
	enum privilege p;

	for (int i = 0; i < PRIV_COUNT; i++) {
		cr_assert(privilege_from_name(privilege_name((enum privilege)i), &p));
		cr_assert_eq(p, (enum privilege)i);
		if (i > 0)
			cr_assert_lt(strcmp(privilege_name((enum privilege)(i - 1)),
					    privilege_name((enum privilege)i)),
				     0);
	}
	cr_assert_eq(PRIV_COUNT, 16);
	cr_assert_not(privilege_from_name("table_read", &p));
	cr_assert_not(privilege_from_name("", &p));
	cr_assert_not(privilege_from_name(NULL, &p));
	cr_assert_null(privilege_name(PRIV_COUNT));
}

Test(authz, grantable_where_the_table_says)
{
	cr_assert(privilege_grantable_on(PRIV_ADMIN, AUTHZ_CATALOG));
	cr_assert_not(privilege_grantable_on(PRIV_ADMIN, AUTHZ_NAMESPACE));
	cr_assert_not(privilege_grantable_on(PRIV_ADMIN, AUTHZ_TABLE));
	cr_assert(privilege_grantable_on(PRIV_TABLE_CREATE, AUTHZ_NAMESPACE));
	cr_assert_not(privilege_grantable_on(PRIV_TABLE_CREATE, AUTHZ_TABLE));
	cr_assert_not(privilege_grantable_on(PRIV_NAMESPACE_READ, AUTHZ_TABLE));
	cr_assert(privilege_grantable_on(PRIV_WAP_PUBLISH, AUTHZ_TABLE));
	cr_assert(privilege_grantable_on(PRIV_AUDIT_READ, AUTHZ_TABLE));
}

Test(authz, no_grant_is_forbidden_with_the_exact_message)
{
	struct authz_object t = on_table(&ns_ab, "t");

	cr_assert_not(authz_check(fake_store(), &alice, PRIV_TABLE_WRITE_MAIN, &t, &err));
	cr_assert_eq(err.kind, FE_FORBIDDEN);
	cr_assert_str_eq(err.message, "Principal alice lacks TABLE_WRITE_MAIN on table a.b.t");
	cr_assert_eq(floe_errkind_status(err.kind), 403);
	cr_assert_str_eq(floe_errkind_type(err.kind), "ForbiddenException");

	struct authz_object n = on_ns(&ns_ab);
	cr_assert_not(authz_check(fake_store(), &alice, PRIV_NAMESPACE_DROP, &n, &err));
	cr_assert_str_eq(err.message, "Principal alice lacks NAMESPACE_DROP on namespace a.b");

	cr_assert_not(authz_check(fake_store(), &alice, PRIV_ADMIN, &catalog, &err));
	cr_assert_str_eq(err.message, "Principal alice lacks ADMIN on the catalog");
}

Test(authz, no_principal_means_authentication_is_off)
{
	struct authz_object t = on_table(&ns_ab, "t");
	json_t *all = NULL;

	cr_assert(authz_check(fake_store(), NULL, PRIV_ADMIN, &catalog, &err));
	cr_assert(authz_check(fake_store(), NULL, PRIV_TABLE_DROP, &t, &err));
	cr_assert_eq(fake_calls("store_privileges_on"), 0);
	cr_assert(authz_privileges(fake_store(), NULL, &catalog, &all, &err));
	cr_assert_eq(json_array_size(all), 16);
	json_decref(all);
}

Test(authz, admin_on_the_catalog_implies_everything_everywhere)
{
	grant("analysts", "ADMIN", GRANT_ON_CATALOG, NULL, NULL);
	for (int i = 0; i < PRIV_COUNT; i++) {
		cr_assert(allowed((enum privilege)i, catalog));
		cr_assert(allowed((enum privilege)i, on_ns(&ns_abc)));
		cr_assert(allowed((enum privilege)i, on_table(&ns_x, "t")));
	}
	char *e = effective(on_table(&ns_x, "t"));
	cr_assert_str_eq(e, "[\"AUDIT_READ\",\"CONTROLS_MANAGE\",\"HOOKS_MANAGE\","
			    "\"TABLE_DROP\",\"TABLE_READ\",\"TABLE_UPDATE_PROPERTIES\","
			    "\"TABLE_WRITE\",\"TABLE_WRITE_MAIN\",\"WAP_PUBLISH\",\"WAP_STAGE\"]");
	free(e);
}

Test(authz, write_main_implies_write_and_read_nothing_more)
{
	struct authz_object t = on_table(&ns_ab, "t");

	grant("analysts", "TABLE_WRITE_MAIN", GRANT_ON_TABLE, &ns_ab, "t");
	cr_assert(allowed(PRIV_TABLE_WRITE_MAIN, t));
	cr_assert(allowed(PRIV_TABLE_WRITE, t));
	cr_assert(allowed(PRIV_TABLE_READ, t));
	for (int i = 0; i < PRIV_COUNT; i++) {
		if (i != PRIV_TABLE_WRITE_MAIN && i != PRIV_TABLE_WRITE && i != PRIV_TABLE_READ)
			cr_assert_not(allowed((enum privilege)i, t), "%s",
				      privilege_name((enum privilege)i));
	}
	char *e = effective(t);
	cr_assert_str_eq(e, "[\"TABLE_READ\",\"TABLE_WRITE\",\"TABLE_WRITE_MAIN\"]");
	free(e);
	/* another table of the namespace, and the namespace: nothing */
	cr_assert_not(allowed(PRIV_TABLE_READ, on_table(&ns_ab, "u")));
	cr_assert_not(allowed(PRIV_NAMESPACE_READ, on_ns(&ns_ab)));
}

Test(authz, write_does_not_imply_write_main)
{
	struct authz_object t = on_table(&ns_ab, "t");

	grant("analysts", "TABLE_WRITE", GRANT_ON_TABLE, &ns_ab, "t");
	cr_assert(allowed(PRIV_TABLE_WRITE, t));
	cr_assert_not(allowed(PRIV_TABLE_WRITE_MAIN, t));
	cr_assert_str_eq(err.message, "Principal alice lacks TABLE_WRITE_MAIN on table a.b.t");
}

Test(authz, every_privilege_on_an_object_implies_reading_it)
{
	static const char *const on_tables[] = { "TABLE_DROP",      "TABLE_UPDATE_PROPERTIES",
						 "TABLE_WRITE",     "WAP_STAGE",
						 "WAP_PUBLISH",     "HOOKS_MANAGE",
						 "CONTROLS_MANAGE", "AUDIT_READ",
						 "TABLE_WRITE_MAIN" };
	for (size_t i = 0; i < sizeof(on_tables) / sizeof(on_tables[0]); i++) {
		fake_reset();
		cr_assert(store_role_insert(fake_store(), "analysts", &role_id, &err));
		grant("analysts", on_tables[i], GRANT_ON_TABLE, &ns_ab, "t");
		cr_assert(allowed(PRIV_TABLE_READ, on_table(&ns_ab, "t")), "%s", on_tables[i]);
		cr_assert_not(allowed(PRIV_TABLE_READ, on_table(&ns_ab, "u")), "%s", on_tables[i]);
	}
	static const char *const on_namespaces[] = { "NAMESPACE_CREATE", "NAMESPACE_DROP",
						     "NAMESPACE_UPDATE_PROPERTIES",
						     "TABLE_CREATE" };
	for (size_t i = 0; i < sizeof(on_namespaces) / sizeof(on_namespaces[0]); i++) {
		fake_reset();
		cr_assert(store_role_insert(fake_store(), "analysts", &role_id, &err));
		grant("analysts", on_namespaces[i], GRANT_ON_NAMESPACE, &ns_ab, NULL);
		cr_assert(allowed(PRIV_NAMESPACE_READ, on_ns(&ns_ab)), "%s", on_namespaces[i]);
		cr_assert(allowed(PRIV_NAMESPACE_READ, on_ns(&ns_abc)), "%s", on_namespaces[i]);
		cr_assert_not(allowed(PRIV_NAMESPACE_READ, on_ns(&ns_a)), "%s", on_namespaces[i]);
		cr_assert_not(allowed(PRIV_TABLE_DROP, on_table(&ns_ab, "t")), "%s",
			      on_namespaces[i]);
	}
}

Test(authz, nothing_else_implies_anything)
{
	struct authz_object t = on_table(&ns_ab, "t");

	grant("analysts", "WAP_STAGE", GRANT_ON_TABLE, &ns_ab, "t");
	cr_assert_not(allowed(PRIV_WAP_PUBLISH, t));
	cr_assert_not(allowed(PRIV_TABLE_WRITE, t));
	grant("analysts", "CONTROLS_MANAGE", GRANT_ON_TABLE, &ns_ab, "t");
	cr_assert_not(allowed(PRIV_HOOKS_MANAGE, t));
	cr_assert_not(allowed(PRIV_TABLE_UPDATE_PROPERTIES, t));
	char *e = effective(t);
	cr_assert_str_eq(e, "[\"CONTROLS_MANAGE\",\"TABLE_READ\",\"WAP_STAGE\"]");
	free(e);
}

Test(authz, a_namespace_grant_applies_to_everything_below)
{
	grant("analysts", "TABLE_DROP", GRANT_ON_NAMESPACE, &ns_a, NULL);
	cr_assert(allowed(PRIV_TABLE_DROP, on_table(&ns_a, "t")));
	cr_assert(allowed(PRIV_TABLE_DROP, on_table(&ns_abc, "deep")));
	cr_assert(allowed(PRIV_NAMESPACE_READ, on_ns(&ns_ab)));
	cr_assert(allowed(PRIV_TABLE_READ, on_table(&ns_ab, "t")));
	/* not beside it, not above it */
	cr_assert_not(allowed(PRIV_TABLE_DROP, on_table(&ns_x, "t")));
	cr_assert_str_eq(err.message, "Principal alice lacks TABLE_DROP on table x.t");
	cr_assert_not(allowed(PRIV_NAMESPACE_READ, catalog));
}

Test(authz, a_catalog_grant_applies_to_every_namespace_and_table)
{
	grant("analysts", "TABLE_READ", GRANT_ON_CATALOG, NULL, NULL);
	cr_assert(allowed(PRIV_TABLE_READ, on_table(&ns_x, "t")));
	cr_assert(allowed(PRIV_TABLE_READ, on_table(&ns_abc, "t")));
	cr_assert(allowed(PRIV_NAMESPACE_READ, catalog));
	cr_assert(allowed(PRIV_NAMESPACE_READ, on_ns(&ns_abc)));
	cr_assert_not(allowed(PRIV_TABLE_WRITE, on_table(&ns_x, "t")));
	cr_assert_not(allowed(PRIV_NAMESPACE_CREATE, catalog));
}

Test(authz, only_the_principals_roles_count)
{
	grant("others", "ADMIN", GRANT_ON_CATALOG, NULL, NULL);
	cr_assert_not(allowed(PRIV_TABLE_READ, on_table(&ns_ab, "t")));
	long long both[2] = { role_id, other_role_id };
	alice.roles = both;
	alice.nroles = 2;
	cr_assert(allowed(PRIV_TABLE_READ, on_table(&ns_ab, "t")));
	alice.nroles = 0;
	cr_assert_not(allowed(PRIV_TABLE_READ, on_table(&ns_ab, "t")));
}

Test(authz, a_store_failure_allows_nothing)
{
	struct authz_object t = on_table(&ns_ab, "t");
	json_t *arr = NULL;

	grant("analysts", "ADMIN", GRANT_ON_CATALOG, NULL, NULL);
	fake_fail("store_privileges_on", 1, fake_conn_lost(), false);
	cr_assert_not(authz_check(fake_store(), &alice, PRIV_TABLE_READ, &t, &err));
	cr_assert_eq(err.kind, FE_UNAVAILABLE);
	cr_assert_str_eq(err.message, "The catalog database is unavailable");
	fake_fail("store_privileges_on", 1, fake_conn_lost(), false);
	cr_assert_not(authz_privileges(fake_store(), &alice, &t, &arr, &err));
	cr_assert_null(arr);
	/* the next call, with the database back, is allowed again */
	cr_assert(allowed(PRIV_TABLE_READ, t));
}

Test(authz, a_listing_needs_a_grant_on_above_or_below_its_namespace)
{
	cr_assert(authz_check_listing(fake_store(), NULL, &ns_ab, &err));
	cr_assert(authz_check_listing(fake_store(), &alice, NULL, &err));
	cr_assert_not(authz_check_listing(fake_store(), &alice, &ns_ab, &err));
	cr_assert_eq(err.kind, FE_FORBIDDEN);
	cr_assert_str_eq(err.message, "Principal alice lacks NAMESPACE_READ on namespace a.b");

	grant("analysts", "TABLE_READ", GRANT_ON_TABLE, &ns_abc, "t");
	cr_assert(authz_check_listing(fake_store(), &alice, &ns_a, &err));
	cr_assert(authz_check_listing(fake_store(), &alice, &ns_abc, &err));
	cr_assert_not(authz_check_listing(fake_store(), &alice, &ns_x, &err));
	grant("analysts", "NAMESPACE_READ", GRANT_ON_NAMESPACE, &ns_x, NULL);
	cr_assert(authz_check_listing(fake_store(), &alice, &ns_x, &err));

	fake_fail("store_ns_visible", 1, fake_conn_lost(), false);
	cr_assert_not(authz_check_listing(fake_store(), &alice, &ns_x, &err));
	cr_assert_eq(err.kind, FE_UNAVAILABLE);
}

/* --- the first start's administrator --- */

TestSuite(bootstrap, .init = setup, .fini = teardown, .timeout = 30);

static void assert_admin(const char *name)
{
	struct principal_row row;
	bool found = false;
	long long *ids = NULL;
	char **names = NULL;
	size_t n = 0;

	cr_assert(store_principal_by_name(fake_store(), name, &row, &found, &err));
	cr_assert(found);
	cr_assert_str_eq(row.kind, "client");
	cr_assert_str_eq(row.source, "floe");
	cr_assert_str_eq(row.client_id, "admin-client");
	cr_assert_str_eq(row.secret_hash, "scrypt$hash");
	cr_assert(store_principal_roles(fake_store(), row.id, &ids, &names, &n, &err));
	cr_assert_eq(n, 1);
	cr_assert_str_eq(names[0], PRINCIPALS_ADMIN_ROLE);
	struct principal admin = { row.id, row.name, row.client_id, ids, n, NULL };
	for (int i = 0; i < PRIV_COUNT; i++)
		cr_assert(authz_check(fake_store(), &admin, (enum privilege)i, &catalog, &err));
	free(ids);
	store_names_free(names, n);
	store_principal_row_clear(&row);
}

Test(bootstrap, makes_the_admin_once)
{
	bool created = false;
	long long n = 0;

	cr_assert(principals_bootstrap(fake_store(), "admin", "admin-client", "scrypt$hash",
				       &created, &err),
		  "%s", err.message);
	cr_assert(created);
	assert_admin("admin");
	cr_assert_eq(fake_calls("store_principal_lock"), 1);

	cr_assert(
		principals_bootstrap(fake_store(), "admin2", "other", "scrypt$x", &created, &err));
	cr_assert_not(created);
	cr_assert(store_principal_count(fake_store(), &n, &err));
	cr_assert_eq(n, 1);
	cr_assert_eq(fake_calls("store_principal_insert"), 1);
}

Test(bootstrap, keeps_an_admin_role_left_from_before)
{
	bool created = false;
	long long id = 0;

	cr_assert(store_role_insert(fake_store(), PRINCIPALS_ADMIN_ROLE, &id, &err));
	cr_assert(principals_bootstrap(fake_store(), "admin", "admin-client", "scrypt$hash",
				       &created, &err),
		  "%s", err.message);
	cr_assert(created);
	assert_admin("admin");
}

Test(bootstrap, a_failure_at_any_step_leaves_nothing)
{
	static const char *const steps[] = { "store_begin",           "store_principal_lock",
					     "store_principal_count", "store_role_insert",
					     "store_grant_insert",    "store_principal_insert",
					     "store_role_member_add", "store_commit" };
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		bool created = true;
		long long n = -1;
		size_t nroles = 99;
		struct role_row *roles = NULL;
		bool more = false;

		fake_reset();
		fake_fail(steps[i], 1, fake_conn_lost(), false);
		cr_assert_not(principals_bootstrap(fake_store(), "admin", "admin-client",
						   "scrypt$hash", &created, &err),
			      "%s", steps[i]);
		cr_assert_not(created, "%s", steps[i]);
		cr_assert_eq(err.kind, FE_UNAVAILABLE, "%s: %s", steps[i], err.message);
		cr_assert(store_principal_count(fake_store(), &n, &err));
		cr_assert_eq(n, 0, "%s", steps[i]);
		cr_assert(store_role_list(fake_store(), NULL, -1, &roles, &nroles, &more, &err));
		cr_assert_eq(nroles, 0, "%s left a role", steps[i]);
		store_role_rows_free(roles, nroles);
		/* and a retry makes it */
		cr_assert(principals_bootstrap(fake_store(), "admin", "admin-client", "scrypt$hash",
					       &created, &err),
			  "%s: %s", steps[i], err.message);
		cr_assert(created);
	}
}

Test(bootstrap, a_taken_name_fails_and_changes_nothing)
{
	bool created = true;
	long long n = -1;

	fake_fail("store_principal_insert", 1,
		  fake_error(FE_ALREADY_EXISTS, FO_FAILED, "", "taken"), false);
	cr_assert_not(principals_bootstrap(fake_store(), "admin", "admin-client", "scrypt$hash",
					   &created, &err));
	cr_assert_eq(err.kind, FE_ALREADY_EXISTS);
	cr_assert(store_principal_count(fake_store(), &n, &err));
	cr_assert_eq(n, 0);
}

/* --- the fakes' visible listings follow the store's rule --- */

Test(authz, visible_listings_show_the_path_to_a_grant)
{
	char **names = NULL;
	size_t n = 0;
	bool more = false, vis = false;
	struct ns_ident *rows = NULL;

	fake_store_add_object(&ns_a, NULL);
	fake_store_add_object(&ns_ab, NULL);
	fake_store_add_object(&ns_x, NULL);
	fake_store_add_object(&ns_ab, "t");
	fake_store_add_object(&ns_ab, "u");
	grant("analysts", "TABLE_READ", GRANT_ON_TABLE, &ns_ab, "t");

	cr_assert(store_ns_list_visible(fake_store(), &role_id, 1, NULL, NULL, -1, &rows, &n, &more,
					&err));
	cr_assert_eq(n, 1);
	cr_assert_str_eq(rows[0].levels[0], "a");
	store_ns_rows_free(rows, n);
	cr_assert(store_table_list_visible(fake_store(), &role_id, 1, &ns_ab, NULL, -1, &names, &n,
					   &more, &err));
	cr_assert_eq(n, 1);
	cr_assert_str_eq(names[0], "t");
	store_names_free(names, n);
	cr_assert(store_ns_visible(fake_store(), &role_id, 1, &ns_a, &vis, &err));
	cr_assert(vis);
	cr_assert(store_ns_visible(fake_store(), &role_id, 1, &ns_x, &vis, &err));
	cr_assert_not(vis);
}
