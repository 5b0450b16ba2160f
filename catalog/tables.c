/*
 * tables.c - existence, listing and metrics reports of tables: the
 * table routes that neither read nor write table metadata.
 */
#include "tables.h"

#include <stdlib.h>
#include <string.h>

#include "rowjson.h"
#include "ports.h"
#include "wording.h"

bool tables_exists(struct store *s, const struct ns_ident *ns, const char *name, bool *exists,
		   struct floe_error *err)
{
	return store_table_exists(s, ns, name, exists, err);
}

/* A table name as a JSON string (rowjson_array's converter). */
static json_t *name_json(const void *row)
{
	const char *const *name = row;

	return json_string(*name);
}

bool tables_list(struct store *s, const struct ns_ident *ns, const char *after, long limit,
		 json_t **names, bool *more, struct floe_error *err)
{
	char **rows = NULL;
	size_t count = 0;

	*names = NULL;
	if (!store_table_list(s, ns, after, limit, &rows, &count, more, err))
		return ns_word_error(ns, err);
	*names = rowjson_array(rows, count, sizeof(*rows), name_json);
	store_names_free(rows, count);
	if (*names == NULL)
		return floe_err(err, FE_INTERNAL, "out of memory");
	return true;
}

bool tables_report_metrics(struct store *s, const struct ns_ident *ns, const char *name,
			   const char *report, struct floe_error *err)
{
	bool exists = false;

	if (!store_table_exists(s, ns, name, &exists, err))
		return false;
	if (!exists)
		return wording_no_such_table(ns, name, err);
	return store_metrics_insert(s, ns, name, report, err);
}
