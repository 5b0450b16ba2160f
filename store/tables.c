/*
 * tables.c - the tables relation and its commit log: load, create,
 * the compare-and-swap of a commit, drop, rename, and the table
 * locations no two tables may share.
 */
#include "store.h"
#include "store_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The advisory lock key of the no-overlap rule for table locations. */
#define LOCATION_LOCK "7310593858473447526"

enum {
	ST_TABLE_LOAD,
	ST_TABLE_LOAD_REFS,
	ST_TABLE_CREATE,
	ST_TABLE_OVERWRITE,
	ST_TABLE_CAS,
	ST_COMMIT_LANDED,
	ST_TABLE_LOCATION_CLASH,
	ST_LOCATION_TAKEN,
	ST_LOCATION_LOCK,
	ST_TABLE_LOCATIONS_AFTER,
	ST_TABLE_LIST,
	ST_TABLE_DROP,
	ST_TABLE_RENAME,
	ST_COUNT
};

/* One statement a row, its SQL laid out as SQL. */
/* clang-format off */
static const struct store_statement statements[ST_COUNT] = {
	[ST_TABLE_LOAD] = { "table_load",
		"SELECT t.id, t.table_uuid, t.metadata_location, t.metadata, t.version "
		"FROM tables t JOIN namespaces n ON n.id = t.namespace_id "
		"WHERE n.levels = " LEVELS("$1") " AND t.name = $2" },
	[ST_TABLE_LOAD_REFS] = { "table_load_refs",
		"SELECT t.id, t.table_uuid, t.metadata_location, "
		"  coalesce(t.refs_metadata, t.metadata), t.version "
		"FROM tables t JOIN namespaces n ON n.id = t.namespace_id "
		"WHERE n.levels = " LEVELS("$1") " AND t.name = $2" },
	[ST_TABLE_CREATE] = { "table_create",
		"WITH ns AS (SELECT id FROM namespaces WHERE levels = " LEVELS("$1") "), "
		"ins AS (INSERT INTO tables (namespace_id, name, table_uuid, "
		"  metadata_location, metadata, refs_metadata, location, version) "
		"  SELECT ns.id, $2, $3::uuid, $4, $5, $7, $8, 1 FROM ns "
		"  ON CONFLICT (namespace_id, name) DO NOTHING "
		"  RETURNING id, table_uuid, version) "
		"INSERT INTO commit_log (table_id, table_uuid, version, metadata_location, "
		"  previous_location, request_id) "
		"SELECT id, table_uuid, version, $4, NULL, $6 FROM ins RETURNING version" },
	[ST_TABLE_OVERWRITE] = { "table_overwrite",
		"WITH upd AS (UPDATE tables t SET table_uuid = $3::uuid, "
		"  metadata_location = $4, metadata = $5, refs_metadata = $7, location = $8, "
		"  version = t.version + 1, "
		"  updated_at = now() "
		"  FROM namespaces n, tables old "
		"  WHERE n.id = t.namespace_id AND n.levels = " LEVELS("$1") " "
		"  AND t.name = $2 AND old.id = t.id "
		"  RETURNING t.id, t.table_uuid, t.version, old.metadata_location AS prev) "
		"INSERT INTO commit_log (table_id, table_uuid, version, metadata_location, "
		"  previous_location, request_id) "
		"SELECT id, table_uuid, version, $4, prev, $6 FROM upd RETURNING version" },
	[ST_TABLE_CAS] = { "table_cas",
		"WITH upd AS (UPDATE tables SET metadata_location = $3, metadata = $4, "
		"  refs_metadata = $7, location = $8, version = version + 1, "
		"  updated_at = now() "
		"  WHERE id = $1::bigint AND version = $2::bigint "
		"  RETURNING id, table_uuid, version) "
		"INSERT INTO commit_log (table_id, table_uuid, version, metadata_location, "
		"  previous_location, request_id) "
		"SELECT id, table_uuid, version, $3, $5, $6 FROM upd RETURNING version" },
	[ST_COMMIT_LANDED] = { "commit_landed",
		"SELECT metadata_location FROM commit_log "
		"WHERE table_uuid = $1::uuid AND version = $2::bigint AND metadata_location = $3" },
	/* $1 is canonical, so every overlap is a prefix at a '/'. A dropped
	 * table whose files are not purged yet still owns its location
	 * ($3: count those too). */
	[ST_TABLE_LOCATION_CLASH] = { "table_location_clash",
		"(SELECT array_to_string(n.levels, '.') || '.' || t.name FROM tables t "
		"JOIN namespaces n ON n.id = t.namespace_id "
		"WHERE t.table_uuid IS DISTINCT FROM $2::uuid AND (t.location = $1 "
		"  OR starts_with(t.location, rtrim($1, '/') || '/') "
		"  OR starts_with($1, rtrim(t.location, '/') || '/')) "
		"LIMIT 1) "
		"UNION ALL "
		"(SELECT array_to_string(p.namespace, '.') || '.' || p.table_name "
		"  || ' (dropped, its files not purged yet)' FROM purges p "
		"WHERE $3::boolean AND (p.location = $1 "
		"  OR starts_with(p.location, rtrim($1, '/') || '/') "
		"  OR starts_with($1, rtrim(p.location, '/') || '/')) "
		"LIMIT 1) "
		"LIMIT 1" },
	/* $1: locations joined by \x1f; exact matches use the index. */
	[ST_LOCATION_TAKEN] = { "location_taken",
		"SELECT l FROM ("
		"  SELECT location AS l FROM tables "
		"  WHERE location = ANY (string_to_array($1::text, E'\\x1f')) "
		"  UNION ALL SELECT location FROM purges "
		"  WHERE location = ANY (string_to_array($1::text, E'\\x1f'))) x "
		"ORDER BY length(l) LIMIT 1" },
	/* Serialises every location check with the insert or swap that
	 * follows it in the same transaction, across replicas. */
	[ST_LOCATION_LOCK] = { "location_lock",
		"SELECT pg_advisory_xact_lock(" LOCATION_LOCK ")" },
	[ST_TABLE_LOCATIONS_AFTER] = { "table_locations_after",
		"SELECT id, location FROM tables WHERE id > $1::bigint ORDER BY id "
		"LIMIT $2::int" },
	[ST_TABLE_LIST] = { "table_list",
		"SELECT t.name FROM tables t "
		"WHERE t.namespace_id = $1::bigint AND ($2::text IS NULL OR t.name > $2) "
		"ORDER BY t.name LIMIT $3::bigint" },
	/* With $3 (purge), the tombstone is written by the same statement
	 * that deletes the row: no moment where the files have neither. */
	[ST_TABLE_DROP] = { "table_drop",
		"WITH del AS (DELETE FROM tables t USING namespaces n "
		"  WHERE n.id = t.namespace_id AND n.levels = " LEVELS("$1") " "
		"  AND t.name = $2 "
		"  RETURNING t.id, t.table_uuid, t.metadata_location, t.metadata, t.version, "
		"    t.location, n.levels), "
		"tomb AS (INSERT INTO purges (location, table_uuid, namespace, table_name) "
		"  SELECT location, table_uuid, levels, $2 FROM del WHERE $3::boolean) "
		"SELECT id, table_uuid, metadata_location, metadata, version FROM del" },
	[ST_TABLE_RENAME] = { "table_rename",
		"UPDATE tables t SET name = $4, updated_at = now(), "
		"  namespace_id = (SELECT id FROM namespaces WHERE levels = " LEVELS("$3") ") "
		"FROM namespaces n "
		"WHERE n.id = t.namespace_id AND n.levels = " LEVELS("$1") " "
		"AND t.name = $2 RETURNING t.id" },
};
/* clang-format on */

