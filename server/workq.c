/*
 * workq.c - the job queue behind workq.h: a mutex, a condition variable
 * and a singly linked list, first in first out.
 */
#include "workq.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

struct job {
	void (*fn)(void *arg);
	void *arg;
	struct job *next;
};

struct workq {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct job *head;
	struct job *tail;
	bool stopping;
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
		pthread_mutex_unlock(&q->mu);
		j->fn(j->arg);
		free(j);
	}
}

struct workq *workq_start(int nthreads)
{
	struct workq *q = calloc(1, sizeof(*q));

	if (q == NULL)
		return NULL;
	q->threads = calloc((size_t)nthreads, sizeof(*q->threads));
	if (q->threads == NULL) {
		free(q);
		return NULL;
	}
	pthread_mutex_init(&q->mu, NULL);
	pthread_cond_init(&q->cv, NULL);
	for (int i = 0; i < nthreads; i++) {
		if (pthread_create(&q->threads[i], NULL, workq_main, q) != 0) {
			log_error("main", "cannot start commit thread %d", i);
			q->nthreads = i;
			workq_stop(&q);
			return NULL;
		}
		q->nthreads = i + 1;
	}
	return q;
}

bool workq_submit(struct workq *q, void (*fn)(void *arg), void *arg)
{
	struct job *j = malloc(sizeof(*j));

	if (j == NULL)
		return false;
	j->fn = fn;
	j->arg = arg;
	j->next = NULL;
	pthread_mutex_lock(&q->mu);
	if (q->stopping) {
		pthread_mutex_unlock(&q->mu);
		free(j);
		return false;
	}
	if (q->tail != NULL)
		q->tail->next = j;
	else
		q->head = j;
	q->tail = j;
	pthread_cond_signal(&q->cv);
	pthread_mutex_unlock(&q->mu);
	return true;
}

void workq_stop(struct workq **qp)
{
	struct workq *q = *qp;

	if (q == NULL)
		return;
	pthread_mutex_lock(&q->mu);
	q->stopping = true;
	pthread_cond_broadcast(&q->cv);
	pthread_mutex_unlock(&q->mu);
	for (int i = 0; i < q->nthreads; i++)
		pthread_join(q->threads[i], NULL);
	pthread_mutex_destroy(&q->mu);
	pthread_cond_destroy(&q->cv);
	free(q->threads);
	free(q);
	*qp = NULL;
}
