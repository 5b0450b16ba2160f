/*
 * fuzz_ident.c - libFuzzer target for identifier and URL parsing: percent
 * decoding, UTF-8 checks and namespace parsing, plus the round trips a
 * valid namespace must survive (join, display, JSON).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ident.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *in = (const char *)data;
	struct floe_error err;
	struct ns_ident ns = { 0 };
	struct ns_ident back = { 0 };
	char *out = NULL;
	size_t outlen = 0;

	(void)utf8_valid(in, size);
	if (url_decode(in, size, size % 2 == 0, &out, &outlen, &err)) {
		if (out[outlen] != '\0')
			abort(); /* the decoded text is always terminated */
		(void)ident_name_check(out, outlen, "name", &err);
		free(out);
	}
	if (!ident_ns_parse(in, size, IDENT_PLUS_SPACE, &ns, &err))
		return 0;
	if (ns.nlevels == 0 || ns.nlevels > IDENT_MAX_LEVELS)
		abort();
	json_t *arr = ident_ns_to_json(&ns);
	char *joined = ident_ns_join(&ns);
	char *shown = ident_ns_display(&ns);
	if (arr != NULL && ident_ns_from_json(arr, "namespace", &back, &err)) {
		/* What parsed once parses again to the same levels. */
		if (back.nlevels != ns.nlevels)
			abort();
		for (size_t i = 0; i < ns.nlevels; i++)
			if (strcmp(back.levels[i], ns.levels[i]) != 0)
				abort();
	}
	ident_ns_clear(&back);
	json_decref(arr);
	free(joined);
	free(shown);
	ident_ns_clear(&ns);
	return 0;
}
