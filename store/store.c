/*
 * store.c - the PostgreSQL side of floe: the connection pool, migrations
 * and every SQL statement, prepared once per connection.
 *
 * Identifiers cross into SQL as one text parameter with the levels joined
 * by 0x1F (which no valid level contains) and are split by
 * string_to_array on the server, so no value is ever formatted into SQL.
 */
#include "store.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include <libpq-fe.h>

#include "log.h"
#include "migrations.h"

/* The namespace levels parameter, as an expression. */
#define LEVELS(p) "string_to_array(" p "::text, E'\\x1f')::text[] COLLATE \"C\""

/* A timestamp column as RFC 3339 UTC text. */
#define TS(c) "to_char(" c " AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')"
#define HOOK_COLUMNS "SELECT id, name, url, secret IS NOT NULL, " \
	"array_to_string(scope_namespace, E'\\x1f'), scope_table, timeout_ms, " \
	TS("created_at") " FROM audit_hooks "
/* Hook h covers target x (x.ns levels, x.tbl a table name or NULL for
 * the whole namespace), as ST_HOOKS_IN_SCOPE decides for a table. */
#define HOOK_COVERS(h) "(" h ".scope_namespace IS NULL " \
	"OR (" h ".scope_table IS NULL AND cardinality(" h ".scope_namespace) <= cardinality(x.ns) " \
	"    AND " h ".scope_namespace = x.ns[1:cardinality(" h ".scope_namespace)]) " \
	"OR (x.tbl IS NOT NULL AND " h ".scope_table = x.tbl AND " h ".scope_namespace = x.ns))"
#define RUN_COLUMNS "SELECT id, table_uuid, array_to_string(namespace, E'\\x1f'), table_name, " \
	"branch, state, base_snapshot_id, audited_snapshot_id, published_snapshot_id, " \
	"audits::text, " TS("created_at") ", " TS("updated_at") ", seq "

/* The advisory lock key of the no-overlap rule for table locations. */
#define LOCATION_LOCK "7310593858473447526"

enum stmt_id {
	ST_PING,
	ST_NS_CREATE,
	ST_NS_LOAD,
	ST_NS_ID,
	ST_NS_LIST_TOP,
	ST_NS_LIST_CHILDREN,
	ST_NS_DROP,
	ST_NS_UPDATE_PROPERTIES,
	ST_TABLE_LOAD,
	ST_TABLE_LOAD_REFS,
	ST_TABLE_CREATE,
	ST_TABLE_OVERWRITE,
	ST_TABLE_CAS,
	ST_COMMIT_LANDED,
	ST_TABLE_LIST,
	ST_TABLE_LOCATION_CLASH,
	ST_LOCATION_LOCK,
	ST_TABLE_LOCATIONS_AFTER,
	ST_TABLE_DROP,
	ST_TABLE_RENAME,
	ST_PURGE_CLAIM,
	ST_PURGE_DONE,
	ST_PURGE_FAILED,
	ST_PURGE_LIST,
	ST_METRICS_INSERT,
	ST_METRICS_EXPIRE,
	ST_BEGIN,
	ST_COMMIT,
	ST_ROLLBACK,
	ST_IDEM_CLAIM,
	ST_IDEM_GET,
	ST_IDEM_FINISH,
	ST_IDEM_RELEASE,
	ST_IDEM_EXPIRE,
	ST_NS_WAP_REQUIRED,
	ST_HOOK_INSERT,
	ST_HOOK_LIST,
	ST_HOOK_GET,
	ST_HOOK_DELETE,
	ST_HOOK_LOCK,
	ST_HOOK_SOLE_GUARD,
	ST_HOOKS_IN_SCOPE,
	ST_RUN_INSERT,
	ST_RUN_GET,
	ST_RUN_LIST,
	ST_RUN_TRANSITION,
	ST_RUN_EXPIRE_STALE,
	ST_EVENT_INSERT,
	ST_EVENT_LIST,
	ST_COUNT
};

static const struct {
	const char *name;
	const char *sql;
} statements[ST_COUNT] = {
	[ST_PING] = { "ping", "SELECT 1" },
	[ST_NS_CREATE] = { "ns_create",
		"WITH lv AS (SELECT " LEVELS("$1") " AS levels), "
		"parent AS (SELECT n.id FROM namespaces n, lv "
		"  WHERE cardinality(lv.levels) > 1 "
		"  AND n.levels = lv.levels[1:cardinality(lv.levels) - 1]) "
		"INSERT INTO namespaces (parent_id, levels, properties) "
		"SELECT (SELECT id FROM parent), lv.levels, $2::jsonb FROM lv "
		"WHERE cardinality(lv.levels) = 1 OR EXISTS (SELECT 1 FROM parent) "
		"ON CONFLICT (levels) DO NOTHING RETURNING id" },
	[ST_NS_LOAD] = { "ns_load",
		"SELECT properties::text FROM namespaces WHERE levels = " LEVELS("$1") },
	[ST_NS_ID] = { "ns_id",
		"SELECT id FROM namespaces WHERE levels = " LEVELS("$1") },
	[ST_NS_LIST_TOP] = { "ns_list_top",
		"SELECT array_to_string(levels, E'\\x1f') FROM namespaces "
		"WHERE parent_id IS NULL "
		"AND ($1::text IS NULL OR levels > " LEVELS("$1") ") "
		"ORDER BY levels LIMIT $2::bigint" },
	[ST_NS_LIST_CHILDREN] = { "ns_list_children",
		"SELECT array_to_string(levels, E'\\x1f') FROM namespaces "
		"WHERE parent_id = $3::bigint "
		"AND ($1::text IS NULL OR levels > " LEVELS("$1") ") "
		"ORDER BY levels LIMIT $2::bigint" },
	[ST_NS_DROP] = { "ns_drop",
		"DELETE FROM namespaces n WHERE n.levels = " LEVELS("$1") " "
		"AND NOT EXISTS (SELECT 1 FROM namespaces c WHERE c.parent_id = n.id) "
		"AND NOT EXISTS (SELECT 1 FROM tables t WHERE t.namespace_id = n.id) "
		"RETURNING id" },
	[ST_NS_UPDATE_PROPERTIES] = { "ns_update_properties",
		"WITH old AS (SELECT id, properties FROM namespaces "
		"  WHERE levels = " LEVELS("$1") " FOR UPDATE) "
		"UPDATE namespaces n SET properties = (old.properties - "
		"  ARRAY(SELECT jsonb_array_elements_text($2::jsonb))) || $3::jsonb, "
		"  updated_at = now() "
		"FROM old WHERE n.id = old.id RETURNING old.properties::text" },
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
	/* purges: claimed one at a time inside the janitor's transaction, so
	 * janitors of several replicas never purge the same row. */
	[ST_PURGE_CLAIM] = { "purge_claim",
		"SELECT id, location, table_uuid, attempts FROM purges "
		"WHERE state = 'pending' AND next_attempt_at <= now() "
		"ORDER BY next_attempt_at, id LIMIT 1 FOR UPDATE SKIP LOCKED" },
	[ST_PURGE_DONE] = { "purge_done", "DELETE FROM purges WHERE id = $1::bigint" },
	[ST_PURGE_FAILED] = { "purge_failed",
		"UPDATE purges SET attempts = attempts + 1, last_error = $2, "
		"  state = CASE WHEN $5::boolean OR attempts + 1 >= $3::int "
		"    THEN 'failed' ELSE 'pending' END, "
		"  next_attempt_at = now() + make_interval(secs => $4::int) "
		"WHERE id = $1::bigint RETURNING attempts, state" },
	[ST_PURGE_LIST] = { "purge_list",
		"SELECT location, table_uuid, " TS("dropped_at") ", attempts, last_error, state "
		"FROM purges ORDER BY dropped_at, id LIMIT $1::int" },
	[ST_METRICS_INSERT] = { "metrics_insert",
		"INSERT INTO metrics_reports (namespace, table_name, report) "
		"VALUES (" LEVELS("$1") ", $2, $3::jsonb)" },
	[ST_METRICS_EXPIRE] = { "metrics_expire",
		"DELETE FROM metrics_reports WHERE id IN (SELECT id FROM metrics_reports "
		"  WHERE received_at < now() - make_interval(days => $1::int) LIMIT $2::int)" },
	[ST_BEGIN] = { "begin", "BEGIN" },
	[ST_COMMIT] = { "commit", "COMMIT" },
	[ST_ROLLBACK] = { "rollback", "ROLLBACK" },
	[ST_IDEM_CLAIM] = { "idem_claim",
		"INSERT INTO idempotency_keys AS k (key, route, owner, lease_until) "
		"VALUES ($1, $2, $4, now() + make_interval(secs => $5::int)) "
		"ON CONFLICT (key) DO UPDATE SET route = EXCLUDED.route, status = 0, "
		"  response = NULL, created_at = now(), owner = EXCLUDED.owner, "
		"  lease_until = EXCLUDED.lease_until "
		"  WHERE k.created_at < now() - make_interval(secs => $3::int) "
		"  OR (k.status = 0 AND k.route = EXCLUDED.route "
		"      AND coalesce(k.lease_until, k.created_at) < now()) "
		"RETURNING key" },
	[ST_IDEM_GET] = { "idem_get",
		"SELECT status, response, route FROM idempotency_keys WHERE key = $1" },
	[ST_IDEM_FINISH] = { "idem_finish",
		"UPDATE idempotency_keys SET status = $2::int, response = $3 "
		"WHERE key = $1 AND owner = $4 AND status = 0 RETURNING key" },
	[ST_IDEM_RELEASE] = { "idem_release",
		"DELETE FROM idempotency_keys WHERE key = $1 AND owner = $2 AND status = 0" },
	[ST_IDEM_EXPIRE] = { "idem_expire",
		"DELETE FROM idempotency_keys WHERE key IN (SELECT key FROM idempotency_keys "
		"  WHERE created_at < now() - make_interval(secs => $1::int) LIMIT $2::int)" },
	[ST_NS_WAP_REQUIRED] = { "ns_wap_required",
		"WITH lv AS (SELECT " LEVELS("$1") " AS l) "
		"SELECT array_to_string(n.levels, '.') FROM namespaces n, lv "
		"WHERE cardinality(n.levels) <= cardinality(lv.l) "
		"AND n.levels = lv.l[1:cardinality(n.levels)] "
		"AND lower(n.properties->>'floe.wap.required') = 'true' "
		"ORDER BY cardinality(n.levels) LIMIT 1" },
	[ST_HOOK_INSERT] = { "hook_insert",
		"INSERT INTO audit_hooks (id, name, url, secret, scope_namespace, "
		"  scope_table, timeout_ms) "
		"VALUES ($1::uuid, $2, $3, $4, string_to_array($5::text, E'\\x1f'), $6, $7::int)" },
	[ST_HOOK_LIST] = { "hook_list", HOOK_COLUMNS "ORDER BY created_at, id" },
	[ST_HOOK_GET] = { "hook_get", HOOK_COLUMNS "WHERE id = $1::uuid" },
	[ST_HOOK_DELETE] = { "hook_delete",
		"DELETE FROM audit_hooks WHERE id = $1::uuid RETURNING id" },
	/* Serialises the changes of the set of hooks against each other, so
	 * two deletions cannot each leave the other as the last hook. */
	[ST_HOOK_LOCK] = { "hook_lock", "SELECT pg_advisory_xact_lock(7310593858473447526)" },
	/* A protected namespace (floe.wap.required=true on itself) or table
	 * (on itself or a namespace above) that hook $1 covers and no other
	 * hook does. */
	[ST_HOOK_SOLE_GUARD] = { "hook_sole_guard",
		"WITH h AS (SELECT id, scope_namespace, scope_table FROM audit_hooks "
		"  WHERE id = $1::uuid), "
		"x AS (SELECT n.levels::text[] COLLATE \"default\" AS ns, NULL::text AS tbl, "
		"    array_to_string(n.levels, '.') AS shown FROM namespaces n "
		"  WHERE lower(n.properties->>'floe.wap.required') = 'true' "
		"  UNION ALL SELECT n.levels::text[] COLLATE \"default\", t.name, "
		"    array_to_string(n.levels, '.') || '.' || t.name "
		"  FROM tables t JOIN namespaces n ON n.id = t.namespace_id "
		"  WHERE (t.metadata LIKE '%floe.wap.required%' "
		"    AND lower(t.metadata::jsonb->'properties'->>'floe.wap.required') = 'true') "
		"  OR EXISTS (SELECT 1 FROM namespaces p "
		"    WHERE lower(p.properties->>'floe.wap.required') = 'true' "
		"    AND cardinality(p.levels) <= cardinality(n.levels) "
		"    AND p.levels = n.levels[1:cardinality(p.levels)])) "
		"SELECT x.shown FROM x, h WHERE " HOOK_COVERS("h") " "
		"AND NOT EXISTS (SELECT 1 FROM audit_hooks o WHERE o.id <> h.id AND "
		HOOK_COVERS("o") ") ORDER BY x.shown LIMIT 1" },
	[ST_HOOKS_IN_SCOPE] = { "hooks_in_scope",
		"WITH lv AS (SELECT " LEVELS("$1") " AS l) "
		"SELECT h.id, h.name, h.url, h.secret, h.timeout_ms FROM audit_hooks h, lv "
		"WHERE h.scope_namespace IS NULL "
		"OR (h.scope_table IS NULL AND cardinality(h.scope_namespace) <= cardinality(lv.l) "
		"    AND h.scope_namespace = lv.l[1:cardinality(h.scope_namespace)]) "
		"OR (h.scope_table = $2 AND h.scope_namespace = lv.l) "
		"ORDER BY h.created_at, h.id" },
	[ST_RUN_INSERT] = { "run_insert",
		"INSERT INTO wap_runs (id, table_uuid, namespace, table_name, branch, state, "
		"  base_snapshot_id) "
		"VALUES ($1::uuid, $2::uuid, " LEVELS("$3") ", $4, $5, 'staged', $6::bigint)" },
	[ST_RUN_GET] = { "run_get", RUN_COLUMNS "FROM wap_runs WHERE id = $1::uuid" },
	[ST_RUN_LIST] = { "run_list", RUN_COLUMNS "FROM wap_runs "
		"WHERE table_uuid = $1::uuid AND ($2::bigint IS NULL OR seq < $2::bigint) "
		"ORDER BY seq DESC LIMIT $3::bigint" },
	[ST_RUN_TRANSITION] = { "run_transition",
		"UPDATE wap_runs SET state = $2, "
		"  audited_snapshot_id = coalesce($4::bigint, audited_snapshot_id), "
		"  published_snapshot_id = coalesce($5::bigint, published_snapshot_id), "
		"  audits = coalesce($6::jsonb, audits), updated_at = now(), "
		"  lease_until = CASE WHEN $2 = 'auditing' "
		"    THEN now() + make_interval(secs => $7::double precision / 1000) END, "
		"  lease_owner = CASE WHEN $2 = 'auditing' THEN $8::uuid END "
		"WHERE id = $1::uuid AND ((state = ANY (string_to_array($3::text, ',')) "
		"    AND (state <> 'auditing' OR lease_owner = $8::uuid)) "
		"  OR ('auditing-stale' = ANY (string_to_array($3::text, ',')) "
		"      AND state = 'auditing' AND lease_until < now())) "
		"RETURNING id" },
	/* Runs left auditing by a floe that stopped: failed, with their
	 * event, in one statement. */
	[ST_RUN_EXPIRE_STALE] = { "run_expire_stale",
		"WITH stale AS (UPDATE wap_runs SET state = 'audit-failed', updated_at = now(), "
		"  lease_until = NULL, lease_owner = NULL "
		"  WHERE id IN (SELECT id FROM wap_runs WHERE state = 'auditing' "
		"    AND lease_until < now() - make_interval(secs => $1::int) "
		"    LIMIT $2::int FOR UPDATE SKIP LOCKED) "
		"  RETURNING id, namespace, table_name) "
		"INSERT INTO audit_events (event, namespace, table_name, run_id, details) "
		"SELECT 'wap.lease-expired', namespace, table_name, id, "
		"  jsonb_build_object('state', 'audit-failed', 'reason', "
		"    'the floe auditing this run stopped before the audit ended; publish again') "
		"FROM stale" },
	[ST_EVENT_INSERT] = { "event_insert",
		"INSERT INTO audit_events (event, request_id, namespace, table_name, run_id, "
		"  details) "
		"VALUES ($1, $2, string_to_array($3::text, E'\\x1f'), $4, $5::uuid, "
		"  coalesce($6::jsonb, '{}'::jsonb))" },
	[ST_EVENT_LIST] = { "event_list",
		"SELECT id, " TS("at") ", event, principal, request_id, "
		"  array_to_string(namespace, E'\\x1f'), table_name, run_id, details::text "
		"  , xid::text "
		"FROM audit_events "
		"WHERE (xid, id) > ($7::xid8, $1::bigint) "
		"AND xid < pg_snapshot_xmin(pg_current_snapshot()) "
		"AND ($2::text IS NULL OR (cardinality(namespace) >= cardinality(" LEVELS("$2") ") "
		"     AND namespace[1:cardinality(" LEVELS("$2") ")] = " LEVELS("$2") ")) "
		"AND ($3::text IS NULL OR table_name = $3) "
		"AND ($4::text IS NULL OR run_id = $4::uuid) "
		"AND ($5::text IS NULL OR at >= $5::timestamptz) "
		"ORDER BY xid, id LIMIT $6::bigint" },
};

