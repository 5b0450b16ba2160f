/*
 * table.c - table operations: create, load, register, drop, rename, and
 * the location rules and row writes they share with the commit engine
 * (tablewrite.h). The commit loop and transactions are commit.c's.
 */
#include "table.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gzip.h"
#include "access.h"
#include "auditlog.h"
#include "clock.h"
#include "effective.h"
#include "idem.h"
#include "location.h"
#include "log.h"
#include "policy.h"
#include "ports.h"
#include "tablemeta.h"
#include "wording.h"
#include "tablewrite.h"
#include "unsettled.h"
#include "uuid.h"
#include "vend.h"

int64_t table_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* How long a commit whose outcome is unknown waits for the database to
 * answer again before it says so to the client. */
#define SETTLE_SECONDS 10

/*
 * Settles a commit whose connection broke while it was in flight, by the
 * xid its transaction had (learnt before the COMMIT went out): once the
 * database answers again, PostgreSQL says whether that transaction
 * committed or aborted. Returns true when that is known, with *landed;
 * false when it is not (the database stayed away, or the transaction is
 * still in progress: a COMMIT waiting on a synchronous standby is durable
 * and becomes visible later). The file must then be kept, and the commit
 * is handed to the janitor, which deletes the file only once the
 * transaction is proved aborted.
 */
bool table_settle_commit(struct store *s, const struct table_env *env, const char *uuid,
			 long long version, const char *location, bool *landed)
{
	struct floe_error err;
	char xid[24];
	enum store_commit_fate fate = STORE_COMMIT_UNPROVED;
	bool answered = false;

	*landed = false;
	/* Before anything else runs on s. */
	store_xact_id(s, xid, sizeof(xid));
	int64_t start = clock_mono_ms();
	for (int i = 0; clock_mono_ms() - start < SETTLE_SECONDS * 1000LL; i++) {
		if (i > 0)
			clock_sleep_ms(500);
		if (!store_reconnect(s, &err))
			continue;
		if (store_commit_landed(s, xid, uuid, version, location, &fate, &err)) {
			answered = true;
			break;
		}
	}
	if (answered && (fate == STORE_COMMIT_LANDED || fate == STORE_COMMIT_ABORTED)) {
		*landed = fate == STORE_COMMIT_LANDED;
		log_warn(
			"table",
			"settled a commit whose connection broke: version %lld of table %s %s (xid %s) rid=%s",
			version, uuid, *landed ? "landed" : "did not land", xid, env->request_id);
		return true;
	}
	if (answered)
		log_error(
			"table",
			"the outcome of version %lld of table %s (%s) is unknown: %s; the file is kept and the janitor settles it later rid=%s",
			version, uuid, location,
			fate == STORE_COMMIT_PENDING
				? "its transaction is still in progress in the database (a COMMIT waiting on a synchronous standby?)"
				: "the database cannot say whether its transaction committed",
			env->request_id);
	else
		log_error(
			"table",
			"the outcome of version %lld of table %s (%s) is unknown: the database did not answer within %d s; the janitor settles it later rid=%s",
			version, uuid, location, SETTLE_SECONDS, env->request_id);
	(void)unsettled_add(env->unsettled, xid, uuid, version, location, env->request_id);
	return false;
}

/* After table_settle_commit found that a commit did not land: the error the
 * client gets says so. */
bool table_not_landed(struct floe_error *err)
{
	floe_err(
		err, FE_UNAVAILABLE,
		"the database connection broke before the commit completed; nothing was committed, retry");
	floe_error_set_outcome(err, FO_FAILED);
	return false;
}

void table_ident_clear(struct table_ident *t)
{
	ident_ns_clear(&t->ns);
	free(t->name);
	t->name = NULL;
}

bool table_ident_from_json(const json_t *v, const char *field, struct table_ident *out,
			   struct floe_error *err)
{
	char what[64];
	const json_t *name = json_object_get(v, "name");

