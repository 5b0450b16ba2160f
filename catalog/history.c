/*
 * history.c - a table's past, read from the commit log. Every commit
 * floe acknowledged has its row there, naming the metadata file it
 * wrote; a load as of a point reads that file back from storage, so the
 * answer is exactly what a reader saw then, as long as the file is kept
 * (write.metadata.delete-after-commit may have removed it). A drop
 * without purge keeps the table's row, which an undrop puts back.
 */
#include "history.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "access.h"
#include "auditlog.h"
#include "effective.h"
#include "timefmt.h"
#include "idem.h"
#include "log.h"
#include "ports.h"
#include "rowjson.h"
#include "table.h"
#include "tablewrite.h"
#include "wording.h"

static bool digits(const char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!isdigit((unsigned char)p[i]))
			return false;
	return true;
}

bool table_point_parse(const char *as_of, const char *as_of_version, struct table_point *out,
		       struct floe_error *err)
{
	memset(out, 0, sizeof(*out));
	out->version = -1;
	if ((as_of == NULL) == (as_of_version == NULL))
		return floe_err(err, FE_BAD_REQUEST,
				"give one of as-of and as-of-version, not both");
	if (as_of_version != NULL) {
		char *end = NULL;
		long long v = strtoll(as_of_version, &end, 10);
		if (!isdigit((unsigned char)*as_of_version) || *end != '\0' || v < 1)
			return floe_err(err, FE_BAD_REQUEST,
					"as-of-version must be a positive integer, not '%.64s'",
					as_of_version);
		out->version = v;
		return true;
	}
	size_t n = strlen(as_of);
	if (n > 0 && n <= 15 && digits(as_of, n)) {
		/* Milliseconds since the epoch, as Iceberg's timestamp-ms. */
		long long ms = strtoll(as_of, NULL, 10);
		if (!timefmt_rfc3339_ms(ms, out->timestamp, sizeof(out->timestamp)))
			return floe_err(err, FE_BAD_REQUEST, "as-of is out of range: %s", as_of);
		return true;
	}
	if (!timefmt_rfc3339_valid(as_of))
		return floe_err(
			err, FE_BAD_REQUEST,
			"as-of must be an RFC 3339 time with a zone (2026-12-05T10:00:00Z) or milliseconds since the epoch, not '%.64s'",
			as_of);
	(void)snprintf(out->timestamp, sizeof(out->timestamp), "%s", as_of);
	return true;
}

static void point_text(const struct table_point *at, char *buf, size_t len)
{
	if (at->version >= 0)
		(void)snprintf(buf, len, "version %lld", at->version);
	else
		(void)snprintf(buf, len, "%s", at->timestamp);
}

json_t *table_load_at(struct store *s, const struct ns_ident *ns, const char *name,
		      const struct table_point *at, const json_t *extra, struct floe_error *err)
{
	struct commit_row *rows = NULL;
	size_t count = 0;
	bool more = false;
	char *text = NULL;
	size_t len = 0;
	json_t *out = NULL;
	char shown[64];
	json_error_t jerr;

	point_text(at, shown, sizeof(shown));
	if (!store_table_commits(s, ns, name, at->version >= 0 ? NULL : at->timestamp, at->version,
				 0, 1, &rows, &count, &more, err)) {
		if (err->kind == FE_NO_SUCH_TABLE)
			(void)tables_word_error(s, ns, name, NULL, false, err);
		return NULL;
	}
	char *qualified = ident_ns_display(ns);
	if (count == 0) {
		floe_err(err, FE_NO_SUCH_TABLE, "Table %s.%s has no commit %s %s",
			 qualified ? qualified : "?", name,
			 at->version >= 0 ? "of" : "at or before", shown);
		goto done;
	}
	if (!fileio_read(rows[0].metadata_location, METADATA_FILE_MAX, &text, &len, err)) {
		/* Gone (deleted after later commits) or unreadable: the past
		 * cannot be shown, which is not the caller's error. */
		if (err->kind == FE_BAD_REQUEST) {
			char cause[sizeof(err->message)];
			(void)snprintf(cause, sizeof(cause), "%s", err->message);
			floe_err(
				err, FE_NO_SUCH_TABLE,
				"Table %s.%s: the metadata file of version %lld is no longer readable (%s)",
				qualified ? qualified : "?", name, rows[0].version, cause);
		}
		goto done;
	}
	json_t *m = json_loadb(text, len, 0, &jerr);
	if (!json_is_object(m)) {
		json_decref(m);
		floe_err(
			err, FE_NO_SUCH_TABLE,
			"Table %s.%s: the metadata file of version %lld is not Iceberg table metadata",
			qualified ? qualified : "?", name, rows[0].version);
		goto done;
	}
	out = json_pack("{s:s, s:o}", "metadata-location", rows[0].metadata_location, "metadata",
			m);
	if (out != NULL && extra != NULL && json_object_update(out, (json_t *)extra) != 0) {
		json_decref(out);
		out = NULL;
	}
	if (out != NULL && json_object_get(out, "config") == NULL &&
	    json_object_set_new(out, "config", json_object()) != 0) {
		json_decref(out);
		out = NULL;
	}
	if (out == NULL)
		floe_err(err, FE_INTERNAL, "out of memory");
done:
	free(qualified);
	free(text);
	store_commit_rows_free(rows, count);
	return out;
}

