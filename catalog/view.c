/*
 * view.c - view operations (view.h): create, load, the view commit with
 * its retry loop, rename and drop. The rules are viewmeta's; the steps
 * of writing (locations, the metadata file, the swap and settling an
 * unknown outcome) are the ones tables take (tablewrite.h).
 */
#include "view.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "access.h"
#include "auditlog.h"
#include "buf.h"
#include "idem.h"
#include "json.h"
#include "location.h"
#include "log.h"
#include "ports.h"
#include "tablewrite.h"
#include "uuid.h"
#include "viewmeta.h"
#include "wording.h"

/* A view rule viewmeta refused is answered as Iceberg's own servers
 * answer a refused argument (their view builder's checks): 400
 * IllegalArgumentException, which Java's client raises as such. Returns
 * false. */
static bool rule_refused(struct floe_error *err)
{
	if (err->kind == FE_BAD_REQUEST)
		err->kind = FE_ILLEGAL_ARGUMENT;
	return false;
}

/* {"metadata-location", "metadata", "config"} (new reference; m stolen). */
static json_t *view_result(const char *location, json_t *m)
{
	json_t *r = json_pack("{s:s, s:o, s:{}}", "metadata-location", location, "metadata", m,
			      "config");
	return r;
}

/* Where m's metadata files go: its write.metadata.path when it sets one
 * (borrowed from m), else NULL (<location>/metadata). That path must lie
 * inside the warehouse and inside no other table's or view's location.
 * False with FE_BAD_REQUEST. */
static bool metadata_path(struct store *s, const struct table_env *env, const json_t *m,
			  const char *uuid, const char **path, struct floe_error *err)
{
	const char *p = json_string_value(
		json_object_get(json_object_get(m, "properties"), "write.metadata.path"));
	char *other = NULL;

	*path = NULL;
	if (p == NULL || p[0] == '\0')
		return true;
	char *key = location_canonical(p, err);
	bool ok = key != NULL && table_location_writable(env, p, err) &&
		  store_table_location_clash(s, key, uuid, &other, err);
	free(key);
	if (ok && other != NULL) {
		ok = floe_err(err, FE_BAD_REQUEST,
			      "write.metadata.path %s lies within the location of %s", p, other);
		free(other);
	}
	if (ok)
		*path = p;
	return ok;
}

/* Writes text as metadata file number version of m. */
static bool write_metadata(struct store *s, const struct table_env *env, const json_t *m,
			   long long version, const char *text, size_t len, char **loc,
			   struct floe_error *err)
{
	const char *uuid = json_string_value(json_object_get(m, "view-uuid"));
	const char *dir = NULL;

	*loc = NULL;
	if (!metadata_path(s, env, m, uuid, &dir, err))
		return false;
	if (dir != NULL)
		return fileio_write_metadata_in(dir, version, text, len, loc, err);
	return fileio_write_metadata(json_string_value(json_object_get(m, "location")), version,
				     text, len, loc, err);
}

/* The name must be free before a file is written for it: a table or a
 * view holding it is answered in the words of what holds it. */
static bool name_free(struct store *s, const struct ns_ident *ns, const char *name,
		      struct floe_error *err)
{
	char kind[16];

	if (!store_name_kind(s, ns, name, kind, sizeof(kind), err))
		return false;
	if (kind[0] != '\0')
		return wording_name_taken(s, ns, name, true, err);
	return true;
}

/* In the change's transaction: its answer (the view at loc with metadata
 * m, borrowed) under the request's Idempotency-Key. */
static bool record_answer(struct store *s, const struct table_env *env, const char *loc,
			  const json_t *m, struct floe_error *err)
{
	if (env->idem_key == NULL)
		return true;
	json_t *answer = view_result(loc, json_deep_copy(m));
	if (answer == NULL)
		return floe_err(err, FE_INTERNAL, "out of memory");
	bool ok = idem_record(s, env, 200, answer, err);
	json_decref(answer);
	return ok;
}

/* Writes m as the view's first metadata file (or, with registered, takes
 * that file of text as it is) and creates its row, in one transaction
 * with the location claim; a file written goes again when the row is not
 * created (unless the outcome is unknown). */