const struct store_statements store_table_statements = { statements, ST_COUNT };

void store_table_row_clear(struct table_row *row)
{
	free(row->metadata_location);
	free(row->metadata);
	memset(row, 0, sizeof(*row));
}

/* Fills row from columns id, uuid, location, metadata, version. */
static bool row_from_result(PGresult *r, int i, struct table_row *row, struct floe_error *err)
{
	memset(row, 0, sizeof(*row));
	row->id = strtoll(PQgetvalue(r, i, 0), NULL, 10);
	(void)snprintf(row->uuid, sizeof(row->uuid), "%s", PQgetvalue(r, i, 1));
	if (!PQgetisnull(r, i, 2))
		row->metadata_location = strdup(PQgetvalue(r, i, 2));
	row->metadata_len = (size_t)PQgetlength(r, i, 3);
	row->metadata = malloc(row->metadata_len + 1);
	if (row->metadata == NULL || (!PQgetisnull(r, i, 2) && row->metadata_location == NULL)) {
		store_table_row_clear(row);
		return floe_err(err, FE_INTERNAL, "out of memory");
	}
	memcpy(row->metadata, PQgetvalue(r, i, 3), row->metadata_len + 1);
	row->version = strtoll(PQgetvalue(r, i, 4), NULL, 10);
	return true;
}

