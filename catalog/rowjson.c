/*
 * rowjson.c - arrays of store rows as JSON arrays.
 */
#include "rowjson.h"

json_t *rowjson_array(const void *rows, size_t count, size_t size,
		      json_t *(*to_json)(const void *row))
{
	json_t *out = json_array();

	for (size_t i = 0; out != NULL && i < count; i++) {
		if (json_array_append_new(out, to_json((const char *)rows + i * size)) != 0) {
			json_decref(out);
			out = NULL;
		}
	}
	return out;
}

json_t *rowjson_text(const char *text)
{
	json_error_t jerr;
	json_t *v = text != NULL ? json_loads(text, 0, &jerr) : NULL;

	return v != NULL ? v : json_null();
}
