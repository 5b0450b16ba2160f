/*
 * release.c - write-audit-publish over many tables (release.h). A
 * publish goes as wap.c's does, over every member at once: check each
 * member and fix its audited snapshot, run the audit round of
 * auditround.h (the release's lease, every hook in scope of any member
 * called once with all of them, the database released meanwhile), then
 * either one transaction moves every member's main (each guarded by its
 * main at audit time) or nothing moves.
 *
 * One file past 1,000 lines on purpose: staging, adding, publishing and
 * abandoning share the member set and its per-member checks, all static
 * here; split, they would become an internal header of half-built state
 * that only this file may touch.
 */
#include "release.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "access.h"
#include "auditlog.h"
#include "auditround.h"
#include "duties.h"
#include "emptysnap.h"
#include "hookspec.h"
#include "idem.h"
#include "log.h"
#include "ports.h"
#include "refs.h"
#include "rowjson.h"
#include "system.h"
#include "tablemeta.h"
#include "timefmt.h"
#include "uuid.h"
#include "wapint.h"
#include "wording.h"

#define RELEASES_PAGE_MAX 1000
#define RELEASE_PUBLISHABLE "staged,rejected,audit-failed,auditing-stale"

/* One member table while a release is staged, published or abandoned. */
struct member {
	struct table_ident id;
	json_t *m;       /* its metadata */
	char *location;  /* of m */
	json_t *run;     /* its run as the API shows it (members of a release) */
	char run_id[40]; /* as a run_row holds it */
	char uuid[40];
	long long main_at; /* -1: main has no snapshot */
	long long audited;
	char *manifest_list; /* staging an empty table: its empty snapshot's */
	struct hook_target *hooks;
	size_t nhooks;
};

static void members_free(struct member *ms, size_t n)
{
	for (size_t i = 0; ms != NULL && i < n; i++) {
		table_ident_clear(&ms[i].id);
		json_decref(ms[i].m);
		free(ms[i].location);
		json_decref(ms[i].run);
		free(ms[i].manifest_list);
		store_hook_targets_free(ms[i].hooks, ms[i].nhooks);
	}
	free(ms);
}

static bool no_such_release(const char *id, struct floe_error *err)
{
	return floe_err(err, FE_NO_SUCH_RUN, "Release does not exist: %.64s", id);
}

static json_t *table_json(const struct table_ident *t)
{
	return json_pack("{s:o, s:s}", "namespace", ident_ns_to_json(&t->ns), "name", t->name);
}

static bool same_table(const struct table_ident *a, const struct ns_ident *ns, const char *name)
{
	if (strcmp(a->name, name) != 0 || a->ns.nlevels != ns->nlevels)
		return false;
	for (size_t l = 0; l < ns->nlevels; l++) {
		if (strcmp(a->ns.levels[l], ns->levels[l]) != 0)
			return false;
	}
	return true;
}

/* Appends ns.name to ms unless it is there already. */
static bool member_add(struct member *ms, size_t *n, const struct ns_ident *ns, const char *name,
		       struct floe_error *err)
{
	for (size_t i = 0; i < *n; i++) {
		if (same_table(&ms[i].id, ns, name))
			return true;
	}
	if (*n >= RELEASE_TABLES_MAX)
		return floe_err(err, FE_BAD_REQUEST, "a release holds at most %d tables",
				RELEASE_TABLES_MAX);
	struct member *m = &ms[*n];
	memset(m, 0, sizeof(*m));
	m->id.name = strdup(name);
	if (m->id.name == NULL || !ident_ns_copy(&m->id.ns, ns)) {
		table_ident_clear(&m->id);
		return floe_err(err, FE_INTERNAL, "out of memory");
	}
	m->main_at = -1;
	(*n)++;
	return true;
}

/* Adds every table of the namespace subtree ns. */
static bool members_below(struct store *s, const struct ns_ident *ns, struct member *ms, size_t *n,
			  struct floe_error *err)
{
	char **names = NULL;
	size_t count = 0;
	bool more = false;
	bool ok = store_tables_below(s, ns, RELEASE_TABLES_MAX, &names, &count, &more, err);

	if (ok && more)
		ok = floe_err(err, FE_BAD_REQUEST, "a release holds at most %d tables",
			      RELEASE_TABLES_MAX);
	for (size_t i = 0; ok && i < count; i++) {
		char *sep = strchr(names[i], '\x1e');
		struct ns_ident at = { 0 };
		if (sep == NULL) {
			ok = floe_err(err, FE_INTERNAL, "a table name came back unreadable");
			break;
		}
		ok = ident_ns_split(names[i], (size_t)(sep - names[i]), &at, err) &&
		     member_add(ms, n, &at, sep + 1, err);
		ident_ns_clear(&at);
	}
	store_names_free(names, count);
	return ok;
}

/* The tables body names ("tables" and "namespaces"), at least one. */
static bool members_parse(struct store *s, const json_t *body, struct member **out, size_t *n,
			  struct floe_error *err)
{
	const json_t *tables = json_object_get(body, "tables");
	const json_t *spaces = json_object_get(body, "namespaces");
	size_t i;
	json_t *v;

