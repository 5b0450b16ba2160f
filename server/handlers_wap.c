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

/* A decoded path parameter (caller frees) checked as a name. */
static bool name_param(struct http_request *req, const char *param, const char *what, char **out,
		       struct floe_error *err)
{
	const char *raw = http_param(req, param);
	size_t len = 0;

	*out = NULL;
	if (raw == NULL)
		return floe_err(err, FE_BAD_REQUEST, "The %s is missing", what);
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

static bool target_parse(struct http_request *req, struct target *t, const char *extra, bool body,
			 struct floe_error *err)
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
typedef json_t *(*target_op)(struct store *s, const struct table_env *env, struct target *t,
			     struct floe_error *err);

/* What a route on a table needs there; REF_WRITE: TABLE_WRITE_MAIN when
 * the ref (the path's, or the body's "name") is main, TABLE_WRITE else. */
#define REF_WRITE PRIV_COUNT

static enum privilege target_privilege(const struct target *t, enum privilege priv)
{
	if (priv != REF_WRITE)
		return priv;
	const char *ref = t->extra != NULL ? t->extra
					   : json_string_value(json_object_get(t->body, "name"));
	return ref == NULL || strcmp(ref, "main") == 0 ? PRIV_TABLE_WRITE_MAIN : PRIV_TABLE_WRITE;
}

/* Parses the path (and the body when asked), checks priv on the table,
 * runs op on a borrowed connection and answers with status. */
static void on_target(struct http_request *req, const char *extra, bool body, int status,
		      enum privilege priv, target_op op)
{
	struct floe_error err;
	struct target t;
	struct store *s;

	if (!target_parse(req, &t, extra, body, &err)) {
		http_reply_error(req, &err);
		return;
	}
	s = handler_acquire(req);
	if (s != NULL && handler_allowed(req, s, target_privilege(&t, priv), &t.ns, t.table)) {
		struct table_env env = handler_env(req);
		json_t *out = op(s, &env, &t, &err);
		handler_release(req, s);
		handler_answer(req, status, out, &err);
	}
	target_clear(&t);
}

/* --- refs --- */

static json_t *op_refs_list(struct store *s, const struct table_env *env, struct target *t,
			    struct floe_error *err)
{
	(void)env;
	return refs_list(s, &t->ns, t->table, err);
}

static json_t *op_refs_create(struct store *s, const struct table_env *env, struct target *t,
			      struct floe_error *err)
{
	return refs_create(s, env, &t->ns, t->table, t->body, err);
}

static json_t *op_refs_get(struct store *s, const struct table_env *env, struct target *t,
			   struct floe_error *err)
{
	(void)env;
	return refs_get(s, &t->ns, t->table, t->extra, err);
}

static json_t *op_refs_drop(struct store *s, const struct table_env *env, struct target *t,
			    struct floe_error *err)
{
	return refs_drop(s, env, &t->ns, t->table, t->extra, err) ? json_null() : NULL;
}

static json_t *op_refs_fast_forward(struct store *s, const struct table_env *env, struct target *t,
				    struct floe_error *err)
{
	return refs_fast_forward(s, env, &t->ns, t->table, t->extra, t->body, err);
}

void handle_refs_list(struct http_request *req)
{
	on_target(req, NULL, false, 200, PRIV_TABLE_READ, op_refs_list);
}

void handle_refs_create(struct http_request *req)
{
	on_target(req, NULL, true, 201, REF_WRITE, op_refs_create);
}

void handle_refs_get(struct http_request *req)
{
	on_target(req, "ref", false, 200, PRIV_TABLE_READ, op_refs_get);
}

void handle_refs_drop(struct http_request *req)
{
	on_target(req, "ref", false, 204, REF_WRITE, op_refs_drop);
}

void handle_refs_fast_forward(struct http_request *req)
{
	on_target(req, "ref", true, 200, REF_WRITE, op_refs_fast_forward);
}

/* --- audit hooks --- */

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
	bool have_id = uuid_v4(id) || floe_err(&err, FE_INTERNAL, "no randomness for a hook id");
	s = handler_open(req, have_id, &err);
	if (s != NULL && handler_allowed(req, s, PRIV_HOOKS_MANAGE,
					 spec.scope_ns.nlevels > 0 ? &spec.scope_ns : NULL,
					 spec.scope_ns.nlevels > 0 ? spec.scope_table : NULL)) {
		struct table_env env = handler_env(req);
		bool ok = control_hook_register(s, &env, id, &spec, &hook, &err);
		handler_release(req, s);
		if (!ok)
			http_reply_error(req, &err);
		else
			http_reply_json(req, 201, hook);
	}
	hook_spec_clear(&spec);
	json_decref(in);
}

