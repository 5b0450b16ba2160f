/*
 * handlers_wap.c - floe's extensions: refs, audit hooks, write-audit-
 * publish runs and the audit log.
 */
#include "handlers.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "hooks.h"
#include "namespace.h"
#include "refs.h"
#include "store.h"
#include "uuid.h"
#include "wap.h"


/* A decoded path parameter (caller frees) checked as a name. */
static bool name_param(struct http_request *req, const char *param, const char *what,
		       char **out, struct floe_error *err)
{
	const char *raw = http_param(req, param);
	size_t len = 0;

	*out = NULL;
	if (raw == NULL)
		return floe_err(err, FE_BAD_REQUEST, "%s is missing", what);
	if (!url_decode(raw, strlen(raw), true, out, &len, err))
		return false;
	if (!ident_name_check(*out, len, what, err)) {
		free(*out);
		*out = NULL;
		return false;
	}
	return true;
}

/* The namespace and table of the path, and optionally a JSON body. */
struct target {
	struct ns_ident ns;
	char *table;
	char *extra; /* {ref} or {run} when asked for */
	json_t *body;
};

static void target_clear(struct target *t)
{
	ident_ns_clear(&t->ns);
	free(t->table);
	free(t->extra);
	json_decref(t->body);
	memset(t, 0, sizeof(*t));
}

static bool target_parse(struct http_request *req, struct target *t, const char *extra,
			 bool body, struct floe_error *err)
{
	memset(t, 0, sizeof(*t));
	floe_error_clear(err);
	if (!http_param_namespace(req, &t->ns, err) ||
	    !name_param(req, "table", "table name", &t->table, err) ||
	    (extra != NULL && !name_param(req, extra, extra, &t->extra, err)))
		goto fail;
	if (body) {
		if (req->body_len == 0) {
			t->body = json_object();
		} else if (!http_body_json(req, &t->body, err)) {
			goto fail;
		}
	}
	return true;
fail:
	target_clear(t);
	return false;
}


/* The work of one route on a table: a new answer body, NULL with err set
 * on failure (json_null() for routes that answer 204). */
typedef json_t *(*target_op)(struct store *s, const struct table_env *env,
			     struct target *t, struct floe_error *err);

/* Parses the path (and the body when asked), runs op on a borrowed
 * connection and answers with status. */
static void on_target(struct http_request *req, const char *extra, bool body, int status,
		      target_op op)
{
	struct floe_error err;
	struct target t;
	struct store *s;

	if (!target_parse(req, &t, extra, body, &err)) {
		http_reply_error(req, &err);
		return;
	}
	if ((s = handler_acquire(req)) != NULL) {
		struct table_env env = handler_env(req);
		json_t *out = op(s, &env, &t, &err);
		handler_release(req, s);
		handler_answer(req, status, out, &err);
	}
	target_clear(&t);
}

/* --- refs --- */

static json_t *op_refs_list(struct store *s, const struct table_env *env,
			    struct target *t, struct floe_error *err)
{
	(void)env;
	return refs_list(s, &t->ns, t->table, err);
}

static json_t *op_refs_create(struct store *s, const struct table_env *env,
			      struct target *t, struct floe_error *err)
{
	return refs_create(s, env, &t->ns, t->table, t->body, err);
}

static json_t *op_refs_get(struct store *s, const struct table_env *env,
			   struct target *t, struct floe_error *err)
{
	(void)env;
	return refs_get(s, &t->ns, t->table, t->extra, err);
}

static json_t *op_refs_drop(struct store *s, const struct table_env *env,
			    struct target *t, struct floe_error *err)
{
	return refs_drop(s, env, &t->ns, t->table, t->extra, err) ? json_null() : NULL;
}

static json_t *op_refs_fast_forward(struct store *s, const struct table_env *env,
				    struct target *t, struct floe_error *err)
{
	return refs_fast_forward(s, env, &t->ns, t->table, t->extra, t->body, err);
}

void handle_refs_list(struct http_request *req)
{
	on_target(req, NULL, false, 200, op_refs_list);
}

void handle_refs_create(struct http_request *req)
{
	on_target(req, NULL, true, 201, op_refs_create);
}

void handle_refs_get(struct http_request *req)
{
	on_target(req, "ref", false, 200, op_refs_get);
}

void handle_refs_drop(struct http_request *req)
{
	on_target(req, "ref", false, 204, op_refs_drop);
}

void handle_refs_fast_forward(struct http_request *req)
{
	on_target(req, "ref", true, 200, op_refs_fast_forward);
}

