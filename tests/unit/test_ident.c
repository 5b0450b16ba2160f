/* Identifier decoding, validation and encoding. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ident.h"

static struct floe_error err;

Test(utf8, accepts_well_formed_text)
{
	cr_assert(utf8_valid("plain", 5));
	cr_assert(utf8_valid("\xc3\xa9t\xc3\xa9", 6)); /* été */
	cr_assert(utf8_valid("\xe2\x82\xac", 3));      /* € */
	cr_assert(utf8_valid("\xf0\x9f\x90\x9f", 4));  /* a fish */
}

Test(utf8, rejects_malformed_text)
{
	cr_assert_not(utf8_valid("\xc3", 1));             /* truncated */
	cr_assert_not(utf8_valid("\xc0\xaf", 2));         /* overlong */
	cr_assert_not(utf8_valid("\xed\xa0\x80", 3));     /* surrogate */
	cr_assert_not(utf8_valid("\xf4\x90\x80\x80", 4)); /* > U+10FFFF */
	cr_assert_not(utf8_valid("\xff", 1));
	cr_assert_not(utf8_valid("a\x80", 2)); /* stray continuation */
}

Test(url_decode, decodes_escapes_and_plus)
{
	char *out = NULL;
	size_t len = 0;

	cr_assert(url_decode("a%20b+c%2Bd", 11, true, &out, &len, &err));
	cr_assert_str_eq(out, "a b c+d");
	free(out);
	cr_assert(url_decode("a+b", 3, false, &out, &len, &err));
	cr_assert_str_eq(out, "a+b");
	free(out);
}

Test(url_decode, rejects_malformed_escapes)
{
	char *out = NULL;
	size_t len = 0;

	cr_assert_not(url_decode("a%2", 3, true, &out, &len, &err));
	cr_assert_eq(err.kind, FE_BAD_REQUEST);
	cr_assert_not(url_decode("%zz", 3, true, &out, &len, &err));
	cr_assert_not(url_decode("%", 1, true, &out, &len, &err));
}

Test(ns_parse, splits_levels_on_unit_separator)
{
	struct ns_ident ns = { 0 };
	const char *raw = "accounting%1Ftax+2024%1Fa%2Fb";

	cr_assert(ident_ns_parse(raw, strlen(raw), IDENT_PLUS_SPACE, &ns, &err));
	cr_assert_eq(ns.nlevels, 3);
	cr_assert_str_eq(ns.levels[0], "accounting");
	cr_assert_str_eq(ns.levels[1], "tax 2024");
	cr_assert_str_eq(ns.levels[2], "a/b");
	ident_ns_clear(&ns);
	cr_assert_eq(ns.nlevels, 0);
}

Test(ns_parse, plus_is_itself_in_a_path)
{
	struct ns_ident ns = { 0 };
	const char *raw = "p+q%1Fa%20b%1F%2B";

	cr_assert(ident_ns_parse(raw, strlen(raw), IDENT_PLUS_LITERAL, &ns, &err));
	cr_assert_eq(ns.nlevels, 3);
	cr_assert_str_eq(ns.levels[0], "p+q");
	cr_assert_str_eq(ns.levels[1], "a b");
	cr_assert_str_eq(ns.levels[2], "+");
	ident_ns_clear(&ns);
}

Test(ns_split, splits_decoded_text_without_decoding_it)
{
	struct ns_ident ns = { 0 };
	const char text[] = "a+b\x1f"
			    "50%25\x1f"
			    "c d";

	cr_assert(ident_ns_split(text, sizeof(text) - 1, &ns, &err), "%s", err.message);
	cr_assert_eq(ns.nlevels, 3);
	cr_assert_str_eq(ns.levels[0], "a+b");
	cr_assert_str_eq(ns.levels[1], "50%25");
	cr_assert_str_eq(ns.levels[2], "c d");
	ident_ns_clear(&ns);
	cr_assert_not(ident_ns_split("a\x1f", 2, &ns, &err));
	cr_assert_eq(ns.nlevels, 0);
	cr_assert_not(ident_ns_split("", 0, &ns, &err));
}

