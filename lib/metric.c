/*
 * metric.c - the table of metric families and their storage (metric.h).
 * Adding a metric is one enum value, one storage array and one row here.
 * Counting never locks: every cell is an atomic added to with relaxed
 * order, which is all a scrape needs (each value is read once, on its own).
 */
#include "metric.h"

#include <stdio.h>
#include <string.h>

#define LEN(a) (sizeof(a) / sizeof((a)[0]))

/* 100 µs to 60 s: a cached loadTable, a commit's fsync, a hook's timeout. */
const long long metric_bucket_us[METRIC_BUCKETS] = {
	100,    250,    500,    1000,    2500,    5000,    10000,    25000,    50000,
	100000, 250000, 500000, 1000000, 2500000, 5000000, 10000000, 30000000, 60000000,
};

/* The statuses floe answers; anything else counts as "other". */
static const int statuses[] = { 200, 201, 202, 204, 304, 400, 401, 403, 404, 405, 406,
				409, 412, 413, 415, 422, 429, 500, 501, 502, 503, 504 };
static const char *const status_labels[] = { "200", "201", "202", "204", "304",  "400",
					     "401", "403", "404", "405", "406",  "409",
					     "412", "413", "415", "422", "429",  "500",
					     "501", "502", "503", "504", "other" };
#define STATUS_SLOTS LEN(status_labels)
_Static_assert(LEN(statuses) + 1 == LEN(status_labels), "a label for every status");

/* Two characters of 0-9 A-Z, and one slot for anything else. */
#define SQLSTATE_SLOTS (36 * 36 + 1)

static const char *const commit_outcomes[] = { "committed", "failed", "unknown" };
static const char *const wap_outcomes[] = { "staged",   "published", "rejected",  "audit_failed",
					    "conflict", "no_hook",   "abandoned", "error" };
/* In the order of enum hook_verdict (hooks.h). */
static const char *const verdicts[] = { "pass", "reject", "error" };
static const char *const pools[] = { "http", "commit", "publish", "janitor", "events" };
static const char *const queues[] = { "commit", "publish", "request" };
static const char *const janitor_rows[] = { "idempotency_keys", "metrics_reports",
					    "expired_audits",   "purges_done",
					    "purges_failed",    "unsettled_commits",
					    "dropped_tables",   "feed_events" };
static const char *const janitor_files[] = { "purged", "temporary", "unsettled" };
static const char *const authz_answers[] = { "kept", "asked" };
static const char *const sub_states[] = { "active", "dead-letter" };
static const char *const delivery_outcomes[] = { "delivered", "failed", "dead-lettered" };
_Static_assert(LEN(commit_outcomes) == METRIC_COMMIT_UNKNOWN + 1, "commit outcomes");
_Static_assert(LEN(wap_outcomes) == METRIC_WAP_ERROR + 1, "WAP outcomes");
_Static_assert(LEN(janitor_rows) == METRIC_ROWS_FEED_EVENTS + 1, "janitor rows");
_Static_assert(LEN(janitor_files) == METRIC_FILES_UNSETTLED + 1, "janitor files");
_Static_assert(LEN(authz_answers) == METRIC_AUTHZ_ASKED + 1, "authorization answers");
_Static_assert(LEN(sub_states) == METRIC_SUB_DEAD + 1, "subscription states");
_Static_assert(LEN(delivery_outcomes) == METRIC_DELIVERY_DEAD_LETTERED + 1, "delivery outcomes");

#define ROUTE_DIM                                                   \
	{                                                           \
		"route", METRIC_DIM_ROUTE, METRIC_ROUTE_SLOTS, NULL \
	}
#define LIST_DIM(label, list)                           \
	{                                               \
		label, METRIC_DIM_LIST, LEN(list), list \
	}

