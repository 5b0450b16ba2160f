/*
 * handlers_trail.c - the tamper-evident audit trail's routes: verifying
 * the chain, listing the signed checkpoints and asking for one
 * (docs/audit-trail.md), and the change feed's query. The route table
 * asks AUDIT_READ on the catalog for each.
 */
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "audittrail.h"
#include "feed.h"
#include "handlers.h"
#include "namespace.h"

/* GET /v1/{prefix}/audit-log/verify */
void handle_audit_verify(struct call *c)
{
	struct floe_error err;
	struct store *s = call_store(c);

	floe_error_clear(&err);
	if (s != NULL)
		handler_answer(c->req, 200, audittrail_verify(s, c->req->app->audit_key, &err),
			       &err);
}

/* GET /v1/{prefix}/audit-log/checkpoints */
void handle_audit_checkpoints(struct call *c)
{
	struct floe_error err;
	struct page_request page = { 0 };
	char *token = NULL, *size = NULL;
	struct store *s;

	floe_error_clear(&err);
	if (!handler_page(c, false, &page, &token, &size, &err))
		http_reply_error(c->req, &err);
	else if ((s = call_store(c)) != NULL)
		handler_answer(c->req, 200,
			       audittrail_checkpoints(s, c->req->app->audit_key, token,
						      page.page_size, &err),
			       &err);
	page_request_clear(&page);
	free(token);
	free(size);
}

/* POST /v1/{prefix}/audit-log/checkpoints: 201 with a new checkpoint, 200
 * when the head was signed already. */
void handle_audit_checkpoint_create(struct call *c)
{
	struct floe_error err;
	struct store *s = call_store(c);

	floe_error_clear(&err);
	if (s == NULL)
		return;
	json_t *out = audittrail_checkpoint(s, &c->env, c->req->app->audit_key, &err);
	int status = json_is_true(json_object_get(out, "created")) ? 201 : 200;
	handler_answer(c->req, status, out, &err);
}

/* --- the change feed --- */

void handle_events_query(struct call *c)
{
	struct floe_error err;
	struct store *s = call_store(c);

	floe_error_clear(&err);
	if (s != NULL)
		handler_answer(c->req, 200, feed_query(s, c->body, &err), &err);
}