static bool create_row(struct store *s, const struct table_env *env, const struct ns_ident *ns,
		       const char *name, const json_t *m, const char *registered,
		       const char *registered_text, char **location_out, struct floe_error *err)
{
	size_t len = 0;
	char *text = registered_text != NULL ? strdup(registered_text)
					     : viewmeta_serialise(m, &len, err);
	const char *view_loc = json_string_value(json_object_get(m, "location"));
	const char *uuid = json_string_value(json_object_get(m, "view-uuid"));
	struct store_actor who = audit_actor(env);
	char *loc = NULL;
	char *key = NULL;
	bool in_tx = false;
	bool keep_file = false;
	bool ok = false;

	*location_out = NULL;
	if (text == NULL)
		return floe_err(err, FE_INTERNAL, "out of memory");
	if (!table_location_usable(s, env, ns, NULL, view_loc, uuid, err))
		goto done;
	key = location_canonical(view_loc, err);
	if (key == NULL)
		goto done;
	if (registered != NULL) {
		loc = strdup(registered);
		keep_file = true; /* never floe's to remove */
		if (loc == NULL) {
			floe_err(err, FE_INTERNAL, "out of memory");
			goto done;
		}
	} else if (!write_metadata(s, env, m, 0, text, len, &loc, err)) {
		goto done;
	}
	if (!store_begin(s, err))
		goto done;
	in_tx = true;
	if (!table_location_claim(s, ns, NULL, view_loc, key, uuid, err))
		goto done;
	if (!store_view_create(s, ns, name, uuid, loc, text, key, &who, err)) {
		views_word_error(s, ns, name, err);
		goto done;
	}
	if (!record_answer(s, env, loc, m, err))
		goto done;
	in_tx = false;
	if (!store_commit(s, err)) {
		bool landed = false;
		if (err->outcome == FO_UNKNOWN) {
			bool unknown = !table_settle_commit(s, env, uuid, 1, loc, &landed);
			keep_file = keep_file || unknown;
			if (!unknown && !landed)
				table_not_landed(err);
		}
		if (!landed)
			goto done;
		floe_error_clear(err);
	}
	*location_out = loc;
	loc = NULL;
	ok = true;
done:
	if (in_tx)
		store_rollback(s);
	if (loc != NULL && !keep_file)
		fileio_remove(loc);
	free(loc);
	free(key);
	free(text);
	return ok;
}

/* The name of a createView or registerView body (borrowed), or NULL
 * with FE_BAD_REQUEST. */
static const char *body_name(const json_t *body, struct floe_error *err)
{
	const json_t *name = json_object_get(body, "name");

	if (!json_is_object(body))
		return floe_err(err, FE_BAD_REQUEST, "the request body must be a JSON object"),
		       NULL;
	if (!json_is_string(name))
		return floe_err(err, FE_BAD_REQUEST, "missing required field 'name'"), NULL;
	if (!ident_name_check(json_string_value(name), json_string_length(name), "view name", err))
		return NULL;
	return json_string_value(name);
}

/* A new view's namespace exists and its name is free. */
static bool name_free_in(struct store *s, const struct ns_ident *ns, const char *name,
			 struct floe_error *err)
{
	bool ns_exists = false;

	if (!store_ns_exists(s, ns, &ns_exists, err))
		return false;
	if (!ns_exists)
		return wording_no_such_namespace(ns, err);
	return name_free(s, ns, name, err);
}

json_t *view_create(struct store *s, const struct table_env *env, const struct ns_ident *ns,
		    const json_t *body, struct floe_error *err)
{
	char uuid[UUID_STR_LEN];
	char *location = NULL;
	char *loc = NULL;
	json_t *m = NULL;
	json_t *result = NULL;

	const char *n = body_name(body, err);
	if (n == NULL)
		return NULL;
	if (!name_free_in(s, ns, n, err))
		return NULL;
	if (!uuid_v4(uuid))
		return floe_err(err, FE_INTERNAL, "no randomness for a view uuid"), NULL;
	location = table_default_location(s, env, ns, n, uuid, err);
	if (location == NULL)
		return NULL;
	m = viewmeta_create(body, location, uuid, table_now_ms(), err);
	if (m == NULL) {
		rule_refused(err);
		goto done;
	}
	if (!table_location_writable(env, json_string_value(json_object_get(m, "location")), err))
		goto done;
	if (!create_row(s, env, ns, n, m, NULL, NULL, &loc, err))
		goto done;
	log_info("view", "created %s (%s) rid=%s", n, uuid, env->request_id);
	result = view_result(loc, m);
	m = NULL;
	if (result == NULL)
		floe_err(err, FE_INTERNAL, "out of memory");
done:
	json_decref(m);
	free(location);
	free(loc);
	return result;
}