	memset(out, 0, sizeof(*out));
	if (!json_is_object(v))
		return floe_err(err, FE_BAD_REQUEST,
				"field '%s' must be an object with 'namespace' and 'name'", field);
	(void)snprintf(what, sizeof(what), "%s.namespace", field);
	if (!ident_ns_from_json(json_object_get(v, "namespace"), what, &out->ns, err))
		return false;
	if (!json_is_string(name)) {
		ident_ns_clear(&out->ns);
		return floe_err(err, FE_BAD_REQUEST, "field '%s.name' must be a string", field);
	}
	if (!ident_name_check(json_string_value(name), json_string_length(name), "table name",
			      err)) {
		ident_ns_clear(&out->ns);
		return false;
	}
	out->name = strdup(json_string_value(name));
	if (out->name == NULL) {
		ident_ns_clear(&out->ns);
		return floe_err(err, FE_INTERNAL, "out of memory");
	}
	return true;
}

static json_t *load_result(const char *location, json_t *metadata)
{
	return json_pack("{s:s?, s:o, s:{}}", "metadata-location", location, "metadata", metadata,
			 "config");
}

char *table_dump(const json_t *m, size_t *len, struct floe_error *err)
{
	char *text = json_dumps(m, JSON_COMPACT);
	if (text == NULL) {
		floe_err(err, FE_INTERNAL, "out of memory");
		return NULL;
	}
	*len = strlen(text);
	return text;
}

/* The snapshots=refs form of m as text (caller frees), or NULL when it
 * would be the same as m (every snapshot is a ref target). Computed once
 * per commit so that loadTable never parses metadata. */
char *table_refs_text(const json_t *m)
{
	json_t *trimmed = tablemeta_only_ref_snapshots(m);
	char *text = NULL;

	if (trimmed != NULL && json_array_size(json_object_get(trimmed, "snapshots")) !=
				       json_array_size(json_object_get(m, "snapshots")))
		text = json_dumps(trimmed, JSON_COMPACT);
	json_decref(trimmed);
	return text;
}

/* The idempotent answer of a new table: a LoadTableResult for
 * createTable (with_config), the commit answer for a staged create. */
static bool idem_record_created(struct store *s, const struct table_env *env, const char *loc,
				json_t *m, bool with_config, struct floe_error *err)
{
	json_t *answer = with_config
				 ? json_pack("{s:s, s:O, s:{}}", "metadata-location", loc,
					     "metadata", m, "config")
				 : json_pack("{s:s, s:O}", "metadata-location", loc, "metadata", m);
	if (answer == NULL)
		return floe_err(err, FE_INTERNAL, "out of memory");
	bool ok = idem_record(s, env, 200, answer, err);
	json_decref(answer);
	return ok;
}

/* Writes metadata m as file number `version` of the table and creates its
 * row; the file is removed again if the row cannot be created. */
bool table_create_row(struct store *s, const struct table_env *env, const struct ns_ident *ns,
		      const char *name, json_t *m, bool with_config, char **location_out,
		      struct floe_error *err)
{
	size_t len;
	char *text = table_dump(m, &len, err);
	char *loc = NULL;
	char *key = NULL;
	char *refs = NULL;
	char *set = NULL;
	struct store_actor who = audit_actor(env);
	bool in_tx = false;
	bool keep_file = false;
	bool ok = false;
	const char *table_loc = json_string_value(json_object_get(m, "location"));
	const char *uuid = json_string_value(json_object_get(m, "table-uuid"));

