/*
 * json.c - small jansson helpers shared by the layers above (json.h).
 * Nothing here knows what the JSON means.
 */
#include "json.h"

bool fjson_get_int(const json_t *obj, const char *key, const char *what, bool *present,
		   int64_t *out, struct floe_error *err)
{
	json_t *v = json_object_get(obj, key);

	if (present != NULL)
		*present = v != NULL && !json_is_null(v);
	if (v == NULL || json_is_null(v)) {
		if (present != NULL)
			return true;
		return floe_err(err, FE_BAD_REQUEST, "%s: missing required field '%s'", what, key);
	}
	if (!json_is_integer(v))
		return floe_err(err, FE_BAD_REQUEST, "%s: field '%s' must be an integer", what,
				key);
	*out = json_integer_value(v);
	return true;
}

const char *fjson_get_str(const json_t *obj, const char *key)
{
	return json_string_value(json_object_get(obj, key));
}

int64_t fjson_int_or(const json_t *obj, const char *key, int64_t dflt)
{
	json_t *v = json_object_get(obj, key);

	return json_is_integer(v) ? json_integer_value(v) : dflt;
}

bool fjson_set_int(json_t *obj, const char *key, int64_t v)
{
	return json_object_set_new(obj, key, json_integer(v)) == 0;
}

/* The field key of obj, first replaced by an empty array or object
 * (type) when it is absent or of another type. */
static json_t *typed_field(json_t *obj, const char *key, json_type type)
{
	json_t *v = json_object_get(obj, key);

	if (v == NULL || json_typeof(v) != type) {
		v = type == JSON_ARRAY ? json_array() : json_object();
		json_object_set_new(obj, key, v);
	}
	return v;
}

json_t *fjson_array_field(json_t *obj, const char *key)
{
	return typed_field(obj, key, JSON_ARRAY);
}

json_t *fjson_object_field(json_t *obj, const char *key)
{
	return typed_field(obj, key, JSON_OBJECT);
}

json_t *fjson_find_by_id(const json_t *array, const char *key, int64_t id)
{
	size_t i;
	json_t *e;

	json_array_foreach(array, i, e) {
		json_t *v = json_object_get(e, key);
		if (json_is_integer(v) && json_integer_value(v) == id)
			return e;
	}
	return NULL;
}

int64_t fjson_max_id(const json_t *array, const char *key, int64_t dflt)
{
	size_t i;
	json_t *e;
	int64_t m = dflt;

	json_array_foreach(array, i, e) {
		int64_t v = fjson_int_or(e, key, dflt);
		if (v > m)
			m = v;
	}
	return m;
}

bool fjson_is_array_of(const json_t *v, json_type type)
{
	size_t i;
	json_t *e;

	if (!json_is_array(v))
		return false;
	json_array_foreach(v, i, e) {
		if (json_typeof(e) != type)
			return false;
	}
	return true;
}

void fjson_compact(json_t *array)
{
	size_t n = json_array_size(array);
	size_t keep = 0;

	for (size_t i = 0; i < n; i++) {
		json_t *e = json_array_get(array, i);
		if (json_is_null(e))
			continue;
		if (keep != i)
			json_array_set(array, keep, e);
		keep++;
	}
	while (json_array_size(array) > keep)
		json_array_remove(array, json_array_size(array) - 1);
}

bool fjson_check_string_map(const json_t *v, const char *what, struct floe_error *err)
{
	const char *k;
	json_t *x;

	if (!json_is_object(v))
		return floe_err(err, FE_BAD_REQUEST, "The %s must be an object of strings", what);
	json_object_foreach((json_t *)v, k, x) {
		if (!json_is_string(x))
			return floe_err(err, FE_BAD_REQUEST,
					"%s: the value of '%s' must be a string", what, k);
	}
	return true;
}