	*out = NULL;
	*n = 0;
	if (tables != NULL && !json_is_null(tables) && !json_is_array(tables))
		return floe_err(err, FE_BAD_REQUEST,
				"field 'tables' must be an array of table identifiers");
	if (spaces != NULL && !json_is_null(spaces) && !json_is_array(spaces))
		return floe_err(err, FE_BAD_REQUEST,
				"field 'namespaces' must be an array of namespaces");
	if (json_array_size(tables) > RELEASE_TABLES_MAX ||
	    json_array_size(spaces) > RELEASE_TABLES_MAX)
		return floe_err(err, FE_BAD_REQUEST, "a release holds at most %d tables",
				RELEASE_TABLES_MAX);
	struct member *ms = calloc(RELEASE_TABLES_MAX, sizeof(*ms));
	if (ms == NULL)
		return floe_err(err, FE_INTERNAL, "out of memory");
	bool ok = true;
	json_array_foreach(tables, i, v) {
		struct table_ident t = { 0 };
		ok = table_ident_from_json(v, "tables", &t, err) &&
		     member_add(ms, n, &t.ns, t.name, err);
		table_ident_clear(&t);
		if (!ok)
			break;
	}
	json_array_foreach(spaces, i, v) {
		if (!ok)
			break;
		struct ns_ident ns = { 0 };
		size_t before = *n;
		ok = ident_ns_from_json(v, "namespaces", &ns, err) &&
		     members_below(s, &ns, ms, n, err);
		/* A namespace with no table may be a typo: it must exist. */
		bool exists = true;
		if (ok && *n == before)
			ok = store_ns_exists(s, &ns, &exists, err) &&
			     (exists || wording_no_such_namespace(&ns, err));
		ident_ns_clear(&ns);
	}
	if (ok && *n == 0)
		ok = floe_err(err, FE_BAD_REQUEST,
			      "a release needs at least one table ('tables' or 'namespaces')");
	if (!ok) {
		members_free(ms, *n);
		*n = 0;
		return false;
	}
	*out = ms;
	return true;
}

/* --- reading --- */

static json_t *release_row_json(const void *row)
{
	const struct release_row *r = row;
	json_t *out = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:o}", "id", r->id, "branch",
				r->branch, "state", r->state, "created-at", r->created_at,
				"updated-at", r->updated_at, "staged-by",
				r->staged_by ? r->staged_by : "anonymous", "audits",
				rowjson_text(r->audits));

	if (out != NULL && r->published_by != NULL)
		json_object_set_new(out, "published-by", json_string(r->published_by));
	if (out != NULL && r->abandoned_by != NULL)
		json_object_set_new(out, "abandoned-by", json_string(r->abandoned_by));
	return out;
}

/* The release id with its members (their runs) in *out, or NULL with
 * FE_NO_SUCH_RUN. members/nmembers, when not NULL, receive the runs as
 * struct member (identifier, run JSON, run id, table uuid). */
static json_t *load_release(struct store *s, const char *id, struct member **members,
			    size_t *nmembers, struct floe_error *err)
{
	struct release_row row;
	struct run_row *runs = NULL;
	size_t count = 0;
	bool found = false, more = false;
	json_t *out = NULL;

	if (members != NULL) {
		*members = NULL;
		*nmembers = 0;
	}
	if (!hook_id_valid(id))
		return no_such_release(id, err), NULL;
	if (!store_release_get(s, id, &row, &found, err))
		return NULL;
	if (!found)
		return no_such_release(id, err), NULL;
	out = release_row_json(&row);
	store_release_row_clear(&row);
	if (out == NULL)
		return floe_err(err, FE_INTERNAL, "out of memory"), NULL;
	if (!store_run_members(s, id, RELEASE_TABLES_MAX, &runs, &count, &more, err)) {
		json_decref(out);
		return NULL;
	}
	json_t *tables = rowjson_array(runs, count, sizeof(*runs), wap_run_json);
	struct member *ms = members != NULL ? calloc(count + 1, sizeof(*ms)) : NULL;
	bool ok = tables != NULL && (members == NULL || ms != NULL);
	for (size_t i = 0; ok && members != NULL && i < count; i++) {
		struct member *m = &ms[i];
		m->main_at = -1;
		m->id.name = strdup(runs[i].table_name);
		ok = m->id.name != NULL && ident_ns_copy(&m->id.ns, &runs[i].ns);
		(void)snprintf(m->run_id, sizeof(m->run_id), "%s", runs[i].id);
		(void)snprintf(m->uuid, sizeof(m->uuid), "%s", runs[i].table_uuid);
		m->run = json_incref(json_array_get(tables, i));
	}
	store_run_rows_free(runs, count);
	if (!ok) {
		members_free(ms, count);
		json_decref(tables);
		json_decref(out);
		return floe_err(err, FE_INTERNAL, "out of memory"), NULL;
	}
	json_object_set_new(out, "tables", tables);
	if (members != NULL) {
		*members = ms;
		*nmembers = count;
	}
	return out;
}

/* rel (borrowed, as it was before its audit) and its n members as the
 * publish of each member's audited snapshot with audits (borrowed) made
 * them: the answer of a publish that landed when the release cannot be
 * read back. New reference; NULL when out of memory. */
static json_t *published_release(const json_t *rel, const struct member *ms, size_t n,
				 const json_t *audits, const struct table_env *env)
{
	char now[40];
	const char *by = env->principal != NULL ? env->principal : "anonymous";
	json_t *out = json_deep_copy(rel);
	json_t *tables = json_array();
	bool ok = out != NULL && tables != NULL;

	(void)timefmt_rfc3339_now(now, sizeof(now));
	for (size_t i = 0; ok && i < n; i++) {
		json_t *run = json_deep_copy(ms[i].run);
		ok = run != NULL &&
		     json_object_set_new(run, "state", json_string("published")) == 0 &&
		     json_object_set_new(run, "audited-snapshot-id", json_integer(ms[i].audited)) ==
			     0 &&
		     json_object_set_new(run, "published-snapshot-id",
					 json_integer(ms[i].audited)) == 0 &&
		     json_object_set_new(run, "published-by", json_string(by)) == 0 &&
		     json_object_set_new(run, "updated-at", json_string(now)) == 0 &&
		     json_array_append_new(tables, run) == 0;
	}
	ok = ok && json_object_set_new(out, "state", json_string("published")) == 0 &&
	     json_object_set_new(out, "published-by", json_string(by)) == 0 &&
	     json_object_set_new(out, "updated-at", json_string(now)) == 0 &&
	     json_object_set_new(out, "audits",
				 audits != NULL ? json_deep_copy(audits) : json_array()) == 0 &&
	     json_object_set(out, "tables", tables) == 0;
	json_decref(tables);
	if (!ok) {
		json_decref(out);
		return NULL;
	}
	return out;
}

