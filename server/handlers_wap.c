/*
 * handlers_wap.c - floe's extensions: refs, audit hooks, write-audit-
 * publish runs and the audit log.
 */
#include "handlers.h"

#include <stdlib.h>
#include <string.h>

#include "auditlog.h"
#include "control.h"
#include "hookspec.h"
#include "namespace.h"
#include "refs.h"
#include "uuid.h"
#include "wap.h"
#include "wording.h"

/* The work of a route on a table: a new answer body, NULL with err set
 * on failure (json_null() for routes that answer 204). */
typedef json_t *(*target_op)(struct store *s, struct call *c, struct floe_error *err);

/* Runs op on the request's connection and answers with status. */
static void on_target(struct call *c, int status, target_op op)
{
	struct floe_error err;
	struct store *s = call_store(c);

	if (s != NULL)
		handler_answer(c->req, status, op(s, c, &err), &err);
}

/* --- refs --- */

static json_t *op_refs_list(struct store *s, struct call *c, struct floe_error *err)
{
	return refs_list(s, &c->ns, c->name, err);
}

static json_t *op_refs_create(struct store *s, struct call *c, struct floe_error *err)
{
	return refs_create(s, &c->env, &c->ns, c->name, c->body, err);
}

static json_t *op_refs_get(struct store *s, struct call *c, struct floe_error *err)
{
	return refs_get(s, &c->ns, c->name, c->arg, err);
}

static json_t *op_refs_drop(struct store *s, struct call *c, struct floe_error *err)
{
	return refs_drop(s, &c->env, &c->ns, c->name, c->arg, err) ? json_null() : NULL;
}

static json_t *op_refs_fast_forward(struct store *s, struct call *c, struct floe_error *err)
{
	return refs_fast_forward(s, &c->env, &c->ns, c->name, c->arg, c->body, err);
}

void handle_refs_list(struct call *c)
{
	on_target(c, 200, op_refs_list);
}

void handle_refs_create(struct call *c)
{
	on_target(c, 201, op_refs_create);
}

void handle_refs_get(struct call *c)
{
	on_target(c, 200, op_refs_get);
}

void handle_refs_drop(struct call *c)
{
	on_target(c, 204, op_refs_drop);
}

void handle_refs_fast_forward(struct call *c)
{
	on_target(c, 200, op_refs_fast_forward);
}

/* --- audit hooks --- */

void handle_hooks_create(struct call *c)
{
	struct floe_error err;
	struct hook_spec spec;
	json_t *hook = NULL;
	char id[UUID_STR_LEN];
	struct store *s;

	floe_error_clear(&err);
	if (!hook_spec_parse(c->body, c->req->app->cfg->hook_policy, &spec, &err)) {
		http_reply_error(c->req, &err);
		return;
	}
	if (!uuid_v4(id)) {
		floe_err(&err, FE_INTERNAL, "no randomness for a hook id");
		http_reply_error(c->req, &err);
	} else if ((s = call_store(c)) != NULL) {
		if (!control_hook_register(s, &c->env, id, &spec, &hook, &err))
			http_reply_error(c->req, &err);
		else
			http_reply_json(c->req, 201, hook);
	}
	hook_spec_clear(&spec);
}

void handle_hooks_list(struct call *c)
{
	struct floe_error err;
	struct store *s = call_store(c);

	if (s != NULL)
		handler_answer(c->req, 200, control_hook_list(s, &err), &err);
}

void handle_hooks_get(struct call *c)
{
	/* The gate found the hook to know its scope. */
	http_reply_json(c->req, 200, json_incref(c->hook));
}

void handle_hooks_delete(struct call *c)
{
	struct floe_error err;
	struct store *s = call_store(c);

	if (s != NULL)
		handler_answer_done(c->req, control_hook_delete(s, &c->env, c->arg, NULL, &err),
				    &err);
}

/* --- write-audit-publish --- */

static json_t *op_wap_stage(struct store *s, struct call *c, struct floe_error *err)
{
	return wap_stage(s, &c->env, &c->ns, c->name, c->body, err);
}

void handle_wap_stage(struct call *c)
{
	on_target(c, 201, op_wap_stage);
}

/* On the publish threads (the route's queue), with no connection held:
 * the publish borrows its own, one for the claim and one for the commit,
 * and holds none while the hooks are called. */
void handle_wap_publish(struct call *c)
{
	struct floe_error err;

	call_release(c);
	json_t *out = wap_publish(c->req->pool, &c->env, &c->ns, c->name, c->arg, c->body, &err);
	handler_answer(c->req, 200, out, &err);
}

static json_t *op_wap_get(struct store *s, struct call *c, struct floe_error *err)
{
	return wap_get(s, &c->ns, c->name, c->arg, err);
}

void handle_wap_get(struct call *c)
{
	on_target(c, 200, op_wap_get);
}

void handle_wap_list(struct call *c)
{
	struct floe_error err;
	struct page_request page = { 0 };
	char *token = NULL;
	char *size = NULL;
	struct store *s;

	floe_error_clear(&err);
	if (!handler_page(c, false, &page, &token, &size, &err))
		http_reply_error(c->req, &err);
	else if ((s = call_store(c)) != NULL)
		handler_answer(c->req, 200,
			       wap_list(s, &c->ns, c->name, token, page.page_size, &err), &err);
	free(token);
	free(size);
	page_request_clear(&page);
}

static json_t *op_wap_abandon(struct store *s, struct call *c, struct floe_error *err)
{
	return wap_abandon(s, &c->env, &c->ns, c->name, c->arg, err);
}

void handle_wap_abandon(struct call *c)
{
	on_target(c, 200, op_wap_abandon);
}

/* --- audit log --- */

/* The filter (?namespace=, ?table=) is the gate's: what it authorized. */
void handle_audit_log(struct call *c)
{
	struct http_request *req = c->req;
	struct floe_error err;
	struct page_request page = { 0 };
	char *run = NULL, *since = NULL, *token = NULL, *size = NULL;
	struct store *s;

	floe_error_clear(&err);
	bool parsed = http_query(req, "run", &run, &err) &&
		      http_query(req, "since", &since, &err) &&
		      handler_page(c, false, &page, &token, &size, &err);
	if (!parsed)
		http_reply_error(req, &err);
	else if ((s = call_store(c)) != NULL)
		handler_answer(req, 200,
			       audit_log_list(s, c->ns.nlevels > 0 ? &c->ns : NULL, c->name, run,
					      since, token, page.page_size, &err),
			       &err);
	page_request_clear(&page);
	free(run);
	free(since);
	free(token);
	free(size);
}
