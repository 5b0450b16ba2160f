/*
 * handlers.h - route handlers. Each turns one HTTP request into calls on
 * catalog/ and answers it; none holds SQL or domain rules of its own.
 */
#ifndef FLOE_HANDLERS_H
#define FLOE_HANDLERS_H

#include "http.h"
#include "access.h"
#include "table.h"

struct store;

/* Borrows a database connection from the pool of the thread the request
 * runs on, or answers 503 and returns NULL. */
struct store *handler_acquire(struct http_request *req);

/* The usual start of a handler: parsed tells whether the request's
 * parameters were read; when they were, borrows a connection as
 * handler_acquire does, and when not, answers err. NULL when the request
 * has been answered. */
struct store *handler_open(struct http_request *req, bool parsed, const struct floe_error *err);

/* Gives the connection back. */
void handler_release(struct http_request *req, struct store *s);

/* Runs fn(arg, NULL) on a commit thread with req suspended, borrowing
 * from the commit threads' pool; fn answers and ends with
 * http_async_complete(req). When the queue is full or stopping, fn(arg,
 * err) is called here and now and answers 503 at once. */
void handler_defer(struct http_request *req, workq_fn fn, void *arg);

/* The same on queue q, borrowing from pool. */
void handler_defer_to(struct http_request *req, struct workq *q, struct store_pool *pool,
		      workq_fn fn, void *arg);

/* Answers a deferred request its queue refused (full, or shutting down)
 * with 503 from the calling thread; the job then ends as usual with
 * http_async_complete(req). */
void handler_refuse(struct http_request *req, const struct floe_error *refused);

/* Answers body with status (204: no body), or err when body is NULL.
 * Steals body. */
void handler_answer(struct http_request *req, int status, json_t *body,
		    const struct floe_error *err);

/* Answers 204 when ok, else err. */
void handler_answer_done(struct http_request *req, bool ok, const struct floe_error *err);

/* The request's principal for authz_check (catalog/authz.h), or NULL
 * when authentication is off or the route is public. */
const struct principal *handler_principal(struct http_request *req);

/* Whether the request's principal holds priv on the table ns.name, on
 * the namespace ns (name NULL) or on the catalog (ns NULL); true with
 * authentication off. When not, gives s back and answers the 403 naming
 * the privilege and the object (or the store's failure). */
bool handler_allowed(struct http_request *req, struct store *s, enum privilege priv,
		     const struct ns_ident *ns, const char *name);

/* The same for a set of privileges (catalog/access.h) on obj. */
bool handler_allowed_all(struct http_request *req, struct store *s, access_set needs,
			 const struct authz_object *obj);

/* Parses {namespace} and {table} from the path (*name new, ns owned);
 * false with err set when either is malformed. (handlers_table.c) */
bool handler_table_params(struct http_request *req, struct ns_ident *ns, char **name,
			  struct floe_error *err);

/* Whether --s3-remote-signing is on and the client's
 * X-Iceberg-Access-Delegation names remote-signing. (handlers_sign.c) */
bool handler_sign_wanted(struct http_request *req);

/* Adds to config (a JSON object) the remote-signing keys for table
 * ns.name when handler_sign_wanted; false only when out of memory.
 * (handlers_sign.c) */
bool handler_sign_config(struct http_request *req, const struct ns_ident *ns, const char *name,
			 json_t *config, struct floe_error *err);

/* What table operations need to know about this request's deployment. */
struct table_env handler_env(struct http_request *req);

/* The request's warehouse, whose catalog its connections use: "" the
 * default one (no prefix, or the default warehouse's), else the name of
 * a warehouse of --warehouses. */
const char *handler_warehouse_name(const struct http_request *req);

/* The warehouse name names (its name or location, as a {prefix}): *key
 * "" for the default one, else its name (for system_use). False with
 * 404 NoSuchWarehouseException when it names none. */
bool handler_warehouse_named(const struct http_request *req, const char *name, const char **key,
			     struct floe_error *err) FLOE_WUR;

/* The request's warehouse's location (canonical). */
const char *handler_warehouse_location(const struct http_request *req);

