/*
 * app.h - what every request handler is given: the immutable
 * configuration and the database pool. Passed explicitly, never global.
 */
#ifndef FLOE_APP_H
#define FLOE_APP_H

#include <stdatomic.h>

#include "config.h"
#include "janitor.h"
#include "store.h"
#include "table.h"
#include "workq.h"

struct app {
	const struct floe_config *cfg;
	struct store_pool *pool;
	struct commit_locks *locks;
	struct unsettled *unsettled; /* commits the janitor settles later */
	struct workq *commits;  /* runs commits off the HTTP worker threads */
	struct janitor *janitor; /* purges and upkeep; may be NULL */
	atomic_long inflight; /* requests begun and not yet completed */
	atomic_long async;    /* suspended requests still being worked on */
};

#endif
