/*
 * fake_store.c - the store functions catalog/ calls, over one in-memory
 * state (a JSON value): tables with their version and commit log, WAP
 * runs, hooks and audit events. A transaction is a copy of the state taken
 * at BEGIN and put back on ROLLBACK (or when its COMMIT does not land).
 * Every call can be scripted to fail (fakes.h).
 */
#include "fakes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gzip.h"
#include "txguard.h"

struct store {
	int unused;
};

struct store_pool {
	int unused;
};

static struct store the_store;
static struct store_pool the_pool;

/* {"tables": {key: {"id", "uuid", "loc", "meta", "version", "tloc"}},
 *  "log": [[uuid, version, loc]], "runs": {id: run}, "events": [name],
 *  "actors": [{"fn", "what", "principal", "client-id", "refs"}]} */
static json_t *state;
static json_t *tx; /* the state at BEGIN, NULL outside a transaction */
static json_t *hooks;
static int cas_lose_from, cas_lose_to; /* call numbers [from, to) */
static int idem_taken;
static bool away;
static bool pending;
static long long next_id;
static int other_files;

void fake_store_reset(void)
{
	json_decref(state);
	if (tx != NULL)
		txguard_leave();
	json_decref(tx);
	json_decref(hooks);
	state = json_pack("{s:{}, s:[], s:{}, s:[], s:[]}", "tables", "log", "runs", "events",
			  "actors");
	tx = NULL;
	hooks = json_array();
	cas_lose_from = cas_lose_to = 0;
	idem_taken = 0;
	away = false;
	pending = false;
	next_id = 1;
	other_files = 0;
}

json_t *fake_store_state(void)
{
	return state;
}

struct store *fake_store(void)
{
	return &the_store;
}

struct store_pool *fake_store_pool(void)
{
	return &the_pool;
}

/* Notes who a write of fn (about what) was recorded as. */
static void note_actor(const char *fn, const char *what, const struct store_actor *who,
		       const char *refs)
{
	json_array_append_new(json_object_get(state, "actors"),
			      json_pack("{s:s, s:s, s:s?, s:s?, s:s?}", "fn", fn, "what", what,
					"principal", who ? who->principal : NULL, "client-id",
					who ? who->client_id : NULL, "refs", refs));
}

json_t *fake_store_actors(const char *fn)
{
	json_t *out = json_array();
	size_t i;
	json_t *a;

	json_array_foreach(json_object_get(state, "actors"), i, a) {
		if (strcmp(json_string_value(json_object_get(a, "fn")), fn) == 0)
			json_array_append(out, a);
	}
	return out;
}

static void key_of(const struct ns_ident *ns, const char *name, char *key, size_t len)
{
	size_t n = 0;

	key[0] = '\0';
	for (size_t i = 0; i < ns->nlevels; i++)
		n += (size_t)snprintf(key + n, n < len ? len - n : 0, "%s.", ns->levels[i]);
	snprintf(key + (n < len ? n : len - 1), n < len ? len - n : 1, "%s", name);
}

static json_t *table_in(json_t *st, const char *key)
{
	return json_object_get(json_object_get(st, "tables"), key);
}

static const char *key_by_id(json_t *st, long long id)
{
	const char *key;
	json_t *t;

	json_object_foreach(json_object_get(st, "tables"), key, t) {
		if (json_integer_value(json_object_get(t, "id")) == id)
			return key;
	}
	return NULL;
}

/* Moves table t of state st to a new version with metadata meta. */
static void move_table(json_t *st, json_t *t, const char *loc, const char *meta)
{
	long long v = json_integer_value(json_object_get(t, "version")) + 1;

	json_object_set_new(t, "version", json_integer(v));
	json_object_set_new(t, "loc", json_string(loc));
	json_object_set_new(t, "meta", json_string(meta));
	json_array_append_new(json_object_get(st, "log"),
			      json_pack("[O, I, s]", json_object_get(t, "uuid"), (json_int_t)v,
					loc));
}

/* Another session's commit: it lands in the state now and, when a
 * transaction of this session is open, under it too. */
static void other_commit(const char *key, const char *meta)
{
	json_t *states[2] = { state, tx };
	char loc[1024];

	snprintf(loc, sizeof(loc), "%s/metadata/other-%d.metadata.json",
		 json_string_value(json_object_get(table_in(state, key), "tloc")), ++other_files);
	for (int i = 0; i < 2; i++) {
		json_t *t = table_in(states[i], key);
		if (t != NULL)
			move_table(states[i], t, loc,
				   meta ? meta : json_string_value(json_object_get(t, "meta")));
	}
}

