/*
 * handlers_namespace.c - the namespace routes of the Iceberg REST API.
 */
#include "handlers.h"

#include <stdlib.h>
#include <string.h>

#include "namespace.h"

void handle_ns_list(struct call *c)
{
	struct floe_error err;
	struct page_request page = { 0 };
	char *token = NULL;
	char *size = NULL;
	struct store *s;

	floe_error_clear(&err);
	/* The parent (?parent=) is the gate's: what it authorized. */
	if (!handler_page(c, true, &page, &token, &size, &err)) {
		http_reply_error(c->req, &err);
	} else if ((s = call_store(c)) != NULL) {
		json_t *body = ns_list(s, handler_principal(c->req),
				       c->ns.nlevels > 0 ? &c->ns : NULL, &page, &err);
		handler_answer(c->req, 200, body, &err);
	}
	free(token);
	free(size);
	page_request_clear(&page);
}

void handle_ns_create(struct call *c)
{
	struct floe_error err;
	struct store *s = call_store(c);

	if (s != NULL) {
		json_t *body = ns_create(s, &c->env, c->body, &err);
		handler_answer(c->req, 200, body, &err);
	}
}

void handle_ns_load(struct call *c)
{
	struct floe_error err;
	struct store *s = call_store(c);

	if (s != NULL) {
		json_t *body = ns_load(s, handler_warehouse_location(c->req), &c->ns, &err);
		handler_answer(c->req, 200, body, &err);
	}
}

void handle_ns_exists(struct call *c)
{
	struct floe_error err;
	struct store *s = call_store(c);
	bool exists = false;

	if (s == NULL)
		return;
	if (!ns_exists(s, &c->ns, &exists, &err))
		http_reply_error(c->req, &err);
	else
		http_reply_empty(c->req, exists ? 204 : 404);
}

void handle_ns_drop(struct call *c)
{
	struct floe_error err;
	struct store *s = call_store(c);

	if (s != NULL)
		handler_answer_done(c->req, ns_drop(s, &c->env, &c->ns, &err), &err);
}

void handle_ns_update_properties(struct call *c)
{
	struct floe_error err;
	struct store *s = call_store(c);

	if (s != NULL) {
		json_t *body = ns_update_properties(s, &c->ns, c->body, &c->env, NULL, &err);
		handler_answer(c->req, 200, body, &err);
	}
}
