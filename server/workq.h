/*
 * workq.h - a fixed pool of threads taking jobs from one queue. Commits
 * run here, off libmicrohttpd's worker threads: they spend most of their
 * time waiting on fsync, and reads must not queue behind them.
 */
#ifndef FLOE_WORKQ_H
#define FLOE_WORKQ_H

#include <stdbool.h>

struct workq;

/* Starts nthreads threads. Returns NULL (logged) on failure. */
struct workq *workq_start(int nthreads);

/* Queues fn(arg). Returns false when the queue is stopping or out of
 * memory; the caller then runs the job itself. */
bool workq_submit(struct workq *q, void (*fn)(void *arg), void *arg);

/* Runs every job already queued, stops the threads and frees the queue;
 * sets *q to NULL. */
void workq_stop(struct workq **q);

#endif