struct store {
	PGconn *conn;
	const char *conninfo; /* the pool's */
	bool busy;
	int index;
	char sqlstate[6]; /* of the last failed statement, "" if none */
};

struct store_pool {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	char *conninfo;
	int size;
	struct store *slots;
};

/* --- connections --- */

/* Server notices (NOTICE, WARNING) go to the log, not to stderr raw. */
static void store_notice(void *arg, const char *message)
{
	(void)arg;
	size_t len = strlen(message);
	while (len > 0 && message[len - 1] == '\n')
		len--;
	log_debug("store", "%.*s", (int)len, message);
}

/* Set once at start-up by store_set_limits, read-only afterwards. */
static struct store_limits limits = { 30000, 10000, 5000 };

/* How long past the statement timeout the client waits for an answer
 * before it takes the database for gone (a stopped server, a partition:
 * the server-side timeout cannot fire then). */
#define STORE_RESPONSE_GRACE_MS 5000

void store_set_limits(const struct store_limits *l)
{
	limits = *l;
}

/* The client-side wait for one answer, in ms; -1: forever. */
static int store_response_wait_ms(void)
{
	if (limits.statement_timeout_ms <= 0)
		return -1;
	return limits.statement_timeout_ms + STORE_RESPONSE_GRACE_MS;
}

/*
 * Opens one session. Our defaults come first so that the caller's
 * conninfo, expanded in place of dbname, overrides them; the timeouts go
 * into "options" after it, ahead of any options the caller gave (a later
 * -c wins, so the caller can still override those too). Migration
 * sessions (bounded false) get no statement or lock timeout: a migration may
 * rewrite a large table or wait for another replica's migration.
 */
static PGconn *store_connect_as(const char *conninfo, bool bounded,
				struct floe_error *err)
{
	char options[1024];
	const char *given = NULL;
	PQconninfoOption *parsed = PQconninfoParse(conninfo, NULL);

	if (parsed != NULL) {
		for (PQconninfoOption *o = parsed; o->keyword != NULL; o++) {
			if (strcmp(o->keyword, "options") == 0 && o->val != NULL)
				given = o->val;
		}
	}
	snprintf(options, sizeof(options), "-c statement_timeout=%d -c lock_timeout=%d%s%s",
		 bounded ? limits.statement_timeout_ms : 0,
		 bounded ? limits.lock_timeout_ms : 0, given ? " " : "",
		 given ? given : "");
	if (parsed != NULL)
		PQconninfoFree(parsed);
	const char *keys[] = { "connect_timeout", "application_name", "keepalives",
			       "keepalives_idle", "keepalives_interval",
			       "keepalives_count", "tcp_user_timeout", "dbname",
			       "options", NULL };
	const char *values[] = { "5", "floe", "1", "15", "5", "3", "30000", conninfo,
				 options, NULL };
	PGconn *conn = PQconnectdbParams(keys, values, 1);

	if (conn == NULL) {
		floe_err(err, FE_INTERNAL, "out of memory");
		return NULL;
	}
	if (PQstatus(conn) != CONNECTION_OK) {
		char *msg = PQerrorMessage(conn);
		size_t len = strlen(msg);
		while (len > 0 && (msg[len - 1] == '\n' || msg[len - 1] == ' '))
			msg[--len] = '\0';
		log_warn("store", "cannot connect to PostgreSQL: %s", msg);
		PQfinish(conn);
		floe_err(err, FE_UNAVAILABLE, "the catalog database is unavailable");
		return NULL;
	}
	PQsetNoticeProcessor(conn, store_notice, NULL);
	/* Sending never blocks either: a stopped server with a full socket
	 * buffer must not hang the sender past the deadline (store_await). */
	if (bounded && PQsetnonblocking(conn, 1) != 0)
		log_warn("store", "cannot make a PostgreSQL connection nonblocking");
	return conn;
}

static PGconn *store_connect(const char *conninfo, struct floe_error *err)
{
	return store_connect_as(conninfo, true, err);
}

static PGresult *store_collect(PGconn *conn, bool *timed_out);

