/*
 * tables.c - existence, listing and metrics reports of tables: the
 * table routes that neither read nor write table metadata.
 */
#include "tables.h"

#include <stdlib.h>
#include <string.h>

#include "access.h"
#include "buf.h"
#include "idem.h"
#include "json.h"
#include "ports.h"
#include "wording.h"

bool tables_exists(struct store *s, const struct ns_ident *ns, const char *name, bool *exists,
		   struct floe_error *err)
{
	return store_table_exists(s, ns, name, exists, err);
}

/* Appends a string literal. */
#define APPEND_LITERAL(b, lit) buf_append((b), (lit), sizeof(lit) - 1)

/* The largest listing answer: 1,000,000 tables of the longest names. */
#define TABLES_LIST_MAX ((size_t)1 << 31)

/* The listing of tables, or of views. */
static char *list_text(struct store *s, bool views, const struct principal *who,
		       const struct ns_ident *ns, const char *after, long limit, size_t *len,
		       struct floe_error *err)
{
	char **rows = NULL;
	size_t count = 0;
	bool more = false;
	char *nsjson = NULL;
	char *token = NULL;
	char *out = NULL;
	struct buf b;

	*len = 0;
	buf_init(&b, TABLES_LIST_MAX);
	/* Whether who may list ns at all was the gate's (ROUTE_ON_LISTING);
	 * what the page shows is decided here. */
	bool listed;
	if (views)
		listed = who == NULL
				 ? store_view_list(s, ns, after, limit, &rows, &count, &more, err)
				 : store_view_list_visible(s, who->roles, who->nroles, ns, after,
							   limit, &rows, &count, &more, err);
	else
		listed = who == NULL
				 ? store_table_list(s, ns, after, limit, &rows, &count, &more, err)
				 : store_table_list_visible(s, who->roles, who->nroles, ns, after,
							    limit, &rows, &count, &more, err);
	if (!listed)
		return ns_word_error(ns, err), NULL;
	/* Built as text: 1,000 jansson objects cost ten times the query. */
	json_t *levels = ident_ns_to_json(ns);
	nsjson = levels ? json_dumps(levels, JSON_COMPACT) : NULL;
	json_decref(levels);
	if (more && count > 0) {
		struct ns_ident last = { 1, { rows[count - 1] } };
		token = page_token_encode(&last);
	}
	if (nsjson == NULL || (more && count > 0 && token == NULL))
		goto done;
	size_t nslen = strlen(nsjson);
	APPEND_LITERAL(&b, "{\"identifiers\":[");
	for (size_t i = 0; i < count; i++) {
		if (i > 0)
			APPEND_LITERAL(&b, ",");
		APPEND_LITERAL(&b, "{\"namespace\":");
		buf_append(&b, nsjson, nslen);
		APPEND_LITERAL(&b, ",\"name\":");
		fjson_buf_string(&b, rows[i], strlen(rows[i]));
		APPEND_LITERAL(&b, "}");
	}
	APPEND_LITERAL(&b, "],\"next-page-token\":");
	if (token != NULL) {
		/* Hex digits: nothing to escape. */
		APPEND_LITERAL(&b, "\"");
		buf_append(&b, token, strlen(token));
		APPEND_LITERAL(&b, "\"}");
	} else {
		APPEND_LITERAL(&b, "null}");
	}
	if (b.status == BUF_OK)
		out = buf_take(&b, len);
done:
	if (out == NULL)
		floe_err(err, FE_INTERNAL, "out of memory");
	buf_free(&b);
	free(token);
	free(nsjson);
	store_names_free(rows, count);
	return out;
}

char *tables_list_text(struct store *s, const struct principal *who, const struct ns_ident *ns,
		       const char *after, long limit, size_t *len, struct floe_error *err)
{
	return list_text(s, false, who, ns, after, limit, len, err);
}

char *views_list_text(struct store *s, const struct principal *who, const struct ns_ident *ns,
		      const char *after, long limit, size_t *len, struct floe_error *err)
{
	return list_text(s, true, who, ns, after, limit, len, err);
}

bool tables_report_metrics(struct store *s, const struct table_env *env, const struct ns_ident *ns,
			   const char *name, const char *report, struct floe_error *err)
{
	bool exists = false;

	if (!store_table_exists(s, ns, name, &exists, err))
		return false;
	if (!exists)
		return wording_no_such_table(ns, name, err);
	/* The report and its answer under an Idempotency-Key, or neither. */
	if (!store_begin(s, err))
		return false;
	bool ok = store_metrics_insert(s, ns, name, report, err) &&
		  idem_record(s, env, 204, NULL, err);
	if (ok)
		return store_commit(s, err);
	if (err->kind != FE_COMMIT_STATE_UNKNOWN)
		store_rollback(s);
	return false;
}
