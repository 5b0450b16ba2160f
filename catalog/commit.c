/*
 * commit.c - the commit engine. It follows DESIGN.md "The commit": read,
 * check requirements, apply updates, write the new metadata file,
 * compare-and-swap the pointer; a lost swap goes round again against the
 * new base, so a commit whose requirements still hold lands. Also the
 * multi-table transaction (all rounds in one database transaction) and
 * the per-replica commit locks. Creating, loading and naming tables is
 * table.c's; this file uses its row and location steps (tablewrite.h).
 */
#include "table.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "access.h"
#include "auditlog.h"
#include "clock.h"
#include "idem.h"
#include "inject.h"
#include "location.h"
#include "log.h"
#include "metric.h"
#include "policy.h"
#include "ports.h"
#include "tablemeta.h"
#include "wording.h"
#include "tablewrite.h"
#include "uuid.h"

struct commit_locks {
	pthread_mutex_t stripe[COMMIT_LOCK_STRIPES];
};

struct commit_locks *commit_locks_new(void)
{
	struct commit_locks *l = malloc(sizeof(*l));

	if (l == NULL)
		return NULL;
	for (int i = 0; i < COMMIT_LOCK_STRIPES; i++)
		pthread_mutex_init(&l->stripe[i], NULL);
	return l;
}

void commit_locks_free(struct commit_locks **locks)
{
	if (*locks == NULL)
		return;
	for (int i = 0; i < COMMIT_LOCK_STRIPES; i++)
		pthread_mutex_destroy(&(*locks)->stripe[i]);
	free(*locks);
	*locks = NULL;
}

/* The stripe of a table: FNV-1a over its levels and name. */
static unsigned stripe_of(const struct ns_ident *ns, const char *name)
{
	uint32_t h = 2166136261u;
	for (size_t i = 0; i <= ns->nlevels; i++) {
		const char *p = i < ns->nlevels ? ns->levels[i] : name;
		for (; p != NULL && *p; p++) {
			h ^= (unsigned char)*p;
			h *= 16777619u;
		}
		h ^= 0x1f;
		h *= 16777619u;
	}
	return h % COMMIT_LOCK_STRIPES;
}

static void stripe_lock(const struct table_env *env, unsigned stripe)
{
	if (env->locks != NULL)
		pthread_mutex_lock(&env->locks->stripe[stripe]);
}

static void stripe_unlock(const struct table_env *env, unsigned stripe)
{
	if (env->locks != NULL)
		pthread_mutex_unlock(&env->locks->stripe[stripe]);
}

/* Sleeps a random time that grows with the attempt, so writers that
 * collided spread out. */
void commit_backoff(int attempt)
{
	unsigned int r = 0;
	unsigned int cap_us = 500u << (attempt < 6 ? attempt : 6); /* to 32 ms */
	if (getrandom(&r, sizeof(r), 0) != (ssize_t)sizeof(r))
		r = (unsigned int)attempt * 7919u;
	clock_sleep_us((int64_t)(r % cap_us));
}

/* True when updates holds an action that creates a table (assert-create
 * among the requirements). */
/* The commit of a staged create: a new table from the updates alone. */
static json_t *commit_create(struct store *s, const struct table_env *env,
			     const struct ns_ident *ns, const char *name,
			     const json_t *requirements, const json_t *updates,
			     struct floe_error *err)
{
	size_t i;
	json_t *r;
	char uuid[UUID_STR_LEN];
	char *loc = NULL;