/* FE_FORBIDDEN unless env's principal holds what the route needs on
 * member m (env->member_need, from the route table). */
static bool member_allowed(struct store *s, const struct table_env *env, const struct member *m,
			   struct floe_error *err)
{
	struct authz_object obj = { .kind = AUTHZ_TABLE, .ns = &m->id.ns, .table = m->id.name };

	if (env->acting != NULL && env->member_need == 0)
		return floe_err(err, FE_FORBIDDEN,
				"No privilege is stated for a release's members");
	return access_check_all(s, env->acting, env->member_need, &obj, err);
}

/* member_allowed for every member. */
static bool members_allowed(struct store *s, const struct table_env *env, const struct member *ms,
			    size_t n, struct floe_error *err)
{
	for (size_t i = 0; i < n; i++) {
		if (!member_allowed(s, env, &ms[i], err))
			return false;
	}
	return true;
}

json_t *release_get(struct store *s, const struct table_env *env, const char *id,
		    struct floe_error *err)
{
	struct member *ms = NULL;
	size_t n = 0;
	json_t *out = load_release(s, id, &ms, &n, err);

	if (out != NULL && !members_allowed(s, env, ms, n, err)) {
		json_decref(out);
		out = NULL;
	}
	members_free(ms, n);
	return out;
}

json_t *release_list(struct store *s, const char *token, long page_size, struct floe_error *err)
{
	struct release_row *rows = NULL;
	size_t count = 0;
	bool more = false;
	long long before = 0;

	if (token != NULL && *token != '\0') {
		char *end = NULL;
		before = strtoll(token, &end, 10);
		if (*end != '\0' || before <= 0)
			return floe_err(err, FE_BAD_REQUEST,
					"pageToken is not a token this server issued"),
			       NULL;
	}
	long limit = page_size > RELEASES_PAGE_MAX ? RELEASES_PAGE_MAX : page_size;
	if (!store_release_list(s, before, limit, &rows, &count, &more, err))
		return NULL;
	json_t *list = rowjson_array(rows, count, sizeof(*rows), release_row_json);
	json_t *next = json_null();
	if (list != NULL && more && count > 0) {
		char t[32];
		(void)snprintf(t, sizeof(t), "%lld", rows[count - 1].seq);
		next = json_string(t);
	}
	store_release_rows_free(rows, count);
	if (list == NULL)
		return floe_err(err, FE_INTERNAL, "out of memory"), NULL;
	return json_pack("{s:o, s:o}", "releases", list, "next-page-token", next);
}

/* --- staging --- */

struct stage_record {
	const struct table_env *env;
	const char *release_id;
	const char *branch;
	struct member *ms;
	size_t n;
	bool creating;
};

/* In the change's transaction: release id as it now stands is the route's
 * answer (status) under the request's Idempotency-Key. */
static bool record_release(struct store *s, const struct table_env *env, int status, const char *id,
			   struct floe_error *err)
{
	if (env->idem_key == NULL)
		return true;
	json_t *release = load_release(s, id, NULL, NULL, err);
	bool ok = release != NULL && idem_record(s, env, status, release, err);
	json_decref(release);
	return ok;
}

/* In the transaction that makes every member's branch: the release (when
 * new), each member's run and their events. */
static bool stage_also(struct store *s, void *ctx, const json_t *result, struct floe_error *err)
{
	struct stage_record *r = ctx;
	struct store_actor who = audit_actor(r->env);
	json_t *tables = json_array();
	bool ok = tables != NULL;

	(void)result;
	if (ok && r->creating)
		ok = store_release_insert(s, r->release_id, r->branch, &who, err);
	for (size_t i = 0; ok && i < r->n; i++) {
		struct member *m = &r->ms[i];
		ok = store_run_insert(s, m->run_id, m->uuid, &m->id.ns, m->id.name, r->branch,
				      m->main_at, false, r->release_id, &who, err);
		json_t *details = json_pack("{s:s, s:b, s:o, s:s}", "branch", r->branch, "adopted",
					    false, "base-snapshot-id",
					    m->main_at >= 0 ? json_integer(m->main_at)
							    : json_null(),
					    "release-id", r->release_id);
		ok = ok && store_event_insert(s, "wap.staged", &who, &m->id.ns, m->id.name,
					      m->run_id, details, err);
		json_decref(details);
		json_array_append_new(tables, table_json(&m->id));
	}
	if (ok) {
		json_t *details = json_pack("{s:s, s:O}", "branch", r->branch, "tables", tables);
		ok = store_event_insert(s, r->creating ? "release.staged" : "release.tables-added",
					&who, NULL, NULL, r->release_id, details, err);
		json_decref(details);
	}
	json_decref(tables);
	return ok && record_release(s, r->env, r->creating ? 201 : 200, r->release_id, err);
}

/* The change that makes branch on member m at its main snapshot (an
 * empty table: at a new empty snapshot, as wap_stage does). */
