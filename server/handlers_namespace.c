/*
 * handlers_namespace.c - the namespace routes of the Iceberg REST API.
 */
#include "handlers.h"

#include <stdlib.h>
#include <string.h>

#include "namespace.h"

void handle_ns_list(struct http_request *req)
{
	struct floe_error err;
	struct page_request page = { 0 };
	struct ns_ident parent = { 0 };
	char *token = NULL;
	char *size = NULL;
	struct store *s = NULL;
	json_t *body = NULL;

	floe_error_clear(&err);
	if (!http_query(req, "pageToken", &token, &err) ||
	    !http_query(req, "pageSize", &size, &err) ||
	    !page_request_parse(token, size, &page, &err))
		goto fail;
	/* parent is decoded by the identifier parser itself ('+', %1F). */
	const char *raw = http_query_raw(req, "parent");
	if (raw != NULL && !ident_ns_parse(raw, strlen(raw), &parent, &err))
		goto fail;
	s = handler_acquire(req);
	if (s == NULL)
		goto done;
	body = ns_list(s, handler_principal(req), raw != NULL ? &parent : NULL, &page, &err);
	handler_release(req, s);
	handler_answer(req, 200, body, &err);
	goto done;
fail:
	http_reply_error(req, &err);
done:
	free(token);
	free(size);
	page_request_clear(&page);
	ident_ns_clear(&parent);
}

/* NAMESPACE_CREATE on the parent of the body's namespace (the catalog for
 * a top-level one); a body without a readable namespace is left to
 * ns_create's own 400. False when the request has been answered. */
static bool ns_create_allowed(struct http_request *req, struct store *s, const json_t *in)
{
	struct floe_error err;
	struct ns_ident ns = { 0 };

	if (handler_principal(req) == NULL)
		return true;
	floe_error_clear(&err);
	if (!ident_ns_from_json(json_object_get(in, "namespace"), "namespace", &ns, &err))
		return true;
	bool ok = access_check_ns_create(s, handler_principal(req), &ns, &err);
	ident_ns_clear(&ns);
	if (!ok) {
		handler_release(req, s);
		http_reply_error(req, &err);
	}
	return ok;
}

void handle_ns_create(struct http_request *req)
{
	struct floe_error err;
	json_t *in = NULL;
	struct store *s;

	s = handler_open(req, http_body_json(req, &in, &err), &err);
	if (s != NULL && !ns_create_allowed(req, s, in))
		s = NULL;
	if (s != NULL) {
		struct table_env env = handler_env(req);
		json_t *body = ns_create(s, &env, in, &err);
		handler_release(req, s);
		handler_answer(req, 200, body, &err);
	}
	json_decref(in);
}

void handle_ns_load(struct http_request *req)
{
	struct floe_error err;
	struct ns_ident ns = { 0 };
	struct store *s;

	s = handler_open(req, http_param_namespace(req, &ns, &err), &err);
	if (s != NULL && handler_allowed(req, s, PRIV_NAMESPACE_READ, &ns, NULL)) {
		json_t *body = ns_load(s, handler_warehouse_location(req), &ns, &err);
		handler_release(req, s);
		handler_answer(req, 200, body, &err);
	}
	ident_ns_clear(&ns);
}

void handle_ns_exists(struct http_request *req)
{
	struct floe_error err;
	struct ns_ident ns = { 0 };
	struct store *s;
	bool exists = false;

	s = handler_open(req, http_param_namespace(req, &ns, &err), &err);
	if (s != NULL && handler_allowed(req, s, PRIV_NAMESPACE_READ, &ns, NULL)) {
		bool ok = ns_exists(s, &ns, &exists, &err);
		handler_release(req, s);
		if (!ok)
			http_reply_error(req, &err);
		else
			http_reply_empty(req, exists ? 204 : 404);
	}
	ident_ns_clear(&ns);
}

void handle_ns_drop(struct http_request *req)
{
	struct floe_error err;
	struct ns_ident ns = { 0 };
	struct store *s;

	s = handler_open(req, http_param_namespace(req, &ns, &err), &err);
	if (s != NULL && handler_allowed(req, s, PRIV_NAMESPACE_DROP, &ns, NULL)) {
		struct table_env env = handler_env(req);
		bool ok = ns_drop(s, &env, &ns, &err);
		handler_release(req, s);
		handler_answer_done(req, ok, &err);
	}
	ident_ns_clear(&ns);
}

void handle_ns_update_properties(struct http_request *req)
{
	struct floe_error err;
	struct ns_ident ns = { 0 };
	json_t *in = NULL;
	struct store *s;

	if (!http_param_namespace(req, &ns, &err) || !http_body_json(req, &in, &err)) {
		http_reply_error(req, &err);
		goto done;
	}
	s = handler_acquire(req);
	struct authz_object obj = { .kind = AUTHZ_NAMESPACE, .ns = &ns, .table = NULL };
	if (s != NULL && handler_allowed_all(req, s, access_ns_properties_needs(in), &obj)) {
		struct table_env env = handler_env(req);
		json_t *body = ns_update_properties(s, &ns, in, &env, NULL, &err);
		handler_release(req, s);
		handler_answer(req, 200, body, &err);
	}
done:
	json_decref(in);
	ident_ns_clear(&ns);
}
