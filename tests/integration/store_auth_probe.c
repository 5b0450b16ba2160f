/*
 * store_auth_probe - runs one store function of principals, roles and
 * grants (or catalog/authz.c over the real store) against a PostgreSQL
 * database and prints its answer as one JSON line, so that
 * test_auth_schema.py can check the SQL on a real database before any
 * route calls it.
 *
 *   store_auth_probe CONNINFO COMMAND ARGS...
 *
 * Namespaces are given dotted ("a.b"), role ids comma-separated, "-" is
 * NULL. A failure prints {"error": Iceberg type, "message"} and exits 0;
 * a bad command line exits 2.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "authz.h"
#include "principals.h"
#include "store.h"
#include "store_admin.h"

static struct floe_error err;

static const char *arg(char **argv, int i)
{
	return strcmp(argv[i], "-") == 0 ? NULL : argv[i];
}

/* A dotted namespace into ns; NULL for "-". */
static const struct ns_ident *ns_arg(const char *dotted, struct ns_ident *ns)
{
	memset(ns, 0, sizeof(*ns));
	if (dotted == NULL)
		return NULL;
	for (const char *p = dotted; p != NULL && ns->nlevels < IDENT_MAX_LEVELS;) {
		const char *dot = strchr(p, '.');
		ns->levels[ns->nlevels++] = dot ? strndup(p, (size_t)(dot - p)) : strdup(p);
		p = dot ? dot + 1 : NULL;
	}
	return ns;
}

static size_t ids_arg(const char *list, long long *ids, size_t cap)
{
	size_t n = 0;

	for (const char *p = list; p != NULL && *p != '\0' && n < cap;) {
		char *end = NULL;
		ids[n++] = strtoll(p, &end, 10);
		p = *end == ',' ? end + 1 : NULL;
	}
	return n;
}

static enum grant_on on_arg(const char *kind)
{
	return strcmp(kind, "table") == 0       ? GRANT_ON_TABLE
	       : strcmp(kind, "namespace") == 0 ? GRANT_ON_NAMESPACE
						: GRANT_ON_CATALOG;
}

static void print(json_t *j)
{
	char *text = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
	puts(text ? text : "null");
	free(text);
	json_decref(j);
}

static json_t *names_json(char **names, size_t n)
{
	json_t *a = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(a, json_string(names[i]));
	return a;
}

static json_t *principal_json(const struct principal_row *r)
{
	return json_pack("{s:I, s:s, s:s, s:s?, s:s?, s:s, s:b, s:s}", "id", (json_int_t)r->id,
			 "name", r->name, "kind", r->kind, "client_id", r->client_id, "secret_hash",
			 r->secret_hash, "source", r->source, "disabled", r->disabled, "created_at",
			 r->created_at);
}

static json_t *ns_json(const struct ns_ident *ns)
{
	char *d = ident_ns_display(ns);
	json_t *j = json_string(d ? d : "");
	free(d);
	return j;
}