static json_t *nullable(const char *s)
{
	return s != NULL ? json_string(s) : json_null();
}

static json_t *commit_json(const void *p)
{
	const struct commit_row *c = p;
	return json_pack("{s:I, s:s, s:s, s:I, s:s, s:o, s:s, s:o}", "version",
			 (json_int_t)c->version, "table-uuid", c->uuid, "committed-at",
			 c->committed_at, "committed-at-ms", (json_int_t)c->committed_at_ms,
			 "metadata-location", c->metadata_location ? c->metadata_location : "",
			 "previous-metadata-location", nullable(c->previous_location), "principal",
			 c->principal ? c->principal : "", "request-id", nullable(c->request_id));
}

/* A page of rows as {"<field>": [...], "next-page-token"} (new
 * reference): the token is last_key when more follow. Takes list. */
static json_t *page_answer(const char *field, json_t *list, bool more, long long last_key,
			   struct floe_error *err)
{
	json_t *next = json_null();
	if (list != NULL && more) {
		char t[32];
		(void)snprintf(t, sizeof(t), "%lld", last_key);
		next = json_string(t);
	}
	json_t *out = list != NULL && next != NULL
			      ? json_pack("{s:o, s:o}", field, list, "next-page-token", next)
			      : (json_decref(list), json_decref(next), NULL);
	if (out == NULL)
		floe_err(err, FE_INTERNAL, "out of memory");
	return out;
}

/* The listing's pageToken (a key issued by page_answer; NULL or empty:
 * from the newest) into *before, and its page size bounded. */
static bool page_parse(const char *token, long page_size, long long *before, long *limit,
		       struct floe_error *err)
{
	*before = 0;
	*limit = page_size > HISTORY_PAGE_MAX ? HISTORY_PAGE_MAX : page_size < 1 ? 1 : page_size;
	if (token == NULL || *token == '\0')
		return true;
	char *end = NULL;
	*before = strtoll(token, &end, 10);
	if (!isdigit((unsigned char)*token) || *end != '\0' || *before <= 0)
		return floe_err(err, FE_BAD_REQUEST, "pageToken is not a token this server issued");
	return true;
}

json_t *table_commits(struct store *s, const struct ns_ident *ns, const char *name,
		      const char *token, long page_size, struct floe_error *err)
{
	struct commit_row *rows = NULL;
	size_t count = 0;
	bool more = false;
	long long before;
	long limit;

	if (!page_parse(token, page_size, &before, &limit, err))
		return NULL;
	if (!store_table_commits(s, ns, name, NULL, -1, before, limit, &rows, &count, &more, err)) {
		if (err->kind == FE_NO_SUCH_TABLE)
			(void)tables_word_error(s, ns, name, NULL, false, err);
		return NULL;
	}
	json_t *list = rowjson_array(rows, count, sizeof(*rows), commit_json);
	long long last = count > 0 ? rows[count - 1].version : 0;
	store_commit_rows_free(rows, count);
	return page_answer("commits", list, more && count > 0, last, err);
}

