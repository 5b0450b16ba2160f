/*
 * handlers_object.c - what the routes of tables and views share: the
 * namespace and name in the path, the paged listing of names, and the
 * body of a single-object commit.
 */
#include "handlers.h"

#include <stdlib.h>
#include <string.h>

#include "ident.h"
#include "namespace.h"
#include "table.h"

bool handler_object_params(struct http_request *req, const char *param, const char *what,
			   struct ns_ident *ns, char **name, struct floe_error *err)
{
	const char *raw = http_param(req, param);
	size_t len = 0;

	*name = NULL;
	if (!http_param_namespace(req, ns, err))
		return false;
	if (raw == NULL || !url_decode(raw, strlen(raw), true, name, &len, err) ||
	    !ident_name_check(*name, len, what, err)) {
		ident_ns_clear(ns);
		free(*name);
		*name = NULL;
		return false;
	}
	return true;
}

bool handler_table_params(struct http_request *req, struct ns_ident *ns, char **name,
			  struct floe_error *err)
{
	return handler_object_params(req, "table", "table name", ns, name, err);
}

void handler_list_names(struct http_request *req, handler_lister list)
{
	struct floe_error err;
	struct ns_ident ns = { 0 };
	char *token = NULL;
	char *size = NULL;
	struct page_request page = { 0 };
	char *text = NULL;
	size_t len = 0;
	struct store *s;

	floe_error_clear(&err);
	if (!http_param_namespace(req, &ns, &err) || !http_query(req, "pageToken", &token, &err) ||
	    !http_query(req, "pageSize", &size, &err) ||
	    !page_request_parse(token, size, &page, &err)) {
		http_reply_error(req, &err);
		goto done;
	}
	/* A table page token is the token of a one-level name. */
	if (page.after.nlevels > 1) {
		floe_err(&err, FE_BAD_REQUEST, "pageToken is not a token this server issued");
		http_reply_error(req, &err);
		goto done;
	}
	s = handler_acquire(req);
	if (s == NULL)
		goto done;
	text = list(s, handler_principal(req), &ns,
		    page.after.nlevels ? page.after.levels[0] : NULL,
		    page.paginate ? page.page_size : -1, &len, &err);
	handler_release(req, s);
	if (text == NULL)
		http_reply_error(req, &err);
	else
		http_reply_text(req, 200, text, len);
done:
	free(token);
	free(size);
	page_request_clear(&page);
	ident_ns_clear(&ns);
}

json_t *handler_commit_body(struct http_request *req, const struct ns_ident *ns, const char *name,
			    const char *what, struct floe_error *err)
{
	json_t *in = NULL;

	if (!http_body_json(req, &in, err))
		return NULL;
	const json_t *ident = json_object_get(in, "identifier");
	if (ident != NULL && !json_is_null(ident)) {
		struct table_ident t;
		if (!table_ident_from_json(ident, "identifier", &t, err)) {
			json_decref(in);
			return NULL;
		}
		bool same = strcmp(t.name, name) == 0 && t.ns.nlevels == ns->nlevels;
		for (size_t i = 0; same && i < ns->nlevels; i++)
			same = strcmp(t.ns.levels[i], ns->levels[i]) == 0;
		table_ident_clear(&t);
		if (!same) {
			json_decref(in);
			floe_err(err, FE_BAD_REQUEST,
				 "the body's identifier names another %s than the path", what);
			return NULL;
		}
	}
	return in;
}