/* A table that is not there: FE_NO_SUCH_TABLE, which the catalog words
 * (it asks whether the namespace is missing too). */
static bool table_missing(struct floe_error *err)
{
	return floe_err(err, FE_NO_SUCH_TABLE, "no such table");
}

bool store_table_load(struct store *s, const struct ns_ident *ns, const char *name,
		      struct table_row *row, struct floe_error *err)
{
	return store_table_load_as(s, ns, name, false, row, err);
}

/* The one row a table statement answered (r is cleared here), or
 * FE_NO_SUCH_TABLE when it answered none. */
static bool table_row_of(PGresult *r, struct table_row *row, struct floe_error *err)
{
	bool ok;

	if (r == NULL)
		return false;
	if (PQntuples(r) == 0) {
		PQclear(r);
		return table_missing(err);
	}
	ok = row_from_result(r, 0, row, err);
	PQclear(r);
	return ok;
}

bool store_table_load_as(struct store *s, const struct ns_ident *ns, const char *name,
			 bool refs_only, struct table_row *row, struct floe_error *err)
{
	char *levels = store_levels_param(ns, err);
	PGresult *r;

	memset(row, 0, sizeof(*row));
	if (levels == NULL)
		return false;
	const char *params[2] = { levels, name };
	r = store_exec(s, &statements[refs_only ? ST_TABLE_LOAD_REFS : ST_TABLE_LOAD], 2, params,
		       err);
	free(levels);
	return table_row_of(r, row, err);
}

bool store_table_exists(struct store *s, const struct ns_ident *ns, const char *name, bool *exists,
			struct floe_error *err)
{
	char *levels = store_levels_param(ns, err);
	PGresult *r;

	*exists = false;
	if (levels == NULL)
		return false;
	const char *params[2] = { levels, name };
	r = store_exec(s, &statements[ST_TABLE_LOAD], 2, params, err);
	free(levels);
	if (r == NULL)
		return false;
	*exists = PQntuples(r) > 0;
	PQclear(r);
	return true;
}

static bool table_insert(struct store *s, const struct store_statement *st,
			 const struct ns_ident *ns, const char *name, const char *uuid,
			 const char *location, const char *metadata, const char *refs_metadata,
			 const char *table_location, const char *request_id, bool *done,
			 struct floe_error *err)
{
	char *levels = store_levels_param(ns, err);
	PGresult *r;

	*done = false;
	if (levels == NULL)
		return false;
	const char *params[8] = { levels,   name,       uuid,          location,
				  metadata, request_id, refs_metadata, table_location };
	r = store_exec(s, st, 8, params, err);
	free(levels);
	if (r == NULL) {
		/* The uuid is taken (a name taken inserts nothing): the
		 * SQLSTATE tells the catalog which. */
		if (strcmp(s->sqlstate, "23505") == 0) {
			floe_err(err, FE_ALREADY_EXISTS, "the table uuid is already registered");
			if (err != NULL)
				(void)snprintf(err->sqlstate, sizeof(err->sqlstate), "%s",
					       s->sqlstate);
			return false;
		}
		return false;
	}
	*done = PQntuples(r) == 1;
	PQclear(r);
	return true;
}

bool store_table_create(struct store *s, const struct ns_ident *ns, const char *name,
			const char *uuid, const char *metadata_location, const char *metadata,
			const char *refs_metadata, const char *table_location,
			const char *request_id, struct floe_error *err)
{
	bool inserted;
	bool exists = false;

	if (!table_insert(s, &statements[ST_TABLE_CREATE], ns, name, uuid, metadata_location,
			  metadata, refs_metadata, table_location, request_id, &inserted, err))
		return false;
	if (inserted)
		return true;
	if (!store_table_exists(s, ns, name, &exists, err))
		return false;
	if (!exists)
		return table_missing(err);
	return floe_err(err, FE_ALREADY_EXISTS, "the table already exists");
}

