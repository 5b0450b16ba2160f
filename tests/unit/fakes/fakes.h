/*
 * fakes.h - scripting the fakes of catalog's ports (ports.h) for the unit
 * tests of failure paths. The fakes implement the declarations of store.h,
 * fileio.h and hooks.h that catalog/ calls, over in-memory state, and each
 * call can be scripted to fail: "the Nth call of X fails with this
 * floe_error". They are linked instead of the real store, fileio and hooks
 * libraries. Not thread-safe: one test drives one request at a time.
 */
#ifndef FLOE_FAKES_H
#define FLOE_FAKES_H

#include <stdbool.h>
#include <jansson.h>

#include "error.h"
#include "ports.h"

/* --- faults, shared by every fake --- */

/* Forgets every scripted fault, call count and piece of state of every
 * fake (store, files, hooks). Call at the start of each test. */
void fake_reset(void);

/* The error a failing call gives: kind, outcome, SQLSTATE, message. */
struct floe_error fake_error(enum floe_errkind kind, enum floe_outcome outcome,
			     const char *sqlstate, const char *message);

/* The answers the real store gives (store/store.c store_exec): */
/* a connection lost before COMMIT, or in a statement inside BEGIN */
struct floe_error fake_conn_lost(void);
/* a connection lost during COMMIT, or during a write on its own */
struct floe_error fake_commit_unknown(void);
/* a serialization failure (SQLSTATE 40001): rolled back, may be retried */
struct floe_error fake_serialization(void);

/* The nth call (1-based, counted from now) of fn, a port function's name
 * ("store_commit", "fileio_write_metadata", ...), fails with e. For a
 * write whose outcome is FO_UNKNOWN, landed says whether it took effect
 * anyway (the connection dropped after the database committed it). */
void fake_fail(const char *fn, int nth, struct floe_error e, bool landed);

/* How many times fn was called since the last fake_reset or
 * fake_forget_calls. */
int fake_calls(const char *fn);

/* Starts every call count afresh and drops scripted faults; the state of
 * the fakes stays (a test's setup calls it once its tables exist). */
void fake_forget_calls(void);

/* Each fake's part of fake_reset. */
void fake_store_reset(void);
void fake_fileio_reset(void);
void fake_hooks_reset(void);

/* Called by the fakes on entry: counts the call, and when a fault is due
 * fills err, sets *landed (may be NULL) and returns true. */
bool fake_fault_due(const char *fn, struct floe_error *err, bool *landed);

/* --- the store: tables keyed "<namespace levels>.<name>" --- */

/* The one connection and pool the fake store hands out. */
struct store *fake_store(void);
struct store_pool *fake_store_pool(void);

/* Adds a table at version 1 with metadata m (borrowed) stored at
 * metadata_location, with its first commit log row. Namespaces exist. */
void fake_store_add_table(const char *key, const json_t *m, const char *metadata_location);

/* The table's version, current metadata location, and metadata (new
 * reference), as a later load would see them. */
long long fake_store_version(const char *key);
const char *fake_store_location(const char *key);
json_t *fake_store_metadata(const char *key);

/* From the first-th compare-and-swap from now (1-based), n of them find
 * another version: another writer committed first (it moved the table
 * on, metadata unchanged). */
void fake_store_cas_lose(int first, int n);

/* Another writer commits metadata m (borrowed) to the table now, also
 * under an open transaction (the change is not this session's). */
void fake_store_other_commit(const char *key, const json_t *m);

/* While true, store_reconnect fails: the database stays away. */
void fake_store_stay_away(bool away);

/* While true, store_commit_landed answers that a commit not in the log is
 * still in progress (a COMMIT waiting on a synchronous standby) rather
 * than aborted. */
void fake_store_commit_pending(bool pending);

/* The next n store_idem_finish calls find the key claimed by a retry. */
void fake_store_idem_taken(int n);