void fake_store_add_table(const char *key, const json_t *m, const char *metadata_location)
{
	char *text = json_dumps(m, JSON_COMPACT);
	const char *uuid = json_string_value(json_object_get(m, "table-uuid"));

	json_object_set_new(json_object_get(state, "tables"), key,
			    json_pack("{s:I, s:s, s:s, s:s, s:i, s:s}", "id", (json_int_t)next_id++,
				      "uuid", uuid, "loc", metadata_location, "meta", text,
				      "version", 1, "tloc",
				      json_string_value(json_object_get(m, "location"))));
	json_array_append_new(json_object_get(state, "log"),
			      json_pack("[s, i, s]", uuid, 1, metadata_location));
	free(text);
}

long long fake_store_version(const char *key)
{
	return json_integer_value(json_object_get(table_in(state, key), "version"));
}

const char *fake_store_location(const char *key)
{
	return json_string_value(json_object_get(table_in(state, key), "loc"));
}

json_t *fake_store_metadata(const char *key)
{
	return json_loads(json_string_value(json_object_get(table_in(state, key), "meta")), 0,
			  NULL);
}

void fake_store_cas_lose(int first, int n)
{
	cas_lose_from = fake_calls("store_table_cas") + first;
	cas_lose_to = cas_lose_from + n;
}

void fake_store_other_commit(const char *key, const json_t *m)
{
	char *text = json_dumps(m, JSON_COMPACT);
	other_commit(key, text);
	free(text);
}

void fake_store_stay_away(bool stay)
{
	away = stay;
}

void fake_store_commit_pending(bool p)
{
	pending = p;
}

void store_xact_id(const struct store *s, char *xid, size_t len)
{
	(void)s;
	(void)snprintf(xid, len, "%s", "4242");
}

void fake_store_idem_taken(int n)
{
	idem_taken = n;
}

void fake_store_set_hooks(const json_t *h)
{
	json_decref(hooks);
	hooks = json_deep_copy(h);
}

void fake_store_add_run(const json_t *run)
{
	json_object_set_new(json_object_get(state, "runs"),
			    json_string_value(json_object_get(run, "id")), json_deep_copy(run));
}

json_t *fake_store_run(const char *id)
{
	return json_deep_copy(json_object_get(json_object_get(state, "runs"), id));
}

void fake_store_take_lease(const char *run_id)
{
	json_t *states[2] = { state, tx };

	for (int i = 0; i < 2; i++) {
		json_t *run = json_object_get(json_object_get(states[i], "runs"), run_id);
		if (run != NULL)
			json_object_set_new(run, "_lease", json_string("another publish"));
	}
}

void fake_store_expire_lease(const char *run_id)
{
	json_object_set_new(json_object_get(json_object_get(state, "runs"), run_id),
			    "_lease-expired", json_true());
}

int fake_store_events(const char *event)
{
	size_t i;
	json_t *e;
	int n = 0;

	json_array_foreach(json_object_get(state, "events"), i, e) {
		if (strcmp(json_string_value(e), event) == 0)
			n++;
	}
	return n;
}

/* --- the port --- */

struct store *store_pool_acquire(struct store_pool *pool, struct floe_error *err)
{
	(void)pool;
	if (fake_fault_due("store_pool_acquire", err, NULL))
		return NULL;
	return &the_store;
}

void store_pool_release(struct store_pool *pool, struct store *s)
{
	(void)pool;
	(void)s;
}

void store_use_warehouse(struct store *s, const char *warehouse)
{
	(void)s;
	(void)warehouse; /* one catalog: the fake keeps no warehouse */
}

const char *store_warehouse(const struct store *s)
{
	(void)s;
	return "";
}

bool store_ping(struct store *s, struct floe_error *err)
{
	(void)s;
	if (away)
		return floe_err(err, FE_UNAVAILABLE, "the database is away");
	return true;
}

bool store_probe(struct store *s, int deadline_ms, bool *timed_out, struct floe_error *err)
{
	(void)deadline_ms;
	*timed_out = false;
	return store_ping(s, err);
}

struct store_listener *store_listen(const char *conninfo, const char *channel,
				    struct floe_error *err)
{
	(void)conninfo;
	(void)channel;
	floe_err(err, FE_UNAVAILABLE, "the fake store hears nothing");
	return NULL;
}

int store_listener_wait(struct store_listener *l, int timeout_ms,
			void (*on_notify)(void *arg, const char *payload), void *arg)
{
	(void)l;
	(void)timeout_ms;
	(void)on_notify;
	(void)arg;
	return -1;
}

void store_listener_free(struct store_listener *l)
{
	(void)l;
}

void store_stall_begin(int waited_ms)
{
	(void)waited_ms;
}

void store_stall_end(void)
{
}

bool store_begin(struct store *s, struct floe_error *err)
{
	(void)s;
	if (fake_fault_due("store_begin", err, NULL))
		return false;
	if (tx == NULL)
		txguard_enter();
	json_decref(tx);
	tx = json_deep_copy(state);
	return true;
}

static void tx_undo(void)
{
	if (tx != NULL) {
		txguard_leave();
		json_decref(state);
		state = tx;
		tx = NULL;
	}
}

