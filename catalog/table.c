/*
 * table.c - table operations. The commit follows DESIGN.md "The commit":
 * read, check requirements, apply updates, write the new metadata file,
 * compare-and-swap the pointer; a lost swap goes round again against the
 * new base, so a commit whose requirements still hold lands.
 */
#include "table.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "fileio.h"
#include "log.h"
#include "store.h"
#include "tablemeta.h"
#include "uuid.h"

#define COMMIT_MAX_ATTEMPTS 40
#define METADATA_FILE_MAX (256u * 1024 * 1024)

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
		for (; *p; p++) {
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

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Sleeps a random time that grows with the attempt, so writers that
 * collided spread out. */
static void backoff(int attempt)
{
	unsigned int r = 0;
	unsigned int cap_us = 500u << (attempt < 6 ? attempt : 6); /* to 32 ms */
	if (getrandom(&r, sizeof(r), 0) != (ssize_t)sizeof(r))
		r = (unsigned int)attempt * 7919u;
	struct timespec ts = { 0, (long)(r % cap_us) * 1000L };
	nanosleep(&ts, NULL);
}

void table_ident_clear(struct table_ident *t)
{
	ident_ns_clear(&t->ns);
	free(t->name);
	t->name = NULL;
}

bool table_ident_from_json(const json_t *v, const char *field,
			   struct table_ident *out, struct floe_error *err)
{
	char what[64];
	const json_t *name = json_object_get(v, "name");

	memset(out, 0, sizeof(*out));
	if (!json_is_object(v))
		return floe_err(err, FE_BAD_REQUEST,
				"field '%s' must be an object with 'namespace' and 'name'",
				field);
	snprintf(what, sizeof(what), "%s.namespace", field);
	if (!ident_ns_from_json(json_object_get(v, "namespace"), what, &out->ns, err))
		return false;
	if (!json_is_string(name)) {
		ident_ns_clear(&out->ns);
		return floe_err(err, FE_BAD_REQUEST, "field '%s.name' must be a string",
				field);
	}
	if (!ident_name_check(json_string_value(name), json_string_length(name),
			      "table name", err)) {
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

/* Appends name to buf as one path segment: '/', '\', '%' and the whole
 * names "." and ".." are percent-escaped. */
static void append_segment(char *buf, size_t cap, size_t *n, const char *name)
{
	bool dots = strcmp(name, ".") == 0 || strcmp(name, "..") == 0;

	if (*n + 1 < cap)
		buf[(*n)++] = '/';
	for (const char *p = name; *p; p++) {
		if (*p == '/' || *p == '\\' || *p == '%' || (dots && *p == '.')) {
			if (*n + 3 < cap) {
				snprintf(buf + *n, 4, "%%%02X", (unsigned char)*p);
				*n += 3;
			}
		} else if (*n + 1 < cap) {
			buf[(*n)++] = *p;
		}
	}
	buf[*n] = '\0';
}

char *table_default_location(const struct table_env *env,
			     const struct ns_ident *ns, const char *name)
{
	size_t cap = strlen(env->warehouse) + 4;
	size_t n;
	char *buf;

	for (size_t i = 0; i < ns->nlevels; i++)
		cap += strlen(ns->levels[i]) * 3 + 1;
	cap += strlen(name) * 3 + 1;
	buf = malloc(cap);
	if (buf == NULL)
		return NULL;
	n = (size_t)snprintf(buf, cap, "%s", env->warehouse);
	for (size_t i = 0; i < ns->nlevels; i++)
		append_segment(buf, cap, &n, ns->levels[i]);
	append_segment(buf, cap, &n, name);
	return buf;
}

/* floe writes files only inside its warehouse. */
static bool location_writable(const struct table_env *env, const char *location,
			      struct floe_error *err)
{
	char *path = fileio_local_path(location, err);
	size_t wl = strlen(env->warehouse_path);
	bool ok;

	if (path == NULL)
		return false;
	ok = strncmp(path, env->warehouse_path, wl) == 0 && path[wl] == '/' &&
	     path[wl + 1] != '\0';
	if (!ok) {
		free(path);
		return floe_err(err, FE_BAD_REQUEST,
				"table location %s is outside the warehouse %s",
				location, env->warehouse);
	}
	ok = fileio_location_fits(path, err);
	free(path);
	return ok;
}

/* A table location floe may use: inside the warehouse, and neither
 * holding nor held by another table's location (a purge of one would
 * take the other's files). uuid: the table's own, or NULL. */
static bool location_usable(struct store *s, const struct table_env *env,
			    const char *location, const char *uuid,
			    struct floe_error *err)
{
	char *other = NULL;

	if (!location_writable(env, location, err))
		return false;
	if (!store_table_location_clash(s, location, uuid, &other, err))
		return false;
	if (other != NULL) {
		floe_err(err, FE_BAD_REQUEST,
			 "table location %s overlaps the location of table %s", location,
			 other);
		free(other);
		return false;
	}
	return true;
}

static json_t *load_result(const char *location, json_t *metadata)
{
	return json_pack("{s:s?, s:o, s:{}}", "metadata-location", location,
			 "metadata", metadata, "config");
}

static char *dump(const json_t *m, size_t *len, struct floe_error *err)
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
static char *refs_text(const json_t *m)
{
	json_t *trimmed = tablemeta_only_ref_snapshots(m);
	char *text = NULL;

	if (trimmed != NULL &&
	    json_array_size(json_object_get(trimmed, "snapshots")) !=
		    json_array_size(json_object_get(m, "snapshots")))
		text = json_dumps(trimmed, JSON_COMPACT);
	json_decref(trimmed);
	return text;
}

/* Writes metadata m as file number `version` of the table and creates its
 * row; the file is removed again if the row cannot be created. */
static bool create_row(struct store *s, const struct table_env *env,
		       const struct ns_ident *ns, const char *name, json_t *m,
		       char **location_out, struct floe_error *err)
{
	size_t len;
	char *text = dump(m, &len, err);
	char *loc = NULL;
	const char *table_loc = json_string_value(json_object_get(m, "location"));

	*location_out = NULL;
	if (text == NULL)
		return false;
	const char *uuid = json_string_value(json_object_get(m, "table-uuid"));
	if (!location_usable(s, env, table_loc, uuid, err)) {
		/* A clash with a table of the same name that was created
		 * meanwhile is that table existing: 409, not 400. */
		bool exists = false;
		struct floe_error ignored;
		if (err->kind == FE_BAD_REQUEST &&
		    store_table_exists(s, ns, name, &exists, &ignored) && exists) {
			char *shown = ident_ns_display(ns);
			floe_err(err, FE_ALREADY_EXISTS, "table already exists: %s.%s",
				 shown ? shown : "?", name);
			free(shown);
		}
		free(text);
		return false;
	}
	if (!fileio_write_metadata(table_loc, 0, text, len, &loc, err)) {
		free(text);
		return false;
	}
	char *refs = refs_text(m);
	if (!store_table_create(s, ns, name, uuid, loc, text, refs, table_loc,
				env->request_id, err)) {
		fileio_remove(loc);
		free(loc);
		free(text);
		free(refs);
		return false;
	}
	free(text);
	free(refs);
	*location_out = loc;
	return true;
}

json_t *table_create(struct store *s, const struct table_env *env,
		     const struct ns_ident *ns, const json_t *body,
		     struct floe_error *err)
{
	const json_t *name = json_object_get(body, "name");
	const json_t *stage = json_object_get(body, "stage-create");
	char uuid[UUID_STR_LEN];
	char *location = NULL;
	char *loc = NULL;
	json_t *m = NULL;
	json_t *result = NULL;
	bool exists = false;

	if (!json_is_string(name))
		return floe_err(err, FE_BAD_REQUEST, "missing required field 'name'"), NULL;
	if (!ident_name_check(json_string_value(name), json_string_length(name),
			      "table name", err))
		return NULL;
	if (stage != NULL && !json_is_boolean(stage) && !json_is_null(stage))
		return floe_err(err, FE_BAD_REQUEST, "field 'stage-create' must be a boolean"), NULL;
	if (!uuid_v4(uuid))
		return floe_err(err, FE_INTERNAL, "no randomness for a table uuid"), NULL;
	location = table_default_location(env, ns, json_string_value(name));
	if (location == NULL)
		return floe_err(err, FE_INTERNAL, "out of memory"), NULL;
	m = tablemeta_create(body, location, uuid, now_ms(), err);
	if (m == NULL)
		goto done;
	/* The default location may hold a renamed table's files: then this
	 * table gets a location of its own next to it. */
	const json_t *given = json_object_get(body, "location");
	if (given == NULL || json_is_null(given)) {
		char *other = NULL;
		if (!store_table_location_clash(s, location, NULL, &other, err))
			goto done;
		if (other != NULL) {
			size_t len = strlen(location) + UUID_STR_LEN + 2;
			char *unique = malloc(len);
			free(other);
			if (unique == NULL) {
				floe_err(err, FE_INTERNAL, "out of memory");
				goto done;
			}
			snprintf(unique, len, "%s-%s", location, uuid);
			json_object_set_new(m, "location", json_string(unique));
			free(unique);
		}
	}
	if (!location_writable(env, json_string_value(json_object_get(m, "location")), err))
		goto done;

	/* The namespace first: no file is written for a table that cannot
	 * be created. */
	bool ns_exists = false;
	if (!store_ns_exists(s, ns, &ns_exists, err))
		goto done;
	if (!ns_exists) {
		char *shown = ident_ns_display(ns);
		floe_err(err, FE_NO_SUCH_NAMESPACE, "namespace does not exist: %s",
			 shown ? shown : "?");
		free(shown);
		goto done;
	}
	if (json_is_true(stage)) {
		/* Nothing is stored; the client commits later with
		 * assert-create. The name must be free now, or the client
		 * learns it only at commit time. */
		if (!store_table_exists(s, ns, json_string_value(name), &exists, err))
			goto done;
		if (exists) {
			floe_err(err, FE_ALREADY_EXISTS, "table already exists: %s",
				 json_string_value(name));
			goto done;
		}
		result = load_result(NULL, m);
		m = NULL;
		goto done;
	}
	if (!create_row(s, env, ns, json_string_value(name), m, &loc, err))
		goto done;
	log_info("table", "created %s (%s) rid=%s", json_string_value(name), uuid,
		 env->request_id);
	result = load_result(loc, m);
	m = NULL;
done:
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

char *table_load(struct store *s, const struct ns_ident *ns, const char *name,
		 enum snapshots_mode mode, char *etag, size_t etaglen,
		 size_t *len, struct floe_error *err)
{
	struct table_row row;
	char *out = NULL;
	char *meta = NULL;
	size_t metalen;

	if (!store_table_load_as(s, ns, name, mode == SNAPSHOTS_REFS, &row, err))
		return NULL;
	/* The file name is unique per commit: a strong validator. */
	const char *slash = strrchr(row.metadata_location, '/');
	snprintf(etag, etaglen, "%s%s", slash ? slash + 1 : row.metadata_location,
		 mode == SNAPSHOTS_REFS ? ";refs" : "");
	meta = row.metadata;
	metalen = row.metadata_len;
	row.metadata = NULL;
	char *qloc = json_quoted(row.metadata_location);
	if (qloc == NULL) {
		floe_err(err, FE_INTERNAL, "out of memory");
		goto done;
	}
	/* Spliced, not re-encoded: the stored text is already JSON. */
	static const char a[] = "{\"metadata-location\":";
	static const char b[] = ",\"metadata\":";
	static const char c[] = ",\"config\":{}}";
	size_t ql = strlen(qloc);
	*len = sizeof(a) - 1 + ql + sizeof(b) - 1 + metalen + sizeof(c) - 1;
	out = malloc(*len + 1);
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
	memcpy(p, meta, metalen);
	p += metalen;
	memcpy(p, c, sizeof(c));
	free(qloc);
done:
	free(meta);
	store_table_row_clear(&row);
	return out;
}

json_t *table_load_metadata(struct store *s, const struct ns_ident *ns,
			    const char *name, char **metadata_location,
			    struct floe_error *err)
{
	struct table_row row;
	json_error_t jerr;
	json_t *m;

	if (!store_table_load(s, ns, name, &row, err))
		return NULL;
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

/* True when updates holds an action that creates a table (assert-create
 * among the requirements). */
static bool has_assert_create(const json_t *requirements)
{
	size_t i;
	json_t *r;
	json_array_foreach(requirements, i, r) {
		const char *t = json_string_value(json_object_get(r, "type"));
		if (t != NULL && strcmp(t, "assert-create") == 0)
			return true;
	}
	return false;
}

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
			return floe_err(err, FE_BAD_REQUEST,
					"a create commit (assert-create) takes no other requirement, got %s",
					t ? t : "(no type)"), NULL;
	}
	if (!json_is_array(updates))
		return floe_err(err, FE_BAD_REQUEST, "'updates' must be an array"), NULL;
	bool exists = false;
	if (!store_table_exists(s, ns, name, &exists, err))
		return NULL;
	if (exists)
		return floe_err(err, FE_COMMIT_FAILED,
				"Requirement failed: table already exists (assert-create)"), NULL;
	/* A uuid of our own unless the client assigns one. */
	if (!uuid_v4(uuid))
		return floe_err(err, FE_INTERNAL, "no randomness for a table uuid"), NULL;
	json_t *m = tablemeta_apply_create(updates, uuid, now_ms(), err);
	if (m == NULL)
		return NULL;
	if (!create_row(s, env, ns, name, m, &loc, err)) {
		json_decref(m);
		return NULL;
	}
	log_info("table", "created %s by a staged commit rid=%s", name, env->request_id);
	json_t *result = json_pack("{s:s, s:o}", "metadata-location", loc, "metadata", m);
	free(loc);
	return result;
}

/*
 * One round of a commit on an existing table: *lost tells the caller to
 * go round again (another writer won the swap). On success *result gets
 * the answer. in_tx: inside a multi-table transaction, where a lost swap
 * aborts the whole transaction.
 */
static bool property_true(const json_t *m, const char *key)
{
	const char *v = json_string_value(json_object_get(json_object_get(m, "properties"),
							 key));
	return v != NULL && strcasecmp(v, "true") == 0;
}

/* Enforced publish: main may move only through a WAP publish when the
 * table or one of its namespaces sets floe.wap.required. */
static bool main_move_allowed(struct store *s, const struct ns_ident *ns,
			      const char *name, const json_t *base,
			      const json_t *m, struct floe_error *err)
{
	char *where = NULL;

	if (tablemeta_current_snapshot(base) == tablemeta_current_snapshot(m))
		return true;
	if (property_true(base, "floe.wap.required") ||
	    property_true(m, "floe.wap.required"))
		return floe_err(err, FE_FORBIDDEN,
				"main of table %s can only move through a write-audit-publish run: the table sets floe.wap.required=true",
				name);
	if (!store_ns_wap_required(s, ns, &where, err))
		return false;
	if (where != NULL) {
		floe_err(err, FE_FORBIDDEN,
			 "main of table %s can only move through a write-audit-publish run: namespace %s sets floe.wap.required=true",
			 name, where);
		free(where);
		return false;
	}
	return true;
}

static bool commit_round(struct store *s, const struct table_env *env,
			 const struct ns_ident *ns, const char *name,
			 const json_t *requirements, const json_t *updates,
			 bool allow_main_move, json_t **result, char **written,
			 bool *lost, struct floe_error *err)
{
	struct table_row row;
	json_t *base = NULL;
	json_t *m = NULL;
	char *text = NULL;
	char *refs = NULL;
	char *loc = NULL;
	json_error_t jerr;
	bool changed = false;
	bool won = false;
	bool ok = false;
	size_t len;

	*lost = false;
	*result = NULL;
	if (written != NULL)
		*written = NULL;
	if (!store_table_load(s, ns, name, &row, err))
		return false;
	base = json_loadb(row.metadata, row.metadata_len, 0, &jerr);
	if (base == NULL) {
		floe_err(err, FE_INTERNAL, "stored metadata is unreadable");
		goto done;
	}
	if (!tablemeta_check_requirements(base, requirements, err))
		goto done;
	m = tablemeta_apply(base, row.metadata_location, updates, now_ms(), &changed, err);
	if (m == NULL)
		goto done;
	if (!changed) {
		*result = json_pack("{s:s, s:O}", "metadata-location",
				    row.metadata_location, "metadata", base);
		ok = *result != NULL;
		goto done;
	}
	if (!allow_main_move && !main_move_allowed(s, ns, name, base, m, err))
		goto done;
	const char *table_loc = json_string_value(json_object_get(m, "location"));
	const char *base_loc = json_string_value(json_object_get(base, "location"));
	if (base_loc == NULL || table_loc == NULL || strcmp(base_loc, table_loc) != 0) {
		if (!location_usable(s, env, table_loc, row.uuid, err))
			goto done;
	}
	text = dump(m, &len, err);
	if (text == NULL)
		goto done;
	if (!fileio_write_metadata(table_loc, row.version, text, len, &loc, err))
		goto done;
	refs = refs_text(m);
	if (!store_table_cas(s, row.id, row.version, loc, text, refs, table_loc,
			     row.metadata_location, env->request_id, &won, err)) {
		if (err->kind != FE_COMMIT_STATE_UNKNOWN)
			fileio_remove(loc);
		goto done;
	}
	if (!won) {
		/* Never referenced: an orphan unless removed now. */
		fileio_remove(loc);
		*lost = true;
		goto done;
	}
	*result = json_pack("{s:s, s:o}", "metadata-location", loc, "metadata", m);
	m = NULL;
	if (written != NULL) {
		*written = loc;
		loc = NULL;
	}
	ok = *result != NULL;
done:
	store_table_row_clear(&row);
	json_decref(base);
	json_decref(m);
	free(text);
	free(refs);
	free(loc);
	return ok;
}

json_t *table_commit(struct store *s, const struct table_env *env,
		     const struct ns_ident *ns, const char *name,
		     const json_t *body, struct floe_error *err)
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
	if (requirements != NULL && has_assert_create(requirements))
		return commit_create(s, env, ns, name, requirements, updates, err);
	return table_commit_changes(s, env, ns, name, requirements, updates, false, err);
}

json_t *table_commit_changes(struct store *s, const struct table_env *env,
			     const struct ns_ident *ns, const char *name,
			     const json_t *requirements, const json_t *updates,
			     bool allow_main_move, struct floe_error *err)
{
	return table_commit_with(s, env, ns, name, requirements, updates, allow_main_move,
				 NULL, NULL, err);
}

/* One attempt with `also` in the same database transaction as the swap. */
static bool commit_round_with(struct store *s, const struct table_env *env,
			      const struct ns_ident *ns, const char *name,
			      const json_t *requirements, const json_t *updates,
			      bool allow_main_move, table_commit_also also, void *ctx,
			      json_t **result, bool *lost, struct floe_error *err)
{
	char *written = NULL;

	*result = NULL;
	if (also == NULL)
		return commit_round(s, env, ns, name, requirements, updates, allow_main_move,
				    result, NULL, lost, err);
	if (!store_begin(s, err))
		return false;
	bool ok = commit_round(s, env, ns, name, requirements, updates, allow_main_move,
			       result, &written, lost, err) &&
		  also(s, ctx, *result, err) && store_commit(s, err);
	if (ok) {
		free(written);
		return true;
	}
	if (err->kind != FE_COMMIT_STATE_UNKNOWN) {
		store_rollback(s);
		if (written != NULL)
			fileio_remove(written);
	}
	free(written);
	json_decref(*result);
	*result = NULL;
	return false;
}

json_t *table_commit_with(struct store *s, const struct table_env *env,
			  const struct ns_ident *ns, const char *name,
			  const json_t *requirements, const json_t *updates,
			  bool allow_main_move, table_commit_also also, void *ctx,
			  struct floe_error *err)
{
	json_t *result = NULL;
	bool lost = false;
	unsigned stripe = stripe_of(ns, name);
	for (int attempt = 0; attempt < COMMIT_MAX_ATTEMPTS; attempt++) {
		if (attempt > 0)
			backoff(attempt);
		stripe_lock(env, stripe);
		bool ok = commit_round_with(s, env, ns, name, requirements, updates,
					    allow_main_move, also, ctx, &result, &lost, err);
		stripe_unlock(env, stripe);
		if (ok)
			return result;
		if (!lost)
			return NULL;
		log_debug("table", "commit to %s lost a race (attempt %d); retrying rid=%s",
			  name, attempt + 1, env->request_id);
	}
	log_warn("table", "commit to %s gave up after %d lost races rid=%s", name,
		 COMMIT_MAX_ATTEMPTS, env->request_id);
	return floe_err(err, FE_COMMIT_FAILED,
			"the table changed under %d attempts to commit; retry", COMMIT_MAX_ATTEMPTS),
	       NULL;
}

static bool transaction_round(struct store *s, const struct table_env *env,
			      const json_t *changes, struct table_ident *ids,
			      char **written, size_t n, bool *lost,
			      struct floe_error *err);

bool table_commit_transaction(struct store *s, const struct table_env *env,
			      const json_t *body, struct floe_error *err)
{
	const json_t *changes = json_object_get(body, "table-changes");
	size_t n, i;
	json_t *c;

	if (!json_is_array(changes) || json_array_size(changes) == 0)
		return floe_err(err, FE_BAD_REQUEST,
				"'table-changes' must be a non-empty array");
	n = json_array_size(changes);
	struct table_ident *ids = calloc(n, sizeof(*ids));
	char **written = calloc(n, sizeof(*written));
	json_t *seen = json_object(); /* identifier key -> true */
	bool ok = false;
	if (ids == NULL || written == NULL || seen == NULL) {
		free(ids);
		free(written);
		json_decref(seen);
		return floe_err(err, FE_INTERNAL, "out of memory");
	}
	json_array_foreach(changes, i, c) {
		if (!table_ident_from_json(json_object_get(c, "identifier"),
					   "identifier", &ids[i], err))
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
		if (r != NULL && has_assert_create(r)) {
			floe_err(err, FE_BAD_REQUEST,
				 "a transaction cannot create tables (assert-create)");
			goto done;
		}
		char *key = ident_table_key(&ids[i].ns, ids[i].name);
		bool twice = key != NULL && json_object_get(seen, key) != NULL;
		if (key == NULL || (!twice && json_object_set_new(seen, key, json_true()) != 0)) {
			free(key);
			floe_err(err, FE_INTERNAL, "out of memory");
			goto done;
		}
		free(key);
		if (twice) {
			floe_err(err, FE_BAD_REQUEST,
				 "table %s appears twice in one transaction", ids[i].name);
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
			backoff(attempt);
		for (unsigned k = 0; k < COMMIT_LOCK_STRIPES; k++)
			if (used[k])
				stripe_lock(env, k);
		bool tx_ok = transaction_round(s, env, changes, ids, written, n, &lost, err);
		for (unsigned k = COMMIT_LOCK_STRIPES; k-- > 0;)
			if (used[k])
				stripe_unlock(env, k);
		if (tx_ok) {
			ok = true;
			goto done;
		}
		if (err->kind == FE_COMMIT_STATE_UNKNOWN)
			goto keep_files;
		if (!lost)
			goto done;
	}
	floe_err(err, FE_COMMIT_FAILED,
		 "the tables changed under %d attempts to commit; retry", COMMIT_MAX_ATTEMPTS);
	goto done;
keep_files:
	log_error("table", "transaction outcome unknown rid=%s", env->request_id);
done:
	for (i = 0; i < n; i++) {
		table_ident_clear(&ids[i]);
		free(written[i]);
	}
	free(ids);
	free(written);
	json_decref(seen);
	return ok;
}

/* One attempt at a transaction: all rounds inside BEGIN ... COMMIT. On
 * any failure the files written are removed (unless the outcome is
 * unknown) and *lost tells whether another attempt may succeed. */
static bool transaction_round(struct store *s, const struct table_env *env,
			      const json_t *changes, struct table_ident *ids,
			      char **written, size_t n, bool *lost,
			      struct floe_error *err)
{
	size_t i;

	*lost = false;
	if (!store_begin(s, err))
		return false;
	for (i = 0; i < n; i++) {
		json_t *result = NULL;
		const json_t *c = json_array_get(changes, i);
		const json_t *r = json_object_get(c, "requirements");
		bool round_ok = commit_round(s, env, &ids[i].ns, ids[i].name,
					     json_is_array(r) ? r : NULL,
					     json_object_get(c, "updates"), false, &result,
					     &written[i], lost, err);
		json_decref(result);
		if (!round_ok)
			break;
	}
	if (i == n) {
		if (store_commit(s, err))
			return true;
		if (err->kind == FE_COMMIT_STATE_UNKNOWN)
			return false;
	} else {
		store_rollback(s);
	}
	for (size_t k = 0; k < n; k++) {
		if (written[k] != NULL)
			fileio_remove(written[k]);
		free(written[k]);
		written[k] = NULL;
	}
	return false;
}

json_t *table_register(struct store *s, const struct table_env *env,
		       const struct ns_ident *ns, const json_t *body,
		       struct floe_error *err)
{
	const json_t *name = json_object_get(body, "name");
	const json_t *mloc = json_object_get(body, "metadata-location");
	const json_t *overwrite = json_object_get(body, "overwrite");
	char *text = NULL;
	size_t len;
	json_t *m = NULL;
	json_error_t jerr;
	json_t *result = NULL;

	if (!json_is_string(name))
		return floe_err(err, FE_BAD_REQUEST, "missing required field 'name'"), NULL;
	if (!ident_name_check(json_string_value(name), json_string_length(name),
			      "table name", err))
		return NULL;
	if (!json_is_string(mloc))
		return floe_err(err, FE_BAD_REQUEST,
				"missing required field 'metadata-location'"), NULL;
	if (overwrite != NULL && !json_is_boolean(overwrite) && !json_is_null(overwrite))
		return floe_err(err, FE_BAD_REQUEST, "field 'overwrite' must be a boolean"), NULL;
	if (!location_writable(env, json_string_value(mloc), err))
		return NULL;
	if (!fileio_read(json_string_value(mloc), METADATA_FILE_MAX, &text, &len, err))
		return NULL;
	m = json_loadb(text, len, 0, &jerr);
	const char *uuid = json_string_value(json_object_get(m, "table-uuid"));
	const char *tloc = json_string_value(json_object_get(m, "location"));
	int64_t fv = json_integer_value(json_object_get(m, "format-version"));
	if (m == NULL || !json_is_object(m) || uuid == NULL || tloc == NULL ||
	    fv < 1 || fv > TABLEMETA_MAX_FORMAT_VERSION) {
		floe_err(err, FE_BAD_REQUEST,
			 "%s is not Iceberg table metadata floe can register (format 1-%d with table-uuid and location)",
			 json_string_value(mloc), TABLEMETA_MAX_FORMAT_VERSION);
		goto done;
	}
	/* The stored text is the file's, so loadTable serves the file. */
	bool ok;
	if (!location_usable(s, env, tloc, uuid, err))
		goto done;
	char *refs = refs_text(m);
	if (json_is_true(overwrite)) {
		bool exists = false;
		ok = store_table_exists(s, ns, json_string_value(name), &exists, err);
		if (ok && exists)
			ok = store_table_overwrite(s, ns, json_string_value(name), uuid,
						   json_string_value(mloc), text, refs, tloc,
						   env->request_id, err);
		else if (ok)
			ok = store_table_create(s, ns, json_string_value(name), uuid,
						json_string_value(mloc), text, refs, tloc,
						env->request_id, err);
	} else {
		ok = store_table_create(s, ns, json_string_value(name), uuid,
					json_string_value(mloc), text, refs, tloc,
					env->request_id, err);
	}
	free(refs);
	if (!ok)
		goto done;
	result = load_result(json_string_value(mloc), m);
	m = NULL;
done:
	json_decref(m);
	free(text);
	return result;
}

bool table_drop(struct store *s, const struct table_env *env,
		const struct ns_ident *ns, const char *name, bool purge,
		struct floe_error *err)
{
	struct table_row row;
	json_error_t jerr;

	if (!store_table_drop(s, ns, name, &row, err))
		return false;
	log_info("table", "dropped %s (%s)%s rid=%s", name, row.uuid,
		 purge ? " with purge" : "", env->request_id);
	if (purge) {
		json_t *m = json_loadb(row.metadata, row.metadata_len, 0, &jerr);
		const char *loc = json_string_value(json_object_get(m, "location"));
		long removed = 0;
		struct floe_error perr;
		/* The table is gone either way; a failed purge is logged. */
		char *other = NULL;
		if (loc != NULL && store_table_location_clash(s, loc, NULL, &other, &perr) &&
		    other != NULL) {
			log_warn("table", "purge of %s skipped: table %s lives there too rid=%s",
				 loc, other, env->request_id);
			free(other);
		} else if (loc != NULL &&
			   !fileio_purge(loc, env->warehouse_path, &removed, &perr))
			log_error("table", "purge of %s failed: %s rid=%s", loc, perr.message,
				  env->request_id);
		else
			log_info("table", "purged %ld files of %s rid=%s", removed,
				 loc ? loc : "?", env->request_id);
		json_decref(m);
	}
	store_table_row_clear(&row);
	return true;
}

bool table_rename(struct store *s, const json_t *body, struct floe_error *err)
{
	struct table_ident from, to;
	bool ok = false;

	if (!table_ident_from_json(json_object_get(body, "source"), "source", &from, err))
		return false;
	if (!table_ident_from_json(json_object_get(body, "destination"), "destination",
				   &to, err)) {
		table_ident_clear(&from);
		return false;
	}
	ok = store_table_rename(s, &from.ns, from.name, &to.ns, to.name, err);
	table_ident_clear(&from);
	table_ident_clear(&to);
	return ok;
}