static json_t *stage_change(struct member *m, const char *branch, struct floe_error *err)
{
	struct timespec ts;
	long long at = m->main_at;
	json_t *main_req = json_pack("{s:s, s:s}", "type", "assert-ref-snapshot-id", "ref", "main");
	json_t *reqs = json_pack("[{s:s, s:s}, {s:s, s:s}, o]", "type", "assert-table-uuid", "uuid",
				 m->uuid, "type", "assert-ref-snapshot-id", "ref", branch,
				 main_req);
	json_t *ups = json_array();

	if (m->main_at >= 0)
		json_object_set_new(main_req, "snapshot-id", json_integer(m->main_at));
	if (m->main_at < 0) {
		clock_gettime(CLOCK_REALTIME, &ts);
		json_t *snap = emptysnap_create(m->m,
						(long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000,
						&m->manifest_list, err);
		if (snap == NULL) {
			json_decref(reqs);
			json_decref(ups);
			return NULL;
		}
		at = json_integer_value(json_object_get(snap, "snapshot-id"));
		json_array_append_new(ups, json_pack("{s:s, s:o}", "action", "add-snapshot",
						     "snapshot", snap));
	}
	json_array_append_new(ups, json_pack("{s:s, s:s, s:s, s:I}", "action", "set-snapshot-ref",
					     "ref-name", branch, "type", "branch", "snapshot-id",
					     (json_int_t)at));
	return json_pack("{s:o, s:o, s:o}", "identifier", table_json(&m->id), "requirements", reqs,
			 "updates", ups);
}

/* Stages branch on each of ms in one transaction (with the release when
 * creating). */
static bool stage_members(struct store *s, const struct table_env *env, const char *release_id,
			  const char *branch, struct member *ms, size_t n, bool creating,
			  struct floe_error *err)
{
	json_t *changes = json_array();
	bool ok = changes != NULL;
	size_t failed = SIZE_MAX;

	if (!ok)
		return floe_err(err, FE_INTERNAL, "out of memory");
	for (size_t i = 0; ok && i < n; i++) {
		struct member *m = &ms[i];
		ok = member_allowed(s, env, m, err);
		if (ok) {
			m->m = table_load_metadata(s, &m->id.ns, m->id.name, NULL, err);
			ok = m->m != NULL;
		}
		if (!ok)
			break;
		(void)snprintf(m->uuid, sizeof(m->uuid), "%s",
			       json_string_value(json_object_get(m->m, "table-uuid")));
		m->main_at = tablemeta_current_snapshot(m->m);
		if (json_object_get(json_object_get(m->m, "refs"), branch) != NULL) {
			ok = floe_err(err, FE_ALREADY_EXISTS,
				      "table %s already has a branch or tag %s", m->id.name,
				      branch);
			break;
		}
		if (!uuid_v4(m->run_id)) {
			ok = floe_err(err, FE_INTERNAL, "no randomness for a run id");
			break;
		}
		json_t *c = stage_change(m, branch, err);
		ok = c != NULL && json_array_append_new(changes, c) == 0;
	}
	if (ok) {
		struct stage_record rec = { env, release_id, branch, ms, n, creating };
		ok = table_commit_many(s, env, changes, 0, stage_also, &rec, &failed, err);
		if (!ok && failed < n && err->kind == FE_COMMIT_FAILED)
			floe_err(
				err, FE_COMMIT_FAILED,
				"table %s changed while the release was staged; nothing was staged, stage again",
				ms[failed].id.name);
	}
	json_decref(changes);
	if (!ok && err->kind != FE_COMMIT_STATE_UNKNOWN) {
		for (size_t i = 0; i < n; i++) {
			if (ms[i].manifest_list != NULL)
				fileio_remove(ms[i].manifest_list);
		}
	}
	return ok;
}

/* body.name as a branch name in out (default release-<id>). */
static bool branch_name(const json_t *body, const char *id, char *out, size_t len,
			struct floe_error *err)
{
	const json_t *name = json_object_get(body, "name");

	if (name == NULL || json_is_null(name)) {
		(void)snprintf(out, len, "release-%s", id);
		return true;
	}
	if (!json_is_string(name))
		return floe_err(err, FE_BAD_REQUEST, "field 'name' must be a string");
	if (!ident_name_check(json_string_value(name), json_string_length(name), "name", err))
		return false;
	if (strcmp(json_string_value(name), "main") == 0)
		return floe_err(err, FE_BAD_REQUEST, "Branch main cannot be a staging branch");
	(void)snprintf(out, len, "%s", json_string_value(name));
	return true;
}

json_t *release_create(struct store *s, const struct table_env *env, const json_t *body,
		       struct floe_error *err)
{
	char id[UUID_STR_LEN];
	char branch[300];
	struct member *ms = NULL;
	size_t n = 0;
	json_t *out = NULL;

	if (!json_is_object(body))
		return floe_err(err, FE_BAD_REQUEST, "the body must be a JSON object"), NULL;
	if (!uuid_v4(id))
		return floe_err(err, FE_INTERNAL, "no randomness for a release id"), NULL;
	if (!branch_name(body, id, branch, sizeof(branch), err) ||
	    !members_parse(s, body, &ms, &n, err))
		return NULL;
	if (stage_members(s, env, id, branch, ms, n, true, err)) {
		log_info("release", "release %s staged on %zu tables, branch %s rid=%s", id, n,
			 branch, env->request_id);
		out = load_release(s, id, NULL, NULL, err);
	}
	members_free(ms, n);
	return out;
}

json_t *release_add(struct store *s, const struct table_env *env, const char *id,
		    const json_t *body, struct floe_error *err)
{
	struct member *have = NULL, *ms = NULL;
	size_t nhave = 0, n = 0;
	json_t *out = NULL;

	if (!json_is_object(body))
		return floe_err(err, FE_BAD_REQUEST, "the body must be a JSON object"), NULL;
	json_t *rel = load_release(s, id, &have, &nhave, err);
	if (rel == NULL)
		return NULL;
	const char *state = json_string_value(json_object_get(rel, "state"));
	const char *branch = json_string_value(json_object_get(rel, "branch"));
	if (strcmp(state, "published") == 0 || strcmp(state, "abandoned") == 0 ||
	    strcmp(state, "auditing") == 0) {
		floe_err(err, FE_RUN_STATE, "release %s is %s: no table can be added", id, state);
		goto done;
	}
	if (!members_parse(s, body, &ms, &n, err))
		goto done;
	/* Members already in the release stay as they are. */
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		bool known = false;
		for (size_t j = 0; j < nhave && !known; j++)
			known = same_table(&have[j].id, &ms[i].id.ns, ms[i].id.name);
		if (known) {
			table_ident_clear(&ms[i].id);
			continue;
		}
		if (k != i) {
			ms[k] = ms[i];
			memset(&ms[i], 0, sizeof(ms[i]));
		}
		k++;
	}
	n = k;
	if (nhave + n > RELEASE_TABLES_MAX) {
		floe_err(err, FE_BAD_REQUEST, "a release holds at most %d tables",
			 RELEASE_TABLES_MAX);
		goto done;
	}
	if (n > 0 && !stage_members(s, env, id, branch, ms, n, false, err))
		goto done;
	out = load_release(s, id, NULL, NULL, err);
done:
	members_free(ms, n);
	members_free(have, nhave);
	json_decref(rel);
	return out;
}

