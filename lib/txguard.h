/*
 * txguard.h - whether the calling thread has a database transaction open.
 *
 * floe never waits on a disk, a bucket or a remote server inside a
 * transaction: an open transaction holds row locks other writers queue
 * behind, and holds back the horizon the audit log, the change feed and
 * subscriptions read up to (and vacuum). store/ marks BEGIN
 * (txguard_enter) and its end (txguard_leave: COMMIT, ROLLBACK, a lost
 * connection); fileio/, hooks/ and every other outbound call assert
 * TXGUARD_ASSERT_NONE() at their entry, so a test build aborts at the
 * first breach. Here in lib/ so that those layers need not know store/.
 */
#ifndef FLOE_TXGUARD_H
#define FLOE_TXGUARD_H

#include <stdbool.h>

#include "assertion.h"

/* A transaction began on the calling thread. */
void txguard_enter(void);

/* A transaction of the calling thread ended (never below none). */
void txguard_leave(void);

/* True while the calling thread has a transaction open. */
bool txguard_open(void);

/* At the entry of anything that waits on a file, an object store or the
 * network: no transaction may be open on this thread. */
#define TXGUARD_ASSERT_NONE() FLOE_ASSERT(!txguard_open())

#endif
