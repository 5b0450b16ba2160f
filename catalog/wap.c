/*
 * wap.c - write-audit-publish. A publish goes: check the run and the
 * branch, fix the audited snapshot, run the audit round (auditround.h:
 * the lease, the hooks called with the database released, every call and
 * verdict kept), then either one atomic commit moves main to exactly the
 * audited snapshot (guarded by main's snapshot at audit time) or nothing
 * moves. The run's state machine lives in wap_runs; every step is an
 * audit event.
 */
#include "wap.h"
#include "wapint.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "auditround.h"
#include "duties.h"
#include "emptysnap.h"
#include "hookspec.h"
#include "idem.h"
#include "system.h"
#include "log.h"
#include "metric.h"
#include "policy.h"
#include "ports.h"
#include "refs.h"
#include "auditlog.h"
#include "rowjson.h"
#include "tablemeta.h"
#include "timefmt.h"
#include "uuid.h"
#include "wording.h"

#define RUNS_PAGE_MAX 1000

/* The states a publish or an abandon may start from; a run left auditing
 * by an interrupted floe counts once its lease has run out. */
#define RUN_PUBLISHABLE "staged,rejected,audit-failed,auditing-stale"

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

json_t *wap_run_json(const void *row)
{
	const struct run_row *r = row;
	json_t *run = json_pack("{s:s, s:{s:o, s:s}, s:s, s:s, s:o, s:s, s:s, s:o}", "id", r->id,
				"table", "namespace", ident_ns_to_json(&r->ns), "name",
				r->table_name, "branch", r->branch, "state", r->state,
				"base-snapshot-id",
				r->has_base ? json_integer(r->base_snapshot_id) : json_null(),
				"created-at", r->created_at, "updated-at", r->updated_at, "audits",
				rowjson_text(r->audits));
	if (run == NULL)
		return NULL;
	if (r->has_audited)
		json_object_set_new(run, "audited-snapshot-id",
				    json_integer(r->audited_snapshot_id));
	if (r->has_published)
		json_object_set_new(run, "published-snapshot-id",
				    json_integer(r->published_snapshot_id));
	json_object_set_new(run, "staged-by",
			    json_string(r->staged_by ? r->staged_by : "anonymous"));
	if (r->published_by != NULL)
		json_object_set_new(run, "published-by", json_string(r->published_by));
	if (r->abandoned_by != NULL)
		json_object_set_new(run, "abandoned-by", json_string(r->abandoned_by));
	json_object_set_new(run, "written-by",
			    r->written_by ? rowjson_text(r->written_by) : json_array());
	if (r->release_id[0] != '\0')
		json_object_set_new(run, "release-id", json_string(r->release_id));
	return run;
}

/* The run run_id as JSON in *run: NULL when there is none, or when
 * table_uuid is given and the run belongs to another table. */
static bool load_run(struct store *s, const char *run_id, const char *table_uuid, json_t **run,
		     struct floe_error *err)
{
	struct run_row row;
	bool found = false;
	bool ok = true;

	*run = NULL;
	if (!store_run_get(s, run_id, &row, &found, err))
		return false;
	if (!found)
		return true;
	if (table_uuid == NULL || strcasecmp(row.table_uuid, table_uuid) == 0) {
		*run = wap_run_json(&row);
		if (*run == NULL)
			ok = floe_err(err, FE_INTERNAL, "out of memory");
	}
	store_run_row_clear(&row);
	return ok;
}

/* The run run_id of this table, or NULL with FE_NO_SUCH_RUN. */
static json_t *find_run(struct store *s, const char *table_uuid, const char *run_id,
			struct floe_error *err)
{
	json_t *run = NULL;

	if (!hook_id_valid(run_id))
		return wording_no_such_run(run_id, err), NULL;
	if (!load_run(s, run_id, table_uuid, &run, err))
		return NULL;
	if (run == NULL)
		return wording_no_such_run(run_id, err), NULL;
	return run;
}

static json_t *reload_run(struct store *s, const char *run_id, struct floe_error *err)
{
	json_t *run = NULL;

	if (!load_run(s, run_id, NULL, &run, err))
		return NULL;
	if (run == NULL)
		wording_no_such_run(run_id, err);
	return run;
}