/* Hooks in scope of every table (borrowed array, copied) and WAP runs. */
void fake_store_set_hooks(const json_t *hooks);
/* The hooks as the fake holds them now (borrowed). */
json_t *fake_store_hooks(void);
/* Adds a run {"id", "state", "branch", "_table-uuid", "_seq"}; copied. */
void fake_store_add_run(const json_t *run);
/* The run as store_run_get gives it (new reference), or NULL. */
json_t *fake_store_run(const char *id);
/* Another publish takes the run's audit lease over now. */
void fake_store_take_lease(const char *run_id);
/* Marks the run's audit lease as run out (the floe auditing it stopped). */
void fake_store_expire_lease(const char *run_id);

/* How many audit events named event were committed. */
int fake_store_events(const char *event);

/* The fake store's whole state (borrowed; replaced by a rollback): the
 * other fakes of store functions keep their part in it. */
json_t *fake_store_state(void);

/* --- principals, roles, grants (fake_auth.c) --- */

/* Adds a namespace (table NULL) or a table to the objects the visible
 * listings walk (grants need none: they name objects by levels). */
void fake_store_add_object(const struct ns_ident *ns, const char *table);
/* Who the committed writes of port function fn (store_table_cas,
 * store_table_create, store_event_insert, store_run_insert,
 * store_run_transition) were recorded as, oldest first: a new array of
 * {"what" (the table key, event, run id or state), "principal"?,
 * "client-id"?, "refs"? (0x1F-joined)}. */
json_t *fake_store_actors(const char *fn);

/* The namespace of every table sets property to value. */
void fake_store_set_ns_property(const char *property, const char *value);

/* --- files: an in-memory map of URL to content --- */

/* The answer the real local backend gives when write or fsync fails. */
void fake_fileio_fsync_fails(int nth);
/* True when a file exists at url. */
bool fake_fileio_exists(const char *url);
/* How many files exist, and how many were removed. */
int fake_fileio_files(void);
int fake_fileio_removed(void);

/* --- hook delivery --- */

/* Every hook call gets this verdict, HTTP status and reason. */
void fake_hooks_answer(enum hook_verdict verdict, long http_status, const char *reason);
/* The secret the last call sent was signed with ("" for none). */
const char *fake_hooks_last_secret(void);
/* The last body a hook was sent, parsed (new reference), or NULL. */
json_t *fake_hooks_last_body(void);
/* fn(arg) runs while the hooks are being called (after the lease is taken,
 * before the verdicts are recorded). */
void fake_hooks_during(void (*fn)(void *arg), void *arg);

/* --- tables for the tests --- */

struct table_env;

/* Resets every fake (fake_reset) and fills env for a warehouse at
 * file:///wh and ns with the namespace "db". Returns false when out of
 * memory. */
bool fake_start(struct table_env *env, struct ns_ident *ns);

/* Makes a table (one int column, format 2) at location through the real
 * metadata engine, adds it to the fake store under key with its metadata
 * file in the fake files, and returns its metadata (new reference). */
json_t *fake_new_table(const char *key, const char *location);

/* The updates (new reference) that add snapshot id (parent: its parent,
 * 0 for none; a fake manifest list under location) and point branch ref
 * at it. */
json_t *fake_snapshot_updates(const char *location, long long id, long long parent,
			      const char *ref);

/* Applies updates (stolen) to table key with the real metadata engine and
 * commits the result as another session would (fake_store_other_commit).
 * False, with err, when the engine refuses them. */
bool fake_other_writer(const char *key, json_t *updates, struct floe_error *err);

/* The table the publish tests start from: db.t at FAKE_WAP_LOCATION with
 * main at snapshot 1 and branch audit at snapshot 2 (child of 1), and one
 * audit hook "auditor" (id hook_id) in scope. Its uuid into uuid (len
 * bytes). False when it cannot be made. */
#define FAKE_WAP_LOCATION "file:///wh/db/t"
bool fake_wap_table(const char *hook_id, char *uuid, size_t len);

/* POST .../wap/{run_id}/publish of db.t with an empty body. */
json_t *fake_publish(const struct table_env *env, const struct ns_ident *ns, const char *run_id,
		     struct floe_error *err);

#endif
