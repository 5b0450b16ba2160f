/*
 * The failure paths of a single-table commit and of a multi-table
 * transaction, driven through fakes of the store and the files
 * (tests/unit/fakes): the answer to each failure (kind, outcome,
 * message, and what a mutation's error becomes on the wire), and which
 * metadata files are kept or removed.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "fakes.h"
#include "table.h"
#include "unsettled.h"

#define LOC_T "file:///wh/db/t"
#define LOC_A "file:///wh/db/a"
#define LOC_B "file:///wh/db/b"

/* The messages of today's answers. */
#define NOT_LANDED \
	"The database connection broke before the commit completed; nothing was committed, retry"
#define UNKNOWN "The database connection broke during the commit; its outcome is unknown"
#define CONN_LOST "The catalog database is unavailable"

static struct floe_error err;
static struct table_env env;
static struct ns_ident ns;
static json_t *body;

static void setup(void)
{
	/* Settle waits and backoffs pass on a virtual clock, in no time. */
	clock_use_virtual(0);
	cr_assert(fake_start(&env, &ns));
	floe_error_clear(&err);
	json_decref(fake_new_table("db.t", LOC_T));
	json_decref(fake_new_table("db.a", LOC_A));
	json_decref(fake_new_table("db.b", LOC_B));
	fake_forget_calls();
	body = json_pack("{s:[{s:s, s:{s:s}}]}", "updates", "action", "set-properties", "updates",
			 "owner", "floe");
}

static void teardown(void)
{
	clock_use_real();
	json_decref(body);
	ident_ns_clear(&ns);
}

TestSuite(commit, .init = setup, .fini = teardown, .timeout = 30);
TestSuite(transaction, .init = setup, .fini = teardown, .timeout = 30);

static json_t *commit(void)
{
	return table_commit(fake_store(), &env, &ns, "t", body, &err);
}

/* The failure in err: its kind, outcome and message (NULL: any), and
 * what a mutation answers for it, the status and Iceberg type of
 * floe_error_mutation_kind (server/http.c http_reply_error). */
static void assert_failed(enum floe_errkind kind, enum floe_outcome outcome, const char *message,
			  int status, const char *type)
{
	enum floe_errkind shown = floe_error_mutation_kind(&err);

	cr_assert_eq(err.kind, kind, "kind %s: %s", floe_errkind_type(err.kind), err.message);
	cr_assert_eq(err.outcome, outcome, "outcome %d: %s", err.outcome, err.message);
	if (message != NULL)
		cr_assert_str_eq(err.message, message);
	cr_assert_eq(floe_errkind_status(shown), status, "status %d for %s: %s",
		     floe_errkind_status(shown), floe_errkind_type(shown), err.message);
	cr_assert_str_eq(floe_errkind_type(shown), type);
}

/* Known not to have taken effect: 503, never the 500 of "unknown". */
static void assert_unavailable(const char *message)
{
	assert_failed(FE_UNAVAILABLE, FO_FAILED, message, 503, "ServiceUnavailableException");
}

static void assert_unknown(const char *message)
{
	assert_failed(FE_COMMIT_STATE_UNKNOWN, FO_UNKNOWN, message, 500,
		      "CommitStateUnknownException");
}

static void assert_commit_failed(const char *message)
{
	assert_failed(FE_COMMIT_FAILED, FO_NOT_ATTEMPTED, message, 409, "CommitFailedException");
}

/* The table's current property "owner", or NULL. */
static const char *owner_of(const char *key)
{
	static char owner[64];
	json_t *m = fake_store_metadata(key);
	const char *v = json_string_value(
		json_object_get(json_object_get(m, "properties"), "owner"));

	snprintf(owner, sizeof(owner), "%s", v ? v : "");
	json_decref(m);
	return v ? owner : NULL;
}

static bool count_unsettled(void *ctx, const struct unsettled_commit *c)
{
	(void)c;
	(*(int *)ctx)++;
	return true;
}