/* In the change's transaction: run_id as it now stands is the route's
 * answer (status) under the request's Idempotency-Key. */
static bool record_run(struct store *s, const struct table_env *env, int status, const char *run_id,
		       struct floe_error *err)
{
	if (env->idem_key == NULL)
		return true;
	json_t *run = reload_run(s, run_id, err);
	bool ok = run != NULL && idem_record(s, env, status, run, err);
	json_decref(run);
	return ok;
}

/* Run (borrowed, as it was before its audit) as its publish of audited
 * with audits (borrowed) made it: the answer of a publish that landed
 * when the run cannot be read back. New reference; NULL when out of
 * memory. */
static json_t *published_run(const json_t *run, long long audited, const json_t *audits,
			     const struct table_env *env)
{
	char now[40];
	json_t *out = json_deep_copy(run);

	if (out == NULL)
		return NULL;
	(void)timefmt_rfc3339_now(now, sizeof(now));
	bool ok = json_object_set_new(out, "state", json_string("published")) == 0 &&
		  json_object_set_new(out, "audited-snapshot-id", json_integer(audited)) == 0 &&
		  json_object_set_new(out, "published-snapshot-id", json_integer(audited)) == 0 &&
		  json_object_set_new(out, "published-by",
				      json_string(env->principal != NULL ? env->principal
									 : "anonymous")) == 0 &&
		  json_object_set_new(out, "updated-at", json_string(now)) == 0 &&
		  json_object_set_new(out, "audits",
				      audits != NULL ? json_deep_copy(audits) : json_array()) == 0;
	if (!ok) {
		json_decref(out);
		return NULL;
	}
	return out;
}

/* A release's member moves with its release only: FE_RUN_STATE. */
static bool member_refused(const json_t *run, const char *what, struct floe_error *err)
{
	const char *release = json_string_value(json_object_get(run, "release-id"));

	if (release == NULL)
		return false;
	floe_err(err, FE_RUN_STATE,
		 "run %s belongs to release %s and is %s only with it (/v1/{prefix}/releases/%s)",
		 json_string_value(json_object_get(run, "id")), release, what, release);
	return true;
}

struct stage_record {
	const struct table_env *env;
	const struct ns_ident *ns;
	const char *table;
	const char *run_id;
	const char *table_uuid;
	const char *branch;
	long long base;
	bool adopted;
};

/* The run and its wap.staged event, in the transaction that (unless the
 * branch is adopted) also creates the branch. */
static bool stage_also(struct store *s, void *ctx, const json_t *result, struct floe_error *err)
{
	struct stage_record *r = ctx;
	struct store_actor who = audit_actor(r->env);

	(void)result;
	if (!store_run_insert(s, r->run_id, r->table_uuid, r->ns, r->table, r->branch, r->base,
			      r->adopted, NULL, &who, err))
		return false;
	json_t *details = json_pack("{s:s, s:b, s:o}", "branch", r->branch, "adopted", r->adopted,
				    "base-snapshot-id",
				    r->base >= 0 ? json_integer(r->base) : json_null());
	bool ok = store_event_insert(s, "wap.staged", &who, r->ns, r->table, r->run_id, details,
				     err);
	json_decref(details);
	return ok && record_run(s, r->env, 201, r->run_id, err);
}