bool store_commit(struct store *s, struct floe_error *err)
{
	bool landed = false;

	(void)s;
	if (fake_fault_due("store_commit", err, &landed)) {
		if (!landed)
			tx_undo();
		if (tx != NULL)
			txguard_leave();
		json_decref(tx);
		tx = NULL;
		return false;
	}
	if (tx != NULL)
		txguard_leave();
	json_decref(tx);
	tx = NULL;
	return true;
}

void store_rollback(struct store *s)
{
	(void)s;
	(void)fake_fault_due("store_rollback", NULL, NULL);
	tx_undo();
}

bool store_reconnect(struct store *s, struct floe_error *err)
{
	(void)s;
	if (fake_fault_due("store_reconnect", err, NULL))
		return false;
	tx_undo(); /* a broken connection's transaction is gone */
	if (away)
		return floe_err(err, FE_UNAVAILABLE, "the catalog database is unavailable");
	return true;
}

bool store_commit_landed(struct store *s, const char *xid, const char *table_uuid,
			 long long version, const char *metadata_location,
			 enum store_commit_fate *fate, struct floe_error *err)
{
	size_t i;
	json_t *row;

	(void)s;
	(void)xid;
	*fate = pending ? STORE_COMMIT_PENDING : STORE_COMMIT_ABORTED;
	if (fake_fault_due("store_commit_landed", err, NULL))
		return false;
	json_array_foreach(json_object_get(state, "log"), i, row) {
		if (strcmp(json_string_value(json_array_get(row, 0)), table_uuid) == 0 &&
		    json_integer_value(json_array_get(row, 1)) == version &&
		    strcmp(json_string_value(json_array_get(row, 2)), metadata_location) == 0)
			*fate = STORE_COMMIT_LANDED;
	}
	return true;
}

void store_table_row_clear(struct table_row *row)
{
	free(row->metadata_location);
	free(row->metadata);
	memset(row, 0, sizeof(*row));
}

bool store_table_load(struct store *s, const struct ns_ident *ns, const char *name,
		      struct table_row *row, struct floe_error *err)
{
	char key[512];
	json_t *t;

	(void)s;
	memset(row, 0, sizeof(*row));
	if (fake_fault_due("store_table_load", err, NULL))
		return false;
	key_of(ns, name, key, sizeof(key));
	t = table_in(state, key);
	if (t == NULL)
		return floe_err(err, FE_NO_SUCH_TABLE, "table does not exist: %s", key);
	row->id = json_integer_value(json_object_get(t, "id"));
	snprintf(row->uuid, sizeof(row->uuid), "%s", json_string_value(json_object_get(t, "uuid")));
	row->metadata_location = strdup(json_string_value(json_object_get(t, "loc")));
	row->metadata = strdup(json_string_value(json_object_get(t, "meta")));
	row->metadata_len = strlen(row->metadata);
	row->version = json_integer_value(json_object_get(t, "version"));
	return true;
}

bool store_table_load_as(struct store *s, const struct ns_ident *ns, const char *name,
			 bool refs_only, struct table_row *row, struct floe_error *err)
{
	(void)refs_only;
	return store_table_load(s, ns, name, row, err);
}

/* The fake keeps no deflated form: loads answer the text. */
bool store_table_load_gz(struct store *s, const struct ns_ident *ns, const char *name,
			 bool refs_only, struct table_row *row, struct gzip_part *part,
			 struct floe_error *err)
{
	memset(part, 0, sizeof(*part));
	return store_table_load_as(s, ns, name, refs_only, row, err);
}

bool store_table_exists(struct store *s, const struct ns_ident *ns, const char *name, bool *exists,
			struct floe_error *err)
{
	char key[512];

	(void)s;
	*exists = false;
	if (fake_fault_due("store_table_exists", err, NULL))
		return false;
	key_of(ns, name, key, sizeof(key));
	*exists = table_in(state, key) != NULL;
	return true;
}

bool store_table_location(struct store *s, const struct ns_ident *ns, const char *name,
			  char **location, struct floe_error *err)
{
	(void)s;
	(void)ns;
	(void)name;
	*location = NULL;
	return floe_err(err, FE_INTERNAL, "table locations are not faked");
}

bool store_ns_exists(struct store *s, const struct ns_ident *ns, bool *exists,
		     struct floe_error *err)
{
	(void)s;
	(void)ns;
	*exists = true;
	return !fake_fault_due("store_ns_exists", err, NULL);
}