Test(commit, lands_and_keeps_its_file)
{
	json_t *r = commit();

	cr_assert_not_null(r, "%s", err.message);
	const char *loc = json_string_value(json_object_get(r, "metadata-location"));
	cr_assert_str_eq(loc, fake_store_location("db.t"));
	cr_assert(fake_fileio_exists(loc));
	cr_assert_eq(fake_store_version("db.t"), 2);
	cr_assert_str_eq(owner_of("db.t"), "floe");
	cr_assert_eq(fake_fileio_removed(), 0);
	json_decref(r);
}

Test(commit, fsync_fails_nothing_is_swapped)
{
	fake_fileio_fsync_fails(1);
	cr_assert_null(commit());
	assert_failed(FE_INTERNAL, FO_NOT_ATTEMPTED, "Cannot write the metadata file", 503,
		      "ServiceUnavailableException");
	cr_assert_eq(fake_calls("store_table_cas"), 0);
	cr_assert_eq(fake_store_version("db.t"), 1);
}

Test(commit, load_fails_nothing_is_written)
{
	fake_fail("store_table_load", 1, fake_conn_lost(), false);
	cr_assert_null(commit());
	assert_unavailable(CONN_LOST);
	cr_assert_str_eq(err.sqlstate, "08006");
	cr_assert_eq(fake_calls("fileio_write_metadata"), 0);
}

Test(commit, lost_cas_retries_and_lands)
{
	int files = fake_fileio_files();

	fake_store_cas_lose(1, 2);
	json_t *r = commit();
	cr_assert_not_null(r, "%s", err.message);
	cr_assert_eq(fake_calls("store_table_cas"), 3);
	/* Two other commits, then this one. */
	cr_assert_eq(fake_store_version("db.t"), 4);
	cr_assert_str_eq(json_string_value(json_object_get(r, "metadata-location")),
			 fake_store_location("db.t"));
	/* The files of the lost rounds were never referenced: removed. */
	cr_assert_eq(fake_fileio_removed(), 2);
	cr_assert_eq(fake_fileio_files(), files + 1);
	json_decref(r);
}

Test(commit, cas_lost_every_time_answers_commit_failed)
{
	fake_store_cas_lose(1, 1000);
	cr_assert_null(commit());
	assert_commit_failed("The table changed under 40 attempts to commit; retry");
	cr_assert_eq(fake_calls("store_table_cas"), 40);
	cr_assert_eq(fake_fileio_removed(), 40);
	cr_assert_eq(fake_calls("fileio_write_metadata"), 40);
}

Test(commit, requirement_broken_by_a_concurrent_commit_is_not_retried)
{
	json_t *m = fake_store_metadata("db.t");
	long long uuid_before = fake_store_version("db.t");

	json_decref(body);
	body = json_pack("{s:[{s:s, s:s}], s:[{s:s, s:{s:s}}]}", "requirements", "type",
			 "assert-table-uuid", "uuid",
			 json_string_value(json_object_get(m, "table-uuid")), "updates", "action",
			 "set-properties", "updates", "owner", "floe");
	json_object_set_new(m, "table-uuid", json_string("00000000-0000-4000-8000-000000000000"));
	fake_store_other_commit("db.t", m);
	json_decref(m);
	cr_assert_null(commit());
	assert_commit_failed(NULL);
	cr_assert(strncmp(err.message, "Requirement failed: ", 20) == 0, "%s", err.message);
	cr_assert_eq(fake_store_version("db.t"), uuid_before + 1);
	cr_assert_eq(fake_calls("fileio_write_metadata"), 0);
}

Test(commit, serialization_failure_is_retried)
{
	fake_fail("store_table_cas", 1, fake_serialization(), false);
	json_t *r = commit();
	cr_assert_not_null(r, "%s", err.message);
	cr_assert_eq(fake_calls("store_table_cas"), 2);
	cr_assert_eq(fake_store_version("db.t"), 2);
	cr_assert_eq(fake_fileio_removed(), 1);
	json_decref(r);
}

Test(commit, connection_lost_before_the_swap_is_a_known_failure)
{
	fake_fail("store_table_cas", 1, fake_conn_lost(), false);
	cr_assert_null(commit());
	assert_unavailable(CONN_LOST);
	cr_assert_eq(fake_calls("store_table_cas"), 1);
	cr_assert_eq(fake_fileio_removed(), 1);
	cr_assert_eq(fake_store_version("db.t"), 1);
}

