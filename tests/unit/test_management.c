/*
 * The management API's domain (catalog/management.c) on the fakes of
 * floe's ports: a change and its audit event stand or fall together: a
 * store failure at any step of the transaction (the change, the event,
 * the COMMIT) leaves neither; names are checked; a no-op records nothing;
 * the event names the acting principal and holds no secret.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "fakes.h"
#include "management.h"

static struct floe_error err;
static struct table_env env;
static struct ns_ident ns;

/* The administrator every catalog has after its first start, made in the
 * store directly (no audit event, no call counted by the tests that count
 * them): "keeper", member of "keepers", which holds ADMIN on the catalog.
 * A change that takes a principal or role away needs one to remain. */
static void make_keeper(void)
{
	long long pid = 0, rid = 0;
	bool done = false;

	cr_assert(store_principal_insert(fake_store(), "keeper", "client", "keeper", NULL, "floe",
					 &pid, &err));
	cr_assert(store_role_insert(fake_store(), "keepers", &rid, &err));
	cr_assert(store_grant_insert(fake_store(), "keepers", "ADMIN", GRANT_ON_CATALOG, NULL, NULL,
				     &done, &err));
	cr_assert(store_role_member_add(fake_store(), "keepers", "keeper", &done, &err));
}

static void setup(void)
{
	cr_assert(fake_start(&env, &ns));
	env.principal = "root";
	env.client_id = "root";
	floe_error_clear(&err);
}

static void teardown(void)
{
	ident_ns_clear(&ns);
}

TestSuite(management, .init = setup, .fini = teardown, .timeout = 30);

static struct floe_error unavailable(void)
{
	return fake_error(FE_UNAVAILABLE, FO_FAILED, "08006", "the database went away");
}

static bool principal_exists(const char *name)
{
	json_t *p = mgmt_principal_get(fake_store(), name, &err);
	bool exists = p != NULL;

	json_decref(p);
	floe_error_clear(&err);
	return exists;
}

static bool role_exists(const char *name)
{
	json_t *g = mgmt_grant_list(fake_store(), name, NULL, NULL, &err);
	bool exists = g != NULL;

	json_decref(g);
	floe_error_clear(&err);
	return exists;
}

static void make_role(const char *name)
{
	json_t *body = json_pack("{s:s}", "name", name);
	json_t *out = mgmt_role_create(fake_store(), &env, body, &err);

	cr_assert_not_null(out, "%s", err.message);
	json_decref(out);
	json_decref(body);
}

static void make_user(const char *name)
{
	json_t *out = mgmt_principal_create(fake_store(), &env, name, "user", NULL, &err);

	cr_assert_not_null(out, "%s", err.message);
	json_decref(out);
}

Test(management, a_principal_and_its_event_are_one)
{
	json_t *out = mgmt_principal_create(fake_store(), &env, "svc", "client",
					    "scrypt$16384$8$1$salt$hash", &err);
	cr_assert_not_null(out, "%s", err.message);
	cr_assert_str_eq(json_string_value(json_object_get(out, "client-id")), "svc");
	char *text = json_dumps(out, 0);
	cr_assert_null(strstr(text, "scrypt"), "the hash is never answered: %s", text);
	free(text);
	json_decref(out);
	cr_assert_eq(fake_store_events("principal.created"), 1);
	json_t *who = fake_store_actors("store_event_insert");
	cr_assert_str_eq(json_string_value(json_object_get(json_array_get(who, 0), "principal")),
			 "root");
	json_decref(who);
}

Test(management, a_failed_event_leaves_no_principal)
{
	fake_fail("store_event_insert", 1, unavailable(), false);
	json_t *out = mgmt_principal_create(fake_store(), &env, "svc", "client", "h", &err);
	cr_assert_null(out);
	cr_assert_eq(err.kind, FE_UNAVAILABLE);
	cr_assert(!principal_exists("svc"));
	cr_assert_eq(fake_store_events("principal.created"), 0);
}

