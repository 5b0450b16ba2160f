/*
 * handlers_management.c - the routes of /management/v1: each checks that
 * the caller holds ADMIN on the catalog, reads the request and hands it to
 * catalog/management.c. A new secret is made and hashed (its keyed hash,
 * auth/secret.h) on the authentication hashing queue, never on an HTTP
 * worker, and is answered once. After a change to a
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

/* Borrows a connection and checks that the caller holds ADMIN on the
 * catalog; NULL when the request has been answered. */
static struct store *mgmt_open(struct http_request *req)
{
	static const struct authz_object catalog = { .kind = AUTHZ_CATALOG };
	struct floe_error err;
	struct store *s = handler_acquire(req);

	if (s == NULL)
		return NULL;
	floe_error_clear(&err);
	if (!authz_check(s, handler_principal(req), PRIV_ADMIN, &catalog, &err)) {
		handler_release(req, s);
		http_reply_error(req, &err);
		return NULL;
	}
	return s;
}

/* Route parameter name, percent-decoded, as a new string in *out. */
static bool mgmt_param(struct http_request *req, const char *name, char **out,
		       struct floe_error *err)
{
	const char *raw = http_param(req, name);
	size_t len = 0;

	*out = NULL;
	if (raw == NULL)
		return floe_err(err, FE_BAD_REQUEST, "no %s given", name);
	if (!url_decode(raw, strlen(raw), false, out, &len, err))
		return false;
	if (strlen(*out) != len) {
		free(*out);
		*out = NULL;
		return floe_err(err, FE_BAD_REQUEST, "a %s must not hold a NUL byte", name);
	}
	return true;
}

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

struct secret_job {
	struct http_request *req;
	bool rotate; /* rotate-secret; else create a client */
	char name[MGMT_NAME_MAX + 1];
};