void handle_health(struct http_request *req);
void handle_ready(struct http_request *req);
void handle_metrics(struct http_request *req); /* prometheus.c */
void handle_config(struct http_request *req);
void handle_purges_list(struct http_request *req);

void handle_ns_list(struct http_request *req);
void handle_ns_create(struct http_request *req);
void handle_ns_load(struct http_request *req);
void handle_ns_exists(struct http_request *req);
void handle_ns_drop(struct http_request *req);
void handle_ns_update_properties(struct http_request *req);

/* Parses {namespace} and the path parameter param (a table's or a
 * view's name; what names it in errors) from the path. */
bool handler_object_params(struct http_request *req, const char *param, const char *what,
			   struct ns_ident *ns, char **name, struct floe_error *err) FLOE_WUR;

/* A lister of names in a namespace (tables_list_text, views_list_text). */
typedef char *(*handler_lister)(struct store *s, const struct principal *who,
				const struct ns_ident *ns, const char *after, long limit,
				size_t *len, struct floe_error *err);

/* GET .../tables and .../views: the page the query asks for. */
void handler_list_names(struct http_request *req, handler_lister list);

/* The body of a single-object commit (json, new reference); an
 * identifier in it, when given, must name the path's table or view (what).
 * NULL with err set. */
json_t *handler_commit_body(struct http_request *req, const struct ns_ident *ns, const char *name,
			    const char *what, struct floe_error *err);

void handle_view_list(struct http_request *req);
void handle_view_create(struct http_request *req);
void handle_view_register(struct http_request *req);
void handle_view_load(struct http_request *req);
void handle_view_exists(struct http_request *req);
void handle_view_commit(struct http_request *req);
void handle_view_drop(struct http_request *req);
void handle_view_rename(struct http_request *req);
void handle_table_list(struct http_request *req);
void handle_table_create(struct http_request *req);
void handle_table_register(struct http_request *req);
void handle_table_load(struct http_request *req);
void handle_table_exists(struct http_request *req);
void handle_table_commit(struct http_request *req);
void handle_table_drop(struct http_request *req);
void handle_table_rename(struct http_request *req);
void handle_table_metrics(struct http_request *req);
void handle_table_credentials(struct http_request *req);
void handle_table_commits(struct http_request *req);
void handle_events_query(struct http_request *req);
void handle_subscriptions_list(struct http_request *req);
void handle_subscriptions_create(struct http_request *req);
void handle_subscription_get(struct http_request *req);
void handle_subscription_delete(struct http_request *req);
void handle_subscription_resume(struct http_request *req);
void handle_table_undrop(struct http_request *req);
void handle_dropped_list(struct http_request *req);
void handle_table_sign(struct http_request *req); /* handlers_sign.c */
void handle_transaction_commit(struct http_request *req);

void handle_refs_list(struct http_request *req);
void handle_refs_create(struct http_request *req);
void handle_refs_get(struct http_request *req);
void handle_refs_drop(struct http_request *req);
void handle_refs_fast_forward(struct http_request *req);
void handle_hooks_create(struct http_request *req);
void handle_hooks_list(struct http_request *req);
void handle_hooks_get(struct http_request *req);
void handle_hooks_delete(struct http_request *req);
void handle_wap_stage(struct http_request *req);
void handle_wap_publish(struct http_request *req);
/* releases: write-audit-publish over many tables (handlers_release.c) */
void handle_releases_list(struct http_request *req);
void handle_releases_create(struct http_request *req);
void handle_release_get(struct http_request *req);
void handle_release_abandon(struct http_request *req);
void handle_release_add(struct http_request *req);
void handle_release_publish(struct http_request *req);
void handle_wap_get(struct http_request *req);
void handle_wap_list(struct http_request *req);
void handle_wap_abandon(struct http_request *req);
void handle_audit_log(struct http_request *req);
void handle_audit_verify(struct http_request *req);
void handle_audit_checkpoints(struct http_request *req);
void handle_audit_checkpoint_create(struct http_request *req);
void handle_control(struct http_request *req);

#endif
