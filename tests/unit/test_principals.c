/*
 * Who acted, recorded with what was done, and separation of duties,
 * driven through the fakes of floe's ports (tests/unit/fakes): the
 * request's principal and client id reach the commit log, every audit
 * event, the run and the audit hook's request; under
 * floe.wap.separation-of-duties=true a publish by the one who staged the
 * run or wrote its branch is refused, and one without a principal fails
 * closed.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "fakes.h"
#include "policy.h"
#include "wap.h"

#define LOC_T FAKE_WAP_LOCATION
#define RUN_ID "6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b"
#define HOOK_ID "0a1b2c3d-4e5f-4a6b-8c7d-8e9f0a1b2c3d"

static struct floe_error err;
static struct table_env env;
static struct ns_ident ns;
static char table_uuid[40];

static json_t *add_snapshot(long long id, long long parent, const char *ref)
{
	return fake_snapshot_updates(LOC_T, id, parent, ref);
}

/* Commits updates to db.t as another session would. */
static void other_writer(json_t *updates /* stolen */)
{
	cr_assert(fake_other_writer("db.t", updates, &err), "%s", err.message);
}

/* A run on branch "audit" (one snapshot ahead of main) staged by
 * staged_by and written by the principals in written_by (a JSON array
 * text). */
static void add_run(const char *staged_by, const char *written_by)
{
	json_t *run = json_pack("{s:s, s:s, s:s, s:s, s:i, s:s, s:o}", "id", RUN_ID, "state",
				"staged", "branch", "audit", "_table-uuid", table_uuid, "_seq", 1,
				"staged-by", staged_by, "written-by",
				json_loads(written_by, 0, NULL));
	fake_store_add_run(run);
	json_decref(run);
}

static void setup(void)
{
	cr_assert(fake_start(&env, &ns));
	floe_error_clear(&err);
	/* main at snapshot 1; the run's branch "audit" one snapshot ahead. */
	cr_assert(fake_wap_table(HOOK_ID, table_uuid, sizeof(table_uuid)));
	fake_forget_calls();
}

static void teardown(void)
{
	ident_ns_clear(&ns);
}

TestSuite(recorded, .init = setup, .fini = teardown, .timeout = 30);
TestSuite(duties, .init = setup, .fini = teardown, .timeout = 30);

static json_t *publish(void)
{
	return fake_publish(&env, &ns, RUN_ID, &err);
}

/* Every write of fn since the setup was recorded as principal and
 * client_id (NULL: none), and there was at least one. */
static void assert_all_by(const char *fn, const char *principal, const char *client_id)
{
	json_t *actors = fake_store_actors(fn);
	size_t i;
	json_t *a;

	cr_assert_gt(json_array_size(actors), 0, "no %s", fn);
	json_array_foreach(actors, i, a) {
		const char *what = json_string_value(json_object_get(a, "what"));
		const char *p = json_string_value(json_object_get(a, "principal"));
		const char *c = json_string_value(json_object_get(a, "client-id"));
		if (principal == NULL)
			cr_assert_null(p, "%s %s by %s", fn, what, p);
		else
			cr_assert(p != NULL && strcmp(p, principal) == 0, "%s %s by %s", fn, what,
				  p ? p : "(none)");
		if (client_id == NULL)
			cr_assert_null(c, "%s %s client %s", fn, what, c);
		else
			cr_assert(c != NULL && strcmp(c, client_id) == 0, "%s %s client %s", fn,
				  what, c ? c : "(none)");
	}
	json_decref(actors);
}

/* The refs the last commit_log row of fn named. */
static void assert_last_refs(const char *fn, const char *refs)
{
	json_t *actors = fake_store_actors(fn);
	json_t *last = json_array_get(actors, json_array_size(actors) - 1);

	cr_assert_not_null(last);
	cr_assert_str_eq(json_string_value(json_object_get(last, "refs")), refs);
	json_decref(actors);
}

Test(recorded, a_commit_records_its_principal_client_and_the_ref_it_moved)
{
	env.principal = "bob";
	env.client_id = "spark-etl";
	json_t *ups = add_snapshot(3, 2, "audit");
	json_t *out = table_commit_changes(fake_store(), &env, &ns, "t", NULL, ups, 0, &err);

	cr_assert_not_null(out, "%s", err.message);
	assert_all_by("store_table_cas", "bob", "spark-etl");
	assert_last_refs("store_table_cas", "audit");
	json_decref(out);
	json_decref(ups);
}