/* The swap runs in a transaction of its own; its COMMIT is what can be
 * lost in flight. */
Test(commit, commit_lost_in_flight_but_landed_answers_success)
{
	fake_fail("store_commit", 1, fake_commit_unknown(), true);
	json_t *r = commit();
	cr_assert_not_null(r, "%s", err.message);
	cr_assert_eq(err.kind, FE_NONE);
	cr_assert_eq(fake_calls("store_reconnect"), 1);
	cr_assert_eq(fake_calls("store_commit_landed"), 1);
	const char *loc = json_string_value(json_object_get(r, "metadata-location"));
	cr_assert_str_eq(loc, fake_store_location("db.t"));
	cr_assert(fake_fileio_exists(loc));
	cr_assert_eq(fake_fileio_removed(), 0);
	json_decref(r);
}

Test(commit, commit_lost_in_flight_and_aborted_answers_failed)
{
	fake_fail("store_commit", 1, fake_commit_unknown(), false);
	cr_assert_null(commit());
	assert_unavailable(NOT_LANDED);
	cr_assert_eq(fake_fileio_removed(), 1);
	cr_assert_eq(fake_store_version("db.t"), 1);
	/* Settled: not retried. */
	cr_assert_eq(fake_calls("store_table_cas"), 1);
}

/* A COMMIT waiting on a synchronous standby is durable but not visible:
 * its transaction is in progress. Unknown, and the file stays. */
Test(commit, commit_lost_in_flight_and_still_in_progress_answers_unknown)
{
	struct unsettled *u = unsettled_new();
	int seen = 0;

	env.unsettled = u;
	fake_store_commit_pending(true);
	fake_fail("store_commit", 1, fake_commit_unknown(), false);
	cr_assert_null(commit());
	assert_unknown(UNKNOWN);
	cr_assert_eq(fake_fileio_removed(), 0);
	cr_assert_eq(fake_calls("store_commit_landed"), 1);
	cr_assert_eq(fake_calls("store_table_cas"), 1);
	unsettled_drain(u, count_unsettled, &seen);
	cr_assert_eq(seen, 1);
	unsettled_free(&u);
}

Test(commit, commit_lost_in_flight_and_database_gone_answers_unknown)
{
	struct unsettled *u = unsettled_new();
	int seen = 0;

	env.unsettled = u;
	fake_store_stay_away(true);
	fake_fail("store_commit", 1, fake_commit_unknown(), false);
	cr_assert_null(commit());
	assert_unknown(UNKNOWN);
	/* The client may find the commit landed later: its file stays. */
	cr_assert_eq(fake_fileio_removed(), 0);
	cr_assert(fake_calls("store_reconnect") > 1);
	/* It waited the whole settle window (10 s) for the database. */
	cr_assert_geq(clock_virtual_slept_ms(), 10000);
	/* ... and the janitor is asked to settle it. */
	unsettled_drain(u, count_unsettled, &seen);
	cr_assert_eq(seen, 1);
	unsettled_free(&u);
}

/* --- a commit with an Idempotency-Key: the swap, the key's answer and
 * the COMMIT in one transaction --- */

static void keyed(void)
{
	env.idem_key = "key-1";
	env.idem_owner = "owner-1";
}

Test(commit, keyed_commit_lands)
{
	keyed();
	json_t *r = commit();
	cr_assert_not_null(r, "%s", err.message);
	cr_assert_eq(fake_calls("store_idem_finish"), 1);
	cr_assert_eq(fake_calls("store_commit"), 1);
	cr_assert_eq(fake_store_version("db.t"), 2);
	json_decref(r);
}

Test(commit, keyed_connection_lost_before_commit_removes_the_file)
{
	keyed();
	fake_fail("store_idem_finish", 1, fake_conn_lost(), false);
	cr_assert_null(commit());
	assert_unavailable(CONN_LOST);
	cr_assert_str_eq(err.sqlstate, "08006");
	cr_assert_eq(fake_calls("store_commit"), 0);
	cr_assert_eq(fake_fileio_removed(), 1);
	cr_assert_eq(fake_store_version("db.t"), 1);
}