static atomic_llong http_requests[METRIC_ROUTE_SLOTS * STATUS_SLOTS];
static atomic_llong http_duration[METRIC_ROUTE_SLOTS * METRIC_HIST_STRIDE];
static atomic_llong commit_attempts[1];
static atomic_llong commit_retries[1];
static atomic_llong commit_conflicts[1];
static atomic_llong commits[LEN(commit_outcomes)];
static atomic_llong wap_runs[LEN(wap_outcomes)];
static atomic_llong hook_calls[LEN(verdicts)];
static atomic_llong hook_duration[METRIC_HIST_STRIDE];
static atomic_llong pool_size[LEN(pools)];
static atomic_llong pool_in_use[LEN(pools)];
static atomic_llong pool_wait[LEN(pools) * METRIC_HIST_STRIDE];
static atomic_llong pool_timeouts[LEN(pools)];
static atomic_llong queue_depth[LEN(queues)];
static atomic_llong queue_refused[LEN(queues)];
static atomic_llong janitor_rounds[1];
static atomic_llong janitor_row_counts[LEN(janitor_rows)];
static atomic_llong janitor_file_counts[LEN(janitor_files)];
static atomic_llong pg_errors[SQLSTATE_SLOTS];
static atomic_llong authz_decisions[LEN(authz_answers)];
static atomic_llong subscriptions[LEN(sub_states)];
static atomic_llong event_deliveries[LEN(delivery_outcomes)];

#define CELLS(a) (a), LEN(a)
#define HIST_CELLS(a) (a), (LEN(a) / METRIC_HIST_STRIDE)

