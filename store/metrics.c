/*
 * metrics.c - the metrics_reports relation: reports engines send for a
 * table, kept for a retention period.
 */
#include "store.h"
#include "store_internal.h"

#include <stdlib.h>

enum { ST_METRICS_INSERT, ST_METRICS_EXPIRE, ST_COUNT };

/* One statement a row, its SQL laid out as SQL. */
/* clang-format off */
static const struct store_statement statements[ST_COUNT] = {
	[ST_METRICS_INSERT] = { "metrics_insert",
		"INSERT INTO metrics_reports (namespace, table_name, report) "
		"VALUES (" LEVELS("$1") ", $2, $3::jsonb)" },
	[ST_METRICS_EXPIRE] = { "metrics_expire",
		"DELETE FROM metrics_reports WHERE id IN (SELECT id FROM metrics_reports "
		"  WHERE received_at < now() - make_interval(days => $1::int) LIMIT $2::int)" },
};
/* clang-format on */

const struct store_statements store_metrics_statements = { statements, ST_COUNT, NULL };

bool store_metrics_insert(struct store *s, const struct ns_ident *ns, const char *name,
			  const char *report, struct floe_error *err)
{
	char *levels = store_levels_param(ns, err);
	PGresult *r;

	if (levels == NULL)
		return false;
	const char *params[3] = { levels, name, report };
	r = store_exec(s, &statements[ST_METRICS_INSERT], 3, params, err);
	free(levels);
	if (r == NULL)
		return false;
	PQclear(r);
	return true;
}

bool store_metrics_expire(struct store *s, long long older_than_days, int limit, long *deleted,
			  struct floe_error *err)
{
	return store_exec_expire(s, &statements[ST_METRICS_EXPIRE], older_than_days, limit, deleted,
				 err);
}