	json_array_foreach(requirements, i, r) {
		const char *t = json_string_value(json_object_get(r, "type"));
		if (t == NULL || strcmp(t, "assert-create") != 0)
			return floe_err(
				       err, FE_BAD_REQUEST,
				       "a create commit (assert-create) takes no other requirement, got %s",
				       t ? t : "(no type)"),
			       NULL;
	}
	if (!json_is_array(updates))
		return floe_err(err, FE_BAD_REQUEST, "'updates' must be an array"), NULL;
	bool exists = false;
	if (!store_table_exists(s, ns, name, &exists, err))
		return NULL;
	if (exists)
		return floe_err(err, FE_COMMIT_FAILED, "Requirement failed: table already exists"),
		       NULL;
	/* A uuid of our own unless the client assigns one. */
	if (!uuid_v4(uuid))
		return floe_err(err, FE_INTERNAL, "no randomness for a table uuid"), NULL;
	json_t *m = tablemeta_apply_create(updates, uuid, table_now_ms(), err);
	if (m == NULL)
		return NULL;
	/* A create that brings a main snapshot moves main. */
	if (tablemeta_current_snapshot(m) >= 0 &&
	    !policy_check_main_move(s, ns, name, NULL, m, err)) {
		json_decref(m);
		return NULL;
	}
	if (!table_create_row(s, env, ns, name, m, false, &loc, err)) {
		json_decref(m);
		return NULL;
	}
	log_info("table", "created %s by a staged commit rid=%s", name, env->request_id);
	json_t *result = json_pack("{s:s, s:o}", "metadata-location", loc, "metadata", m);
	free(loc);
	return result;
}

/* What a round wrote: the file, and the version it becomes if the
 * swap commits (to settle an outcome the database did not confirm). */
struct commit_mark {
	char *location;
	char uuid[40];
	long long version;
	json_t *dropped; /* metadata files to delete once the swap is durable */
};

static void commit_mark_clear(struct commit_mark *m)
{
	free(m->location);
	json_decref(m->dropped);
	memset(m, 0, sizeof(*m));
}

/* The files of files (a string array, stolen; NULL: none) that lie in
 * the canonical table location key: a log may name files of another
 * table (one registered from a copy), and those are never this commit's
 * to delete. A new array, or NULL. */
static json_t *files_within(json_t *files, const char *key)
{
	json_t *mine = files != NULL ? json_array() : NULL;
	size_t i;
	json_t *f;

	json_array_foreach(files, i, f) {
		struct floe_error ignored;
		char *canon = location_canonical(json_string_value(f), &ignored);
		if (mine != NULL && canon != NULL && location_within(canon, key) &&
		    strcmp(canon, key) != 0 && json_array_append(mine, f) != 0) {
			json_decref(mine);
			mine = NULL;
		}
		free(canon);
	}
	json_decref(files);
	return mine;
}

/*
 * write.metadata.delete-after-commit.enabled: after the swap of m is
 * durable, deletes the metadata files it let go of (the ones trimmed off
 * the metadata-log). Never the current file, never one outside the
 * warehouse or through a symbolic link; a failure is logged and the
 * commit stands.
 */
static void commit_drop_old_files(const struct table_env *env, struct commit_mark *m)
{
	size_t i;
	json_t *f;

	json_array_foreach(m->dropped, i, f) {
		const char *file = json_string_value(f);
		struct floe_error err;

		floe_error_clear(&err);
		char *canon = location_canonical(file, &err);
		bool mine = canon != NULL && location_within(canon, env->warehouse) &&
			    (m->location == NULL || !location_same(file, m->location)) &&
			    fileio_check_beneath(file, env->warehouse_path, &err);
		if (canon != NULL && !mine && err.kind == FE_NONE)
			floe_err(&err, FE_BAD_REQUEST, "not a file floe wrote in its warehouse");
		free(canon);
		if (!mine) {
			log_info("table", "not deleting old metadata file %s: %s rid=%s", file,
				 err.message, env->request_id);
			continue;
		}
		fileio_remove(file);
		log_debug("table", "deleted old metadata file %s rid=%s", file, env->request_id);
	}
	json_decref(m->dropped);
	m->dropped = NULL;
}

/* Enforced publish: main may move only through a WAP publish when the
 * table or one of its namespaces sets floe.wap.required (control.c
 * decides; this is the one check every path that moves main makes). */
static bool main_move_allowed(struct store *s, const struct ns_ident *ns, const char *name,
			      const json_t *base, const json_t *m, struct floe_error *err)
{
	if (tablemeta_current_snapshot(base) == tablemeta_current_snapshot(m))
		return true;
	return policy_check_main_move(s, ns, name, base, m, err);
}

