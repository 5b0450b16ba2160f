/*
 * tables.c - the tables relation and its commit log: load, create,
 * the compare-and-swap of a commit, drop, rename, and the table
 * locations no two tables may share.
 *
 * Past 1,000 lines on purpose: its statements are one relation's and
 * share the row readers below; the commit's compare-and-swap and the
 * loads it races against are best read side by side.
 */
#include "store.h"
#include "store_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gzip.h"

/* The advisory lock key of the no-overlap rule for table locations
 * before migration 0029, now taken shared (ST_LOCATION_LOCK). */
#define LOCATION_LOCK "7310593858473447526"
/* The first key of the two-key advisory locks on location keys (the
 * second is the key's hashtext): a space of their own, apart from the
 * one-key locks. */
#define LOCATION_LOCK_CLASS "1718382437"
/* The most prefixes of a location that a claim locks one by one. */
#define LOCATION_LOCK_DEPTH 64

enum {
	ST_TABLE_LOAD,
	ST_TABLE_LOAD_REFS,
	ST_TABLE_LOAD_GZ,
	ST_TABLE_LOAD_REFS_GZ,
	ST_TABLE_CREATE,
	ST_TABLE_OVERWRITE,
	ST_TABLE_CAS,
	ST_COMMIT_LANDED,
	ST_TABLE_LOCATION_CLASH,
	ST_LOCATION_TAKEN,
	ST_LOCATION_LOCK,
	ST_LOCATION_LOCK_ALL,
	ST_TABLE_LOCATIONS_AFTER,
	ST_TABLE_LIST,
	ST_TABLE_DROP,
	ST_TABLE_RENAME,
	ST_TABLE_LIST_VISIBLE,
	ST_NAME_KIND,
	ST_VIEW_LOAD,
	ST_VIEW_CREATE,
	ST_VIEW_DROP,
	ST_VIEW_RENAME,
	ST_VIEW_LIST,
	ST_VIEW_LIST_VISIBLE,
	ST_TABLE_LOCATION,
	ST_TABLE_COMMITS,
	ST_DROPPED_FIND,
	ST_TABLE_UNDROP,
	ST_DROPPED_LIST,
	ST_DROPPED_EXPIRE,
	ST_DROPPED_SET_CONTROLS,
	ST_COUNT
};

/*
 * Tables and views share one relation (tables, told apart by kind), so a
 * name is one object's in its namespace, the no-overlap rule of locations
 * holds for both, and a namespace holding views is not empty. These are
 * the statements both kinds make, for kind K ('table' or 'view').
 */
/* clang-format off */
/* One object by namespace levels ($1) and name ($2), in warehouse $3. */
#define OBJECT_LOAD(K) \
	"SELECT t.id, t.table_uuid, t.metadata_location, t.metadata, t.version " \
	"FROM tables t JOIN namespaces n ON n.id = t.namespace_id " \
	"WHERE " IN_WH("n", "$3") " AND n.levels = " LEVELS("$1") " " \
	"AND t.name = $2 AND t.kind = '" K "'"
/* The names of a namespace (of warehouse $4) after $2, at most $3: no
 * row when the namespace is missing, one NULL name when it holds none. */
#define OBJECT_LIST(K) \
	"SELECT t.name FROM namespaces n LEFT JOIN LATERAL (" \
	"  SELECT name FROM tables " \
	"  WHERE namespace_id = n.id AND kind = '" K "' " \
	"  AND ($2::text IS NULL OR name > $2) " \
	"  ORDER BY name LIMIT $3::bigint) t ON true " \
	"WHERE " IN_WH("n", "$4") " AND n.levels = " LEVELS("$1")
/* OBJECT_LIST with $4 (role ids) and the warehouse in $5: every object
 * when the roles hold a grant on the catalog, the namespace or above,
 * else the objects with a grant of their own. */
#define OBJECT_LIST_VISIBLE(K) \
	"SELECT t.name FROM namespaces n LEFT JOIN LATERAL (" \
	"  SELECT tb.name FROM tables tb " \
	"  WHERE tb.namespace_id = n.id AND tb.kind = '" K "' " \
	"  AND ($2::text IS NULL OR tb.name > $2) " \
	"  AND (" GRANT_AT_OR_ABOVE("$4", "n.levels", "$5") " " \
	"    OR EXISTS (SELECT 1 FROM grants g WHERE g.role_id = ANY($4::bigint[]) " \
	"      AND g.table_id = tb.id)) " \
	"  ORDER BY tb.name LIMIT $3::bigint) t ON true " \
	"WHERE " IN_WH("n", "$5") " AND n.levels = " LEVELS("$1")
/* Moves ($1, $2) to ($3, $4), both in warehouse $5. */
#define OBJECT_RENAME(K) \
	"UPDATE tables t SET name = $4, updated_at = now(), " \
	"  namespace_id = (SELECT id FROM namespaces d " \
	"    WHERE " IN_WH("d", "$5") " AND d.levels = " LEVELS("$3") ") " \
	"FROM namespaces n " \
	"WHERE n.id = t.namespace_id AND " IN_WH("n", "$5") " AND n.levels = " LEVELS("$1") " " \
	"AND t.name = $2 AND t.kind = '" K "' RETURNING t.id"
/* clang-format on */

/* The deflated forms every write of the metadata keeps beside it
 * (migration 0007), parameters $9 to $14 of those statements. */
#define GZ_COLUMNS \
	"metadata_gz, metadata_gz_crc, metadata_gz_size, refs_gz, refs_gz_crc, refs_gz_size"
#define GZ_VALUES "$9::bytea, $10::bigint, $11::bigint, $12::bytea, $13::bigint, $14::bigint"
#define GZ_PARAMS 6

/* Who committed and the refs the commit set (migration 0009), parameters
 * $15 to $17 of the statements that write a commit_log row. */
#define BY_COLUMNS "principal, client_id, refs"
#define BY_VALUES "coalesce($15, 'anonymous'), $16, string_to_array($17::text, E'\\x1f')"
#define BY_PARAMS 3

/* clang-format off */
/* The key of a location in relation R, as migration 0029 indexes it:
 * canonical, one trailing '/', compared byte-wise. */
#define LOCATION_KEY(R) "(rtrim(" R ".location, '/') || '/') COLLATE \"C\""
/* Row R's location holds key $1 (its key is one of $1's prefixes $4). */
#define KEY_HOLDS(R) LOCATION_KEY(R) " = ANY ($4::text[])"
/* Row R's location is key $1's or lies inside it. */
#define KEY_INSIDE(R) \
	LOCATION_KEY(R) " >= $1::text AND " LOCATION_KEY(R) " < left($1::text, -1) || '0'"
/* The name of one live object of relation REL whose location meets
 * WHERE; its namespace looked up for that row alone, so no plan joins
 * the namespaces first. */
#define LOCATION_CLASH(REL, WHERE) \
	"(SELECT (SELECT array_to_string(n.levels, '.') FROM namespaces n " \
	"  WHERE n.id = t.namespace_id) || '.' || t.name FROM " REL " t " \
	"WHERE " WHERE " LIMIT 1)"