/* --- abandon --- */

struct abandon_record {
	const struct table_env *env;
	const char *release_id;
	const char *branch;
	struct member *ms;
	size_t n;
};

static bool abandon_also(struct store *s, void *ctx, const json_t *result, struct floe_error *err)
{
	struct abandon_record *a = ctx;
	struct store_actor who = audit_actor(a->env);
	bool moved = false;

	(void)result;
	if (!store_release_transition(s, a->release_id, RELEASE_PUBLISHABLE, "abandoned", NULL, 0,
				      NULL, &who, &moved, err))
		return false;
	if (!moved)
		return floe_err(err, FE_RUN_STATE,
				"release %s is being audited and cannot be abandoned now",
				a->release_id);
	for (size_t i = 0; i < a->n; i++) {
		struct member *m = &a->ms[i];
		bool ok = store_run_transition(s, m->run_id, "staged,rejected,audit-failed",
					       "abandoned", -1, -1, NULL, 0, NULL, &who, &moved,
					       err);
		json_t *details = json_pack("{s:s, s:b, s:s}", "branch", a->branch,
					    "branch-dropped", m->m != NULL, "release-id",
					    a->release_id);
		ok = ok && store_event_insert(s, "wap.abandoned", &who, &m->id.ns, m->id.name,
					      m->run_id, details, err);
		json_decref(details);
		if (!ok)
			return false;
	}
	json_t *details = json_pack("{s:s, s:I}", "branch", a->branch, "tables", (json_int_t)a->n);
	bool ok = store_event_insert(s, "release.abandoned", &who, NULL, NULL, a->release_id,
				     details, err);
	json_decref(details);
	return ok && record_release(s, a->env, 200, a->release_id, err);
}

json_t *release_abandon(struct store *s, const struct table_env *env, const char *id,
			struct floe_error *err)
{
	struct member *ms = NULL;
	size_t n = 0;
	json_t *out = NULL;
	json_t *changes = NULL;
	json_t *rel = load_release(s, id, &ms, &n, err);

	if (rel == NULL)
		return NULL;
	const char *state = json_string_value(json_object_get(rel, "state"));
	const char *branch = json_string_value(json_object_get(rel, "branch"));
	if (strcmp(state, "published") == 0 || strcmp(state, "abandoned") == 0) {
		floe_err(err, FE_RUN_STATE, "release %s is %s and cannot be abandoned", id, state);
		goto done;
	}
	if (!members_allowed(s, env, ms, n, err))
		goto done;
	changes = json_array();
	for (size_t i = 0; i < n; i++) {
		struct floe_error lerr;
		/* A member dropped since has no branch left to drop. */
		json_t *m = table_load_metadata(s, &ms[i].id.ns, ms[i].id.name, NULL, &lerr);
		if (m != NULL &&
		    strcasecmp(json_string_value(json_object_get(m, "table-uuid")), ms[i].uuid) ==
			    0 &&
		    json_object_get(json_object_get(m, "refs"), branch) != NULL) {
			ms[i].m = m;
			json_array_append_new(changes,
					      json_pack("{s:o, s:[], s:[{s:s, s:s}]}", "identifier",
							table_json(&ms[i].id), "requirements",
							"updates", "action", "remove-snapshot-ref",
							"ref-name", branch));
		} else {
			json_decref(m);
		}
	}
	struct abandon_record rec = { env, id, branch, ms, n };
	bool ok;
	if (json_array_size(changes) > 0) {
		size_t failed;
		ok = table_commit_many(s, env, changes, 0, abandon_also, &rec, &failed, err);
	} else {
		ok = store_begin(s, err) && abandon_also(s, &rec, NULL, err) &&
		     store_commit(s, err);
		if (!ok && err->kind != FE_COMMIT_STATE_UNKNOWN)
			store_rollback(s);
	}
	if (ok)
		out = load_release(s, id, NULL, NULL, err);
done:
	json_decref(changes);
	json_decref(rel);
	members_free(ms, n);
	return out;
}

