/*
 * purges.c - the list of pending and failed purges, as the API answers
 * it. Not the purging itself (janitor.c).
 */
#include "purges.h"

#include "rowjson.h"
#include "ports.h"

/* A purge as the API shows it (new reference; NULL when out of memory). */
static json_t *purge_json(const void *row)
{
	const struct purge_row *p = row;
	json_t *out = json_pack("{s:s, s:s, s:s, s:i, s:s}", "location", p->location, "table-uuid",
				p->uuid, "dropped-at", p->dropped_at, "attempts", p->attempts,
				"state", p->state);

	if (out != NULL && p->last_error != NULL)
		json_object_set_new(out, "last-error", json_string(p->last_error));
	return out;
}

json_t *purges_list(struct store *s, int limit, struct floe_error *err)
{
	struct purge_row *rows = NULL;
	size_t count = 0;

	if (!store_purge_list(s, limit, &rows, &count, err))
		return NULL;
	json_t *purges = rowjson_array(rows, count, sizeof(*rows), purge_json);
	store_purge_rows_free(rows, count);
	if (purges == NULL)
		return floe_err(err, FE_INTERNAL, "out of memory"), NULL;
	return json_pack("{s:o}", "purges", purges);
}
