/*
 * unsettled.c - the list behind unsettled.h: a mutex and a singly linked
 * list; a drain takes the whole list, settles it unlocked, and puts back
 * what it could not settle.
 */
#include "unsettled.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

struct entry {
	struct unsettled_commit c;
	struct entry *next;
};

struct unsettled {
	pthread_mutex_t mu;
	struct entry *head;
	size_t count;
};

struct unsettled *unsettled_new(void)
{
	struct unsettled *u = calloc(1, sizeof(*u));

	if (u != NULL)
		pthread_mutex_init(&u->mu, NULL);
	return u;
}

static void entry_free(struct entry *e)
{
	free(e->c.location);
	free(e);
}

void unsettled_free(struct unsettled **up)
{
	struct unsettled *u = *up;

	if (u == NULL)
		return;
	while (u->head != NULL) {
		struct entry *e = u->head;
		u->head = e->next;
		entry_free(e);
	}
	pthread_mutex_destroy(&u->mu);
	free(u);
	*up = NULL;
}

bool unsettled_add(struct unsettled *u, const char *xid, const char *table_uuid, long long version,
		   const char *location, const char *request_id)
{
	if (u == NULL)
		return false;
	struct entry *e = calloc(1, sizeof(*e));
	char *loc = strdup(location);
	if (e == NULL || loc == NULL) {
		free(e);
		free(loc);
		log_error("table", "out of memory: the commit to %s stays unsettled rid=%s",
			  location, request_id);
		return false;
	}
	e->c.location = loc;
	(void)snprintf(e->c.xid, sizeof(e->c.xid), "%s", xid != NULL ? xid : "");
	(void)snprintf(e->c.table_uuid, sizeof(e->c.table_uuid), "%s", table_uuid);
	(void)snprintf(e->c.request_id, sizeof(e->c.request_id), "%s", request_id);
	e->c.version = version;
	pthread_mutex_lock(&u->mu);
	bool room = u->count < UNSETTLED_MAX;
	if (room) {
		e->next = u->head;
		u->head = e;
		u->count++;
	}
	pthread_mutex_unlock(&u->mu);
	if (!room) {
		log_error(
			"table",
			"%d commits wait to be settled already; the commit to %s stays unsettled and its file is kept rid=%s",
			UNSETTLED_MAX, location, request_id);
		entry_free(e);
	}
	return room;
}

void unsettled_drain(struct unsettled *u,
		     bool (*settle)(void *ctx, const struct unsettled_commit *c), void *ctx)
{
	if (u == NULL)
		return;
	pthread_mutex_lock(&u->mu);
	struct entry *list = u->head;
	u->head = NULL;
	u->count = 0;
	pthread_mutex_unlock(&u->mu);

	struct entry *keep = NULL;
	size_t kept = 0;
	while (list != NULL) {
		struct entry *e = list;
		list = e->next;
		if (settle(ctx, &e->c)) {
			entry_free(e);
		} else {
			e->next = keep;
			keep = e;
			kept++;
		}
	}
	if (keep == NULL)
		return;
	pthread_mutex_lock(&u->mu);
	struct entry *tail = keep;
	while (tail->next != NULL)
		tail = tail->next;
	tail->next = u->head;
	u->head = keep;
	u->count += kept;
	pthread_mutex_unlock(&u->mu);
}