json_t *table_undrop(struct store *s, const struct table_env *env, const struct ns_ident *ns,
		     const char *name, struct floe_error *err)
{
	return table_undrop_with(s, env, ns, name, NULL, err);
}

/* FE_NO_SUCH_NAMESPACE unless ns exists (or the store's failure). */
static bool ns_must_exist(struct store *s, const struct ns_ident *ns, struct floe_error *err)
{
	bool exists = false;

	if (!store_ns_exists(s, ns, &exists, err))
		return false;
	return exists || wording_no_such_namespace(ns, err);
}

/* Whether kept may come back as name of ns, whose effective control would
 * then be *after: not weaker than when it was dropped, and not a main
 * moving into a protected scope (else FE_FORBIDDEN naming the control
 * route). A drop whose control was not recorded cannot be decided and is
 * refused. */
static bool undrop_allowed(const struct dropped_row *kept, const struct ns_ident *ns,
			   const char *name, const json_t *m, const struct effective_control *after,
			   struct floe_error *err)
{
	struct effective_control before;
	char change[1024];
	json_error_t jerr;
	json_t *recorded = kept->controls != NULL ? json_loads(kept->controls, 0, &jerr) : NULL;
	char *shown = ident_ns_display(ns);
	bool ok = false;

	(void)snprintf(change, sizeof(change), "Undropping table %s.%s", shown ? shown : "?", name);
	if (!effective_from_json(recorded, &before)) {
		floe_err(
			err, FE_FORBIDDEN,
			"%s: the audited-publish control it had when dropped is not recorded, so whether this weakens it cannot be decided; only POST /v1/controls/undrop with a reason may",
			change);
		goto done;
	}
	ok = effective_check(&before, after, change, "undrop", err) &&
	     effective_check_main_arrives(&before, after, name, m, "undrop", err);
	effective_clear(&before);
done:
	free(shown);
	json_decref(recorded);
	return ok;
}