/* The name of one dropped table waiting for its purge whose location meets WHERE. */
#define LOCATION_CLASH_PURGE(WHERE) \
	"(SELECT array_to_string(p.namespace, '.') || '.' || p.table_name " \
	"  || ' (dropped, its files not purged yet)' FROM purges p " \
	"WHERE $3::boolean AND " WHERE " LIMIT 1)"
/* clang-format on */

/* A load of the deflated form: columns id, uuid, location, the text
 * when no deflated form of this version is kept (else NULL), version,
 * the deflated form, its CRC-32 and the text's length. */
#define GZ_LOAD(text, gz, crc, size)                                           \
	"SELECT t.id::text, t.table_uuid::text, t.metadata_location, "         \
	"  CASE WHEN g.ok THEN NULL ELSE " text " END, t.version::text, "      \
	"  CASE WHEN g.ok THEN " gz " END, (" crc ")::text, (" size ")::text " \
	"FROM tables t JOIN namespaces n ON n.id = t.namespace_id "            \
	"CROSS JOIN LATERAL (SELECT coalesce(t.gz_version = t.version AND " gz \
	"  IS NOT NULL, false) AS ok) g "                                      \
	"WHERE " IN_WH("n", "$3") " AND n.levels = " LEVELS(                   \
		"$1") " "                                                      \
		      "AND t.name = $2 AND t.kind = 'table'"

/* A new object of kind K at version 1, and its first commit_log row; no
 * row when the name is taken or the namespace (of warehouse $18) is
 * missing. */
/* clang-format off */
#define OBJECT_CREATE(K) \
	"WITH ns AS (SELECT id FROM namespaces n " \
	"  WHERE " IN_WH("n", "$18") " AND n.levels = " LEVELS("$1") "), " \
	"ins AS (INSERT INTO tables (namespace_id, name, kind, table_uuid, " \
	"  metadata_location, metadata, refs_metadata, location, version, " \
	"  " GZ_COLUMNS ", gz_version) " \
	"  SELECT ns.id, $2, '" K "', $3::uuid, $4, $5, $7, $8, 1, " GZ_VALUES ", 1 FROM ns " \
	"  ON CONFLICT (namespace_id, name) DO NOTHING " \
	"  RETURNING id, table_uuid, version) " \
	"INSERT INTO commit_log (table_id, table_uuid, version, metadata_location, " \
	"  previous_location, request_id, " BY_COLUMNS ") " \
	"SELECT id, table_uuid, version, $4, NULL, $6, " BY_VALUES " FROM ins " \
	"RETURNING version, pg_current_xact_id()::text"
/* clang-format on */

