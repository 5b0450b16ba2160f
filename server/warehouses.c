/*
 * warehouses.c - the warehouses file: parsed with jansson, every entry
 * checked before floe serves anything, so a mistake stops the start with
 * a message naming the warehouse and the field.
 */
#include "warehouses.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "error.h"
#include "location.h"
#include "log.h"

/* The parsers' failure, into their errbuf. */
#define FAIL(...) floe_errbuf(errbuf, errlen, __VA_ARGS__)

bool warehouses_name_valid(const char *name)
{
	/* The words that follow /v1/ in a route: a warehouse named so would
	 * read as that route without a prefix. */
	static const char *const reserved[] = { "namespaces", "tables",      "transactions",
						"views",      "audit-hooks", "audit-log",
						"purges",     "controls",    "config",
						"oauth" };
	size_t len = strlen(name);

	if (len == 0 || len > 64 || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
		return false;
	if (strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") !=
	    len)
		return false;
	for (size_t i = 0; i < sizeof(reserved) / sizeof(reserved[0]); i++) {
		if (strcmp(name, reserved[i]) == 0)
			return false;
	}
	return true;
}

/* http(s)://host[:port], nothing more (as --s3-endpoint). */
static bool endpoint_valid(const char *e)
{
	size_t scheme = strncmp(e, "https://", 8) == 0 ? 8 : strncmp(e, "http://", 7) == 0 ? 7 : 0;
	size_t len = strlen(e);

	if (scheme == 0 || len == scheme || len > 255)
		return false;
	return strspn(e + scheme, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
				  "0123456789.-:[]") == len - scheme;
}

static bool region_valid(const char *r)
{
	size_t len = strlen(r);

	return len > 0 && len <= 64 && strspn(r, "abcdefghijklmnopqrstuvwxyz0123456789-") == len;
}

/* A profile name: 1-128 printable characters, none of them "[]" or a
 * space, so it is a section the credentials file can have. */
static bool profile_valid(const char *p)
{
	size_t len = strlen(p);

	if (len == 0 || len > 128)
		return false;
	for (size_t i = 0; i < len; i++) {
		if (p[i] <= ' ' || p[i] > '~' || p[i] == '[' || p[i] == ']')
			return false;
	}
	return true;
}

/* Whether object o has only keys from allowed (NULL-terminated); *bad
 * is the first other one. */
static bool keys_known(const json_t *o, const char *const *allowed, const char **bad)
{
	const char *k;
	json_t *v;

	json_object_foreach((json_t *)o, k, v) {
		size_t i = 0;
		while (allowed[i] != NULL && strcmp(allowed[i], k) != 0)
			i++;
		if (allowed[i] == NULL) {
			*bad = k;
			return false;
		}
	}
	return true;
}

/* Copies string member key of o into *out; false (with the message) when
 * it is there but no string, or missing while required. */
static bool member_string(const json_t *o, const char *key, bool required, const char *def,
			  char **out, const char *where, char *errbuf, size_t errlen)
{
	json_t *v = json_object_get(o, key);
	const char *src = required ? NULL : def;

	*out = NULL;
	if (v != NULL && !json_is_string(v)) {
		floe_errbuf(errbuf, errlen, "%s: \"%s\" must be a string", where, key);
		return false;
	}
	if (v != NULL)
		src = json_string_value(v);
	if (src == NULL) {
		floe_errbuf(errbuf, errlen, "%s: \"%s\" is missing", where, key);
		return false;
	}
	*out = strdup(src);
	if (*out == NULL) {
		floe_errbuf(errbuf, errlen, "out of memory");
		return false;
	}
	return true;
}

static bool s3_options(struct warehouse *w, const json_t *s3, const char *where, char *errbuf,
		       size_t errlen)
{
	static const char *const keys[] = { "endpoint", "region", "path-style", "profile", NULL };
	const char *bad = NULL;

	if (!json_is_object(s3))
		return FAIL("%s: \"s3\" must be an object", where);
	if (!keys_known(s3, keys, &bad))
		return FAIL("%s: unknown s3 option \"%s\" (expected endpoint, region, path-style, "
			    "profile; keys belong in the shared credentials file)",
			    where, bad);
	if (!member_string(s3, "endpoint", false, "", &w->s3_endpoint, where, errbuf, errlen) ||
	    !member_string(s3, "region", false, "us-east-1", &w->s3_region, where, errbuf,
			   errlen) ||
	    !member_string(s3, "profile", true, NULL, &w->s3_profile, where, errbuf, errlen))
		return false;
	if (w->s3_endpoint[0] != '\0' && !endpoint_valid(w->s3_endpoint))
		return FAIL("%s: invalid s3 endpoint \"%s\": expected https://host[:port] or "
			    "http://host[:port]",
			    where, w->s3_endpoint);
	if (!region_valid(w->s3_region))
		return floe_errbuf(
			errbuf, errlen,
			"%s: invalid s3 region \"%s\": expected a region name such as us-east-1",
			where, w->s3_region);
	if (!profile_valid(w->s3_profile))
		return FAIL("%s: invalid s3 profile \"%s\": expected the name of a section of the "
			    "shared credentials file",
			    where, w->s3_profile);
	json_t *ps = json_object_get(s3, "path-style");
	if (ps != NULL && !json_is_boolean(ps))
		return FAIL("%s: \"path-style\" must be true or false", where);
	w->s3_path_style = ps != NULL && json_is_true(ps);
	return true;
}

/* One entry of the array, index i, into w. */
static bool one_warehouse(struct warehouse *w, const json_t *e, size_t i, char *errbuf,
			  size_t errlen)
{
	static const char *const keys[] = { "name", "location", "s3", NULL };
	char where[128];
	const char *bad = NULL;
	struct floe_error lerr;

	(void)snprintf(where, sizeof(where), "warehouse %zu", i + 1);
	if (!json_is_object(e))
		return FAIL("%s: expected an object", where);
	if (!member_string(e, "name", true, NULL, &w->name, where, errbuf, errlen))
		return false;
	if (!warehouses_name_valid(w->name))
		return floe_errbuf(
			errbuf, errlen,
			"%s: invalid name \"%.64s\": expected 1-64 characters of A-Z a-z 0-9 . _ "
			"- and no word a route uses after /v1/ (namespaces, tables, views, ...)",
			where, w->name);
	(void)snprintf(where, sizeof(where), "warehouse \"%s\"", w->name);
	if (!keys_known(e, keys, &bad))
		return FAIL("%s: unknown key \"%s\" (expected name, location, s3)", where, bad);
	if (!member_string(e, "location", true, NULL, &w->location, where, errbuf, errlen))
		return false;
	if (strncasecmp(w->location, "file:", 5) != 0 && strncasecmp(w->location, "s3://", 5) != 0)
		return floe_errbuf(
			errbuf, errlen,
			"%s: invalid location \"%.255s\": only file:// and s3:// warehouses are "
			"supported",
			where, w->location);
	char *canon = location_canonical(w->location, &lerr);
	if (canon == NULL)
		return FAIL("%s: invalid location \"%.255s\": %s", where, w->location,
			    lerr.message);
	free(w->location);
	w->location = canon;
	if (strcmp(canon, "file:///") == 0)
		return FAIL("%s: the location cannot be the root directory", where);
	w->path = strdup(location_path(canon));
	if (w->path == NULL)
		return FAIL("out of memory");
	w->s3 = location_is_s3(canon);
	json_t *s3 = json_object_get(e, "s3");
	if (!w->s3 && s3 != NULL)
		return FAIL("%s: \"s3\" options need an s3:// location", where);
	if (w->s3 && s3 == NULL)
		return FAIL("%s: an s3:// location needs \"s3\" options (at least its \"profile\")",
			    where);
	return !w->s3 || s3_options(w, s3, where, errbuf, errlen);
}

bool warehouses_parse(const char *text, size_t len, const char *default_name,
		      const char *default_location, struct warehouse_list *out, char *errbuf,
		      size_t errlen)
{
	json_error_t jerr;
	json_t *doc = NULL;
	const char *bad = NULL;
	static const char *const keys[] = { "warehouses", NULL };
	bool ok = false;

	memset(out, 0, sizeof(*out));
	doc = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
	if (doc == NULL) {
		floe_errbuf(errbuf, errlen, "not JSON (line %d, column %d): %s", jerr.line,
			    jerr.column, jerr.text);
		goto done;
	}
	if (!json_is_object(doc)) {
		floe_errbuf(errbuf, errlen, "expected an object {\"warehouses\": [...]}");
		goto done;
	}
	if (!keys_known(doc, keys, &bad)) {
		floe_errbuf(errbuf, errlen, "unknown key \"%s\" (expected warehouses)", bad);
		goto done;
	}
	json_t *arr = json_object_get(doc, "warehouses");
	if (!json_is_array(arr)) {
		floe_errbuf(errbuf, errlen, "\"warehouses\" must be an array");
		goto done;
	}
	size_t n = json_array_size(arr);
	if (n > WAREHOUSES_MAX) {
		floe_errbuf(errbuf, errlen, "%zu warehouses: at most %d may be named", n,
			    WAREHOUSES_MAX);
		goto done;
	}
	if (n > 0) {
		out->items = calloc(n, sizeof(*out->items));
		if (out->items == NULL) {
			floe_errbuf(errbuf, errlen, "out of memory");
			goto done;
		}
	}
	for (size_t i = 0; i < n; i++) {
		struct warehouse *w = &out->items[i];
		out->count = i + 1;
		if (!one_warehouse(w, json_array_get(arr, i), i, errbuf, errlen))
			goto done;
		if (strcmp(w->name, default_name) == 0) {
			floe_errbuf(errbuf, errlen,
				    "warehouse \"%s\": the name is the default warehouse's "
				    "(--warehouse-name)",
				    w->name);
			goto done;
		}
		if (location_overlaps(w->location, default_location)) {
			floe_errbuf(
				errbuf, errlen,
				"warehouse \"%s\": its location %s overlaps the default warehouse's %s",
				w->name, w->location, default_location);
			goto done;
		}
		for (size_t j = 0; j < i; j++) {
			const struct warehouse *o = &out->items[j];
			if (strcmp(o->name, w->name) == 0) {
				floe_errbuf(errbuf, errlen, "warehouse \"%s\" is named twice",
					    w->name);
				goto done;
			}
			if (location_overlaps(w->location, o->location)) {
				floe_errbuf(
					errbuf, errlen,
					"warehouse \"%s\": its location %s overlaps warehouse \"%s\"'s %s",
					w->name, w->location, o->name, o->location);
				goto done;
			}
		}
	}
	ok = true;
done:
	json_decref(doc);
	return ok;
}

bool warehouses_load(const char *file, const char *default_name, const char *default_location,
		     struct warehouse_list *out, char *errbuf, size_t errlen)
{
	char *text = NULL;
	size_t len = 0;
	int fd = -1;
	bool ok = false;
	char why[400];

	memset(out, 0, sizeof(*out));
	fd = open(file, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		floe_errbuf(errbuf, errlen, "cannot open the warehouses file %s: %s", file,
			    log_strerror(errno));
		goto done;
	}
	text = malloc(WAREHOUSES_FILE_MAX + 1);
	if (text == NULL) {
		floe_errbuf(errbuf, errlen, "out of memory");
		goto done;
	}
	for (;;) {
		ssize_t r = read(fd, text + len, WAREHOUSES_FILE_MAX + 1 - len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			floe_errbuf(errbuf, errlen, "cannot read the warehouses file %s: %s", file,
				    log_strerror(errno));
			goto done;
		}
		if (r == 0)
			break;
		len += (size_t)r;
		if (len > WAREHOUSES_FILE_MAX) {
			floe_errbuf(errbuf, errlen,
				    "the warehouses file %s is larger than %zu bytes", file,
				    WAREHOUSES_FILE_MAX);
			goto done;
		}
	}
	if (!warehouses_parse(text, len, default_name, default_location, out, why, sizeof(why))) {
		floe_errbuf(errbuf, errlen, "the warehouses file %s: %s", file, why);
		goto done;
	}
	ok = true;
done:
	if (fd >= 0)
		(void)close(fd);
	free(text);
	return ok;
}

int warehouses_find(const struct warehouse_list *l, const char *default_name,
		    const char *default_location, const char *name)
{
	struct floe_error ignored;
	int found = -1;

	if (strcmp(name, default_name) == 0)
		return 0;
	for (size_t i = 0; i < l->count; i++) {
		if (strcmp(name, l->items[i].name) == 0)
			return (int)i + 1;
	}
	/* The URL in any spelling of it (file:/x, a trailing slash). */
	char *canon = location_canonical(name, &ignored);
	if (canon == NULL)
		return -1;
	if (strcmp(canon, default_location) == 0)
		found = 0;
	for (size_t i = 0; found < 0 && i < l->count; i++) {
		if (strcmp(canon, l->items[i].location) == 0)
			found = (int)i + 1;
	}
	free(canon);
	return found;
}

void warehouses_free(struct warehouse_list *l)
{
	for (size_t i = 0; i < l->count; i++) {
		struct warehouse *w = &l->items[i];
		free(w->name);
		free(w->location);
		free(w->path);
		free(w->s3_endpoint);
		free(w->s3_region);
		free(w->s3_profile);
	}
	free(l->items);
	memset(l, 0, sizeof(*l));
}
