/*
 * handlers_trail.c - the tamper-evident audit trail's routes: verifying
 * the chain, listing the signed checkpoints and asking for one
 * (docs/audit-trail.md). Reading any of it needs AUDIT_READ on the catalog.
 */
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "audittrail.h"
#include "feed.h"
#include "handlers.h"
#include "namespace.h"

/* GET /v1/{prefix}/audit-log/verify */
void handle_audit_verify(struct http_request *req)
{
	struct floe_error err;
	struct store *s;

	floe_error_clear(&err);
	s = handler_open(req, true, &err);
	if (s != NULL && handler_allowed(req, s, PRIV_AUDIT_READ, NULL, NULL)) {
		json_t *out = audittrail_verify(s, req->app->audit_key, &err);
		handler_release(req, s);
		handler_answer(req, 200, out, &err);
	}
}

/* GET /v1/{prefix}/audit-log/checkpoints */
void handle_audit_checkpoints(struct http_request *req)
{
	struct floe_error err;
	struct page_request page = { 0 };
	char *token = NULL, *size = NULL;
	struct store *s;

	floe_error_clear(&err);
	bool parsed = http_query(req, "pageToken", &token, &err) &&
		      http_query(req, "pageSize", &size, &err) &&
		      page_request_parse(NULL, size, &page, &err);
	s = handler_open(req, parsed, &err);
	if (s != NULL && handler_allowed(req, s, PRIV_AUDIT_READ, NULL, NULL)) {
		json_t *out = audittrail_checkpoints(s, req->app->audit_key, token, page.page_size,
						     &err);
		handler_release(req, s);
		handler_answer(req, 200, out, &err);
	}
	page_request_clear(&page);
	free(token);
	free(size);
}

/* POST /v1/{prefix}/audit-log/checkpoints: 201 with a new checkpoint, 200
 * when the head was signed already. */
void handle_audit_checkpoint_create(struct http_request *req)
{
	struct floe_error err;
	struct store *s;

	floe_error_clear(&err);
	s = handler_open(req, true, &err);
	if (s != NULL && handler_allowed(req, s, PRIV_AUDIT_READ, NULL, NULL)) {
		json_t *out = audittrail_checkpoint(s, req->app->audit_key, &err);
		handler_release(req, s);
		int status = json_is_true(json_object_get(out, "created")) ? 201 : 200;
		handler_answer(req, status, out, &err);
	}
}

/* --- the change feed --- */

void handle_events_query(struct http_request *req)
{
	struct floe_error err;
	json_t *in = NULL;
	struct store *s;

	floe_error_clear(&err);
	bool parsed = http_body_json(req, &in, &err);
	s = handler_open(req, parsed, &err);
	if (s != NULL && handler_allowed(req, s, PRIV_AUDIT_READ, NULL, NULL)) {
		json_t *out = feed_query(s, in, &err);
		handler_release(req, s);
		handler_answer(req, 200, out, &err);
	}
	json_decref(in);
}