bool table_swap_failed(struct store *s, const struct table_env *env, const struct table_row *row,
		       const char *loc, bool *lost, struct floe_error *err)
{
	bool landed = false;

	if (err->outcome != FO_UNKNOWN) {
		*lost = floe_error_is_rollback(err);
		/* A failed statement leaves its transaction good only for a
		 * rollback, and no file is touched inside one. */
		store_rollback(s);
		fileio_remove(loc);
		return false;
	}
	if (!table_settle_commit(s, env, row->uuid, row->version + 1, loc, &landed))
		return false; /* still unknown: the file is kept */
	if (!landed) {
		table_not_landed(err);
		fileio_remove(loc);
		return false;
	}
	floe_error_clear(err);
	return true;
}

/*
 * What one table's round prepares before any transaction opens: the row
 * as read, the new metadata and its file, already written. Only the
 * compare-and-swap is left for the transaction, so no row stays locked
 * while a disk syncs or a bucket answers.
 */
struct commit_prep {
	struct table_row row;
	bool loaded; /* row holds a row */
	json_t *base;
	json_t *m; /* NULL: the updates change nothing */
	char *text;
	size_t len;
	char *refs;
	char *set;
	char *key; /* the canonical location of m */
	bool moved;
	char *loc; /* the file written, or NULL */
};

static void commit_prep_clear(struct commit_prep *p)
{
	if (p->loaded)
		store_table_row_clear(&p->row);
	json_decref(p->base);
	json_decref(p->m);
	free(p->text);
	free(p->refs);
	free(p->set);
	free(p->key);
	free(p->loc);
	memset(p, 0, sizeof(*p));
}

/* Reads the table, checks the requirements, applies the updates and
 * writes the new metadata file; no transaction may be open. */
static bool commit_prepare(struct store *s, const struct table_env *env, const struct ns_ident *ns,
			   const char *name, const json_t *requirements, const json_t *updates,
			   unsigned flags, struct commit_prep *p, struct floe_error *err)
{
	json_error_t jerr;
	bool changed = false;

	memset(p, 0, sizeof(*p));
	if (!store_table_load(s, ns, name, &p->row, err))
		return tables_word_error(s, ns, name, NULL, false, err);
	p->loaded = true;
	p->base = json_loadb(p->row.metadata, p->row.metadata_len, 0, &jerr);
	if (p->base == NULL)
		return floe_err(err, FE_INTERNAL, "stored metadata is unreadable");
	if (!tablemeta_check_requirements(p->base, requirements, err))
		return false;
	json_t *m = tablemeta_apply(p->base, p->row.metadata_location, updates, table_now_ms(),
				    &changed, err);
	if (m == NULL)
		return false;
	if (!changed) {
		json_decref(m);
		return true;
	}
	p->m = m;
	if (!(flags & TABLE_COMMIT_MAIN_MOVE) && !main_move_allowed(s, ns, name, p->base, m, err))
		return false;
	if (!(flags & TABLE_COMMIT_CONTROL) &&
	    !policy_check_table_properties(name, p->base, m, err))
		return false;
	const char *table_loc = json_string_value(json_object_get(m, "location"));
	const char *base_loc = json_string_value(json_object_get(p->base, "location"));
	p->key = location_canonical(table_loc, err);
	if (p->key == NULL)
		return false;
	p->moved = base_loc == NULL || !location_same(base_loc, table_loc);
	if (p->moved && !table_location_usable(s, env, ns, NULL, table_loc, p->row.uuid, err))
		return false;
	p->text = table_dump(m, &p->len, err);
	if (p->text == NULL)
		return false;
	if (!fileio_write_metadata(table_loc, p->row.version, p->text, p->len, &p->loc, err))
		return false;
	p->refs = table_refs_text(m);
	p->set = tablemeta_refs_set(p->base, m);
	return true;
}

/* The answer of a prepared round (new reference; NULL when out of
 * memory). */
