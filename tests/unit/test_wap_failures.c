/*
 * The failure paths of a write-audit-publish publish and of its audit
 * lease, driven through fakes of the store, the files and hook delivery
 * (tests/unit/fakes): a hook that rejects or gives no verdict, a lease
 * taken over while the hooks run, main moving meanwhile, the publish
 * commit's connection dropping. Each pins the answer (kind, message,
 * status), the run's state, where main is, and the audit events written.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "fakes.h"
#include "hooksecrets.h"
#include "tablemeta.h"
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

static void setup(void)
{
	/* Settle waits and backoffs pass on a virtual clock, in no time. */
	clock_use_virtual(0);
	cr_assert(fake_start(&env, &ns));
	floe_error_clear(&err);
	/* main at snapshot 1; the run's branch "audit" one snapshot ahead. */
	cr_assert(fake_wap_table(HOOK_ID, table_uuid, sizeof(table_uuid)));
	json_t *run = json_pack("{s:s, s:s, s:s, s:s, s:i}", "id", RUN_ID, "state", "staged",
				"branch", "audit", "_table-uuid", table_uuid, "_seq", 1);
	fake_store_add_run(run);
	json_decref(run);
	fake_forget_calls();
}

static void teardown(void)
{
	clock_use_real();
	ident_ns_clear(&ns);
}

TestSuite(publish, .init = setup, .fini = teardown, .timeout = 30);
TestSuite(lease, .init = setup, .fini = teardown, .timeout = 30);

static json_t *publish(void)
{
	return fake_publish(&env, &ns, RUN_ID, &err);
}

static void assert_answer(enum floe_errkind kind, const char *message, int status, const char *type)
{
	enum floe_errkind shown = floe_error_mutation_kind(&err);

	cr_assert_eq(err.kind, kind, "%s: %s", floe_errkind_type(err.kind), err.message);
	if (message != NULL)
		cr_assert_str_eq(err.message, message);
	cr_assert_eq(floe_errkind_status(shown), status);
	cr_assert_str_eq(floe_errkind_type(shown), type);
}

static void assert_run_state(const char *state)
{
	json_t *run = fake_store_run(RUN_ID);
	cr_assert_str_eq(json_string_value(json_object_get(run, "state")), state);
	json_decref(run);
}

static long long main_snapshot(void)
{
	json_t *m = fake_store_metadata("db.t");
	long long at = tablemeta_current_snapshot(m);
	json_decref(m);
	return at;
}

/* out (stolen) is the run published, and main is at its snapshot. */
static void assert_published(json_t *out)
{
	cr_assert_not_null(out, "%s", err.message);
	cr_assert_str_eq(json_string_value(json_object_get(out, "state")), "published");
	cr_assert_eq(main_snapshot(), 2);
	json_decref(out);
}

static void take_lease(void *arg)
{
	(void)arg;
	fake_store_take_lease(RUN_ID);
}

Test(publish, every_hook_passes_main_moves)
{
	assert_published(publish());
	cr_assert_eq(fake_calls("hooks_call_all"), 1);
	cr_assert_eq(fake_store_events("wap.audit-started"), 1);
	cr_assert_eq(fake_store_events("wap.hook-called"), 1);
	cr_assert_eq(fake_store_events("wap.published"), 1);
	json_t *m = fake_store_metadata("db.t");
	cr_assert_null(json_object_get(json_object_get(m, "refs"), "audit"));
	json_decref(m);
	cr_assert_eq(fake_fileio_removed(), 0);
}

Test(publish, hook_rejects_nothing_moves)
{
	fake_hooks_answer(HOOK_REJECT, 200, "not tidy");
	cr_assert_null(publish());
	assert_answer(FE_AUDIT_REJECTED, "Audit hook auditor rejected snapshot 2: not tidy", 422,
		      "AuditRejectedException");
	assert_run_state("rejected");
	cr_assert_eq(main_snapshot(), 1);
	cr_assert_eq(fake_calls("fileio_write_metadata"), 0);
	cr_assert_eq(fake_store_events("wap.rejected"), 1);
	cr_assert_eq(fake_store_events("wap.hook-called"), 1);
}

