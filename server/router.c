/*
 * router.c - the matcher of the route table (routes.c) and its printing.
 * Paths are compared segment by segment on the raw (still percent-encoded)
 * path, so an encoded '/' inside a namespace level never splits a segment.
 */
#include "router.h"

#include <stdlib.h>
#include <string.h>

#include "authz.h"

#define routes routes_table
#define ROUTE_COUNT routes_table_len

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

static const char *access_name(enum route_access a)
{
	switch (a) {
	case ROUTE_PUBLIC:
		return "public";
	case ROUTE_PUBLIC_IF:
		return "public-if-configured";
	case ROUTE_PRINCIPAL:
		return "any-principal";
	case ROUTE_PRIVILEGED:
		break;
	}
	return "privileged";
}

static const char *object_name(enum route_object on)
{
	static const char *const names[] = {
		[ROUTE_ON_NONE] = "-",
		[ROUTE_ON_CATALOG] = "catalog",
		[ROUTE_ON_NAMESPACE] = "namespace",
		[ROUTE_ON_TABLE] = "table",
		[ROUTE_ON_LISTING] = "listing",
		[ROUTE_ON_FILTER] = "filter",
		[ROUTE_ON_BODY] = "body",
		[ROUTE_ON_HOOK] = "hook-scope",
		[ROUTE_ON_MEMBERS] = "release-members",
	};
	return (size_t)on < sizeof(names) / sizeof(names[0]) ? names[on] : "?";
}

static const char *queue_name(enum route_queue q)
{
	switch (q) {
	case ROUTE_QUEUE_COMMIT:
		return "commit";
	case ROUTE_QUEUE_PUBLISH:
		return "publish";
	case ROUTE_QUEUE_INLINE:
		return "inline";
	case ROUTE_QUEUE_REQUEST:
		break;
	}
	return "request";
}

/* The route's privileges as names into a new JSON array. */
static json_t *need_names(const struct route *r)
{
	json_t *arr = json_array();

	for (int p = 0; arr != NULL && p < PRIV_COUNT; p++) {
		if ((r->need & ACCESS_BIT(p)) &&
		    json_array_append_new(arr, json_string(privilege_name((enum privilege)p))) !=
			    0) {
			json_decref(arr);
			return NULL;
		}
	}
	return arr;
}

/* One route as a JSON object (new reference; NULL when out of memory). */
static json_t *route_json(const struct route *r)
{
	json_t *flags = json_array();
	static const struct {
		unsigned bit;
		const char *name;
	} names[] = {
		{ ROUTE_ADVERTISE, "advertised" },
		{ ROUTE_BODY, "body" },
		{ ROUTE_BODY_OPT, "optional-body" },
		{ ROUTE_MUTATES, "mutating" },
		{ ROUTE_IDEM_IN_TX, "idempotent-in-transaction" },
		{ ROUTE_ANY_OF, "any-of" },
	};

	for (size_t i = 0; flags != NULL && i < sizeof(names) / sizeof(names[0]); i++) {
		if ((r->flags & names[i].bit) &&
		    json_array_append_new(flags, json_string(names[i].name)) != 0) {
			json_decref(flags);
			flags = NULL;
		}
	}
	json_t *need = need_names(r);
	if (flags == NULL || need == NULL) {
		json_decref(flags);
		json_decref(need);
		return NULL;
	}
	/* Absent words are null, so every row has every key. */
	json_t *demands = r->demands_doc != NULL ? json_string(r->demands_doc) : json_null();
	json_t *audit = r->audit != NULL ? json_string(r->audit) : json_null();
	return json_pack("{s:s, s:s, s:s, s:o, s:s, s:o, s:s, s:o, s:o}", "method", r->method,
			 "path", r->pattern, "access", access_name(r->access), "privileges", need,
			 "object", object_name(r->on), "demands", demands, "queue",
			 queue_name(r->queue), "flags", flags, "audit-event", audit);
}

void router_print(FILE *out, bool json)
{
	if (json) {
		json_t *all = json_array();
		for (size_t i = 0; all != NULL && i < ROUTE_COUNT; i++) {
			if (json_array_append_new(all, route_json(&routes[i])) != 0) {
				json_decref(all);
				all = NULL;
			}
		}
		char *text = all != NULL ? json_dumps(all, JSON_INDENT(1)) : NULL;
		json_decref(all);
		if (text != NULL)
			(void)fprintf(out, "%s\n", text);
		free(text);
		return;
	}
	for (size_t i = 0; i < ROUTE_COUNT; i++) {
		const struct route *r = &routes[i];
		char need[512] = "";
		size_t n = 0;
		for (int p = 0; p < PRIV_COUNT; p++) {
			if ((r->need & ACCESS_BIT(p)) == 0 || n >= sizeof(need))
				continue;
			/* "A|B": either; "A,B": both. */
			const char *sep = (r->flags & ROUTE_ANY_OF) ? "|" : ",";
			int w = snprintf(need + n, sizeof(need) - n, "%s%s", n ? sep : "",
					 privilege_name((enum privilege)p));
			if (w > 0)
				n += (size_t)w;
		}
		if (r->access != ROUTE_PRIVILEGED)
			(void)snprintf(need, sizeof(need), "%s", access_name(r->access));
		else if (r->demands != NULL && n < sizeof(need))
			(void)snprintf(need + n, sizeof(need) - n, "%sfrom-body", n ? "+" : "");
		(void)fprintf(out, "%-6s %-70s %-34s %s\n", r->method, r->pattern, need,
			      object_name(r->on));
	}
}

json_t *router_endpoints(void)
{
	json_t *arr = json_array();
	char buf[256];

	if (arr == NULL)
		return NULL;
	for (size_t i = 0; i < ROUTE_COUNT; i++) {
		if ((routes[i].flags & ROUTE_ADVERTISE) == 0)
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
