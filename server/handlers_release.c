/*
 * handlers_release.c - releases: write-audit-publish over many tables
 * (catalog/release.h). The route table states what each route needs on
 * every member table; catalog/release.c, which alone knows the members,
 * checks it table by table. Listing the catalog's releases needs
 * AUDIT_READ on the catalog.
 */
#include "handlers.h"

#include <stdlib.h>

#include "hookspec.h"
#include "namespace.h"
#include "release.h"

/* The {release} of the path: a UUID, else the 404 of one unknown. */
static bool release_param(const struct call *c, struct floe_error *err)
{
	if (c->arg == NULL || !hook_id_valid(c->arg))
		return floe_err(err, FE_NO_SUCH_RUN, "Release does not exist: %.64s",
				c->arg != NULL ? c->arg : "");
	return true;
}

void handle_releases_list(struct call *c)
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
		handler_answer(c->req, 200, release_list(s, token, page.page_size, &err), &err);
	free(token);
	free(size);
	page_request_clear(&page);
}

void handle_releases_create(struct call *c)
{
	struct floe_error err;
	struct store *s = call_store(c);

	if (s != NULL)
		handler_answer(c->req, 201, release_create(s, &c->env, c->body, &err), &err);
}

/* A route on the release {release} names: op's answer with status. */
static void on_release(struct call *c, int status,
		       json_t *(*op)(struct store *s, const struct table_env *env, const char *id,
				     struct floe_error *err))
{
	struct floe_error err;
	struct store *s;

	floe_error_clear(&err);
	if (!release_param(c, &err))
		http_reply_error(c->req, &err);
	else if ((s = call_store(c)) != NULL)
		handler_answer(c->req, status, op(s, &c->env, c->arg, &err), &err);
}

void handle_release_get(struct call *c)
{
	on_release(c, 200, release_get);
}

void handle_release_abandon(struct call *c)
{
	on_release(c, 200, release_abandon);
}

void handle_release_add(struct call *c)
{
	struct floe_error err;
	struct store *s;

	floe_error_clear(&err);
	if (!release_param(c, &err))
		http_reply_error(c->req, &err);
	else if ((s = call_store(c)) != NULL)
		handler_answer(c->req, 200, release_add(s, &c->env, c->arg, c->body, &err), &err);
}

/* On the publish threads (the route's queue), as a table's publish: the
 * audit may take a hook's whole timeout, and the publish borrows its own
 * connections. */
void handle_release_publish(struct call *c)
{
	struct floe_error err;

	floe_error_clear(&err);
	call_release(c);
	if (!release_param(c, &err))
		http_reply_error(c->req, &err);
	else
		handler_answer(c->req, 200,
			       release_publish(c->req->pool, &c->env, c->arg, c->body, &err), &err);
}