Test(publish, hook_gives_no_verdict_nothing_moves)
{
	fake_hooks_answer(HOOK_ERROR, 0, "timeout");
	cr_assert_null(publish());
	assert_answer(
		FE_AUDIT_UNAVAILABLE,
		"Audit hook auditor could not give a verdict (timeout); nothing was published, publish again later",
		503, "AuditUnavailableException");
	assert_run_state("audit-failed");
	cr_assert_eq(main_snapshot(), 1);
	cr_assert_eq(fake_store_events("wap.audit-failed"), 1);
}

static void move_main(void *arg)
{
	(void)arg;
	other_writer(add_snapshot(3, 1, "main"));
}

Test(publish, main_moved_during_the_audit_answers_not_fast_forward)
{
	fake_hooks_during(move_main, NULL);
	cr_assert_null(publish());
	assert_answer(FE_NOT_FAST_FORWARD, NULL, 409, "NotFastForwardException");
	cr_assert(strncmp(err.message,
			  "Branch main moved during the audit; nothing was published (", 59) == 0,
		  "%s", err.message);
	/* Back to staged: it may be published again. */
	assert_run_state("staged");
	cr_assert_eq(main_snapshot(), 3);
	cr_assert_eq(fake_store_events("wap.conflict"), 1);
	cr_assert_eq(fake_store_events("wap.published"), 0);
}

Test(publish, commit_lost_after_commit_landed_answers_published)
{
	fake_fail("store_commit", 3, fake_commit_unknown(), true);
	assert_published(publish());
	cr_assert_eq(fake_calls("store_commit_landed"), 1);
	cr_assert_eq(fake_fileio_removed(), 0);
}

Test(publish, commit_lost_after_commit_not_landed_fails_the_audit)
{
	/* The first COMMIT is the lease's, the second the hook calls'
	 * attempts', the third the publish's. */
	fake_fail("store_commit", 3, fake_commit_unknown(), false);
	cr_assert_null(publish());
	assert_answer(
		FE_UNAVAILABLE,
		"The database connection broke before the commit completed; nothing was committed, retry",
		503, "ServiceUnavailableException");
	cr_assert_eq(err.outcome, FO_FAILED);
	assert_run_state("audit-failed");
	cr_assert_eq(main_snapshot(), 1);
	cr_assert_eq(fake_fileio_removed(), 1);
	cr_assert_eq(fake_store_events("wap.audit-failed"), 1);
}

Test(publish, commit_lost_and_database_gone_answers_unknown)
{
	fake_fail("store_commit", 3, fake_commit_unknown(), false);
	fake_store_stay_away(true);
	cr_assert_null(publish());
	assert_answer(FE_COMMIT_STATE_UNKNOWN,
		      "The database connection broke during the commit; its outcome is unknown",
		      500, "CommitStateUnknownException");
	/* Unknown: the file is kept and the run is left to its lease. */
	cr_assert_eq(fake_fileio_removed(), 0);
	assert_run_state("auditing");
	/* It waited the whole settle window (10 s) for the database. */
	cr_assert_geq(clock_virtual_slept_ms(), 10000);
}

Test(publish, landed_but_not_read_back_answers_published)
{
	/* The first read finds the run, the second reads it back published. */
	fake_fail("store_run_get", 2, fake_conn_lost(), false);
	json_t *out = publish();
	cr_assert_not_null(out, "%s: %s", floe_errkind_type(err.kind), err.message);
	cr_assert_str_eq(json_string_value(json_object_get(out, "id")), RUN_ID);
	cr_assert_eq(json_integer_value(json_object_get(out, "published-snapshot-id")), 2);
	cr_assert_eq(json_integer_value(json_object_get(out, "audited-snapshot-id")), 2);
	cr_assert_str_eq(json_string_value(
				 json_object_get(json_array_get(json_object_get(out, "audits"), 0),
						 "verdict")),
			 "pass");
	assert_published(out);
	assert_run_state("published");
	cr_assert_eq(fake_calls("store_run_get"), 2);
	cr_assert_eq(fake_fileio_removed(), 0);
}

Test(publish, every_call_is_on_record_before_it_is_made)
{
	assert_published(publish());
	cr_assert_eq(fake_store_events("wap.hook-calling"), 1);
	cr_assert_eq(fake_store_events("wap.hook-called"), 1);
}

