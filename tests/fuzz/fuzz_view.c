/*
 * fuzz_view.c - libFuzzer target for the view metadata engine: an input
 * is {"base": view metadata, "requirements": [...], "updates": [...]},
 * or a createView body {"request": {...}}. The base is serialised and
 * read back through viewmeta_parse (a bad one must be a client error),
 * then the requirements are checked and the updates applied. A result
 * must be valid, survive its own serialisation unchanged, and take an
 * empty commit unchanged.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "viewmeta.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_client_error(const struct floe_error *err)
{
	if (floe_errkind_status(err->kind) >= 500)
		abort();
}

/* m must be valid, read back as itself, and take no update unchanged. */
static void check_result(const json_t *m)
{
	struct floe_error err;
	bool changed = true;
	size_t len = 0;

	if (!viewmeta_validate(m, &err))
		abort();
	char *text = viewmeta_serialise(m, &len, &err);
	json_t *back = text != NULL ? viewmeta_parse(text, len, &err) : NULL;
	if (back == NULL || !json_equal(back, m))
		abort();
	json_t *none = json_array();
	json_t *again = viewmeta_apply(m, none, 1767225600001, &changed, &err);
	if (again == NULL || changed || viewmeta_current_version(m) == NULL)
		abort();
	json_decref(again);
	json_decref(none);
	json_decref(back);
	free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct floe_error err;
	json_error_t jerr;
	bool changed = false;
	json_t *base = NULL;
	json_t *m = NULL;
	char *text = NULL;
	size_t len = 0;

	json_t *in = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, &jerr);
	if (in == NULL)
		return 0;
	floe_error_clear(&err);
	const json_t *request = json_object_get(in, "request");
	if (request != NULL) {
		m = viewmeta_create(request, "file:///warehouse/ns/v",
				    "9c12b9a4-2b8c-4e0a-8a4c-7f2d3f6c1a10", 1767225600000, &err);
		if (m == NULL)
			check_client_error(&err);
		else
			check_result(m);
		goto done;
	}
	/* The base as a stored document would reach the engine. */
	json_t *raw = json_object_get(in, "base");
	text = raw != NULL ? json_dumps(raw, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
	if (text == NULL)
		goto done;
	base = viewmeta_parse(text, strlen(text), &err);
	if (base == NULL) {
		check_client_error(&err);
		goto done;
	}
	const json_t *reqs = json_object_get(in, "requirements");
	const json_t *updates = json_object_get(in, "updates");
	if (!viewmeta_check_requirements(base, reqs, &err) ||
	    !viewmeta_check_actions(updates, &err)) {
		check_client_error(&err);
		goto done;
	}
	m = viewmeta_apply(base, updates, 1767225600000, &changed, &err);
	if (m == NULL)
		check_client_error(&err);
	else
		check_result(m);
done:
	json_decref(m);
	json_decref(base);
	free(text);
	json_decref(in);
	return 0;
}