json_t *wap_stage(struct store *s, const struct table_env *env, const struct ns_ident *ns,
		  const char *table, const json_t *body, struct floe_error *err)
{
	const json_t *branch = json_object_get(body, "branch");
	const json_t *adopt = json_object_get(body, "adopt");
	char id[UUID_STR_LEN];
	char name[300];
	json_t *m = NULL;
	json_t *run = NULL;

	if (branch != NULL && !json_is_null(branch)) {
		if (!json_is_string(branch))
			return floe_err(err, FE_BAD_REQUEST, "field 'branch' must be a string"),
			       NULL;
		if (!ident_name_check(json_string_value(branch), json_string_length(branch),
				      "branch", err))
			return NULL;
		if (strcmp(json_string_value(branch), "main") == 0)
			return floe_err(err, FE_BAD_REQUEST,
					"Branch main cannot be a staging branch"),
			       NULL;
	}
	if (adopt != NULL && !json_is_null(adopt) && !json_is_boolean(adopt))
		return floe_err(err, FE_BAD_REQUEST, "field 'adopt' must be a boolean"), NULL;
	if (json_is_true(adopt) && !json_is_string(branch))
		return floe_err(err, FE_BAD_REQUEST, "adopt needs the name of the branch"), NULL;
	if (!uuid_v4(id))
		return floe_err(err, FE_INTERNAL, "no randomness for a run id"), NULL;
	if (json_is_string(branch))
		(void)snprintf(name, sizeof(name), "%s", json_string_value(branch));
	else
		(void)snprintf(name, sizeof(name), "wap-%s", id);

	m = table_load_metadata(s, ns, table, NULL, err);
	if (m == NULL)
		return NULL;
	const char *uuid = json_string_value(json_object_get(m, "table-uuid"));
	long long main_at = tablemeta_current_snapshot(m);
	json_t *existing = json_object_get(json_object_get(m, "refs"), name);
	if (json_is_true(adopt)) {
		if (existing == NULL) {
			floe_err(err, FE_NO_SUCH_REFERENCE, "table %s has no branch %s to adopt",
				 table, name);
			goto done;
		}
		const char *type = json_string_value(json_object_get(existing, "type"));
		if (type == NULL || strcmp(type, "branch") != 0) {
			floe_err(err, FE_BAD_REQUEST, "%s is a tag; only a branch can be adopted",
				 name);
			goto done;
		}
	} else {
		if (existing != NULL) {
			floe_err(err, FE_ALREADY_EXISTS,
				 "table %s already has a branch or tag %s (adopt it instead)",
				 table, name);
			goto done;
		}
	}
	struct stage_record rec = {
		.env = env,
		.ns = ns,
		.table = table,
		.run_id = id,
		.table_uuid = uuid,
		.branch = name,
		.base = main_at,
		.adopted = json_is_true(adopt),
	};
	if (json_is_true(adopt)) {
		bool ok = store_begin(s, err) && stage_also(s, &rec, NULL, err) &&
			  store_commit(s, err);
		if (!ok) {
			store_rollback(s);
			goto done;
		}
	} else {
		/* The branch, the run and its event land together or not at all.
		 * A table without a snapshot has nothing to branch from: as
		 * Iceberg's createBranch on an empty table does, the branch
		 * starts at a new empty snapshot (main stays without one, the
		 * run has no base, and publish moves main from nothing). */
		json_t *reqs = json_pack("[{s:s, s:s}]", "type", "assert-ref-snapshot-id", "ref",
					 name);
		json_t *ups = json_array();
		char *manifest_list = NULL;
		long long at = main_at;
		if (main_at < 0) {
			json_t *snap = emptysnap_create(m, now_ms(), &manifest_list, err);
			if (snap == NULL) {
				json_decref(reqs);
				json_decref(ups);
				goto done;
			}
			at = json_integer_value(json_object_get(snap, "snapshot-id"));
			json_array_append_new(ups, json_pack("{s:s, s:o}", "action", "add-snapshot",
							     "snapshot", snap));
		}
		json_array_append_new(ups, json_pack("{s:s, s:s, s:s, s:I}", "action",
						     "set-snapshot-ref", "ref-name", name, "type",
						     "branch", "snapshot-id", (json_int_t)at));
		json_t *res = table_commit_with(s, env, ns, table, reqs, ups, 0, stage_also, &rec,
						err);
		json_decref(reqs);
		json_decref(ups);
		if (res == NULL && manifest_list != NULL && err->kind != FE_COMMIT_STATE_UNKNOWN)
			fileio_remove(manifest_list);
		free(manifest_list);
		if (res == NULL)
			goto done;
		json_decref(res);
	}
	log_info("wap", "run %s staged on %s branch %s rid=%s", id, table, name, env->request_id);
	metric_add(METRIC_WAP_RUNS, METRIC_WAP_STAGED, 1);
	run = reload_run(s, id, err);
done:
	json_decref(m);
	return run;
}