static bool store_prepare_all(PGconn *conn, struct floe_error *err)
{
	for (int i = 0; i < ST_COUNT; i++) {
		bool timed_out = false;
		PGresult *r = NULL;

		if (PQsendPrepare(conn, statements[i].name, statements[i].sql, 0, NULL))
			r = store_collect(conn, &timed_out);
		bool ok = PQresultStatus(r) == PGRES_COMMAND_OK;
		if (!ok)
			log_error("store", "cannot prepare statement %s: %s",
				  statements[i].name,
				  timed_out ? "no answer in time" : PQresultErrorMessage(r));
		PQclear(r);
		if (!ok)
			return floe_err(err, PQstatus(conn) == CONNECTION_OK
						     ? FE_INTERNAL : FE_UNAVAILABLE,
					"the catalog database is unavailable");
	}
	return true;
}

/* True when an idle connection has been closed by the server (a restart,
 * an administrator's terminate): the socket is readable while we expect
 * nothing, and reading shows the end. */
static bool store_conn_dead(PGconn *conn)
{
	struct pollfd p;

	if (PQstatus(conn) != CONNECTION_OK ||
	    PQtransactionStatus(conn) != PQTRANS_IDLE)
		return true;
	p.fd = PQsocket(conn);
	p.events = POLLIN;
	p.revents = 0;
	if (p.fd < 0)
		return true;
	if (poll(&p, 1, 0) <= 0)
		return false;
	if (!PQconsumeInput(conn))
		return true;
	return PQstatus(conn) != CONNECTION_OK;
}

struct store_pool *store_pool_new(const char *conninfo, int size)
{
	struct store_pool *pool = calloc(1, sizeof(*pool));

	if (pool == NULL)
		return NULL;
	pool->conninfo = strdup(conninfo);
	pool->slots = calloc((size_t)size, sizeof(*pool->slots));
	if (pool->conninfo == NULL || pool->slots == NULL) {
		free(pool->conninfo);
		free(pool->slots);
		free(pool);
		return NULL;
	}
	pool->size = size;
	for (int i = 0; i < size; i++) {
		pool->slots[i].index = i;
		pool->slots[i].conninfo = pool->conninfo;
	}
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_mutex_init(&pool->mu, NULL);
	pthread_cond_init(&pool->cv, &ca);
	pthread_condattr_destroy(&ca);
	return pool;
}

void store_pool_free(struct store_pool **poolp)
{
	struct store_pool *pool = *poolp;

	if (pool == NULL)
		return;
	for (int i = 0; i < pool->size; i++) {
		if (pool->slots[i].conn != NULL)
			PQfinish(pool->slots[i].conn);
	}
	pthread_mutex_destroy(&pool->mu);
	pthread_cond_destroy(&pool->cv);
	free(pool->slots);
	free(pool->conninfo);
	free(pool);
	*poolp = NULL;
}

struct store *store_pool_acquire(struct store_pool *pool, struct floe_error *err)
{
	struct store *s = NULL;
	struct timespec deadline;

	clock_gettime(CLOCK_MONOTONIC, &deadline);
	deadline.tv_sec += limits.acquire_timeout_ms / 1000;
	deadline.tv_nsec += (long)(limits.acquire_timeout_ms % 1000) * 1000000L;
	if (deadline.tv_nsec >= 1000000000L) {
		deadline.tv_sec++;
		deadline.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&pool->mu);
	for (;;) {
		for (int i = 0; i < pool->size; i++) {
			if (!pool->slots[i].busy) {
				s = &pool->slots[i];
				break;
			}
		}
		if (s != NULL)
			break;
		if (limits.acquire_timeout_ms <= 0) {
			pthread_cond_wait(&pool->cv, &pool->mu);
		} else if (pthread_cond_timedwait(&pool->cv, &pool->mu, &deadline) == ETIMEDOUT) {
			pthread_mutex_unlock(&pool->mu);
			log_warn("store", "no free database connection within %d ms (pool of %d)",
				 limits.acquire_timeout_ms, pool->size);
			floe_err(err, FE_UNAVAILABLE,
				 "every catalog database connection is busy; retry");
			return NULL;
		}
	}
	s->busy = true;
	pthread_mutex_unlock(&pool->mu);

	s->sqlstate[0] = '\0';
	if (s->conn != NULL && store_conn_dead(s->conn)) {
		log_info("store", "connection %d to PostgreSQL was lost; reconnecting",
			 s->index);
		PQfinish(s->conn);
		s->conn = NULL;
	}
	if (s->conn == NULL) {
		s->conn = store_connect(pool->conninfo, err);
		if (s->conn != NULL && !store_prepare_all(s->conn, err)) {
			PQfinish(s->conn);
			s->conn = NULL;
		}
		if (s->conn == NULL) {
			store_pool_release(pool, s);
			return NULL;
		}
	}
	return s;
}

void store_pool_release(struct store_pool *pool, struct store *s)
{
	pthread_mutex_lock(&pool->mu);
	s->busy = false;
	pthread_cond_signal(&pool->cv);
	pthread_mutex_unlock(&pool->mu);
}

/* True when a statement can change rows (and so, run on its own, commits
 * a change as it runs). */
static bool statement_writes(const char *sql)
{
	return strstr(sql, "INSERT ") != NULL || strstr(sql, "UPDATE ") != NULL ||
	       strstr(sql, "DELETE ") != NULL;
}

/* Records the outcome and SQLSTATE of a failure in err. */
static void store_error_detail(struct floe_error *err, enum floe_outcome outcome,
			       const char *sqlstate)
{
	if (err == NULL)
		return;
	err->outcome = outcome;
	snprintf(err->sqlstate, sizeof(err->sqlstate), "%s", sqlstate);
}

/* Sends what is queued on conn (a nonblocking connection) and waits until
 * a whole answer is ready (true), or until the deadline (false;
 * *timed_out set), or a broken connection (true: the next PQgetResult
 * reports it). */
static bool store_await(PGconn *conn, const struct timespec *deadline, bool *timed_out)
{
	bool flushed = false;

	for (;;) {
		if (!flushed) {
			int f = PQflush(conn);
			if (f < 0)
				return true;
			flushed = f == 0;
		}
		if (flushed && !PQisBusy(conn))
			return true;
		struct pollfd p = { .fd = PQsocket(conn),
				    .events = (short)(POLLIN | (flushed ? 0 : POLLOUT)),
				    .revents = 0 };
		int wait = -1;

		if (p.fd < 0)
			return true;
		if (deadline != NULL) {
			struct timespec now;
			clock_gettime(CLOCK_MONOTONIC, &now);
			long long ms = (long long)(deadline->tv_sec - now.tv_sec) * 1000LL +
				       (deadline->tv_nsec - now.tv_nsec) / 1000000L;
			if (ms <= 0) {
				*timed_out = true;
				return false;
			}
			wait = ms > 1000000 ? 1000000 : (int)ms;
		}
		int n = poll(&p, 1, wait);
		if (n < 0 && errno != EINTR)
			return true;
		if (n > 0 && (p.revents & (POLLIN | POLLERR | POLLHUP)) != 0 &&
		    !PQconsumeInput(conn))
			return true;
	}
}

/*
 * Waits for the answer to what was just sent on conn, at most the
 * statement timeout plus a grace. On timeout the socket is shut down, so
 * the connection reads as broken from then on (and is replaced on the
 * next acquire); *timed_out is set and NULL returned. Else the last
 * result (caller PQclear()s it).
 */
static PGresult *store_collect(PGconn *conn, bool *timed_out)
{
	struct timespec deadline;
	int wait = store_response_wait_ms();
	PGresult *last = NULL;

	*timed_out = false;
	clock_gettime(CLOCK_MONOTONIC, &deadline);
	deadline.tv_sec += wait / 1000;
	deadline.tv_nsec += (long)(wait % 1000) * 1000000L;
	if (deadline.tv_nsec >= 1000000000L) {
		deadline.tv_sec++;
		deadline.tv_nsec -= 1000000000L;
	}
	for (;;) {
		if (!store_await(conn, wait < 0 ? NULL : &deadline, timed_out)) {
			PQclear(last);
			shutdown(PQsocket(conn), SHUT_RDWR);
			(void)PQconsumeInput(conn);
			for (;;) {
				PGresult *rest = PQgetResult(conn);
				if (rest == NULL)
					break;
				PQclear(rest);
			}
			return NULL;
		}
		PGresult *r = PQgetResult(conn);
		if (r == NULL)
			return last;
		PQclear(last);
		last = r;
		if (PQstatus(conn) != CONNECTION_OK)
			return last;
	}
}

/* Sends one prepared statement and waits for its answer (store_collect);
 * NULL when it could not be sent. */
static PGresult *store_run(PGconn *conn, const char *name, int nparams,
			   const char *const *params, bool *timed_out)
{
	*timed_out = false;
	if (!PQsendQueryPrepared(conn, name, nparams, params, NULL, NULL, 0))
		return NULL;
	return store_collect(conn, timed_out);
}

/*
 * Runs a prepared statement. Returns the result (caller PQclear()s it) or
 * NULL with err set and its SQLSTATE and outcome filled in: FE_UNAVAILABLE
 * when the connection is gone (outcome unknown only for a COMMIT, or for a
 * write outside BEGIN), when the transaction was rolled back (class 40) or
 * the server gave up (timeouts, shutdown); otherwise FE_INTERNAL with the
 * detail logged and the SQLSTATE also kept in s->sqlstate for the caller to
 * map (unique violations and the like).
 */