Test(management, a_failed_commit_leaves_nothing)
{
	fake_fail("store_commit", 1, unavailable(), false);
	json_t *body = json_pack("{s:s}", "name", "readers");
	cr_assert_null(mgmt_role_create(fake_store(), &env, body, &err));
	json_decref(body);
	cr_assert(!role_exists("readers"));
	cr_assert_eq(fake_store_events("role.created"), 0);
}

Test(management, a_taken_name_is_409_and_records_nothing)
{
	make_user("ann");
	json_t *out = mgmt_principal_create(fake_store(), &env, "ann", "user", NULL, &err);
	cr_assert_null(out);
	cr_assert_eq(err.kind, FE_ALREADY_EXISTS);
	cr_assert_str_eq(err.message, "Principal already exists: ann");
	cr_assert_eq(fake_store_events("principal.created"), 1);
}

Test(management, a_failed_disable_leaves_it_enabled)
{
	long long id = 0;

	make_keeper();
	make_user("ann");
	fake_fail("store_event_insert", 1, unavailable(), false);
	cr_assert_null(mgmt_principal_set_disabled(fake_store(), &env, "ann", true, &id, &err));
	json_t *p = mgmt_principal_get(fake_store(), "ann", &err);
	cr_assert_not_null(p, "%s", err.message);
	cr_assert(json_is_false(json_object_get(p, "disabled")));
	json_decref(p);
	cr_assert_eq(fake_store_events("principal.disabled"), 0);

	p = mgmt_principal_set_disabled(fake_store(), &env, "ann", true, &id, &err);
	cr_assert_not_null(p, "%s", err.message);
	cr_assert(json_is_true(json_object_get(p, "disabled")));
	cr_assert_gt(id, 0);
	json_decref(p);
	cr_assert_eq(fake_store_events("principal.disabled"), 1);
}

Test(management, no_one_disables_itself)
{
	long long id = 0;

	make_user("root");
	cr_assert_null(mgmt_principal_set_disabled(fake_store(), &env, "root", true, &id, &err));
	cr_assert_eq(err.kind, FE_BAD_REQUEST);
	cr_assert_eq(fake_calls("store_principal_set_disabled"), 0);
}

Test(management, unknown_principal_and_role)
{
	long long id = 0;
	bool changed = true;

	cr_assert_null(mgmt_principal_set_disabled(fake_store(), &env, "bob", true, &id, &err));
	cr_assert_eq(err.kind, FE_NO_SUCH_PRINCIPAL);
	cr_assert_str_eq(err.message, "Principal does not exist: bob");
	cr_assert(!mgmt_role_delete(fake_store(), &env, "x", &err));
	cr_assert_eq(err.kind, FE_NO_SUCH_ROLE);
	cr_assert_str_eq(err.message, "Role does not exist: x");
	make_role("r");
	cr_assert(!mgmt_member_set(fake_store(), &env, "r", "bob", true, &changed, &err));
	cr_assert_eq(err.kind, FE_NO_SUCH_PRINCIPAL);
	cr_assert(!changed);
	cr_assert_eq(fake_store_events("principal.disabled") + fake_store_events("role.deleted") +
			     fake_store_events("role.member-added"),
		     0);
}

Test(management, a_membership_fails_whole_and_a_repeat_records_nothing)
{
	bool changed = false;

	make_keeper();
	make_user("ann");
	make_role("r");
	fake_fail("store_event_insert", 1, unavailable(), false);
	cr_assert(!mgmt_member_set(fake_store(), &env, "r", "ann", true, &changed, &err));
	cr_assert(!changed);
	json_t *p = mgmt_principal_get(fake_store(), "ann", &err);
	cr_assert_eq(json_array_size(json_object_get(p, "roles")), 0);
	json_decref(p);

	cr_assert(mgmt_member_set(fake_store(), &env, "r", "ann", true, &changed, &err), "%s",
		  err.message);
	cr_assert(changed);
	cr_assert(mgmt_member_set(fake_store(), &env, "r", "ann", true, &changed, &err));
	cr_assert(!changed, "already a member: nothing changes");
	cr_assert_eq(fake_store_events("role.member-added"), 1);

	cr_assert(mgmt_member_set(fake_store(), &env, "r", "ann", false, &changed, &err));
	cr_assert(changed);
	cr_assert(!mgmt_member_set(fake_store(), &env, "r", "ann", false, &changed, &err));
	cr_assert_eq(err.kind, FE_NOT_FOUND);
	cr_assert_eq(fake_store_events("role.member-removed"), 1);
}