json_t *view_register(struct store *s, const struct table_env *env, const struct ns_ident *ns,
		      const json_t *body, struct floe_error *err)
{
	const json_t *mloc = json_object_get(body, "metadata-location");
	char *text = NULL;
	char *loc = NULL;
	size_t len = 0;
	json_t *m = NULL;
	json_t *result = NULL;

	const char *n = body_name(body, err);
	if (n == NULL)
		return NULL;
	if (!json_is_string(mloc))
		return floe_err(err, FE_BAD_REQUEST, "missing required field 'metadata-location'"),
		       NULL;
	if (!name_free_in(s, ns, n, err))
		return NULL;
	/* The file must lie in the warehouse, as a registered table's. */
	if (!table_location_writable(env, json_string_value(mloc), err) ||
	    !fileio_read(json_string_value(mloc), VIEWMETA_MAX_DOCUMENT_BYTES, &text, &len, err))
		return NULL;
	m = viewmeta_parse(text, len, err);
	if (m == NULL)
		goto done;
	if (!create_row(s, env, ns, n, m, json_string_value(mloc), text, &loc, err))
		goto done;
	log_info("view", "registered %s from %s rid=%s", n, loc, env->request_id);
	result = view_result(loc, m);
	m = NULL;
	if (result == NULL)
		floe_err(err, FE_INTERNAL, "out of memory");
done:
	json_decref(m);
	free(text);
	free(loc);
	return result;
}

/* Appends a string literal. */
#define APPEND_LITERAL(b, lit) buf_append((b), (lit), sizeof(lit) - 1)

char *view_load(struct store *s, const struct ns_ident *ns, const char *name, size_t *len,
		struct floe_error *err)
{
	struct table_row row;
	struct buf b;
	char *out = NULL;

	*len = 0;
	if (!store_view_load(s, ns, name, &row, err))
		return views_word_error(s, ns, name, err), NULL;
	if (row.metadata_location == NULL) {
		store_table_row_clear(&row);
		return floe_err(err, FE_INTERNAL, "the view's metadata location is missing"), NULL;
	}
	/* Spliced, not re-encoded: the stored text is already JSON. */
	buf_init(&b, row.metadata_len + strlen(row.metadata_location) * 6 + 64);
	APPEND_LITERAL(&b, "{\"metadata-location\":");
	fjson_buf_string(&b, row.metadata_location, strlen(row.metadata_location));
	APPEND_LITERAL(&b, ",\"metadata\":");
	buf_append(&b, row.metadata, row.metadata_len);
	APPEND_LITERAL(&b, ",\"config\":{}}");
	if (b.status == BUF_OK)
		out = buf_take(&b, len);
	else
		floe_err(err, FE_INTERNAL, "out of memory");
	buf_free(&b);
	store_table_row_clear(&row);
	return out;
}

bool view_exists(struct store *s, const struct ns_ident *ns, const char *name, bool *exists,
		 struct floe_error *err)
{
	char kind[16];

	*exists = false;
	if (!store_name_kind(s, ns, name, kind, sizeof(kind), err))
		return false;
	*exists = strcmp(kind, "view") == 0;
	return true;
}

/* One round of a view commit: load, check, apply, write, swap. *lost when
 * another writer moved the view first (retry). */