static PGresult *store_exec(struct store *s, enum stmt_id id, int nparams,
			    const char *const *params, struct floe_error *err)
{
	if (s->conn == NULL) {
		floe_err(err, FE_UNAVAILABLE, "the catalog database is unavailable");
		store_error_detail(err, FO_FAILED, "08003");
		return NULL;
	}
	PGTransactionStatusType before = PQtransactionStatus(s->conn);
	/* Inside BEGIN nothing but the COMMIT itself can have taken effect;
	 * a write on its own commits as it runs. */
	bool inside = before == PQTRANS_INTRANS || before == PQTRANS_INERROR;
	bool unknown = id == ST_COMMIT || (!inside && statement_writes(statements[id].sql));
	bool timed_out = false;
	PGresult *r = store_run(s->conn, statements[id].name, nparams, params, &timed_out);
	ExecStatusType st = PQresultStatus(r);

	if (timed_out) {
		log_warn("store", "statement %s: no answer from PostgreSQL within %d ms; closing the connection",
			 statements[id].name, store_response_wait_ms());
		PQclear(r);
		floe_err(err, FE_UNAVAILABLE,
			 "the catalog database did not answer in time; retry");
		store_error_detail(err, unknown ? FO_UNKNOWN : FO_FAILED, "57014");
		return NULL;
	}
	s->sqlstate[0] = '\0';
	if (st == PGRES_TUPLES_OK || st == PGRES_COMMAND_OK)
		return r;
	const char *state = PQresultErrorField(r, PG_DIAG_SQLSTATE);
	if (state != NULL)
		snprintf(s->sqlstate, sizeof(s->sqlstate), "%s", state);
	if (PQstatus(s->conn) != CONNECTION_OK ||
	    (state != NULL && (strncmp(state, "08", 2) == 0 ||
			       strncmp(state, "57P0", 4) == 0))) {
		log_warn("store", "statement %s: connection lost%s: %s",
			 statements[id].name,
			 unknown ? " (its outcome is unknown)" : "",
			 PQerrorMessage(s->conn));
		PQclear(r);
		floe_err(err, FE_UNAVAILABLE, "the catalog database is unavailable");
		store_error_detail(err, unknown ? FO_UNKNOWN : FO_FAILED, s->sqlstate[0] ? s->sqlstate : "08006");
		return NULL;
	}
	if (state != NULL && strncmp(state, "40", 2) == 0) {
		/* Serialization failures and deadlocks roll the transaction
		 * back: a known failure that a retry can get past. */
		log_warn("store", "statement %s: %s", statements[id].name,
			 PQresultErrorMessage(r));
		floe_err(err, FE_UNAVAILABLE,
			 "the catalog database aborted the change to resolve a conflict; retry");
	} else if (state != NULL && (strcmp(state, "57014") == 0 ||
				     strcmp(state, "55P03") == 0 ||
				     strncmp(state, "53", 2) == 0 ||
				     strncmp(state, "57P", 3) == 0)) {
		/* A statement or lock timeout, an exhausted server, a shutdown:
		 * nothing was done and a later retry may succeed. */
		log_warn("store", "statement %s: %s", statements[id].name,
			 PQresultErrorMessage(r));
		floe_err(err, FE_UNAVAILABLE, "the catalog database is busy; retry");
	} else if (state != NULL && (strncmp(state, "23", 2) == 0 ||
				     strncmp(state, "22", 2) == 0)) {
		/* Integrity violations are conflicts the caller maps (an
		 * existing name, a dropped parent), and data exceptions come
		 * from client input the caller maps (a since that is no
		 * timestamp): not server faults. */
		log_debug("store", "statement %s: %s", statements[id].name,
			  PQresultErrorMessage(r));
		floe_err(err, FE_INTERNAL, "internal database error");
	} else {
		log_error("store", "statement %s failed (%s): %s",
			  statements[id].name, state ? state : "?",
			  PQresultErrorMessage(r));
		floe_err(err, FE_INTERNAL, "internal database error");
	}
	store_error_detail(err, FO_FAILED, s->sqlstate);
	PQclear(r);
	return NULL;
}

bool store_ping(struct store *s, struct floe_error *err)
{
	PGresult *r = store_exec(s, ST_PING, 0, NULL, err);

	if (r == NULL)
		return false;
	PQclear(r);
	return true;
}

/* --- migrations --- */

static bool exec_simple(PGconn *conn, const char *sql, const char *what,
			struct floe_error *err)
{
	PGresult *r = PQexec(conn, sql);
	ExecStatusType st = PQresultStatus(r);
	bool ok = st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK;

	if (!ok) {
		log_error("store", "%s failed: %s", what, PQresultErrorMessage(r));
		floe_err(err, FE_INTERNAL, "%s failed", what);
	}
	PQclear(r);
	return ok;
}

/* The advisory lock key shared by every replica's migration run. */
#define MIGRATION_LOCK "7310593858473447525"

bool store_migrate(const char *conninfo, struct floe_error *err)
{
	PGconn *conn = store_connect_as(conninfo, false, err);
	PGresult *r = NULL;
	bool ok = false;

	if (conn == NULL)
		return false;
	if (!exec_simple(conn, "SELECT pg_advisory_lock(" MIGRATION_LOCK ")",
			 "taking the migration lock", err))
		goto done;
	if (!exec_simple(conn,
			 "CREATE TABLE IF NOT EXISTS floe_schema_version ("
			 " version integer PRIMARY KEY,"
			 " name text NOT NULL,"
			 " applied_at timestamptz NOT NULL DEFAULT now())",
			 "creating the schema version table", err))
		goto unlock;
	/* Every migration not yet recorded, in order: a number below one
	 * already applied (numbers were handed out to parallel work) is
	 * still applied, never skipped. */
	r = PQexec(conn, "SELECT version FROM floe_schema_version");
	if (PQresultStatus(r) != PGRES_TUPLES_OK) {
		log_error("store", "reading the schema version: %s",
			  PQresultErrorMessage(r));
		floe_err(err, FE_INTERNAL, "reading the schema version failed");
		goto unlock;
	}

	for (size_t i = 0; i < store_migrations_count; i++) {
		const struct store_migration *m = &store_migrations[i];
		char version[16];
		const char *params[2] = { version, m->name };
		bool applied = false;

		for (int k = 0; r != NULL && k < PQntuples(r); k++)
			applied |= strtol(PQgetvalue(r, k, 0), NULL, 10) == m->version;
		if (applied)
			continue;
		log_info("store", "applying migration %s", m->name);
		if (!exec_simple(conn, "BEGIN", "starting a migration", err))
			goto unlock;
		if (!exec_simple(conn, m->sql, m->name, err)) {
			PQclear(PQexec(conn, "ROLLBACK"));
			goto unlock;
		}
		snprintf(version, sizeof(version), "%d", m->version);
		PGresult *rec = PQexecParams(conn,
					     "INSERT INTO floe_schema_version (version, name) "
					     "VALUES ($1::integer, $2)",
					     2, NULL, params, NULL, NULL, 0);
		if (PQresultStatus(rec) != PGRES_COMMAND_OK) {
			log_error("store", "recording migration %s: %s", m->name,
				  PQresultErrorMessage(rec));
			PQclear(rec);
			PQclear(PQexec(conn, "ROLLBACK"));
			floe_err(err, FE_INTERNAL, "recording a migration failed");
			goto unlock;
		}
		PQclear(rec);
		if (!exec_simple(conn, "COMMIT", "committing a migration", err))
			goto unlock;
	}
	ok = true;
unlock:
	if (!exec_simple(conn, "SELECT pg_advisory_unlock(" MIGRATION_LOCK ")",
			 "releasing the migration lock", ok ? err : NULL))
		ok = false;
done:
	PQclear(r);
	PQfinish(conn);
	return ok;
}

bool store_ensure_database(const char *admin_conninfo, const char *dbname,
			   struct floe_error *err)
{
	PGconn *conn = store_connect(admin_conninfo, err);
	const char *params[1] = { dbname };
	PGresult *r;
	bool exists;
	bool ok = false;

	if (conn == NULL)
		return false;
	r = PQexecParams(conn, "SELECT 1 FROM pg_database WHERE datname = $1",
			 1, NULL, params, NULL, NULL, 0);
	if (PQresultStatus(r) != PGRES_TUPLES_OK) {
		log_error("store", "looking up database %s: %s", dbname,
			  PQresultErrorMessage(r));
		floe_err(err, FE_INTERNAL, "looking up the database failed");
		PQclear(r);
		goto done;
	}
	exists = PQntuples(r) > 0;
	PQclear(r);
	if (!exists) {
		/* A database name cannot be a parameter; only the fixed name
		 * of the embedded catalog database is ever created here. */
		if (strcmp(dbname, "floe") != 0) {
			floe_err(err, FE_INTERNAL, "refusing to create database %s",
				 dbname);
			goto done;
		}
		log_info("store", "creating database %s", dbname);
		if (!exec_simple(conn, "CREATE DATABASE floe", "creating the database",
				 err))
			goto done;
	}
	ok = true;
done:
	PQfinish(conn);
	return ok;
}

bool store_grant_runtime(const char *owner_conninfo, const char *runtime_conninfo,
			 struct floe_error *err)
{
	PGconn *rt = store_connect(runtime_conninfo, err);
	PGconn *owner = NULL;
	PGresult *r = NULL;
	char role[128];
	bool ok = false;

	if (rt == NULL)
		return false;
	r = PQexec(rt, "SELECT current_user");
	if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1) {
		log_error("store", "reading floe's runtime role: %s", PQresultErrorMessage(r));
		floe_err(err, FE_INTERNAL, "reading the runtime role failed");
		goto done;
	}
	snprintf(role, sizeof(role), "%s", PQgetvalue(r, 0, 0));
	PQclear(r);
	r = NULL;
	owner = store_connect(owner_conninfo, err);
	if (owner == NULL)
		goto done;
	const char *params[1] = { role };
	r = PQexecParams(owner, "SELECT floe_grant_runtime($1::name)", 1, NULL, params,
			 NULL, NULL, 0);
	if (PQresultStatus(r) != PGRES_TUPLES_OK) {
		log_error("store", "granting the runtime role %s its privileges: %s", role,
			  PQresultErrorMessage(r));
		floe_err(err, FE_INTERNAL, "granting the runtime role its privileges failed");
		goto done;
	}
	log_info("store", "runtime role %s may only insert into and read the audit log", role);
	ok = true;
done:
	PQclear(r);
	if (owner != NULL)
		PQfinish(owner);
	PQfinish(rt);
	return ok;
}

/*
 * The embedded cluster's two roles: floe_owner owns the catalog database
 * and its objects (migrations run as it), floe_runtime is the login floe
 * serves with. Objects a floe of before these roles created as the
 * cluster's superuser are handed to floe_owner.
 */
static const char *const embedded_roles_sql[] = {
	"DO $$ BEGIN "
	"IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'floe_owner') THEN "
	"  CREATE ROLE floe_owner LOGIN; END IF; "
	"IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'floe_runtime') THEN "
	"  CREATE ROLE floe_runtime LOGIN; END IF; "
	"END $$",
	"ALTER DATABASE floe OWNER TO floe_owner",
	"ALTER SCHEMA public OWNER TO floe_owner",
	"DO $$ DECLARE r record; BEGIN "
	"FOR r IN SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
	"  WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p', 'v', 'm') "
	"  AND c.relowner <> 'floe_owner'::regrole LOOP "
	"  EXECUTE format('ALTER TABLE public.%I OWNER TO floe_owner', r.relname); "
	"END LOOP; "
	"FOR r IN SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
	"  WHERE n.nspname = 'public' AND c.relkind = 'S' "
	"  AND c.relowner <> 'floe_owner'::regrole AND NOT EXISTS (SELECT 1 FROM pg_depend d "
	"    WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid AND d.deptype IN ('a', 'i')) LOOP "
	"  EXECUTE format('ALTER SEQUENCE public.%I OWNER TO floe_owner', r.relname); "
	"END LOOP; "
	"FOR r IN SELECT p.oid::regprocedure AS f FROM pg_proc p "
	"  JOIN pg_namespace n ON n.oid = p.pronamespace "
	"  WHERE n.nspname = 'public' AND p.proowner <> 'floe_owner'::regrole LOOP "
	"  EXECUTE format('ALTER FUNCTION %s OWNER TO floe_owner', r.f); "
	"END LOOP; "
	"END $$",
};

bool store_embedded_roles(const char *superuser_conninfo, struct floe_error *err)
{
	PGconn *conn = store_connect(superuser_conninfo, err);
	bool ok = true;

	if (conn == NULL)
		return false;
	for (size_t i = 0; ok && i < sizeof(embedded_roles_sql) / sizeof(*embedded_roles_sql); i++)
		ok = exec_simple(conn, embedded_roles_sql[i], "setting up the database roles", err);
	PQfinish(conn);
	return ok;
}

