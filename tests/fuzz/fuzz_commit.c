/*
 * fuzz_commit.c - libFuzzer target for the commit engine: an input is
 * {"base": metadata, "requirements": [...], "updates": [...]} (the shape
 * of the commit fixtures). Requirements are checked and updates applied,
 * to an existing table or as a staged create; the result of a successful
 * apply must itself be a base that takes an empty commit unchanged.
 */
#include <stdint.h>
#include <stdlib.h>

#include "tablemeta.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_client_error(const struct floe_error *err)
{
	if (floe_errkind_status(err->kind) >= 500)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct floe_error err;
	json_error_t jerr;
	bool changed = false;

	json_t *in = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, &jerr);
	if (in == NULL)
		return 0;
	const json_t *base = json_object_get(in, "base");
	const json_t *reqs = json_object_get(in, "requirements");
	const json_t *updates = json_object_get(in, "updates");
	floe_error_clear(&err);
	if (!json_is_array(updates) || !tablemeta_check_actions(updates, &err))
		goto done;
	if (!json_is_object(base)) {
		json_t *m = tablemeta_apply_create(updates, "9c12b9a4-2b8c-4e0a-8a4c-7f2d3f6c1a10",
						   1767225600000, &err);
		if (m == NULL)
			check_client_error(&err);
		json_decref(m);
		goto done;
	}
	if (json_is_array(reqs) && !tablemeta_check_requirements(base, reqs, &err))
		goto done;
	json_t *m = tablemeta_apply(base, "file:///warehouse/ns/t/metadata/00001-x.metadata.json",
				    updates, 1767225600000, &changed, &err);
	if (m == NULL) {
		check_client_error(&err);
		goto done;
	}
	json_t *none = json_array();
	json_t *again = tablemeta_apply(m, NULL, none, 1767225600001, &changed, &err);
	if (again == NULL || changed)
		abort();
	(void)tablemeta_current_snapshot(m);
	json_t *trimmed = tablemeta_only_ref_snapshots(m);
	json_decref(trimmed);
	json_decref(again);
	json_decref(none);
	json_decref(m);
done:
	json_decref(in);
	return 0;
}