/* --- publish --- */

/* What a release's audit round needs of it (struct auditround_ops). */
struct release_round {
	const struct table_env *env;
	const char *id;
	const char *branch;
	struct member *ms;
	size_t n;
	const json_t *tables; /* the members as the payload lists them */
};

static bool release_move(struct store *s, void *ctx, const char *from, const char *to,
			 const json_t *audits, long lease_ms, const char *lease, bool *moved,
			 struct floe_error *err)
{
	const struct release_round *w = ctx;
	struct store_actor who = audit_actor(w->env);

	return store_release_transition(s, w->id, from, to, audits, lease_ms, lease, &who, moved,
					err);
}

static char *release_payload(void *ctx, const struct hook_target *h, const char *delivery_id,
			     const char *now)
{
	const struct release_round *w = ctx;
	char *body = NULL;
	json_t *payload = json_pack("{s:s, s:s, s:s, s:s, s:O, s:s, s:s}", "event", "release.audit",
				    "release-id", w->id, "delivery-id", delivery_id, "branch",
				    w->branch, "tables", w->tables, "requested-at", now,
				    "requested-by", audit_principal(w->env));

	if (payload != NULL && w->env->client_id != NULL)
		json_object_set_new(payload, "requested-by-client", json_string(w->env->client_id));
	if (payload != NULL)
		body = json_dumps(payload, JSON_COMPACT);
	json_decref(payload);
	if (body == NULL)
		log_error(
			"release",
			"release %s: the payload for hook %s cannot be built; the audit fails rid=%s",
			w->id, h->name, w->env->request_id);
	return body;
}

/* Each member's run says how its release's audit ended (a conflict
 * leaves them staged). */
static bool release_settle(struct store *s, void *ctx, const char *state, const json_t *audits,
			   struct floe_error *err)
{
	const struct release_round *w = ctx;
	struct store_actor who = audit_actor(w->env);
	bool moved = false;
	bool ok = true;

	for (size_t i = 0; ok && strcmp(state, "staged") != 0 && i < w->n; i++)
		ok = store_run_transition(s, w->ms[i].run_id, "staged,rejected,audit-failed", state,
					  w->ms[i].audited, -1, audits, 0, NULL, &who, &moved, err);
	return ok;
}

static const struct auditround_ops release_round_ops = {
	.move = release_move,
	.payload = release_payload,
	.settle = release_settle,
};

struct publish_record {
	const struct release_round *w;
	struct auditround *round;
	bool drop_branch;
};

/* In the transaction that moves every main: the release (while its lease
 * holds) and every member become published, with the hook calls and
 * their events; or nothing moves. */
static bool publish_also(struct store *s, void *ctx, const json_t *result, struct floe_error *err)
{
	struct publish_record *p = ctx;
	const struct release_round *w = p->w;
	struct store_actor who = audit_actor(w->env);
	bool moved = false;

	(void)result;
	if (!auditround_publish(s, p->round, err))
		return false;
	json_t *tables = json_array();
	for (size_t i = 0; i < w->n; i++) {
		struct member *m = &w->ms[i];
		bool ok = store_run_transition(s, m->run_id, "staged,rejected,audit-failed",
					       "published", m->audited, m->audited,
					       p->round->audits, 0, NULL, &who, &moved, err);
		if (ok && !moved)
			ok = floe_err(err, FE_RUN_STATE, "run %s of release %s moved on its own",
				      m->run_id, w->id);
		json_t *details = json_pack("{s:I, s:s, s:b, s:o, s:s}", "snapshot-id",
					    (json_int_t)m->audited, "branch", w->branch,
					    "branch-dropped", p->drop_branch,
					    "previous-main-snapshot-id",
					    m->main_at >= 0 ? json_integer(m->main_at)
							    : json_null(),
					    "release-id", w->id);
		ok = ok && store_event_insert(s, "wap.published", &who, &m->id.ns, m->id.name,
					      m->run_id, details, err);
		json_decref(details);
		json_t *t = table_json(&m->id);
		json_object_set_new(t, "snapshot-id", json_integer(m->audited));
		json_array_append_new(tables, t);
		if (!ok) {
			json_decref(tables);
			return false;
		}
	}
	json_t *details = json_pack("{s:s, s:o}", "branch", w->branch, "tables", tables);
	bool ok = store_event_insert(s, "release.published", &who, NULL, NULL, w->id, details, err);
	json_decref(details);
	return ok && record_release(s, w->env, 200, w->id, err);
}

static bool publish_commit(struct store *s, struct publish_record *rec, size_t *failed,
			   struct floe_error *err)
{
	const struct release_round *w = rec->w;
	json_t *changes = json_array();

	for (size_t i = 0; i < w->n; i++) {
		const struct member *m = &w->ms[i];
		json_t *main_req = json_pack("{s:s, s:s}", "type", "assert-ref-snapshot-id", "ref",
					     "main");
		if (m->main_at >= 0)
			json_object_set_new(main_req, "snapshot-id", json_integer(m->main_at));
		json_t *reqs = json_pack("[{s:s, s:s}, o, {s:s, s:s, s:I}]", "type",
					 "assert-table-uuid", "uuid", m->uuid, main_req, "type",
					 "assert-ref-snapshot-id", "ref", w->branch, "snapshot-id",
					 (json_int_t)m->audited);
		json_t *ups = json_pack("[{s:s, s:s, s:s, s:I}]", "action", "set-snapshot-ref",
					"ref-name", "main", "type", "branch", "snapshot-id",
					(json_int_t)m->audited);
		if (rec->drop_branch)
			json_array_append_new(ups, json_pack("{s:s, s:s}", "action",
							     "remove-snapshot-ref", "ref-name",
							     w->branch));
		json_array_append_new(changes,
				      json_pack("{s:o, s:o, s:o}", "identifier", table_json(&m->id),
						"requirements", reqs, "updates", ups));
	}
	bool ok = table_commit_many(s, w->env, changes, TABLE_COMMIT_MAIN_MOVE, publish_also, rec,
				    failed, err);
	json_decref(changes);
	return ok;
}

