/*
 * fuzz_router.c - libFuzzer target for routing: "METHOD PATH" (the first
 * space splits them) through the segment split and the route table. A
 * match names the asked method, and its pattern with the parameters put
 * back gives the path again; a refused method lists what the path allows.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "http.h"
#include "router.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The path a route's pattern spells with req's parameters ({prefix} left
 * out when it was not matched); a new string, NULL when a parameter is
 * missing. */
static char *pattern_fill(const char *pattern, const struct http_request *req, size_t cap)
{
	char *out = calloc(1, cap + 1);
	size_t n = 0;

	if (out == NULL)
		return NULL;
	for (const char *p = pattern; *p == '/';) {
		const char *start = p + 1;
		const char *end = strchr(start, '/');
		size_t len = end ? (size_t)(end - start) : strlen(start);
		const char *piece = start;
		size_t plen = len;
		char name[32];

		p = start + len;
		if (len > 2 && start[0] == '{' && start[len - 1] == '}') {
			if (len - 2 >= sizeof(name))
				abort();
			memcpy(name, start + 1, len - 2);
			name[len - 2] = '\0';
			piece = http_param(req, name);
			if (piece == NULL && strcmp(name, "prefix") == 0)
				continue;
			if (piece == NULL) {
				free(out);
				return NULL;
			}
			plen = strlen(piece);
		}
		if (n + 1 + plen > cap) {
			free(out);
			return NULL;
		}
		out[n++] = '/';
		memcpy(out + n, piece, plen);
		n += plen;
	}
	return out;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *in = malloc(size + 2);
	struct http_request req;
	const struct route *route = NULL;
	char allow[256];

	if (in == NULL)
		return 0;
	memcpy(in, data, size);
	in[size] = '\0';
	char *space = memchr(in, ' ', size);
	if (space == NULL || memchr(in, '\0', size) != NULL) {
		free(in);
		return 0;
	}
	*space = '\0';
	const char *method = in;
	char *path = space + 1;

	memset(&req, 0, sizeof(req));
	req.method = method;
	req.path = path;
	req.segbuf = strdup(path);
	if (req.segbuf == NULL) {
		free(in);
		return 0;
	}
	http_split_segments(&req);
	if (req.nsegs > HTTP_MAX_SEGMENTS)
		abort();
	for (size_t i = 0; i < req.nsegs; i++)
		if (strchr(req.segs[i], '/') != NULL)
			abort(); /* a segment never holds a '/' */

	switch (router_match(&req, &route, allow, sizeof(allow))) {
	case ROUTE_FOUND: {
		/* HEAD without a route of its own is answered by the GET route. */
		bool head_by_get = strcmp(method, "HEAD") == 0 && route != NULL &&
				   strcmp(route->method, "GET") == 0;
		if (route == NULL || (strcmp(route->method, method) != 0 && !head_by_get) ||
		    route->handler == NULL)
			abort();
		if (req.nparams > HTTP_MAX_PARAMS)
			abort();
		for (size_t i = 0; i < req.nparams; i++)
			if (req.param_values[i][0] == '\0')
				abort(); /* a parameter is never empty */
		char *back = pattern_fill(route->pattern, &req, strlen(path) + 1);
		const char *want = path[0] == '/' ? path : NULL;
		/* A path without its leading '/' splits like one with it. */
		if (back == NULL ||
		    (want != NULL ? strcmp(back, want) != 0 : strcmp(back + 1, path) != 0))
			abort();
		free(back);
		break;
	}
	case ROUTE_BAD_METHOD:
		if (allow[0] == '\0')
			abort(); /* the path exists, so some method is allowed */
		break;
	case ROUTE_NO_PATH:
		break;
	default:
		abort();
	}
	free(req.segbuf);
	free(in);
	return 0;
}