/* clang-format off */
static const struct metric_family families[METRIC_COUNT] = {
	[METRIC_HTTP_REQUESTS] = { "floe_http_requests_total",
		"HTTP requests answered, by route pattern and status code", METRIC_COUNTER, 2,
		{ ROUTE_DIM, { "code", METRIC_DIM_STATUS, STATUS_SLOTS, NULL } },
		CELLS(http_requests) },
	[METRIC_HTTP_DURATION] = { "floe_http_request_duration_seconds",
		"Time from a request's arrival to the end of its answer, by route pattern",
		METRIC_HISTOGRAM, 1, { ROUTE_DIM }, HIST_CELLS(http_duration) },
	[METRIC_COMMIT_ATTEMPTS] = { "floe_commit_attempts_total",
		"Commits and multi-table transactions attempted (their first round; retries are counted apart)",
		METRIC_COUNTER, 0, { { 0 } }, CELLS(commit_attempts) },
	[METRIC_COMMIT_RETRIES] = { "floe_commit_retries_total",
		"Server-side commit retries: rounds run again after another writer won the swap",
		METRIC_COUNTER, 0, { { 0 } }, CELLS(commit_retries) },
	[METRIC_COMMIT_CONFLICTS] = { "floe_commit_conflicts_total",
		"Commits refused with 409 CommitFailedException (a requirement failed, or too many lost races)",
		METRIC_COUNTER, 0, { { 0 } }, CELLS(commit_conflicts) },
	[METRIC_COMMITS] = { "floe_commits_total",
		"Table commits and multi-table transactions by outcome: committed, failed (nothing changed), unknown (answered 500)",
		METRIC_COUNTER, 1, { LIST_DIM("outcome", commit_outcomes) }, CELLS(commits) },
	[METRIC_WAP_RUNS] = { "floe_wap_runs_total",
		"Write-audit-publish runs staged, and publishes and abandons by outcome",
		METRIC_COUNTER, 1, { LIST_DIM("outcome", wap_outcomes) }, CELLS(wap_runs) },
	[METRIC_HOOK_CALLS] = { "floe_hook_calls_total",
		"Audit hook calls by verdict (pass, reject, error)",
		METRIC_COUNTER, 1, { LIST_DIM("verdict", verdicts) }, CELLS(hook_calls) },
	[METRIC_HOOK_DURATION] = { "floe_hook_call_duration_seconds",
		"Time an audit hook took to give its verdict, retries included",
		METRIC_HISTOGRAM, 0, { { 0 } }, HIST_CELLS(hook_duration) },
	[METRIC_POOL_SIZE] = { "floe_db_pool_connections",
		"PostgreSQL connections each pool may hold",
		METRIC_GAUGE, 1, { LIST_DIM("pool", pools) }, CELLS(pool_size) },
	[METRIC_POOL_IN_USE] = { "floe_db_pool_connections_in_use",
		"PostgreSQL connections of each pool lent out now",
		METRIC_GAUGE, 1, { LIST_DIM("pool", pools) }, CELLS(pool_in_use) },
	[METRIC_POOL_WAIT] = { "floe_db_pool_wait_seconds",
		"Time a thread waited for a free connection of its pool",
		METRIC_HISTOGRAM, 1, { LIST_DIM("pool", pools) }, HIST_CELLS(pool_wait) },
	[METRIC_POOL_TIMEOUTS] = { "floe_db_pool_timeouts_total",
		"Waits for a connection that gave up (answered 503)",
		METRIC_COUNTER, 1, { LIST_DIM("pool", pools) }, CELLS(pool_timeouts) },
	[METRIC_QUEUE_DEPTH] = { "floe_queue_depth",
		"Jobs waiting in each work queue for a thread",
		METRIC_GAUGE, 1, { LIST_DIM("queue", queues) }, CELLS(queue_depth) },
	[METRIC_QUEUE_REFUSED] = { "floe_queue_refused_total",
		"Jobs refused because their queue was full (answered 503)",
		METRIC_COUNTER, 1, { LIST_DIM("queue", queues) }, CELLS(queue_refused) },
	[METRIC_JANITOR_ROUNDS] = { "floe_janitor_rounds_total",
		"Rounds of the janitor",
		METRIC_COUNTER, 0, { { 0 } }, CELLS(janitor_rounds) },
	[METRIC_JANITOR_ROWS] = { "floe_janitor_rows_total",
		"Rows the janitor removed or settled, by kind",
		METRIC_COUNTER, 1, { LIST_DIM("kind", janitor_rows) }, CELLS(janitor_row_counts) },
	[METRIC_JANITOR_FILES] = { "floe_janitor_files_removed_total",
		"Files and directory entries the janitor removed, by kind",
		METRIC_COUNTER, 1, { LIST_DIM("kind", janitor_files) }, CELLS(janitor_file_counts) },
	[METRIC_PG_ERRORS] = { "floe_postgres_errors_total",
		"Failed PostgreSQL statements by SQLSTATE class (08 connection, 40 rollback, 57 operator, 23 integrity, ...)",
		METRIC_COUNTER, 1, { { "class", METRIC_DIM_SQLSTATE, SQLSTATE_SLOTS, NULL } },
		CELLS(pg_errors) },
	[METRIC_AUTHZ_DECISIONS] = { "floe_authz_decisions_total",
		"Decisions of authorization by where the answer came from: kept (allowed a moment ago, no query) or asked (the database)",
		METRIC_COUNTER, 1, { LIST_DIM("answer", authz_answers) }, CELLS(authz_decisions) },
	[METRIC_SUBSCRIPTIONS] = { "floe_event_subscriptions",
		"Event subscriptions of every warehouse by state: active, or dead-letter (delivery stopped at a held event), as of the last delivery round",
		METRIC_GAUGE, 1, { LIST_DIM("state", sub_states) }, CELLS(subscriptions) },
	[METRIC_EVENT_DELIVERIES] = { "floe_event_deliveries_total",
		"Event deliveries to subscriptions by outcome: delivered (acknowledged), failed (to be retried), dead-lettered (the last attempt failed)",
		METRIC_COUNTER, 1, { LIST_DIM("outcome", delivery_outcomes) }, CELLS(event_deliveries) },
};
/* clang-format on */

