/*
 * handlers_management.c - the routes of /management/v1, for principals
 * holding ADMIN on the catalog (the route table asks it): each reads the
 * request and hands it to catalog/management.c. A new secret is made and
 * hashed (its keyed hash, auth/secret.h) on the authentication hashing
 * queue, never on a request worker, and is answered once. After a change to a
 * principal's standing, a role, a membership or a grant the token cache
 * forgets what it resolved, so this floe's next request sees the change.
 */
#include "handlers_management.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <openssl/crypto.h>

#include "auth_internal.h"
#include "authz.h"
#include "authzcache.h"
#include "handlers.h"
#include "log.h"
#include "management.h"
#include "secret.h"
#include "system.h"

/* Forgets every resolved token and kept decision of this floe (a role,
 * membership or grant changed) at once; the other replicas forget when
 * the database notifies them. Nothing is kept with authentication off. */
static void mgmt_cache_clear(struct http_request *req)
{
	struct auth *a = req->app->auth;

	if (a != NULL && a->cache != NULL)
		tokencache_clear(a->cache);
	if (a != NULL)
		authz_cache_forget(a->decisions);
}

/* The answers holding a new secret are shown once: an Idempotency-Key
 * would keep a copy of the answer to replay it. */
static bool mgmt_no_replay(struct http_request *req, struct floe_error *err)
{
	if (http_header(req, "Idempotency-Key") != NULL)
		return floe_err(err, FE_BAD_REQUEST,
				"Idempotency-Key is not accepted here: the answer holds a secret "
				"that is shown once");
	return true;
}

/* --- a new secret, on the hashing queue --- */

/* Makes a secret and, with it, the client name (rotate: a new secret for
 * the principal name). On the hashing queue. */
static void secret_make(struct call *c, const char *name, bool rotate)
{
	struct http_request *req = c->req;
	char secret[SECRET_RANDOM_LEN + 1];
	char *hash = NULL;
	struct floe_error err;
	json_t *out = NULL;
	struct store *s = NULL;

	floe_error_clear(&err);
	if (!secret_random(secret)) {
		floe_err(&err, FE_UNAVAILABLE, "no randomness for a secret; retry");
		http_reply_error(req, &err);
		goto done;
	}
	/* A random secret: the keyed hash (secret.h), microseconds. */
	hash = secret_hash_for(auth_secret_key(req->app->auth), secret, strlen(secret));
	if (hash == NULL) {
		floe_err(&err, FE_INTERNAL, "the secret could not be hashed");
		http_reply_error(req, &err);
		goto done;
	}
	s = call_store(c);
	if (s == NULL)
		goto done;
	out = rotate ? mgmt_principal_rotate(s, &c->env, name, hash, &err)
		     : mgmt_principal_create(s, &c->env, name, "client", hash, &err);
	call_release(c);
	if (out == NULL) {
		http_reply_error(req, &err);
		goto done;
	}
	/* Shown once: floe keeps only the hash. */
	size_t len = strlen(name) + 1 + strlen(secret) + 1;
	char *credential = malloc(len);
	json_t *shown = NULL;
	if (credential != NULL) {
		(void)snprintf(credential, len, "%s:%s", name, secret);
		shown = json_string(credential);
	}
	if (shown == NULL || json_object_set_new(out, "credential", shown) != 0) {
		if (credential != NULL)
			OPENSSL_cleanse(credential, len);
		free(credential);
		json_decref(out);
		floe_err(&err, FE_INTERNAL, "out of memory");
		http_reply_error(req, &err);
		goto done;
	}
	OPENSSL_cleanse(credential, len);
	free(credential);
	/* The tokens of the old secret end at once here (the other floes
	 * hear the change from the database). */
	if (rotate)
		mgmt_cache_clear(req);
	http_reply_json(req, rotate ? 200 : 201, out);
	http_add_header(req, "Cache-Control", "no-store");
	log_info("auth", "%s the secret of %s rid=%s", rotate ? "rotated" : "made", name,
		 req->request_id);
done:
	OPENSSL_cleanse(secret, sizeof(secret));
	free(hash);
}

static void secret_create_job(struct call *c)
{
	secret_make(c, json_string_value(json_object_get(c->body, "name")), false);
}

static void secret_rotate_job(struct call *c)
{
	secret_make(c, c->arg, true);
}

/* Makes or replaces a secret off the request worker: the hash takes about
 * 0.1 s and 32 MiB. */
