/*
 * router.c - the route table and the matcher. Paths are compared segment
 * by segment on the raw (still percent-encoded) path, so an encoded '/'
 * inside a namespace level never splits a segment.
 */
#include "router.h"

#include <string.h>

#include "auth.h"
#include "handlers.h"
#include "handlers_management.h"
#include "metric.h"

static const struct route routes[] = {
	{ "GET", "/health", handle_health, false },
	{ "GET", "/ready", handle_ready, false },
	{ "GET", "/metrics", handle_metrics, false },
	{ "GET", "/v1/config", handle_config, false },
	{ "POST", "/v1/oauth/tokens", handle_oauth_tokens, false },
	{ "GET", "/v1/oauth/jwks", handle_oauth_jwks, false },
	{ "GET", "/v1/{prefix}/namespaces", handle_ns_list, true },
	{ "POST", "/v1/{prefix}/namespaces", handle_ns_create, true },
	{ "GET", "/v1/{prefix}/namespaces/{namespace}", handle_ns_load, true },
	{ "HEAD", "/v1/{prefix}/namespaces/{namespace}", handle_ns_exists, true },
	{ "DELETE", "/v1/{prefix}/namespaces/{namespace}", handle_ns_drop, true },
	{ "POST", "/v1/{prefix}/namespaces/{namespace}/properties", handle_ns_update_properties,
	  true },
	{ "GET", "/v1/{prefix}/namespaces/{namespace}/tables", handle_table_list, true },
	{ "POST", "/v1/{prefix}/namespaces/{namespace}/tables", handle_table_create, true },
	{ "POST", "/v1/{prefix}/namespaces/{namespace}/register", handle_table_register, true },
	{ "GET", "/v1/{prefix}/namespaces/{namespace}/tables/{table}", handle_table_load, true },
	{ "POST", "/v1/{prefix}/namespaces/{namespace}/tables/{table}", handle_table_commit, true },
	{ "DELETE", "/v1/{prefix}/namespaces/{namespace}/tables/{table}", handle_table_drop, true },
	{ "HEAD", "/v1/{prefix}/namespaces/{namespace}/tables/{table}", handle_table_exists, true },
	{ "POST", "/v1/{prefix}/namespaces/{namespace}/tables/{table}/metrics",
	  handle_table_metrics, true },
	{ "GET", "/v1/{prefix}/namespaces/{namespace}/tables/{table}/credentials",
	  handle_table_credentials, true },
	{ "POST", "/v1/{prefix}/namespaces/{namespace}/tables/{table}/sign", handle_table_sign,
	  true },
	{ "POST", "/v1/{prefix}/tables/rename", handle_table_rename, true },
	{ "POST", "/v1/{prefix}/transactions/commit", handle_transaction_commit, true },
	{ "GET", "/v1/{prefix}/namespaces/{namespace}/views", handle_view_list, true },
	{ "POST", "/v1/{prefix}/namespaces/{namespace}/views", handle_view_create, true },
	{ "POST", "/v1/{prefix}/namespaces/{namespace}/register-view", handle_view_register, true },
	{ "GET", "/v1/{prefix}/namespaces/{namespace}/views/{view}", handle_view_load, true },
	{ "POST", "/v1/{prefix}/namespaces/{namespace}/views/{view}", handle_view_commit, true },
	{ "DELETE", "/v1/{prefix}/namespaces/{namespace}/views/{view}", handle_view_drop, true },
	{ "HEAD", "/v1/{prefix}/namespaces/{namespace}/views/{view}", handle_view_exists, true },
	{ "POST", "/v1/{prefix}/views/rename", handle_view_rename, true },
	/* floe's extensions */
	{ "GET", "/v1/{prefix}/namespaces/{namespace}/tables/{table}/commits", handle_table_commits,
	  true },
	{ "POST", "/v1/{prefix}/namespaces/{namespace}/tables/{table}/undrop", handle_table_undrop,
	  true },
	{ "GET", "/v1/{prefix}/namespaces/{namespace}/dropped-tables", handle_dropped_list, true },
	{ "GET", "/v1/{prefix}/namespaces/{namespace}/tables/{table}/refs", handle_refs_list,
	  true },
	{ "POST", "/v1/{prefix}/namespaces/{namespace}/tables/{table}/refs", handle_refs_create,
	  true },
	{ "GET", "/v1/{prefix}/namespaces/{namespace}/tables/{table}/refs/{ref}", handle_refs_get,
	  true },
	{ "DELETE", "/v1/{prefix}/namespaces/{namespace}/tables/{table}/refs/{ref}",
	  handle_refs_drop, true },
	{ "POST", "/v1/{prefix}/namespaces/{namespace}/tables/{table}/refs/{ref}/fast-forward",
	  handle_refs_fast_forward, true },
	{ "GET", "/v1/{prefix}/namespaces/{namespace}/tables/{table}/wap", handle_wap_list, true },
	{ "POST", "/v1/{prefix}/namespaces/{namespace}/tables/{table}/wap", handle_wap_stage,
	  true },
	{ "GET", "/v1/{prefix}/namespaces/{namespace}/tables/{table}/wap/{run}", handle_wap_get,
	  true },
	{ "DELETE", "/v1/{prefix}/namespaces/{namespace}/tables/{table}/wap/{run}",
	  handle_wap_abandon, true },
	{ "POST", "/v1/{prefix}/namespaces/{namespace}/tables/{table}/wap/{run}/publish",
	  handle_wap_publish, true },
	{ "GET", "/v1/{prefix}/releases", handle_releases_list, true },
	{ "POST", "/v1/{prefix}/releases", handle_releases_create, true },
	{ "GET", "/v1/{prefix}/releases/{release}", handle_release_get, true },
	{ "DELETE", "/v1/{prefix}/releases/{release}", handle_release_abandon, true },
	{ "POST", "/v1/{prefix}/releases/{release}/tables", handle_release_add, true },
	{ "POST", "/v1/{prefix}/releases/{release}/publish", handle_release_publish, true },
	{ "GET", "/v1/{prefix}/audit-hooks", handle_hooks_list, true },
	{ "POST", "/v1/{prefix}/audit-hooks", handle_hooks_create, true },
	{ "GET", "/v1/{prefix}/audit-hooks/{id}", handle_hooks_get, true },
	{ "DELETE", "/v1/{prefix}/audit-hooks/{id}", handle_hooks_delete, true },
	{ "POST", "/v1/{prefix}/events", handle_events_query, true },
	{ "GET", "/v1/{prefix}/event-subscriptions", handle_subscriptions_list, true },
	{ "POST", "/v1/{prefix}/event-subscriptions", handle_subscriptions_create, true },
	{ "GET", "/v1/{prefix}/event-subscriptions/{id}", handle_subscription_get, true },
	{ "DELETE", "/v1/{prefix}/event-subscriptions/{id}", handle_subscription_delete, true },
	{ "POST", "/v1/{prefix}/event-subscriptions/{id}/resume", handle_subscription_resume,
	  true },
	{ "GET", "/v1/{prefix}/audit-log", handle_audit_log, true },
	{ "GET", "/v1/{prefix}/audit-log/verify", handle_audit_verify, true },
	{ "GET", "/v1/{prefix}/audit-log/checkpoints", handle_audit_checkpoints, true },
	{ "POST", "/v1/{prefix}/audit-log/checkpoints", handle_audit_checkpoint_create, true },
	{ "GET", "/v1/{prefix}/purges", handle_purges_list, true },
	{ "POST", "/v1/{prefix}/controls/{action}", handle_control, true },
	/* the management API (docs/auth.md): not Iceberg catalog endpoints */
	{ "POST", "/management/v1/principals", handle_mgmt_principal_create, false },
	{ "GET", "/management/v1/principals", handle_mgmt_principal_list, false },
	{ "GET", "/management/v1/principals/{name}", handle_mgmt_principal_get, false },
	{ "POST", "/management/v1/principals/{name}/disable", handle_mgmt_principal_disable,
	  false },
	{ "POST", "/management/v1/principals/{name}/enable", handle_mgmt_principal_enable, false },
	{ "POST", "/management/v1/principals/{name}/rotate-secret", handle_mgmt_principal_rotate,
	  false },
	{ "GET", "/management/v1/principals/{name}/privileges", handle_mgmt_principal_privileges,
	  false },
	{ "POST", "/management/v1/roles", handle_mgmt_role_create, false },
	{ "GET", "/management/v1/roles", handle_mgmt_role_list, false },
	{ "PATCH", "/management/v1/roles/{role}", handle_mgmt_role_update, false },
	{ "DELETE", "/management/v1/roles/{role}", handle_mgmt_role_delete, false },
	{ "PUT", "/management/v1/roles/{role}/members/{principal}", handle_mgmt_member_add, false },
	{ "DELETE", "/management/v1/roles/{role}/members/{principal}", handle_mgmt_member_remove,
	  false },
	{ "POST", "/management/v1/roles/{role}/grants", handle_mgmt_grant_add, false },
	{ "GET", "/management/v1/roles/{role}/grants", handle_mgmt_grant_list, false },
	{ "POST", "/management/v1/roles/{role}/grants/revoke", handle_mgmt_grant_revoke, false },
};

