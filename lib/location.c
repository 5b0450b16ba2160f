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
			"location %.200s is not supported: floe stores tables on local storage (file://) or in S3-compatible object storage (s3://)",
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

bool location_bucket_valid(const char *name, size_t len)
{
	if (len < 3 || len > 63)
		return false;
	for (size_t i = 0; i < len; i++) {
		char c = name[i];
		bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
		if (!alnum && !((c == '-' || c == '.') && i > 0 && i + 1 < len))
			return false;
		if (c == '.' && (name[i - 1] == '.' || name[i - 1] == '-' || name[i + 1] == '-'))
			return false;
	}
	return true;
}

/* An s3 location (scheme case-insensitive): *head is the length of its
 * "s3://bucket" head and *rest the path after the bucket. False with err
 * when its bucket is not a valid S3 bucket name; *head is 0 for a
 * location that is not an s3 one. */
static bool s3_part(const char *loc, size_t *head, const char **rest, struct floe_error *err)
{
	*head = 0;
	*rest = NULL;
	if (strncasecmp(loc, "s3://", 5) != 0)
		return true;
	const char *bucket = loc + 5;
	size_t bl = strcspn(bucket, "/");
	if (!location_bucket_valid(bucket, bl))
		return floe_err(
			err, FE_BAD_REQUEST,
			"location %.200s does not name a valid S3 bucket (3-63 lowercase letters, digits, '.' and '-')",
			loc);
	*head = 5 + bl;
	*rest = bucket + bl;
	return true;
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
	/* s3://bucket/key: the bucket is the root, the key a path below it
	 * (treated as local paths are: S3 has no directories, but floe's
	 * rules about what lies within what are the same). */
	size_t head = 0;
	if (!s3_part(location, &head, &p, err))
		return NULL;
	if (head == 0)
		p = local_part(location, err);
	if (p == NULL)
		return NULL;
	size_t plen = strlen(p);
	if (plen >= LOCATION_MAX) {
		floe_err(err, FE_BAD_REQUEST, "location is longer than %d bytes", LOCATION_MAX);
		return NULL;
	}
	/* "file://" or "s3://bucket" + the path, which only shrinks. */
	size_t hl = head > 0 ? head : 7;
	out = malloc(plen + hl + 2);
	if (out == NULL) {
		floe_err(err, FE_INTERNAL, "out of memory");
		return NULL;
	}
	if (head > 0) {
		memcpy(out, "s3://", 5);
		memcpy(out + 5, location + 5, head - 5);
	} else {
		memcpy(out, "file://", 7);
	}
	char *path = out + hl;
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
	if (n == 0 && head == 0)
		path[n++] = '/';
	path[n] = '\0';
	/* The stored form is the bound: a bare path just under it grows by
	 * "file://". */
	if (hl + n > LOCATION_MAX) {
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

bool location_is_s3(const char *canonical)
{
	return strncmp(canonical, "s3://", 5) == 0;
}

bool location_within(const char *inner, const char *outer)
{
	const char *i = location_path(inner);
	const char *o = location_path(outer);
	size_t ol = strlen(o);

	if (strcmp(o, "/") == 0)
		return i[0] == '/';
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