bool store_table_overwrite(struct store *s, const struct ns_ident *ns, const char *name,
			   const char *uuid, const char *metadata_location, const char *metadata,
			   const char *refs_metadata, const char *table_location,
			   const char *request_id, struct floe_error *err)
{
	bool updated;

	if (!table_insert(s, &statements[ST_TABLE_OVERWRITE], ns, name, uuid, metadata_location,
			  metadata, refs_metadata, table_location, request_id, &updated, err))
		return false;
	if (!updated)
		return table_missing(err);
	return true;
}

bool store_table_cas(struct store *s, long long id, long long expected_version,
		     const char *metadata_location, const char *metadata, const char *refs_metadata,
		     const char *table_location, const char *previous_location,
		     const char *request_id, bool *won, struct floe_error *err)
{
	char idp[32], verp[32];
	PGresult *r;

	*won = false;
	(void)snprintf(idp, sizeof(idp), "%lld", id);
	(void)snprintf(verp, sizeof(verp), "%lld", expected_version);
	const char *params[8] = {
		idp,        verp,          metadata_location, metadata, previous_location,
		request_id, refs_metadata, table_location
	};
	r = store_exec(s, &statements[ST_TABLE_CAS], 8, params, err);
	if (r == NULL) {
		/* Run on its own, the statement may have committed before the
		 * connection broke: the client must not assume either outcome. */
		if (err != NULL && err->outcome == FO_UNKNOWN)
			floe_err(
				err, FE_COMMIT_STATE_UNKNOWN,
				"the database connection broke during the commit; its outcome is unknown");
		return false;
	}
	*won = PQntuples(r) == 1;
	PQclear(r);
	return true;
}

bool store_commit_landed(struct store *s, const char *table_uuid, long long version,
			 const char *metadata_location, bool *landed, struct floe_error *err)
{
	char verp[32];
	PGresult *r;

	*landed = false;
	(void)snprintf(verp, sizeof(verp), "%lld", version);
	const char *params[3] = { table_uuid, verp, metadata_location };
	r = store_exec(s, &statements[ST_COMMIT_LANDED], 3, params, err);
	if (r == NULL)
		return false;
	*landed = PQntuples(r) > 0;
	PQclear(r);
	return true;
}

static void name_clear(void *row)
{
	char **name = row;

	free(*name);
	*name = NULL;
}

void store_names_free(char **names, size_t count)
{
	store_rows_free(names, count, sizeof(*names), name_clear);
}

static bool name_fill(PGresult *r, int i, void *row)
{
	return store_col_copy(r, i, 0, row);
}

bool store_table_list(struct store *s, const struct ns_ident *ns, const char *after, long limit,
		      char ***names, size_t *count, bool *more, struct floe_error *err)
{
	char *levels = store_levels_param(ns, err);
	char nsid[32];
	char limit_p[32];
	bool found = false;
	void *out = NULL;
	PGresult *r;

	*names = NULL;
	*count = 0;
	*more = false;
	if (levels == NULL)
		return false;
	bool ok = store_ns_lookup_id(s, levels, nsid, sizeof(nsid), &found, err);
	free(levels);
	if (!ok)
		return false;
	if (!found)
		return store_ns_missing(err);
	(void)snprintf(limit_p, sizeof(limit_p), "%ld", limit + 1);
	const char *params[3] = { nsid, after, limit < 0 ? NULL : limit_p };
	r = store_exec(s, &statements[ST_TABLE_LIST], 3, params, err);
	if (r == NULL)
		return false;
	ok = store_rows_read(r, store_page(r, limit, more), sizeof(**names), name_fill, name_clear,
			     &out, count, err);
	PQclear(r);
	*names = out;
	return ok;
}

bool store_table_drop(struct store *s, const struct ns_ident *ns, const char *name, bool purge,
		      struct table_row *row, struct floe_error *err)
{
	char *levels = store_levels_param(ns, err);
	PGresult *r;

	memset(row, 0, sizeof(*row));
	if (levels == NULL)
		return false;
	const char *params[3] = { levels, name, purge ? "true" : "false" };
	r = store_exec(s, &statements[ST_TABLE_DROP], 3, params, err);
	free(levels);
	return table_row_of(r, row, err);
}