json_t *table_undrop_with(struct store *s, const struct table_env *env, const struct ns_ident *ns,
			  const char *name, const char *reason, struct floe_error *err)
{
	struct dropped_row kept;
	struct effective_control after;
	struct store_actor who = audit_actor(env);
	bool found = false;
	json_t *m = NULL;
	json_error_t jerr;

	memset(&kept, 0, sizeof(kept));
	memset(&after, 0, sizeof(after));
	/* An undrop puts the table's main back: TABLE_WRITE_MAIN on it, which
	 * the gate asked before anything is looked up (server/routes.c). */
	if (env->undrop_retention_s <= 0)
		return wording_no_such_table(ns, name, err), NULL;
	if (!store_begin(s, err))
		return NULL;
	/* The kept row is locked, so two undrops cannot both put it back;
	 * the location lock orders this check with every create and swap. */
	if (!store_dropped_find(s, ns, name, env->undrop_retention_s, &kept, &found, err))
		goto fail;
	if (!found) {
		if (!ns_must_exist(s, ns, err))
			goto fail;
		char *shown = ident_ns_display(ns);
		floe_err(err, FE_NO_SUCH_TABLE,
			 "Table does not exist: %s.%s (no drop of it is kept for an undrop)",
			 shown ? shown : "?", name);
		free(shown);
		goto fail;
	}
	m = json_loads(kept.metadata, 0, &jerr);
	if (!json_is_object(m)) {
		floe_err(err, FE_INTERNAL, "the kept metadata of %s is not JSON", name);
		goto fail;
	}
	/* The control it comes back under, against the one it left with: its
	 * namespace may have been dropped and made again meanwhile. */
	if (!ns_must_exist(s, ns, err))
		goto fail;
	if (!effective_of(s, ns, name, m, &after, err))
		goto fail;
	if (reason == NULL && !undrop_allowed(&kept, ns, name, m, &after, err))
		goto fail;
	if (!table_location_claim(s, ns, name, kept.location, kept.location, kept.uuid, err)) {
		/* The location is taken since the drop: a conflict with what
		 * exists now, not a bad request. */
		if (err->kind == FE_BAD_REQUEST) {
			char why[sizeof(err->message)];
			(void)snprintf(why, sizeof(why), "%s", err->message);
			floe_err(err, FE_ALREADY_EXISTS, "%s; the table cannot be undropped", why);
		}
		goto fail;
	}
	if (!store_table_undrop(s, kept.id, ns, name, err)) {
		if (err->kind == FE_ALREADY_EXISTS && strcmp(err->sqlstate, "23505") == 0)
			floe_err(err, FE_ALREADY_EXISTS,
				 "Table with uuid %s is registered again since its drop",
				 kept.uuid);
		else if (err->kind == FE_ALREADY_EXISTS)
			(void)wording_table_exists(ns, name, err);
		else if (err->kind == FE_NO_SUCH_NAMESPACE)
			(void)wording_no_such_namespace(ns, err);
		goto fail;
	}
	json_error_t cerr;
	json_t *details = json_pack("{s:s, s:s, s:s, s:I, s:o*, s:o*, s:s*}", "table-uuid",
				    kept.uuid, "metadata-location", kept.metadata_location,
				    "dropped-at", kept.dropped_at, "version",
				    (json_int_t)kept.version, "controls-when-dropped",
				    kept.controls != NULL ? json_loads(kept.controls, 0, &cerr)
							  : NULL,
				    "controls", effective_to_json(&after), "reason", reason);
	bool logged = details != NULL &&
		      store_event_insert(s, "table.undropped", &who, ns, name, NULL, details, err);
	json_decref(details);
	if (details == NULL)
		floe_err(err, FE_INTERNAL, "out of memory");
	if (!logged)
		goto fail;
	json_t *out = json_pack("{s:s, s:O, s:{}}", "metadata-location", kept.metadata_location,
				"metadata", m, "config");
	if (out == NULL) {
		floe_err(err, FE_INTERNAL, "out of memory");
		goto fail;
	}
	if (!idem_record(s, env, 200, out, err)) {
		json_decref(out);
		goto fail;
	}
	if (!store_commit(s, err)) {
		if (err->kind != FE_COMMIT_STATE_UNKNOWN)
			store_rollback(s);
		json_decref(out);
		goto out;
	}
	log_info("table", "undropped %s (%s), dropped at %s%s rid=%s", name, kept.uuid,
		 kept.dropped_at, reason != NULL ? " through the control route" : "",
		 env->request_id);
	json_decref(m);
	effective_clear(&after);
	store_dropped_row_clear(&kept);
	return out;
fail:
	store_rollback(s);
out:
	json_decref(m);
	effective_clear(&after);
	store_dropped_row_clear(&kept);
	return NULL;
}

static json_t *dropped_json(const void *p)
{
	const struct dropped_row *d = p;
	return json_pack("{s:s, s:s, s:s, s:s, s:I, s:s, s:s}", "name", d->name ? d->name : "",
			 "table-uuid", d->uuid, "location", d->location ? d->location : "",
			 "metadata-location", d->metadata_location ? d->metadata_location : "",
			 "version", (json_int_t)d->version, "dropped-at", d->dropped_at,
			 "dropped-by", d->dropped_by ? d->dropped_by : "");
}

json_t *table_dropped_list(struct store *s, const struct table_env *env, const struct ns_ident *ns,
			   const char *token, long page_size, struct floe_error *err)
{
	struct dropped_row *rows = NULL;
	size_t count = 0;
	bool more = false;
	bool exists = false;
	long long before;
	long limit;

	if (!page_parse(token, page_size, &before, &limit, err))
		return NULL;
	if (!store_ns_exists(s, ns, &exists, err))
		return NULL;
	if (!exists)
		return wording_no_such_namespace(ns, err), NULL;
	if (env->undrop_retention_s > 0 &&
	    !store_dropped_list(s, ns, env->undrop_retention_s, before, limit, &rows, &count, &more,
				err))
		return NULL;
	json_t *list = rowjson_array(rows, count, sizeof(*rows), dropped_json);
	long long last = count > 0 ? rows[count - 1].id : 0;
	store_dropped_rows_free(rows, count);
	return page_answer("dropped-tables", list, more && count > 0, last, err);
}