bool store_table_create(struct store *s, const struct ns_ident *ns, const char *name,
			const char *uuid, const char *metadata_location, const char *metadata,
			const char *refs_metadata, const char *table_location,
			const struct store_actor *who, const char *refs, struct floe_error *err)
{
	char key[512];
	bool landed = false;
	bool failed = fake_fault_due("store_table_create", err, &landed);

	(void)s;
	(void)refs_metadata;
	if (failed && !landed)
		return false;
	note_actor("store_table_create", name, who, refs);
	key_of(ns, name, key, sizeof(key));
	if (!failed && table_in(state, key) != NULL)
		return floe_err(err, FE_ALREADY_EXISTS, "table already exists: %s", name);
	json_object_set_new(json_object_get(state, "tables"), key,
			    json_pack("{s:I, s:s, s:s, s:s, s:i, s:s}", "id", (json_int_t)next_id++,
				      "uuid", uuid, "loc", metadata_location, "meta", metadata,
				      "version", 1, "tloc", table_location));
	json_array_append_new(json_object_get(state, "log"),
			      json_pack("[s, i, s]", uuid, 1, metadata_location));
	return !failed;
}

bool store_table_cas(struct store *s, long long id, long long expected_version,
		     const char *metadata_location, const char *metadata, const char *refs_metadata,
		     const char *table_location, const char *previous_location,
		     const struct store_actor *who, const char *refs, bool *won,
		     struct floe_error *err)
{
	bool landed = false;
	bool failed = fake_fault_due("store_table_cas", err, &landed);
	const char *key = key_by_id(state, id);
	json_t *t = key ? table_in(state, key) : NULL;

	(void)s;
	(void)refs_metadata;
	(void)table_location;
	(void)previous_location;
	*won = false;
	if (failed && !landed)
		return false;
	int call = fake_calls("store_table_cas");
	if (!failed && call >= cas_lose_from && call < cas_lose_to && t != NULL) {
		other_commit(key, NULL);
		return true;
	}
	if (t == NULL || json_integer_value(json_object_get(t, "version")) != expected_version)
		return !failed;
	move_table(state, t, metadata_location, metadata);
	note_actor("store_table_cas", key, who, refs);
	*won = !failed;
	return !failed;
}

bool store_table_location_clash(struct store *s, const char *location, const char *uuid,
				char **other, struct floe_error *err)
{
	(void)s;
	(void)location;
	(void)uuid;
	*other = NULL;
	return !fake_fault_due("store_table_location_clash", err, NULL);
}

bool store_location_taken(struct store *s, const char *const *locations, size_t n, char **taken,
			  struct floe_error *err)
{
	(void)s;
	(void)locations;
	(void)n;
	*taken = NULL;
	return !fake_fault_due("store_location_taken", err, NULL);
}

bool store_location_lock(struct store *s, const char *location, struct floe_error *err)
{
	(void)s;
	(void)location;
	return !fake_fault_due("store_location_lock", err, NULL);
}

bool store_idem_finish(struct store *s, const char *key, const char *owner, int status,
		       const char *response, bool *recorded, struct floe_error *err)
{
	(void)s;
	(void)key;
	(void)owner;
	(void)status;
	(void)response;
	*recorded = false;
	if (fake_fault_due("store_idem_finish", err, NULL))
		return false;
	if (idem_taken > 0) {
		idem_taken--;
		return true;
	}
	*recorded = true;
	return true;
}

/* The claim and its release are the HTTP middleware's (idem.c), never a
 * catalog operation's: no unit test reaches them. */
bool store_idem_claim(struct store *s, const char *key, const char *route, const char *owner,
		      int lifetime_s, int lease_s, bool *claimed, bool *other_route, int *status,
		      char **response, struct floe_error *err)
{
	(void)s;
	(void)key;
	(void)route;
	(void)owner;
	(void)lifetime_s;
	(void)lease_s;
	*claimed = true;
	*other_route = false;
	*status = 0;
	*response = NULL;
	return !fake_fault_due("store_idem_claim", err, NULL);
}

bool store_idem_answer(struct store *s, const char *key, const char *route, int *status,
		       char **response, struct floe_error *err)
{
	(void)s;
	(void)key;
	(void)route;
	*status = 0;
	*response = NULL;
	return !fake_fault_due("store_idem_answer", err, NULL);
}

void store_idem_release(struct store *s, const char *key, const char *owner)
{
	(void)s;
	(void)key;
	(void)owner;
}

bool store_ns_property_true(struct store *s, const struct ns_ident *ns, const char *property,
			    char **where, struct floe_error *err)
{
	(void)s;
	(void)ns;
	*where = NULL;
	if (fake_fault_due("store_ns_property_true", err, NULL))
		return false;
	const char *v = json_string_value(
		json_object_get(json_object_get(state, "ns-properties"), property));
	if (v != NULL && strcmp(v, "true") == 0)
		*where = strdup("db");
	return true;
}

void fake_store_set_ns_property(const char *property, const char *value)
{
	if (json_object_get(state, "ns-properties") == NULL)
		json_object_set_new(state, "ns-properties", json_object());
	json_object_set_new(json_object_get(state, "ns-properties"), property, json_string(value));
}

