/*
 * handlers.h - route handlers. Each is run by the gate (gate.h) with its
 * request already authenticated, parsed and authorized, turns it into
 * calls on catalog/ and answers it; none checks a privilege, and none
 * holds SQL or domain rules of its own. The route table (routes.c) names
 * them.
 */
#ifndef FLOE_HANDLERS_H
#define FLOE_HANDLERS_H

#include "gate.h"
#include "http.h"
#include "namespace.h"
#include "table.h"

struct store;

/* Runs fn(arg, NULL) on queue q with req handed on (http_hand_on),
 * borrowing from pool; fn answers and ends with http_async_complete(req). When the queue is
 * full or stopping, fn(arg, err) is called here and now and answers 503 at
 * once. (The gate's, for a route's queue, and call_defer's.) */
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

/* The request's page: pageToken and pageSize as given (new strings, NULL
 * when absent) and parsed into page (page_request_parse; with_token: the
 * token is a namespace listing's). False with err set. */
bool handler_page(struct call *c, bool with_token, struct page_request *page, char **token,
		  char **size, struct floe_error *err) FLOE_WUR;

void handle_health(struct call *c);
void handle_ready(struct call *c);
void handle_metrics(struct call *c); /* prometheus.c */
void handle_config(struct call *c);
void handle_purges_list(struct call *c);

void handle_ns_list(struct call *c);
void handle_ns_create(struct call *c);
void handle_ns_load(struct call *c);
void handle_ns_exists(struct call *c);
void handle_ns_drop(struct call *c);
void handle_ns_update_properties(struct call *c);

/* A lister of names in a namespace (tables_list_text, views_list_text). */
typedef char *(*handler_lister)(struct store *s, const struct principal *who,
				const struct ns_ident *ns, const char *after, long limit,
				size_t *len, struct floe_error *err);

/* GET .../tables and .../views: the page the query asks for. */
void handler_list_names(struct call *c, handler_lister list);

/* The body of a single-object commit (c->body); an identifier in it,
 * when given, must name the path's table or view (what). False with err
 * set. */
bool handler_commit_body(const struct call *c, const char *what, struct floe_error *err) FLOE_WUR;

void handle_view_list(struct call *c);
void handle_view_create(struct call *c);
void handle_view_register(struct call *c);
void handle_view_load(struct call *c);
void handle_view_exists(struct call *c);
void handle_view_commit(struct call *c);
void handle_view_drop(struct call *c);
void handle_view_rename(struct call *c);
void handle_table_list(struct call *c);
void handle_table_create(struct call *c);
void handle_table_register(struct call *c);
void handle_table_load(struct call *c);
void handle_table_exists(struct call *c);
void handle_table_commit(struct call *c);
void handle_table_drop(struct call *c);
void handle_table_rename(struct call *c);
void handle_table_metrics(struct call *c);
void handle_table_credentials(struct call *c);
void handle_table_commits(struct call *c);
void handle_events_query(struct call *c);
void handle_subscriptions_list(struct call *c);
void handle_subscriptions_create(struct call *c);
void handle_subscription_get(struct call *c);
void handle_subscription_delete(struct call *c);
void handle_subscription_resume(struct call *c);
void handle_table_undrop(struct call *c);
void handle_dropped_list(struct call *c);
void handle_table_sign(struct call *c); /* handlers_sign.c */
void handle_transaction_commit(struct call *c);

void handle_refs_list(struct call *c);
void handle_refs_create(struct call *c);
void handle_refs_get(struct call *c);
void handle_refs_drop(struct call *c);
void handle_refs_fast_forward(struct call *c);
void handle_hooks_create(struct call *c);
void handle_hooks_list(struct call *c);
void handle_hooks_get(struct call *c);
void handle_hooks_delete(struct call *c);
void handle_wap_stage(struct call *c);
void handle_wap_publish(struct call *c);
/* releases: write-audit-publish over many tables (handlers_release.c) */
void handle_releases_list(struct call *c);
void handle_releases_create(struct call *c);
void handle_release_get(struct call *c);
void handle_release_abandon(struct call *c);
void handle_release_add(struct call *c);
void handle_release_publish(struct call *c);
void handle_wap_get(struct call *c);
void handle_wap_list(struct call *c);
void handle_wap_abandon(struct call *c);
void handle_audit_log(struct call *c);
void handle_audit_verify(struct call *c);
void handle_audit_checkpoints(struct call *c);
void handle_audit_checkpoint_create(struct call *c);
void handle_control(struct call *c);

#endif
