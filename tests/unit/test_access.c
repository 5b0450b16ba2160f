/*
 * catalog/access.c on the store's fakes: the privileges a commit needs
 * from what its updates do, those of a namespace property change, the
 * order refusals are named in, and the checks of a commit, a new
 * namespace and a listing.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "access.h"
#include "fakes.h"

static struct floe_error err;
static struct ns_ident ns_a, ns_ab;
static long long role_id;
static struct principal alice;

static void setup(void)
{
	fake_reset();
	floe_error_clear(&err);
	memset(&ns_a, 0, sizeof(ns_a));
	memset(&ns_ab, 0, sizeof(ns_ab));
	ns_a.levels[0] = strdup("a");
	ns_a.nlevels = 1;
	ns_ab.levels[0] = strdup("a");
	ns_ab.levels[1] = strdup("b");
	ns_ab.nlevels = 2;
	cr_assert(store_role_insert(fake_store(), "writers", &role_id, &err));
	alice = (struct principal){ .id = 7, .name = "alice", .roles = &role_id, .nroles = 1 };
}

static void teardown(void)
{
	ident_ns_clear(&ns_a);
	ident_ns_clear(&ns_ab);
}

TestSuite(access, .init = setup, .fini = teardown, .timeout = 30);

static void grant(const char *priv, enum grant_on on, const struct ns_ident *ns)
{
	bool inserted = false;
	cr_assert(store_grant_insert(fake_store(), "writers", priv, on, ns, NULL, &inserted, &err),
		  "%s", err.message);
}

static access_set needs_of(const char *updates_json)
{
	json_error_t jerr;
	json_t *updates = json_loads(updates_json, 0, &jerr);
	cr_assert_not_null(updates, "%s", jerr.text);
	access_set needs = access_commit_needs(updates);
	json_decref(updates);
	return needs;
}

#define B(p) ACCESS_BIT(PRIV_##p)

Test(access, a_commit_needs_what_its_updates_do)
{
	cr_assert_eq(needs_of("[]"), B(TABLE_READ));
	cr_assert_eq(needs_of("[{\"action\":\"add-snapshot\",\"snapshot\":{}},"
			      "{\"action\":\"set-snapshot-ref\",\"ref-name\":\"dev\"}]"),
		     B(TABLE_WRITE));
	cr_assert_eq(needs_of("[{\"action\":\"add-snapshot\",\"snapshot\":{}},"
			      "{\"action\":\"set-snapshot-ref\",\"ref-name\":\"main\"}]"),
		     B(TABLE_WRITE_MAIN), "TABLE_WRITE is implied, so left out");
	cr_assert_eq(needs_of("[{\"action\":\"remove-snapshot-ref\",\"ref-name\":\"main\"}]"),
		     B(TABLE_WRITE_MAIN));
	cr_assert_eq(needs_of("[{\"action\":\"remove-snapshot-ref\",\"ref-name\":\"t1\"}]"),
		     B(TABLE_WRITE));
	cr_assert_eq(needs_of("[{\"action\":\"set-properties\",\"updates\":{\"owner\":\"x\"}}]"),
		     B(TABLE_UPDATE_PROPERTIES));
	cr_assert_eq(needs_of("[{\"action\":\"set-properties\","
			      "\"updates\":{\"floe.wap.required\":\"true\"}}]"),
		     B(CONTROLS_MANAGE));
	cr_assert_eq(needs_of("[{\"action\":\"remove-properties\","
			      "\"removals\":[\"floe.wap.required\",\"owner\"]}]"),
		     B(CONTROLS_MANAGE) | B(TABLE_UPDATE_PROPERTIES));
	cr_assert_eq(needs_of("[{\"action\":\"set-statistics\",\"statistics\":{}}]"),
		     B(TABLE_WRITE));
	/* Schema, spec, sort order, location and what floe does not know:
	 * what main's readers see changes. */
	static const char *const main_actions[] = {
		"add-schema",       "set-current-schema",     "add-spec",
		"set-default-spec", "add-sort-order",         "set-location",
		"remove-snapshots", "upgrade-format-version", "something-new",
	};
	for (size_t i = 0; i < sizeof(main_actions) / sizeof(main_actions[0]); i++) {
		char text[128];
		(void)snprintf(text, sizeof(text), "[{\"action\":\"%s\"}]", main_actions[i]);
		cr_assert_eq(needs_of(text), B(TABLE_WRITE_MAIN), "%s", main_actions[i]);
	}
	cr_assert_eq(needs_of("[{\"no-action\":1}]"), B(TABLE_WRITE_MAIN));
}

Test(access, a_namespace_property_change_needs_controls_manage_for_floe_keys)
{
	json_t *plain = json_pack("{s:{s:s}, s:[]}", "updates", "owner", "x", "removals");
	json_t *control = json_pack("{s:{}, s:[s]}", "updates", "removals",
				    "floe.wap.separation-of-duties");

	cr_assert_eq(access_ns_properties_needs(plain), B(NAMESPACE_UPDATE_PROPERTIES));
	cr_assert_eq(access_ns_properties_needs(control),
		     B(NAMESPACE_UPDATE_PROPERTIES) | B(CONTROLS_MANAGE));
	json_decref(plain);
	json_decref(control);
}

