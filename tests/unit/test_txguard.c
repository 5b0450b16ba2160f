/*
 * The rule that nothing waits on a file, a bucket or a remote server
 * inside a database transaction, as the test builds enforce it: the
 * thread's marker counts what store/ opened, FLOE_ASSERT aborts with its
 * file, line and expression, and the real entries of fileio/ and hooks/
 * abort when called with a transaction open on their thread.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>

#include "assertion.h"
#include "fileio.h"
#include "hooks.h"
#include "log.h"
#include "txguard.h"

Test(txguard, counts_what_the_thread_opened)
{
	cr_assert_not(txguard_open());
	txguard_enter();
	cr_assert(txguard_open());
	txguard_enter(); /* a second connection's transaction */
	txguard_leave();
	cr_assert(txguard_open());
	txguard_leave();
	cr_assert_not(txguard_open());
	txguard_leave(); /* an end without a beginning stays at none */
	cr_assert_not(txguard_open());
	txguard_enter();
	cr_assert(txguard_open());
	txguard_leave();
}

static void *open_elsewhere(void *arg)
{
	*(bool *)arg = txguard_open();
	return NULL;
}

Test(txguard, is_the_threads_own)
{
	pthread_t t;
	bool seen = true;

	txguard_enter();
	cr_assert_eq(pthread_create(&t, NULL, open_elsewhere, &seen), 0);
	pthread_join(t, NULL);
	cr_assert_not(seen, "another thread's transaction is not this thread's");
	txguard_leave();
}

Test(assertion, holds_quietly)
{
	FLOE_ASSERT(1 + 1 == 2);
	TXGUARD_ASSERT_NONE();
}

Test(assertion, a_false_condition_aborts, .signal = SIGABRT)
{
	log_set_level(LOG_LEVEL_ERROR);
	FLOE_ASSERT(1 + 1 == 3);
}

Test(txguard, no_transaction_may_be_open_at_the_assertion, .signal = SIGABRT)
{
	txguard_enter();
	TXGUARD_ASSERT_NONE();
}

Test(txguard, a_file_removed_inside_a_transaction_aborts, .signal = SIGABRT)
{
	txguard_enter();
	fileio_remove("file:///nonexistent/floe-txguard-test");
}

Test(txguard, a_metadata_file_written_inside_a_transaction_aborts, .signal = SIGABRT)
{
	char *loc = NULL;
	struct floe_error err;

	txguard_enter();
	if (fileio_write_metadata("file:///nonexistent/floe-txguard-test", 1, "{}", 2, &loc, &err))
		cr_assert_fail("reached the disk");
}

Test(txguard, a_webhook_called_inside_a_transaction_aborts, .signal = SIGABRT)
{
	txguard_enter();
	hooks_call_all(NULL, 0);
}

Test(txguard, files_and_hooks_run_once_it_ended)
{
	txguard_enter();
	txguard_leave();
	fileio_remove("file:///nonexistent/floe-txguard-test");
	hooks_call_all(NULL, 0);
}