json_t *wap_get(struct store *s, const struct ns_ident *ns, const char *table, const char *run_id,
		struct floe_error *err)
{
	json_t *m = table_load_metadata(s, ns, table, NULL, err);
	json_t *run;

	if (m == NULL)
		return NULL;
	run = find_run(s, json_string_value(json_object_get(m, "table-uuid")), run_id, err);
	json_decref(m);
	return run;
}

json_t *wap_list(struct store *s, const struct ns_ident *ns, const char *table, const char *token,
		 long page_size, struct floe_error *err)
{
	json_t *m = table_load_metadata(s, ns, table, NULL, err);
	struct run_row *rows = NULL;
	size_t count = 0;
	json_t *runs = NULL;
	bool more = false;
	long long before = 0;

	if (m == NULL)
		return NULL;
	if (token != NULL && *token != '\0') {
		char *end = NULL;
		before = strtoll(token, &end, 10);
		if (*end != '\0' || before <= 0) {
			json_decref(m);
			return floe_err(err, FE_BAD_REQUEST,
					"pageToken is not a token this server issued"),
			       NULL;
		}
	}
	/* Runs and events only grow: these lists are always paged. */
	long limit = page_size > RUNS_PAGE_MAX ? RUNS_PAGE_MAX : page_size;
	bool ok = store_run_list(s, json_string_value(json_object_get(m, "table-uuid")), before,
				 limit, &rows, &count, &more, err);
	json_decref(m);
	if (!ok)
		return NULL;
	runs = rowjson_array(rows, count, sizeof(*rows), wap_run_json);
	json_t *next = json_null();
	if (runs != NULL && more && count > 0) {
		char t[32];
		(void)snprintf(t, sizeof(t), "%lld", rows[count - 1].seq);
		next = json_string(t);
	}
	store_run_rows_free(rows, count);
	if (runs == NULL)
		return floe_err(err, FE_INTERNAL, "out of memory"), NULL;
	return json_pack("{s:o, s:o}", "runs", runs, "next-page-token", next);
}

/* What an abandon records atomically with dropping the branch. */
struct abandon_record {
	const struct table_env *env;
	const struct ns_ident *ns;
	const char *table;
	const char *run_id;
	const char *branch;
	bool dropped;
};

/* The run becomes abandoned and wap.abandoned is written, in the
 * transaction that drops the branch (when it exists). */
static bool abandon_also(struct store *s, void *ctx, const json_t *result, struct floe_error *err)
{
	struct abandon_record *a = ctx;
	struct store_actor who = audit_actor(a->env);
	bool moved = false;

	(void)result;
	if (!store_run_transition(s, a->run_id, RUN_PUBLISHABLE, "abandoned", -1, -1, NULL, 0, NULL,
				  &who, &moved, err))
		return false;
	if (!moved)
		return floe_err(err, FE_RUN_STATE,
				"run %s is being audited and cannot be abandoned now", a->run_id);
	json_t *details = json_pack("{s:s, s:b}", "branch", a->branch, "branch-dropped",
				    a->dropped);
	bool ok = store_event_insert(s, "wap.abandoned", &who, a->ns, a->table, a->run_id, details,
				     err);
	json_decref(details);
	return ok && record_run(s, a->env, 200, a->run_id, err);
}