/* One statement a row, its SQL laid out as SQL. */
/* clang-format off */
static const struct store_statement statements[ST_COUNT] = {
	[ST_TABLE_LOAD] = { "table_load", OBJECT_LOAD("table") },
	[ST_TABLE_LOAD_REFS] = { "table_load_refs",
		"SELECT t.id, t.table_uuid, t.metadata_location, "
		"  coalesce(t.refs_metadata, t.metadata), t.version "
		"FROM tables t JOIN namespaces n ON n.id = t.namespace_id "
		"WHERE " IN_WH("n", "$3") " AND n.levels = " LEVELS("$1") " "
		"AND t.name = $2 AND t.kind = 'table'" },
	/* The deflated form when it was made for this version (column 3
	 * is then NULL), else the text; run with store_exec_binary, so the
	 * deflated bytes cross without hex (every other column is text). */
	[ST_TABLE_LOAD_GZ] = { "table_load_gz",
		GZ_LOAD("t.metadata", "t.metadata_gz", "t.metadata_gz_crc", "t.metadata_gz_size") },
	[ST_TABLE_LOAD_REFS_GZ] = { "table_load_refs_gz",
		GZ_LOAD("coalesce(t.refs_metadata, t.metadata)",
			"CASE WHEN t.refs_metadata IS NULL THEN t.metadata_gz ELSE t.refs_gz END",
			"CASE WHEN t.refs_metadata IS NULL THEN t.metadata_gz_crc ELSE t.refs_gz_crc END",
			"CASE WHEN t.refs_metadata IS NULL THEN t.metadata_gz_size "
			"ELSE t.refs_gz_size END") },
	[ST_TABLE_CREATE] = { "table_create", OBJECT_CREATE("table") },
	[ST_TABLE_OVERWRITE] = { "table_overwrite",
		"WITH upd AS (UPDATE tables t SET table_uuid = $3::uuid, "
		"  metadata_location = $4, metadata = $5, refs_metadata = $7, location = $8, "
		"  version = t.version + 1, "
		"  updated_at = now(), (" GZ_COLUMNS ") = (" GZ_VALUES "), "
		"  gz_version = t.version + 1 "
		"  FROM namespaces n, tables old "
		"  WHERE n.id = t.namespace_id AND " IN_WH("n", "$18") " "
		"  AND n.levels = " LEVELS("$1") " "
		"  AND t.name = $2 AND t.kind = 'table' AND old.id = t.id "
		"  RETURNING t.id, t.table_uuid, t.version, old.metadata_location AS prev) "
		"INSERT INTO commit_log (table_id, table_uuid, version, metadata_location, "
		"  previous_location, request_id, " BY_COLUMNS ") "
		"SELECT id, table_uuid, version, $4, prev, $6, " BY_VALUES " FROM upd "
		"RETURNING version" },
	[ST_TABLE_CAS] = { "table_cas",
		"WITH upd AS (UPDATE tables SET metadata_location = $3, metadata = $4, "
		"  refs_metadata = $7, location = $8, version = version + 1, "
		"  updated_at = now(), (" GZ_COLUMNS ") = (" GZ_VALUES "), "
		"  gz_version = version + 1 "
		"  WHERE id = $1::bigint AND version = $2::bigint "
		"  RETURNING id, table_uuid, version) "
		"INSERT INTO commit_log (table_id, table_uuid, version, metadata_location, "
		"  previous_location, request_id, " BY_COLUMNS ") "
		"SELECT id, table_uuid, version, $3, $5, $6, " BY_VALUES " FROM upd "
		"RETURNING version, pg_current_xact_id()::text" },
	/* The transaction's status first: 'committed' is final, 'aborted'
	 * too, 'in progress' may still become either (a COMMIT waiting on
	 * a synchronous standby is durable here but not visible yet, so the
	 * commit_log alone would call it missing). NULL (no xid, or one
	 * older than the status PostgreSQL keeps): the commit_log row.
	 * 'future': the id was never handed out in this database's history
	 * (the transaction ran on a primary that failed over before its
	 * standby received any of it); asked before pg_xact_status, which
	 * refuses an id in the future. */
	[ST_COMMIT_LANDED] = { "commit_landed",
		"SELECT CASE WHEN $4::xid8 >= pg_current_xact_id() THEN 'future' "
		"ELSE pg_xact_status($4::xid8) END, EXISTS (SELECT 1 FROM commit_log "
		"WHERE table_uuid = $1::uuid AND version = $2::bigint AND metadata_location = $3)" },
	/* $1: the key of a canonical location (LOCATION_KEY), $4 its
	 * proper prefixes at a '/': the locations holding it are those whose
	 * key is one of $4, the ones inside it (or equal) those whose key lies
	 * in [$1, $1 with its last '/' raised to '0'), each one index lookup.
	 * A dropped table whose files are not purged yet still owns its
	 * location ($3: count those too). */
	[ST_TABLE_LOCATION_CLASH] = { "table_location_clash",
		LOCATION_CLASH("tables", "t.table_uuid IS DISTINCT FROM $2::uuid AND " KEY_HOLDS("t"))
		" UNION ALL "
		LOCATION_CLASH("tables", "t.table_uuid IS DISTINCT FROM $2::uuid AND " KEY_INSIDE("t"))
		" UNION ALL "
		LOCATION_CLASH_PURGE(KEY_HOLDS("p"))
		" UNION ALL "
		LOCATION_CLASH_PURGE(KEY_INSIDE("p"))
		" LIMIT 1" },
	/* $1: locations joined by \x1f, matched by their keys. */
	[ST_LOCATION_TAKEN] = { "location_taken",
		"WITH k AS (SELECT ARRAY(SELECT rtrim(x, '/') || '/' "
		"  FROM unnest(string_to_array($1::text, E'\\x1f')) x) AS keys) "
		"SELECT l FROM ("
		"  SELECT location AS l FROM tables, k WHERE " LOCATION_KEY("tables") " = ANY (k.keys) "
		"  UNION ALL SELECT location FROM purges, k "
		"  WHERE " LOCATION_KEY("purges") " = ANY (k.keys)) x "
		"ORDER BY length(l) LIMIT 1" },
	/* Serialises a location check with the insert or swap that follows
	 * it, across replicas, against the checks of overlapping locations
	 * only: location key $1 exclusively, each of its prefixes $2 shared.
	 * Two nested locations conflict on the outer one's key, disjoint ones
	 * on nothing. Taken in the order of their hashes, so two claims never
	 * wait on each other in a cycle. LOCATION_LOCK, shared, keeps out the
	 * replicas of before 0029, which take it exclusively, and the claims
	 * of locations too deep to lock level by level (ST_LOCATION_LOCK_ALL). */
	[ST_LOCATION_LOCK] = { "location_lock",
		"SELECT pg_advisory_xact_lock_shared(" LOCATION_LOCK "), count(*) FROM ("
		"  SELECT CASE WHEN x THEN pg_advisory_xact_lock(" LOCATION_LOCK_CLASS ", h) "
		"    ELSE pg_advisory_xact_lock_shared(" LOCATION_LOCK_CLASS ", h) END "
		"  FROM (SELECT h, bool_or(x) AS x FROM ("
		"      SELECT hashtext(k) AS h, false AS x FROM unnest($2::text[]) k "
		"      UNION ALL SELECT hashtext($1::text), true) a "
		"    GROUP BY h ORDER BY h) l) locked" },
	/* A location of more than LOCATION_LOCK_DEPTH levels locks every
	 * claim out instead: a bounded number of locks for any location. */
	[ST_LOCATION_LOCK_ALL] = { "location_lock_all",
		"SELECT pg_advisory_xact_lock(" LOCATION_LOCK ")" },
	[ST_TABLE_LOCATIONS_AFTER] = { "table_locations_after",
		"SELECT id, location FROM tables WHERE id > $1::bigint ORDER BY id "
		"LIMIT $2::int" },
	[ST_TABLE_LIST] = { "table_list", OBJECT_LIST("table") },
	/* With $3 (purge), the tombstone is written by the same statement
	 * that deletes the row: no moment where the files have neither. */
	[ST_TABLE_DROP] = { "table_drop",
		"WITH del AS (DELETE FROM tables t USING namespaces n "
		"  WHERE n.id = t.namespace_id AND " IN_WH("n", "$4") " "
		"  AND n.levels = " LEVELS("$1") " AND t.name = $2 AND t.kind = 'table' "
		"  RETURNING t.id, t.table_uuid, t.metadata_location, t.metadata, t.version, "
		"    t.location, n.levels, t.refs_metadata, t.created_at), "
		"tomb AS (INSERT INTO purges (location, table_uuid, namespace, table_name, "
		"  warehouse) "
		"  SELECT location, table_uuid, levels, $2, $4::text FROM del WHERE $3::boolean), "
		/* Without purge (and with a retention, $5): kept to be undropped. */
		"kept AS (INSERT INTO dropped_tables (id, warehouse, namespace, table_name, "
		"  table_uuid, location, metadata_location, metadata, refs_metadata, version, "
		"  created_at, dropped_by) "
		"  SELECT id, $4::text, levels, $2, table_uuid, location, metadata_location, "
		"    metadata, refs_metadata, version, created_at, coalesce($6, 'anonymous') "
		"  FROM del WHERE NOT $3::boolean AND $5::boolean "
		"  AND metadata_location IS NOT NULL) "
		"SELECT id, table_uuid, metadata_location, metadata, version FROM del" },
	/* The newest kept drop of a name within $4 seconds, locked. */
	[ST_DROPPED_FIND] = { "dropped_find",
		"SELECT id, table_uuid, location, metadata_location, metadata, version, "
		"  to_char(dropped_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"'), "
		"  dropped_by, NULL, controls::text "
		"FROM dropped_tables WHERE warehouse = $3::text AND namespace = " LEVELS("$1") " "
		"AND table_name = $2 AND dropped_at > now() - make_interval(secs => $4::int) "
		"ORDER BY dropped_at DESC, id DESC LIMIT 1 FOR UPDATE" },
	/* Puts kept drop $1 back as $3 in namespace $2 of warehouse $4:
	 * the namespace's count, then the rows put back (0: name taken). */
	[ST_TABLE_UNDROP] = { "table_undrop",
		"WITH ns AS (SELECT id FROM namespaces n "
		"  WHERE " IN_WH("n", "$4") " AND n.levels = " LEVELS("$2") "), "
		"ins AS (INSERT INTO tables (id, namespace_id, name, kind, table_uuid, location, "
		"  metadata_location, metadata, refs_metadata, version, created_at) "
		"  SELECT d.id, ns.id, $3, 'table', d.table_uuid, d.location, d.metadata_location, "
		"    d.metadata, d.refs_metadata, d.version, d.created_at "
		"  FROM dropped_tables d, ns WHERE d.id = $1::bigint "
		"  ON CONFLICT (namespace_id, name) DO NOTHING RETURNING id), "
		"del AS (DELETE FROM dropped_tables d USING ins WHERE d.id = ins.id) "
		"SELECT (SELECT count(*) FROM ns), (SELECT count(*) FROM ins)" },
	[ST_DROPPED_LIST] = { "dropped_list",
		"SELECT id, table_uuid, location, metadata_location, NULL, version, "
		"  to_char(dropped_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"'), "
		"  dropped_by, table_name "
		"FROM dropped_tables WHERE warehouse = $2::text AND namespace = " LEVELS("$1") " "
		"AND dropped_at > now() - make_interval(secs => $3::int) "
		"AND ($4::bigint IS NULL OR id < $4::bigint) ORDER BY id DESC LIMIT $5::int" },
	[ST_DROPPED_EXPIRE] = { "dropped_expire",
		"DELETE FROM dropped_tables WHERE id IN (SELECT id FROM dropped_tables "
		"  WHERE dropped_at < now() - make_interval(secs => $1::bigint) LIMIT $2::int)" },
	/* The control kept drop $1 had (catalog/effective.h), written in the
	 * transaction of its drop. */
	[ST_DROPPED_SET_CONTROLS] = { "dropped_set_controls",
		"UPDATE dropped_tables SET controls = $2::jsonb WHERE id = $1::bigint" },
	[ST_TABLE_RENAME] = { "table_rename", OBJECT_RENAME("table") },
	[ST_TABLE_LIST_VISIBLE] = { "table_list_visible", OBJECT_LIST_VISIBLE("table") },
	[ST_NAME_KIND] = { "name_kind",
		"SELECT t.kind FROM tables t JOIN namespaces n ON n.id = t.namespace_id "
		"WHERE " IN_WH("n", "$3") " AND n.levels = " LEVELS("$1") " AND t.name = $2" },
	[ST_VIEW_LOAD] = { "view_load", OBJECT_LOAD("view") },
	[ST_VIEW_CREATE] = { "view_create", OBJECT_CREATE("view") },
	/* A view's files stay: engines never wrote below it, and Iceberg's
	 * catalogs keep them too. */
	[ST_VIEW_DROP] = { "view_drop",
		"DELETE FROM tables t USING namespaces n "
		"WHERE n.id = t.namespace_id AND " IN_WH("n", "$3") " "
		"AND n.levels = " LEVELS("$1") " AND t.name = $2 AND t.kind = 'view' "
		"RETURNING t.id, t.table_uuid, t.metadata_location, t.metadata, t.version" },
	[ST_VIEW_RENAME] = { "view_rename", OBJECT_RENAME("view") },
	[ST_VIEW_LIST] = { "view_list", OBJECT_LIST("view") },
	[ST_VIEW_LIST_VISIBLE] = { "view_list_visible", OBJECT_LIST_VISIBLE("view") },
	[ST_TABLE_LOCATION] = { "table_location",
		"SELECT t.location FROM tables t JOIN namespaces n ON n.id = t.namespace_id "
		"WHERE " IN_WH("n", "$3") " AND n.levels = " LEVELS("$1") " "
		"AND t.name = $2 AND t.kind = 'table'" },
	/* A table's commits, newest first: no row when the table is
	 * missing, one NULL version when no commit matches. $4: at or
	 * before this time; $5: this version; $6: below this version. */
	[ST_TABLE_COMMITS] = { "table_commits",
		"SELECT c.version, c.table_uuid, "
		"  to_char(c.committed_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"'), "
		"  floor(extract(epoch FROM c.committed_at) * 1000)::bigint, "
		"  c.metadata_location, c.previous_location, c.principal, c.request_id "
		"FROM tables t JOIN namespaces n ON n.id = t.namespace_id "
		"LEFT JOIN LATERAL (SELECT * FROM commit_log l WHERE l.table_id = t.id "
		"  AND ($4::timestamptz IS NULL OR l.committed_at <= $4::timestamptz) "
		"  AND ($5::bigint IS NULL OR l.version = $5::bigint) "
		"  AND ($6::bigint IS NULL OR l.version < $6::bigint) "
		"  ORDER BY l.version DESC LIMIT $7::int) c ON true "
		"WHERE " IN_WH("n", "$3") " AND n.levels = " LEVELS("$1") " "
		"AND t.name = $2 AND t.kind = 'table' ORDER BY c.version DESC" },
};
/* clang-format on */

