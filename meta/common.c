/*
 * common.c - what every file of the metadata engine uses: its error
 * wording helpers and the small readers of a metadata document
 * (meta_internal.h).
 */
#include "meta_internal.h"

#include <stdarg.h>
#include <stdio.h>

#include "json.h"

bool meta_bad(struct floe_error *err, const char *fmt, ...)
{
	va_list ap;
	char msg[FLOE_ERROR_MESSAGE_MAX];

	va_start(ap, fmt);
	(void)vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return floe_err(err, FE_BAD_REQUEST, "%s", msg);
}

bool meta_oom(struct floe_error *err)
{
	return floe_err(err, FE_INTERNAL, "out of memory");
}

json_t *meta_main_ref(int64_t id)
{
	return json_pack("{s:I, s:s}", "snapshot-id", (json_int_t)id, "type", "branch");
}

int meta_format_of(const json_t *m)
{
	return (int)fjson_int_or(m, "format-version", 2);
}

json_t *meta_commit_result(const json_t *base, json_t *m, bool ok, bool *changed)
{
	if (!ok) {
		json_decref(m);
		*changed = false;
		return NULL;
	}
	if (!*changed) {
		json_decref(m);
		return json_deep_copy(base);
	}
	return m;
}