/* --- namespaces --- */

/* The 0x1F-joined levels of ns, as a new string or NULL (err set). */
static char *levels_param(const struct ns_ident *ns, struct floe_error *err)
{
	char *p = ident_ns_join(ns);

	if (p == NULL)
		floe_err(err, FE_INTERNAL, "out of memory");
	return p;
}

static bool ns_lookup_id(struct store *s, const char *levels, char *id,
			 size_t idlen, bool *found, struct floe_error *err)
{
	const char *params[1] = { levels };
	PGresult *r = store_exec(s, ST_NS_ID, 1, params, err);

	if (r == NULL)
		return false;
	*found = PQntuples(r) > 0;
	if (*found)
		snprintf(id, idlen, "%s", PQgetvalue(r, 0, 0));
	PQclear(r);
	return true;
}

static bool ns_missing(const struct ns_ident *ns, struct floe_error *err)
{
	char *name = ident_ns_display(ns);
	floe_err(err, FE_NO_SUCH_NAMESPACE, "namespace does not exist: %s",
		 name ? name : "?");
	free(name);
	return false;
}

bool store_ns_create(struct store *s, const struct ns_ident *ns,
		     const json_t *properties, struct floe_error *err)
{
	char *levels = levels_param(ns, err);
	char *props = NULL;
	PGresult *r = NULL;
	bool ok = false;

	if (levels == NULL)
		return false;
	props = json_dumps(properties, JSON_COMPACT);
	if (props == NULL) {
		floe_err(err, FE_INTERNAL, "out of memory");
		goto done;
	}
	const char *params[2] = { levels, props };
	r = store_exec(s, ST_NS_CREATE, 2, params, err);
	if (r == NULL) {
		/* 23503: the parent was dropped while we inserted. */
		if (strcmp(s->sqlstate, "23503") == 0) {
			struct ns_ident parent = *ns;
			parent.nlevels--;
			ns_missing(&parent, err);
		}
		goto done;
	}
	if (PQntuples(r) == 1) {
		ok = true;
		goto done;
	}
	bool exists = false;
	char id[32];
	if (!ns_lookup_id(s, levels, id, sizeof(id), &exists, err))
		goto done;
	if (exists) {
		char *name = ident_ns_display(ns);
		floe_err(err, FE_ALREADY_EXISTS, "namespace already exists: %s",
			 name ? name : "?");
		free(name);
	} else {
		struct ns_ident parent = *ns;
		parent.nlevels--;
		ns_missing(&parent, err);
	}
done:
	PQclear(r);
	free(props);
	free(levels);
	return ok;
}

bool store_ns_load(struct store *s, const struct ns_ident *ns,
		   json_t **properties, struct floe_error *err)
{
	char *levels = levels_param(ns, err);
	PGresult *r;
	json_error_t jerr;

	if (levels == NULL)
		return false;
	const char *params[1] = { levels };
	r = store_exec(s, ST_NS_LOAD, 1, params, err);
	free(levels);
	if (r == NULL)
		return false;
	if (PQntuples(r) == 0) {
		PQclear(r);
		return ns_missing(ns, err);
	}
	*properties = json_loads(PQgetvalue(r, 0, 0), 0, &jerr);
	PQclear(r);
	if (*properties == NULL)
		return floe_err(err, FE_INTERNAL, "stored properties are unreadable");
	return true;
}

bool store_ns_exists(struct store *s, const struct ns_ident *ns,
		     bool *exists, struct floe_error *err)
{
	char *levels = levels_param(ns, err);
	char id[32];
	bool ok;

	if (levels == NULL)
		return false;
	ok = ns_lookup_id(s, levels, id, sizeof(id), exists, err);
	free(levels);
	return ok;
}

bool store_ns_list(struct store *s, const struct ns_ident *parent,
		   const struct ns_ident *after, long limit,
		   json_t **out, bool *more, struct floe_error *err)
{
	char *after_p = NULL;
	char limit_p[32];
	char parent_id[32] = "";
	PGresult *r = NULL;
	json_t *list = NULL;
	bool ok = false;

	*out = NULL;
	*more = false;
	if (parent != NULL) {
		char *levels = levels_param(parent, err);
		bool found = false;
		if (levels == NULL)
			return false;
		ok = ns_lookup_id(s, levels, parent_id, sizeof(parent_id), &found,
				  err);
		free(levels);
		if (!ok)
			return false;
		ok = false;
		if (!found)
			return ns_missing(parent, err);
	}
	if (after != NULL) {
		after_p = levels_param(after, err);
		if (after_p == NULL)
			return false;
	}
	/* One row more than asked tells whether another page follows. */
	snprintf(limit_p, sizeof(limit_p), "%ld", limit + 1);
	const char *params[3] = { after_p, limit < 0 ? NULL : limit_p, parent_id };
	r = store_exec(s, parent ? ST_NS_LIST_CHILDREN : ST_NS_LIST_TOP,
		       parent ? 3 : 2, params, err);
	if (r == NULL)
		goto done;
	list = json_array();
	if (list == NULL)
		goto oom;
	int rows = PQntuples(r);
	if (limit >= 0 && rows > limit) {
		*more = true;
		rows = (int)limit;
	}
	for (int i = 0; i < rows; i++) {
		const char *v = PQgetvalue(r, i, 0);
		json_t *levels = json_array();
		if (levels == NULL || json_array_append_new(list, levels) != 0)
			goto oom;
		for (const char *p = v;;) {
			const char *sep = strchr(p, IDENT_SEPARATOR);
			size_t n = sep ? (size_t)(sep - p) : strlen(p);
			if (json_array_append_new(levels, json_stringn(p, n)) != 0)
				goto oom;
			if (sep == NULL)
				break;
			p = sep + 1;
		}
	}
	*out = list;
	list = NULL;
	ok = true;
	goto done;
oom:
	floe_err(err, FE_INTERNAL, "out of memory");
done:
	json_decref(list);
	PQclear(r);
	free(after_p);
	return ok;
}

bool store_ns_drop(struct store *s, const struct ns_ident *ns,
		   struct floe_error *err)
{
	char *levels = levels_param(ns, err);
	PGresult *r;
	bool ok = false;

	if (levels == NULL)
		return false;
	const char *params[1] = { levels };
	r = store_exec(s, ST_NS_DROP, 1, params, err);
	if (r == NULL) {
		/* 23503: a child or table appeared while we deleted. */
		if (strcmp(s->sqlstate, "23503") == 0)
			goto not_empty;
		goto done;
	}
	if (PQntuples(r) == 1) {
		ok = true;
		goto done;
	}
	bool exists = false;
	char id[32];
	if (!ns_lookup_id(s, levels, id, sizeof(id), &exists, err))
		goto done;
	if (!exists) {
		ns_missing(ns, err);
		goto done;
	}
not_empty:;
	char *name = ident_ns_display(ns);
	floe_err(err, FE_NAMESPACE_NOT_EMPTY,
		 "namespace is not empty: %s holds tables or namespaces",
		 name ? name : "?");
	free(name);
done:
	PQclear(r);
	free(levels);
	return ok;
}

bool store_ns_update_properties(struct store *s, const struct ns_ident *ns,
				const json_t *removals, const json_t *updates,
				json_t **old_properties, struct floe_error *err)
{
	char *levels = levels_param(ns, err);
	char *rem = json_dumps(removals, JSON_COMPACT);
	char *upd = json_dumps(updates, JSON_COMPACT);
	PGresult *r = NULL;
	json_error_t jerr;
	bool ok = false;

	if (levels == NULL)
		goto done;
	if (rem == NULL || upd == NULL) {
		floe_err(err, FE_INTERNAL, "out of memory");
		goto done;
	}
	const char *params[3] = { levels, rem, upd };
	r = store_exec(s, ST_NS_UPDATE_PROPERTIES, 3, params, err);
	if (r == NULL)
		goto done;
	if (PQntuples(r) == 0) {
		ns_missing(ns, err);
		goto done;
	}
	*old_properties = json_loads(PQgetvalue(r, 0, 0), 0, &jerr);
	if (*old_properties == NULL) {
		floe_err(err, FE_INTERNAL, "stored properties are unreadable");
		goto done;
	}
	ok = true;
done:
	PQclear(r);
	free(levels);
	free(rem);
	free(upd);
	return ok;
}

/* --- tables --- */

void store_table_row_clear(struct table_row *row)
{
	free(row->metadata_location);
	free(row->metadata);
	memset(row, 0, sizeof(*row));
}

/* Fills row from columns id, uuid, location, metadata, version. */
static bool row_from_result(PGresult *r, int i, struct table_row *row,
			    struct floe_error *err)
{
	memset(row, 0, sizeof(*row));
	row->id = strtoll(PQgetvalue(r, i, 0), NULL, 10);
	snprintf(row->uuid, sizeof(row->uuid), "%s", PQgetvalue(r, i, 1));
	if (!PQgetisnull(r, i, 2))
		row->metadata_location = strdup(PQgetvalue(r, i, 2));
	row->metadata_len = (size_t)PQgetlength(r, i, 3);
	row->metadata = malloc(row->metadata_len + 1);
	if (row->metadata == NULL ||
	    (!PQgetisnull(r, i, 2) && row->metadata_location == NULL)) {
		store_table_row_clear(row);
		return floe_err(err, FE_INTERNAL, "out of memory");
	}
	memcpy(row->metadata, PQgetvalue(r, i, 3), row->metadata_len + 1);
	row->version = strtoll(PQgetvalue(r, i, 4), NULL, 10);
	return true;
}

/*
 * The error for a table that is not there. Routes on a table answer
 * NoSuchTableException even when its namespace is missing too: engines
 * read that answer as "try the last name part as a branch or metadata
 * table" (t.branch_x, t.refs). Creating a table in a missing namespace is
 * NoSuchNamespaceException (ns_error).
 */
static bool table_missing(struct store *s, const struct ns_ident *ns,
			  const char *name, bool ns_error, struct floe_error *err)
{
	bool ns_exists = false;
	char *shown = ident_ns_display(ns);

	if (store_ns_exists(s, ns, &ns_exists, err)) {
		if (ns_exists)
			floe_err(err, FE_NO_SUCH_TABLE, "table does not exist: %s.%s",
				 shown ? shown : "?", name);
		else if (ns_error)
			floe_err(err, FE_NO_SUCH_NAMESPACE, "namespace does not exist: %s",
				 shown ? shown : "?");
		else
			floe_err(err, FE_NO_SUCH_TABLE,
				 "table does not exist: %s.%s (namespace %s does not exist)",
				 shown ? shown : "?", name, shown ? shown : "?");
	}
	free(shown);
	return false;
}

bool store_table_load(struct store *s, const struct ns_ident *ns,
		      const char *name, struct table_row *row,
		      struct floe_error *err)
{
	return store_table_load_as(s, ns, name, false, row, err);
}