static bool commit_round(struct store *s, const struct table_env *env, const struct ns_ident *ns,
			 const char *name, const json_t *requirements, const json_t *updates,
			 json_t **result, bool *lost, struct floe_error *err)
{
	struct table_row row;
	struct store_actor who = audit_actor(env);
	json_t *base = NULL;
	json_t *m = NULL;
	char *text = NULL;
	char *loc = NULL;
	char *key = NULL;
	bool changed = false;
	bool own_tx = false;
	bool won = false;
	bool ok = false;
	size_t len = 0;

	*lost = false;
	*result = NULL;
	if (!store_view_load(s, ns, name, &row, err))
		return views_word_error(s, ns, name, err);
	base = viewmeta_parse(row.metadata, row.metadata_len, err);
	if (base == NULL) {
		floe_err(err, FE_INTERNAL, "stored view metadata is unreadable");
		goto done;
	}
	if (!viewmeta_check_requirements(base, requirements, err))
		goto done;
	m = viewmeta_apply(base, updates, table_now_ms(), &changed, err);
	if (m == NULL) {
		rule_refused(err);
		goto done;
	}
	if (!changed) {
		*result = view_result(row.metadata_location, json_incref(base));
		ok = *result != NULL;
		goto done;
	}
	const char *view_loc = json_string_value(json_object_get(m, "location"));
	const char *base_loc = json_string_value(json_object_get(base, "location"));
	bool moved = base_loc == NULL || !location_same(base_loc, view_loc);
	key = location_canonical(view_loc, err);
	if (key == NULL)
		goto done;
	if (moved && !table_location_usable(s, env, ns, NULL, view_loc, row.uuid, err))
		goto done;
	text = viewmeta_serialise(m, &len, err);
	if (text == NULL || !write_metadata(s, env, m, row.version, text, len, &loc, err))
		goto done;
	/* The swap runs in a transaction of its own, so that its xid is
	 * learnt before the COMMIT goes out (table_settle_commit); a new
	 * location is decided in it too, and the answer to an
	 * Idempotency-Key recorded. */
	if (!store_begin(s, err)) {
		fileio_remove(loc);
		goto done;
	}
	own_tx = true;
	if (moved && !table_location_claim(s, ns, NULL, view_loc, key, row.uuid, err)) {
		store_rollback(s); /* before the file goes: none inside a transaction */
		own_tx = false;
		fileio_remove(loc);
		goto done;
	}
	if (!store_table_cas(s, row.id, row.version, loc, text, NULL, key, row.metadata_location,
			     &who, NULL, &won, err)) {
		if (!table_swap_failed(s, env, &row, loc, lost, err))
			goto done;
		won = true;
	}
	if (!won) {
		if (own_tx) {
			store_rollback(s);
			own_tx = false;
		}
		fileio_remove(loc); /* never referenced */
		*lost = true;
		goto done;
	}
	if (own_tx) {
		if (!record_answer(s, env, loc, m, err)) {
			store_rollback(s); /* the swap with it, before the file goes */
			own_tx = false;
			fileio_remove(loc);
			goto done;
		}
		own_tx = false;
		if (!store_commit(s, err) && !table_swap_failed(s, env, &row, loc, lost, err))
			goto done;
	}
	*result = view_result(loc, m);
	m = NULL;
	ok = *result != NULL;
	if (!ok) {
		floe_err(err, FE_INTERNAL, "out of memory after the commit");
		floe_error_set_outcome(err, FO_UNKNOWN);
	}
done:
	if (own_tx)
		store_rollback(s);
	store_table_row_clear(&row);
	json_decref(base);
	json_decref(m);
	free(text);
	free(loc);
	free(key);
	return ok;
}