/* --- audit hooks --- */

static void hook_event(struct http_request *req, struct store *s, const char *event,
		       json_t *hook)
{
	struct table_env env = handler_env(req);
	json_t *details = json_pack("{s:O, s:O, s:O, s:O}", "hook-id", json_object_get(hook, "id"),
				    "hook-name", json_object_get(hook, "name"), "url",
				    json_object_get(hook, "url"), "scope",
				    json_object_get(hook, "scope"));
	audit_record(s, &env, event, NULL, NULL, NULL, details);
}

void handle_hooks_create(struct http_request *req)
{
	struct floe_error err;
	struct hook_spec spec;
	json_t *in = NULL;
	json_t *hook = NULL;
	char id[UUID_STR_LEN];
	struct store *s;

	floe_error_clear(&err);
	if (!http_body_json(req, &in, &err) ||
	    !hook_spec_parse(in, req->app->cfg->hook_policy, &spec, &err)) {
		http_reply_error(req, &err);
		json_decref(in);
		return;
	}
	if (!uuid_v4(id)) {
		floe_err(&err, FE_INTERNAL, "no randomness for a hook id");
		http_reply_error(req, &err);
	} else if ((s = handler_acquire(req)) != NULL) {
		bool ok = store_hook_insert(s, id, spec.name, spec.url, spec.secret,
					    &spec.scope_ns, spec.scope_table, spec.timeout_ms,
					    &hook, &err);
		if (ok && hook != NULL)
			hook_event(req, s, "hook.registered", hook);
		handler_release(req, s);
		if (!ok || hook == NULL) {
			if (ok)
				floe_err(&err, FE_INTERNAL, "the new hook could not be read back");
			http_reply_error(req, &err);
		} else {
			http_reply_json(req, 201, hook);
		}
	}
	hook_spec_clear(&spec);
	json_decref(in);
}

void handle_hooks_list(struct http_request *req)
{
	struct floe_error err;
	json_t *hooks = NULL;
	struct store *s = handler_acquire(req);

	if (s == NULL)
		return;
	bool ok = store_hook_list(s, &hooks, &err);
	handler_release(req, s);
	if (ok)
		http_reply_json(req, 200, json_pack("{s:o}", "hooks", hooks));
	else
		http_reply_error(req, &err);
}

static bool hook_id_param(struct http_request *req, const char **id,
			  struct floe_error *err)
{
	*id = http_param(req, "id");
	if (*id == NULL || !hook_id_valid(*id))
		return floe_err(err, FE_NO_SUCH_HOOK, "no audit hook %s", *id ? *id : "");
	return true;
}

void handle_hooks_get(struct http_request *req)
{
	struct floe_error err;
	const char *id;
	json_t *hook = NULL;
	struct store *s;

	if (!hook_id_param(req, &id, &err)) {
		http_reply_error(req, &err);
		return;
	}
	if ((s = handler_acquire(req)) == NULL)
		return;
	bool ok = store_hook_get(s, id, &hook, &err);
	handler_release(req, s);
	if (ok && hook == NULL)
		ok = floe_err(&err, FE_NO_SUCH_HOOK, "no audit hook %s", id);
	if (ok)
		http_reply_json(req, 200, hook);
	else
		http_reply_error(req, &err);
}

void handle_hooks_delete(struct http_request *req)
{
	struct floe_error err;
	const char *id;
	json_t *hook = NULL;
	bool deleted = false;
	struct store *s;

	if (!hook_id_param(req, &id, &err)) {
		http_reply_error(req, &err);
		return;
	}
	if ((s = handler_acquire(req)) == NULL)
		return;
	bool ok = store_hook_get(s, id, &hook, &err) &&
		  (hook == NULL || store_hook_delete(s, id, &deleted, &err));
	if (ok && deleted)
		hook_event(req, s, "hook.deleted", hook);
	handler_release(req, s);
	if (ok && !deleted)
		ok = floe_err(&err, FE_NO_SUCH_HOOK, "no audit hook %s", id);
	handler_answer_done(req, ok, &err);
	json_decref(hook);
}

/* --- write-audit-publish --- */

static json_t *op_wap_stage(struct store *s, const struct table_env *env,
			    struct target *t, struct floe_error *err)
{
	return wap_stage(s, env, &t->ns, t->table, t->body, err);
}

void handle_wap_stage(struct http_request *req)
{
	on_target(req, NULL, true, 201, op_wap_stage);
}

/* Publishes run in its own thread: the audit may take a hook's whole
 * timeout, and a worker thread must not wait that long. */