bool store_table_load_as(struct store *s, const struct ns_ident *ns,
			 const char *name, bool refs_only, struct table_row *row,
			 struct floe_error *err)
{
	char *levels = levels_param(ns, err);
	PGresult *r;
	bool ok;

	memset(row, 0, sizeof(*row));
	if (levels == NULL)
		return false;
	const char *params[2] = { levels, name };
	r = store_exec(s, refs_only ? ST_TABLE_LOAD_REFS : ST_TABLE_LOAD, 2, params, err);
	free(levels);
	if (r == NULL)
		return false;
	if (PQntuples(r) == 0) {
		PQclear(r);
		return table_missing(s, ns, name, false, err);
	}
	ok = row_from_result(r, 0, row, err);
	PQclear(r);
	return ok;
}

bool store_table_exists(struct store *s, const struct ns_ident *ns,
			const char *name, bool *exists, struct floe_error *err)
{
	char *levels = levels_param(ns, err);
	PGresult *r;

	*exists = false;
	if (levels == NULL)
		return false;
	const char *params[2] = { levels, name };
	r = store_exec(s, ST_TABLE_LOAD, 2, params, err);
	free(levels);
	if (r == NULL)
		return false;
	*exists = PQntuples(r) > 0;
	PQclear(r);
	return true;
}

static bool table_insert(struct store *s, enum stmt_id id,
			 const struct ns_ident *ns, const char *name,
			 const char *uuid, const char *location,
			 const char *metadata, const char *refs_metadata,
			 const char *table_location, const char *request_id,
			 bool *done, struct floe_error *err)
{
	char *levels = levels_param(ns, err);
	PGresult *r;

	*done = false;
	if (levels == NULL)
		return false;
	const char *params[8] = { levels, name, uuid, location, metadata, request_id,
				  refs_metadata, table_location };
	r = store_exec(s, id, 8, params, err);
	free(levels);
	if (r == NULL) {
		if (strcmp(s->sqlstate, "23505") == 0)
			return floe_err(err, FE_ALREADY_EXISTS,
					"a table with uuid %s is already registered", uuid);
		return false;
	}
	*done = PQntuples(r) == 1;
	PQclear(r);
	return true;
}

bool store_table_create(struct store *s, const struct ns_ident *ns,
			const char *name, const char *uuid,
			const char *metadata_location, const char *metadata,
			const char *refs_metadata, const char *table_location,
			const char *request_id, struct floe_error *err)
{
	bool inserted;
	bool exists = false;

	if (!table_insert(s, ST_TABLE_CREATE, ns, name, uuid, metadata_location,
			  metadata, refs_metadata, table_location, request_id,
			  &inserted, err))
		return false;
	if (inserted)
		return true;
	if (!store_table_exists(s, ns, name, &exists, err))
		return false;
	if (!exists)
		return table_missing(s, ns, name, true, err);
	char *shown = ident_ns_display(ns);
	floe_err(err, FE_ALREADY_EXISTS, "table already exists: %s.%s",
		 shown ? shown : "?", name);
	free(shown);
	return false;
}

bool store_table_overwrite(struct store *s, const struct ns_ident *ns,
			   const char *name, const char *uuid,
			   const char *metadata_location, const char *metadata,
			   const char *refs_metadata, const char *table_location,
			   const char *request_id, struct floe_error *err)
{
	bool updated;

	if (!table_insert(s, ST_TABLE_OVERWRITE, ns, name, uuid, metadata_location,
			  metadata, refs_metadata, table_location, request_id,
			  &updated, err))
		return false;
	if (!updated)
		return table_missing(s, ns, name, false, err);
	return true;
}

bool store_table_cas(struct store *s, long long id, long long expected_version,
		     const char *metadata_location, const char *metadata,
		     const char *refs_metadata, const char *table_location,
		     const char *previous_location, const char *request_id,
		     bool *won, struct floe_error *err)
{
	char idp[32], verp[32];
	PGresult *r;

	*won = false;
	snprintf(idp, sizeof(idp), "%lld", id);
	snprintf(verp, sizeof(verp), "%lld", expected_version);
	const char *params[8] = { idp, verp, metadata_location, metadata,
				  previous_location, request_id, refs_metadata,
				  table_location };
	r = store_exec(s, ST_TABLE_CAS, 8, params, err);
	if (r == NULL) {
		/* Run on its own, the statement may have committed before the
		 * connection broke: the client must not assume either outcome. */
		if (err != NULL && err->outcome == FO_UNKNOWN)
			floe_err(err, FE_COMMIT_STATE_UNKNOWN,
				 "the database connection broke during the commit; its outcome is unknown");
		return false;
	}
	*won = PQntuples(r) == 1;
	PQclear(r);
	return true;
}

bool store_reconnect(struct store *s, struct floe_error *err)
{
	if (s->conn != NULL)
		PQfinish(s->conn);
	s->conn = store_connect(s->conninfo, err);
	if (s->conn != NULL && !store_prepare_all(s->conn, err)) {
		PQfinish(s->conn);
		s->conn = NULL;
	}
	return s->conn != NULL;
}

bool store_commit_landed(struct store *s, const char *table_uuid, long long version,
			 const char *metadata_location, bool *landed,
			 struct floe_error *err)
{
	char verp[32];
	PGresult *r;

	*landed = false;
	snprintf(verp, sizeof(verp), "%lld", version);
	const char *params[3] = { table_uuid, verp, metadata_location };
	r = store_exec(s, ST_COMMIT_LANDED, 3, params, err);
	if (r == NULL)
		return false;
	*landed = PQntuples(r) > 0;
	PQclear(r);
	return true;
}

bool store_table_list(struct store *s, const struct ns_ident *ns,
		      const char *after, long limit, json_t **out, bool *more,
		      struct floe_error *err)
{
	char *levels = levels_param(ns, err);
	char nsid[32];
	char limit_p[32];
	bool found = false;
	PGresult *r;

	*out = NULL;
	*more = false;
	if (levels == NULL)
		return false;
	bool ok = ns_lookup_id(s, levels, nsid, sizeof(nsid), &found, err);
	free(levels);
	if (!ok)
		return false;
	if (!found)
		return ns_missing(ns, err);
	snprintf(limit_p, sizeof(limit_p), "%ld", limit + 1);
	const char *params[3] = { nsid, after, limit < 0 ? NULL : limit_p };
	r = store_exec(s, ST_TABLE_LIST, 3, params, err);
	if (r == NULL)
		return false;
	json_t *names = json_array();
	int rows = PQntuples(r);
	if (limit >= 0 && rows > limit) {
		*more = true;
		rows = (int)limit;
	}
	for (int i = 0; names != NULL && i < rows; i++) {
		if (json_array_append_new(names, json_string(PQgetvalue(r, i, 0))) != 0) {
			json_decref(names);
			names = NULL;
		}
	}
	PQclear(r);
	if (names == NULL)
		return floe_err(err, FE_INTERNAL, "out of memory");
	*out = names;
	return true;
}

bool store_table_drop(struct store *s, const struct ns_ident *ns,
		      const char *name, bool purge, struct table_row *row,
		      struct floe_error *err)
{
	char *levels = levels_param(ns, err);
	PGresult *r;
	bool ok;

	memset(row, 0, sizeof(*row));
	if (levels == NULL)
		return false;
	const char *params[3] = { levels, name, purge ? "true" : "false" };
	r = store_exec(s, ST_TABLE_DROP, 3, params, err);
	free(levels);
	if (r == NULL)
		return false;
	if (PQntuples(r) == 0) {
		PQclear(r);
		return table_missing(s, ns, name, false, err);
	}
	ok = row_from_result(r, 0, row, err);
	PQclear(r);
	return ok;
}

bool store_table_rename(struct store *s, const struct ns_ident *from_ns,
			const char *from, const struct ns_ident *to_ns,
			const char *to, struct floe_error *err)
{
	char *fl = levels_param(from_ns, err);
	char *tl = levels_param(to_ns, err);
	PGresult *r = NULL;
	bool ok = false;
	bool exists = false;

	if (fl == NULL || tl == NULL)
		goto done;
	if (!store_ns_exists(s, to_ns, &exists, err))
		goto done;
	if (!exists) {
		ns_missing(to_ns, err);
		goto done;
	}
	const char *params[4] = { fl, from, tl, to };
	r = store_exec(s, ST_TABLE_RENAME, 4, params, err);
	if (r == NULL) {
		if (strcmp(s->sqlstate, "23505") == 0) {
			char *shown = ident_ns_display(to_ns);
			floe_err(err, FE_ALREADY_EXISTS, "table already exists: %s.%s",
				 shown ? shown : "?", to);
			free(shown);
		} else if (strcmp(s->sqlstate, "23502") == 0) {
			ns_missing(to_ns, err); /* dropped meanwhile */
		}
		goto done;
	}
	if (PQntuples(r) == 0) {
		table_missing(s, from_ns, from, false, err);
		goto done;
	}
	ok = true;
done:
	PQclear(r);
	free(fl);
	free(tl);
	return ok;
}

bool store_metrics_insert(struct store *s, const struct ns_ident *ns,
			  const char *name, const char *report,
			  struct floe_error *err)
{
	char *levels = levels_param(ns, err);
	PGresult *r;

	if (levels == NULL)
		return false;
	const char *params[3] = { levels, name, report };
	r = store_exec(s, ST_METRICS_INSERT, 3, params, err);
	free(levels);
	if (r == NULL)
		return false;
	PQclear(r);
	return true;
}

/* --- transactions --- */

static bool exec_noparams(struct store *s, enum stmt_id id, struct floe_error *err)
{
	PGresult *r = store_exec(s, id, 0, NULL, err);
	if (r == NULL)
		return false;
	PQclear(r);
	return true;
}

bool store_begin(struct store *s, struct floe_error *err)
{
	return exec_noparams(s, ST_BEGIN, err);
}

bool store_commit(struct store *s, struct floe_error *err)
{
	if (exec_noparams(s, ST_COMMIT, err))
		return true;
	if (err != NULL && err->outcome == FO_UNKNOWN)
		floe_err(err, FE_COMMIT_STATE_UNKNOWN,
			 "the database connection broke during the commit; its outcome is unknown");
	return false;
}

void store_rollback(struct store *s)
{
	struct floe_error ignored;
	if (PQtransactionStatus(s->conn) != PQTRANS_IDLE)
		(void)exec_noparams(s, ST_ROLLBACK, &ignored);
}

/* --- idempotency keys --- */