/* The object a hook (its JSON) covers: its scope's table or namespace,
 * or the catalog. ns is filled (owned) when the scope names one. */
static bool hook_scope(const json_t *hook, struct ns_ident *ns, const char **table)
{
	struct floe_error err;
	const json_t *scope = json_object_get(hook, "scope");
	const json_t *levels = json_object_get(scope, "namespace");

	*table = NULL;
	memset(ns, 0, sizeof(*ns));
	if (levels == NULL)
		return false;
	if (!ident_ns_from_json(levels, "namespace", ns, &err))
		return false;
	*table = json_string_value(json_object_get(scope, "table"));
	return true;
}

/* Reading hooks: HOOKS_MANAGE or AUDIT_READ on what hook covers (NULL:
 * the catalog). False when the request has been answered (the 403 names
 * HOOKS_MANAGE). */
static bool hooks_readable(struct http_request *req, struct store *s, const json_t *hook)
{
	struct floe_error err;
	struct ns_ident ns;
	const char *table = NULL;
	bool scoped = hook != NULL && hook_scope(hook, &ns, &table);
	const struct ns_ident *on = scoped ? &ns : NULL;

	floe_error_clear(&err);
	bool ok = access_check(s, handler_principal(req), PRIV_AUDIT_READ, on, table, &err);
	if (!ok && err.kind == FE_FORBIDDEN) {
		ok = handler_allowed(req, s, PRIV_HOOKS_MANAGE, on, table);
	} else if (!ok) {
		handler_release(req, s);
		http_reply_error(req, &err);
	}
	if (scoped)
		ident_ns_clear(&ns);
	return ok;
}

void handle_hooks_list(struct http_request *req)
{
	struct floe_error err;
	json_t *hooks = NULL;
	struct store *s = handler_acquire(req);

	if (s == NULL || !hooks_readable(req, s, NULL))
		return;
	hooks = control_hook_list(s, &err);
	handler_release(req, s);
	if (hooks != NULL)
		http_reply_json(req, 200, hooks);
	else
		http_reply_error(req, &err);
}

static bool hook_id_param(struct http_request *req, const char **id, struct floe_error *err)
{
	*id = http_param(req, "id");
	if (*id == NULL || !hook_id_valid(*id))
		return wording_no_such_hook(*id ? *id : "", err);
	return true;
}

void handle_hooks_get(struct http_request *req)
{
	struct floe_error err;
	const char *id;
	json_t *hook = NULL;
	struct store *s;

	s = handler_open(req, hook_id_param(req, &id, &err), &err);
	if (s == NULL)
		return;
	hook = control_hook_get(s, id, &err);
	if (hook != NULL && !hooks_readable(req, s, hook)) {
		json_decref(hook);
		return;
	}
	handler_release(req, s);
	if (hook != NULL)
		http_reply_json(req, 200, hook);
	else
		http_reply_error(req, &err);
}

/* HOOKS_MANAGE on what hook id covers; an unknown id is its 404 (a hook
 * id names no catalog object, and which object to ask about is known
 * only from the hook). False when the request has been answered. */
static bool hook_manageable(struct http_request *req, struct store *s, const char *id)
{
	struct floe_error err;
	struct ns_ident ns;
	const char *table = NULL;

	if (handler_principal(req) == NULL)
		return true;
	json_t *hook = control_hook_get(s, id, &err);
	if (hook == NULL) {
		handler_release(req, s);
		http_reply_error(req, &err);
		return false;
	}
	bool scoped = hook_scope(hook, &ns, &table);
	bool ok = handler_allowed(req, s, PRIV_HOOKS_MANAGE, scoped ? &ns : NULL, table);
	if (scoped)
		ident_ns_clear(&ns);
	json_decref(hook);
	return ok;
}

void handle_hooks_delete(struct http_request *req)
{
	struct floe_error err;
	const char *id;
	struct store *s;

	s = handler_open(req, hook_id_param(req, &id, &err), &err);
	if (s == NULL || !hook_manageable(req, s, id))
		return;
	struct table_env env = handler_env(req);
	bool ok = control_hook_delete(s, &env, id, NULL, &err);
	handler_release(req, s);
	handler_answer_done(req, ok, &err);
}