/* Checks member m for publishing: its table, the caller's privileges and
 * duties, its branch; fixes its audited snapshot and main; FE_NOT_FAST_FORWARD
 * when main is not an ancestor of the branch. */
static bool member_check(struct store *s, const struct table_env *env, const char *branch,
			 struct member *m, struct floe_error *err)
{
	if (!member_allowed(s, env, m, err))
		return false;
	m->m = table_load_metadata(s, &m->id.ns, m->id.name, &m->location, err);
	if (m->m == NULL)
		return false;
	if (strcasecmp(json_string_value(json_object_get(m->m, "table-uuid")), m->uuid) != 0)
		return floe_err(
			err, FE_RUN_STATE,
			"table %s was dropped and created again since the release staged it",
			m->id.name);
	if (!duties_check_publish(s, env, &m->id.ns, m->id.name, m->m, m->run, err))
		return false;
	json_t *bref = json_object_get(json_object_get(m->m, "refs"), branch);
	if (bref == NULL)
		return floe_err(err, FE_NO_SUCH_REFERENCE,
				"the release's branch %s no longer exists on table %s", branch,
				m->id.name);
	m->audited = json_integer_value(json_object_get(bref, "snapshot-id"));
	m->main_at = tablemeta_current_snapshot(m->m);
	if (m->main_at >= 0 && !refs_is_ancestor(m->m, m->main_at, m->audited))
		return floe_err(
			err, FE_NOT_FAST_FORWARD,
			"Branch main of table %s (snapshot %lld) is not an ancestor of the audited snapshot %lld; main cannot be fast-forwarded",
			m->id.name, m->main_at, m->audited);
	if (!store_hooks_in_scope(s, &m->id.ns, m->id.name, &m->hooks, &m->nhooks, err))
		return false;
	if (m->nhooks == 0)
		return floe_err(
			err, FE_NO_HOOK,
			"no audit hook covers table %s: an unaudited publish is not a publish",
			m->id.name);
	return true;
}

/* The members as the audit payload lists them. */
static json_t *payload_tables(const struct member *ms, size_t n)
{
	json_t *tables = json_array();

	for (size_t i = 0; tables != NULL && i < n; i++) {
		const struct member *m = &ms[i];
		const json_t *snap = tablemeta_snapshot(m->m, m->audited);
		json_t *parent = json_object_get(snap, "parent-snapshot-id");
		json_t *t = json_pack("{s:o, s:s, s:s, s:I, s:O, s:o, s:O, s:O, s:s?}", "table",
				      table_json(&m->id), "table-uuid", m->uuid, "run-id",
				      m->run_id, "snapshot-id", (json_int_t)m->audited,
				      "parent-snapshot-id",
				      json_is_integer(parent) ? parent : json_null(),
				      "main-snapshot-id",
				      m->main_at >= 0 ? json_integer(m->main_at) : json_null(),
				      "snapshot", snap ? snap : json_null(), "schema",
				      wap_snapshot_schema(m->m, snap), "metadata-location",
				      m->location);
		if (t == NULL || json_array_append_new(tables, t) != 0) {
			json_decref(tables);
			return NULL;
		}
	}
	return tables;
}

/* The hooks in scope of any member, each once, moved out of the members'
 * lists into *out (store_hook_targets_free). */
static bool hooks_union(struct member *ms, size_t n, struct hook_target **out, size_t *count,
			struct floe_error *err)
{
	size_t total = 0;

	for (size_t i = 0; i < n; i++)
		total += ms[i].nhooks;
	struct hook_target *all = calloc(total + 1, sizeof(*all));
	if (all == NULL)
		return floe_err(err, FE_INTERNAL, "out of memory");
	*count = 0;
	for (size_t i = 0; i < n; i++) {
		for (size_t j = 0; j < ms[i].nhooks; j++) {
			bool seen = false;
			for (size_t k = 0; k < *count && !seen; k++)
				seen = strcmp(all[k].id, ms[i].hooks[j].id) == 0;
			if (seen)
				continue;
			all[(*count)++] = ms[i].hooks[j];
			memset(&ms[i].hooks[j], 0, sizeof(ms[i].hooks[j]));
		}
	}
	*out = all;
	return true;
}

