/*
 * json.h - small jansson helpers: reading typed fields, finding array
 * entries by an integer id, and the "hole" convention (an entry replaced
 * by JSON null keeps the other positions valid until fjson_compact).
 *
 * Not a JSON library of its own: values stay jansson's, and the ownership
 * rules are jansson's (get borrows, set_new steals).
 */
#ifndef FLOE_JSON_H
#define FLOE_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

#include "buf.h"
#include "error.h"

/*
 * Reads the integer field key of obj into *out. Absent or null: with
 * present given, *present becomes false and the call succeeds; without
 * it, FE_BAD_REQUEST "<what>: missing required field '<key>'". Any other
 * non-integer is FE_BAD_REQUEST.
 */
bool fjson_get_int(const json_t *obj, const char *key, const char *what, bool *present,
		   int64_t *out, struct floe_error *err) FLOE_WUR;

/* The string field key of obj (borrowed), or NULL when it is not one. */
const char *fjson_get_str(const json_t *obj, const char *key);

/* The integer field key of obj, or dflt when it is not an integer. */
int64_t fjson_int_or(const json_t *obj, const char *key, int64_t dflt);

/* Sets the integer field key of obj; false when out of memory. */
bool fjson_set_int(json_t *obj, const char *key, int64_t v);

/* The array (or object) field key of obj (borrowed), first replaced by an
 * empty one when it is absent or of another type. */
json_t *fjson_array_field(json_t *obj, const char *key);
json_t *fjson_object_field(json_t *obj, const char *key);

/* The first element of array whose integer field key equals id
 * (borrowed), or NULL. */
json_t *fjson_find_by_id(const json_t *array, const char *key, int64_t id);

/* The highest integer field key of the elements of array; an element
 * without one counts as dflt, and dflt is also the answer when empty. */
int64_t fjson_max_id(const json_t *array, const char *key, int64_t dflt);

/* True when v is an array whose elements are all of this type. */
bool fjson_is_array_of(const json_t *v, json_type type);

/* Removes the JSON null holes of array in one pass (NULL: nothing). */
void fjson_compact(json_t *array);

/* Checks that v is an object whose values are all strings; else
 * FE_BAD_REQUEST naming what. */
bool fjson_check_string_map(const json_t *v, const char *what, struct floe_error *err) FLOE_WUR;

/* Appends s (len bytes of UTF-8) to b as a JSON string, quoted and
 * escaped the way jansson's compact dump writes it, for answers built as
 * text. Failures stay in b->status (buf.h). */
void fjson_buf_string(struct buf *b, const char *s, size_t len);

#endif