struct publish_job {
	struct http_request *req;
	struct target t;
};

static void publish_now(struct http_request *req, struct target *t)
{
	struct floe_error err;
	struct table_env env = handler_env(req);

	floe_error_clear(&err);
	json_t *out = wap_publish(req->app->pool, &env, &t->ns, t->table, t->extra, t->body,
				  &err);
	handler_answer(req, 200, out, &err);
}

static void *publish_thread(void *arg)
{
	struct publish_job *job = arg;

	publish_now(job->req, &job->t);
	target_clear(&job->t);
	http_async_complete(job->req);
	free(job);
	return NULL;
}

#define PUBLISH_MAX_CONCURRENT 256

void handle_wap_publish(struct http_request *req)
{
	struct floe_error err;
	struct publish_job *job = calloc(1, sizeof(*job));
	pthread_attr_t attr;
	pthread_t th;

	if (job == NULL) {
		floe_err(&err, FE_INTERNAL, "out of memory");
		http_reply_error(req, &err);
		return;
	}
	if (!target_parse(req, &job->t, "run", true, &err)) {
		http_reply_error(req, &err);
		free(job);
		return;
	}
	if (atomic_load(&req->app->async) >= PUBLISH_MAX_CONCURRENT) {
		floe_err(&err, FE_UNAVAILABLE, "too many publishes are running; retry");
		http_reply_error(req, &err);
		target_clear(&job->t);
		free(job);
		return;
	}
	job->req = req;
	http_suspend(req);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&th, &attr, publish_thread, job) != 0) {
		/* No thread to spare: publish in this one. */
		pthread_attr_destroy(&attr);
		publish_thread(job);
		return;
	}
	pthread_attr_destroy(&attr);
}

static json_t *op_wap_get(struct store *s, const struct table_env *env,
			    struct target *t, struct floe_error *err)
{
	(void)env;
	return wap_get(s, &t->ns, t->table, t->extra, err);
}

void handle_wap_get(struct http_request *req)
{
	on_target(req, "run", false, 200, op_wap_get);
}

void handle_wap_list(struct http_request *req)
{
	struct floe_error err;
	struct target t;
	struct page_request page;
	char *token = NULL;
	char *size = NULL;
	struct store *s;

	if (!target_parse(req, &t, NULL, false, &err)) {
		http_reply_error(req, &err);
		return;
	}
	if (!http_query(req, "pageToken", &token, &err) ||
	    !http_query(req, "pageSize", &size, &err) ||
	    !page_request_parse(NULL, size, &page, &err)) {
		http_reply_error(req, &err);
	} else if ((s = handler_acquire(req)) != NULL) {
		json_t *out = wap_list(s, &t.ns, t.table, token, page.page_size, &err);
		handler_release(req, s);
		handler_answer(req, 200, out, &err);
	}
	free(token);
	free(size);
	target_clear(&t);
}

static json_t *op_wap_abandon(struct store *s, const struct table_env *env,
			    struct target *t, struct floe_error *err)
{
	return wap_abandon(s, env, &t->ns, t->table, t->extra, err);
}

void handle_wap_abandon(struct http_request *req)
{
	on_target(req, "run", false, 200, op_wap_abandon);
}

/* --- audit log --- */

void handle_audit_log(struct http_request *req)
{
	struct floe_error err;
	struct ns_ident ns = { 0 };
	struct page_request page;
	char *table = NULL, *run = NULL, *since = NULL, *token = NULL, *size = NULL;
	struct store *s;

	floe_error_clear(&err);
	const char *raw_ns = http_query_raw(req, "namespace");
	if ((raw_ns != NULL && !ident_ns_parse(raw_ns, strlen(raw_ns), &ns, &err)) ||
	    !http_query(req, "table", &table, &err) || !http_query(req, "run", &run, &err) ||
	    !http_query(req, "since", &since, &err) ||
	    !http_query(req, "pageToken", &token, &err) ||
	    !http_query(req, "pageSize", &size, &err) ||
	    !page_request_parse(NULL, size, &page, &err)) {
		http_reply_error(req, &err);
	} else if ((s = handler_acquire(req)) != NULL) {
		json_t *out = audit_log_list(s, raw_ns ? &ns : NULL, table, run, since, token,
					     page.page_size, &err);
		handler_release(req, s);
		handler_answer(req, 200, out, &err);
	}
	ident_ns_clear(&ns);
	free(table);
	free(run);
	free(since);
	free(token);
	free(size);
}