bool store_event_insert(struct store *s, const char *event, const struct store_actor *who,
			const struct ns_ident *ns, const char *table, const char *run_id,
			const json_t *details, struct floe_error *err)
{
	(void)s;
	(void)ns;
	(void)table;
	(void)run_id;
	(void)details;
	if (fake_fault_due("store_event_insert", err, NULL))
		return false;
	note_actor("store_event_insert", event, who, NULL);
	json_array_append_new(json_object_get(state, "events"), json_string(event));
	return true;
}

/* No drop is in the fake's audit log. */
bool store_event_dropped_controls(struct store *s, const char *uuid, bool *found, char **controls,
				  struct floe_error *err)
{
	(void)s;
	(void)uuid;
	*found = false;
	*controls = NULL;
	return !fake_fault_due("store_event_dropped_controls", err, NULL);
}

static char *dup_or_null(const char *v)
{
	return v != NULL ? strdup(v) : NULL;
}

bool store_hooks_in_scope(struct store *s, const struct ns_ident *ns, const char *table,
			  struct hook_target **rows, size_t *count, struct floe_error *err)
{
	size_t i;
	json_t *h;

	(void)s;
	(void)ns;
	(void)table;
	*rows = NULL;
	*count = 0;
	if (fake_fault_due("store_hooks_in_scope", err, NULL))
		return false;
	if (json_array_size(hooks) == 0)
		return true;
	*rows = calloc(json_array_size(hooks), sizeof(**rows));
	if (*rows == NULL)
		return floe_err(err, FE_INTERNAL, "out of memory");
	json_array_foreach(hooks, i, h) {
		struct hook_target *t = &(*rows)[i];
		snprintf(t->id, sizeof(t->id), "%s", json_string_value(json_object_get(h, "id")));
		t->name = dup_or_null(json_string_value(json_object_get(h, "name")));
		t->url = dup_or_null(json_string_value(json_object_get(h, "url")));
		t->secret = dup_or_null(json_string_value(json_object_get(h, "secret")));
		t->timeout_ms = json_integer_value(json_object_get(h, "timeout-ms"));
		t->secret_sealed = json_is_true(json_object_get(h, "secret-sealed"));
	}
	*count = json_array_size(hooks);
	return true;
}

/* The hooks set up (fake_store_set_hooks) with a secret and
 * "secret-sealed" not true. */
bool store_hook_plain_secrets(struct store *s, struct hook_target **rows, size_t *count,
			      struct floe_error *err)
{
	size_t i;
	json_t *h;

	(void)s;
	*rows = NULL;
	*count = 0;
	if (fake_fault_due("store_hook_plain_secrets", err, NULL))
		return false;
	*rows = calloc(json_array_size(hooks) + 1, sizeof(**rows));
	if (*rows == NULL)
		return floe_err(err, FE_INTERNAL, "out of memory");
	json_array_foreach(hooks, i, h) {
		const char *secret = json_string_value(json_object_get(h, "secret"));
		if (secret == NULL || json_is_true(json_object_get(h, "secret-sealed")))
			continue;
		struct hook_target *t = &(*rows)[(*count)++];
		snprintf(t->id, sizeof(t->id), "%s", json_string_value(json_object_get(h, "id")));
		t->secret = dup_or_null(secret);
	}
	return true;
}

bool store_hook_seal_secret(struct store *s, const char *id, const char *plain, const char *sealed,
			    bool *done, struct floe_error *err)
{
	size_t i;
	json_t *h;

	(void)s;
	*done = false;
	if (fake_fault_due("store_hook_seal_secret", err, NULL))
		return false;
	json_array_foreach(hooks, i, h) {
		const char *secret = json_string_value(json_object_get(h, "secret"));
		if (strcmp(json_string_value(json_object_get(h, "id")), id) != 0 ||
		    json_is_true(json_object_get(h, "secret-sealed")) || secret == NULL ||
		    strcmp(secret, plain) != 0)
			continue;
		json_object_set_new(h, "secret", json_string(sealed));
		json_object_set_new(h, "secret-sealed", json_true());
		*done = true;
	}
	return true;
}

json_t *fake_store_hooks(void)
{
	return hooks;
}

/* The run as the store's row: the fake keeps runs as JSON objects with
 * the API's field names ("_table-uuid" is the row's table). */
