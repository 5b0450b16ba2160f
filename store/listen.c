/*
 * listen.c - a session of its own that waits for the notifications of one
 * channel (LISTEN), for the caches that must forget what another session
 * changed.
 */
#include "store.h"
#include "store_internal.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

struct store_listener {
	PGconn *conn;
};

/* A channel is a plain lower-case identifier: it goes into the statement
 * as it is, never from a request. */
static bool channel_ok(const char *channel)
{
	size_t len = strlen(channel);

	if (len == 0 || len > 63)
		return false;
	for (size_t i = 0; i < len; i++) {
		char c = channel[i];
		if (!((c >= 'a' && c <= 'z') || c == '_' || (i > 0 && c >= '0' && c <= '9')))
			return false;
	}
	return true;
}

struct store_listener *store_listen(const char *conninfo, const char *channel,
				    struct floe_error *err)
{
	struct store_listener *l = NULL;
	PGresult *r = NULL;
	char sql[80];

	if (!channel_ok(channel)) {
		floe_err(err, FE_INTERNAL, "bad channel name");
		return NULL;
	}
	l = calloc(1, sizeof(*l));
	if (l == NULL) {
		floe_err(err, FE_INTERNAL, "out of memory");
		return NULL;
	}
	/* Unbounded: the session is idle between notifications by design. */
	l->conn = store_connect_as(conninfo, false, err);
	if (l->conn == NULL)
		goto fail;
	(void)snprintf(sql, sizeof(sql), "LISTEN %s", channel);
	r = PQexec(l->conn, sql);
	if (r == NULL || PQresultStatus(r) != PGRES_COMMAND_OK) {
		log_warn("store", "cannot listen on %s: %s", channel, PQerrorMessage(l->conn));
		floe_err(err, FE_UNAVAILABLE, "the catalog database is unavailable");
		goto fail;
	}
	PQclear(r);
	if (PQsetnonblocking(l->conn, 1) != 0) {
		floe_err(err, FE_UNAVAILABLE, "cannot make the listening session nonblocking");
		goto fail_closed;
	}
	return l;
fail:
	PQclear(r);
fail_closed:
	store_listener_free(l);
	return NULL;
}

int store_listener_wait(struct store_listener *l, int timeout_ms,
			void (*on_notify)(void *arg, const char *payload), void *arg)
{
	struct pollfd pfd = { .fd = PQsocket(l->conn), .events = POLLIN };
	PGnotify *n = NULL;
	int count = 0;

	if (pfd.fd < 0 || PQstatus(l->conn) != CONNECTION_OK)
		return -1;
	int ready = poll(&pfd, 1, timeout_ms);
	if (ready < 0)
		return errno == EINTR ? 0 : -1;
	if (ready == 0)
		return 0;
	if (PQconsumeInput(l->conn) == 0 || (pfd.revents & (POLLERR | POLLHUP)) != 0)
		return -1;
	n = PQnotifies(l->conn);
	while (n != NULL) {
		on_notify(arg, n->extra);
		count++;
		PQfreemem(n);
		n = PQnotifies(l->conn);
	}
	return count;
}

void store_listener_free(struct store_listener *l)
{
	if (l == NULL)
		return;
	if (l->conn != NULL)
		PQfinish(l->conn);
	free(l);
}