const struct store_statements store_table_statements = { statements, ST_COUNT, NULL };

void store_table_row_clear(struct table_row *row)
{
	free(row->metadata_location);
	free(row->metadata);
	memset(row, 0, sizeof(*row));
}

/* Fills row from columns id, uuid, location, metadata, version. */
static bool object_row(PGresult *r, int i, struct table_row *row, struct floe_error *err)
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

static bool object_row_of(PGresult *r, enum floe_errkind missing, struct table_row *row,
			  struct floe_error *err)
{
	bool ok;

	if (r == NULL)
		return false;
	if (PQntuples(r) == 0) {
		PQclear(r);
		return floe_err(err, missing, "no such object");
	}
	ok = object_row(r, 0, row, err);
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
	const char *params[3] = { levels, name, s->warehouse };
	r = store_exec(s, &statements[refs_only ? ST_TABLE_LOAD_REFS : ST_TABLE_LOAD], 3, params,
		       err);
	free(levels);
	return object_row_of(r, FE_NO_SUCH_TABLE, row, err);
}

/* A bytea column of a binary-format result into part->data, part->len
 * (its bytes as they are: no hex to decode). False when out of memory. */
static bool bytea_value(PGresult *r, int i, int c, struct gzip_part *part)
{
	part->len = (size_t)PQgetlength(r, i, c);
	part->data = malloc(part->len > 0 ? part->len : 1);
	if (part->data == NULL)
		return false;
	memcpy(part->data, PQgetvalue(r, i, c), part->len);
	return true;
}

bool store_table_load_gz(struct store *s, const struct ns_ident *ns, const char *name,
			 bool refs_only, struct table_row *row, struct gzip_part *part,
			 struct floe_error *err)
{
	char *levels = store_levels_param(ns, err);
	PGresult *r;
	bool ok;

	memset(row, 0, sizeof(*row));
	memset(part, 0, sizeof(*part));
	if (levels == NULL)
		return false;
	const char *params[3] = { levels, name, s->warehouse };
	r = store_exec_binary(s, &statements[refs_only ? ST_TABLE_LOAD_REFS_GZ : ST_TABLE_LOAD_GZ],
			      3, params, err);
	free(levels);
	if (r == NULL)
		return false;
	if (PQntuples(r) == 0 || PQgetisnull(r, 0, 5)) {
		/* No deflated form of this version: the text (column 3). */
		return object_row_of(r, FE_NO_SUCH_TABLE, row, err);
	}
	ok = object_row(r, 0, row, err);
	if (ok && !bytea_value(r, 0, 5, part)) {
		store_table_row_clear(row);
		ok = floe_err(err, FE_INTERNAL, "out of memory");
	}
	if (ok) {
		part->crc = (uint32_t)store_col_ll(r, 0, 6);
		part->text_len = (size_t)store_col_ll(r, 0, 7);
	}
	PQclear(r);
	return ok;
}

