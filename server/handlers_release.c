/*
 * handlers_release.c - releases: write-audit-publish over many tables
 * (catalog/release.h). The members' privileges are the catalog's to
 * check, table by table; listing the catalog's releases needs AUDIT_READ
 * on the catalog.
 */
#include "handlers.h"

#include <stdlib.h>

#include "hookspec.h"
#include "namespace.h"
#include "release.h"

/* The {release} of the path: a UUID, else the 404 of one unknown. */
static bool release_param(struct http_request *req, const char **id, struct floe_error *err)
{
	*id = http_param(req, "release");
	if (*id == NULL || !hook_id_valid(*id))
		return floe_err(err, FE_NO_SUCH_RUN, "Release does not exist: %.64s",
				*id ? *id : "");
	return true;
}

void handle_releases_list(struct http_request *req)
{
	struct floe_error err;
	struct page_request page = { 0 };
	char *token = NULL;
	char *size = NULL;

	floe_error_clear(&err);
	bool parsed = http_query(req, "pageToken", &token, &err) &&
		      http_query(req, "pageSize", &size, &err) &&
		      page_request_parse(NULL, size, &page, &err);
	struct store *s = handler_open(req, parsed, &err);
	if (s != NULL && handler_allowed(req, s, PRIV_AUDIT_READ, NULL, NULL)) {
		json_t *out = release_list(s, token, page.page_size, &err);
		handler_release(req, s);
		handler_answer(req, 200, out, &err);
	}
	free(token);
	free(size);
}

void handle_releases_create(struct http_request *req)
{
	struct floe_error err;
	json_t *in = NULL;

	floe_error_clear(&err);
	bool parsed = http_body_json(req, &in, &err);
	struct store *s = handler_open(req, parsed, &err);
	if (s != NULL) {
		struct table_env env = handler_env(req);
		json_t *out = release_create(s, &env, in, &err);
		handler_release(req, s);
		handler_answer(req, 201, out, &err);
	}
	json_decref(in);
}

void handle_release_get(struct http_request *req)
{
	struct floe_error err;
	const char *id = NULL;

	floe_error_clear(&err);
	struct store *s = handler_open(req, release_param(req, &id, &err), &err);
	if (s != NULL) {
		struct table_env env = handler_env(req);
		json_t *out = release_get(s, &env, id, &err);
		handler_release(req, s);
		handler_answer(req, 200, out, &err);
	}
}

void handle_release_abandon(struct http_request *req)
{
	struct floe_error err;
	const char *id = NULL;

	floe_error_clear(&err);
	struct store *s = handler_open(req, release_param(req, &id, &err), &err);
	if (s != NULL) {
		struct table_env env = handler_env(req);
		json_t *out = release_abandon(s, &env, id, &err);
		handler_release(req, s);
		handler_answer(req, 200, out, &err);
	}
}

void handle_release_add(struct http_request *req)
{
	struct floe_error err;
	const char *id = NULL;
	json_t *in = NULL;

	floe_error_clear(&err);
	bool parsed = release_param(req, &id, &err) && http_body_json(req, &in, &err);
	struct store *s = handler_open(req, parsed, &err);
	if (s != NULL) {
		struct table_env env = handler_env(req);
		json_t *out = release_add(s, &env, id, in, &err);
		handler_release(req, s);
		handler_answer(req, 200, out, &err);
	}
	json_decref(in);
}

/* On the publish threads, as a table's publish: the audit may take a
 * hook's whole timeout. */
static void release_publish_job(void *arg, const struct floe_error *refused)
{
	struct http_request *req = arg;
	struct floe_error err;
	const char *id = NULL;
	json_t *in = NULL;

	floe_error_clear(&err);
	if (refused != NULL) {
		handler_refuse(req, refused);
	} else if (!release_param(req, &id, &err) ||
		   (req->body_len > 0 && !http_body_json(req, &in, &err))) {
		http_reply_error(req, &err);
	} else {
		struct table_env env = handler_env(req);
		json_t *out = release_publish(req->pool, &env, id, in, &err);
		handler_answer(req, 200, out, &err);
	}
	json_decref(in);
	http_async_complete(req);
}

void handle_release_publish(struct http_request *req)
{
	handler_defer_to(req, req->app->publishes, req->app->publish_pool, release_publish_job,
			 req);
}