static json_t *commit_prep_result(const struct commit_prep *p)
{
	if (p->m == NULL)
		return json_pack("{s:s?, s:O}", "metadata-location", p->row.metadata_location,
				 "metadata", p->base);
	return json_pack("{s:s, s:O}", "metadata-location", p->loc, "metadata", p->m);
}

/* The swap of a prepared round: a moved location is claimed first, in
 * the same transaction (the caller's: it must have one open then).
 * *won false when another writer swapped first. */
static bool commit_swap(struct store *s, const struct table_env *env, const struct ns_ident *ns,
			const struct commit_prep *p, bool *won, struct floe_error *err)
{
	struct store_actor who = audit_actor(env);
	const char *table_loc = json_string_value(json_object_get(p->m, "location"));

	*won = false;
	if (p->moved && !table_location_claim(s, ns, NULL, table_loc, p->key, p->row.uuid, err))
		return false;
	return store_table_cas(s, p->row.id, p->row.version, p->loc, p->text, p->refs, p->key,
			       p->row.metadata_location, &who, p->set, won, err);
}

/* Hands what a landed round wrote to mark (the file moves there). */
static void commit_prep_mark(struct commit_prep *p, struct commit_mark *mark)
{
	commit_mark_clear(mark);
	if (p->m == NULL)
		return;
	mark->location = p->loc;
	p->loc = NULL;
	(void)snprintf(mark->uuid, sizeof(mark->uuid), "%s", p->row.uuid);
	mark->version = p->row.version + 1;
	/* Out of memory here only means no old file is deleted. */
	mark->dropped = files_within(tablemeta_dropped_metadata_files(p->base, p->m), p->key);
}

/* True when updates set or remove property. */
static bool touches_control(const json_t *updates, const char *property)
{
	size_t i, k;
	json_t *u, *key;

	json_array_foreach((json_t *)updates, i, u) {
		const char *action = json_string_value(json_object_get(u, "action"));
		if (action == NULL)
			continue;
		if (strcmp(action, "set-properties") == 0 &&
		    json_object_get(json_object_get(u, "updates"), property) != NULL)
			return true;
		if (strcmp(action, "remove-properties") == 0) {
			json_array_foreach(json_object_get(u, "removals"), k, key) {
				if (json_is_string(key) &&
				    strcmp(json_string_value(key), property) == 0)
					return true;
			}
		}
	}
	return false;
}

/* What an updateTable writes in its commit's transaction besides the
 * swap: the control event, and the answer under its Idempotency-Key. */
struct commit_extras {
	const struct table_env *env;
	const struct ns_ident *ns;
	const char *name;
	bool control[POLICY_NCONTROLS]; /* the commit sets policy_controls[i]'s property */
};

/* A commit that sets a control property records it (weakening one is
 * refused before: policy_check_table_properties); a keyed commit records
 * its answer. */
static bool commit_extras_also(struct store *s, void *ctx, const json_t *result,
			       struct floe_error *err)
{
	struct commit_extras *x = ctx;
	struct store_actor who = audit_actor(x->env);

	for (size_t i = 0; i < POLICY_NCONTROLS; i++) {
		if (!x->control[i])
			continue;
		json_t *details = json_pack("{s:b}", "required",
					    policy_sets(json_object_get(result, "metadata"),
							policy_controls[i].property));
		bool ok = store_event_insert(s, policy_controls[i].event, &who, x->ns, x->name,
					     NULL, details, err);
		json_decref(details);
		if (!ok)
			return false;
	}
	return idem_record(s, x->env, 200, result, err);
}