bool store_table_exists(struct store *s, const struct ns_ident *ns, const char *name, bool *exists,
			struct floe_error *err)
{
	char *levels = store_levels_param(ns, err);
	PGresult *r;

	*exists = false;
	if (levels == NULL)
		return false;
	const char *params[3] = { levels, name, s->warehouse };
	r = store_exec(s, &statements[ST_TABLE_LOAD], 3, params, err);
	free(levels);
	if (r == NULL)
		return false;
	*exists = PQntuples(r) > 0;
	PQclear(r);
	return true;
}

bool store_table_location(struct store *s, const struct ns_ident *ns, const char *name,
			  char **location, struct floe_error *err)
{
	char *levels = store_levels_param(ns, err);
	PGresult *r;

	*location = NULL;
	if (levels == NULL)
		return false;
	const char *params[3] = { levels, name, s->warehouse };
	r = store_exec(s, &statements[ST_TABLE_LOCATION], 3, params, err);
	free(levels);
	if (r == NULL)
		return false;
	if (PQntuples(r) == 0) {
		PQclear(r);
		return floe_err(err, FE_NO_SUCH_TABLE, "no such table");
	}
	*location = strdup(PQgetvalue(r, 0, 0));
	PQclear(r);
	return *location != NULL || floe_err(err, FE_INTERNAL, "out of memory");
}

/* The parameters GZ_VALUES names, made from a metadata text and its
 * refs form (NULL: none). A text that cannot be deflated (out of memory)
 * gets NULLs: it is answered uncompressed. */
struct gz_params {
	char *hex[2];
	char crc[2][16];
	char size[2][24];
	const char *values[GZ_PARAMS];
};

/* part's bytes as a bytea parameter in hex ("\\x..."), or NULL. */
static char *bytea_hex(const struct gzip_part *part)
{
	static const char digits[] = "0123456789abcdef";
	char *hex = malloc(2 * part->len + 3);

	if (hex == NULL)
		return NULL;
	hex[0] = '\\';
	hex[1] = 'x';
	for (size_t i = 0; i < part->len; i++) {
		hex[2 + 2 * i] = digits[part->data[i] >> 4];
		hex[3 + 2 * i] = digits[part->data[i] & 15];
	}
	hex[2 * part->len + 2] = '\0';
	return hex;
}

static void gz_params_make(struct gz_params *g, const char *metadata, const char *refs)
{
	const char *texts[2] = { metadata, refs };

	memset(g, 0, sizeof(*g));
	for (size_t i = 0; i < 2; i++) {
		struct gzip_part part;

		if (texts[i] == NULL || !gzip_part_make(texts[i], strlen(texts[i]), &part))
			continue;
		g->hex[i] = bytea_hex(&part);
		(void)snprintf(g->crc[i], sizeof(g->crc[i]), "%lu", (unsigned long)part.crc);
		(void)snprintf(g->size[i], sizeof(g->size[i]), "%zu", part.text_len);
		gzip_part_clear(&part);
		if (g->hex[i] == NULL)
			continue;
		g->values[3 * i] = g->hex[i];
		g->values[3 * i + 1] = g->crc[i];
		g->values[3 * i + 2] = g->size[i];
	}
}

static void gz_params_clear(struct gz_params *g)
{
	free(g->hex[0]);
	free(g->hex[1]);
	memset(g, 0, sizeof(*g));
}

static bool table_insert(struct store *s, const struct store_statement *st,
			 const struct ns_ident *ns, const char *name, const char *uuid,
			 const char *location, const char *metadata, const char *refs_metadata,
			 const char *table_location, const struct store_actor *who,
			 const char *refs, bool *done, struct floe_error *err)
{
	char *levels = store_levels_param(ns, err);
	PGresult *r;

	*done = false;
	if (levels == NULL)
		return false;
	struct gz_params gz;
	gz_params_make(&gz, metadata, refs_metadata);
	const char *params[8 + GZ_PARAMS + BY_PARAMS + 1] = { levels,        name,
							      uuid,          location,
							      metadata,      who->request_id,
							      refs_metadata, table_location };
	memcpy(params + 8, gz.values, sizeof(gz.values));
	params[8 + GZ_PARAMS] = who->principal;
	params[8 + GZ_PARAMS + 1] = who->client_id;
	params[8 + GZ_PARAMS + 2] = refs;
	params[8 + GZ_PARAMS + BY_PARAMS] = s->warehouse; /* $18 */
	r = store_exec(s, st, 8 + GZ_PARAMS + BY_PARAMS + 1, params, err);
	gz_params_clear(&gz);
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
	if (*done && PQnfields(r) > 1)
		store_note_xid(s, PQgetvalue(r, 0, 1));
	PQclear(r);
	return true;
}

static bool name_taken(struct store *s, const struct ns_ident *ns, const char *name,
		       enum floe_errkind missing, struct floe_error *err)
{
	char kind[16];

	if (!store_name_kind(s, ns, name, kind, sizeof(kind), err))
		return false;
	if (kind[0] == '\0')
		return floe_err(err, missing, "nothing was inserted and the name is free");
	return floe_err(err, FE_ALREADY_EXISTS, "the name is taken");
}

bool store_name_kind(struct store *s, const struct ns_ident *ns, const char *name, char *kind,
		     size_t kindlen, struct floe_error *err)
{
	char *levels = store_levels_param(ns, err);
	char *got = NULL;
	bool ok;

	kind[0] = '\0';
	if (levels == NULL)
		return false;
	const char *params[3] = { levels, name, s->warehouse };
	ok = store_exec_text(s, &statements[ST_NAME_KIND], 3, params, &got, err);
	free(levels);
	if (ok && got != NULL)
		(void)snprintf(kind, kindlen, "%s", got);
	free(got);
	return ok;
}

bool store_table_create(struct store *s, const struct ns_ident *ns, const char *name,
			const char *uuid, const char *metadata_location, const char *metadata,
			const char *refs_metadata, const char *table_location,
			const struct store_actor *who, const char *refs, struct floe_error *err)
{
	bool inserted;

	if (!table_insert(s, &statements[ST_TABLE_CREATE], ns, name, uuid, metadata_location,
			  metadata, refs_metadata, table_location, who, refs, &inserted, err))
		return false;
	return inserted || name_taken(s, ns, name, FE_NO_SUCH_TABLE, err);
}

bool store_table_overwrite(struct store *s, const struct ns_ident *ns, const char *name,
			   const char *uuid, const char *metadata_location, const char *metadata,
			   const char *refs_metadata, const char *table_location,
			   const struct store_actor *who, const char *refs, struct floe_error *err)
{
	bool updated;

	if (!table_insert(s, &statements[ST_TABLE_OVERWRITE], ns, name, uuid, metadata_location,
			  metadata, refs_metadata, table_location, who, refs, &updated, err))
		return false;
	if (!updated)
		return table_missing(err);
	return true;
}

