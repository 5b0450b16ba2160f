/*
 * rowjson.h - turning an array of the store's rows into the JSON array an
 * answer lists, one converter per kind of row.
 */
#ifndef FLOE_ROWJSON_H
#define FLOE_ROWJSON_H

#include <stddef.h>
#include <jansson.h>

/* A new JSON array of to_json of each of count rows, size bytes apart.
 * NULL when out of memory (or when to_json fails). */
json_t *rowjson_array(const void *rows, size_t count, size_t size,
		      json_t *(*to_json)(const void *row));

/* A JSON text column as JSON (new reference): null when absent or
 * unreadable. */
json_t *rowjson_text(const char *text);

#endif