static void run_from_json(const json_t *j, struct run_row *row)
{
	const json_t *v;

	memset(row, 0, sizeof(*row));
	snprintf(row->id, sizeof(row->id), "%s", json_string_value(json_object_get(j, "id")));
	snprintf(row->table_uuid, sizeof(row->table_uuid), "%s",
		 json_string_value(json_object_get(j, "_table-uuid")));
	row->table_name = strdup("t");
	row->branch = dup_or_null(json_string_value(json_object_get(j, "branch")));
	row->state = dup_or_null(json_string_value(json_object_get(j, "state")));
	v = json_object_get(j, "base-snapshot-id");
	row->has_base = json_is_integer(v);
	row->base_snapshot_id = json_integer_value(v);
	v = json_object_get(j, "audited-snapshot-id");
	row->has_audited = json_is_integer(v);
	row->audited_snapshot_id = json_integer_value(v);
	v = json_object_get(j, "published-snapshot-id");
	row->has_published = json_is_integer(v);
	row->published_snapshot_id = json_integer_value(v);
	v = json_object_get(j, "audits");
	row->audits = v != NULL ? json_dumps(v, JSON_COMPACT) : strdup("[]");
	snprintf(row->created_at, sizeof(row->created_at), "2026-01-01T00:00:00.000Z");
	snprintf(row->updated_at, sizeof(row->updated_at), "2026-01-01T00:00:00.000Z");
	row->seq = json_integer_value(json_object_get(j, "_seq"));
	v = json_object_get(j, "staged-by");
	row->staged_by = strdup(json_is_string(v) ? json_string_value(v) : "anonymous");
	row->published_by = dup_or_null(json_string_value(json_object_get(j, "published-by")));
	row->abandoned_by = dup_or_null(json_string_value(json_object_get(j, "abandoned-by")));
	v = json_object_get(j, "written-by");
	row->written_by = v != NULL ? json_dumps(v, JSON_COMPACT) : strdup("[]");
}

bool store_run_get(struct store *s, const char *id, struct run_row *row, bool *found,
		   struct floe_error *err)
{
	json_t *r;

	(void)s;
	memset(row, 0, sizeof(*row));
	*found = false;
	if (fake_fault_due("store_run_get", err, NULL))
		return false;
	r = json_object_get(json_object_get(state, "runs"), id);
	if (r != NULL) {
		run_from_json(r, row);
		*found = true;
	}
	return true;
}

/* The fake's runs hold their writers in "written-by", uncut. */
bool store_run_acted(struct store *s, const char *id, const char *principal, bool *staged,
		     bool *wrote, struct floe_error *err)
{
	const json_t *r = json_object_get(json_object_get(state, "runs"), id);
	size_t i;
	json_t *v;

	(void)s;
	*staged = false;
	*wrote = false;
	if (fake_fault_due("store_run_acted", err, NULL))
		return false;
	if (r == NULL)
		return true;
	*staged = json_is_string(json_object_get(r, "staged-by")) &&
		  strcmp(json_string_value(json_object_get(r, "staged-by")), principal) == 0;
	json_array_foreach(json_object_get(r, "written-by"), i, v) {
		if (json_is_string(v) && strcmp(json_string_value(v), principal) == 0)
			*wrote = true;
	}
	return true;
}

/* True when state is one of the comma-separated from_states; *stale when
 * it matched as "auditing-stale" (a lease that ran out). */
static bool state_in(const json_t *run, const char *from_states, bool *stale)
{
	const char *state_now = json_string_value(json_object_get(run, "state"));
	bool expired = json_is_true(json_object_get(run, "_lease-expired"));
	const char *p = from_states;

	*stale = false;
	while (*p != '\0') {
		size_t len = strcspn(p, ",");
		if (len == strlen(state_now) && strncmp(p, state_now, len) == 0)
			return true;
		if (len == strlen("auditing-stale") && strncmp(p, "auditing-stale", len) == 0 &&
		    strcmp(state_now, "auditing") == 0 && expired) {
			*stale = true;
			return true;
		}
		p += len;
		if (*p == ',')
			p++;
	}
	return false;
}

bool store_run_transition(struct store *s, const char *id, const char *from_states,
			  const char *to_state, long long audited, long long published,
			  const json_t *audits, long lease_ms, const char *lease_owner,
			  const struct store_actor *who, bool *moved, struct floe_error *err)
{
	json_t *run = json_object_get(json_object_get(state, "runs"), id);
	bool stale = false;

	(void)s;
	(void)lease_ms;
	*moved = false;
	if (fake_fault_due("store_run_transition", err, NULL))
		return false;
	if (run == NULL || !state_in(run, from_states, &stale))
		return true;
	/* Out of auditing only while this publish still holds the lease. */
	if (!stale && strcmp(json_string_value(json_object_get(run, "state")), "auditing") == 0 &&
	    (lease_owner == NULL ||
	     strcmp(json_string_value(json_object_get(run, "_lease")), lease_owner) != 0))
		return true;
	json_object_set_new(run, "state", json_string(to_state));
	if (strcmp(to_state, "auditing") == 0) {
		json_object_set_new(run, "_lease", json_string(lease_owner));
		json_object_del(run, "_lease-expired");
	}
	if (audited >= 0)
		json_object_set_new(run, "audited-snapshot-id", json_integer(audited));
	if (published >= 0)
		json_object_set_new(run, "published-snapshot-id", json_integer(published));
	if (audits != NULL)
		json_object_set_new(run, "audits", json_deep_copy(audits));
	const char *by = who != NULL && who->principal != NULL ? who->principal : "anonymous";
	if (strcmp(to_state, "published") == 0)
		json_object_set_new(run, "published-by", json_string(by));
	if (strcmp(to_state, "abandoned") == 0)
		json_object_set_new(run, "abandoned-by", json_string(by));
	note_actor("store_run_transition", to_state, who, NULL);
	*moved = true;
	return true;
}