json_t *table_commit(struct store *s, const struct table_env *env, const struct ns_ident *ns,
		     const char *name, const json_t *body, struct floe_error *err)
{
	const json_t *requirements = json_object_get(body, "requirements");
	const json_t *updates = json_object_get(body, "updates");

	if (requirements == NULL || json_is_null(requirements))
		requirements = NULL;
	else if (!json_is_array(requirements))
		return floe_err(err, FE_BAD_REQUEST, "'requirements' must be an array"), NULL;
	if (updates == NULL || !json_is_array(updates))
		return floe_err(err, FE_BAD_REQUEST, "'updates' must be an array"), NULL;
	if (!tablemeta_check_actions(updates, err))
		return NULL;
	/* The privileges were the gate's (server/routes.c): a staged
	 * create's TABLE_CREATE, else what the updates need. */
	if (requirements != NULL && access_commit_creates(requirements))
		return commit_create(s, env, ns, name, requirements, updates, err);
	struct commit_extras x = { .env = env, .ns = ns, .name = name };
	bool control = false;
	for (size_t i = 0; i < POLICY_NCONTROLS; i++) {
		x.control[i] = touches_control(updates, policy_controls[i].property);
		control |= x.control[i];
	}
	if (control || env->idem_key != NULL) {
		return table_commit_with(s, env, ns, name, requirements, updates, 0,
					 commit_extras_also, &x, err);
	}
	return table_commit_changes(s, env, ns, name, requirements, updates, 0, err);
}

json_t *table_commit_changes(struct store *s, const struct table_env *env,
			     const struct ns_ident *ns, const char *name,
			     const json_t *requirements, const json_t *updates, unsigned flags,
			     struct floe_error *err)
{
	return table_commit_with(s, env, ns, name, requirements, updates, flags, NULL, NULL, err);
}

/*
 * After the COMMIT of a transaction failed: whether what it wrote took
 * effect. Known failures remove the files (the caller has rolled back);
 * an unknown outcome is settled from the commit log. Returns true when
 * the commit landed after all (err cleared).
 */
static bool commit_failed(struct store *s, const struct table_env *env, struct commit_mark *marks,
			  size_t n, struct floe_error *err)
{
	bool landed = false;
	bool known = true;

	if (err->outcome == FO_UNKNOWN) {
		/* All or nothing: one table tells for every one. */
		for (size_t k = 0; k < n; k++) {
			if (marks[k].location != NULL) {
				known = table_settle_commit(s, env, marks[k].uuid, marks[k].version,
							    marks[k].location, &landed);
				break;
			}
		}
		if (landed) {
			floe_error_clear(err);
			return true;
		}
		if (known)
			table_not_landed(err);
	}
	if (!known)
		return false;
	for (size_t k = 0; k < n; k++) {
		if (marks[k].location != NULL)
			fileio_remove(marks[k].location);
		commit_mark_clear(&marks[k]);
	}
	return false;
}

/*
 * One attempt: the file is written with no transaction open, then the
 * swap, with `also` and a moved location's claim, in one short
 * transaction.
 */
static bool commit_round_with(struct store *s, const struct table_env *env,
			      const struct ns_ident *ns, const char *name,
			      const json_t *requirements, const json_t *updates, unsigned flags,
			      table_commit_also also, void *ctx, json_t **result, bool *lost,
			      struct floe_error *err)
{
	struct commit_prep p;
	struct commit_mark written = { 0 };
	bool in_tx = false;
	bool won = false;
	bool ok = false;