#define ROUTE_COUNT (sizeof(routes) / sizeof(routes[0]))
_Static_assert(ROUTE_COUNT < METRIC_ROUTE_SLOTS, "a metrics slot for every route");

/* Matches pattern against req's segments; with_prefix decides whether the
 * {prefix} segment is present. Fills req's params on success. */
static bool pattern_match(const char *pattern, bool with_prefix, struct http_request *req)
{
	const char *p = pattern;
	size_t seg = 0;

	req->nparams = 0;
	while (*p == '/') {
		const char *start = p + 1;
		const char *end = strchr(start, '/');
		size_t len = end ? (size_t)(end - start) : strlen(start);
		bool is_param = len > 2 && start[0] == '{' && start[len - 1] == '}';

		p = start + len;
		if (is_param && len == 8 && strncmp(start, "{prefix}", 8) == 0 && !with_prefix)
			continue;
		if (seg >= req->nsegs)
			return false;
		if (is_param) {
			if (req->segs[seg][0] == '\0')
				return false;
			if (req->nparams < HTTP_MAX_PARAMS) {
				/* The name points into the static pattern. */
				req->param_names[req->nparams] = start + 1;
				req->param_name_lens[req->nparams] = len - 2;
				req->param_values[req->nparams] = req->segs[seg];
				req->nparams++;
			}
		} else if (strlen(req->segs[seg]) != len ||
			   strncmp(req->segs[seg], start, len) != 0) {
			return false;
		}
		seg++;
	}
	return seg == req->nsegs;
}