json_t *wap_abandon(struct store *s, const struct table_env *env, const struct ns_ident *ns,
		    const char *table, const char *run_id, struct floe_error *err)
{
	json_t *m = table_load_metadata(s, ns, table, NULL, err);
	json_t *run = NULL;
	json_t *out = NULL;

	if (m == NULL)
		return NULL;
	run = find_run(s, json_string_value(json_object_get(m, "table-uuid")), run_id, err);
	if (run == NULL)
		goto done;
	const char *state = json_string_value(json_object_get(run, "state"));
	if (strcmp(state, "published") == 0 || strcmp(state, "abandoned") == 0) {
		floe_err(err, FE_RUN_STATE, "run %s is %s and cannot be abandoned", run_id, state);
		goto done;
	}
	if (member_refused(run, "abandoned", err))
		goto done;
	const char *branch = json_string_value(json_object_get(run, "branch"));
	struct abandon_record rec = {
		.env = env,
		.ns = ns,
		.table = table,
		.run_id = run_id,
		.branch = branch,
		.dropped = json_object_get(json_object_get(m, "refs"), branch) != NULL,
	};
	if (rec.dropped) {
		json_t *ups = json_pack("[{s:s, s:s}]", "action", "remove-snapshot-ref", "ref-name",
					branch);
		json_t *res = table_commit_with(s, env, ns, table, NULL, ups, 0, abandon_also, &rec,
						err);
		json_decref(ups);
		if (res == NULL)
			goto done;
		json_decref(res);
	} else {
		bool ok = store_begin(s, err) && abandon_also(s, &rec, NULL, err) &&
			  store_commit(s, err);
		if (!ok) {
			if (err->kind != FE_COMMIT_STATE_UNKNOWN)
				store_rollback(s);
			goto done;
		}
	}
	metric_add(METRIC_WAP_RUNS, METRIC_WAP_ABANDONED, 1);
	out = reload_run(s, run_id, err);
done:
	json_decref(run);
	json_decref(m);
	return out;
}

const json_t *wap_snapshot_schema(const json_t *m, const json_t *snap)
{
	json_t *sid = json_object_get(snap, "schema-id");
	long long want = json_is_integer(sid)
				 ? json_integer_value(sid)
				 : json_integer_value(json_object_get(m, "current-schema-id"));
	size_t i;
	json_t *sc;
	json_array_foreach(json_object_get(m, "schemas"), i, sc) {
		if (json_integer_value(json_object_get(sc, "schema-id")) == want)
			return sc;
	}
	return json_null();
}

/* What a run's audit round needs of it (struct auditround_ops). */
struct run_round {
	const struct table_env *env;
	const struct ns_ident *ns;
	const char *table;
	const char *table_uuid;
	const char *run_id;
	const char *branch;
	const json_t *m;    /* the table's metadata */
	const json_t *snap; /* the audited snapshot, in m */
	const char *metadata_location;
	long long audited;
	long long main_at; /* -1: main has no snapshot */
};

static bool run_move(struct store *s, void *ctx, const char *from, const char *to,
		     const json_t *audits, long lease_ms, const char *lease, bool *moved,
		     struct floe_error *err)
{
	const struct run_round *w = ctx;
	struct store_actor who = audit_actor(w->env);
	long long published = strcmp(to, "published") == 0 ? w->audited : -1;

	return store_run_transition(s, w->run_id, from, to, w->audited, published, audits, lease_ms,
				    lease, &who, moved, err);
}

static char *run_payload(void *ctx, const struct hook_target *h, const char *delivery_id,
			 const char *now)
{
	const struct run_round *w = ctx;
	const json_t *parent = json_object_get(w->snap, "parent-snapshot-id");
	char *body = NULL;
	json_t *payload = json_pack(
		"{s:s, s:s, s:s, s:{s:o, s:s}, s:s, s:s, s:I, s:O, s:o, s:O, s:O, s:s, s:s, s:s}",
		"event", "wap.audit", "run-id", w->run_id, "delivery-id", delivery_id, "table",
		"namespace", ident_ns_to_json(w->ns), "name", w->table, "table-uuid", w->table_uuid,
		"branch", w->branch, "snapshot-id", (json_int_t)w->audited, "parent-snapshot-id",
		json_is_integer(parent) ? parent : json_null(), "main-snapshot-id",
		w->main_at >= 0 ? json_integer(w->main_at) : json_null(), "snapshot", w->snap,
		"schema", wap_snapshot_schema(w->m, w->snap), "metadata-location",
		w->metadata_location, "requested-at", now, "requested-by", audit_principal(w->env));

	if (payload != NULL && w->env->client_id != NULL)
		json_object_set_new(payload, "requested-by-client", json_string(w->env->client_id));
	if (payload != NULL)
		body = json_dumps(payload, JSON_COMPACT);
	json_decref(payload);
	if (body == NULL)
		log_error(
			"wap",
			"run %s: the payload for hook %s cannot be built (snapshot %lld, metadata location %s); the audit fails rid=%s",
			w->run_id, h->name, w->audited, w->metadata_location ? "known" : "missing",
			w->env->request_id);
	return body;
}