Test(management, the_last_administrator_stays)
{
	long long id = 0;
	bool changed = false;
	json_t *admin = json_pack("{s:s, s:{s:s}}", "privilege", "ADMIN", "on", "kind", "catalog");

	make_keeper();
	/* Each way of taking the last one away is refused whole, with
	 * nothing recorded. */
	cr_assert_null(mgmt_principal_set_disabled(fake_store(), &env, "keeper", true, &id, &err));
	cr_assert_eq(err.kind, FE_BAD_REQUEST);
	cr_assert(strstr(err.message, "no principal holding ADMIN on the catalog") != NULL, "%s",
		  err.message);
	cr_assert(!mgmt_member_set(fake_store(), &env, "keepers", "keeper", false, &changed, &err));
	cr_assert_eq(err.kind, FE_BAD_REQUEST);
	cr_assert_null(mgmt_grant_set(fake_store(), &env, "keepers", admin, false, &changed, &err));
	cr_assert_eq(err.kind, FE_BAD_REQUEST);
	cr_assert(!mgmt_role_delete(fake_store(), &env, "keepers", &err));
	cr_assert_eq(err.kind, FE_BAD_REQUEST);
	cr_assert_eq(fake_store_events("principal.disabled") +
			     fake_store_events("role.member-removed") +
			     fake_store_events("grant.revoked") + fake_store_events("role.deleted"),
		     0);
	json_t *p = mgmt_principal_get(fake_store(), "keeper", &err);
	cr_assert(json_is_false(json_object_get(p, "disabled")));
	cr_assert_eq(json_array_size(json_object_get(p, "roles")), 1);
	json_decref(p);

	/* With a second administrator, the first may go. */
	make_user("ann");
	cr_assert(mgmt_member_set(fake_store(), &env, "keepers", "ann", true, &changed, &err));
	p = mgmt_principal_set_disabled(fake_store(), &env, "keeper", true, &id, &err);
	cr_assert_not_null(p, "%s", err.message);
	json_decref(p);
	cr_assert(!mgmt_member_set(fake_store(), &env, "keepers", "ann", false, &changed, &err),
		  "a disabled administrator does not count");
	json_decref(admin);
}

static json_t *grant_body(const char *privilege)
{
	return json_pack("{s:s, s:{s:s, s:[s]}}", "privilege", privilege, "on", "kind", "namespace",
			 "namespace", "db");
}

Test(management, a_grant_and_its_event_are_one)
{
	bool changed = false;
	json_t *body = grant_body("TABLE_READ");

	make_role("r");
	fake_fail("store_event_insert", 1, unavailable(), false);
	cr_assert_null(mgmt_grant_set(fake_store(), &env, "r", body, true, &changed, &err));
	json_t *list = mgmt_grant_list(fake_store(), "r", NULL, NULL, &err);
	cr_assert_eq(json_array_size(json_object_get(list, "grants")), 0);
	json_decref(list);

	json_t *out = mgmt_grant_set(fake_store(), &env, "r", body, true, &changed, &err);
	cr_assert_not_null(out, "%s", err.message);
	cr_assert(changed);
	json_decref(out);
	out = mgmt_grant_set(fake_store(), &env, "r", body, true, &changed, &err);
	cr_assert_not_null(out, "%s", err.message);
	cr_assert(!changed);
	json_decref(out);
	cr_assert_eq(fake_store_events("grant.added"), 1);

	fake_fail("store_commit", 1, unavailable(), false);
	cr_assert_null(mgmt_grant_set(fake_store(), &env, "r", body, false, &changed, &err));
	list = mgmt_grant_list(fake_store(), "r", NULL, NULL, &err);
	cr_assert_eq(json_array_size(json_object_get(list, "grants")), 1, "the revoke rolled back");
	json_decref(list);
	cr_assert_eq(fake_store_events("grant.revoked"), 0);
	json_decref(body);
}