bool store_table_cas(struct store *s, long long id, long long expected_version,
		     const char *metadata_location, const char *metadata, const char *refs_metadata,
		     const char *table_location, const char *previous_location,
		     const struct store_actor *who, const char *refs, bool *won,
		     struct floe_error *err)
{
	char idp[32], verp[32];
	PGresult *r;

	*won = false;
	(void)snprintf(idp, sizeof(idp), "%lld", id);
	(void)snprintf(verp, sizeof(verp), "%lld", expected_version);
	struct gz_params gz;
	gz_params_make(&gz, metadata, refs_metadata);
	const char *params[8 + GZ_PARAMS + BY_PARAMS] = { idp,
							  verp,
							  metadata_location,
							  metadata,
							  previous_location,
							  who->request_id,
							  refs_metadata,
							  table_location };
	memcpy(params + 8, gz.values, sizeof(gz.values));
	params[8 + GZ_PARAMS] = who->principal;
	params[8 + GZ_PARAMS + 1] = who->client_id;
	params[8 + GZ_PARAMS + 2] = refs;
	r = store_exec(s, &statements[ST_TABLE_CAS], 8 + GZ_PARAMS + BY_PARAMS, params, err);
	gz_params_clear(&gz);
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
	if (*won)
		store_note_xid(s, PQgetvalue(r, 0, 1));
	PQclear(r);
	return true;
}

bool store_commit_landed(struct store *s, const char *xid, const char *table_uuid,
			 long long version, const char *metadata_location,
			 enum store_commit_fate *fate, struct floe_error *err)
{
	char verp[32];
	PGresult *r;

	*fate = STORE_COMMIT_UNPROVED;
	(void)snprintf(verp, sizeof(verp), "%lld", version);
	const char *params[4] = { table_uuid, verp, metadata_location,
				  xid != NULL && xid[0] != '\0' ? xid : NULL };
	r = store_exec(s, &statements[ST_COMMIT_LANDED], 4, params, err);
	if (r == NULL)
		return false;
	const char *status = PQntuples(r) == 1 && !PQgetisnull(r, 0, 0) ? PQgetvalue(r, 0, 0)
									: NULL;
	bool logged = PQntuples(r) == 1 && strcmp(PQgetvalue(r, 0, 1), "t") == 0;
	if (status == NULL) /* the status is gone or was never known */
		*fate = logged ? STORE_COMMIT_LANDED : STORE_COMMIT_UNPROVED;
	else if (strcmp(status, "committed") == 0)
		/* A commit's transaction writes its commit_log row, which is
		 * never deleted: a committed id without it is another
		 * transaction's. After a failover the new primary hands out
		 * again the ids its standby never received, so this one's
		 * transaction is on the lost history: it did not land here. */
		*fate = logged ? STORE_COMMIT_LANDED : STORE_COMMIT_ABORTED;
	else if (strcmp(status, "aborted") == 0 || strcmp(status, "future") == 0)
		*fate = STORE_COMMIT_ABORTED;
	else
		*fate = STORE_COMMIT_PENDING;
	PQclear(r);
	return true;
}

static bool object_list(struct store *s, const struct store_statement *plain,
			const struct store_statement *visible, const char *roles,
			const struct ns_ident *ns, const char *after, long limit, char ***names,
			size_t *count, bool *more, struct floe_error *err)
{
	char *levels = store_levels_param(ns, err);
	char limit_p[32];
	PGresult *r;

	*names = NULL;
	*count = 0;
	*more = false;
	if (levels == NULL)
		return false;
	(void)snprintf(limit_p, sizeof(limit_p), "%ld", limit + 1);
	const char *params[5] = { levels, after, limit < 0 ? NULL : limit_p,
				  roles ? roles : s->warehouse, s->warehouse };
	r = store_exec(s, roles ? visible : plain, roles ? 5 : 4, params, err);
	free(levels);
	if (r == NULL)
		return false;
	if (PQntuples(r) == 0) {
		PQclear(r);
		return store_ns_missing(err);
	}
	int n = PQgetisnull(r, 0, 0) ? 0 : store_page(r, limit, more);
	bool ok = store_names_read(r, n, 0, names, count, err);
	PQclear(r);
	return ok;
}

static bool object_list_visible(struct store *s, const struct store_statement *visible,
				const long long *role_ids, size_t nroles, const struct ns_ident *ns,
				const char *after, long limit, char ***names, size_t *count,
				bool *more, struct floe_error *err)
{
	/* No role: an empty array, which no grant matches. */
	char *roles = store_ids_param(role_ids, nroles, err);

	*names = NULL;
	*count = 0;
	*more = false;
	if (roles == NULL)
		return false;
	bool ok = object_list(s, NULL, visible, roles, ns, after, limit, names, count, more, err);
	free(roles);
	return ok;
}

bool store_table_list(struct store *s, const struct ns_ident *ns, const char *after, long limit,
		      char ***names, size_t *count, bool *more, struct floe_error *err)
{
	return object_list(s, &statements[ST_TABLE_LIST], NULL, NULL, ns, after, limit, names,
			   count, more, err);
}

bool store_table_list_visible(struct store *s, const long long *role_ids, size_t nroles,
			      const struct ns_ident *ns, const char *after, long limit,
			      char ***names, size_t *count, bool *more, struct floe_error *err)
{
	return object_list_visible(s, &statements[ST_TABLE_LIST_VISIBLE], role_ids, nroles, ns,
				   after, limit, names, count, more, err);
}

bool store_table_drop(struct store *s, const struct ns_ident *ns, const char *name, bool purge,
		      bool keep, const char *by, struct table_row *row, struct floe_error *err)
{
	char *levels = store_levels_param(ns, err);
	PGresult *r;

	memset(row, 0, sizeof(*row));
	if (levels == NULL)
		return false;
	const char *params[6] = {
		levels, name, purge ? "true" : "false", s->warehouse, keep ? "true" : "false", by
	};
	r = store_exec(s, &statements[ST_TABLE_DROP], 6, params, err);
	free(levels);
	return object_row_of(r, FE_NO_SUCH_TABLE, row, err);
}

static bool object_rename(struct store *s, const struct store_statement *st,
			  enum floe_errkind missing, const struct ns_ident *from_ns,
			  const char *from, const struct ns_ident *to_ns, const char *to,
			  struct floe_error *err)
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
	const char *params[5] = { fl, from, tl, to, s->warehouse };
	r = store_exec(s, st, 5, params, err);
	if (r == NULL) {
		if (strcmp(s->sqlstate, "23505") == 0)
			floe_err(err, FE_ALREADY_EXISTS, "the name is taken");
		else if (strcmp(s->sqlstate, "23502") == 0)
			store_ns_missing(err); /* dropped meanwhile */
		goto done;
	}
	if (PQntuples(r) == 0) {
		floe_err(err, missing, "no such object");
		goto done;
	}
	ok = true;
done:
	PQclear(r);
	free(fl);
	free(tl);
	return ok;
}

