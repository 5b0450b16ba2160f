/*
 * handlers_purges.c - GET /v1/{prefix}/purges: the purges of dropped
 * tables that are pending or failed, for an operator. Read-only; the
 * janitor (catalog/janitor.c) does the purging.
 */
#include "handlers.h"

#include "purges.h"

/* The most purges one answer lists (oldest first). */
#define PURGES_LIST_MAX 1000

void handle_purges_list(struct http_request *req)
{
	struct floe_error err;
	json_t *purges = NULL;
	struct store *s;

	floe_error_clear(&err);
	s = handler_acquire(req);
	if (s == NULL || !handler_allowed(req, s, PRIV_ADMIN, NULL, NULL))
		return;
	purges = purges_list(s, PURGES_LIST_MAX, &err);
	handler_release(req, s);
	handler_answer(req, 200, purges, &err);
}
