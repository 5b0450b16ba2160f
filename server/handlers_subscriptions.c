/*
 * handlers_subscriptions.c - the event subscriptions' routes (README
 * "Event subscriptions"): managing one needs HOOKS_MANAGE and AUDIT_READ
 * on the catalog (a subscription reads the whole change feed), reading
 * them either of the two.
 */
#include <stdlib.h>
#include <string.h>

#include "access.h"
#include "app.h"
#include "config.h"
#include "handlers.h"
#include "subscriptions.h"
#include "wording.h"

/* Both privileges of managing; false when the request has been answered. */
static bool manageable(struct http_request *req, struct store *s)
{
	return handler_allowed(req, s, PRIV_AUDIT_READ, NULL, NULL) &&
	       handler_allowed(req, s, PRIV_HOOKS_MANAGE, NULL, NULL);
}

/* AUDIT_READ, else HOOKS_MANAGE (the 403 names it); false when the
 * request has been answered. */
static bool readable(struct http_request *req, struct store *s)
{
	struct floe_error err;

	floe_error_clear(&err);
	if (access_check(s, handler_principal(req), PRIV_AUDIT_READ, NULL, NULL, &err))
		return true;
	if (err.kind == FE_FORBIDDEN)
		return handler_allowed(req, s, PRIV_HOOKS_MANAGE, NULL, NULL);
	handler_release(req, s);
	http_reply_error(req, &err);
	return false;
}

static bool id_param(struct http_request *req, const char **id, struct floe_error *err)
{
	*id = http_param(req, "id");
	if (*id == NULL || !subscription_id_valid(*id))
		return wording_no_such_subscription(*id ? *id : "", err);
	return true;
}

void handle_subscriptions_create(struct http_request *req)
{
	struct floe_error err;
	json_t *in = NULL;

	floe_error_clear(&err);
	bool parsed = http_body_json(req, &in, &err);
	struct store *s = handler_open(req, parsed, &err);
	if (s != NULL && manageable(req, s)) {
		struct table_env env = handler_env(req);
		json_t *out = subscription_create(s, &env, in, &err);
		handler_release(req, s);
		handler_answer(req, 201, out, &err);
	}
	json_decref(in);
}

void handle_subscriptions_list(struct http_request *req)
{
	struct floe_error err;
	struct store *s = handler_acquire(req);

	floe_error_clear(&err);
	if (s == NULL || !readable(req, s))
		return;
	json_t *out = subscription_list(s, &err);
	handler_release(req, s);
	handler_answer(req, 200, out, &err);
}

void handle_subscription_get(struct http_request *req)
{
	struct floe_error err;
	const char *id = NULL;

	floe_error_clear(&err);
	struct store *s = handler_open(req, id_param(req, &id, &err), &err);
	if (s == NULL || !readable(req, s))
		return;
	json_t *out = subscription_get(s, id, &err);
	handler_release(req, s);
	handler_answer(req, 200, out, &err);
}

void handle_subscription_delete(struct http_request *req)
{
	struct floe_error err;
	const char *id = NULL;

	floe_error_clear(&err);
	struct store *s = handler_open(req, id_param(req, &id, &err), &err);
	if (s == NULL || !manageable(req, s))
		return;
	struct table_env env = handler_env(req);
	bool ok = subscription_delete(s, &env, id, &err);
	handler_release(req, s);
	handler_answer_done(req, ok, &err);
}

void handle_subscription_resume(struct http_request *req)
{
	struct floe_error err;
	const char *id = NULL;
	json_t *in = NULL;

	floe_error_clear(&err);
	bool parsed = id_param(req, &id, &err) &&
		      (req->body_len == 0 || http_body_json(req, &in, &err));
	struct store *s = handler_open(req, parsed, &err);
	if (s != NULL && manageable(req, s)) {
		struct table_env env = handler_env(req);
		json_t *out = subscription_resume(s, &env, id, in, &err);
		handler_release(req, s);
		handler_answer(req, 200, out, &err);
	}
	json_decref(in);
}
