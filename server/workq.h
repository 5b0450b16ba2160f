/*
 * workq.h - a fixed pool of threads taking jobs from one bounded queue.
 * Commits run on one, publishes on another, off libmicrohttpd's worker
 * threads: they spend most of their time waiting on fsync or on audit
 * hooks, and reads must not queue behind them. A full queue refuses work
 * at once instead of growing without bound.
 */
#ifndef FLOE_WORKQ_H
#define FLOE_WORKQ_H

#include <stdbool.h>

#include "error.h"

struct workq;

/* A job. refused is NULL when the job is to run; otherwise the job was
 * not run and never will be (the queue is full or stopping) and it must
 * answer with *refused, then free what it owns. Called exactly once. */
typedef void (*workq_fn)(void *arg, const struct floe_error *refused);

/* Starts nthreads threads named by what (for the log) with room for
 * capacity waiting jobs. Returns NULL (logged) on failure. */
struct workq *workq_start(const char *what, int nthreads, int capacity);

/* Queues fn(arg, NULL). Returns false with err set (FE_UNAVAILABLE) when
 * the queue is full or stopping, or out of memory; fn is then not called
 * and the caller still owns arg. */
bool workq_submit(struct workq *q, workq_fn fn, void *arg, struct floe_error *err) FLOE_WUR;

/* Refuses new jobs from now on and calls every job still waiting with a
 * "shutting down" error, in this thread. Jobs already running go on.
 * Safe on NULL. */
void workq_cancel_pending(struct workq *q);

/* Refuses new jobs, cancels those still waiting (as above), waits for the
 * running ones, stops the threads and frees the queue; sets *q to NULL. */
void workq_stop(struct workq **q);

#endif