Test(recorded, a_commit_that_moves_no_ref_names_none)
{
	env.principal = "bob";
	json_t *ups = json_pack("[{s:s, s:{s:s}}]", "action", "set-properties", "updates", "owner",
				"sales");
	json_t *out = table_commit_changes(fake_store(), &env, &ns, "t", NULL, ups, 0, &err);

	cr_assert_not_null(out, "%s", err.message);
	assert_last_refs("store_table_cas", "");
	json_decref(out);
	json_decref(ups);
}

Test(recorded, stage_records_the_run_its_branch_commit_and_event_by_the_principal)
{
	env.principal = "alice";
	env.client_id = "notebook";
	json_t *body = json_pack("{s:s}", "branch", "audit-2");
	json_t *run = wap_stage(fake_store(), &env, &ns, "t", body, &err);

	cr_assert_not_null(run, "%s", err.message);
	cr_assert_str_eq(json_string_value(json_object_get(run, "staged-by")), "alice");
	cr_assert(json_equal(json_object_get(run, "written-by"), json_array()));
	cr_assert_null(json_object_get(run, "published-by"));
	assert_all_by("store_run_insert", "alice", "notebook");
	assert_all_by("store_table_cas", "alice", "notebook");
	assert_last_refs("store_table_cas", "audit-2");
	assert_all_by("store_event_insert", "alice", "notebook");
	cr_assert_eq(fake_store_events("wap.staged"), 1);
	json_decref(run);
	json_decref(body);
}

Test(recorded, publish_records_the_publisher_everywhere_and_tells_the_hook)
{
	add_run("alice", "[\"bob\"]");
	env.principal = "carol";
	env.client_id = "release-bot";
	json_t *out = publish();

	cr_assert_not_null(out, "%s", err.message);
	cr_assert_str_eq(json_string_value(json_object_get(out, "published-by")), "carol");
	cr_assert_str_eq(json_string_value(json_object_get(out, "staged-by")), "alice");
	assert_all_by("store_event_insert", "carol", "release-bot");
	assert_all_by("store_table_cas", "carol", "release-bot");
	assert_all_by("store_run_transition", "carol", "release-bot");
	json_t *sent = fake_hooks_last_body();
	cr_assert_not_null(sent);
	cr_assert_str_eq(json_string_value(json_object_get(sent, "requested-by")), "carol");
	cr_assert_str_eq(json_string_value(json_object_get(sent, "requested-by-client")),
			 "release-bot");
	json_decref(sent);
	json_decref(out);
}

Test(recorded, without_a_principal_everything_is_anonymous)
{
	add_run("anonymous", "[]");
	json_t *out = publish();

	cr_assert_not_null(out, "%s", err.message);
	cr_assert_str_eq(json_string_value(json_object_get(out, "published-by")), "anonymous");
	assert_all_by("store_event_insert", NULL, NULL);
	assert_all_by("store_table_cas", NULL, NULL);
	json_t *sent = fake_hooks_last_body();
	cr_assert_str_eq(json_string_value(json_object_get(sent, "requested-by")), "anonymous");
	cr_assert_null(json_object_get(sent, "requested-by-client"));
	json_decref(sent);
	json_decref(out);
}

Test(recorded, abandon_records_who_abandoned)
{
	add_run("alice", "[]");
	env.principal = "dave";
	json_t *out = wap_abandon(fake_store(), &env, &ns, "t", RUN_ID, &err);

	cr_assert_not_null(out, "%s", err.message);
	cr_assert_str_eq(json_string_value(json_object_get(out, "abandoned-by")), "dave");
	assert_all_by("store_run_transition", "dave", NULL);
	assert_all_by("store_event_insert", "dave", NULL);
	json_decref(out);
}

/* The publish was refused with FE_FORBIDDEN and message, before any hook
 * was called or main moved, with one wap.publish-refused event. */
static void assert_refused(const json_t *out, const char *message)
{
	cr_assert_null(out);
	cr_assert_eq(err.kind, FE_FORBIDDEN, "%s: %s", floe_errkind_type(err.kind), err.message);
	cr_assert_eq(floe_errkind_status(err.kind), 403);
	cr_assert_str_eq(floe_errkind_type(err.kind), "ForbiddenException");
	cr_assert_str_eq(err.message, message);
	cr_assert_eq(fake_calls("hooks_call_all"), 0);
	cr_assert_eq(fake_store_events("wap.publish-refused"), 1);
	cr_assert_eq(fake_store_events("wap.audit-started"), 0);
	json_t *run = fake_store_run(RUN_ID);
	cr_assert_str_eq(json_string_value(json_object_get(run, "state")), "staged");
	json_decref(run);
}

