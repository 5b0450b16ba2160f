/* Page tokens and the checks on namespace request bodies that need no
 * database. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "namespace.h"

static struct floe_error err;

Test(page, no_token_means_everything)
{
	struct page_request page;

	cr_assert(page_request_parse(NULL, "5", &page, &err));
	cr_assert_not(page.paginate);
	page_request_clear(&page);
}

Test(page, empty_token_starts_paging)
{
	struct page_request page;

	cr_assert(page_request_parse("", NULL, &page, &err));
	cr_assert(page.paginate);
	cr_assert_eq(page.page_size, NS_PAGE_SIZE_DEFAULT);
	cr_assert_eq(page.after.nlevels, 0);
	page_request_clear(&page);
}

Test(page, token_round_trips)
{
	struct ns_ident last = { 0 };
	struct page_request page;
	const char *raw = "a%1Fb c%1F%C3%A9";

	cr_assert(ident_ns_parse(raw, strlen(raw), IDENT_PLUS_SPACE, &last, &err));
	char *token = page_token_encode(&last);
	cr_assert(page_request_parse(token, "2", &page, &err), "%s", err.message);
	cr_assert_eq(page.page_size, 2);
	cr_assert_eq(page.after.nlevels, 3);
	cr_assert_str_eq(page.after.levels[1], "b c");
	cr_assert_str_eq(page.after.levels[2], "\xc3\xa9");
	free(token);
	ident_ns_clear(&last);
	page_request_clear(&page);
}

Test(page, bad_values_are_refused)
{
	struct page_request page;
	const char *sizes[] = { "0", "-1", "abc", "", "1.5" };
	const char *tokens[] = { "abc", "zz", "00", "6101" /* "a\x01" */ };

	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		cr_assert_not(page_request_parse("", sizes[i], &page, &err), "pageSize %s accepted",
			      sizes[i]);
		cr_assert_eq(err.kind, FE_BAD_REQUEST);
		cr_assert(strstr(err.message, "pageSize") != NULL);
	}
	for (size_t i = 0; i < sizeof(tokens) / sizeof(tokens[0]); i++) {
		cr_assert_not(page_request_parse(tokens[i], NULL, &page, &err), "token %s accepted",
			      tokens[i]);
		cr_assert(strstr(err.message, "pageToken") != NULL);
	}
}

Test(page, size_is_capped)
{
	struct page_request page;

	cr_assert(page_request_parse("", "100000", &page, &err));
	cr_assert_eq(page.page_size, NS_PAGE_SIZE_MAX);
	page_request_clear(&page);
}

Test(properties, must_be_an_object_of_strings)
{
	json_t *good = json_pack("{s:s}", "owner", "finance");
	json_t *num = json_pack("{s:i}", "n", 1);
	json_t *arr = json_pack("[s]", "x");

	cr_assert(ns_check_string_map(good, "properties", &err));
	cr_assert_not(ns_check_string_map(num, "properties", &err));
	cr_assert(strstr(err.message, "'n'") != NULL, "%s", err.message);
	cr_assert_not(ns_check_string_map(arr, "properties", &err));
	json_decref(good);
	json_decref(num);
	json_decref(arr);
}

Test(properties, key_both_set_and_removed_is_unprocessable)
{
	json_t *body = json_pack("{s:[s], s:{s:s}}", "removals", "a", "updates", "a", "1");
	struct ns_ident ns = { 0 };
	const char *raw = "x";

	cr_assert(ident_ns_parse(raw, 1, IDENT_PLUS_SPACE, &ns, &err));
	/* Refused before the store is touched, so no store is needed. */
	cr_assert_null(ns_update_properties(NULL, &ns, body, NULL, NULL, &err));
	cr_assert_eq(err.kind, FE_UNPROCESSABLE);
	cr_assert(strstr(err.message, "'a'") != NULL);
	ident_ns_clear(&ns);
	json_decref(body);
}