bool store_table_rename(struct store *s, const struct ns_ident *from_ns, const char *from,
			const struct ns_ident *to_ns, const char *to, struct floe_error *err)
{
	return object_rename(s, &statements[ST_TABLE_RENAME], FE_NO_SUCH_TABLE, from_ns, from,
			     to_ns, to, err);
}

/* The key of canonical location loc as LOCATION_KEY makes it: loc with
 * one trailing '/' (new string, or NULL with err set). */
static char *location_key(const char *loc, struct floe_error *err)
{
	size_t n = strlen(loc);
	char *key;

	while (n > 0 && loc[n - 1] == '/')
		n--;
	key = malloc(n + 2);
	if (key == NULL) {
		floe_err(err, FE_INTERNAL, "out of memory");
		return NULL;
	}
	memcpy(key, loc, n);
	key[n] = '/';
	key[n + 1] = '\0';
	return key;
}

/* The text[] literal of key's proper prefixes that end at a '/', the
 * keys of every location that could hold key's (new string, or NULL with
 * err set). Each element is quoted, '"' and '\' escaped. */
static char *location_prefixes_param(const char *key, size_t *count, struct floe_error *err)
{
	size_t cap = 3;
	size_t at = 0;
	char *out;

	for (const char *p = key; p[0] != '\0' && p[1] != '\0'; p++) {
		if (*p == '/')
			cap += 2 * (size_t)(p - key + 1) + 3;
	}
	out = malloc(cap);
	if (out == NULL) {
		floe_err(err, FE_INTERNAL, "out of memory");
		return NULL;
	}
	*count = 0;
	out[at++] = '{';
	for (const char *p = key; p[0] != '\0' && p[1] != '\0'; p++) {
		if (*p != '/')
			continue;
		(*count)++;
		if (at > 1)
			out[at++] = ',';
		out[at++] = '"';
		for (const char *q = key; q <= p; q++) {
			if (*q == '"' || *q == '\\')
				out[at++] = '\\';
			out[at++] = *q;
		}
		out[at++] = '"';
	}
	out[at++] = '}';
	out[at] = '\0';
	return out;
}