/* Runs argv[2..] on s; false with err set when the store failed. */
static bool run(struct store *s, int argc, char **argv, json_t **out)
{
	const char *cmd = argv[2];
	struct ns_ident ns;
	long long ids[16], id = 0;
	bool found = false, more = false;
	size_t n = 0;
	char **names = NULL;

#define NEED(k)                     \
	do {                        \
		if (argc < 3 + (k)) \
			exit(2);    \
	} while (0)
	if (strcmp(cmd, "principal-insert") == 0) {
		NEED(5);
		if (!store_principal_insert(s, argv[3], argv[4], arg(argv, 5), arg(argv, 6),
					    argv[7], &id, &err))
			return false;
		*out = json_pack("{s:I}", "id", (json_int_t)id);
	} else if (strcmp(cmd, "principal-get") == 0 || strcmp(cmd, "principal-by-client") == 0) {
		struct principal_row row;
		NEED(1);
		bool ok = cmd[10] == 'g'
				  ? store_principal_by_name(s, argv[3], &row, &found, &err)
				  : store_principal_by_client(s, argv[3], &row, &found, &err);
		if (!ok)
			return false;
		*out = found ? principal_json(&row) : json_null();
		store_principal_row_clear(&row);
	} else if (strcmp(cmd, "principal-list") == 0) {
		struct principal_row *rows = NULL;
		NEED(2);
		if (!store_principal_list(s, arg(argv, 3), strtol(argv[4], NULL, 10), &rows, &n,
					  &more, &err))
			return false;
		json_t *a = json_array();
		for (size_t i = 0; i < n; i++)
			json_array_append_new(a, json_string(rows[i].name));
		*out = json_pack("{s:o, s:b}", "names", a, "more", more);
		store_principal_rows_free(rows, n);
	} else if (strcmp(cmd, "principal-disable") == 0) {
		NEED(2);
		if (!store_principal_set_disabled(s, argv[3], strcmp(argv[4], "true") == 0, &found,
						  &err))
			return false;
		*out = json_pack("{s:b}", "found", found);
	} else if (strcmp(cmd, "principal-secret") == 0) {
		NEED(2);
		if (!store_principal_set_secret(s, argv[3], arg(argv, 4), &found, &err))
			return false;
		*out = json_pack("{s:b}", "found", found);
	} else if (strcmp(cmd, "principal-count") == 0) {
		if (!store_principal_count(s, &id, &err))
			return false;
		*out = json_pack("{s:I}", "count", (json_int_t)id);
	} else if (strcmp(cmd, "principal-roles") == 0) {
		long long *rids = NULL;
		NEED(1);
		if (!store_principal_roles(s, strtoll(argv[3], NULL, 10), &rids, &names, &n, &err))
			return false;
		json_t *a = json_array();
		for (size_t i = 0; i < n; i++)
			json_array_append_new(a, json_integer(rids[i]));
		*out = json_pack("{s:o, s:o}", "ids", a, "names", names_json(names, n));
		free(rids);
		store_names_free(names, n);
	} else if (strcmp(cmd, "role-insert") == 0) {
		NEED(1);
		if (!store_role_insert(s, argv[3], &id, &err))
			return false;
		*out = json_pack("{s:I}", "id", (json_int_t)id);
	} else if (strcmp(cmd, "role-list") == 0) {
		struct role_row *rows = NULL;
		NEED(2);
		if (!store_role_list(s, arg(argv, 3), strtol(argv[4], NULL, 10), &rows, &n, &more,
				     &err))
			return false;
		json_t *a = json_array();
		for (size_t i = 0; i < n; i++)
			json_array_append_new(a, json_string(rows[i].name));
		*out = json_pack("{s:o, s:b}", "names", a, "more", more);
		store_role_rows_free(rows, n);
	} else if (strcmp(cmd, "role-delete") == 0) {
		NEED(1);
		if (!store_role_delete(s, argv[3], &found, &err))
			return false;
		*out = json_pack("{s:b}", "found", found);
	} else if (strcmp(cmd, "member-add") == 0 || strcmp(cmd, "member-remove") == 0) {
		NEED(2);
		bool ok = cmd[7] == 'a'
				  ? store_role_member_add(s, argv[3], argv[4], &found, &err)
				  : store_role_member_remove(s, argv[3], argv[4], &found, &err);
		if (!ok)
			return false;
		*out = json_pack("{s:b}", "found", found);
	} else if (strcmp(cmd, "grant-insert") == 0 || strcmp(cmd, "grant-delete") == 0) {
		NEED(5);
		const struct ns_ident *o = ns_arg(arg(argv, 6), &ns);
		bool ok = cmd[6] == 'i' ? store_grant_insert(s, argv[3], argv[4], on_arg(argv[5]),
							     o, arg(argv, 7), &found, &err)
					: store_grant_delete(s, argv[3], argv[4], on_arg(argv[5]),
							     o, arg(argv, 7), &found, &err);
		ident_ns_clear(&ns);
		if (!ok)
			return false;
		*out = json_pack("{s:b}", cmd[6] == 'i' ? "inserted" : "found", found);
	} else if (strcmp(cmd, "grant-list") == 0) {
		struct grant_row *rows = NULL;
		static const char *const kinds[] = { "catalog", "namespace", "table" };
		NEED(3);
		if (!store_grant_list(s, argv[3], strtoll(argv[4], NULL, 10),
				      strtol(argv[5], NULL, 10), &rows, &n, &more, &err))
			return false;
		json_t *a = json_array();
		for (size_t i = 0; i < n; i++)
			json_array_append_new(a,
					      json_pack("{s:I, s:s, s:s, s:o, s:s?}", "id",
							(json_int_t)rows[i].id, "privilege",
							rows[i].privilege, "on", kinds[rows[i].on],
							"namespace", ns_json(&rows[i].ns), "table",
							rows[i].table));
		*out = json_pack("{s:o, s:b}", "grants", a, "more", more);
		store_grant_rows_free(rows, n);
	} else if (strcmp(cmd, "privileges") == 0) {
		NEED(3);
		n = ids_arg(argv[3], ids, 16);
		const struct ns_ident *o = ns_arg(arg(argv, 4), &ns);
		size_t np = 0;
		bool ok = store_privileges_on(s, ids, n, o, arg(argv, 5), &names, &np, &err);
		ident_ns_clear(&ns);
		if (!ok)
			return false;
		*out = names_json(names, np);
		store_names_free(names, np);
	} else if (strcmp(cmd, "ns-visible") == 0) {
		NEED(2);
		n = ids_arg(argv[3], ids, 16);
		bool ok = store_ns_visible(s, ids, n, ns_arg(argv[4], &ns), &found, &err);
		ident_ns_clear(&ns);
		if (!ok)
			return false;
		*out = json_boolean(found);
	} else if (strcmp(cmd, "ns-list-visible") == 0) {
		struct ns_ident *rows = NULL;
		struct ns_ident after;
		NEED(4);
		n = ids_arg(argv[3], ids, 16);
		const struct ns_ident *parent = ns_arg(arg(argv, 4), &ns);
		const struct ns_ident *a = ns_arg(arg(argv, 5), &after);
		size_t count = 0;
		bool ok = store_ns_list_visible(s, ids, n, parent, a, strtol(argv[6], NULL, 10),
						&rows, &count, &more, &err);
		ident_ns_clear(&ns);
		ident_ns_clear(&after);
		if (!ok)
			return false;
		json_t *arr = json_array();
		for (size_t i = 0; i < count; i++)
			json_array_append_new(arr, ns_json(&rows[i]));
		*out = json_pack("{s:o, s:b}", "names", arr, "more", more);
		store_ns_rows_free(rows, count);
	} else if (strcmp(cmd, "table-list-visible") == 0) {
		NEED(4);
		n = ids_arg(argv[3], ids, 16);
		size_t count = 0;
		bool ok = store_table_list_visible(s, ids, n, ns_arg(argv[4], &ns), arg(argv, 5),
						   strtol(argv[6], NULL, 10), &names, &count, &more,
						   &err);
		ident_ns_clear(&ns);
		if (!ok)
			return false;
		*out = json_pack("{s:o, s:b}", "names", names_json(names, count), "more", more);
		store_names_free(names, count);
	} else if (strcmp(cmd, "check") == 0) {
		/* check ROLE_IDS PRINCIPAL PRIVILEGE KIND NS TABLE */
		enum privilege priv;
		NEED(6);
		n = ids_arg(argv[3], ids, 16);
		struct principal p = { 1, argv[4], NULL, ids, n, NULL };
		if (!privilege_from_name(argv[5], &priv))
			exit(2);
		struct authz_object obj = { .kind = strcmp(argv[6], "table") == 0 ? AUTHZ_TABLE
						    : strcmp(argv[6], "namespace") == 0
							    ? AUTHZ_NAMESPACE
							    : AUTHZ_CATALOG,
					    .ns = ns_arg(arg(argv, 7), &ns),
					    .table = arg(argv, 8) };
		bool ok = authz_check(s, &p, priv, &obj, &err);
		json_t *effective = NULL;
		bool listed = authz_privileges(s, &p, &obj, &effective, &err);
		ident_ns_clear(&ns);
		if (!listed)
			return false;
		*out = json_pack("{s:b, s:s, s:o}", "allowed", ok, "message", ok ? "" : err.message,
				 "effective", effective);
	} else if (strcmp(cmd, "check-listing") == 0) {
		/* check-listing ROLE_IDS PRINCIPAL NS */
		NEED(3);
		n = ids_arg(argv[3], ids, 16);
		struct principal p = { 1, argv[4], NULL, ids, n, NULL };
		bool ok = authz_check_listing(s, &p, ns_arg(arg(argv, 5), &ns), &err);
		ident_ns_clear(&ns);
		if (!ok && err.kind != FE_FORBIDDEN)
			return false;
		*out = json_pack("{s:b, s:s}", "allowed", ok, "message", ok ? "" : err.message);
	} else if (strcmp(cmd, "bootstrap") == 0) {
		NEED(3);
		if (!principals_bootstrap(s, argv[3], argv[4], argv[5], &found, &err))
			return false;
		*out = json_pack("{s:b}", "created", found);
	} else {
		exit(2);
	}
	return true;
}

int main(int argc, char **argv)
{
	struct store_pool *pool;
	struct store *s;
	json_t *out = NULL;

	if (argc < 3)
		return 2;
	pool = store_pool_new(argv[1], 1, "probe");
	s = pool ? store_pool_acquire(pool, &err) : NULL;
	if (s == NULL) {
		fprintf(stderr, "no connection: %s\n", err.message);
		return 1;
	}
	if (run(s, argc, argv, &out))
		print(out);
	else
		print(json_pack("{s:s, s:s}", "error", floe_errkind_type(err.kind), "message",
				err.message));
	store_pool_release(pool, s);
	store_pool_free(&pool);
	return 0;
}