/* --- write-audit-publish --- */

static json_t *op_wap_stage(struct store *s, const struct table_env *env, struct target *t,
			    struct floe_error *err)
{
	return wap_stage(s, env, &t->ns, t->table, t->body, err);
}

void handle_wap_stage(struct http_request *req)
{
	on_target(req, NULL, true, 201, PRIV_WAP_STAGE, op_wap_stage);
}

/* Publishes run on the publish threads, each borrowing connections of
 * its own: the audit may take a hook's whole timeout, and a worker thread
 * must not wait that long. The path and body are parsed there, so a
 * waiting publish holds no more than its request. */
static void publish_job_run(void *arg, const struct floe_error *refused)
{
	struct http_request *req = arg;
	struct floe_error err;
	struct target t;

	floe_error_clear(&err);
	if (refused != NULL) {
		handler_refuse(req, refused);
	} else if (!target_parse(req, &t, "run", true, &err)) {
		http_reply_error(req, &err);
	} else {
		struct store *s = handler_acquire(req);
		if (s != NULL && handler_allowed(req, s, PRIV_WAP_PUBLISH, &t.ns, t.table)) {
			handler_release(req, s);
			struct table_env env = handler_env(req);
			json_t *out = wap_publish(req->pool, &env, &t.ns, t.table, t.extra, t.body,
						  &err);
			handler_answer(req, 200, out, &err);
		}
		target_clear(&t);
	}
	http_async_complete(req);
}

void handle_wap_publish(struct http_request *req)
{
	handler_defer_to(req, req->app->publishes, req->app->publish_pool, publish_job_run, req);
}

static json_t *op_wap_get(struct store *s, const struct table_env *env, struct target *t,
			  struct floe_error *err)
{
	(void)env;
	return wap_get(s, &t->ns, t->table, t->extra, err);
}

void handle_wap_get(struct http_request *req)
{
	on_target(req, "run", false, 200, PRIV_TABLE_READ, op_wap_get);
}

void handle_wap_list(struct http_request *req)
{
	struct floe_error err;
	struct target t;
	struct page_request page = { 0 };
	char *token = NULL;
	char *size = NULL;
	struct store *s;

	if (!target_parse(req, &t, NULL, false, &err)) {
		http_reply_error(req, &err);
		return;
	}
	bool parsed = http_query(req, "pageToken", &token, &err) &&
		      http_query(req, "pageSize", &size, &err) &&
		      page_request_parse(NULL, size, &page, &err);
	s = handler_open(req, parsed, &err);
	if (s != NULL && handler_allowed(req, s, PRIV_TABLE_READ, &t.ns, t.table)) {
		json_t *out = wap_list(s, &t.ns, t.table, token, page.page_size, &err);
		handler_release(req, s);
		handler_answer(req, 200, out, &err);
	}
	free(token);
	free(size);
	target_clear(&t);
}

static json_t *op_wap_abandon(struct store *s, const struct table_env *env, struct target *t,
			      struct floe_error *err)
{
	return wap_abandon(s, env, &t->ns, t->table, t->extra, err);
}

void handle_wap_abandon(struct http_request *req)
{
	on_target(req, "run", false, 200, PRIV_WAP_STAGE, op_wap_abandon);
}

/* --- audit log --- */

void handle_audit_log(struct http_request *req)
{
	struct floe_error err;
	struct ns_ident ns = { 0 };
	struct page_request page = { 0 };
	char *table = NULL, *run = NULL, *since = NULL, *token = NULL, *size = NULL;
	struct store *s;

	floe_error_clear(&err);
	const char *raw_ns = http_query_raw(req, "namespace");
	bool parsed = (raw_ns == NULL || ident_ns_parse(raw_ns, strlen(raw_ns), &ns, &err)) &&
		      http_query(req, "table", &table, &err) &&
		      http_query(req, "run", &run, &err) &&
		      http_query(req, "since", &since, &err) &&
		      http_query(req, "pageToken", &token, &err) &&
		      http_query(req, "pageSize", &size, &err) &&
		      page_request_parse(NULL, size, &page, &err);
	s = handler_open(req, parsed, &err);
	/* AUDIT_READ on what the filter names: the table, the namespace, or
	 * (no filter) the catalog. */
	if (s != NULL &&
	    handler_allowed(req, s, PRIV_AUDIT_READ, raw_ns ? &ns : NULL, raw_ns ? table : NULL)) {
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