Test(management, bad_grants_are_refused_before_the_store)
{
	bool changed = false;
	const char *bad[] = { "TABLE_SMASH", "ADMIN" };

	make_role("r");
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		json_t *body = grant_body(bad[i]);
		cr_assert_null(mgmt_grant_set(fake_store(), &env, "r", body, true, &changed, &err));
		cr_assert_eq(err.kind, FE_BAD_REQUEST, "%s: %s", bad[i], err.message);
		json_decref(body);
	}
	cr_assert_eq(fake_calls("store_grant_insert"), 0);
	json_t *body = json_pack("{s:s, s:{s:s}}", "privilege", "TABLE_READ", "on", "kind",
				 "shelf");
	cr_assert_null(mgmt_grant_set(fake_store(), &env, "r", body, true, &changed, &err));
	cr_assert_eq(err.kind, FE_BAD_REQUEST);
	json_decref(body);
}

Test(management, names_are_checked)
{
	char longname[300];

	memset(longname, 'a', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	cr_assert(!mgmt_name_check("role", "", &err));
	cr_assert(!mgmt_name_check("role", longname, &err));
	cr_assert(!mgmt_name_check("principal", "a:b", &err));
	cr_assert(!mgmt_name_check("principal", "a b", &err));
	cr_assert(!mgmt_name_check("principal", "a\nb", &err));
	cr_assert(mgmt_name_check("principal", "etl-nightly_2.x@corp", &err), "%s", err.message);
	longname[MGMT_NAME_MAX] = '\0';
	cr_assert(mgmt_name_check("role", longname, &err), "%s", err.message);
}

Test(management, a_rotation_is_for_floe_clients_only)
{
	make_user("ann");
	cr_assert(!mgmt_rotate_check(fake_store(), "ann", &err));
	cr_assert_eq(err.kind, FE_BAD_REQUEST);
	json_t *out = mgmt_principal_create(fake_store(), &env, "svc", "client", "h1", &err);
	json_decref(out);
	fake_fail("store_event_insert", 1, unavailable(), false);
	cr_assert_null(mgmt_principal_rotate(fake_store(), &env, "svc", "h2", &err));
	cr_assert_eq(fake_store_events("principal.secret-rotated"), 0);
	out = mgmt_principal_rotate(fake_store(), &env, "svc", "h2", &err);
	cr_assert_not_null(out, "%s", err.message);
	json_decref(out);
	cr_assert_eq(fake_store_events("principal.secret-rotated"), 1);
}

Test(management, lists_page_by_name)
{
	const char *names[] = { "a1", "a2", "a3" };
	char token[64] = "";

	for (size_t i = 0; i < 3; i++)
		make_role(names[i]);
	json_t *page = mgmt_role_list(fake_store(), "", "2", &err);
	cr_assert_not_null(page, "%s", err.message);
	cr_assert_eq(json_array_size(json_object_get(page, "roles")), 2);
	const char *next = json_string_value(json_object_get(page, "next-page-token"));
	cr_assert_not_null(next);
	snprintf(token, sizeof(token), "%s", next);
	json_decref(page);
	page = mgmt_role_list(fake_store(), token, "2", &err);
	cr_assert_not_null(page, "%s", err.message);
	cr_assert_eq(json_array_size(json_object_get(page, "roles")), 1);
	cr_assert(json_is_null(json_object_get(page, "next-page-token")));
	json_decref(page);
	cr_assert_null(mgmt_role_list(fake_store(), "a b", NULL, &err));
	cr_assert_eq(err.kind, FE_BAD_REQUEST);
}

/* An issuer's claim never grants ADMIN: a role holding it cannot be
 * marked issuer-grantable, a marked role cannot be granted it, and the
 * mark and its event stand or fall together. */
Test(management, issuer_grantable_and_admin_never_meet)
{
	bool changed = false;
	json_t *mark = json_pack("{s:b}", "issuer-grantable", true);
	json_t *unmark = json_pack("{s:b}", "issuer-grantable", false);
	json_t *admin = json_pack("{s:s, s:{s:s}}", "privilege", "ADMIN", "on", "kind", "catalog");

	make_keeper();
	cr_assert_null(mgmt_role_update(fake_store(), &env, "keepers", mark, &changed, &err));
	cr_assert_eq(err.kind, FE_BAD_REQUEST);
	cr_assert(strstr(err.message, "Role keepers holds ADMIN") != NULL, "%s", err.message);
	cr_assert(!changed);

	make_role("readers");
	fake_fail("store_event_insert", 1, unavailable(), false);
	cr_assert_null(mgmt_role_update(fake_store(), &env, "readers", mark, &changed, &err));
	cr_assert(!changed, "the event failed, so the mark did");
	json_t *out = mgmt_role_update(fake_store(), &env, "readers", mark, &changed, &err);
	cr_assert_not_null(out, "%s", err.message);
	cr_assert(changed);
	cr_assert(json_is_true(json_object_get(out, "issuer-grantable")));
	json_decref(out);
	out = mgmt_role_update(fake_store(), &env, "readers", mark, &changed, &err);
	cr_assert_not_null(out, "%s", err.message);
	cr_assert(!changed, "the same value again changes nothing");
	json_decref(out);
	cr_assert_eq(fake_store_events("role.updated"), 1);

	cr_assert_null(mgmt_grant_set(fake_store(), &env, "readers", admin, true, &changed, &err));
	cr_assert_eq(err.kind, FE_BAD_REQUEST);
	cr_assert(strstr(err.message, "Role readers is issuer-grantable") != NULL, "%s",
		  err.message);
	cr_assert_eq(fake_store_events("grant.added"), 0);

	/* Unmarked, it may hold ADMIN again. */
	out = mgmt_role_update(fake_store(), &env, "readers", unmark, &changed, &err);
	cr_assert_not_null(out, "%s", err.message);
	json_decref(out);
	out = mgmt_grant_set(fake_store(), &env, "readers", admin, true, &changed, &err);
	cr_assert_not_null(out, "%s", err.message);
	json_decref(out);
	cr_assert_eq(fake_store_events("role.updated"), 2);

	cr_assert_null(mgmt_role_update(fake_store(), &env, "nobody", mark, &changed, &err));
	cr_assert_eq(err.kind, FE_NO_SUCH_ROLE);
	json_decref(mark);
	json_decref(unmark);
	json_decref(admin);
}

/* A role created issuer-grantable says so, and its event too. */
Test(management, a_role_created_issuer_grantable)
{
	json_t *body = json_pack("{s:s, s:b}", "name", "analysts", "issuer-grantable", true);
	json_t *out = mgmt_role_create(fake_store(), &env, body, &err);

	cr_assert_not_null(out, "%s", err.message);
	cr_assert(json_is_true(json_object_get(out, "issuer-grantable")));
	json_decref(out);
	json_decref(body);
	body = json_pack("{s:s, s:s}", "name", "x", "issuer-grantable", "yes");
	cr_assert_null(mgmt_role_create(fake_store(), &env, body, &err));
	cr_assert_eq(err.kind, FE_BAD_REQUEST);
	json_decref(body);
	cr_assert_eq(fake_store_events("role.created"), 1);
}
