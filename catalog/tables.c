/*
 * tables.c - existence, listing and metrics reports of tables: the
 * table routes that neither read nor write table metadata.
 */
#include "tables.h"

#include "store.h"

bool tables_exists(struct store *s, const struct ns_ident *ns, const char *name,
		   bool *exists, struct floe_error *err)
{
	return store_table_exists(s, ns, name, exists, err);
}

bool tables_list(struct store *s, const struct ns_ident *ns, const char *after, long limit,
		 json_t **names, bool *more, struct floe_error *err)
{
	return store_table_list(s, ns, after, limit, names, more, err);
}

bool tables_report_metrics(struct store *s, const struct ns_ident *ns, const char *name,
			   const char *report, struct floe_error *err)
{
	bool exists = false;

	if (!store_table_exists(s, ns, name, &exists, err))
		return false;
	if (!exists)
		return floe_err(err, FE_NO_SUCH_TABLE, "table does not exist: %s", name);
	return store_metrics_insert(s, ns, name, report, err);
}
