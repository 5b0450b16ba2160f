/*
 * workq.c - the job queue behind workq.h: a mutex, a condition variable
 * and a singly linked list, first in first out, with a count kept
 * against the capacity.
 */
#include "workq.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "metric.h"

struct job {
	workq_fn fn;
	void *arg;
	struct job *next;
	char request_id[48];               /* the submitter's, for the log lines of the job */
	char principal[LOG_PRINCIPAL_MAX]; /* and its principal; "": none */
};

/* Runs a job as part of the request that queued it (log.h). */
static void job_run(struct job *j, const struct floe_error *refused)
{
	log_set_request(j->request_id[0] != '\0' ? j->request_id : NULL);
	log_set_principal(j->principal[0] != '\0' ? j->principal : NULL);
	j->fn(j->arg, refused);
	log_set_request(NULL);
	free(j);
}

struct workq {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct job *head;
	struct job *tail;
	int waiting; /* jobs in the list */
	int capacity;
	bool stopping;
	const char *what;
	size_t metric; /* its cell in the queue metrics */
	int nthreads;
	pthread_t *threads;
};

static void *workq_main(void *arg)
{
	struct workq *q = arg;

	for (;;) {
		pthread_mutex_lock(&q->mu);
		while (q->head == NULL && !q->stopping)
			pthread_cond_wait(&q->cv, &q->mu);
		struct job *j = q->head;
		if (j == NULL) {
			pthread_mutex_unlock(&q->mu);
			return NULL;
		}
		q->head = j->next;
		if (q->head == NULL)
			q->tail = NULL;
		q->waiting--;
		pthread_mutex_unlock(&q->mu);
		metric_add(METRIC_QUEUE_DEPTH, q->metric, -1);
		job_run(j, NULL);
	}
}

struct workq *workq_start(const char *what, int nthreads, int capacity)
{
	struct workq *q = calloc(1, sizeof(*q));

	if (q == NULL)
		return NULL;
	q->threads = calloc((size_t)nthreads, sizeof(*q->threads));
	if (q->threads == NULL) {
		free(q);
		return NULL;
	}
	q->what = what;
	q->metric = metric_label_find(METRIC_QUEUE_DEPTH, 0, what);
	q->capacity = capacity;
	pthread_mutex_init(&q->mu, NULL);
	pthread_cond_init(&q->cv, NULL);
	for (int i = 0; i < nthreads; i++) {
		if (pthread_create(&q->threads[i], NULL, workq_main, q) != 0) {
			log_error("main", "cannot start %s thread %d", what, i);
			q->nthreads = i;
			workq_stop(&q);
			return NULL;
		}
		q->nthreads = i + 1;
	}
	return q;
}

bool workq_submit(struct workq *q, workq_fn fn, void *arg, struct floe_error *err)
{
	struct job *j = malloc(sizeof(*j));

	if (j == NULL)
		return floe_err(err, FE_UNAVAILABLE, "out of memory for the %s queue; retry",
				q->what);
	j->fn = fn;
	j->arg = arg;
	j->next = NULL;
	(void)snprintf(j->request_id, sizeof(j->request_id), "%s",
		       log_request() != NULL ? log_request() : "");
	(void)snprintf(j->principal, sizeof(j->principal), "%s",
		       log_principal() != NULL ? log_principal() : "");
	pthread_mutex_lock(&q->mu);
	if (q->stopping || q->waiting >= q->capacity) {
		bool stopping = q->stopping;
		pthread_mutex_unlock(&q->mu);
		free(j);
		if (stopping)
			return floe_err(err, FE_UNAVAILABLE, "floe is shutting down; retry");
		metric_add(METRIC_QUEUE_REFUSED, q->metric, 1);
		log_warn("workq", "the %s queue is full (%d waiting); refusing work", q->what,
			 q->capacity);
		return floe_err(err, FE_UNAVAILABLE, "the %s queue is full (%d waiting); retry",
				q->what, q->capacity);
	}
	if (q->tail != NULL)
		q->tail->next = j;
	else
		q->head = j;
	q->tail = j;
	q->waiting++;
	metric_add(METRIC_QUEUE_DEPTH, q->metric, 1);
	pthread_cond_signal(&q->cv);
	pthread_mutex_unlock(&q->mu);
	return true;
}

void workq_cancel_pending(struct workq *q)
{
	struct floe_error err;
	struct job *list;
	int n = 0;

	if (q == NULL)
		return;
	pthread_mutex_lock(&q->mu);
	q->stopping = true;
	list = q->head;
	q->head = NULL;
	q->tail = NULL;
	metric_add(METRIC_QUEUE_DEPTH, q->metric, -q->waiting);
	q->waiting = 0;
	pthread_cond_broadcast(&q->cv);
	pthread_mutex_unlock(&q->mu);
	floe_err(&err, FE_UNAVAILABLE, "floe is shutting down; retry");
	while (list != NULL) {
		struct job *j = list;
		list = j->next;
		job_run(j, &err);
		n++;
	}
	if (n > 0)
		log_warn("workq", "%d jobs of the %s queue answered 503: shutting down", n,
			 q->what);
}

void workq_stop(struct workq **qp)
{
	struct workq *q = *qp;

	if (q == NULL)
		return;
	workq_cancel_pending(q);
	for (int i = 0; i < q->nthreads; i++)
		pthread_join(q->threads[i], NULL);
	pthread_mutex_destroy(&q->mu);
	pthread_cond_destroy(&q->cv);
	free(q->threads);
	free(q);
	*qp = NULL;
}