static void secret_job_run(void *arg, const struct floe_error *refused)
{
	struct secret_job *job = arg;
	struct http_request *req = job->req;
	char secret[SECRET_RANDOM_LEN + 1];
	char *hash = NULL;
	struct floe_error err;
	json_t *out = NULL;
	struct store *s = NULL;

	floe_error_clear(&err);
	if (refused != NULL) {
		handler_refuse(req, refused);
		goto done;
	}
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
	s = handler_acquire(req);
	if (s == NULL)
		goto done;
	struct table_env env = handler_env(req);
	out = job->rotate ? mgmt_principal_rotate(s, &env, job->name, hash, &err)
			  : mgmt_principal_create(s, &env, job->name, "client", hash, &err);
	handler_release(req, s);
	if (out == NULL) {
		http_reply_error(req, &err);
		goto done;
	}
	/* Shown once: floe keeps only the hash. */
	size_t len = strlen(job->name) + 1 + strlen(secret) + 1;
	char *credential = malloc(len);
	json_t *shown = NULL;
	if (credential != NULL) {
		(void)snprintf(credential, len, "%s:%s", job->name, secret);
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
	if (job->rotate)
		mgmt_cache_clear(req);
	http_reply_json(req, job->rotate ? 200 : 201, out);
	http_add_header(req, "Cache-Control", "no-store");
	log_info("auth", "%s the secret of %s rid=%s", job->rotate ? "rotated" : "made", job->name,
		 req->request_id);
done:
	OPENSSL_cleanse(secret, sizeof(secret));
	free(hash);
	free(job);
	http_async_complete(req);
}

/* Makes or replaces the secret of name off the HTTP worker. */
static void mgmt_defer_secret(struct http_request *req, const char *name, bool rotate)
{
	struct auth *a = req->app->auth;
	struct secret_job *job = calloc(1, sizeof(*job));
	struct floe_error err;

	if (job == NULL) {
		floe_err(&err, FE_INTERNAL, "out of memory");
		http_reply_error(req, &err);
		return;
	}
	job->req = req;
	job->rotate = rotate;
	(void)snprintf(job->name, sizeof(job->name), "%s", name);
	/* With authentication off there is no hashing queue: the commit
	 * threads take it. */
	if (a != NULL && a->hashes != NULL)
		handler_defer_to(req, a->hashes, req->app->pool, secret_job_run, job);
	else
		handler_defer(req, secret_job_run, job);
}

/* --- principals --- */

void handle_mgmt_principal_create(struct http_request *req)
{
	struct floe_error err;
	json_t *in = NULL;
	const char *name = NULL;
	const char *kind = NULL;
	struct store *s;

	floe_error_clear(&err);
	s = mgmt_open(req);
	if (s == NULL)
		return;
	if (!http_body_json(req, &in, &err) || !mgmt_principal_spec(in, &name, &kind, &err) ||
	    (strcmp(kind, "client") == 0 && !mgmt_no_replay(req, &err))) {
		handler_release(req, s);
		http_reply_error(req, &err);
		goto done;
	}
	if (strcmp(kind, "client") == 0) {
		handler_release(req, s);
		mgmt_defer_secret(req, name, false);
		goto done;
	}
	struct table_env env = handler_env(req);
	json_t *out = mgmt_principal_create(s, &env, name, kind, NULL, &err);
	handler_release(req, s);
	handler_answer(req, 201, out, &err);
done:
	json_decref(in);
}

/* A paged list: pageToken and pageSize, then list's answer. */
static void mgmt_list(struct http_request *req,
		      json_t *(*list)(struct store *s, const char *token, const char *size,
				      struct floe_error *err))
{
	struct floe_error err;
	char *token = NULL;
	char *size = NULL;
	struct store *s;

	floe_error_clear(&err);
	s = mgmt_open(req);
	if (s == NULL)
		return;
	json_t *out = NULL;
	if (http_query(req, "pageToken", &token, &err) && http_query(req, "pageSize", &size, &err))
		out = list(s, token, size, &err);
	handler_release(req, s);
	handler_answer(req, 200, out, &err);
	free(token);
	free(size);
}

void handle_mgmt_principal_list(struct http_request *req)
{
	mgmt_list(req, mgmt_principal_list);
}

void handle_mgmt_principal_get(struct http_request *req)
{
	struct floe_error err;
	char *name = NULL;
	struct store *s;

	floe_error_clear(&err);
	s = mgmt_open(req);
	if (s == NULL)
		return;
	json_t *out = NULL;
	if (mgmt_param(req, "name", &name, &err))
		out = mgmt_principal_get(s, name, &err);
	handler_release(req, s);
	handler_answer(req, 200, out, &err);
	free(name);
}

static void principal_set_disabled(struct http_request *req, bool disabled)
{
	struct floe_error err;
	char *name = NULL;
	long long id = 0;
	struct store *s;

	floe_error_clear(&err);
	s = mgmt_open(req);
	if (s == NULL)
		return;
	json_t *out = NULL;
	struct table_env env = handler_env(req);
	if (mgmt_param(req, "name", &name, &err))
		out = mgmt_principal_set_disabled(s, &env, name, disabled, &id, &err);
	handler_release(req, s);
	/* Its tokens stop at once here; other floes re-check within
	 * AUTH_RECHECK_SECONDS. */
	struct auth *a = req->app->auth;
	if (out != NULL && disabled && a != NULL && a->cache != NULL)
		(void)tokencache_drop_principal(a->cache, id);
	handler_answer(req, 200, out, &err);
	free(name);
}

void handle_mgmt_principal_disable(struct http_request *req)
{
	principal_set_disabled(req, true);
}

void handle_mgmt_principal_enable(struct http_request *req)
{
	principal_set_disabled(req, false);
}

void handle_mgmt_principal_rotate(struct http_request *req)
{
	struct floe_error err;
	char *name = NULL;
	struct store *s;

	floe_error_clear(&err);
	s = mgmt_open(req);
	if (s == NULL)
		return;
	bool ok = mgmt_param(req, "name", &name, &err) && mgmt_no_replay(req, &err) &&
		  mgmt_rotate_check(s, name, &err);
	handler_release(req, s);
	if (ok)
		mgmt_defer_secret(req, name, true);
	else
		http_reply_error(req, &err);
	free(name);
}

void handle_mgmt_principal_privileges(struct http_request *req)
{
	struct floe_error err;
	char *name = NULL;
	char *table = NULL;
	struct ns_ident ns = { 0 };
	struct store *s;
	const char *raw = http_query_raw(req, "namespace");

	floe_error_clear(&err);
	s = mgmt_open(req);
	if (s == NULL)
		return;
	json_t *out = NULL;
	char *warehouse = NULL;
	const char *key = "";
	bool ok = mgmt_param(req, "name", &name, &err) && http_query(req, "table", &table, &err) &&
		  http_query(req, "warehouse", &warehouse, &err) &&
		  (warehouse == NULL || handler_warehouse_named(req, warehouse, &key, &err)) &&
		  (raw == NULL || ident_ns_parse(raw, strlen(raw), &ns, &err));
	if (ok)
		system_use(s, key);
	if (ok && table != NULL && raw == NULL)
		ok = floe_err(&err, FE_BAD_REQUEST, "a table needs its namespace");
	if (ok && table != NULL)
		ok = ident_name_check(table, strlen(table), "table name", &err);
	if (ok)
		out = mgmt_privileges(s, name, raw != NULL ? &ns : NULL, table, &err);
	handler_release(req, s);
	handler_answer(req, 200, out, &err);
	free(name);
	free(table);
	free(warehouse);
	ident_ns_clear(&ns);
}

/* --- roles and members --- */

void handle_mgmt_role_create(struct http_request *req)
{
	struct floe_error err;
	json_t *in = NULL;
	struct store *s;

	floe_error_clear(&err);
	s = mgmt_open(req);
	if (s == NULL)
		return;
	json_t *out = NULL;
	struct table_env env = handler_env(req);
	if (http_body_json(req, &in, &err))
		out = mgmt_role_create(s, &env, in, &err);
	handler_release(req, s);
	if (out != NULL)
		mgmt_cache_clear(req);
	handler_answer(req, 201, out, &err);
	json_decref(in);
}

void handle_mgmt_role_update(struct http_request *req)
{
	struct floe_error err;
	json_t *in = NULL;
	char *role = NULL;
	bool changed = false;
	struct store *s;

	floe_error_clear(&err);
	s = mgmt_open(req);
	if (s == NULL)
		return;
	json_t *out = NULL;
	struct table_env env = handler_env(req);
	if (mgmt_param(req, "role", &role, &err) && http_body_json(req, &in, &err))
		out = mgmt_role_update(s, &env, role, in, &changed, &err);
	handler_release(req, s);
	/* The issuers' tokens resolved with the old mark are forgotten. */
	if (changed)
		mgmt_cache_clear(req);
	handler_answer(req, 200, out, &err);
	json_decref(in);
	free(role);
}

void handle_mgmt_role_list(struct http_request *req)
{
	mgmt_list(req, mgmt_role_list);
}

void handle_mgmt_role_delete(struct http_request *req)
{
	struct floe_error err;
	char *role = NULL;
	struct store *s;

	floe_error_clear(&err);
	s = mgmt_open(req);
	if (s == NULL)
		return;
	struct table_env env = handler_env(req);
	bool ok = mgmt_param(req, "role", &role, &err) && mgmt_role_delete(s, &env, role, &err);
	handler_release(req, s);
	if (ok)
		mgmt_cache_clear(req);
	handler_answer_done(req, ok, &err);
	free(role);
}

static void member_set(struct http_request *req, bool add)
{
	struct floe_error err;
	char *role = NULL;
	char *principal = NULL;
	bool changed = false;
	struct store *s;

	floe_error_clear(&err);
	s = mgmt_open(req);
	if (s == NULL)
		return;
	struct table_env env = handler_env(req);
	bool ok = mgmt_param(req, "role", &role, &err) &&
		  mgmt_param(req, "principal", &principal, &err) &&
		  mgmt_member_set(s, &env, role, principal, add, &changed, &err);
	handler_release(req, s);
	if (changed)
		mgmt_cache_clear(req);
	handler_answer_done(req, ok, &err);
	free(role);
	free(principal);
}

void handle_mgmt_member_add(struct http_request *req)
{
	member_set(req, true);
}

void handle_mgmt_member_remove(struct http_request *req)
{
	member_set(req, false);
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

static void grant_set(struct http_request *req, bool add)
{
	struct floe_error err;
	json_t *in = NULL;
	char *role = NULL;
	bool changed = false;
	struct store *s;

	floe_error_clear(&err);
	s = mgmt_open(req);
	if (s == NULL)
		return;
	json_t *out = NULL;
	struct table_env env = handler_env(req);
	if (mgmt_param(req, "role", &role, &err) && http_body_json(req, &in, &err) &&
	    grant_warehouse(req, s, in, &env, &err))
		out = mgmt_grant_set(s, &env, role, in, add, &changed, &err);
	handler_release(req, s);
	if (changed)
		mgmt_cache_clear(req);
	handler_answer(req, add && changed ? 201 : 200, out, &err);
	free(role);
	json_decref(in);
}

void handle_mgmt_grant_add(struct http_request *req)
{
	grant_set(req, true);
}

void handle_mgmt_grant_revoke(struct http_request *req)
{
	grant_set(req, false);
}

void handle_mgmt_grant_list(struct http_request *req)
{
	struct floe_error err;
	char *role = NULL;
	char *token = NULL;
	char *size = NULL;
	struct store *s;

	floe_error_clear(&err);
	s = mgmt_open(req);
	if (s == NULL)
		return;
	json_t *out = NULL;
	if (mgmt_param(req, "role", &role, &err) && http_query(req, "pageToken", &token, &err) &&
	    http_query(req, "pageSize", &size, &err))
		out = mgmt_grant_list(s, role, token, size, &err);
	handler_release(req, s);
	handler_answer(req, 200, out, &err);
	free(role);
	free(token);
	free(size);
}