static bool location_clash(struct store *s, const char *location, const char *uuid,
			   bool with_purges, char **other, struct floe_error *err)
{
	char *key = location_key(location, err);
	size_t count = 0;
	char *prefixes = key != NULL ? location_prefixes_param(key, &count, err) : NULL;
	bool ok = false;

	*other = NULL;
	if (prefixes != NULL) {
		const char *params[4] = { key, uuid, with_purges ? "true" : "false", prefixes };
		ok = store_exec_text(s, &statements[ST_TABLE_LOCATION_CLASH], 4, params, other,
				     err);
	}
	free(key);
	free(prefixes);
	return ok;
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

bool store_location_lock(struct store *s, const char *location, struct floe_error *err)
{
	char *key = location_key(location, err);
	size_t count = 0;
	char *prefixes = key != NULL ? location_prefixes_param(key, &count, err) : NULL;
	PGresult *r = NULL;

	if (prefixes != NULL && count > LOCATION_LOCK_DEPTH) {
		r = store_exec(s, &statements[ST_LOCATION_LOCK_ALL], 0, NULL, err);
	} else if (prefixes != NULL) {
		const char *params[2] = { key, prefixes };
		r = store_exec(s, &statements[ST_LOCATION_LOCK], 2, params, err);
	}
	free(key);
	free(prefixes);
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

/* --- views --- */

/* The one view row statement st answers for ($1 levels, $2 name). */
static bool view_row(struct store *s, int st, const struct ns_ident *ns, const char *name,
		     struct table_row *row, struct floe_error *err)
{
	char *levels = store_levels_param(ns, err);
	PGresult *r;

	memset(row, 0, sizeof(*row));
	if (levels == NULL)
		return false;
	const char *params[3] = { levels, name, s->warehouse };
	r = store_exec(s, &statements[st], 3, params, err);
	free(levels);
	return object_row_of(r, FE_NO_SUCH_VIEW, row, err);
}

bool store_view_load(struct store *s, const struct ns_ident *ns, const char *name,
		     struct table_row *row, struct floe_error *err)
{
	return view_row(s, ST_VIEW_LOAD, ns, name, row, err);
}

bool store_view_create(struct store *s, const struct ns_ident *ns, const char *name,
		       const char *uuid, const char *metadata_location, const char *metadata,
		       const char *view_location, const struct store_actor *who,
		       struct floe_error *err)
{
	bool inserted;

	if (!table_insert(s, &statements[ST_VIEW_CREATE], ns, name, uuid, metadata_location,
			  metadata, NULL, view_location, who, NULL, &inserted, err))
		return false;
	return inserted || name_taken(s, ns, name, FE_NO_SUCH_VIEW, err);
}

bool store_view_drop(struct store *s, const struct ns_ident *ns, const char *name,
		     struct table_row *row, struct floe_error *err)
{
	return view_row(s, ST_VIEW_DROP, ns, name, row, err);
}

bool store_view_rename(struct store *s, const struct ns_ident *from_ns, const char *from,
		       const struct ns_ident *to_ns, const char *to, struct floe_error *err)
{
	return object_rename(s, &statements[ST_VIEW_RENAME], FE_NO_SUCH_VIEW, from_ns, from, to_ns,
			     to, err);
}

bool store_view_list(struct store *s, const struct ns_ident *ns, const char *after, long limit,
		     char ***names, size_t *count, bool *more, struct floe_error *err)
{
	return object_list(s, &statements[ST_VIEW_LIST], NULL, NULL, ns, after, limit, names, count,
			   more, err);
}

bool store_view_list_visible(struct store *s, const long long *role_ids, size_t nroles,
			     const struct ns_ident *ns, const char *after, long limit,
			     char ***names, size_t *count, bool *more, struct floe_error *err)
{
	return object_list_visible(s, &statements[ST_VIEW_LIST_VISIBLE], role_ids, nroles, ns,
				   after, limit, names, count, more, err);
}

void store_commit_row_clear(struct commit_row *row)
{
	free(row->metadata_location);
	free(row->previous_location);
	free(row->principal);
	free(row->request_id);
	memset(row, 0, sizeof(*row));
}

static void commit_clear(void *row)
{
	store_commit_row_clear(row);
}

void store_commit_rows_free(struct commit_row *rows, size_t count)
{
	store_rows_free(rows, count, sizeof(*rows), commit_clear);
}

static bool commit_fill(PGresult *r, int i, void *dst)
{
	struct commit_row *row = dst;

	memset(row, 0, sizeof(*row));
	row->version = store_col_ll(r, i, 0);
	store_col_text(r, i, 1, row->uuid, sizeof(row->uuid));
	store_col_text(r, i, 2, row->committed_at, sizeof(row->committed_at));
	row->committed_at_ms = store_col_ll(r, i, 3);
	if (store_col_copy(r, i, 4, &row->metadata_location) &&
	    store_col_copy(r, i, 5, &row->previous_location) &&
	    store_col_copy(r, i, 6, &row->principal) && store_col_copy(r, i, 7, &row->request_id))
		return true;
	store_commit_row_clear(row);
	return false;
}

bool store_table_commits(struct store *s, const struct ns_ident *ns, const char *name,
			 const char *as_of, long long version, long long before, long limit,
			 struct commit_row **rows, size_t *count, bool *more,
			 struct floe_error *err)
{
	char *levels = store_levels_param(ns, err);
	char v[32], b[32], lim[32];
	void *out = NULL;
	PGresult *r;

	*rows = NULL;
	*count = 0;
	*more = false;
	if (levels == NULL)
		return false;
	(void)snprintf(v, sizeof(v), "%lld", version);
	(void)snprintf(b, sizeof(b), "%lld", before);
	(void)snprintf(lim, sizeof(lim), "%ld", limit + 1);
	const char *params[7] = {
		levels, name, s->warehouse, as_of, version >= 0 ? v : NULL, before > 0 ? b : NULL,
		lim
	};
	r = store_exec(s, &statements[ST_TABLE_COMMITS], 7, params, err);
	free(levels);
	if (r == NULL) {
		/* 22xxx: PostgreSQL could not read the time as one. */
		if (strncmp(s->sqlstate, "22", 2) == 0)
			floe_err(err, FE_BAD_REQUEST, "as-of is not a time: %s", as_of);
		return false;
	}
	if (PQntuples(r) == 0) {
		PQclear(r);
		return floe_err(err, FE_NO_SUCH_TABLE, "no such table");
	}
	if (PQgetisnull(r, 0, 0)) {
		PQclear(r);
		return true;
	}
	bool ok = store_rows_read(r, store_page(r, limit, more), sizeof(**rows), commit_fill,
				  commit_clear, &out, count, err);
	PQclear(r);
	*rows = out;
	return ok;
}

void store_dropped_row_clear(struct dropped_row *row)
{
	free(row->name);
	free(row->location);
	free(row->metadata_location);
	free(row->metadata);
	free(row->dropped_by);
	free(row->controls);
	memset(row, 0, sizeof(*row));
}

static void dropped_clear(void *row)
{
	store_dropped_row_clear(row);
}

void store_dropped_rows_free(struct dropped_row *rows, size_t count)
{
	store_rows_free(rows, count, sizeof(*rows), dropped_clear);
}

static bool dropped_fill(PGresult *r, int i, void *dst)
{
	struct dropped_row *row = dst;

	memset(row, 0, sizeof(*row));
	row->id = store_col_ll(r, i, 0);
	store_col_text(r, i, 1, row->uuid, sizeof(row->uuid));
	row->version = store_col_ll(r, i, 5);
	store_col_text(r, i, 6, row->dropped_at, sizeof(row->dropped_at));
	if (store_col_copy(r, i, 2, &row->location) &&
	    store_col_copy(r, i, 3, &row->metadata_location) &&
	    store_col_copy(r, i, 4, &row->metadata) && store_col_copy(r, i, 7, &row->dropped_by) &&
	    (PQnfields(r) < 9 || store_col_copy(r, i, 8, &row->name)) &&
	    (PQnfields(r) < 10 || store_col_copy(r, i, 9, &row->controls)))
		return true;
	store_dropped_row_clear(row);
	return false;
}

bool store_dropped_find(struct store *s, const struct ns_ident *ns, const char *name, int within_s,
			struct dropped_row *row, bool *found, struct floe_error *err)
{
	char *levels = store_levels_param(ns, err);
	char w[16];

	memset(row, 0, sizeof(*row));
	*found = false;
	if (levels == NULL)
		return false;
	(void)snprintf(w, sizeof(w), "%d", within_s);
	const char *params[4] = { levels, name, s->warehouse, w };
	PGresult *r = store_exec(s, &statements[ST_DROPPED_FIND], 4, params, err);
	free(levels);
	if (r == NULL)
		return false;
	bool ok = true;
	if (PQntuples(r) > 0) {
		ok = dropped_fill(r, 0, row);
		*found = ok;
		if (!ok)
			floe_err(err, FE_INTERNAL, "out of memory");
	}
	PQclear(r);
	return ok;
}

bool store_dropped_set_controls(struct store *s, long long id, const char *controls,
				struct floe_error *err)
{
	char idtext[32];

	(void)snprintf(idtext, sizeof(idtext), "%lld", id);
	const char *params[2] = { idtext, controls };
	PGresult *r = store_exec(s, &statements[ST_DROPPED_SET_CONTROLS], 2, params, err);

	if (r == NULL)
		return false;
	PQclear(r);
	return true;
}

bool store_table_undrop(struct store *s, long long id, const struct ns_ident *ns, const char *name,
			struct floe_error *err)
{
	char *levels = store_levels_param(ns, err);
	char idp[32];

	if (levels == NULL)
		return false;
	(void)snprintf(idp, sizeof(idp), "%lld", id);
	const char *params[4] = { idp, levels, name, s->warehouse };
	PGresult *r = store_exec(s, &statements[ST_TABLE_UNDROP], 4, params, err);
	free(levels);
	if (r == NULL) {
		if (strcmp(s->sqlstate, "23505") == 0) {
			floe_err(err, FE_ALREADY_EXISTS, "the table's uuid is registered again");
			memcpy(err->sqlstate, "23505", sizeof("23505"));
		}
		return false;
	}
	long long nss = store_col_ll(r, 0, 0), put = store_col_ll(r, 0, 1);
	PQclear(r);
	if (nss == 0)
		return floe_err(err, FE_NO_SUCH_NAMESPACE, "no such namespace");
	if (put == 0)
		return floe_err(err, FE_ALREADY_EXISTS, "the name is taken");
	return true;
}

bool store_dropped_list(struct store *s, const struct ns_ident *ns, int within_s,
			long long before_id, long limit, struct dropped_row **rows, size_t *count,
			bool *more, struct floe_error *err)
{
	char *levels = store_levels_param(ns, err);
	char w[16], b[32], lim[32];
	void *out = NULL;

	*rows = NULL;
	*count = 0;
	*more = false;
	if (levels == NULL)
		return false;
	(void)snprintf(w, sizeof(w), "%d", within_s);
	(void)snprintf(b, sizeof(b), "%lld", before_id);
	(void)snprintf(lim, sizeof(lim), "%ld", limit + 1);
	const char *params[5] = { levels, s->warehouse, w, before_id > 0 ? b : NULL, lim };
	PGresult *r = store_exec(s, &statements[ST_DROPPED_LIST], 5, params, err);
	free(levels);
	if (r == NULL)
		return false;
	bool ok = store_rows_read(r, store_page(r, limit, more), sizeof(**rows), dropped_fill,
				  dropped_clear, &out, count, err);
	PQclear(r);
	*rows = out;
	return ok;
}

bool store_dropped_expire(struct store *s, long long older_than_s, int limit, long *deleted,
			  struct floe_error *err)
{
	return store_exec_expire(s, &statements[ST_DROPPED_EXPIRE], older_than_s, limit, deleted,
				 err);
}