	*location_out = NULL;
	if (text == NULL)
		return false;
	if (!table_location_usable(s, env, ns, name, table_loc, uuid, err))
		goto done;
	key = location_canonical(table_loc, err);
	if (key == NULL)
		goto done;
	if (!fileio_write_metadata(table_loc, 0, text, len, &loc, err))
		goto done;
	refs = table_refs_text(m);
	set = tablemeta_refs_set(NULL, m);
	if (!store_begin(s, err))
		goto done;
	in_tx = true;
	if (!table_location_claim(s, ns, name, table_loc, key, uuid, err))
		goto done;
	if (!store_table_create(s, ns, name, uuid, loc, text, refs, key, &who, set, err)) {
		tables_word_error(s, ns, name, uuid, true, err);
		goto done;
	}
	if (env->idem_key != NULL && !idem_record_created(s, env, loc, m, with_config, err))
		goto done;
	in_tx = false;
	if (!store_commit(s, err)) {
		bool landed = false;
		if (err->outcome == FO_UNKNOWN) {
			keep_file = !table_settle_commit(s, env, uuid, 1, loc, &landed);
			if (!keep_file && !landed)
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
	free(refs);
	free(set);
	return ok;
}

json_t *table_create(struct store *s, const struct table_env *env, const struct ns_ident *ns,
		     const json_t *body, struct floe_error *err)
{
	const json_t *name = json_object_get(body, "name");
	const json_t *stage = json_object_get(body, "stage-create");
	char uuid[UUID_STR_LEN];
	char *location = NULL;
	char *loc = NULL;
	json_t *m = NULL;
	json_t *result = NULL;
	json_t *vended = NULL;
	bool exists = false;

	if (!json_is_string(name))
		return floe_err(err, FE_BAD_REQUEST, "missing required field 'name'"), NULL;
	if (!ident_name_check(json_string_value(name), json_string_length(name), "table name", err))
		return NULL;
	if (stage != NULL && !json_is_boolean(stage) && !json_is_null(stage))
		return floe_err(err, FE_BAD_REQUEST, "field 'stage-create' must be a boolean"),
		       NULL;
	if (!uuid_v4(uuid))
		return floe_err(err, FE_INTERNAL, "no randomness for a table uuid"), NULL;
	location = table_default_location(s, env, ns, json_string_value(name), uuid, err);
	if (location == NULL)
		return NULL;
	m = tablemeta_create(body, location, uuid, table_now_ms(), err);
	if (m == NULL)
		goto done;
	if (!table_location_writable(env, json_string_value(json_object_get(m, "location")), err))
		goto done;

	/* The namespace first: no file is written for a table that cannot
	 * be created. */
	bool ns_exists = false;
	if (!store_ns_exists(s, ns, &ns_exists, err))
		goto done;
	if (!ns_exists) {
		wording_no_such_namespace(ns, err);
		goto done;
	}
	/* Before anything is stored: a create whose credentials cannot be
	 * vended changes nothing, and the client may retry it. */
	if (env->vend != NULL) {
		vended = vend_table(env->vend, s, env->acting, ns, json_string_value(name),
				    json_string_value(json_object_get(m, "location")), err);
		if (vended == NULL)
			goto done;
	}
	if (json_is_true(stage)) {
		/* Nothing is stored; the client commits later with
		 * assert-create. The name must be free now, or the client
		 * learns it only at commit time. */
		if (!store_table_exists(s, ns, json_string_value(name), &exists, err))
			goto done;
		if (exists) {
			wording_table_exists(ns, json_string_value(name), err);
			goto done;
		}
		/* Engines write data and manifests below a staged table before
		 * its first metadata file exists, and some (DuckDB) create no
		 * directory of their own: metadata/ is made now, empty. */
		if (!fileio_make_metadata_dir(json_string_value(json_object_get(m, "location")),
					      err))
			goto done;
		result = load_result(NULL, m);
		m = NULL;
		goto done;
	}
	if (!table_create_row(s, env, ns, json_string_value(name), m, true, &loc, err))
		goto done;
	log_info("table", "created %s (%s) rid=%s", json_string_value(name), uuid, env->request_id);
	result = load_result(loc, m);
	m = NULL;
done:
	if (result != NULL && vended != NULL && json_object_update(result, vended) != 0) {
		json_decref(result);
		result = NULL;
	}
	json_decref(vended);
	json_decref(m);
	free(location);
	free(loc);
	if (result == NULL && err->kind == FE_NONE)
		floe_err(err, FE_INTERNAL, "out of memory");
	return result;
}

/* Writes "<escaped s>" into a growing buffer. */
static char *json_quoted(const char *s)
{
	json_t *v = json_string(s);
	char *q = v ? json_dumps(v, JSON_ENCODE_ANY) : NULL;
	json_decref(v);
	return q;
}

void table_etag(const char *metadata_location, enum snapshots_mode mode, char *etag, size_t etaglen)
{
	/* The file name is unique per commit: a strong validator. */
	const char *slash = strrchr(metadata_location, '/');
	(void)snprintf(etag, etaglen, "%s%s", slash ? slash + 1 : metadata_location,
		       mode == SNAPSHOTS_REFS ? ";refs" : "");
}

bool table_result_etag(const json_t *result, char *quoted, size_t len)
{
	const char *location = json_string_value(json_object_get(result, "metadata-location"));
	char etag[512];

	quoted[0] = '\0';
	if (location == NULL)
		return false;
	table_etag(location, SNAPSHOTS_ALL, etag, sizeof(etag));
	(void)snprintf(quoted, len, "\"%s\"", etag);
	return true;
}

/* The text that follows the metadata in a LoadTableResult: extra's
 * members and the closing brace (a new string), or NULL. */
static char *load_tail(const json_t *extra)
{
	if (extra == NULL || json_object_size(extra) == 0)
		return strdup(",\"config\":{}}");
	char *t = json_dumps(extra, JSON_COMPACT);
	if (t != NULL)
		t[0] = ','; /* {"a":..} -> ,"a":..} */
	return t;
}

char *table_load(struct store *s, const struct ns_ident *ns, const char *name,
		 enum snapshots_mode mode, bool gzip, const json_t *extra, char *etag,
		 size_t etaglen, size_t *len, bool *gzipped, struct floe_error *err)
{
	struct table_row row;
	struct gzip_part part = { 0 };
	char *out = NULL;
	char *c = NULL;
	bool refs = mode == SNAPSHOTS_REFS;
	bool ok = gzip ? store_table_load_gz(s, ns, name, refs, &row, &part, err)
		       : store_table_load_as(s, ns, name, refs, &row, err);

	*len = 0;
	*gzipped = false;
	if (!ok)
		return tables_word_error(s, ns, name, NULL, false, err), NULL;
	if (row.metadata_location == NULL) {
		/* Not a state floe leaves behind; an edited row must not crash. */
		floe_err(err, FE_INTERNAL, "the table's metadata location is missing");
		goto done;
	}
	table_etag(row.metadata_location, mode, etag, etaglen);
	char *qloc = json_quoted(row.metadata_location);
	if (qloc == NULL) {
		floe_err(err, FE_INTERNAL, "out of memory");
		goto done;
	}
	/* Spliced, not re-encoded: the stored text is already JSON. */
	static const char a[] = "{\"metadata-location\":";
	static const char b[] = ",\"metadata\":";
	c = load_tail(extra);
	size_t cl = c != NULL ? strlen(c) : 0;
	size_t ql = strlen(qloc);
	size_t head_len = sizeof(a) - 1 + ql + sizeof(b) - 1;
	size_t metalen = part.data != NULL ? 0 : row.metadata_len;
	out = c != NULL ? malloc(head_len + metalen + cl + 1) : NULL;
	if (out == NULL) {
		free(qloc);
		floe_err(err, FE_INTERNAL, "out of memory");
		goto done;
	}
	char *p = out;
	memcpy(p, a, sizeof(a) - 1);
	p += sizeof(a) - 1;
	memcpy(p, qloc, ql);
	p += ql;
	memcpy(p, b, sizeof(b) - 1);
	p += sizeof(b) - 1;
	memcpy(p, row.metadata, metalen);
	p += metalen;
	memcpy(p, c, cl + 1);
	free(qloc);
	*len = head_len + metalen + cl;
	if (part.data != NULL) {
		/* The metadata was deflated at commit: only the envelope is
		 * added around it, uncompressed. */
		char *gz = (char *)gzip_wrap(out, head_len, &part, c, cl, len);
		free(out);
		out = gz;
		*gzipped = out != NULL;
		if (out == NULL)
			floe_err(err, FE_INTERNAL, "out of memory");
	}
done:
	free(c);
	gzip_part_clear(&part);
	store_table_row_clear(&row);
	return out;
}

json_t *table_load_metadata(struct store *s, const struct ns_ident *ns, const char *name,
			    char **metadata_location, struct floe_error *err)
{
	struct table_row row;
	json_error_t jerr;
	json_t *m;

	if (!store_table_load(s, ns, name, &row, err))
		return tables_word_error(s, ns, name, NULL, false, err), NULL;
	m = json_loadb(row.metadata, row.metadata_len, 0, &jerr);
	if (m != NULL && metadata_location != NULL) {
		*metadata_location = row.metadata_location;
		row.metadata_location = NULL;
	}
	store_table_row_clear(&row);
	if (m == NULL)
		floe_err(err, FE_INTERNAL, "stored metadata is unreadable");
	return m;
}

json_t *table_register(struct store *s, const struct table_env *env, const struct ns_ident *ns,
		       const json_t *body, struct floe_error *err)
{
	return table_register_with(s, env, ns, body, NULL, err);
}

/* "<verb> table <ns>.<name>[ to <ns2>.<name2>]" into buf, naming a change
 * in a refusal. */
static void change_text(char *buf, size_t len, const char *verb, const struct ns_ident *ns,
			const char *name, const struct ns_ident *to_ns, const char *to)
{
	char *a = ident_ns_display(ns);
	char *b = to_ns != NULL ? ident_ns_display(to_ns) : NULL;

	if (to_ns != NULL)
		(void)snprintf(buf, len, "%s table %s.%s to %s.%s", verb, a ? a : "?", name,
			       b ? b : "?", to);
	else
		(void)snprintf(buf, len, "%s table %s.%s", verb, a ? a : "?", name);
	free(a);
	free(b);
}

/* Register with overwrite over an existing table, with its audit event,
 * inside the caller's transaction. It replaces main (the one policy check
 * of a main move) and may not weaken the table's control, unless reason
 * (the control route) is given. */
static bool register_over(struct store *s, const struct table_env *env, const struct ns_ident *ns,
			  const char *name, const json_t *m, const char *uuid, const char *mloc,
			  const char *text, const char *refs, const char *tloc, const char *reason,
			  struct floe_error *err)
{
	struct store_actor who = audit_actor(env);
	struct effective_control before, after;
	char *set = NULL;
	struct table_row row;
	json_t *old = NULL;
	json_error_t jerr;
	char rule[256];
	char change[1024];
	bool ok = false;

	memset(&row, 0, sizeof(row));
	memset(&before, 0, sizeof(before));
	memset(&after, 0, sizeof(after));
	if (!store_table_load(s, ns, name, &row, err)) {
		tables_word_error(s, ns, name, NULL, false, err);
		goto done;
	}
	old = json_loadb(row.metadata, row.metadata_len, 0, &jerr);
	if (!policy_rule(s, ns, old, rule, sizeof(rule), err) ||
	    !effective_of(s, ns, name, old, &before, err) ||
	    !effective_of(s, ns, name, m, &after, err))
		goto done;
	change_text(change, sizeof(change), "Registering over", ns, name, NULL, NULL);
	if (reason == NULL && (!policy_check_main_move_via(s, ns, name, old, m, "register", err) ||
			       !effective_check(&before, &after, change, "register", err)))
		goto done;
	set = tablemeta_refs_set(old, m);
	if (!store_table_overwrite(s, ns, name, uuid, mloc, text, refs, tloc, &who, set, err)) {
		tables_word_error(s, ns, name, uuid, false, err);
		goto done;
	}
	json_t *details = json_pack("{s:s, s:s*, s:s, s:s, s:s*, s:o*, s:o*, s:s*}",
				    "metadata-location", mloc, "previous-metadata-location",
				    row.metadata_location, "table-uuid", uuid,
				    "previous-table-uuid", row.uuid, "protected-by",
				    rule[0] != '\0' ? rule : NULL, "controls-before",
				    effective_to_json(&before), "controls",
				    effective_to_json(&after), "reason", reason);
	ok = details != NULL &&
	     store_event_insert(s, "table.register-overwrite", &who, ns, name, NULL, details, err);
	if (details == NULL)
		floe_err(err, FE_INTERNAL, "out of memory");
	json_decref(details);
done:
	effective_clear(&before);
	effective_clear(&after);
	free(set);
	json_decref(old);
	store_table_row_clear(&row);
	return ok;
}

/* What table uuid had of the control when the audit log last saw it
 * dropped, into *before (nothing when it never was): a register brings
 * the table back no weaker than it left, just as an undrop does (a table
 * that set floe.wap.required itself, dropped and registered again from a
 * metadata file older than the property, would shed it). A drop that
 * recorded no control cannot be decided: FE_FORBIDDEN naming
 * POST /v1/controls/register, as change. */
static bool dropped_control(struct store *s, const char *uuid, const char *change,
			    struct effective_control *before, struct floe_error *err)
{
	char *recorded = NULL;
	bool found = false;
	json_error_t jerr;

	memset(before, 0, sizeof(*before));
	if (!store_event_dropped_controls(s, uuid, &found, &recorded, err))
		return false;
	if (!found)
		return true;
	json_t *controls = recorded != NULL ? json_loads(recorded, 0, &jerr) : NULL;
	free(recorded);
	bool ok = effective_from_json(controls, before);
	json_decref(controls);
	if (!ok)
		return floe_err(
			err, FE_FORBIDDEN,
			"%s: the audited-publish control it had when dropped is not recorded, so whether this weakens it cannot be decided; only POST /v1/controls/register with a reason may",
			change);
	return true;
}

/* Register as a new table, with its table.registered event, inside the
 * caller's transaction. Metadata whose main has a snapshot moves main the
 * moment it is registered: into a protected scope only through the
 * control route (reason). */
static bool register_new(struct store *s, const struct table_env *env, const struct ns_ident *ns,
			 const char *name, const json_t *m, const char *uuid, const char *mloc,
			 const char *text, const char *refs, const char *tloc, const char *reason,
			 struct floe_error *err)
{
	struct effective_control before, after;
	struct store_actor who = audit_actor(env);
	bool ok = false;

	memset(&before, 0, sizeof(before));
	/* Nothing was at the name, so main arrives; but the table may have
	 * been here or elsewhere before: dropped, its uuid comes back no
	 * weaker than it left (before: its control then, else none). */
	char *shown = ident_ns_display(ns);
	char change[1024];
	(void)snprintf(change, sizeof(change), "Registering table %s.%s, dropped before,",
		       shown ? shown : "?", name);
	free(shown);
	memset(&after, 0, sizeof(after));
	if (!effective_of(s, ns, name, m, &after, err))
		return false;
	if (reason == NULL &&
	    (!dropped_control(s, uuid, change, &before, err) ||
	     !effective_check(&before, &after, change, "register", err) ||
	     !effective_check_main_arrives(&before, &after, name, m, "register", err)))
		goto done;
	char *set = tablemeta_refs_set(NULL, m);
	bool created = store_table_create(s, ns, name, uuid, mloc, text, refs, tloc, &who, set,
					  err);
	free(set);
	if (!created) {
		tables_word_error(s, ns, name, uuid, true, err);
		goto done;
	}
	json_t *details = json_pack("{s:s, s:s, s:o*, s:s*}", "metadata-location", mloc,
				    "table-uuid", uuid, "controls", effective_to_json(&after),
				    "reason", reason);
	ok = details != NULL &&
	     store_event_insert(s, "table.registered", &who, ns, name, NULL, details, err);
	if (details == NULL)
		floe_err(err, FE_INTERNAL, "out of memory");
	json_decref(details);
done:
	effective_clear(&before);
	effective_clear(&after);
	return ok;
}

json_t *table_register_with(struct store *s, const struct table_env *env, const struct ns_ident *ns,
			    const json_t *body, const char *reason, struct floe_error *err)
{
	const json_t *name = json_object_get(body, "name");
	const json_t *mloc = json_object_get(body, "metadata-location");
	const json_t *overwrite = json_object_get(body, "overwrite");
	char *text = NULL;
	size_t len;
	json_t *m = NULL;
	json_error_t jerr;
	json_t *result = NULL;
	json_t *vended = NULL;
	char *key = NULL;

	if (!json_is_string(name))
		return floe_err(err, FE_BAD_REQUEST, "missing required field 'name'"), NULL;
	if (!ident_name_check(json_string_value(name), json_string_length(name), "table name", err))
		return NULL;
	if (!json_is_string(mloc))
		return floe_err(err, FE_BAD_REQUEST, "missing required field 'metadata-location'"),
		       NULL;
	if (overwrite != NULL && !json_is_boolean(overwrite) && !json_is_null(overwrite))
		return floe_err(err, FE_BAD_REQUEST, "field 'overwrite' must be a boolean"), NULL;
	if (!table_location_writable(env, json_string_value(mloc), err))
		return NULL;
	if (!fileio_read(json_string_value(mloc), METADATA_FILE_MAX, &text, &len, err))
		return NULL;
	m = json_loadb(text, len, 0, &jerr);
	const char *uuid = json_string_value(json_object_get(m, "table-uuid"));
	const char *tloc = json_string_value(json_object_get(m, "location"));
	int64_t fv = json_integer_value(json_object_get(m, "format-version"));
	if (m == NULL || !json_is_object(m) || uuid == NULL || tloc == NULL || fv < 1 ||
	    fv > TABLEMETA_MAX_FORMAT_VERSION) {
		floe_err(
			err, FE_BAD_REQUEST,
			"%s is not Iceberg table metadata floe can register (format 1-%d with table-uuid and location)",
			json_string_value(mloc), TABLEMETA_MAX_FORMAT_VERSION);
		goto done;
	}
	/* The stored text is the file's, so loadTable serves the file. */
	bool ok;
	if (!table_location_usable(s, env, ns, json_string_value(name), tloc, uuid, err))
		goto done;
	/* As for a create: vended before anything is stored. */
	if (env->vend != NULL) {
		vended = vend_table(env->vend, s, env->acting, ns, json_string_value(name), tloc,
				    err);
		if (vended == NULL)
			goto done;
	}
	key = location_canonical(tloc, err);
	if (key == NULL || !store_begin(s, err))
		goto done;
	char *refs = table_refs_text(m);
	/* The change feed calls what this transaction does a register. */
	ok = store_feed_operation(s, "register-table", err) &&
	     table_location_claim(s, ns, json_string_value(name), tloc, key, uuid, err);
	if (ok && json_is_true(overwrite)) {
		bool exists = false;
		ok = store_table_exists(s, ns, json_string_value(name), &exists, err);
		if (ok && exists)
			ok = register_over(s, env, ns, json_string_value(name), m, uuid,
					   json_string_value(mloc), text, refs, key, reason, err);
		else if (ok)
			ok = register_new(s, env, ns, json_string_value(name), m, uuid,
					  json_string_value(mloc), text, refs, key, reason, err);
	} else if (ok) {
		ok = register_new(s, env, ns, json_string_value(name), m, uuid,
				  json_string_value(mloc), text, refs, key, reason, err);
	}
	free(refs);
	/* An answer with credentials is replayed without them: the key's
	 * answer is recorded here, in the register's transaction. */
	if (ok && env->idem_key != NULL && json_object_get(vended, "storage-credentials") != NULL)
		ok = idem_record_created(s, env, json_string_value(mloc), m, true, err);
	if (!ok) {
		store_rollback(s);
		goto done;
	}
	if (!store_commit(s, err))
		goto done;
	result = load_result(json_string_value(mloc), m);
	m = NULL;
	if (result != NULL && vended != NULL && json_object_update(result, vended) != 0) {
		json_decref(result);
		result = NULL;
		floe_err(err, FE_INTERNAL, "out of memory");
	}
done:
	json_decref(vended);
	json_decref(m);
	free(text);
	free(key);
	return result;
}

/* After the drop of row (in the drop's transaction): the table's
 * effective control as it was, as JSON (new reference), recorded with
 * the kept row when keep so an undrop can compare. */
static json_t *drop_controls(struct store *s, const struct ns_ident *ns, const char *name,
			     const struct table_row *row, bool keep, struct floe_error *err)
{
	struct effective_control eff;
	json_error_t jerr;
	json_t *m = row->metadata != NULL ? json_loadb(row->metadata, row->metadata_len, 0, &jerr)
					  : NULL;
	json_t *controls = NULL;
	char *text = NULL;

	if (!effective_of(s, ns, name, m, &eff, err))
		goto done;
	controls = effective_to_json(&eff);
	effective_clear(&eff);
	text = controls != NULL ? json_dumps(controls, JSON_COMPACT) : NULL;
	if (text == NULL) {
		floe_err(err, FE_INTERNAL, "out of memory");
		goto fail;
	}
	if (keep && !store_dropped_set_controls(s, row->id, text, err))
		goto fail;
	goto done;
fail:
	json_decref(controls);
	controls = NULL;
done:
	free(text);
	json_decref(m);
	return controls;
}

bool table_drop(struct store *s, const struct table_env *env, const struct ns_ident *ns,
		const char *name, bool purge, struct floe_error *err)
{
	struct table_row row;
	struct store_actor who = audit_actor(env);

	/* The table and its audit event go together, or neither. With purge
	 * the files are detached from the name in the same statement (a
	 * tombstone in purges) and removed by the janitor, so a table
	 * created under this name meanwhile never loses a file. */
	if (!store_begin(s, err))
		return false;
	bool keep = !purge && env->undrop_retention_s > 0;
	if (!store_table_drop(s, ns, name, purge, keep, env->principal, &row, err)) {
		tables_word_error(s, ns, name, NULL, false, err);
		store_rollback(s);
		return false;
	}
	json_t *controls = drop_controls(s, ns, name, &row, keep, err);
	json_t *details = controls == NULL
				  ? NULL
				  : json_pack("{s:s, s:s?, s:b, s:b, s:o}", "table-uuid", row.uuid,
					      "metadata-location", row.metadata_location, "purge",
					      purge, "kept-for-undrop", keep, "controls", controls);
	if (controls != NULL && details == NULL)
		floe_err(err, FE_INTERNAL, "out of memory");
	bool logged = details != NULL &&
		      store_event_insert(s, "table.dropped", &who, ns, name, NULL, details, err) &&
		      idem_record(s, env, 204, NULL, err);
	json_decref(details);
	if (!logged || !store_commit(s, err)) {
		if (err->kind != FE_COMMIT_STATE_UNKNOWN)
			store_rollback(s);
		store_table_row_clear(&row);
		return false;
	}
	log_info("table", "dropped %s (%s)%s rid=%s", name, row.uuid,
		 purge ? "; its files wait for the janitor's purge" : "", env->request_id);
	store_table_row_clear(&row);
	return true;
}

bool table_rename(struct store *s, const struct table_env *env, const json_t *body,
		  const char *reason, struct floe_error *err)
{
	struct table_ident from, to;
	struct table_row row;
	struct effective_control before, after;
	json_t *m = NULL;
	json_error_t jerr;
	char change[1024];
	struct store_actor who = audit_actor(env);
	bool ok = false;

	memset(&row, 0, sizeof(row));
	memset(&before, 0, sizeof(before));
	memset(&after, 0, sizeof(after));
	if (!table_ident_from_json(json_object_get(body, "source"), "source", &from, err))
		return false;
	if (!table_ident_from_json(json_object_get(body, "destination"), "destination", &to, err)) {
		table_ident_clear(&from);
		return false;
	}
	if (!store_begin(s, err))
		goto done;
	if (!store_table_load(s, &from.ns, from.name, &row, err)) {
		tables_word_error(s, &from.ns, from.name, NULL, false, err);
		goto fail;
	}
	m = json_loadb(row.metadata, row.metadata_len, 0, &jerr);
	/* The table's own control properties travel with it; a namespace's,
	 * and the hooks scoped to its old name, stay behind. */
	if (!effective_of(s, &from.ns, from.name, m, &before, err) ||
	    !effective_of(s, &to.ns, to.name, m, &after, err))
		goto fail;
	change_text(change, sizeof(change), "Renaming", &from.ns, from.name, &to.ns, to.name);
	if (reason == NULL &&
	    (!effective_check(&before, &after, change, "rename", err) ||
	     !effective_check_main_arrives(&before, &after, to.name, m, "rename", err)))
		goto fail;
	if (!store_table_rename(s, &from.ns, from.name, &to.ns, to.name, err)) {
		/* Missing is the source table; missing or taken, the destination. */
		if (err->kind == FE_NO_SUCH_TABLE)
			tables_word_error(s, &from.ns, from.name, NULL, false, err);
		else if (err->kind == FE_ALREADY_EXISTS) {
			/* Asked outside the transaction the refusal ended. */
			store_rollback(s);
			wording_rename_taken(s, false, &from.ns, from.name, &to.ns, to.name, err);
			goto done;
		} else
			tables_word_error(s, &to.ns, to.name, NULL, false, err);
		goto fail;
	}
	json_t *details = json_pack("{s:s, s:{s:o, s:s}, s:o*, s:o*, s:s*}", "table-uuid", row.uuid,
				    "to", "namespace", ident_ns_to_json(&to.ns), "name", to.name,
				    "controls-before", effective_to_json(&before), "controls",
				    effective_to_json(&after), "reason", reason);
	bool logged = details != NULL && store_event_insert(s, "table.renamed", &who, &from.ns,
							    from.name, NULL, details, err);
	if (details == NULL)
		floe_err(err, FE_INTERNAL, "out of memory");
	json_decref(details);
	if (!logged || !idem_record(s, env, 204, NULL, err))
		goto fail;
	ok = store_commit(s, err);
	if (ok)
		goto done;
fail:
	if (err->kind != FE_COMMIT_STATE_UNKNOWN)
		store_rollback(s);
done:
	effective_clear(&before);
	effective_clear(&after);
	json_decref(m);
	store_table_row_clear(&row);
	table_ident_clear(&from);
	table_ident_clear(&to);
	return ok;
}