static const struct auditround_ops run_round_ops = {
	.move = run_move,
	.payload = run_payload,
	.settle = NULL,
};

/* What the publish commit records atomically with moving main. */
struct publish_record {
	const struct run_round *w;
	struct auditround *round;
	bool drop_branch;
};

/* In the publish commit's transaction: the run becomes published (while
 * its lease holds), its hook calls and the wap.published event are
 * written, or main does not move. */
static bool publish_also(struct store *s, void *ctx, const json_t *result, struct floe_error *err)
{
	struct publish_record *p = ctx;
	const struct run_round *w = p->w;
	struct store_actor who = audit_actor(w->env);

	(void)result;
	if (!auditround_publish(s, p->round, err))
		return false;
	json_t *details = json_pack("{s:I, s:s, s:b, s:o}", "snapshot-id", (json_int_t)w->audited,
				    "branch", w->branch, "branch-dropped", p->drop_branch,
				    "previous-main-snapshot-id",
				    w->main_at >= 0 ? json_integer(w->main_at) : json_null());
	bool ok = store_event_insert(s, "wap.published", &who, w->ns, w->table, w->run_id, details,
				     err);
	json_decref(details);
	return ok && record_run(s, w->env, 200, w->run_id, err);
}

static json_t *publish_commit(struct store *s, struct publish_record *rec, struct floe_error *err)
{
	const struct run_round *w = rec->w;
	json_t *reqs = json_array();
	json_t *ups = json_array();
	json_t *main_req = json_pack("{s:s, s:s}", "type", "assert-ref-snapshot-id", "ref", "main");

	if (w->main_at >= 0)
		json_object_set_new(main_req, "snapshot-id", json_integer(w->main_at));
	json_array_append_new(reqs, main_req);
	json_array_append_new(ups, json_pack("{s:s, s:s, s:s, s:I}", "action", "set-snapshot-ref",
					     "ref-name", "main", "type", "branch", "snapshot-id",
					     (json_int_t)w->audited));
	if (rec->drop_branch) {
		json_array_append_new(reqs, json_pack("{s:s, s:s, s:I}", "type",
						      "assert-ref-snapshot-id", "ref", w->branch,
						      "snapshot-id", (json_int_t)w->audited));
		json_array_append_new(ups, json_pack("{s:s, s:s}", "action", "remove-snapshot-ref",
						     "ref-name", w->branch));
	}
	json_t *res = table_commit_with(s, w->env, w->ns, w->table, reqs, ups,
					TABLE_COMMIT_MAIN_MOVE, publish_also, rec, err);
	json_decref(reqs);
	json_decref(ups);
	return res;
}

void wap_count_publish(const json_t *out, const struct floe_error *err)
{
	enum metric_wap_outcome o = METRIC_WAP_ERROR;

	if (out != NULL)
		o = METRIC_WAP_PUBLISHED;
	else if (err->kind == FE_AUDIT_REJECTED)
		o = METRIC_WAP_REJECTED;
	else if (err->kind == FE_AUDIT_UNAVAILABLE)
		o = METRIC_WAP_AUDIT_FAILED;
	else if (err->kind == FE_NOT_FAST_FORWARD)
		o = METRIC_WAP_CONFLICT;
	else if (err->kind == FE_NO_HOOK)
		o = METRIC_WAP_NO_HOOK;
	metric_add(METRIC_WAP_RUNS, o, 1);
}