/* --- not faked: the failure tests do not reach these --- */

static bool not_faked(const char *fn, struct floe_error *err)
{
	return floe_err(err, FE_INTERNAL, "%s is not faked", fn);
}

bool store_table_overwrite(struct store *s, const struct ns_ident *ns, const char *name,
			   const char *uuid, const char *metadata_location, const char *metadata,
			   const char *refs_metadata, const char *table_location,
			   const struct store_actor *who, const char *refs, struct floe_error *err)
{
	(void)s, (void)ns, (void)name, (void)uuid, (void)metadata_location;
	(void)metadata, (void)refs_metadata, (void)table_location, (void)who, (void)refs;
	return not_faked(__func__, err);
}

bool store_table_drop(struct store *s, const struct ns_ident *ns, const char *name, bool purge,
		      bool keep, const char *by, struct table_row *row, struct floe_error *err)
{
	(void)s, (void)ns, (void)name, (void)purge, (void)keep, (void)by;
	memset(row, 0, sizeof(*row));
	return not_faked(__func__, err);
}

bool store_dropped_set_controls(struct store *s, long long id, const char *controls,
				struct floe_error *err)
{
	(void)s, (void)id, (void)controls;
	return not_faked(__func__, err);
}

bool store_table_rename(struct store *s, const struct ns_ident *from_ns, const char *from,
			const struct ns_ident *to_ns, const char *to, struct floe_error *err)
{
	(void)s, (void)from_ns, (void)from, (void)to_ns, (void)to;
	return not_faked(__func__, err);
}

bool store_name_kind(struct store *s, const struct ns_ident *ns, const char *name, char *kind,
		     size_t kindlen, struct floe_error *err)
{
	char key[512];

	(void)s;
	kind[0] = '\0';
	if (fake_fault_due("store_name_kind", err, NULL))
		return false;
	key_of(ns, name, key, sizeof(key));
	if (table_in(state, key) != NULL)
		(void)snprintf(kind, kindlen, "table");
	return true;
}

/* Views are driven over HTTP against PostgreSQL; the fakes only link. */
bool store_view_load(struct store *s, const struct ns_ident *ns, const char *name,
		     struct table_row *row, struct floe_error *err)
{
	(void)s, (void)ns, (void)name;
	memset(row, 0, sizeof(*row));
	return not_faked(__func__, err);
}

bool store_view_create(struct store *s, const struct ns_ident *ns, const char *name,
		       const char *uuid, const char *metadata_location, const char *metadata,
		       const char *view_location, const struct store_actor *who,
		       struct floe_error *err)
{
	(void)s, (void)ns, (void)name, (void)uuid, (void)metadata_location, (void)metadata;
	(void)view_location, (void)who;
	return not_faked(__func__, err);
}

bool store_view_drop(struct store *s, const struct ns_ident *ns, const char *name,
		     struct table_row *row, struct floe_error *err)
{
	(void)s, (void)ns, (void)name;
	memset(row, 0, sizeof(*row));
	return not_faked(__func__, err);
}

bool store_view_rename(struct store *s, const struct ns_ident *from_ns, const char *from,
		       const struct ns_ident *to_ns, const char *to, struct floe_error *err)
{
	(void)s, (void)from_ns, (void)from, (void)to_ns, (void)to;
	return not_faked(__func__, err);
}

bool store_view_list(struct store *s, const struct ns_ident *ns, const char *after, long limit,
		     char ***names, size_t *count, bool *more, struct floe_error *err)
{
	(void)s, (void)ns, (void)after, (void)limit;
	*names = NULL, *count = 0, *more = false;
	return not_faked(__func__, err);
}

bool store_view_list_visible(struct store *s, const long long *role_ids, size_t nroles,
			     const struct ns_ident *ns, const char *after, long limit,
			     char ***names, size_t *count, bool *more, struct floe_error *err)
{
	(void)role_ids, (void)nroles;
	return store_view_list(s, ns, after, limit, names, count, more, err);
}

