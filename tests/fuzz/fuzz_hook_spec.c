/*
 * fuzz_hook_spec.c - libFuzzer target for audit-hook registrations: any
 * body is accepted as a valid spec or refused with 400, never a crash.
 */
#include <stdint.h>
#include <stdlib.h>

#include "hookspec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct floe_error err;
	struct hook_spec spec;
	json_error_t jerr;

	json_t *body = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, &jerr);
	if (body == NULL)
		return 0;
	floe_error_clear(&err);
	if (hook_spec_parse(body, NULL, &spec, &err)) {
		if (spec.url == NULL || spec.name == NULL || spec.timeout_ms <= 0)
			abort();
		hook_spec_clear(&spec);
	} else if (err.kind != FE_BAD_REQUEST) {
		abort();
	}
	json_decref(body);
	return 0;
}
