/*
 * handlers_object.c - what the routes of tables and views share: the
 * paged listing of names in a namespace, and the body of a single-object
 * commit.
 */
#include "handlers.h"

#include <stdlib.h>
#include <string.h>

#include "ident.h"
#include "namespace.h"
#include "table.h"

void handler_list_names(struct call *c, handler_lister list)
{
	struct floe_error err;
	char *token = NULL;
	char *size = NULL;
	struct page_request page = { 0 };
	size_t len = 0;
	struct store *s;

	floe_error_clear(&err);
	if (!handler_page(c, true, &page, &token, &size, &err)) {
		http_reply_error(c->req, &err);
		goto done;
	}
	/* A table page token is the token of a one-level name. */
	if (page.after.nlevels > 1) {
		floe_err(&err, FE_BAD_REQUEST, "pageToken is not a token this server issued");
		http_reply_error(c->req, &err);
		goto done;
	}
	s = call_store(c);
	if (s == NULL)
		goto done;
	char *text = list(s, handler_principal(c->req), &c->ns,
			  page.after.nlevels ? page.after.levels[0] : NULL,
			  page.paginate ? page.page_size : -1, &len, &err);
	if (text == NULL)
		http_reply_error(c->req, &err);
	else
		http_reply_text(c->req, 200, text, len);
done:
	free(token);
	free(size);
	page_request_clear(&page);
}

bool handler_commit_body(const struct call *c, const char *what, struct floe_error *err)
{
	const json_t *ident = json_object_get(c->body, "identifier");

	if (ident == NULL || json_is_null(ident))
		return true;
	struct table_ident t;
	if (!table_ident_from_json(ident, "identifier", &t, err))
		return false;
	bool same = strcmp(t.name, c->name) == 0 && t.ns.nlevels == c->ns.nlevels;
	for (size_t i = 0; same && i < c->ns.nlevels; i++)
		same = strcmp(t.ns.levels[i], c->ns.levels[i]) == 0;
	table_ident_clear(&t);
	if (!same)
		return floe_err(err, FE_BAD_REQUEST,
				"the body's identifier names another %s than the path", what);
	return true;
}