bool store_idem_claim(struct store *s, const char *key, const char *route,
		      const char *owner, int lifetime_s, int lease_s, bool *claimed,
		      int *status, char **response, struct floe_error *err)
{
	char life[16], lease[16];
	PGresult *r;

	*claimed = false;
	*status = 0;
	*response = NULL;
	snprintf(life, sizeof(life), "%d", lifetime_s);
	snprintf(lease, sizeof(lease), "%d", lease_s);
	const char *params[5] = { key, route, life, owner, lease };
	r = store_exec(s, ST_IDEM_CLAIM, 5, params, err);
	if (r == NULL)
		return false;
	*claimed = PQntuples(r) == 1;
	PQclear(r);
	if (*claimed)
		return true;
	const char *gp[1] = { key };
	r = store_exec(s, ST_IDEM_GET, 1, gp, err);
	if (r == NULL)
		return false;
	if (PQntuples(r) == 1) {
		*status = (int)strtol(PQgetvalue(r, 0, 0), NULL, 10);
		if (strcmp(PQgetvalue(r, 0, 2), route) != 0) {
			PQclear(r);
			return floe_err(err, FE_UNPROCESSABLE,
					"Idempotency-Key %s was already used for another request",
					key);
		}
		if (!PQgetisnull(r, 0, 1)) {
			*response = strdup(PQgetvalue(r, 0, 1));
			if (*response == NULL) {
				PQclear(r);
				return floe_err(err, FE_INTERNAL, "out of memory");
			}
		}
	}
	PQclear(r);
	return true;
}

bool store_idem_finish(struct store *s, const char *key, const char *owner,
		       int status, const char *response, bool *recorded,
		       struct floe_error *err)
{
	char st[16];
	PGresult *r;

	*recorded = false;
	snprintf(st, sizeof(st), "%d", status);
	const char *params[4] = { key, st, response, owner };
	r = store_exec(s, ST_IDEM_FINISH, 4, params, err);
	if (r == NULL)
		return false;
	*recorded = PQntuples(r) == 1;
	PQclear(r);
	return true;
}

void store_idem_release(struct store *s, const char *key, const char *owner)
{
	struct floe_error ignored;
	const char *params[2] = { key, owner };
	PGresult *r = store_exec(s, ST_IDEM_RELEASE, 2, params, &ignored);
	PQclear(r);
}

/* Runs a statement whose answer is at most one text value: *out is a copy
 * of the first column of the first row (caller frees), or NULL when there
 * is no row. */