json_t *release_publish(struct store_pool *pool, const struct table_env *env, const char *id,
			const json_t *body, struct floe_error *err)
{
	const json_t *keep = json_object_get(body, "keep-branch");
	struct store *s = NULL;
	struct member *ms = NULL;
	size_t n = 0, nh = 0;
	json_t *rel = NULL, *out = NULL, *tables = NULL;
	struct hook_target *hooks = NULL;
	struct auditround round = { 0 };

	if (body != NULL && !json_is_object(body))
		return floe_err(err, FE_BAD_REQUEST, "the body must be a JSON object"), NULL;
	if (keep != NULL && !json_is_null(keep) && !json_is_boolean(keep))
		return floe_err(err, FE_BAD_REQUEST, "field 'keep-branch' must be a boolean"), NULL;
	s = system_acquire_in(pool, env->warehouse_name, err);
	if (s == NULL)
		return NULL;
	rel = load_release(s, id, &ms, &n, err);
	if (rel == NULL)
		goto done;
	const char *state = json_string_value(json_object_get(rel, "state"));
	const char *branch = json_string_value(json_object_get(rel, "branch"));
	if (strcmp(state, "published") == 0 || strcmp(state, "abandoned") == 0) {
		floe_err(err, FE_RUN_STATE, "release %s is %s and cannot be published", id, state);
		goto done;
	}
	for (size_t i = 0; i < n; i++) {
		if (!member_check(s, env, branch, &ms[i], err)) {
			if (err->kind == FE_NOT_FAST_FORWARD) {
				struct floe_error aerr;
				if (!audit_record(s, env, "release.conflict", NULL, NULL, id,
						  json_pack("{s:o, s:s}", "table",
							    table_json(&ms[i].id), "reason",
							    "main is not an ancestor"),
						  &aerr))
					*err = aerr;
			}
			goto done;
		}
	}
	if (!hooks_union(ms, n, &hooks, &nh, err))
		goto done;
	tables = payload_tables(ms, n);
	if (tables == NULL) {
		floe_err(err, FE_INTERNAL, "out of memory");
		goto done;
	}

	/* The audit round: lease, hook calls, verdicts (auditround.h). */
	struct release_round w = {
		.env = env,
		.id = id,
		.branch = branch,
		.ms = ms,
		.n = n,
		.tables = tables,
	};
	round = (struct auditround){
		.ops = &release_round_ops,
		.ctx = &w,
		.env = env,
		.kind = "release",
		.noun = "release",
		.id = id,
		.hooks = hooks,
		.n = nh,
	};
	json_t *seen = json_array();
	for (size_t i = 0; i < n; i++) {
		json_t *t = table_json(&ms[i].id);
		json_object_set_new(t, "snapshot-id", json_integer(ms[i].audited));
		json_object_set_new(t, "main-snapshot-id",
				    ms[i].main_at >= 0 ? json_integer(ms[i].main_at) : json_null());
		json_array_append_new(seen, t);
	}
	if (!auditround_claim(s, &round, RELEASE_PUBLISHABLE,
			      json_pack("{s:s, s:o}", "branch", branch, "tables", seen), err))
		goto done;
	log_info("release", "release %s: auditing %zu tables with %zu hooks rid=%s", id, n, nh,
		 env->request_id);
	if (!auditround_call(pool, &s, &round, err))
		goto done;

	size_t which = 0;
	enum hook_verdict verdict = auditround_verdict(&round, &which);
	if (verdict != HOOK_PASS) {
		const char *hname = hooks[which].name;
		const char *reason = auditround_reason(&round, which);
		bool rejected = verdict == HOOK_REJECT;
		if (!auditround_finish(s, &round, rejected ? "rejected" : "audit-failed",
				       rejected ? "release.rejected" : "release.audit-failed",
				       json_pack("{s:s, s:s}", "hook", hname, "reason", reason),
				       err))
			goto done;
		if (rejected)
			floe_err(err, FE_AUDIT_REJECTED,
				 "audit hook %s rejected release %s: %s; no table moved", hname, id,
				 reason);
		else
			floe_err(
				err, FE_AUDIT_UNAVAILABLE,
				"audit hook %s could not give a verdict (%s); no table moved, publish again later",
				hname, reason);
		goto done;
	}

	/* Every hook passed: one transaction moves every main. */
	struct publish_record rec = {
		.w = &w,
		.round = &round,
		.drop_branch = !json_is_true(keep),
	};
	struct floe_error cerr;
	size_t at = SIZE_MAX;
	floe_error_clear(&cerr);
	if (!publish_commit(s, &rec, &at, &cerr)) {
		if (cerr.kind == FE_COMMIT_FAILED) {
			const char *moved_table = at < n ? ms[at].id.name : "?";
			json_t *which_table = at < n ? table_json(&ms[at].id) : json_null();
			if (auditround_finish(s, &round, "staged", "release.conflict",
					      json_pack("{s:o, s:s}", "table", which_table,
							"reason",
							"the table moved during the audit"),
					      err))
				floe_err(
					err, FE_NOT_FAST_FORWARD,
					"table %s moved during the audit (main or the release's branch); no table was published",
					moved_table);
		} else if (cerr.kind == FE_RUN_STATE || cerr.kind == FE_COMMIT_STATE_UNKNOWN) {
			*err = cerr;
		} else {
			struct floe_error ferr;
			(void)auditround_finish(s, &round, "audit-failed", "release.audit-failed",
						json_pack("{s:s}", "reason", cerr.message), &ferr);
			*err = cerr;
		}
		goto done;
	}
	log_info("release", "release %s published %zu tables rid=%s", id, n, env->request_id);
	out = load_release(s, id, NULL, NULL, err);
	if (out == NULL) {
		/* The publish landed: the answer says so, from what is known. */
		log_warn("release", "release %s: published, but reading it back failed (%s) rid=%s",
			 id, err->message, env->request_id);
		out = published_release(rel, ms, n, round.audits, env);
		if (out == NULL) {
			floe_err(err, FE_INTERNAL, "out of memory after the publish");
			floe_error_set_outcome(err, FO_UNKNOWN);
		} else {
			floe_error_clear(err);
		}
	}
done:
	auditround_end(s, &round);
	wap_count_publish(out, err);
	if (s != NULL)
		store_pool_release(pool, s);
	json_decref(tables);
	store_hook_targets_free(hooks, nh);
	members_free(ms, n);
	json_decref(rel);
	return out;
}
