/*
 * tables.h - the questions about tables that change nothing: does one
 * exist, which a namespace holds; and the metrics reports engines send.
 * Not loads, commits or drops (table.h).
 */
#ifndef FLOE_TABLES_H
#define FLOE_TABLES_H

#include <stdbool.h>
#include <jansson.h>

#include "error.h"
#include "ident.h"
#include "namespace.h"

struct store;

/* HEAD .../tables/{table}: sets *exists (false also when the namespace is
 * missing). */
bool tables_exists(struct store *s, const struct ns_ident *ns, const char *name, bool *exists,
		   struct floe_error *err) FLOE_WUR;

/* GET .../tables: the ListTablesResponse as text (caller frees; its
 * length in *len): the names in ns sorting after `after` (NULL: from the
 * start), at most limit (< 0: all), and the token of the next page when
 * more follow. FE_NO_SUCH_NAMESPACE. With who (NULL: authentication off),
 * only the tables who may see; whether who may list ns at all is asked
 * before (access_check_listing, by the gate). */
char *tables_list_text(struct store *s, const struct principal *who, const struct ns_ident *ns,
		       const char *after, long limit, size_t *len, struct floe_error *err) FLOE_WUR;

/* GET .../views: the ListTablesResponse of the views in ns, as
 * tables_list_text gives the tables. */
char *views_list_text(struct store *s, const struct principal *who, const struct ns_ident *ns,
		      const char *after, long limit, size_t *len, struct floe_error *err) FLOE_WUR;

/* POST .../tables/{table}/metrics: keeps report (a JSON text) for the
 * table. FE_NO_SUCH_TABLE. */
bool tables_report_metrics(struct store *s, const struct table_env *env, const struct ns_ident *ns,
			   const char *name, const char *report, struct floe_error *err) FLOE_WUR;

#endif