Test(publish, call_attempt_not_recorded_calls_no_hook)
{
	/* The first event is wap.audit-started, the second the attempt. */
	fake_fail("store_event_insert", 2, fake_conn_lost(), false);
	cr_assert_null(publish());
	assert_answer(FE_UNAVAILABLE, "The catalog database is unavailable", 503,
		      "ServiceUnavailableException");
	cr_assert_eq(err.outcome, FO_FAILED);
	assert_run_state("audit-failed");
	cr_assert_eq(fake_calls("hooks_call_all"), 0);
	cr_assert_eq(fake_store_events("wap.hook-calling"), 0);
	cr_assert_eq(main_snapshot(), 1);
}

Test(publish, audit_start_not_recorded_calls_no_hook)
{
	fake_fail("store_event_insert", 1, fake_conn_lost(), false);
	cr_assert_null(publish());
	assert_answer(FE_UNAVAILABLE, "The catalog database is unavailable", 503,
		      "ServiceUnavailableException");
	cr_assert_eq(err.outcome, FO_FAILED);
	assert_run_state("staged");
	cr_assert_eq(fake_calls("hooks_call_all"), 0);
}

Test(publish, database_gone_after_the_audit_leaves_the_run_to_its_lease)
{
	fake_fail("store_pool_acquire", 2, fake_conn_lost(), false);
	cr_assert_null(publish());
	assert_answer(FE_UNAVAILABLE, "The catalog database is unavailable", 503,
		      "ServiceUnavailableException");
	assert_run_state("auditing");
	cr_assert_eq(main_snapshot(), 1);
	cr_assert_eq(fake_store_events("wap.hook-called"), 0);
}

/* --- the audit lease --- */

Test(lease, taken_over_while_hooks_pass_publishes_nothing)
{
	fake_hooks_during(take_lease, NULL);
	cr_assert_null(publish());
	assert_answer(FE_RUN_STATE,
		      "Run " RUN_ID " was taken over while it was audited; nothing published", 409,
		      "WapRunStateException");
	cr_assert_eq(main_snapshot(), 1);
	/* The file of the publish commit that was undone is removed. */
	cr_assert_eq(fake_calls("fileio_write_metadata"), 1);
	cr_assert_eq(fake_fileio_removed(), 1);
	/* The calls made are facts: recorded with wap.lease-lost. */
	cr_assert_eq(fake_store_events("wap.lease-lost"), 1);
	cr_assert_eq(fake_store_events("wap.hook-called"), 1);
	cr_assert_eq(fake_store_events("wap.published"), 0);
}

Test(lease, taken_over_while_a_hook_rejects_records_no_verdict)
{
	fake_hooks_answer(HOOK_REJECT, 200, "not tidy");
	fake_hooks_during(take_lease, NULL);
	cr_assert_null(publish());
	assert_answer(
		FE_RUN_STATE,
		"Run " RUN_ID
		" was taken over by another publish while it was audited; its outcome is that publish's",
		409, "WapRunStateException");
	assert_run_state("auditing");
	cr_assert_eq(fake_store_events("wap.rejected"), 0);
	cr_assert_eq(fake_store_events("wap.lease-lost"), 1);
}

/* The run, left auditing under another publish's lease. */
static void auditing_under(const char *lease)
{
	json_t *run = json_pack("{s:s, s:s, s:s, s:s, s:i, s:s}", "id", RUN_ID, "state", "auditing",
				"branch", "audit", "_table-uuid", table_uuid, "_seq", 1, "_lease",
				lease);
	fake_store_add_run(run);
	json_decref(run);
}

Test(lease, held_by_another_publish_calls_no_hook)
{
	auditing_under("another publish");
	cr_assert_null(publish());
	assert_answer(FE_RUN_STATE, "Run " RUN_ID " is being published by another request", 409,
		      "WapRunStateException");
	cr_assert_eq(fake_calls("hooks_call_all"), 0);
	cr_assert_eq(fake_store_events("wap.audit-started"), 0);
}

Test(lease, run_out_lets_a_new_publish_take_over)
{
	auditing_under("a floe that stopped");
	fake_store_expire_lease(RUN_ID);
	assert_published(publish());
}

