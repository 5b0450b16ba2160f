/* The small jansson helpers: typed fields, ids, holes, string maps. */
#include <criterion/criterion.h>
#include <string.h>

#include "json.h"

static json_t *parse(const char *text)
{
	json_error_t jerr;
	json_t *v = json_loads(text, 0, &jerr);

	cr_assert_not_null(v, "bad test JSON: %s", jerr.text);
	return v;
}

Test(json, get_int_present_absent_and_wrong_type)
{
	json_t *o = parse("{\"a\": 7, \"n\": null, \"s\": \"7\"}");
	struct floe_error err = { 0 };
	int64_t v = 0;
	bool present = true;

	cr_assert(fjson_get_int(o, "a", "thing", NULL, &v, &err));
	cr_assert_eq(v, 7);
	/* Absent and null are the same: optional with present, else an error. */
	cr_assert(fjson_get_int(o, "n", "thing", &present, &v, &err));
	cr_assert_not(present);
	cr_assert(fjson_get_int(o, "x", "thing", &present, &v, &err));
	cr_assert_not(present);
	cr_assert_not(fjson_get_int(o, "x", "thing", NULL, &v, &err));
	cr_assert_eq(err.kind, FE_BAD_REQUEST);
	cr_assert_str_eq(err.message, "thing: missing required field 'x'");
	cr_assert_not(fjson_get_int(o, "s", "thing", &present, &v, &err));
	cr_assert_str_eq(err.message, "thing: field 's' must be an integer");
	cr_assert_eq(fjson_int_or(o, "s", -1), -1);
	cr_assert_eq(fjson_int_or(o, "a", -1), 7);
	cr_assert_null(fjson_get_str(o, "a"));
	cr_assert_str_eq(fjson_get_str(o, "s"), "7");
	json_decref(o);
}

Test(json, typed_fields_replace_other_types)
{
	json_t *o = parse("{\"arr\": [1], \"obj\": [2], \"keep\": {\"k\": 1}}");

	cr_assert_eq(json_array_size(fjson_array_field(o, "arr")), 1);
	cr_assert(json_is_object(fjson_object_field(o, "obj")));
	cr_assert_eq(json_object_size(json_object_get(o, "obj")), 0);
	cr_assert(json_is_array(fjson_array_field(o, "new")));
	cr_assert(json_is_array(json_object_get(o, "new")));
	cr_assert_eq(json_object_size(fjson_object_field(o, "keep")), 1);
	json_decref(o);
}

Test(json, find_by_id_takes_the_first_and_max_counts_missing)
{
	json_t *a = parse("[{\"id\": 3, \"n\": 1}, {\"id\": \"3\"}, {\"id\": 3, \"n\": 2}, {}]");

	cr_assert_eq(fjson_int_or(fjson_find_by_id(a, "id", 3), "n", 0), 1);
	cr_assert_null(fjson_find_by_id(a, "id", 4));
	cr_assert_null(fjson_find_by_id(NULL, "id", 3));
	cr_assert_eq(fjson_max_id(a, "id", -1), 3);
	cr_assert_eq(fjson_max_id(a, "id", 9), 9);
	cr_assert_eq(fjson_max_id(NULL, "id", -1), -1);
	json_decref(a);
}

Test(json, compact_removes_holes_in_order)
{
	json_t *a = parse("[null, 1, null, null, 2, 3, null]");
	json_t *want = parse("[1, 2, 3]");

	fjson_compact(a);
	cr_assert(json_equal(a, want));
	fjson_compact(NULL);
	json_decref(a);
	json_decref(want);
}

Test(json, array_of_and_string_maps)
{
	json_t *ints = parse("[1, 2]");
	json_t *mixed = parse("[1, \"2\"]");
	json_t *map = parse("{\"a\": \"x\", \"b\": 1}");
	struct floe_error err = { 0 };

	cr_assert(fjson_is_array_of(ints, JSON_INTEGER));
	cr_assert_not(fjson_is_array_of(mixed, JSON_INTEGER));
	cr_assert_not(fjson_is_array_of(map, JSON_STRING));
	cr_assert_not(fjson_check_string_map(map, "properties", &err));
	cr_assert_str_eq(err.message, "properties: the value of 'b' must be a string");
	cr_assert_not(fjson_check_string_map(ints, "properties", &err));
	cr_assert_str_eq(err.message, "The properties must be an object of strings");
	json_object_del(map, "b");
	cr_assert(fjson_check_string_map(map, "properties", &err));
	json_decref(ints);
	json_decref(mixed);
	json_decref(map);
}