Test(commit, keyed_key_claimed_by_a_retry_undoes_the_commit)
{
	keyed();
	fake_store_idem_taken(1);
	cr_assert_null(commit());
	assert_unavailable(
		"Idempotency-Key key-1 was claimed again by a retry; this attempt committed nothing");
	cr_assert_eq(fake_fileio_removed(), 1);
	cr_assert_eq(fake_store_version("db.t"), 1);
}

Test(commit, keyed_commit_lost_after_commit_landed_answers_success)
{
	keyed();
	fake_fail("store_commit", 1, fake_commit_unknown(), true);
	json_t *r = commit();
	cr_assert_not_null(r, "%s", err.message);
	cr_assert_eq(fake_calls("store_commit_landed"), 1);
	cr_assert_eq(fake_store_version("db.t"), 2);
	cr_assert(fake_fileio_exists(fake_store_location("db.t")));
	cr_assert_eq(fake_fileio_removed(), 0);
	json_decref(r);
}

Test(commit, keyed_commit_lost_after_commit_not_landed_answers_failed)
{
	keyed();
	fake_fail("store_commit", 1, fake_commit_unknown(), false);
	cr_assert_null(commit());
	assert_unavailable(NOT_LANDED);
	cr_assert_eq(fake_fileio_removed(), 1);
	cr_assert_eq(fake_store_version("db.t"), 1);
}

Test(commit, keyed_commit_lost_and_database_gone_answers_unknown)
{
	keyed();
	fake_store_stay_away(true);
	fake_fail("store_commit", 1, fake_commit_unknown(), true);
	cr_assert_null(commit());
	assert_unknown(UNKNOWN);
	cr_assert_eq(fake_fileio_removed(), 0);
	/* It waited the whole settle window (10 s) for the database. */
	cr_assert_geq(clock_virtual_slept_ms(), 10000);
}

Test(commit, keyed_serialization_failure_at_commit_is_retried)
{
	keyed();
	fake_fail("store_commit", 1, fake_serialization(), false);
	json_t *r = commit();
	cr_assert_not_null(r, "%s", err.message);
	cr_assert_eq(fake_calls("store_commit"), 2);
	cr_assert_eq(fake_store_version("db.t"), 2);
	cr_assert_eq(fake_fileio_removed(), 1);
	json_decref(r);
}

/* --- commitTransaction over db.a and db.b --- */

static json_t *changes(void)
{
	return json_pack("{s:[{s:{s:[s], s:s}, s:O}, {s:{s:[s], s:s}, s:O}]}", "table-changes",
			 "identifier", "namespace", "db", "name", "b", "updates",
			 json_object_get(body, "updates"), "identifier", "namespace", "db", "name",
			 "a", "updates", json_object_get(body, "updates"));
}

static bool transaction(void)
{
	json_t *c = changes();
	bool ok = table_commit_transaction(fake_store(), &env, c, &err);
	json_decref(c);
	return ok;
}

static void assert_untouched(void)
{
	cr_assert_eq(fake_store_version("db.a"), 1);
	cr_assert_eq(fake_store_version("db.b"), 1);
	cr_assert_null(owner_of("db.a"));
	cr_assert_null(owner_of("db.b"));
}

Test(transaction, lands_on_every_table)
{
	cr_assert(transaction(), "%s", err.message);
	cr_assert_eq(fake_store_version("db.a"), 2);
	cr_assert_eq(fake_store_version("db.b"), 2);
	cr_assert_str_eq(owner_of("db.a"), "floe");
	cr_assert_str_eq(owner_of("db.b"), "floe");
	cr_assert_eq(fake_calls("store_begin"), 1);
	cr_assert_eq(fake_calls("store_commit"), 1);
	cr_assert_eq(fake_fileio_removed(), 0);
}

