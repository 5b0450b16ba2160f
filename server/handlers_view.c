/*
 * handlers_view.c - the view routes of the Iceberg REST API. A view's
 * privileges are a table's of the same name (routes.c): read to load,
 * list or test it, create in its namespace, write to replace it, drop to
 * drop it.
 */
#include "handlers.h"

#include <stdlib.h>
#include <string.h>

#include "ident.h"
#include "tables.h"
#include "view.h"

void handle_view_list(struct call *c)
{
	handler_list_names(c, views_list_text);
}

/* createView and registerView: a namespace, a body, a LoadViewResult. */
static void on_namespace_body(struct call *c,
			      json_t *(*op)(struct store *s, const struct table_env *env,
					    const struct ns_ident *ns, const json_t *body,
					    struct floe_error *err))
{
	struct floe_error err;
	struct store *s = call_store(c);

	if (s != NULL)
		handler_answer(c->req, 200, op(s, &c->env, &c->ns, c->body, &err), &err);
}

void handle_view_create(struct call *c)
{
	on_namespace_body(c, view_create);
}

void handle_view_register(struct call *c)
{
	on_namespace_body(c, view_register);
}

void handle_view_load(struct call *c)
{
	struct floe_error err;
	size_t len = 0;
	struct store *s = call_store(c);

	if (s == NULL)
		return;
	char *text = view_load(s, &c->ns, c->name, &len, &err);
	if (text == NULL)
		http_reply_error(c->req, &err);
	else
		http_reply_text(c->req, 200, text, len);
}

void handle_view_exists(struct call *c)
{
	struct floe_error err;
	bool exists = false;
	struct store *s = call_store(c);

	if (s == NULL)
		return;
	if (view_exists(s, &c->ns, c->name, &exists, &err))
		http_reply_empty(c->req, exists ? 204 : 404);
	else
		http_reply_error(c->req, &err);
}

/* On a commit thread (the route's queue), like a table's commit. */
void handle_view_commit(struct call *c)
{
	struct floe_error err;
	struct store *s;

	if (!handler_commit_body(c, "view", &err)) {
		http_reply_error(c->req, &err);
		return;
	}
	s = call_store(c);
	if (s != NULL)
		handler_answer(c->req, 200, view_commit(s, &c->env, &c->ns, c->name, c->body, &err),
			       &err);
}

void handle_view_drop(struct call *c)
{
	struct floe_error err;
	struct store *s = call_store(c);

	if (s != NULL)
		handler_answer_done(c->req, view_drop(s, &c->env, &c->ns, c->name, &err), &err);
}

void handle_view_rename(struct call *c)
{
	struct floe_error err;
	struct store *s = call_store(c);

	if (s != NULL)
		handler_answer_done(c->req, view_rename(s, &c->env, c->body, &err), &err);
}
