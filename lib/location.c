/*
 * location.c - the canonical form of table locations. Lexical only: "a/.."
 * is removed as text, the way the location is then used for every file
 * floe reads, writes or purges, so the name compared is the name used.
 */
#include "location.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* The path part of a location, or NULL when the location is not local. */
static const char *local_part(const char *loc, struct floe_error *err)
{
	if (loc[0] == '/')
		return loc;
	if (strncasecmp(loc, "file:", 5) != 0) {
		floe_err(
			err, FE_BAD_REQUEST,
			"location %.200s is not supported: floe stores tables on local storage (file://)",
			loc);
		return NULL;
	}
	const char *p = loc + 5;
	if (p[0] == '/' && p[1] == '/') {
		/* file://authority/path: only no authority or localhost */
		const char *host = p + 2;
		const char *end = strchr(host, '/');
		size_t hl = end ? (size_t)(end - host) : strlen(host);
		if (hl != 0 && !(hl == 9 && strncasecmp(host, "localhost", 9) == 0)) {
			floe_err(
				err, FE_BAD_REQUEST,
				"location %.200s names a host: floe stores tables on local storage only",
				loc);
			return NULL;
		}
		p = host + hl;
	}
	if (p[0] != '/') {
		floe_err(err, FE_BAD_REQUEST, "location %.200s must be an absolute path", loc);
		return NULL;
	}
	return p;
}

char *location_canonical(const char *location, struct floe_error *err)
{
	const char *p;
	char *out = NULL;
	size_t n = 0;

	if (location == NULL || location[0] == '\0') {
		floe_err(err, FE_BAD_REQUEST, "no location");
		return NULL;
	}
	p = local_part(location, err);
	if (p == NULL)
		return NULL;
	size_t plen = strlen(p);
	if (plen >= LOCATION_MAX) {
		floe_err(err, FE_BAD_REQUEST, "location is longer than %d bytes", LOCATION_MAX);
		return NULL;
	}
	/* "file://" + the path, which only shrinks. */
	out = malloc(plen + sizeof("file://") + 1);
	if (out == NULL) {
		floe_err(err, FE_INTERNAL, "out of memory");
		return NULL;
	}
	memcpy(out, "file://", 7);
	char *path = out + 7;
	while (*p != '\0') {
		while (*p == '/')
			p++;
		if (*p == '\0')
			break;
		const char *end = strchr(p, '/');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		if (len == 1 && p[0] == '.') {
			/* the same directory */
		} else if (len == 2 && p[0] == '.' && p[1] == '.') {
			if (n == 0) {
				free(out);
				floe_err(err, FE_BAD_REQUEST,
					 "location %.200s climbs above '/' with '..'", location);
				return NULL;
			}
			while (n > 0 && path[n - 1] != '/')
				n--;
			n--; /* the '/' before the removed segment */
		} else {
			path[n++] = '/';
			memcpy(path + n, p, len);
			n += len;
		}
		p += len;
	}
	if (n == 0)
		path[n++] = '/';
	path[n] = '\0';
	/* The stored form is the bound: a bare path just under it grows by
	 * "file://". */
	if (7 + n > LOCATION_MAX) {
		free(out);
		floe_err(err, FE_BAD_REQUEST, "location is longer than %d bytes", LOCATION_MAX);
		return NULL;
	}
	return out;
}

const char *location_path(const char *canonical)
{
	return strncmp(canonical, "file://", 7) == 0 ? canonical + 7 : canonical;
}

bool location_within(const char *inner, const char *outer)
{
	const char *i = location_path(inner);
	const char *o = location_path(outer);
	size_t ol = strlen(o);

	if (strcmp(o, "/") == 0)
		return true;
	return strncmp(i, o, ol) == 0 && (i[ol] == '\0' || i[ol] == '/');
}

bool location_overlaps(const char *a, const char *b)
{
	return location_within(a, b) || location_within(b, a);
}

bool location_same(const char *a, const char *b)
{
	struct floe_error ignored;
	char *ca = location_canonical(a, &ignored);
	char *cb = ca != NULL ? location_canonical(b, &ignored) : NULL;
	bool same = cb != NULL && strcmp(ca, cb) == 0;

	free(ca);
	free(cb);
	return same;
}