Test(transaction, fsync_fails_on_the_second_table_removes_the_first_file)
{
	fake_fileio_fsync_fails(2);
	cr_assert_not(transaction());
	assert_failed(FE_INTERNAL, FO_NOT_ATTEMPTED, "Cannot write the metadata file", 503,
		      "ServiceUnavailableException");
	cr_assert_eq(fake_calls("store_commit"), 0);
	cr_assert_eq(fake_fileio_removed(), 1);
	assert_untouched();
}

Test(transaction, lost_cas_retries_the_whole_transaction)
{
	/* The second table in name order (b) loses its first swap. */
	fake_store_cas_lose(2, 1);
	cr_assert(transaction(), "%s", err.message);
	cr_assert_eq(fake_calls("store_begin"), 2);
	cr_assert_eq(fake_store_version("db.a"), 2);
	/* The other writer's commit, then this transaction's. */
	cr_assert_eq(fake_store_version("db.b"), 3);
	/* Both files of the first attempt are gone. */
	cr_assert_eq(fake_fileio_removed(), 2);
}

Test(transaction, cas_lost_every_time_answers_commit_failed)
{
	fake_store_cas_lose(1, 1000);
	cr_assert_not(transaction());
	assert_commit_failed("The tables changed under 40 attempts to commit; retry");
	cr_assert_eq(fake_calls("store_begin"), 40);
	/* Both tables' files are written before the first swap, each
	 * attempt. */
	cr_assert_eq(fake_fileio_removed(), 80);
	cr_assert_eq(fake_calls("store_commit"), 0);
}

Test(transaction, connection_lost_before_commit_removes_every_file)
{
	fake_fail("store_table_cas", 2, fake_conn_lost(), false);
	cr_assert_not(transaction());
	assert_unavailable(CONN_LOST);
	cr_assert_eq(fake_calls("store_begin"), 1);
	cr_assert_eq(fake_fileio_removed(), 2);
	assert_untouched();
}

Test(transaction, commit_lost_after_commit_landed_answers_success)
{
	fake_fail("store_commit", 1, fake_commit_unknown(), true);
	cr_assert(transaction(), "%s", err.message);
	cr_assert_eq(fake_calls("store_commit_landed"), 1);
	cr_assert_eq(fake_store_version("db.a"), 2);
	cr_assert_eq(fake_store_version("db.b"), 2);
	cr_assert_eq(fake_fileio_removed(), 0);
}

Test(transaction, commit_lost_after_commit_not_landed_answers_failed)
{
	fake_fail("store_commit", 1, fake_commit_unknown(), false);
	cr_assert_not(transaction());
	assert_unavailable(NOT_LANDED);
	cr_assert_eq(fake_fileio_removed(), 2);
	assert_untouched();
}

Test(transaction, commit_lost_and_still_in_progress_answers_unknown)
{
	fake_store_commit_pending(true);
	fake_fail("store_commit", 1, fake_commit_unknown(), false);
	cr_assert_not(transaction());
	assert_unknown(UNKNOWN);
	cr_assert_eq(fake_fileio_removed(), 0);
	cr_assert_eq(fake_calls("store_begin"), 1);
}

Test(transaction, commit_lost_and_database_gone_answers_unknown)
{
	fake_store_stay_away(true);
	fake_fail("store_commit", 1, fake_commit_unknown(), false);
	cr_assert_not(transaction());
	assert_unknown(UNKNOWN);
	/* Unknown: every file is kept, and nothing is retried. */
	cr_assert_eq(fake_fileio_removed(), 0);
	cr_assert_eq(fake_calls("store_begin"), 1);
	/* It waited the whole settle window (10 s) for the database. */
	cr_assert_geq(clock_virtual_slept_ms(), 10000);
}

Test(transaction, serialization_failure_at_commit_is_retried)
{
	fake_fail("store_commit", 1, fake_serialization(), false);
	cr_assert(transaction(), "%s", err.message);
	cr_assert_eq(fake_calls("store_begin"), 2);
	cr_assert_eq(fake_store_version("db.a"), 2);
	cr_assert_eq(fake_store_version("db.b"), 2);
	cr_assert_eq(fake_fileio_removed(), 2);
}