static void mgmt_defer_secret(struct call *c, route_handler job)
{
	struct auth *a = c->req->app->auth;

	/* With authentication off there is no hashing queue: the commit
	 * threads take it. */
	if (a != NULL && a->hashes != NULL)
		call_defer(c, a->hashes, c->req->app->pool, job);
	else
		call_defer(c, c->req->app->commits, c->req->app->commit_pool, job);
}

/* --- principals --- */

void handle_mgmt_principal_create(struct call *c)
{
	struct floe_error err;
	const char *name = NULL;
	const char *kind = NULL;
	struct store *s;

	floe_error_clear(&err);
	if (!mgmt_principal_spec(c->body, &name, &kind, &err) ||
	    (strcmp(kind, "client") == 0 && !mgmt_no_replay(c->req, &err))) {
		http_reply_error(c->req, &err);
		return;
	}
	if (strcmp(kind, "client") == 0) {
		mgmt_defer_secret(c, secret_create_job);
		return;
	}
	s = call_store(c);
	if (s != NULL)
		handler_answer(c->req, 201,
			       mgmt_principal_create(s, &c->env, name, kind, NULL, &err), &err);
}

/* A paged list: pageToken and pageSize, then list's answer. */
static void mgmt_list(struct call *c, json_t *(*list)(struct store *s, const char *token,
						      const char *size, struct floe_error *err))
{
	struct floe_error err;
	char *token = NULL;
	char *size = NULL;
	struct store *s;

	floe_error_clear(&err);
	if (!http_query(c->req, "pageToken", &token, &err) ||
	    !http_query(c->req, "pageSize", &size, &err))
		http_reply_error(c->req, &err);
	else if ((s = call_store(c)) != NULL)
		handler_answer(c->req, 200, list(s, token, size, &err), &err);
	free(token);
	free(size);
}

void handle_mgmt_principal_list(struct call *c)
{
	mgmt_list(c, mgmt_principal_list);
}

void handle_mgmt_principal_get(struct call *c)
{
	struct floe_error err;
	struct store *s = call_store(c);

	if (s != NULL)
		handler_answer(c->req, 200, mgmt_principal_get(s, c->arg, &err), &err);
}

static void principal_set_disabled(struct call *c, bool disabled)
{
	struct floe_error err;
	long long id = 0;
	struct store *s = call_store(c);

	floe_error_clear(&err);
	if (s == NULL)
		return;
	json_t *out = mgmt_principal_set_disabled(s, &c->env, c->arg, disabled, &id, &err);
	call_release(c);
	/* Its tokens stop at once here; other floes re-check within
	 * AUTH_RECHECK_SECONDS. */
	struct auth *a = c->req->app->auth;
	if (out != NULL && disabled && a != NULL && a->cache != NULL)
		(void)tokencache_drop_principal(a->cache, id);
	handler_answer(c->req, 200, out, &err);
}

void handle_mgmt_principal_disable(struct call *c)
{
	principal_set_disabled(c, true);
}

void handle_mgmt_principal_enable(struct call *c)
{
	principal_set_disabled(c, false);
}

void handle_mgmt_principal_rotate(struct call *c)
{
	struct floe_error err;
	struct store *s = call_store(c);

	floe_error_clear(&err);
	if (s == NULL)
		return;
	bool ok = mgmt_no_replay(c->req, &err) && mgmt_rotate_check(s, c->arg, &err);
	call_release(c);
	if (ok)
		mgmt_defer_secret(c, secret_rotate_job);
	else
		http_reply_error(c->req, &err);
}

void handle_mgmt_principal_privileges(struct call *c)
{
	struct http_request *req = c->req;
	struct floe_error err;
	char *table = NULL;
	char *warehouse = NULL;
	struct ns_ident ns = { 0 };
	const char *key = "";
	const char *raw = http_query_raw(req, "namespace");
	struct store *s;

	floe_error_clear(&err);
	json_t *out = NULL;
	bool ok = http_query(req, "table", &table, &err) &&
		  http_query(req, "warehouse", &warehouse, &err) &&
		  (warehouse == NULL || handler_warehouse_named(req, warehouse, &key, &err)) &&
		  (raw == NULL || ident_ns_parse(raw, strlen(raw), IDENT_PLUS_SPACE, &ns, &err));
	if (ok && table != NULL && raw == NULL)
		ok = floe_err(&err, FE_BAD_REQUEST, "a table needs its namespace");
	if (ok && table != NULL)
		ok = ident_name_check(table, strlen(table), "table name", &err);
	if (!ok) {
		http_reply_error(req, &err);
	} else if ((s = call_store(c)) != NULL) {
		system_use(s, key);
		out = mgmt_privileges(s, c->arg, raw != NULL ? &ns : NULL, table, &err);
		/* The connection goes back to the request's own warehouse. */
		system_use(s, handler_warehouse_name(req));
		handler_answer(req, 200, out, &err);
	}
	free(table);
	free(warehouse);
	ident_ns_clear(&ns);
}