bool store_run_insert(struct store *s, const char *id, const char *table_uuid,
		      const struct ns_ident *ns, const char *table, const char *branch,
		      long long base_snapshot, bool adopted, const char *release_id,
		      const struct store_actor *who, struct floe_error *err)
{
	(void)s, (void)ns, (void)table, (void)adopted, (void)release_id;
	if (fake_fault_due("store_run_insert", err, NULL))
		return false;
	json_t *run = json_pack("{s:s, s:s, s:s, s:s, s:s, s:[], s:I}", "id", id, "state", "staged",
				"branch", branch, "_table-uuid", table_uuid, "staged-by",
				who->principal ? who->principal : "anonymous", "written-by", "_seq",
				(json_int_t)json_object_size(json_object_get(state, "runs")) + 1);
	if (base_snapshot >= 0)
		json_object_set_new(run, "base-snapshot-id", json_integer(base_snapshot));
	json_object_set_new(json_object_get(state, "runs"), id, run);
	note_actor("store_run_insert", id, who, NULL);
	return true;
}

bool store_run_list(struct store *s, const char *table_uuid, long long before_seq, long limit,
		    struct run_row **rows, size_t *count, bool *more, struct floe_error *err)
{
	(void)s, (void)table_uuid, (void)before_seq, (void)limit;
	*rows = NULL;
	*count = 0;
	*more = false;
	return not_faked(__func__, err);
}

bool store_event_list(struct store *s, const char *after_xid, long long after_id,
		      const struct ns_ident *ns, const char *table, const char *run_id,
		      const char *since, long limit, struct event_row **rows, size_t *count,
		      bool *more, struct floe_error *err)
{
	(void)s, (void)after_xid, (void)after_id, (void)ns, (void)table, (void)run_id;
	(void)since, (void)limit;
	*rows = NULL;
	*count = 0;
	*more = false;
	return not_faked(__func__, err);
}

/* Positions in the (xid, id) logs are judged against PostgreSQL's
 * timelines (test_audit_log_paging.py, test_subscriptions.py). */
bool store_event_position(struct store *s, const struct feed_position *pos, struct feed_here *here,
			  enum feed_verdict *verdict, struct floe_error *err)
{
	(void)s, (void)pos;
	memset(here, 0, sizeof(*here));
	*verdict = FEED_POSITION_OK;
	return not_faked(__func__, err);
}

bool store_feed_position(struct store *s, const struct feed_position *pos, struct feed_here *here,
			 enum feed_verdict *verdict, struct floe_error *err)
{
	(void)s, (void)pos;
	memset(here, 0, sizeof(*here));
	*verdict = FEED_POSITION_OK;
	return not_faked(__func__, err);
}

/* The fake has no change feed: naming the operation changes nothing. */
bool store_feed_operation(struct store *s, const char *operation, struct floe_error *err)
{
	(void)s, (void)operation, (void)err;
	return true;
}

/* Releases are tested against PostgreSQL (test_releases.py). */
bool store_run_members(struct store *s, const char *release_id, long limit, struct run_row **rows,
		       size_t *count, bool *more, struct floe_error *err)
{
	(void)s, (void)release_id, (void)limit;
	*rows = NULL;
	*count = 0;
	*more = false;
	return not_faked(__func__, err);
}

bool store_release_insert(struct store *s, const char *id, const char *branch,
			  const struct store_actor *who, struct floe_error *err)
{
	(void)s, (void)id, (void)branch, (void)who;
	return not_faked(__func__, err);
}

bool store_release_get(struct store *s, const char *id, struct release_row *row, bool *found,
		       struct floe_error *err)
{
	(void)s, (void)id;
	memset(row, 0, sizeof(*row));
	*found = false;
	return not_faked(__func__, err);
}

bool store_release_list(struct store *s, long long before_seq, long limit,
			struct release_row **rows, size_t *count, bool *more,
			struct floe_error *err)
{
	(void)s, (void)before_seq, (void)limit;
	*rows = NULL;
	*count = 0;
	*more = false;
	return not_faked(__func__, err);
}

bool store_release_transition(struct store *s, const char *id, const char *from_states,
			      const char *to_state, const json_t *audits, long lease_ms,
			      const char *lease_owner, const struct store_actor *who, bool *moved,
			      struct floe_error *err)
{
	(void)s, (void)id, (void)from_states, (void)to_state, (void)audits, (void)lease_ms;
	(void)lease_owner, (void)who;
	*moved = false;
	return not_faked(__func__, err);
}

bool store_release_expire_stale(struct store *s, long long past_lease_s, int limit, long *expired,
				struct floe_error *err)
{
	(void)s, (void)past_lease_s, (void)limit, (void)err;
	*expired = 0;
	return true;
}

bool store_tables_below(struct store *s, const struct ns_ident *ns, long limit, char ***names,
			size_t *count, bool *more, struct floe_error *err)
{
	(void)s, (void)ns, (void)limit;
	*names = NULL;
	*count = 0;
	*more = false;
	return not_faked(__func__, err);
}

void store_release_row_clear(struct release_row *row)
{
	memset(row, 0, sizeof(*row));
}

void store_release_rows_free(struct release_row *rows, size_t count)
{
	(void)count;
	free(rows);
}
