/*
 * rows.c - small shapes every relation's file repeats: identifier
 * parameters, one-value and bounded-delete statements, and result
 * columns read as JSON.
 */
#include "store.h"
#include "store_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The 0x1F-joined levels of ns, as a new string or NULL (err set). */
char *store_levels_param(const struct ns_ident *ns, struct floe_error *err)
{
	char *p = ident_ns_join(ns);

	if (p == NULL)
		floe_err(err, FE_INTERNAL, "out of memory");
	return p;
}

bool store_exec_noparams(struct store *s, const struct store_statement *st,
			 struct floe_error *err)
{
	PGresult *r = store_exec(s, st, 0, NULL, err);
	if (r == NULL)
		return false;
	PQclear(r);
	return true;
}

/* Runs a statement whose answer is at most one text value: *out is a copy
 * of the first column of the first row (caller frees), or NULL when there
 * is no row. */
bool store_exec_text(struct store *s, const struct store_statement *st, int nparams,
		     const char *const *params, char **out, struct floe_error *err)
{
	PGresult *r = store_exec(s, st, nparams, params, err);

	*out = NULL;
	if (r == NULL)
		return false;
	if (PQntuples(r) > 0) {
		*out = strdup(PQgetvalue(r, 0, 0));
		if (*out == NULL) {
			PQclear(r);
			return floe_err(err, FE_INTERNAL, "out of memory");
		}
	}
	PQclear(r);
	return true;
}

/* Runs a bounded DELETE with (age, limit) parameters; *deleted counts. */
bool store_exec_expire(struct store *s, const struct store_statement *st, int age,
		       int limit, long *deleted, struct floe_error *err)
{
	char agep[16], limp[16];
	const char *params[2] = { agep, limp };

	*deleted = 0;
	snprintf(agep, sizeof(agep), "%d", age);
	snprintf(limp, sizeof(limp), "%d", limit);
	PGresult *r = store_exec(s, st, 2, params, err);
	if (r == NULL)
		return false;
	*deleted = strtol(PQcmdTuples(r), NULL, 10);
	PQclear(r);
	return true;
}

/* --- JSON from rows --- */

json_t *store_col_str(PGresult *r, int i, int c)
{
	return PQgetisnull(r, i, c) ? json_null() : json_string(PQgetvalue(r, i, c));
}

json_t *store_col_int(PGresult *r, int i, int c)
{
	return PQgetisnull(r, i, c) ? json_null()
				    : json_integer(strtoll(PQgetvalue(r, i, c), NULL, 10));
}

/* A 0x1F-joined levels column as a JSON array (null when NULL). */
json_t *store_col_levels(PGresult *r, int i, int c)
{
	if (PQgetisnull(r, i, c))
		return json_null();
	json_t *arr = json_array();
	for (const char *p = PQgetvalue(r, i, c);;) {
		const char *sep = strchr(p, IDENT_SEPARATOR);
		size_t n = sep ? (size_t)(sep - p) : strlen(p);
		json_array_append_new(arr, json_stringn(p, n));
		if (sep == NULL)
			break;
		p = sep + 1;
	}
	return arr;
}

json_t *store_col_json(PGresult *r, int i, int c)
{
	json_error_t jerr;
	if (PQgetisnull(r, i, c))
		return json_null();
	json_t *v = json_loads(PQgetvalue(r, i, c), 0, &jerr);
	return v ? v : json_null();
}

/* Runs a one-parameter statement and turns its first row (if any) into
 * *out with from_row; *out is NULL when there is no row. */
bool store_get_one(struct store *s, const struct store_statement *st, const char *key,
		   json_t *(*from_row)(PGresult *r, int i), json_t **out,
		   struct floe_error *err)
{
	const char *params[1] = { key };
	PGresult *r = store_exec(s, st, 1, params, err);

	*out = NULL;
	if (r == NULL)
		return false;
	if (PQntuples(r) == 1)
		*out = from_row(r, 0);
	PQclear(r);
	return true;
}