bool store_table_rename(struct store *s, const struct ns_ident *from_ns, const char *from,
			const struct ns_ident *to_ns, const char *to, struct floe_error *err)
{
	char *fl = store_levels_param(from_ns, err);
	char *tl = store_levels_param(to_ns, err);
	PGresult *r = NULL;
	bool ok = false;
	bool exists = false;

	if (fl == NULL || tl == NULL)
		goto done;
	if (!store_ns_exists(s, to_ns, &exists, err))
		goto done;
	if (!exists) {
		store_ns_missing(err);
		goto done;
	}
	const char *params[4] = { fl, from, tl, to };
	r = store_exec(s, &statements[ST_TABLE_RENAME], 4, params, err);
	if (r == NULL) {
		if (strcmp(s->sqlstate, "23505") == 0)
			floe_err(err, FE_ALREADY_EXISTS, "the table already exists");
		else if (strcmp(s->sqlstate, "23502") == 0)
			store_ns_missing(err); /* dropped meanwhile */
		goto done;
	}
	if (PQntuples(r) == 0) {
		table_missing(err);
		goto done;
	}
	ok = true;
done:
	PQclear(r);
	free(fl);
	free(tl);
	return ok;
}

static bool location_clash(struct store *s, const char *location, const char *uuid,
			   bool with_purges, char **other, struct floe_error *err)
{
	const char *params[3] = { location, uuid, with_purges ? "true" : "false" };

	return store_exec_text(s, &statements[ST_TABLE_LOCATION_CLASH], 3, params, other, err);
}

bool store_table_location_clash(struct store *s, const char *location, const char *uuid,
				char **other, struct floe_error *err)
{
	return location_clash(s, location, uuid, true, other, err);
}

bool store_live_location_clash(struct store *s, const char *location, char **other,
			       struct floe_error *err)
{
	return location_clash(s, location, NULL, false, other, err);
}

bool store_location_taken(struct store *s, const char *const *locations, size_t n, char **taken,
			  struct floe_error *err)
{
	size_t len = 1;
	char *joined;
	bool ok;

	*taken = NULL;
	for (size_t i = 0; i < n; i++)
		len += strlen(locations[i]) + 1;
	joined = malloc(len);
	if (joined == NULL)
		return floe_err(err, FE_INTERNAL, "out of memory");
	joined[0] = '\0';
	for (size_t i = 0, at = 0; i < n; i++) {
		size_t l = strlen(locations[i]);
		if (i > 0)
			joined[at++] = '\x1f';
		memcpy(joined + at, locations[i], l + 1);
		at += l;
	}
	const char *params[1] = { joined };
	ok = store_exec_text(s, &statements[ST_LOCATION_TAKEN], 1, params, taken, err);
	free(joined);
	return ok;
}

bool store_location_lock(struct store *s, struct floe_error *err)
{
	PGresult *r = store_exec(s, &statements[ST_LOCATION_LOCK], 0, NULL, err);

	if (r == NULL)
		return false;
	PQclear(r);
	return true;
}

static void location_clear(void *dst)
{
	struct table_location *row = dst;

	free(row->location);
	row->location = NULL;
}

void store_table_locations_free(struct table_location *rows, size_t count)
{
	store_rows_free(rows, count, sizeof(*rows), location_clear);
}

static bool location_fill(PGresult *r, int i, void *dst)
{
	struct table_location *row = dst;

	row->id = store_col_ll(r, i, 0);
	return store_col_copy(r, i, 1, &row->location);
}

bool store_table_locations_after(struct store *s, long long after_id, int limit,
				 struct table_location **rows, size_t *count,
				 struct floe_error *err)
{
	char idp[32], limp[16];
	const char *params[2] = { idp, limp };
	void *out = NULL;

	*rows = NULL;
	*count = 0;
	(void)snprintf(idp, sizeof(idp), "%lld", after_id);
	(void)snprintf(limp, sizeof(limp), "%d", limit);
	PGresult *r = store_exec(s, &statements[ST_TABLE_LOCATIONS_AFTER], 2, params, err);
	if (r == NULL)
		return false;
	bool ok = store_rows_read(r, PQntuples(r), sizeof(**rows), location_fill, location_clear,
				  &out, count, err);
	PQclear(r);
	*rows = out;
	return ok;
}
