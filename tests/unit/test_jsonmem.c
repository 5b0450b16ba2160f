/* What a parse keeps, counted per thread: the figure the body budget
 * adds for a parsed request body. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "jsonmem.h"

Test(jsonmem, a_parse_counts_what_it_keeps_and_a_free_gives_it_back)
{
	char text[64 * 1024];
	size_t n = 0;

	jsonmem_install();
	n += (size_t)snprintf(text + n, sizeof(text) - n, "{");
	for (int i = 0; i < 2000; i++)
		n += (size_t)snprintf(text + n, sizeof(text) - n, "%s\"p%05d\":\"v\"",
				      i > 0 ? "," : "", i);
	n += (size_t)snprintf(text + n, sizeof(text) - n, "}");
	cr_assert_lt(n, sizeof(text) - 1);

	long long before = jsonmem_thread_bytes();
	json_t *doc = json_loadb(text, n, 0, NULL);
	cr_assert_not_null(doc);
	long long held = jsonmem_thread_bytes() - before;
	/* 2,000 members of 14 bytes of text each: a key, a string, a slot. */
	cr_assert_gt(held, 4 * (long long)n, "held %lld for %zu bytes of text", held, n);
	json_decref(doc);
	cr_assert_eq(jsonmem_thread_bytes(), before, "the free gives it all back");

	/* Whitespace costs nothing parsed. */
	memset(text, ' ', 4096);
	memcpy(text + 4096, "{}", 2);
	before = jsonmem_thread_bytes();
	doc = json_loadb(text, 4098, 0, NULL);
	cr_assert_not_null(doc);
	cr_assert_lt(jsonmem_thread_bytes() - before, 512);
	json_decref(doc);
}