Test(access, a_register_needs_write_main_and_with_overwrite_drop_on_its_table)
{
	json_t *plain = json_pack("{s:s, s:s}", "name", "t", "metadata-location", "file:///m");
	json_t *over = json_pack("{s:s, s:b}", "name", "t", "overwrite", 1);
	json_t *not_over = json_pack("{s:s, s:b}", "name", "t", "overwrite", 0);

	cr_assert_eq(access_register_table_needs(plain), B(TABLE_WRITE_MAIN));
	cr_assert_eq(access_register_table_needs(not_over), B(TABLE_WRITE_MAIN));
	cr_assert_eq(access_register_table_needs(over), B(TABLE_WRITE_MAIN) | B(TABLE_DROP));
	/* The refusal names TABLE_WRITE_MAIN first. */
	struct authz_object t = { .kind = AUTHZ_TABLE, .ns = &ns_ab, .table = "t" };
	grant("TABLE_DROP", GRANT_ON_NAMESPACE, &ns_a);
	cr_assert_not(access_check_all(fake_store(), &alice, access_register_table_needs(over), &t,
				       &err));
	cr_assert_str_eq(err.message, "Principal alice lacks TABLE_WRITE_MAIN on table a.b.t");
	grant("TABLE_WRITE_MAIN", GRANT_ON_NAMESPACE, &ns_a);
	floe_error_clear(&err);
	cr_assert(access_check_all(fake_store(), &alice, access_register_table_needs(over), &t,
				   &err),
		  "%s", err.message);
	json_decref(plain);
	json_decref(over);
	json_decref(not_over);
}

static bool commit_allowed(const char *updates_json)
{
	json_error_t jerr;
	json_t *updates = json_loads(updates_json, 0, &jerr);
	floe_error_clear(&err);
	bool ok = access_check_commit(fake_store(), &alice, &ns_ab, "t", updates, &err);
	json_decref(updates);
	if (!ok)
		cr_assert_eq(err.kind, FE_FORBIDDEN, "%s", err.message);
	return ok;
}

Test(access, a_writer_on_a_namespace_commits_to_branches_below_it)
{
	grant("TABLE_WRITE", GRANT_ON_NAMESPACE, &ns_a);
	cr_assert(commit_allowed("[{\"action\":\"set-snapshot-ref\",\"ref-name\":\"dev\"}]"));
	cr_assert(commit_allowed("[]"));
	cr_assert_not(commit_allowed("[{\"action\":\"set-snapshot-ref\",\"ref-name\":\"main\"}]"));
	cr_assert_str_eq(err.message, "Principal alice lacks TABLE_WRITE_MAIN on table a.b.t");
	cr_assert_not(commit_allowed("[{\"action\":\"set-snapshot-ref\",\"ref-name\":\"dev\"},"
				     "{\"action\":\"set-properties\",\"updates\":{\"k\":\"v\"}}]"));
	cr_assert_str_eq(err.message,
			 "Principal alice lacks TABLE_UPDATE_PROPERTIES on table a.b.t");
	grant("TABLE_UPDATE_PROPERTIES", GRANT_ON_NAMESPACE, &ns_ab);
	cr_assert(commit_allowed("[{\"action\":\"set-properties\",\"updates\":{\"k\":\"v\"}}]"));
	cr_assert_not(commit_allowed("[{\"action\":\"set-properties\","
				     "\"updates\":{\"k\":\"v\",\"floe.x\":\"1\"}}]"));
	cr_assert_str_eq(err.message, "Principal alice lacks CONTROLS_MANAGE on table a.b.t");
}

Test(access, authentication_off_is_allowed_everything)
{
	json_t *updates = json_pack("[{s:s}]", "action", "add-schema");

	cr_assert(access_check_commit(fake_store(), NULL, &ns_ab, "t", updates, &err));
	cr_assert(access_check(fake_store(), NULL, PRIV_ADMIN, NULL, NULL, &err));
	cr_assert(access_check_ns_create(fake_store(), NULL, &ns_ab, &err));
	cr_assert(access_check_listing(fake_store(), NULL, &ns_ab, &err));
	json_decref(updates);
}

Test(access, a_new_namespace_asks_its_parent_or_the_catalog)
{
	grant("NAMESPACE_CREATE", GRANT_ON_NAMESPACE, &ns_a);
	cr_assert(access_check_ns_create(fake_store(), &alice, &ns_ab, &err), "%s", err.message);
	cr_assert_not(access_check_ns_create(fake_store(), &alice, &ns_a, &err));
	cr_assert_str_eq(err.message, "Principal alice lacks NAMESPACE_CREATE on the catalog");
}

Test(access, a_reader_above_a_namespace_may_list_it_whether_or_not_it_exists)
{
	floe_error_clear(&err);
	cr_assert_not(access_check_listing(fake_store(), &alice, &ns_ab, &err));
	cr_assert_str_eq(err.message, "Principal alice lacks NAMESPACE_READ on namespace a.b");
	grant("NAMESPACE_READ", GRANT_ON_CATALOG, NULL);
	floe_error_clear(&err);
	cr_assert(access_check_listing(fake_store(), &alice, &ns_ab, &err), "%s", err.message);
}

Test(access, a_store_failure_allows_nothing)
{
	grant("TABLE_WRITE_MAIN", GRANT_ON_CATALOG, NULL);
	fake_fail("store_privileges_on", 1, fake_conn_lost(), false);
	json_t *updates = json_pack("[{s:s}]", "action", "add-schema");
	floe_error_clear(&err);
	cr_assert_not(access_check_commit(fake_store(), &alice, &ns_ab, "t", updates, &err));
	cr_assert_eq(err.kind, FE_UNAVAILABLE);
	json_decref(updates);
}