static void allow_add(char *allow, size_t allowlen, const char *method)
{
	if (strstr(allow, method) != NULL)
		return;
	size_t n = strlen(allow);
	(void)snprintf(allow + n, allowlen - n, "%s%s", n ? ", " : "", method);
	/* HEAD is served wherever GET is. */
	if (strcmp(method, "GET") == 0)
		allow_add(allow, allowlen, "HEAD");
}

enum route_result router_match(struct http_request *req, const struct route **route, char *allow,
			       size_t allowlen)
{
	bool path_seen = false;
	bool head = strcmp(req->method, "HEAD") == 0;
	const struct route *get = NULL; /* a HEAD request's GET route */
	bool get_with_prefix = false;

	allow[0] = '\0';
	if (req->too_many_segments)
		return ROUTE_NO_PATH;
	/* Without a prefix first: "/v1/namespaces/x" is namespace x, not the
	 * namespace list under prefix "namespaces". */
	for (int pass = 0; pass < 2; pass++) {
		bool with_prefix = pass == 1;
		for (size_t i = 0; i < ROUTE_COUNT; i++) {
			bool has_prefix = strstr(routes[i].pattern, "{prefix}") != NULL;
			if (with_prefix && !has_prefix)
				continue;
			if (!pattern_match(routes[i].pattern, with_prefix, req))
				continue;
			if (strcmp(routes[i].method, req->method) == 0) {
				*route = &routes[i];
				return ROUTE_FOUND;
			}
			if (head && get == NULL && strcmp(routes[i].method, "GET") == 0) {
				get = &routes[i];
				get_with_prefix = with_prefix;
			}
			path_seen = true;
			allow_add(allow, allowlen, routes[i].method);
		}
	}
	/* HEAD without a route of its own runs the GET route: the same status
	 * and headers, and libmicrohttpd sends no body with a HEAD answer. */
	if (get != NULL && pattern_match(get->pattern, get_with_prefix, req)) {
		*route = get;
		return ROUTE_FOUND;
	}
	req->nparams = 0;
	return path_seen ? ROUTE_BAD_METHOD : ROUTE_NO_PATH;
}

void router_print(FILE *out)
{
	for (size_t i = 0; i < ROUTE_COUNT; i++)
		(void)fprintf(out, "%s %s\n", routes[i].method, routes[i].pattern);
}

json_t *router_endpoints(void)
{
	json_t *arr = json_array();
	char buf[256];

	if (arr == NULL)
		return NULL;
	for (size_t i = 0; i < ROUTE_COUNT; i++) {
		if (!routes[i].advertise)
			continue;
		(void)snprintf(buf, sizeof(buf), "%s %s", routes[i].method, routes[i].pattern);
		if (json_array_append_new(arr, json_string(buf)) != 0) {
			json_decref(arr);
			return NULL;
		}
	}
	return arr;
}

size_t router_count(void)
{
	return ROUTE_COUNT;
}

const struct route *router_at(size_t i)
{
	return i < ROUTE_COUNT ? &routes[i] : NULL;
}

size_t router_slot(const struct route *r)
{
	return r != NULL ? (size_t)(r - routes) + 1 : 0;
}
