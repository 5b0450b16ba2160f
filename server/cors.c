/*
 * cors.c - Cross-Origin Resource Sharing (cors.h): which origins are
 * allowed, the preflight answer and the headers of every other answer.
 */
#include "cors.h"

#include <string.h>
#include <strings.h>

/* How long a browser may cache a preflight answer, in seconds. */
#define CORS_MAX_AGE "600"
/* The methods floe serves. */
#define CORS_METHODS "GET, HEAD, POST, PUT, PATCH, DELETE"
/* Answer headers a page may read besides the simple ones. */
#define CORS_EXPOSE "ETag, Retry-After, X-Request-Id, Idempotency-Replayed"
/* Longest Access-Control-Request-Headers list echoed back. */
#define CORS_MAX_HEADERS_LIST 1024

/* The value of Access-Control-Allow-Origin for origin, or NULL when CORS
 * is off, there is no origin, or it is not listed. */
static const char *allowed_origin(const char *list, const char *origin)
{
	if (list == NULL || list[0] == '\0' || origin == NULL || origin[0] == '\0')
		return NULL;
	if (strcmp(list, "*") == 0)
		return "*";
	size_t olen = strlen(origin);
	for (const char *p = list; *p != '\0';) {
		while (*p == ' ' || *p == ',')
			p++;
		size_t len = strcspn(p, ", ");
		/* Scheme and host are case-insensitive. */
		if (len > 0 && len == olen && strncasecmp(p, origin, len) == 0)
			return origin;
		p += len;
	}
	return NULL;
}

/* Whether a header list a browser asks for is plain header names. */
static bool header_list_valid(const char *list)
{
	size_t len = strlen(list);

	if (len > CORS_MAX_HEADERS_LIST)
		return false;
	for (size_t i = 0; i < len; i++) {
		char c = list[i];
		bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			  (c >= '0' && c <= '9') || c == '-' || c == '_' || c == ',' || c == ' ';
		if (!ok)
			return false;
	}
	return true;
}

bool cors_is_preflight(const struct cors_request *req)
{
	return strcmp(req->method, "OPTIONS") == 0 && req->request_method != NULL;
}

size_t cors_headers(const char *allowed, const struct cors_request *req,
		    struct cors_header out[CORS_MAX_HEADERS])
{
	const char *origin = allowed_origin(allowed, req->origin);
	size_t n = 0;

	if (origin == NULL)
		return 0;
	out[n++] = (struct cors_header){ "Access-Control-Allow-Origin", origin };
	/* A listed origin is echoed, so caches must keep answers apart. */
	if (strcmp(origin, "*") != 0)
		out[n++] = (struct cors_header){ "Vary", "Origin" };
	if (!cors_is_preflight(req)) {
		out[n++] = (struct cors_header){ "Access-Control-Expose-Headers", CORS_EXPOSE };
		return n;
	}
	out[n++] = (struct cors_header){ "Access-Control-Allow-Methods", CORS_METHODS };
	const char *asked = req->request_headers;
	if (asked != NULL && asked[0] != '\0' && header_list_valid(asked))
		out[n++] = (struct cors_header){ "Access-Control-Allow-Headers", asked };
	out[n++] = (struct cors_header){ "Access-Control-Max-Age", CORS_MAX_AGE };
	return n;
}