	*result = NULL;
	*lost = false;
	if (!commit_prepare(s, env, ns, name, requirements, updates, flags, &p, err))
		goto done;
	/* Built before the swap: after it, a failure could only be
	 * "unknown". */
	*result = commit_prep_result(&p);
	if (*result == NULL) {
		floe_err(err, FE_INTERNAL, "out of memory");
		goto done;
	}
	/* The swap runs in a transaction, never on its own: its xid is
	 * learnt before the COMMIT goes out, so that a COMMIT whose answer is
	 * lost can be settled by it (table_settle_commit). A new location is
	 * decided in the same transaction. */
	INJECTION_POINT("commit-written"); /* the file is written, the swap not begun */
	if (also != NULL || p.m != NULL) {
		if (!store_begin(s, err))
			goto done;
		in_tx = true;
	}
	if (p.m != NULL && !commit_swap(s, env, ns, &p, &won, err)) {
		*lost = floe_error_is_rollback(err);
		goto done;
	}
	if (p.m != NULL && !won) {
		*lost = true; /* the file is never referenced: removed below */
		goto done;
	}
	if (also != NULL && !also(s, ctx, *result, err))
		goto done;
	commit_prep_mark(&p, &written);
	if (in_tx) {
		in_tx = false;
		if (!store_commit(s, err) && !commit_failed(s, env, &written, 1, err)) {
			if (floe_error_is_rollback(err))
				*lost = true;
			goto done;
		}
	}
	INJECTION_POINT("commit-committed"); /* committed, not yet answered */
	ok = true;
	commit_drop_old_files(env, &written);
done:
	if (in_tx)
		store_rollback(s);
	if (!ok && p.loc != NULL)
		fileio_remove(p.loc);
	commit_mark_clear(&written);
	commit_prep_clear(&p);
	if (!ok) {
		json_decref(*result);
		*result = NULL;
	}
	return ok;
}

/* Counts how a commit or transaction ended (lib/metric.h); passes ok on. */
static bool commit_counted(bool ok, const struct floe_error *err)
{
	enum metric_commit_outcome o = METRIC_COMMITTED;

	if (!ok && err->kind == FE_COMMIT_FAILED)
		metric_add(METRIC_COMMIT_CONFLICTS, 0, 1);
	if (!ok)
		o = floe_error_mutation_kind(err) == FE_COMMIT_STATE_UNKNOWN ? METRIC_COMMIT_UNKNOWN
									     : METRIC_COMMIT_FAILED;
	metric_add(METRIC_COMMITS, o, 1);
	return ok;
}

json_t *table_commit_with(struct store *s, const struct table_env *env, const struct ns_ident *ns,
			  const char *name, const json_t *requirements, const json_t *updates,
			  unsigned flags, table_commit_also also, void *ctx, struct floe_error *err)
{
	json_t *result = NULL;
	bool lost = false;
	unsigned stripe = stripe_of(ns, name);
	for (int attempt = 0; attempt < COMMIT_MAX_ATTEMPTS; attempt++) {
		if (attempt > 0)
			commit_backoff(attempt);
		metric_add(attempt > 0 ? METRIC_COMMIT_RETRIES : METRIC_COMMIT_ATTEMPTS, 0, 1);
		stripe_lock(env, stripe);
		bool ok = commit_round_with(s, env, ns, name, requirements, updates, flags, also,
					    ctx, &result, &lost, err);
		stripe_unlock(env, stripe);
		if (ok || (!lost && !floe_error_is_rollback(err)))
			return commit_counted(ok, err) ? result : NULL;
		log_debug("table", "commit to %s lost a race (attempt %d); retrying rid=%s", name,
			  attempt + 1, env->request_id);
	}
	log_warn("table", "commit to %s gave up after %d lost races rid=%s", name,
		 COMMIT_MAX_ATTEMPTS, env->request_id);
	floe_err(err, FE_COMMIT_FAILED, "the table changed under %d attempts to commit; retry",
		 COMMIT_MAX_ATTEMPTS);
	(void)commit_counted(false, err);
	return NULL;
}

/* Byte-wise; a name not filled in (NULL) sorts first. */
static int name_cmp(const char *a, const char *b)
{
	if (a == NULL || b == NULL)
		return (a != NULL) - (b != NULL);
	return strcmp(a, b);
}

/* Orders table identities: namespace levels, then name, byte-wise. */
static int ident_cmp(const struct table_ident *a, const struct table_ident *b)
{
	size_t n = a->ns.nlevels < b->ns.nlevels ? a->ns.nlevels : b->ns.nlevels;

	for (size_t l = 0; l < n; l++) {
		int c = name_cmp(a->ns.levels[l], b->ns.levels[l]);
		if (c != 0)
			return c;
	}
	if (a->ns.nlevels != b->ns.nlevels)
		return a->ns.nlevels < b->ns.nlevels ? -1 : 1;
	return name_cmp(a->name, b->name);
}