Test(ns_parse, rejects_empty_levels_and_control_characters)
{
	struct ns_ident ns = { 0 };

	cr_assert_not(ident_ns_parse("", 0, IDENT_PLUS_SPACE, &ns, &err));
	cr_assert_not(ident_ns_parse("a%1F%1Fb", 8, IDENT_PLUS_SPACE, &ns, &err));
	cr_assert_eq(err.kind, FE_BAD_REQUEST);
	cr_assert(strstr(err.message, "empty") != NULL, "%s", err.message);
	cr_assert_not(ident_ns_parse("a%1F", 4, IDENT_PLUS_SPACE, &ns, &err));
	cr_assert_not(ident_ns_parse("a%00b", 5, IDENT_PLUS_SPACE, &ns, &err));
	cr_assert(strstr(err.message, "control") != NULL, "%s", err.message);
	cr_assert_not(ident_ns_parse("a%FFb", 5, IDENT_PLUS_SPACE, &ns, &err));
	cr_assert(strstr(err.message, "UTF-8") != NULL, "%s", err.message);
	cr_assert_eq(ns.nlevels, 0);
}

Test(ns_parse, enforces_length_and_depth_limits)
{
	struct ns_ident ns = { 0 };
	char name[IDENT_MAX_NAME_BYTES + 2];
	char deep[IDENT_MAX_LEVELS * 4 + 8] = "";

	memset(name, 'x', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	cr_assert_not(ident_ns_parse(name, strlen(name), IDENT_PLUS_SPACE, &ns, &err));
	cr_assert(strstr(err.message, "255") != NULL, "%s", err.message);
	cr_assert(ident_ns_parse(name, IDENT_MAX_NAME_BYTES, IDENT_PLUS_SPACE, &ns, &err));
	ident_ns_clear(&ns);

	size_t used = 0;
	for (int i = 0; i <= IDENT_MAX_LEVELS; i++)
		used += (size_t)snprintf(deep + used, sizeof(deep) - used, "%s",
					 i == 0 ? "a" : "%1Fa");
	cr_assert_not(ident_ns_parse(deep, strlen(deep), IDENT_PLUS_SPACE, &ns, &err));
	cr_assert(strstr(err.message, "levels") != NULL, "%s", err.message);
	deep[strlen(deep) - 4] = '\0';
	cr_assert(ident_ns_parse(deep, strlen(deep), IDENT_PLUS_SPACE, &ns, &err));
	cr_assert_eq(ns.nlevels, IDENT_MAX_LEVELS);
	ident_ns_clear(&ns);
}

Test(ns_json, round_trips_and_validates)
{
	struct ns_ident ns = { 0 };
	json_t *in = json_pack("[s, s]", "a", "b c");
	json_t *bad = json_pack("[s, i]", "a", 1);
	json_t *empty = json_array();

	cr_assert(ident_ns_from_json(in, "namespace", &ns, &err));
	json_t *out = ident_ns_to_json(&ns);
	cr_assert(json_equal(in, out));
	char *joined = ident_ns_join(&ns);
	cr_assert_str_eq(joined, "a\x1f"
				 "b c");
	char *shown = ident_ns_display(&ns);
	cr_assert_str_eq(shown, "a.b c");
	free(joined);
	free(shown);
	ident_ns_clear(&ns);

	cr_assert_not(ident_ns_from_json(bad, "namespace", &ns, &err));
	cr_assert(strstr(err.message, "array of strings") != NULL);
	cr_assert_not(ident_ns_from_json(empty, "namespace", &ns, &err));
	cr_assert_not(ident_ns_from_json(NULL, "namespace", &ns, &err));
	cr_assert(strstr(err.message, "Missing") != NULL, "%s", err.message);
	json_decref(in);
	json_decref(out);
	json_decref(bad);
	json_decref(empty);
}
