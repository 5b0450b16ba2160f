/*
 * router.h - the route table: every route floe serves, matched against a
 * request path with and without the optional /v1/{prefix} segment. The
 * same table prints --print-routes and fills /v1/config "endpoints".
 */
#ifndef FLOE_ROUTER_H
#define FLOE_ROUTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <jansson.h>

#include "http.h"

typedef void (*route_handler)(struct http_request *req);

struct route {
	const char *method;
	const char *pattern; /* "/v1/{prefix}/namespaces/{namespace}" */
	route_handler handler;
	bool advertise; /* listed in /v1/config endpoints */
};

enum route_result {
	ROUTE_FOUND,
	ROUTE_NO_PATH,    /* 404 */
	ROUTE_BAD_METHOD, /* 405: allow lists the methods that exist */
};

/* Finds the route for req->method and req->segs; on ROUTE_FOUND fills
 * req's parameters and *route. HEAD finds the GET route of a path that
 * has no HEAD route of its own, and allow lists HEAD wherever GET is. */
enum route_result router_match(struct http_request *req, const struct route **route, char *allow,
			       size_t allowlen);

/* Prints "METHOD PATTERN" for every route, one a line. */
void router_print(FILE *out);

/* The endpoints list of /v1/config: a new JSON array. */
json_t *router_endpoints(void);

#endif