json_t *view_commit(struct store *s, const struct table_env *env, const struct ns_ident *ns,
		    const char *name, const json_t *body, struct floe_error *err)
{
	const json_t *requirements = json_object_get(body, "requirements");
	const json_t *updates = json_object_get(body, "updates");
	json_t *result = NULL;
	bool lost = false;

	if (!json_is_object(body))
		return floe_err(err, FE_BAD_REQUEST, "the request body must be a JSON object"),
		       NULL;
	if (requirements == NULL || json_is_null(requirements))
		requirements = NULL;
	else if (!json_is_array(requirements))
		return floe_err(err, FE_BAD_REQUEST, "field 'requirements' must be an array"), NULL;
	if (!json_is_array(updates))
		return floe_err(err, FE_BAD_REQUEST, "missing required field 'updates'"), NULL;
	if (!viewmeta_check_actions(updates, err))
		return rule_refused(err), NULL;
	json_t *none = requirements == NULL ? json_array() : NULL;
	for (int attempt = 0; attempt < COMMIT_MAX_ATTEMPTS; attempt++) {
		if (attempt > 0)
			commit_backoff(attempt);
		bool ok = commit_round(s, env, ns, name, requirements ? requirements : none,
				       updates, &result, &lost, err);
		if (ok || (!lost && !floe_error_is_rollback(err))) {
			json_decref(none);
			return ok ? result : NULL;
		}
		log_debug("view", "commit to %s lost a race (attempt %d); retrying rid=%s", name,
			  attempt + 1, env->request_id);
	}
	json_decref(none);
	log_warn("view", "commit to %s gave up after %d lost races rid=%s", name,
		 COMMIT_MAX_ATTEMPTS, env->request_id);
	floe_err(err, FE_COMMIT_FAILED, "the view changed under %d attempts to commit; retry",
		 COMMIT_MAX_ATTEMPTS);
	return NULL;
}

bool view_drop(struct store *s, const struct table_env *env, const struct ns_ident *ns,
	       const char *name, struct floe_error *err)
{
	struct table_row row;
	struct store_actor who = audit_actor(env);

	if (!store_begin(s, err))
		return false;
	if (!store_view_drop(s, ns, name, &row, err)) {
		views_word_error(s, ns, name, err);
		store_rollback(s);
		return false;
	}
	json_t *details = json_pack("{s:s, s:s?}", "view-uuid", row.uuid, "metadata-location",
				    row.metadata_location);
	bool logged = store_event_insert(s, "view.dropped", &who, ns, name, NULL, details, err) &&
		      idem_record(s, env, 204, NULL, err);
	json_decref(details);
	if (!logged || !store_commit(s, err)) {
		if (err->kind != FE_COMMIT_STATE_UNKNOWN)
			store_rollback(s);
		store_table_row_clear(&row);
		return false;
	}
	log_info("view", "dropped %s (%s) rid=%s", name, row.uuid, env->request_id);
	store_table_row_clear(&row);
	return true;
}

bool view_rename(struct store *s, const struct table_env *env, const json_t *body,
		 struct floe_error *err)
{
	struct table_ident from, to;
	struct table_row row;
	struct store_actor who = audit_actor(env);
	bool ok = false;

	memset(&row, 0, sizeof(row));
	if (!table_ident_from_json(json_object_get(body, "source"), "source", &from, err))
		return false;
	if (!table_ident_from_json(json_object_get(body, "destination"), "destination", &to, err)) {
		table_ident_clear(&from);
		return false;
	}
	if (!store_begin(s, err))
		goto done;
	if (!store_view_load(s, &from.ns, from.name, &row, err)) {
		views_word_error(s, &from.ns, from.name, err);
		goto fail;
	}
	if (!store_view_rename(s, &from.ns, from.name, &to.ns, to.name, err)) {
		/* Missing is the source view; missing or taken, the
		 * destination. */
		if (err->kind == FE_NO_SUCH_VIEW)
			views_word_error(s, &from.ns, from.name, err);
		else if (err->kind == FE_ALREADY_EXISTS) {
			/* Asked outside the transaction the refusal ended. */
			store_rollback(s);
			wording_rename_taken(s, true, &from.ns, from.name, &to.ns, to.name, err);
			goto done;
		} else
			views_word_error(s, &to.ns, to.name, err);
		goto fail;
	}
	json_t *details = json_pack("{s:s, s:{s:o, s:s}}", "view-uuid", row.uuid, "to", "namespace",
				    ident_ns_to_json(&to.ns), "name", to.name);
	bool logged = store_event_insert(s, "view.renamed", &who, &from.ns, from.name, NULL,
					 details, err) &&
		      idem_record(s, env, 204, NULL, err);
	json_decref(details);
	if (!logged)
		goto fail;
	ok = store_commit(s, err);
	if (ok)
		goto done;
fail:
	if (err->kind != FE_COMMIT_STATE_UNKNOWN)
		store_rollback(s);
done:
	store_table_row_clear(&row);
	table_ident_clear(&from);
	table_ident_clear(&to);
	return ok;
}
