/*
 * handlers_view.c - the view routes of the Iceberg REST API. A view's
 * privileges are a table's of the same name: read to load, list or test
 * it, create in its namespace, write to replace it, drop to drop it.
 */
#include "handlers.h"

#include <stdlib.h>
#include <string.h>

#include "ident.h"
#include "tables.h"
#include "view.h"

/* Parses {namespace} and {view} from the path. */
static bool view_params(struct http_request *req, struct ns_ident *ns, char **name,
			struct floe_error *err)
{
	return handler_object_params(req, "view", "view name", ns, name, err);
}

void handle_view_list(struct http_request *req)
{
	handler_list_names(req, views_list_text);
}

/* createView and registerView: a namespace, a body, a LoadViewResult. */
static void on_namespace_body(struct http_request *req,
			      json_t *(*op)(struct store *s, const struct table_env *env,
					    const struct ns_ident *ns, const json_t *body,
					    struct floe_error *err))
{
	struct floe_error err;
	struct ns_ident ns = { 0 };
	json_t *in = NULL;
	struct store *s;

	floe_error_clear(&err);
	if (!http_param_namespace(req, &ns, &err) || !http_body_json(req, &in, &err)) {
		http_reply_error(req, &err);
		goto done;
	}
	s = handler_acquire(req);
	if (s == NULL || !handler_allowed(req, s, PRIV_TABLE_CREATE, &ns, NULL))
		goto done;
	struct table_env env = handler_env(req);
	json_t *out = op(s, &env, &ns, in, &err);
	handler_release(req, s);
	if (out == NULL)
		http_reply_error(req, &err);
	else
		http_reply_json(req, 200, out);
done:
	json_decref(in);
	ident_ns_clear(&ns);
}

void handle_view_create(struct http_request *req)
{
	on_namespace_body(req, view_create);
}

void handle_view_register(struct http_request *req)
{
	on_namespace_body(req, view_register);
}

void handle_view_load(struct http_request *req)
{
	struct floe_error err;
	struct ns_ident ns = { 0 };
	char *name = NULL;
	size_t len = 0;
	struct store *s;

	floe_error_clear(&err);
	if (!view_params(req, &ns, &name, &err)) {
		http_reply_error(req, &err);
		goto done;
	}
	s = handler_acquire(req);
	if (s == NULL || !handler_allowed(req, s, PRIV_TABLE_READ, &ns, name))
		goto done;
	char *text = view_load(s, &ns, name, &len, &err);
	handler_release(req, s);
	if (text == NULL)
		http_reply_error(req, &err);
	else
		http_reply_text(req, 200, text, len);
done:
	free(name);
	ident_ns_clear(&ns);
}

void handle_view_exists(struct http_request *req)
{
	struct floe_error err;
	struct ns_ident ns = { 0 };
	char *name = NULL;
	bool exists = false;
	struct store *s = handler_open(req, view_params(req, &ns, &name, &err), &err);

	if (s == NULL || !handler_allowed(req, s, PRIV_TABLE_READ, &ns, name))
		goto done;
	bool ok = view_exists(s, &ns, name, &exists, &err);
	handler_release(req, s);
	if (ok)
		http_reply_empty(req, exists ? 204 : 404);
	else
		http_reply_error(req, &err);
done:
	free(name);
	ident_ns_clear(&ns);
}

/* A view commit, run on a commit thread like a table's. */
struct view_job {
	struct http_request *req;
	struct ns_ident ns;
	char *name;
};

static void view_job_run(void *arg, const struct floe_error *refused)
{
	struct view_job *job = arg;
	struct http_request *req = job->req;
	struct floe_error err;
	json_t *in = NULL;
	struct store *s = NULL;

	floe_error_clear(&err);
	if (refused != NULL) {
		handler_refuse(req, refused);
		goto done;
	}
	in = handler_commit_body(req, &job->ns, job->name, "view", &err);
	if (in == NULL) {
		http_reply_error(req, &err);
		goto done;
	}
	s = handler_acquire(req);
	if (s == NULL || !handler_allowed(req, s, PRIV_TABLE_WRITE, &job->ns, job->name))
		goto done;
	struct table_env env = handler_env(req);
	json_t *out = view_commit(s, &env, &job->ns, job->name, in, &err);
	handler_release(req, s);
	if (out == NULL)
		http_reply_error(req, &err);
	else
		http_reply_json(req, 200, out);
done:
	json_decref(in);
	free(job->name);
	ident_ns_clear(&job->ns);
	free(job);
	http_async_complete(req);
}

void handle_view_commit(struct http_request *req)
{
	struct floe_error err;
	struct ns_ident ns = { 0 };
	char *name = NULL;

	floe_error_clear(&err);
	if (!view_params(req, &ns, &name, &err)) {
		http_reply_error(req, &err);
		return;
	}
	struct view_job *job = calloc(1, sizeof(*job));
	if (job == NULL) {
		floe_err(&err, FE_INTERNAL, "out of memory");
		http_reply_error(req, &err);
		free(name);
		ident_ns_clear(&ns);
		return;
	}
	job->req = req;
	job->ns = ns;
	job->name = name;
	handler_defer(req, view_job_run, job);
}

void handle_view_drop(struct http_request *req)
{
	struct floe_error err;
	struct ns_ident ns = { 0 };
	char *name = NULL;
	struct store *s = handler_open(req, view_params(req, &ns, &name, &err), &err);

	if (s == NULL || !handler_allowed(req, s, PRIV_TABLE_DROP, &ns, name))
		goto done;
	struct table_env env = handler_env(req);
	bool ok = view_drop(s, &env, &ns, name, &err);
	handler_release(req, s);
	handler_answer_done(req, ok, &err);
done:
	free(name);
	ident_ns_clear(&ns);
}

void handle_view_rename(struct http_request *req)
{
	struct floe_error err;
	json_t *in = NULL;
	struct store *s = handler_open(req, http_body_json(req, &in, &err), &err);

	if (s != NULL) {
		struct table_env env = handler_env(req);
		bool ok = view_rename(s, &env, in, &err);
		handler_release(req, s);
		handler_answer_done(req, ok, &err);
	}
	json_decref(in);
}