/* qsort has no context argument: the identities being ordered. */
static _Thread_local const struct table_ident *order_ids;

static int order_cmp(const void *a, const void *b)
{
	return ident_cmp(&order_ids[*(const size_t *)a], &order_ids[*(const size_t *)b]);
}

/*
 * One attempt at a transaction. Every table's file is written first, in
 * `order` (sorted by name), with no transaction open; then one short
 * transaction swaps every row in that order, so transactions over the same
 * tables lock their rows in the same order on every replica and cannot
 * deadlock, and no row stays locked while a file is written. On a known
 * failure the files written are removed; *lost tells whether another
 * attempt may succeed.
 */
static bool transaction_round(struct store *s, const struct table_env *env, const json_t *changes,
			      struct table_ident *ids, const size_t *order,
			      struct commit_mark *marks, size_t n, unsigned flags,
			      table_commit_also also, void *ctx, size_t *failed, bool *lost,
			      struct floe_error *err)
{
	struct commit_prep *preps = calloc(n, sizeof(*preps));
	bool in_tx = false;
	bool ok = false;
	size_t i;

	*lost = false;
	*failed = SIZE_MAX;
	for (i = 0; i < n; i++)
		commit_mark_clear(&marks[i]);
	if (preps == NULL)
		return floe_err(err, FE_INTERNAL, "out of memory");
	for (i = 0; i < n; i++) {
		size_t k = order[i];
		const json_t *c = json_array_get(changes, k);
		const json_t *r = json_object_get(c, "requirements");
		if (!commit_prepare(s, env, &ids[k].ns, ids[k].name, json_is_array(r) ? r : NULL,
				    json_object_get(c, "updates"), flags, &preps[k], err)) {
			*failed = k;
			goto done;
		}
	}
	if (!store_begin(s, err))
		goto done;
	in_tx = true;
	for (i = 0; i < n; i++) {
		size_t k = order[i];
		bool won = false;
		if (preps[k].m == NULL)
			continue;
		if (!commit_swap(s, env, &ids[k].ns, &preps[k], &won, err)) {
			*failed = k;
			*lost = floe_error_is_rollback(err);
			goto done;
		}
		if (!won) {
			*failed = k;
			*lost = true;
			goto done;
		}
	}
	if (also != NULL && !also(s, ctx, NULL, err))
		goto done;
	for (i = 0; i < n; i++)
		commit_prep_mark(&preps[i], &marks[i]);
	in_tx = false;
	if (!store_commit(s, err) && !commit_failed(s, env, marks, n, err)) {
		if (floe_error_is_rollback(err))
			*lost = true;
		goto done;
	}
	ok = true;
done:
	if (in_tx)
		store_rollback(s);
	for (i = 0; i < n; i++) {
		/* Written for a round that did not land (files handed to the
		 * marks are commit_failed's to remove or keep). */
		if (!ok && preps[i].loc != NULL)
			fileio_remove(preps[i].loc);
		commit_prep_clear(&preps[i]);
	}
	free(preps);
	if (!ok && floe_error_is_rollback(err))
		*lost = true;
	return ok;
}

/* The engine of table_commit_transaction and table_commit_many. Each
 * change's privileges were checked before (the gate, server/routes.c; a
 * release's members by catalog/release.c). */
static bool commit_many(struct store *s, const struct table_env *env, const json_t *changes,
			unsigned flags, table_commit_also also, void *ctx, size_t *failed,
			struct floe_error *err)
{
	size_t n, i;
	json_t *c;

