/*
 * rows.c - small shapes every relation's file repeats: identifier
 * parameters, one-value and bounded-delete statements, result columns
 * read into C structs, and arrays of such rows.
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
bool store_exec_expire(struct store *s, const struct store_statement *st, long long age, int limit,
		       long *deleted, struct floe_error *err)
{
	char agep[32], limp[16];
	const char *params[2] = { agep, limp };

	*deleted = 0;
	(void)snprintf(agep, sizeof(agep), "%lld", age);
	(void)snprintf(limp, sizeof(limp), "%d", limit);
	PGresult *r = store_exec(s, st, 2, params, err);
	if (r == NULL)
		return false;
	*deleted = strtol(PQcmdTuples(r), NULL, 10);
	PQclear(r);
	return true;
}

/* --- C structs from rows --- */

bool store_col_copy(PGresult *r, int i, int c, char **out)
{
	*out = NULL;
	if (PQgetisnull(r, i, c))
		return true;
	*out = strdup(PQgetvalue(r, i, c));
	return *out != NULL;
}

void store_col_text(PGresult *r, int i, int c, char *buf, size_t len)
{
	(void)snprintf(buf, len, "%s", PQgetvalue(r, i, c));
}

long long store_col_ll(PGresult *r, int i, int c)
{
	return strtoll(PQgetvalue(r, i, c), NULL, 10);
}

bool store_col_ns(PGresult *r, int i, int c, struct ns_ident *ns)
{
	memset(ns, 0, sizeof(*ns));
	if (PQgetisnull(r, i, c))
		return true;
	for (const char *p = PQgetvalue(r, i, c);;) {
		const char *sep = strchr(p, IDENT_SEPARATOR);
		size_t n = sep ? (size_t)(sep - p) : strlen(p);
		if (ns->nlevels == IDENT_MAX_LEVELS)
			goto fail;
		ns->levels[ns->nlevels] = strndup(p, n);
		if (ns->levels[ns->nlevels] == NULL)
			goto fail;
		ns->nlevels++;
		if (sep == NULL)
			return true;
		p = sep + 1;
	}
fail:
	ident_ns_clear(ns);
	return false;
}

bool store_rows_read(PGresult *r, int nrows, size_t size,
		     bool (*fill)(PGresult *r, int i, void *row), void (*clear)(void *row),
		     void **rows, size_t *count, struct floe_error *err)
{
	char *out = calloc(nrows > 0 ? (size_t)nrows : 1, size);

	*rows = NULL;
	*count = 0;
	if (out == NULL)
		return floe_err(err, FE_INTERNAL, "out of memory");
	for (int i = 0; i < nrows; i++) {
		if (!fill(r, i, out + (size_t)i * size)) {
			store_rows_free(out, (size_t)i, size, clear);
			return floe_err(err, FE_INTERNAL, "out of memory");
		}
	}
	*rows = out;
	*count = (size_t)nrows;
	return true;
}

bool store_get_row(struct store *s, const struct store_statement *st, const char *key,
		   bool (*fill)(PGresult *r, int i, void *row), void *row, bool *found,
		   struct floe_error *err)
{
	const char *params[1] = { key };

	return store_get_row_by(s, st, 1, params, fill, row, found, err);
}

bool store_get_row_by(struct store *s, const struct store_statement *st, int nparams,
		      const char *const *params, bool (*fill)(PGresult *r, int i, void *row),
		      void *row, bool *found, struct floe_error *err)
{
	PGresult *r = store_exec(s, st, nparams, params, err);
	bool ok = true;

	*found = false;
	if (r == NULL)
		return false;
	if (PQntuples(r) == 1) {
		ok = fill(r, 0, row);
		*found = ok;
		if (!ok)
			floe_err(err, FE_INTERNAL, "out of memory");
	}
	PQclear(r);
	return ok;
}

int store_page(PGresult *r, long limit, bool *more)
{
	int rows = PQntuples(r);

	*more = false;
	if (limit >= 0 && rows > limit) {
		*more = true;
		rows = (int)limit;
	}
	return rows;
}

bool store_names_read(PGresult *r, int n, int c, char ***names, size_t *count,
		      struct floe_error *err)
{
	/* A listing is thousands of short names: one allocation, not one a
	 * name. */
	size_t bytes = ((size_t)n + 1) * sizeof(char *);

	*names = NULL;
	*count = 0;
	for (int i = 0; i < n; i++)
		bytes += (size_t)PQgetlength(r, i, c) + 1;
	char **out = malloc(bytes);
	if (out == NULL)
		return floe_err(err, FE_INTERNAL, "out of memory");
	char *p = (char *)(out + (size_t)n + 1);
	for (int i = 0; i < n; i++) {
		size_t len = (size_t)PQgetlength(r, i, c);
		memcpy(p, PQgetvalue(r, i, c), len + 1);
		out[i] = p;
		p += len + 1;
	}
	out[n] = NULL;
	*names = out;
	*count = (size_t)n;
	return true;
}

char *store_ids_param(const long long *ids, size_t n, struct floe_error *err)
{
	/* "{" then at most 20 digits, a sign and a comma an id, "}". */
	size_t cap = 3 + n * 22;
	char *out = malloc(cap);
	size_t len = 0;

	if (out == NULL) {
		floe_err(err, FE_INTERNAL, "out of memory");
		return NULL;
	}
	out[len++] = '{';
	for (size_t i = 0; i < n; i++)
		len += (size_t)snprintf(out + len, cap - len, "%s%lld", i ? "," : "", ids[i]);
	(void)snprintf(out + len, cap - len, "}");
	return out;
}

bool store_list_after(struct store *s, const struct store_statement *st, const char *after,
		      long limit, size_t size, bool (*fill)(PGresult *r, int i, void *row),
		      void (*clear)(void *row), void **rows, size_t *count, bool *more,
		      struct floe_error *err)
{
	char limit_p[32];

	*rows = NULL;
	*count = 0;
	*more = false;
	/* One row more than asked tells whether another page follows. */
	(void)snprintf(limit_p, sizeof(limit_p), "%ld", limit + 1);
	const char *params[2] = { after, limit < 0 ? NULL : limit_p };
	PGresult *r = store_exec(s, st, 2, params, err);
	if (r == NULL)
		return false;
	bool ok = store_rows_read(r, store_page(r, limit, more), size, fill, clear, rows, count,
				  err);
	PQclear(r);
	return ok;
}