const struct metric_family *metric_family_get(enum metric_id id)
{
	return &families[id];
}

void metric_add(enum metric_id id, size_t cell, long long delta)
{
	const struct metric_family *f = &families[id];

	if (f->type == METRIC_HISTOGRAM || cell >= f->ncells)
		return;
	atomic_fetch_add_explicit(&f->cells[cell], delta, memory_order_relaxed);
}

void metric_set(enum metric_id id, size_t cell, long long value)
{
	const struct metric_family *f = &families[id];

	if (f->type != METRIC_GAUGE || cell >= f->ncells)
		return;
	atomic_store_explicit(&f->cells[cell], value, memory_order_relaxed);
}

void metric_observe(enum metric_id id, size_t cell, long long us)
{
	const struct metric_family *f = &families[id];
	size_t b = 0;

	if (f->type != METRIC_HISTOGRAM || cell >= f->ncells)
		return;
	if (us < 0)
		us = 0;
	while (b < METRIC_BUCKETS && us > metric_bucket_us[b])
		b++;
	atomic_llong *h = &f->cells[cell * METRIC_HIST_STRIDE];
	atomic_fetch_add_explicit(&h[b], 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&h[METRIC_BUCKETS + 1], us, memory_order_relaxed);
}

size_t metric_cell(enum metric_id id, size_t a, size_t b)
{
	const struct metric_family *f = &families[id];

	if (f->ndims != 2 || a >= f->dims[0].size || b >= f->dims[1].size)
		return METRIC_NO_CELL;
	return a * f->dims[1].size + b;
}

size_t metric_label_find(enum metric_id id, size_t dim, const char *value)
{
	const struct metric_family *f = &families[id];

	if (value == NULL || dim >= f->ndims || f->dims[dim].kind != METRIC_DIM_LIST)
		return METRIC_NO_CELL;
	for (size_t i = 0; i < f->dims[dim].size; i++) {
		if (strcmp(f->dims[dim].values[i], value) == 0)
			return i;
	}
	return METRIC_NO_CELL;
}

size_t metric_status_slot(int status)
{
	for (size_t i = 0; i < LEN(statuses); i++) {
		if (statuses[i] == status)
			return i;
	}
	return STATUS_SLOTS - 1;
}

const char *metric_status_label(size_t slot)
{
	return slot < STATUS_SLOTS ? status_labels[slot] : status_labels[STATUS_SLOTS - 1];
}

/* 0-9 A-Z as 0..35, -1 for anything else. */
static int base36(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'A' && c <= 'Z')
		return c - 'A' + 10;
	return -1;
}

size_t metric_sqlstate_slot(const char *sqlstate)
{
	if (sqlstate == NULL || sqlstate[0] == '\0')
		return SQLSTATE_SLOTS - 1;
	int hi = base36(sqlstate[0]);
	int lo = base36(sqlstate[1]);
	if (hi < 0 || lo < 0)
		return SQLSTATE_SLOTS - 1;
	return (size_t)hi * 36 + (size_t)lo;
}

void metric_sqlstate_label(size_t slot, char *out, size_t outlen)
{
	static const char digits[] = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ";

	if (slot >= SQLSTATE_SLOTS - 1) {
		(void)snprintf(out, outlen, "unknown");
		return;
	}
	(void)snprintf(out, outlen, "%c%c", digits[slot / 36], digits[slot % 36]);
}

long long metric_read(const struct metric_family *f, size_t k)
{
	size_t n = f->ncells * (f->type == METRIC_HISTOGRAM ? METRIC_HIST_STRIDE : 1);

	if (k >= n)
		return 0;
	return atomic_load_explicit(&f->cells[k], memory_order_relaxed);
}

long long metric_elapsed_us(const struct timespec *from, const struct timespec *to)
{
	return (long long)(to->tv_sec - from->tv_sec) * 1000000LL +
	       (to->tv_nsec - from->tv_nsec) / 1000;
}