json_t *wap_publish(struct store_pool *pool, const struct table_env *env, const struct ns_ident *ns,
		    const char *table, const char *run_id, const json_t *body,
		    struct floe_error *err)
{
	const json_t *want = json_object_get(body, "snapshot-id");
	const json_t *keep = json_object_get(body, "keep-branch");
	struct store *s = NULL;
	json_t *m = NULL;
	json_t *run = NULL;
	struct hook_target *hooks = NULL;
	json_t *out = NULL;
	char *metadata_location = NULL;
	struct auditround round = { 0 };
	size_t n = 0;

	if (want != NULL && !json_is_null(want) && !json_is_integer(want))
		return floe_err(err, FE_BAD_REQUEST, "field 'snapshot-id' must be an integer"),
		       NULL;
	if (keep != NULL && !json_is_null(keep) && !json_is_boolean(keep))
		return floe_err(err, FE_BAD_REQUEST, "field 'keep-branch' must be a boolean"), NULL;

	s = system_acquire_in(pool, env->warehouse_name, err);
	if (s == NULL)
		return NULL;
	m = table_load_metadata(s, ns, table, &metadata_location, err);
	if (m == NULL)
		goto done;
	const char *table_uuid = json_string_value(json_object_get(m, "table-uuid"));
	run = find_run(s, table_uuid, run_id, err);
	if (run == NULL)
		goto done;
	const char *state = json_string_value(json_object_get(run, "state"));
	if (strcmp(state, "published") == 0 || strcmp(state, "abandoned") == 0) {
		floe_err(err, FE_RUN_STATE, "run %s is %s and cannot be published", run_id, state);
		goto done;
	}
	if (member_refused(run, "published", err))
		goto done;
	char rule[256];
	if (!policy_release_rule(s, ns, m, rule, sizeof(rule), err))
		goto done;
	if (rule[0] != '\0') {
		floe_err(err, FE_FORBIDDEN,
			 "Branch main of table %s can only move through a release: %s", table,
			 rule);
		goto done;
	}
	if (!duties_check_publish(s, env, ns, table, m, run, err))
		goto done;
	const char *branch = json_string_value(json_object_get(run, "branch"));
	json_t *bref = json_object_get(json_object_get(m, "refs"), branch);
	if (bref == NULL) {
		floe_err(err, FE_NO_SUCH_REFERENCE, "the run's branch %s no longer exists", branch);
		goto done;
	}
	long long head = json_integer_value(json_object_get(bref, "snapshot-id"));
	long long audited = head;
	if (json_is_integer(want)) {
		audited = json_integer_value(want);
		if (tablemeta_snapshot(m, audited) == NULL || !refs_is_ancestor(m, audited, head)) {
			floe_err(err, FE_BAD_REQUEST, "snapshot %lld is not on branch %s", audited,
				 branch);
			goto done;
		}
	}
	long long main_at = tablemeta_current_snapshot(m);
	if (main_at >= 0 && !refs_is_ancestor(m, main_at, audited)) {
		floe_err(
			err, FE_NOT_FAST_FORWARD,
			"Branch main (snapshot %lld) is not an ancestor of the audited snapshot %lld; main cannot be fast-forwarded",
			main_at, audited);
		struct floe_error aerr;
		if (!audit_record(s, env, "wap.conflict", ns, table, run_id,
				  json_pack("{s:I, s:I, s:s}", "main-snapshot-id",
					    (json_int_t)main_at, "snapshot-id", (json_int_t)audited,
					    "reason", "main is not an ancestor"),
				  &aerr))
			*err = aerr;
		goto done;
	}
	if (!store_hooks_in_scope(s, ns, table, &hooks, &n, err))
		goto done;
	if (n == 0) {
		floe_err(err, FE_NO_HOOK,
			 "no audit hook covers table %s: an unaudited publish is not a publish",
			 table);
		goto done;
	}