/* --- sealed hook secrets (catalog/hooksecrets.c) --- */

/* A sealer that "seals" as "sealed:<id>:<plain>" and opens only that. */
static char *fake_seal(void *ctx, const char *hook_id, const char *plain, struct floe_error *e)
{
	char buf[512];

	(void)ctx;
	(void)e;
	(void)snprintf(buf, sizeof(buf), "sealed:%s:%s", hook_id, plain);
	return strdup(buf);
}

static char *fake_open(void *ctx, const char *hook_id, const char *sealed, char *why, size_t len)
{
	char head[128];

	(void)ctx;
	(void)snprintf(head, sizeof(head), "sealed:%s:", hook_id);
	if (strncmp(sealed, head, strlen(head)) != 0) {
		(void)snprintf(why, len, "sealed with key A; this floe has key B");
		return NULL;
	}
	return strdup(sealed + strlen(head));
}

static const struct hook_sealer fake_sealer = { NULL, fake_seal, fake_open };

static void set_hook_secret(const char *secret, bool sealed)
{
	json_t *h = json_array_get(fake_store_hooks(), 0);

	json_object_set_new(h, "secret", json_string(secret));
	json_object_set_new(h, "secret-sealed", json_boolean(sealed));
}

Test(publish, a_sealed_secret_is_opened_for_the_call)
{
	env.hook_sealer = &fake_sealer;
	set_hook_secret("sealed:" HOOK_ID ":the-secret", true);
	assert_published(publish());
	cr_assert_str_eq(fake_hooks_last_secret(), "the-secret");
}

Test(publish, a_secret_that_does_not_open_fails_closed_and_sends_nothing)
{
	env.hook_sealer = &fake_sealer;
	set_hook_secret("sealed:another-hook:the-secret", true);
	cr_assert_null(publish());
	assert_answer(
		FE_AUDIT_UNAVAILABLE,
		"Audit hook auditor could not give a verdict (sealed with key A; this floe has key B); nothing was published, publish again later",
		503, "AuditUnavailableException");
	assert_run_state("audit-failed");
	cr_assert_eq(main_snapshot(), 1);
	json_t *sent = fake_hooks_last_body();
	cr_assert_null(sent, "nothing was sent");
	cr_assert_eq(fake_store_events("wap.hook-called"), 1);
}

Test(publish, a_sealed_secret_without_a_key_fails_closed)
{
	env.hook_sealer = NULL;
	set_hook_secret("sealed:" HOOK_ID ":the-secret", true);
	cr_assert_null(publish());
	cr_assert_eq(err.kind, FE_AUDIT_UNAVAILABLE, "%s", err.message);
	cr_assert(strstr(err.message, "no key to open it") != NULL, "%s", err.message);
	cr_assert_null(fake_hooks_last_body());
}

Test(publish, a_plain_secret_of_an_older_floe_still_signs)
{
	set_hook_secret("old-plain", false);
	assert_published(publish());
	cr_assert_str_eq(fake_hooks_last_secret(), "old-plain");
}

Test(publish, plain_secrets_are_sealed_once)
{
	size_t sealed = 0;

	set_hook_secret("old-plain", false);
	cr_assert(hooksecrets_seal_legacy(NULL, &fake_sealer, &sealed, &err), "%s", err.message);
	cr_assert_eq(sealed, 1);
	json_t *h = json_array_get(fake_store_hooks(), 0);
	cr_assert_str_eq(json_string_value(json_object_get(h, "secret")),
			 "sealed:" HOOK_ID ":old-plain");
	cr_assert(hooksecrets_seal_legacy(NULL, &fake_sealer, &sealed, &err), "%s", err.message);
	cr_assert_eq(sealed, 0, "a sealed row is left alone");

	set_hook_secret("again-plain", false);
	cr_assert_null(hooksecrets_seal(NULL, HOOK_ID, "x", &err), "no key, no secret");
	cr_assert_not(hooksecrets_seal_legacy(NULL, NULL, &sealed, &err));
	cr_assert_str_eq(json_string_value(json_object_get(h, "secret")), "again-plain",
			 "nothing changed when it cannot be sealed");
}
