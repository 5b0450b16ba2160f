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
#define CORS_METHODS "GET, HEAD, POST, DELETE"
/* Answer headers a page may read besides the simple ones. */
#define CORS_EXPOSE "ETag, Retry-After, X-Request-Id, Idempotency-Replayed"
/* Longest Access-Control-Request-Headers list echoed back. */
#define CORS_MAX_HEADERS_LIST 1024

/* The value of Access-Control-Allow-Origin for req, or NULL when CORS is
 * off, req has no Origin, or its origin is not listed. */
static const char *allowed_origin(struct http_request *req)
{
	const char *list = req->app->cfg->cors_origins;
	const char *origin = http_header(req, "Origin");

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

/* The headers every answer to an allowed origin carries. */
static void add_origin(struct http_request *req, const char *origin)
{
	http_add_header(req, "Access-Control-Allow-Origin", origin);
	/* A listed origin is echoed, so caches must keep answers apart. */
	if (strcmp(origin, "*") != 0)
		http_add_header(req, "Vary", "Origin");
}

bool cors_preflight(struct http_request *req)
{
	if (strcmp(req->method, "OPTIONS") != 0 ||
	    http_header(req, "Access-Control-Request-Method") == NULL)
		return false;
	const char *origin = allowed_origin(req);
	if (origin == NULL)
		return false;
	http_reply_empty(req, 204);
	add_origin(req, origin);
	http_add_header(req, "Access-Control-Allow-Methods", CORS_METHODS);
	const char *asked = http_header(req, "Access-Control-Request-Headers");
	if (asked != NULL && asked[0] != '\0' && header_list_valid(asked))
		http_add_header(req, "Access-Control-Allow-Headers", asked);
	http_add_header(req, "Access-Control-Max-Age", CORS_MAX_AGE);
	return true;
}

void cors_decorate(struct http_request *req)
{
	if (strcmp(req->method, "OPTIONS") == 0 &&
	    http_header(req, "Access-Control-Request-Method") != NULL)
		return; /* a preflight: answered whole by cors_preflight */
	const char *origin = allowed_origin(req);
	if (origin == NULL)
		return;
	add_origin(req, origin);
	http_add_header(req, "Access-Control-Expose-Headers", CORS_EXPOSE);
}
