/*
 * migrate.c - the schema and its owners: numbered migrations under an
 * advisory lock, the catalog database and the roles of the embedded
 * cluster, the runtime role's grants. Start-up only; not for requests.
 */
#include "store_admin.h"
#include "store_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "migrations.h"

static bool exec_simple(PGconn *conn, const char *sql, const char *what, struct floe_error *err)
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

static bool migration_known(int version)
{
	for (size_t i = 0; i < store_migrations_count; i++)
		if (store_migrations[i].version == version)
			return true;
	return false;
}

/* Refuses a database that a newer floe migrated: a migration recorded
 * there that this binary does not have means a schema this code was not
 * written for (a replica left on the old binary in a rolling upgrade).
 * r holds (version, name) rows in ascending version. */
static bool schema_not_newer(PGresult *r, struct floe_error *err)
{
	const struct store_migration *newest = &store_migrations[store_migrations_count - 1];

	for (int k = 0; k < PQntuples(r); k++) {
		int version = (int)strtol(PQgetvalue(r, k, 0), NULL, 10);
		if (migration_known(version))
			continue;
		const char *db_newest = PQgetvalue(r, PQntuples(r) - 1, 1);
		return floe_err(
			err, FE_INTERNAL,
			"the database's schema is newer than this floe: it has migration %s applied "
			"(its newest is %s), and this floe knows migrations up to %s only; a newer "
			"floe migrated it, so start that floe's version or a later one",
			PQgetvalue(r, k, 1), db_newest, newest->name);
	}
	return true;
}

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
	r = PQexec(conn, "SELECT version, name FROM floe_schema_version ORDER BY version");
	if (PQresultStatus(r) != PGRES_TUPLES_OK) {
		log_error("store", "reading the schema version: %s", PQresultErrorMessage(r));
		floe_err(err, FE_INTERNAL, "reading the schema version failed");
		goto unlock;
	}
	if (!schema_not_newer(r, err))
		goto unlock;

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
		(void)snprintf(version, sizeof(version), "%d", m->version);
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

bool store_ensure_database(const char *admin_conninfo, const char *dbname, struct floe_error *err)
{
	PGconn *conn = store_connect(admin_conninfo, err);
	const char *params[1] = { dbname };
	PGresult *r;
	bool exists;
	bool ok = false;

	if (conn == NULL)
		return false;
	r = PQexecParams(conn, "SELECT 1 FROM pg_database WHERE datname = $1", 1, NULL, params,
			 NULL, NULL, 0);
	if (PQresultStatus(r) != PGRES_TUPLES_OK) {
		log_error("store", "looking up database %s: %s", dbname, PQresultErrorMessage(r));
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
			floe_err(err, FE_INTERNAL, "refusing to create database %s", dbname);
			goto done;
		}
		log_info("store", "creating database %s", dbname);
		if (!exec_simple(conn, "CREATE DATABASE floe", "creating the database", err))
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
	(void)snprintf(role, sizeof(role), "%s", PQgetvalue(r, 0, 0));
	PQclear(r);
	r = NULL;
	owner = store_connect(owner_conninfo, err);
	if (owner == NULL)
		goto done;
	const char *params[1] = { role };
	r = PQexecParams(owner, "SELECT floe_grant_runtime($1::name)", 1, NULL, params, NULL, NULL,
			 0);
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
