/*
 * cors.h - Cross-Origin Resource Sharing, for browser clients such as
 * iceberg-js. Off unless --cors-origins lists origins (or "*"): then an
 * allowed origin's preflight is answered and its answers carry the CORS
 * headers; any other origin gets none, and the browser keeps the answer
 * from the page. Pure: http.c hands in the request's headers and adds the
 * headers this answers with.
 */
#ifndef FLOE_CORS_H
#define FLOE_CORS_H

#include <stdbool.h>
#include <stddef.h>

/* The most headers one answer gets from CORS. */
#define CORS_MAX_HEADERS 5

struct cors_header {
	const char *name;
	const char *value; /* static, or one of the request's values */
};

/* What a request asks of CORS: its method and the headers that matter
 * (each NULL when absent). */
struct cors_request {
	const char *method;
	const char *origin;
	const char *request_method;  /* Access-Control-Request-Method */
	const char *request_headers; /* Access-Control-Request-Headers */
};

/* True when req is a preflight (OPTIONS with Access-Control-Request-Method). */
bool cors_is_preflight(const struct cors_request *req);

/* The CORS headers of req's answer under allowed (--cors-origins): for an
 * allowed origin's preflight, the 204 answer's headers (the methods, the
 * headers asked for, how long a browser may cache it); for any other
 * request from an allowed origin, Access-Control-Allow-Origin and
 * Access-Control-Expose-Headers. Fills out and returns how many; 0 when
 * CORS is off or the origin is not allowed (a preflight then goes to the
 * router like any request). */
size_t cors_headers(const char *allowed, const struct cors_request *req,
		    struct cors_header out[CORS_MAX_HEADERS]);

#endif
