/*
 * handlers_purges.c - GET /v1/{prefix}/purges: the purges of dropped
 * tables that are pending or failed, for an operator (ADMIN). Read-only;
 * the janitor (catalog/janitor.c) does the purging.
 */
#include "handlers.h"

#include "purges.h"

/* The most purges one answer lists (oldest first). */
#define PURGES_LIST_MAX 1000

void handle_purges_list(struct call *c)
{
	struct floe_error err;
	struct store *s = call_store(c);

	floe_error_clear(&err);
	if (s != NULL)
		handler_answer(c->req, 200, purges_list(s, PURGES_LIST_MAX, &err), &err);
}