	*failed = SIZE_MAX;
	if (!json_is_array(changes) || json_array_size(changes) == 0)
		return floe_err(err, FE_BAD_REQUEST, "'table-changes' must be a non-empty array");
	n = json_array_size(changes);
	struct table_ident *ids = calloc(n, sizeof(*ids));
	struct commit_mark *marks = calloc(n, sizeof(*marks));
	size_t *order = calloc(n, sizeof(*order));
	bool ok = false;
	if (ids == NULL || marks == NULL || order == NULL) {
		free(ids);
		free(marks);
		free(order);
		return floe_err(err, FE_INTERNAL, "out of memory");
	}
	json_array_foreach(changes, i, c) {
		order[i] = i;
		if (!table_ident_from_json(json_object_get(c, "identifier"), "identifier", &ids[i],
					   err))
			goto done;
		const json_t *u = json_object_get(c, "updates");
		const json_t *r = json_object_get(c, "requirements");
		if (!json_is_array(u) || (r != NULL && !json_is_null(r) && !json_is_array(r))) {
			floe_err(err, FE_BAD_REQUEST,
				 "table change %zu needs 'updates' (and 'requirements') arrays", i);
			goto done;
		}
		if (!tablemeta_check_actions(u, err))
			goto done;
		if (r != NULL && access_commit_creates(r)) {
			floe_err(err, FE_BAD_REQUEST,
				 "a transaction cannot create tables (assert-create)");
			goto done;
		}
	}
	order_ids = ids;
	qsort(order, n, sizeof(*order), order_cmp);
	for (i = 1; i < n; i++) {
		if (ident_cmp(&ids[order[i - 1]], &ids[order[i]]) == 0) {
			floe_err(err, FE_BAD_REQUEST, "table %s appears twice in one transaction",
				 ids[order[i]].name);
			goto done;
		}
	}
	/* Every stripe involved, each once, in ascending order: two
	 * transactions over the same tables cannot deadlock. */
	bool used[COMMIT_LOCK_STRIPES] = { false };
	for (i = 0; i < n; i++)
		used[stripe_of(&ids[i].ns, ids[i].name)] = true;

	for (int attempt = 0; attempt < COMMIT_MAX_ATTEMPTS; attempt++) {
		bool lost = false;
		if (attempt > 0)
			commit_backoff(attempt);
		metric_add(attempt > 0 ? METRIC_COMMIT_RETRIES : METRIC_COMMIT_ATTEMPTS, 0, 1);
		for (unsigned k = 0; k < COMMIT_LOCK_STRIPES; k++)
			if (used[k])
				stripe_lock(env, k);
		bool tx_ok = transaction_round(s, env, changes, ids, order, marks, n, flags, also,
					       ctx, failed, &lost, err);
		for (unsigned k = COMMIT_LOCK_STRIPES; k-- > 0;)
			if (used[k])
				stripe_unlock(env, k);
		if (tx_ok) {
			for (i = 0; i < n; i++)
				commit_drop_old_files(env, &marks[i]);
			ok = true;
			goto done;
		}
		if (err->outcome == FO_UNKNOWN) {
			log_error("table", "transaction outcome unknown; its files are kept rid=%s",
				  env->request_id);
			goto done;
		}
		if (!lost)
			goto done;
	}
	floe_err(err, FE_COMMIT_FAILED, "the tables changed under %d attempts to commit; retry",
		 COMMIT_MAX_ATTEMPTS);
done:
	(void)commit_counted(ok, err);
	for (i = 0; i < n; i++) {
		table_ident_clear(&ids[i]);
		commit_mark_clear(&marks[i]);
	}
	free(ids);
	free(marks);
	free(order);
	return ok;
}

/* In commitTransaction's database transaction: its answer (204) under
 * the request's Idempotency-Key. */
static bool transaction_answer(struct store *s, void *ctx, const json_t *result,
			       struct floe_error *err)
{
	(void)result;
	return idem_record(s, ctx, 204, NULL, err);
}

bool table_commit_transaction(struct store *s, const struct table_env *env, const json_t *body,
			      struct floe_error *err)
{
	size_t failed;

	return commit_many(s, env, json_object_get(body, "table-changes"), 0, transaction_answer,
			   (void *)env, &failed, err);
}

bool table_commit_many(struct store *s, const struct table_env *env, const json_t *changes,
		       unsigned flags, table_commit_also also, void *ctx, size_t *failed,
		       struct floe_error *err)
{
	return commit_many(s, env, changes, flags, also, ctx, failed, err);
}
