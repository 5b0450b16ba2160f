/*
 * warehouses.h - the named warehouses floe knows besides its default one
 * (--warehouses=FILE, docs/storage.md "Named warehouses"): read and
 * checked once at start-up, then looked up by name (or URL) for
 * /v1/config?warehouse=NAME and the {prefix} of every /v1/{prefix}/ route.
 */
#ifndef FLOE_WAREHOUSES_H
#define FLOE_WAREHOUSES_H

#include <stdbool.h>
#include <stddef.h>

/* The most warehouses one file may name, and the largest file read. */
#define WAREHOUSES_MAX 64
#define WAREHOUSES_FILE_MAX ((size_t)1024 * 1024)

struct warehouse {
	char *name;     /* [A-Za-z0-9._-], 1-64 characters */
	char *location; /* canonical: file:///path or s3://bucket[/prefix] */
	char *path;     /* the local directory (s3: the location) */
	bool s3;
	/* An s3:// warehouse's own storage; its keys come from profile in
	 * the shared credentials file, never from the warehouses file. */
	char *s3_endpoint; /* "": AWS's endpoint of s3_region */
	char *s3_region;
	bool s3_path_style;
	char *s3_profile;
};

struct warehouse_list {
	struct warehouse *items; /* owned; count of them */
	size_t count;
};

/*
 * Parses the JSON text of a warehouses file,
 *   {"warehouses": [{"name": N, "location": L, "s3": {...}}, ...]},
 * into out and checks every entry: a valid name, unique and not the
 * default warehouse's (default_name), a file:// or s3:// location that
 * overlaps neither the default warehouse's (default_location, canonical)
 * nor another's, s3 options only for an s3:// location and complete
 * there. Unknown keys are refused. On failure writes a message naming
 * the warehouse and the field into errbuf and returns false; out is
 * still to be freed with warehouses_free.
 */
bool warehouses_parse(const char *text, size_t len, const char *default_name,
		      const char *default_location, struct warehouse_list *out, char *errbuf,
		      size_t errlen) __attribute__((warn_unused_result));

/* Reads file (at most WAREHOUSES_FILE_MAX bytes) and parses it as
 * warehouses_parse does; the message names the file. */
bool warehouses_load(const char *file, const char *default_name, const char *default_location,
		     struct warehouse_list *out, char *errbuf, size_t errlen)
	__attribute__((warn_unused_result));

/* True for a name a warehouse of the file may have: 1-64 of A-Z a-z 0-9
 * '.' '_' '-', not "." or "..", and no word a route has after /v1/. */
bool warehouses_name_valid(const char *name);

/* Which warehouse name names, by its name or its URL in any spelling:
 * 0 the default one, i + 1 for l's item i, -1 none. */
int warehouses_find(const struct warehouse_list *l, const char *default_name,
		    const char *default_location, const char *name);

/* Frees what warehouses_parse filled; safe to call twice. */
void warehouses_free(struct warehouse_list *l);

#endif
