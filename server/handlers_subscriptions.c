/*
 * handlers_subscriptions.c - the event subscriptions' routes (README
 * "Event subscriptions"). The route table says who may: managing one
 * needs HOOKS_MANAGE and AUDIT_READ on the catalog (a subscription reads
 * the whole change feed), reading them either of the two.
 */
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "config.h"
#include "handlers.h"
#include "subscriptions.h"
#include "wording.h"

/* The store of the request when {id} names a subscription id at all;
 * NULL when the request has been answered (404, or no connection). */
static struct store *subscription_store(struct call *c)
{
	struct floe_error err;

	if (c->arg == NULL || !subscription_id_valid(c->arg)) {
		wording_no_such_subscription(c->arg != NULL ? c->arg : "", &err);
		http_reply_error(c->req, &err);
		return NULL;
	}
	return call_store(c);
}

void handle_subscriptions_create(struct call *c)
{
	struct floe_error err;
	struct store *s = call_store(c);

	if (s != NULL)
		handler_answer(c->req, 201, subscription_create(s, &c->env, c->body, &err), &err);
}

void handle_subscriptions_list(struct call *c)
{
	struct floe_error err;
	struct store *s = call_store(c);

	floe_error_clear(&err);
	if (s != NULL)
		handler_answer(c->req, 200, subscription_list(s, &err), &err);
}

void handle_subscription_get(struct call *c)
{
	struct floe_error err;
	struct store *s = subscription_store(c);

	floe_error_clear(&err);
	if (s != NULL)
		handler_answer(c->req, 200, subscription_get(s, c->arg, &err), &err);
}

void handle_subscription_delete(struct call *c)
{
	struct floe_error err;
	struct store *s = subscription_store(c);

	floe_error_clear(&err);
	if (s != NULL)
		handler_answer_done(c->req, subscription_delete(s, &c->env, c->arg, &err), &err);
}

void handle_subscription_resume(struct call *c)
{
	struct floe_error err;
	struct store *s = subscription_store(c);

	floe_error_clear(&err);
	if (s != NULL)
		handler_answer(c->req, 200, subscription_resume(s, &c->env, c->arg, c->body, &err),
			       &err);
}