static bool exec_text(struct store *s, enum stmt_id id, int nparams,
		      const char *const *params, char **out, struct floe_error *err)
{
	PGresult *r = store_exec(s, id, nparams, params, err);

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

static bool location_clash(struct store *s, const char *location, const char *uuid,
			   bool with_purges, char **other, struct floe_error *err)
{
	const char *params[3] = { location, uuid, with_purges ? "true" : "false" };

	return exec_text(s, ST_TABLE_LOCATION_CLASH, 3, params, other, err);
}

bool store_table_location_clash(struct store *s, const char *location,
				const char *uuid, char **other,
				struct floe_error *err)
{
	return location_clash(s, location, uuid, true, other, err);
}

bool store_live_location_clash(struct store *s, const char *location, char **other,
			       struct floe_error *err)
{
	return location_clash(s, location, NULL, false, other, err);
}

bool store_location_lock(struct store *s, struct floe_error *err)
{
	PGresult *r = store_exec(s, ST_LOCATION_LOCK, 0, NULL, err);

	if (r == NULL)
		return false;
	PQclear(r);
	return true;
}

bool store_table_locations_after(struct store *s, long long after_id, int limit,
				 json_t **rows, struct floe_error *err)
{
	char idp[32], limp[16];
	const char *params[2] = { idp, limp };
	PGresult *r;

	*rows = NULL;
	snprintf(idp, sizeof(idp), "%lld", after_id);
	snprintf(limp, sizeof(limp), "%d", limit);
	r = store_exec(s, ST_TABLE_LOCATIONS_AFTER, 2, params, err);
	if (r == NULL)
		return false;
	json_t *out = json_array();
	for (int i = 0; out != NULL && i < PQntuples(r); i++) {
		json_t *row = json_pack("[Is]", (json_int_t)strtoll(PQgetvalue(r, i, 0), NULL, 10),
					PQgetvalue(r, i, 1));
		if (row == NULL || json_array_append_new(out, row) != 0) {
			json_decref(out);
			out = NULL;
		}
	}
	PQclear(r);
	if (out == NULL)
		return floe_err(err, FE_INTERNAL, "out of memory");
	*rows = out;
	return true;
}

/* --- purges --- */

void store_purge_row_clear(struct purge_row *row)
{
	free(row->location);
	memset(row, 0, sizeof(*row));
}

bool store_purge_claim(struct store *s, struct purge_row *row, bool *found,
		       struct floe_error *err)
{
	PGresult *r = store_exec(s, ST_PURGE_CLAIM, 0, NULL, err);

	memset(row, 0, sizeof(*row));
	*found = false;
	if (r == NULL)
		return false;
	if (PQntuples(r) == 1) {
		row->id = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
		row->location = strdup(PQgetvalue(r, 0, 1));
		snprintf(row->uuid, sizeof(row->uuid), "%s", PQgetvalue(r, 0, 2));
		row->attempts = (int)strtol(PQgetvalue(r, 0, 3), NULL, 10);
		if (row->location == NULL) {
			PQclear(r);
			return floe_err(err, FE_INTERNAL, "out of memory");
		}
		*found = true;
	}
	PQclear(r);
	return true;
}

bool store_purge_done(struct store *s, long long id, struct floe_error *err)
{
	char idp[32];
	const char *params[1] = { idp };

	snprintf(idp, sizeof(idp), "%lld", id);
	PGresult *r = store_exec(s, ST_PURGE_DONE, 1, params, err);
	if (r == NULL)
		return false;
	PQclear(r);
	return true;
}

bool store_purge_failed(struct store *s, long long id, const char *error,
			int max_attempts, int retry_in_s, bool permanent,
			int *attempts, bool *gave_up, struct floe_error *err)
{
	char idp[32], maxp[16], retp[16];
	const char *params[5] = { idp, error, maxp, retp, permanent ? "true" : "false" };

	snprintf(idp, sizeof(idp), "%lld", id);
	snprintf(maxp, sizeof(maxp), "%d", max_attempts);
	snprintf(retp, sizeof(retp), "%d", retry_in_s);
	PGresult *r = store_exec(s, ST_PURGE_FAILED, 5, params, err);
	*attempts = 0;
	*gave_up = false;
	if (r == NULL)
		return false;
	if (PQntuples(r) == 1) {
		*attempts = (int)strtol(PQgetvalue(r, 0, 0), NULL, 10);
		*gave_up = strcmp(PQgetvalue(r, 0, 1), "failed") == 0;
	}
	PQclear(r);
	return true;
}

bool store_purge_list(struct store *s, int limit, json_t **purges,
		      struct floe_error *err)
{
	char limp[16];
	const char *params[1] = { limp };

	*purges = NULL;
	snprintf(limp, sizeof(limp), "%d", limit);
	PGresult *r = store_exec(s, ST_PURGE_LIST, 1, params, err);
	if (r == NULL)
		return false;
	json_t *out = json_array();
	for (int i = 0; out != NULL && i < PQntuples(r); i++) {
		json_t *p = json_pack("{s:s, s:s, s:s, s:i, s:s}", "location",
				      PQgetvalue(r, i, 0), "table-uuid", PQgetvalue(r, i, 1),
				      "dropped-at", PQgetvalue(r, i, 2), "attempts",
				      (int)strtol(PQgetvalue(r, i, 3), NULL, 10), "state",
				      PQgetvalue(r, i, 5));
		if (p != NULL && !PQgetisnull(r, i, 4))
			json_object_set_new(p, "last-error", json_string(PQgetvalue(r, i, 4)));
		if (p == NULL || json_array_append_new(out, p) != 0) {
			json_decref(out);
			out = NULL;
		}
	}
	PQclear(r);
	if (out == NULL)
		return floe_err(err, FE_INTERNAL, "out of memory");
	*purges = out;
	return true;
}

/* --- janitor upkeep --- */

/* Runs a bounded DELETE with (age, limit) parameters; *deleted counts. */
static bool expire(struct store *s, enum stmt_id id, int age, int limit, long *deleted,
		   struct floe_error *err)
{
	char agep[16], limp[16];
	const char *params[2] = { agep, limp };

	*deleted = 0;
	snprintf(agep, sizeof(agep), "%d", age);
	snprintf(limp, sizeof(limp), "%d", limit);
	PGresult *r = store_exec(s, id, 2, params, err);
	if (r == NULL)
		return false;
	*deleted = strtol(PQcmdTuples(r), NULL, 10);
	PQclear(r);
	return true;
}

bool store_idem_expire(struct store *s, int older_than_s, int limit, long *deleted,
		       struct floe_error *err)
{
	return expire(s, ST_IDEM_EXPIRE, older_than_s, limit, deleted, err);
}

bool store_metrics_expire(struct store *s, int older_than_days, int limit, long *deleted,
			  struct floe_error *err)
{
	return expire(s, ST_METRICS_EXPIRE, older_than_days, limit, deleted, err);
}

bool store_run_expire_stale(struct store *s, int past_lease_s, int limit, long *expired,
			    struct floe_error *err)
{
	return expire(s, ST_RUN_EXPIRE_STALE, past_lease_s, limit, expired, err);
}

/* --- enforced publish --- */

bool store_ns_wap_required(struct store *s, const struct ns_ident *ns,
			   char **where, struct floe_error *err)
{
	char *levels = levels_param(ns, err);

	*where = NULL;
	if (levels == NULL)
		return false;
	const char *params[1] = { levels };
	bool ok = exec_text(s, ST_NS_WAP_REQUIRED, 1, params, where, err);
	free(levels);
	return ok;
}

/* --- JSON from rows --- */

static json_t *col_str(PGresult *r, int i, int c)
{
	return PQgetisnull(r, i, c) ? json_null() : json_string(PQgetvalue(r, i, c));
}

static json_t *col_int(PGresult *r, int i, int c)
{
	return PQgetisnull(r, i, c) ? json_null()
				    : json_integer(strtoll(PQgetvalue(r, i, c), NULL, 10));
}

/* A 0x1F-joined levels column as a JSON array (null when NULL). */
static json_t *col_levels(PGresult *r, int i, int c)
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

static json_t *col_json(PGresult *r, int i, int c)
{
	json_error_t jerr;
	if (PQgetisnull(r, i, c))
		return json_null();
	json_t *v = json_loads(PQgetvalue(r, i, c), 0, &jerr);
	return v ? v : json_null();
}

/* --- audit hooks --- */

static json_t *hook_from_row(PGresult *r, int i)
{
	json_t *scope = json_object();
	if (!PQgetisnull(r, i, 4))
		json_object_set_new(scope, "namespace", col_levels(r, i, 4));
	if (!PQgetisnull(r, i, 5))
		json_object_set_new(scope, "table", col_str(r, i, 5));
	return json_pack("{s:o, s:o, s:o, s:o, s:o, s:b, s:o}",
			 "id", col_str(r, i, 0), "name", col_str(r, i, 1),
			 "url", col_str(r, i, 2), "scope", scope,
			 "timeout-ms", col_int(r, i, 6),
			 "has-secret", strcmp(PQgetvalue(r, i, 3), "t") == 0,
			 "created-at", col_str(r, i, 7));
}

bool store_hook_insert(struct store *s, const char *id, const char *name,
		       const char *url, const char *secret,
		       const struct ns_ident *scope_ns, const char *scope_table,
		       long timeout_ms, json_t **hook, struct floe_error *err)
{
	char *levels = NULL;
	char tmo[32];
	PGresult *r;

	*hook = NULL;
	if (scope_ns != NULL && scope_ns->nlevels > 0) {
		levels = levels_param(scope_ns, err);
		if (levels == NULL)
			return false;
	}
	snprintf(tmo, sizeof(tmo), "%ld", timeout_ms);
	const char *params[7] = { id, name, url, secret, levels, scope_table, tmo };
	r = store_exec(s, ST_HOOK_INSERT, 7, params, err);
	free(levels);
	if (r == NULL)
		return false;
	PQclear(r);
	return store_hook_get(s, id, hook, err);
}

bool store_hook_list(struct store *s, json_t **hooks, struct floe_error *err)
{
	PGresult *r = store_exec(s, ST_HOOK_LIST, 0, NULL, err);

	*hooks = NULL;
	if (r == NULL)
		return false;
	json_t *arr = json_array();
	for (int i = 0; i < PQntuples(r); i++)
		json_array_append_new(arr, hook_from_row(r, i));
	PQclear(r);
	*hooks = arr;
	return true;
}

/* Runs a one-parameter statement and turns its first row (if any) into
 * *out with from_row; *out is NULL when there is no row. */
static bool get_one(struct store *s, enum stmt_id stmt, const char *key,
		    json_t *(*from_row)(PGresult *r, int i), json_t **out,
		    struct floe_error *err)
{
	const char *params[1] = { key };
	PGresult *r = store_exec(s, stmt, 1, params, err);

	*out = NULL;
	if (r == NULL)
		return false;
	if (PQntuples(r) == 1)
		*out = from_row(r, 0);
	PQclear(r);
	return true;
}

bool store_hook_get(struct store *s, const char *id, json_t **hook,
		    struct floe_error *err)
{
	return get_one(s, ST_HOOK_GET, id, hook_from_row, hook, err);
}

bool store_hook_delete(struct store *s, const char *id, bool *deleted,
		       struct floe_error *err)
{
	const char *params[1] = { id };
	PGresult *r = store_exec(s, ST_HOOK_DELETE, 1, params, err);

	*deleted = false;
	if (r == NULL)
		return false;
	*deleted = PQntuples(r) == 1;
	PQclear(r);
	return true;
}

bool store_hook_lock(struct store *s, struct floe_error *err)
{
	PGresult *r = store_exec(s, ST_HOOK_LOCK, 0, NULL, err);

	if (r == NULL)
		return false;
	PQclear(r);
	return true;
}

bool store_hook_sole_guard(struct store *s, const char *id, char **target,
			   struct floe_error *err)
{
	const char *params[1] = { id };

	return exec_text(s, ST_HOOK_SOLE_GUARD, 1, params, target, err);
}

bool store_hooks_in_scope(struct store *s, const struct ns_ident *ns,
			  const char *table, json_t **hooks,
			  struct floe_error *err)
{
	char *levels = levels_param(ns, err);
	PGresult *r;

	*hooks = NULL;
	if (levels == NULL)
		return false;
	const char *params[2] = { levels, table };
	r = store_exec(s, ST_HOOKS_IN_SCOPE, 2, params, err);
	free(levels);
	if (r == NULL)
		return false;
	json_t *arr = json_array();
	for (int i = 0; i < PQntuples(r); i++)
		json_array_append_new(arr, json_pack("{s:o, s:o, s:o, s:o, s:o}",
						     "id", col_str(r, i, 0),
						     "name", col_str(r, i, 1),
						     "url", col_str(r, i, 2),
						     "secret", col_str(r, i, 3),
						     "timeout-ms", col_int(r, i, 4)));
	PQclear(r);
	*hooks = arr;
	return true;
}

/* --- WAP runs --- */

static json_t *run_from_row(PGresult *r, int i)
{
	json_t *run = json_pack("{s:o, s:{s:o, s:o}, s:o, s:o, s:o, s:o, s:o, s:o}",
				"id", col_str(r, i, 0),
				"table", "namespace", col_levels(r, i, 2),
				"name", col_str(r, i, 3),
				"branch", col_str(r, i, 4), "state", col_str(r, i, 5),
				"base-snapshot-id", col_int(r, i, 6),
				"created-at", col_str(r, i, 10),
				"updated-at", col_str(r, i, 11),
				"audits", col_json(r, i, 9));
	if (run == NULL)
		return NULL;
	if (!PQgetisnull(r, i, 7))
		json_object_set_new(run, "audited-snapshot-id", col_int(r, i, 7));
	if (!PQgetisnull(r, i, 8))
		json_object_set_new(run, "published-snapshot-id", col_int(r, i, 8));
	/* Not part of the answer; used by callers and stripped before. */
	json_object_set_new(run, "_table-uuid", col_str(r, i, 1));
	json_object_set_new(run, "_seq", col_int(r, i, 12));
	return run;
}

bool store_run_insert(struct store *s, const char *id, const char *table_uuid,
		      const struct ns_ident *ns, const char *table,
		      const char *branch, long long base_snapshot,
		      struct floe_error *err)
{
	char *levels = levels_param(ns, err);
	char base[32];
	PGresult *r;

	if (levels == NULL)
		return false;
	snprintf(base, sizeof(base), "%lld", base_snapshot);
	const char *params[6] = { id, table_uuid, levels, table, branch,
				  base_snapshot >= 0 ? base : NULL };
	r = store_exec(s, ST_RUN_INSERT, 6, params, err);
	free(levels);
	if (r == NULL)
		return false;
	PQclear(r);
	return true;
}

bool store_run_get(struct store *s, const char *id, json_t **run,
		   struct floe_error *err)
{
	return get_one(s, ST_RUN_GET, id, run_from_row, run, err);
}

bool store_run_list(struct store *s, const char *table_uuid, long long before_seq,
		    long limit, json_t **runs, bool *more, struct floe_error *err)
{
	char before[32], lim[32];
	PGresult *r;

	*runs = NULL;
	*more = false;
	snprintf(before, sizeof(before), "%lld", before_seq);
	snprintf(lim, sizeof(lim), "%ld", limit + 1);
	const char *params[3] = { table_uuid, before_seq > 0 ? before : NULL,
				  limit < 0 ? NULL : lim };
	r = store_exec(s, ST_RUN_LIST, 3, params, err);
	if (r == NULL)
		return false;
	int rows = PQntuples(r);
	if (limit >= 0 && rows > limit) {
		*more = true;
		rows = (int)limit;
	}
	json_t *arr = json_array();
	for (int i = 0; i < rows; i++)
		json_array_append_new(arr, run_from_row(r, i));
	PQclear(r);
	*runs = arr;
	return true;
}

bool store_run_transition(struct store *s, const char *id, const char *from_states,
			  const char *to_state, long long audited,
			  long long published, const json_t *audits, long lease_ms,
			  const char *lease_owner, bool *moved, struct floe_error *err)
{
	char a[32], p[32], l[32];
	char *audits_text = NULL;
	PGresult *r;

	*moved = false;
	snprintf(a, sizeof(a), "%lld", audited);
	snprintf(p, sizeof(p), "%lld", published);
	if (audits != NULL) {
		audits_text = json_dumps(audits, JSON_COMPACT);
		if (audits_text == NULL)
			return floe_err(err, FE_INTERNAL, "out of memory");
	}
	snprintf(l, sizeof(l), "%ld", lease_ms > 0 ? lease_ms : 0);
	const char *params[8] = { id, to_state, from_states, audited >= 0 ? a : NULL,
				  published >= 0 ? p : NULL, audits_text, l, lease_owner };
	r = store_exec(s, ST_RUN_TRANSITION, 8, params, err);
	free(audits_text);
	if (r == NULL)
		return false;
	*moved = PQntuples(r) == 1;
	PQclear(r);
	return true;
}

/* --- audit events --- */

bool store_event_insert(struct store *s, const char *event, const char *request_id,
			const struct ns_ident *ns, const char *table,
			const char *run_id, const json_t *details,
			struct floe_error *err)
{
	char *levels = NULL;
	char *det = NULL;
	PGresult *r;

	if (ns != NULL && ns->nlevels > 0) {
		levels = levels_param(ns, err);
		if (levels == NULL)
			return false;
	}
	if (details != NULL) {
		det = json_dumps(details, JSON_COMPACT);
		if (det == NULL) {
			free(levels);
			return floe_err(err, FE_INTERNAL, "out of memory");
		}
	}
	const char *params[6] = { event, request_id, levels, table, run_id, det };
	r = store_exec(s, ST_EVENT_INSERT, 6, params, err);
	free(levels);
	free(det);
	/* A change whose event cannot be written does not happen: the
	 * caller rolls back, and the client may retry. */
	if (r == NULL) {
		log_error("store", "audit event %s cannot be written (%s)", event,
			  s->sqlstate[0] ? s->sqlstate : "no connection");
		return floe_err(err, FE_UNAVAILABLE,
				"the audit log cannot be written; nothing was changed, retry later");
	}
	PQclear(r);
	return true;
}

bool store_event_list(struct store *s, const char *after_xid, long long after_id,
		      const struct ns_ident *ns,
		      const char *table, const char *run_id, const char *since,
		      long limit, json_t **events, bool *more,
		      struct floe_error *err)
{
	char after[32], lim[32];
	char *levels = NULL;
	PGresult *r;

	*events = NULL;
	*more = false;
	if (ns != NULL && ns->nlevels > 0) {
		levels = levels_param(ns, err);
		if (levels == NULL)
			return false;
	}
	snprintf(after, sizeof(after), "%lld", after_id);
	snprintf(lim, sizeof(lim), "%ld", limit + 1);
	const char *params[7] = { after, levels, table, run_id, since,
				  limit < 0 ? NULL : lim, after_xid ? after_xid : "0" };
	r = store_exec(s, ST_EVENT_LIST, 7, params, err);
	free(levels);
	if (r == NULL) {
		/* 22007/22008: a since that is no timestamp. */
		if (strncmp(s->sqlstate, "22", 2) == 0)
			return floe_err(err, FE_BAD_REQUEST,
					"since must be an RFC 3339 timestamp");
		return false;
	}
	int rows = PQntuples(r);
	if (limit >= 0 && rows > limit) {
		*more = true;
		rows = (int)limit;
	}
	json_t *arr = json_array();
	for (int i = 0; i < rows; i++)
		json_array_append_new(arr, json_pack(
			"{s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o}",
			"id", col_int(r, i, 0), "at", col_str(r, i, 1),
			"event", col_str(r, i, 2), "principal", col_str(r, i, 3),
			"request-id", col_str(r, i, 4), "namespace", col_levels(r, i, 5),
			"table", col_str(r, i, 6), "run-id", col_str(r, i, 7),
			"details", col_json(r, i, 8), "_xid", col_str(r, i, 9)));
	PQclear(r);
	*events = arr;
	return true;
}