Test(duties, the_stager_may_not_publish)
{
	fake_store_set_ns_property(POLICY_SOD_PROPERTY, "true");
	add_run("alice", "[\"bob\"]");
	env.principal = "alice";
	json_t *out = publish();

	assert_refused(
		out,
		"Separation of duties: alice staged run " RUN_ID
		" and may not publish it (namespace db sets floe.wap.separation-of-duties=true)");
	assert_all_by("store_event_insert", "alice", NULL);
}

Test(duties, a_writer_of_the_branch_may_not_publish)
{
	fake_store_set_ns_property(POLICY_SOD_PROPERTY, "true");
	add_run("alice", "[\"bob\", \"erin\"]");
	env.principal = "erin";
	json_t *out = publish();

	assert_refused(
		out,
		"Separation of duties: erin wrote to branch audit of run " RUN_ID
		" and may not publish it (namespace db sets floe.wap.separation-of-duties=true)");
}

Test(duties, another_principal_publishes)
{
	fake_store_set_ns_property(POLICY_SOD_PROPERTY, "true");
	add_run("alice", "[\"bob\"]");
	env.principal = "carol";
	json_t *out = publish();

	cr_assert_not_null(out, "%s", err.message);
	cr_assert_str_eq(json_string_value(json_object_get(out, "state")), "published");
	cr_assert_eq(fake_store_events("wap.publish-refused"), 0);
	json_decref(out);
}

Test(duties, without_a_principal_the_publish_fails_closed)
{
	fake_store_set_ns_property(POLICY_SOD_PROPERTY, "true");
	add_run("anonymous", "[]");
	json_t *out = publish();

	assert_refused(
		out,
		"Separation of duties (namespace db sets floe.wap.separation-of-duties=true): publishing run " RUN_ID
		" needs an authenticated principal, and authentication is required for it");
}

Test(duties, the_table_property_puts_it_in_force)
{
	other_writer(json_pack("[{s:s, s:{s:s}}]", "action", "set-properties", "updates",
			       POLICY_SOD_PROPERTY, "true"));
	add_run("alice", "[]");
	env.principal = "alice";
	json_t *out = publish();

	assert_refused(out, "Separation of duties: alice staged run " RUN_ID
			    " and may not publish it (the table sets "
			    "floe.wap.separation-of-duties=true)");
}

Test(duties, not_in_force_the_stager_publishes)
{
	add_run("alice", "[\"alice\"]");
	env.principal = "alice";
	json_t *out = publish();

	cr_assert_not_null(out, "%s", err.message);
	/* floe.wap.release-required, then floe.wap.separation-of-duties. */
	cr_assert_eq(fake_calls("store_ns_property_true"), 2);
	json_decref(out);
}

Test(duties, the_rule_unreadable_publishes_nothing)
{
	fake_fail("store_ns_property_true", 1, fake_conn_lost(), false);
	add_run("alice", "[]");
	env.principal = "carol";
	json_t *out = publish();

	cr_assert_null(out);
	cr_assert_eq(err.kind, FE_UNAVAILABLE);
	cr_assert_eq(fake_calls("hooks_call_all"), 0);
}

Test(duties, an_ordinary_commit_may_not_weaken_it)
{
	other_writer(json_pack("[{s:s, s:{s:s}}]", "action", "set-properties", "updates",
			       POLICY_SOD_PROPERTY, "true"));
	json_t *ups = json_pack("[{s:s, s:[s]}]", "action", "remove-properties", "removals",
				POLICY_SOD_PROPERTY);
	json_t *out = table_commit_changes(fake_store(), &env, &ns, "t", NULL, ups, 0, &err);

	cr_assert_null(out);
	cr_assert_eq(err.kind, FE_FORBIDDEN);
	cr_assert_str_eq(
		err.message,
		"Table t sets floe.wap.separation-of-duties=true: removing or changing it weakens the audited-publish control; only POST /v1/controls/separation-of-duties with a reason may");
	json_decref(ups);
	ups = json_pack("[{s:s, s:[s]}]", "action", "remove-properties", "removals",
			POLICY_SOD_PROPERTY);
	out = table_commit_changes(fake_store(), &env, &ns, "t", NULL, ups, TABLE_COMMIT_CONTROL,
				   &err);
	cr_assert_not_null(out, "%s", err.message);
	json_decref(out);
	json_decref(ups);
}
