/*
 * metric.h - floe's operational counters, gauges and histograms: one fixed
 * table of metric families (metric.c), each a fixed array of C11 atomics,
 * so any layer counts with one relaxed atomic add, without a port, a lock
 * or an allocation. server/prometheus.c renders them for GET /metrics.
 *
 * Memory is bounded: every label value comes from a fixed list (or, for
 * the route, from server/router.c's table), never from client input.
 * Not for per-table or per-principal figures (unbounded).
 */
#ifndef FLOE_METRIC_H
#define FLOE_METRIC_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <time.h>

enum metric_id {
	METRIC_HTTP_REQUESTS,    /* counter {route, code} */
	METRIC_HTTP_DURATION,    /* histogram {route} */
	METRIC_COMMIT_ATTEMPTS,  /* counter: commits begun (first rounds) */
	METRIC_COMMIT_RETRIES,   /* counter: rounds after a lost race */
	METRIC_COMMIT_CONFLICTS, /* counter: commits answered 409 */
	METRIC_COMMITS,          /* counter {outcome} */
	METRIC_WAP_RUNS,         /* counter {outcome} */
	METRIC_HOOK_CALLS,       /* counter {verdict} */
	METRIC_HOOK_DURATION,    /* histogram */
	METRIC_POOL_SIZE,        /* gauge {pool} */
	METRIC_POOL_IN_USE,      /* gauge {pool} */
	METRIC_POOL_WAIT,        /* histogram {pool} */
	METRIC_POOL_TIMEOUTS,    /* counter {pool} */
	METRIC_QUEUE_DEPTH,      /* gauge {queue} */
	METRIC_QUEUE_REFUSED,    /* counter {queue} */
	METRIC_JANITOR_ROUNDS,   /* counter */
	METRIC_JANITOR_ROWS,     /* counter {kind} */
	METRIC_JANITOR_FILES,    /* counter {kind} */
	METRIC_PG_ERRORS,        /* counter {class} */
	METRIC_AUTHZ_DECISIONS,  /* counter {answer} */
	METRIC_SUBSCRIPTIONS,    /* gauge {state} */
	METRIC_EVENT_DELIVERIES, /* counter {outcome} */
	METRIC_COUNT
};

/* The label values of the families with a fixed list, in its order. */
enum metric_commit_outcome { METRIC_COMMITTED, METRIC_COMMIT_FAILED, METRIC_COMMIT_UNKNOWN };
enum metric_wap_outcome {
	METRIC_WAP_STAGED,
	METRIC_WAP_PUBLISHED,
	METRIC_WAP_REJECTED,
	METRIC_WAP_AUDIT_FAILED,
	METRIC_WAP_CONFLICT,
	METRIC_WAP_NO_HOOK,
	METRIC_WAP_ABANDONED,
	METRIC_WAP_ERROR,
};
enum metric_janitor_rows {
	METRIC_ROWS_IDEMPOTENCY_KEYS,
	METRIC_ROWS_METRICS_REPORTS,
	METRIC_ROWS_EXPIRED_AUDITS,
	METRIC_ROWS_PURGES_DONE,
	METRIC_ROWS_PURGES_FAILED,
	METRIC_ROWS_UNSETTLED_COMMITS,
	METRIC_ROWS_DROPPED_TABLES,
	METRIC_ROWS_FEED_EVENTS,
};
/* Where a decision of authorization came from (catalog/authzcache.h). */
enum metric_authz_answer { METRIC_AUTHZ_KEPT, METRIC_AUTHZ_ASKED };
enum metric_sub_state { METRIC_SUB_ACTIVE, METRIC_SUB_DEAD };
enum metric_delivery_outcome {
	METRIC_DELIVERY_DELIVERED,
	METRIC_DELIVERY_FAILED,
	METRIC_DELIVERY_DEAD_LETTERED
};
enum metric_janitor_files { METRIC_FILES_PURGED, METRIC_FILES_TEMPORARY, METRIC_FILES_UNSETTLED };

enum metric_type { METRIC_COUNTER, METRIC_GAUGE, METRIC_HISTOGRAM };

/* How a dimension's index becomes a label value. */
enum metric_dim_kind {
	METRIC_DIM_LIST,     /* values[index] */
	METRIC_DIM_ROUTE,    /* named by the renderer: 0 unrouted, else a route */
	METRIC_DIM_STATUS,   /* an HTTP status (metric_status_slot) */
	METRIC_DIM_SQLSTATE, /* a SQLSTATE class (metric_sqlstate_slot) */
};

struct metric_dim {
	const char *label; /* the label's name */
	enum metric_dim_kind kind;
	size_t size;               /* how many values */
	const char *const *values; /* METRIC_DIM_LIST only */
};

struct metric_family {
	const char *name; /* counters end in _total */
	const char *help;
	enum metric_type type;
	size_t ndims; /* 0, 1 or 2 */
	struct metric_dim dims[2];
	atomic_llong *cells; /* per label combination: one value, or for a
			      * histogram METRIC_HIST_STRIDE values */
	size_t ncells;       /* label combinations */
};

/* Routes a request may be counted under: slot 0 is "no route" (404, 405,
 * or refused before routing), slot i the router's route i - 1. */
#define METRIC_ROUTE_SLOTS 128

/* Histogram buckets, upper bounds in microseconds, one set for every
 * histogram (100 µs to 60 s); a cell holds METRIC_BUCKETS counts, the
 * +Inf count and the sum of the observations in microseconds. */
#define METRIC_BUCKETS 18
#define METRIC_HIST_STRIDE (METRIC_BUCKETS + 2)
extern const long long metric_bucket_us[METRIC_BUCKETS];

/* Given to metric_add and metric_observe, counts nothing. */
#define METRIC_NO_CELL ((size_t)-1)

/* The family of id (borrowed, static). */
const struct metric_family *metric_family_get(enum metric_id id);

/* Adds delta to a counter or gauge cell; a cell out of range (such as
 * METRIC_NO_CELL) is ignored. One relaxed atomic add. */
void metric_add(enum metric_id id, size_t cell, long long delta);

/* Sets a gauge cell to value; a cell out of range is ignored. */
void metric_set(enum metric_id id, size_t cell, long long value);

/* Counts one observation of us microseconds into a histogram cell: two
 * relaxed atomic adds. A cell out of range is ignored. */
void metric_observe(enum metric_id id, size_t cell, long long us);

/* The cell of a two-dimension family for the indexes a and b. */
size_t metric_cell(enum metric_id id, size_t a, size_t b);

/* The index of value in dimension dim of id's family (a METRIC_DIM_LIST),
 * or METRIC_NO_CELL when it is not there. */
size_t metric_label_find(enum metric_id id, size_t dim, const char *value);

/* The slot of an HTTP status (the last one: any status not listed). */
size_t metric_status_slot(int status);

/* The label value of a status slot ("200", ..., "other"). */
const char *metric_status_label(size_t slot);

/* The slot of a SQLSTATE's class (its first two characters, 0-9 A-Z);
 * the last slot holds a missing or malformed one. */
size_t metric_sqlstate_slot(const char *sqlstate);

/* The class of a SQLSTATE slot into out (at least 8 bytes): "40", or
 * "unknown" for the last slot. */
void metric_sqlstate_label(size_t slot, char *out, size_t outlen);

/* A cell's value, read once (relaxed). k indexes cells, or for a
 * histogram cells * METRIC_HIST_STRIDE. */
long long metric_read(const struct metric_family *f, size_t k);

/* Microseconds from one CLOCK_MONOTONIC reading to a later one. */
long long metric_elapsed_us(const struct timespec *from, const struct timespec *to);

#endif