	/* The audit round: lease, hook calls, verdicts (auditround.h). */
	struct run_round w = {
		.env = env,
		.ns = ns,
		.table = table,
		.table_uuid = table_uuid,
		.run_id = run_id,
		.branch = branch,
		.m = m,
		.snap = tablemeta_snapshot(m, audited),
		.metadata_location = metadata_location,
		.audited = audited,
		.main_at = main_at,
	};
	round = (struct auditround){
		.ops = &run_round_ops,
		.ctx = &w,
		.env = env,
		.kind = "wap",
		.noun = "run",
		.id = run_id,
		.ns = ns,
		.table = table,
		.hooks = hooks,
		.n = n,
		.call_extra = json_pack("{s:I}", "snapshot-id", (json_int_t)audited),
	};
	json_t *started = json_pack("{s:I, s:s, s:o}", "snapshot-id", (json_int_t)audited, "branch",
				    branch, "main-snapshot-id",
				    main_at >= 0 ? json_integer(main_at) : json_null());
	if (!auditround_claim(s, &round, RUN_PUBLISHABLE, started, err))
		goto done;
	log_info("wap", "run %s: auditing snapshot %lld of %s with %zu hooks rid=%s", run_id,
		 audited, table, n, env->request_id);
	if (!auditround_call(pool, &s, &round, err))
		goto done;

	size_t which = 0;
	enum hook_verdict verdict = auditround_verdict(&round, &which);
	if (verdict != HOOK_PASS) {
		const char *hname = hooks[which].name;
		const char *reason = auditround_reason(&round, which);
		bool rejected = verdict == HOOK_REJECT;
		if (!auditround_finish(s, &round, rejected ? "rejected" : "audit-failed",
				       rejected ? "wap.rejected" : "wap.audit-failed",
				       json_pack("{s:s, s:s, s:I}", "hook", hname, "reason", reason,
						 "snapshot-id", (json_int_t)audited),
				       err))
			goto done;
		if (rejected)
			floe_err(err, FE_AUDIT_REJECTED, "audit hook %s rejected snapshot %lld: %s",
				 hname, audited, reason);
		else
			floe_err(
				err, FE_AUDIT_UNAVAILABLE,
				"audit hook %s could not give a verdict (%s); nothing was published, publish again later",
				hname, reason);
		goto done;
	}

	/* Every hook passed: one commit moves main, guarded by main at audit
	 * time. The branch goes unless kept or moved on meanwhile. */
	struct publish_record rec = {
		.w = &w,
		.round = &round,
		.drop_branch = !json_is_true(keep),
	};
	struct floe_error cerr;
	floe_error_clear(&cerr);
	json_t *res = publish_commit(s, &rec, &cerr);
	if (res == NULL && cerr.kind == FE_COMMIT_FAILED && rec.drop_branch) {
		/* Perhaps only the branch moved on: publish and keep it. */
		floe_error_clear(&cerr);
		rec.drop_branch = false;
		res = publish_commit(s, &rec, &cerr);
	}
	if (res == NULL) {
		if (cerr.kind == FE_COMMIT_FAILED) {
			if (auditround_finish(s, &round, "staged", "wap.conflict",
					      json_pack("{s:I, s:s}", "snapshot-id",
							(json_int_t)audited, "reason",
							"main moved during the audit"),
					      err))
				floe_err(
					err, FE_NOT_FAST_FORWARD,
					"Branch main moved during the audit; nothing was published (%s)",
					cerr.message);
		} else if (cerr.kind == FE_RUN_STATE || cerr.kind == FE_COMMIT_STATE_UNKNOWN) {
			*err = cerr;
		} else {
			struct floe_error ferr;
			(void)auditround_finish(s, &round, "audit-failed", "wap.audit-failed",
						json_pack("{s:s, s:I}", "reason", cerr.message,
							  "snapshot-id", (json_int_t)audited),
						&ferr);
			*err = cerr;
		}
		goto done;
	}
	json_decref(res);
	log_info("wap", "run %s published snapshot %lld to main of %s rid=%s", run_id, audited,
		 table, env->request_id);
	out = reload_run(s, run_id, err);
	if (out == NULL) {
		/* The publish landed: the answer says so, from what is known. */
		log_warn("wap", "run %s: published, but reading it back failed (%s) rid=%s", run_id,
			 err->message, env->request_id);
		out = published_run(run, audited, round.audits, env);
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
	free(metadata_location);
	store_hook_targets_free(hooks, n);
	json_decref(run);
	json_decref(m);
	return out;
}
