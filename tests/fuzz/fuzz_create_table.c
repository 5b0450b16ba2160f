/*
 * fuzz_create_table.c - libFuzzer target for createTable: any request
 * body either builds metadata that the commit engine accepts as a base
 * or fails with a 4xx, never a crash.
 */
#include <stdint.h>
#include <stdlib.h>

#include "tablemeta.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct floe_error err;
	json_error_t jerr;
	bool changed = false;

	json_t *body = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, &jerr);
	if (body == NULL)
		return 0;
	floe_error_clear(&err);
	json_t *m = tablemeta_create(body, "file:///warehouse/ns/t",
				     "9c12b9a4-2b8c-4e0a-8a4c-7f2d3f6c1a10", 1767225600000, &err);
	if (m == NULL) {
		if (floe_errkind_status(err.kind) >= 500)
			abort(); /* bad input is the client's, never a 5xx */
	} else {
		/* An empty commit on what was created changes nothing. */
		json_t *none = json_array();
		json_t *same = tablemeta_apply(m, NULL, none, 1767225600001, &changed, &err);
		if (same == NULL || changed)
			abort();
		json_t *trimmed = tablemeta_only_ref_snapshots(m);
		json_decref(trimmed);
		json_decref(same);
		json_decref(none);
		json_decref(m);
	}
	json_decref(body);
	return 0;
}