/* --- roles and members --- */

void handle_mgmt_role_create(struct call *c)
{
	struct floe_error err;
	struct store *s = call_store(c);

	if (s == NULL)
		return;
	json_t *out = mgmt_role_create(s, &c->env, c->body, &err);
	call_release(c);
	if (out != NULL)
		mgmt_cache_clear(c->req);
	handler_answer(c->req, 201, out, &err);
}

void handle_mgmt_role_update(struct call *c)
{
	struct floe_error err;
	bool changed = false;
	struct store *s = call_store(c);

	if (s == NULL)
		return;
	json_t *out = mgmt_role_update(s, &c->env, c->arg, c->body, &changed, &err);
	call_release(c);
	/* The issuers' tokens resolved with the old mark are forgotten. */
	if (changed)
		mgmt_cache_clear(c->req);
	handler_answer(c->req, 200, out, &err);
}

void handle_mgmt_role_list(struct call *c)
{
	mgmt_list(c, mgmt_role_list);
}

void handle_mgmt_role_delete(struct call *c)
{
	struct floe_error err;
	struct store *s = call_store(c);

	if (s == NULL)
		return;
	bool ok = mgmt_role_delete(s, &c->env, c->arg, &err);
	call_release(c);
	if (ok)
		mgmt_cache_clear(c->req);
	handler_answer_done(c->req, ok, &err);
}

static void member_set(struct call *c, bool add)
{
	struct floe_error err;
	bool changed = false;
	struct store *s = call_store(c);

	if (s == NULL)
		return;
	bool ok = mgmt_member_set(s, &c->env, c->arg, c->arg2, add, &changed, &err);
	call_release(c);
	if (changed)
		mgmt_cache_clear(c->req);
	handler_answer_done(c->req, ok, &err);
}

void handle_mgmt_member_add(struct call *c)
{
	member_set(c, true);
}

void handle_mgmt_member_remove(struct call *c)
{
	member_set(c, false);
}

/* --- grants --- */

/* A grant's on.warehouse (absent: the default warehouse): the catalog of
 * s and env is that warehouse's from here on. */
static bool grant_warehouse(struct http_request *req, struct store *s, const json_t *body,
			    struct table_env *env, struct floe_error *err)
{
	const json_t *on = json_object_get(body, "on");
	const json_t *w = json_is_object(on) ? json_object_get(on, "warehouse") : NULL;
	const char *key = "";

	if (w == NULL)
		return true;
	if (!json_is_string(w))
		return floe_err(err, FE_BAD_REQUEST, "field 'on.warehouse' must be a string");
	if (!handler_warehouse_named(req, json_string_value(w), &key, err))
		return false;
	system_use(s, key);
	env->warehouse_name = key;
	return true;
}

static void grant_set(struct call *c, bool add)
{
	struct floe_error err;
	bool changed = false;
	struct store *s = call_store(c);

	floe_error_clear(&err);
	if (s == NULL)
		return;
	json_t *out = NULL;
	struct table_env env = c->env;
	if (grant_warehouse(c->req, s, c->body, &env, &err))
		out = mgmt_grant_set(s, &env, c->arg, c->body, add, &changed, &err);
	call_release(c);
	if (changed)
		mgmt_cache_clear(c->req);
	handler_answer(c->req, add && changed ? 201 : 200, out, &err);
}

void handle_mgmt_grant_add(struct call *c)
{
	grant_set(c, true);
}

void handle_mgmt_grant_revoke(struct call *c)
{
	grant_set(c, false);
}

void handle_mgmt_grant_list(struct call *c)
{
	struct floe_error err;
	char *token = NULL;
	char *size = NULL;
	struct store *s;

	floe_error_clear(&err);
	if (!http_query(c->req, "pageToken", &token, &err) ||
	    !http_query(c->req, "pageSize", &size, &err))
		http_reply_error(c->req, &err);
	else if ((s = call_store(c)) != NULL)
		handler_answer(c->req, 200, mgmt_grant_list(s, c->arg, token, size, &err), &err);
	free(token);
	free(size);
}
