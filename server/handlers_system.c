/*
 * handlers_system.c - liveness, readiness, /v1/config, and the small
 * helpers every handler shares.
 */
#include "handlers.h"

#include <stdlib.h>
#include <string.h>

#include "auth.h"
#include "idempotency.h"
#include "warehouses.h"
#include "router.h"
#include "system.h"
#include "wording.h"

const char *handler_warehouse_name(const struct http_request *req)
{
	return req->warehouse > 0 ? req->app->cfg->warehouses.items[req->warehouse - 1].name : "";
}

/* The location and local directory of the request's warehouse. */
static void request_warehouse(const struct http_request *req, const char **location,
			      const char **path)
{
	const struct floe_config *cfg = req->app->cfg;

	if (req->warehouse > 0) {
		const struct warehouse *w = &cfg->warehouses.items[req->warehouse - 1];
		*location = w->location;
		*path = w->path;
	} else {
		*location = cfg->warehouse;
		*path = cfg->warehouse_path;
	}
}

const char *handler_warehouse_location(const struct http_request *req)
{
	const char *location, *path;

	request_warehouse(req, &location, &path);
	return location;
}

bool handler_warehouse_named(const struct http_request *req, const char *name, const char **key,
			     struct floe_error *err)
{
	const struct floe_config *cfg = req->app->cfg;
	int w = warehouses_find(&cfg->warehouses, cfg->warehouse_name, cfg->warehouse, name);

	if (w < 0)
		return wording_no_such_warehouse(name, err);
	*key = w > 0 ? cfg->warehouses.items[w - 1].name : "";
	return true;
}

void handler_answer(struct http_request *req, int status, json_t *body,
		    const struct floe_error *err)
{
	if (body == NULL) {
		http_reply_error(req, err);
	} else if (status == 204) {
		json_decref(body);
		http_reply_empty(req, 204);
	} else {
		http_reply_json(req, status, body);
	}
}

void handler_answer_done(struct http_request *req, bool ok, const struct floe_error *err)
{
	if (ok)
		http_reply_empty(req, 204);
	else
		http_reply_error(req, err);
}

void handler_defer_to(struct http_request *req, struct workq *q, struct store_pool *pool,
		      workq_fn fn, void *arg)
{
	struct floe_error err;

	floe_error_clear(&err);
	http_hand_on(req);
	req->pool = pool;
	if (!workq_submit(q, fn, arg, &err))
		fn(arg, &err);
}

void handler_refuse(struct http_request *req, const struct floe_error *refused)
{
	/* Not on a thread of that pool: the request workers' pool is free for
	 * what is left to do (releasing an Idempotency-Key), while the queue's
	 * own pool is likely all busy. */
	req->pool = req->app->pool;
	http_reply_error(req, refused);
}

const struct principal *handler_principal(struct http_request *req)
{
	return req->principal != NULL ? &req->acting : NULL;
}

struct table_env handler_env(struct http_request *req)
{
	struct table_env env = {
		.warehouse_name = handler_warehouse_name(req),
		.request_id = req->request_id,
		.principal = req->principal,
		.client_id = req->client_id,
		.acting = handler_principal(req),
		.locks = req->app->locks,
		.unsettled = req->app->unsettled,
		.hook_policy = req->app->cfg->hook_policy,
		.hook_sealer = req->app->hook_sealer,
		.undrop_retention_s = req->app->cfg->undrop_retention_s,
	};
	request_warehouse(req, &env.warehouse, &env.warehouse_path);
	return env;
}

bool handler_page(struct call *c, bool with_token, struct page_request *page, char **token,
		  char **size, struct floe_error *err)
{
	return http_query(c->req, "pageToken", token, err) &&
	       http_query(c->req, "pageSize", size, err) &&
	       page_request_parse(with_token ? *token : NULL, *size, page, err);
}

void handle_health(struct call *c)
{
	http_reply_json(c->req, 200, json_pack("{s:s}", "status", "ok"));
}

void handle_ready(struct call *c)
{
	struct floe_error err;

	/* From the watch's last check: never waits on the database, nor on a
	 * connection a stalled database holds. */
	if (!system_ready(c->req->app->watch, &err)) {
		http_reply_error(c->req, &err);
		return;
	}
	http_reply_json(c->req, 200, json_pack("{s:s}", "status", "ready"));
}

void handle_config(struct call *c)
{
	struct http_request *req = c->req;
	struct floe_error err;
	char *warehouse = NULL;
	json_t *endpoints = NULL;

	if (!http_query(req, "warehouse", &warehouse, &err)) {
		http_reply_error(req, &err);
		return;
	}
	/* The default warehouse needs no prefix; a further one's (by its
	 * name or URL) is its name. Iceberg's clients read a 404 here as
	 * NoSuchWarehouseException. */
	const struct floe_config *cfg = req->app->cfg;
	int w = 0;
	if (warehouse != NULL && warehouse[0] != '\0') {
		w = warehouses_find(&cfg->warehouses, cfg->warehouse_name, cfg->warehouse,
				    warehouse);
		if (w < 0) {
			wording_no_such_warehouse(warehouse, &err);
			free(warehouse);
			http_reply_error(req, &err);
			return;
		}
	}
	free(warehouse);
	endpoints = router_endpoints();
	if (endpoints == NULL) {
		http_reply_json(req, 500, NULL);
		return;
	}
	/* A client that came with the external issuer's token is told where
	 * that issuer gives tokens, so it refreshes there and not at floe's
	 * own endpoint; one with floe's token is told nothing new. */
	const char *issuer = auth_external_token_endpoint(req);
	json_t *defaults = issuer != NULL ? json_pack("{s:s}", "oauth2-server-uri", issuer)
					  : json_object();
	json_t *overrides = w > 0 ? json_pack("{s:s}", "prefix", cfg->warehouses.items[w - 1].name)
				  : json_object();
	http_reply_json(req, 200,
			json_pack("{s:o, s:o, s:o, s:s}", "defaults", defaults, "overrides",
				  overrides, "endpoints", endpoints, "idempotency-key-lifetime",
				  IDEMPOTENCY_LIFETIME));
}
