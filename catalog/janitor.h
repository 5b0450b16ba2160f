/*
 * janitor.h - floe's periodic upkeep, on a thread of its own with a
 * database connection of its own (never on a request thread): purges of
 * dropped tables, expired idempotency keys, metrics reports past their
 * retention, orphan temporary metadata files, write-audit-publish runs
 * left auditing past their lease, commits whose outcome
 * was unknown when they were answered (unsettled.h), and the signed
 * checkpoints of the audit chain (audittrail.h). Several replicas may
 * run janitors at once: purge rows are claimed with SKIP LOCKED.
 */
#ifndef FLOE_JANITOR_H
#define FLOE_JANITOR_H

#include <stdbool.h>
#include <stddef.h>

struct store_pool;
struct trail_key;
struct unsettled;

/* The most further warehouses a janitor looks after. */
#define JANITOR_WAREHOUSES_MAX 64

struct janitor_config {
	struct store_pool *pool;    /* its own connections; borrowed */
	const char *warehouse_path; /* copied */
	/* The local directories (s3: the URLs) of the further warehouses
	 * (--warehouses): a table's files are purged and tidied below the
	 * one holding it. Copied; at most JANITOR_WAREHOUSES_MAX. */
	const char *const *further_paths;
	size_t nfurther;
	int interval_s; /* between rounds */
	/* Ages are 64-bit: 36,500 days of seconds do not fit an int. */
	long long idempotency_keep_s;     /* keys older than this go */
	long long metrics_retention_days; /* reports older than this go */
	long long undrop_retention_s;     /* kept drops older than this go */
	long long events_retention_s;     /* change-feed events older than this go */
	int purge_max_attempts;           /* then a purge is "failed" */
	struct unsettled *unsettled;      /* commits to settle; borrowed, may be NULL */
	/* Signs a checkpoint of the audit chain every checkpoint_interval_s
	 * (0: never); borrowed, may be NULL (no key). */
	const struct trail_key *audit_key;
	int checkpoint_interval_s;
};

struct janitor;

/* Starts the janitor thread; its first round runs at once. Returns NULL
 * (logged) when out of memory or when no thread can be started. */
struct janitor *janitor_start(const struct janitor_config *cfg);

/* Asks for a round now (after a drop with purge). NULL-safe; never
 * blocks on the round itself. */
void janitor_wake(struct janitor *j);

/* Stops the thread (a round in progress finishes first) and frees it;
 * sets *j to NULL. The pool is the caller's to free afterwards.
 * NULL-safe. */
void janitor_stop(struct janitor **j);

#endif
