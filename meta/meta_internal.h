/*
 * meta_internal.h - what the files of the metadata engine share, and
 * nothing a caller of the engine needs: that is tablemeta.h.
 *
 *   schema.c        schema walking, type and transform rules
 *   create.c        createTable: fresh ids, the first spec and sort order
 *   requirements.c  the commit requirements (one table of checks)
 *   apply.c         the working copy of a commit and its id indexes
 *   updates.c       the update actions (one table: name -> function)
 *   snapshots.c     the actions on snapshots, refs and statistics
 *   finish.c        post-processing: logs, limits, format fields
 *   tablemeta.c     the public entry points of a commit, and readers
 *   view.c          views: create, parse, validate, serialise (viewmeta.h)
 *   viewupdates.c   views: the update actions of a commit and its end
 */
#ifndef FLOE_META_INTERNAL_H
#define FLOE_META_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

#include "error.h"
#include "idmap.h"

#define META_PARTITION_DATA_ID_START 1000

/* --- shared by every file --- */

/* FE_BAD_REQUEST with a printf-style message; always false. */
bool meta_bad(struct floe_error *err, const char *fmt, ...) FLOE_PRINTF(2, 3);

/* FE_INTERNAL "out of memory"; always false. */
bool meta_oom(struct floe_error *err);

/* A new ref {snapshot-id: id, type: branch}: main as metadata written
 * before refs existed implies it. NULL when out of memory. */
json_t *meta_main_ref(int64_t id);

/* The answer of a commit on base whose working copy is m (stolen): NULL
 * when !ok (*changed false), a copy of base when nothing changed, else m. */
json_t *meta_commit_result(const json_t *base, json_t *m, bool ok, bool *changed);

/* m's format version (2 when it has none). */
int meta_format_of(const json_t *m);

/* --- schema.c --- */

/*
 * Checks a schema object for format version format; *highest gets its
 * highest field id (0 if none). With index, *index gets the map of its
 * ids to their types (new; caller frees). FE_BAD_REQUEST on a bad shape,
 * a root that is not a struct, a duplicate or negative id, or a type the
 * format does not have.
 */
bool schema_check(const json_t *schema, int format, int64_t *highest, struct idmap **index,
		  struct floe_error *err) FLOE_WUR;

/* The ids of a stored schema mapped to their types (new; caller frees),
 * or NULL with FE_INTERNAL when out of memory. Not re-validated. */
struct idmap *schema_index(const json_t *schema, struct floe_error *err);

/* Checks a partition field (or a sort field) of a request; index is the
 * schema_index of the schema its source-id must be in (NULL: not
 * checked). FE_BAD_REQUEST naming what is wrong. */
bool schema_partition_field_check(const json_t *f, const struct idmap *index,
				  struct floe_error *err) FLOE_WUR;
bool schema_sort_field_check(const json_t *f, const struct idmap *index,
			     struct floe_error *err) FLOE_WUR;

/* --- create.c --- */

/* New metadata of format version format with no schema, spec, order or
 * snapshot, last updated at now_ms; NULL when out of memory. */
json_t *create_empty_metadata(int format, int64_t now_ms);

/* A copy of s without trailing '/' (new; caller frees), or NULL when out
 * of memory. A lone "/" stays. */
char *create_strip_trailing_slash(const char *s);

/* The location of a new table or view: the request's "location", else
 * location (the catalog's); no trailing '/'. A new string, or NULL with
 * FE_BAD_REQUEST (not a non-empty string) or FE_INTERNAL. */
char *create_location(const json_t *request, const char *location, struct floe_error *err);

/* --- apply.c: the working copy of one commit --- */

enum { LIST_SCHEMAS, LIST_SPECS, LIST_ORDERS, LIST_COUNT };
enum { STATS_SNAPSHOT, STATS_PARTITION, STATS_COUNT };

#define NONE_ADDED (-2)

/*
 * One of the lists whose entries have ids and are reused when an identical
 * one is added (schemas, partition specs, sort orders), indexed on first
 * use: positions by id, ids by content, and the highest id.
 */
struct id_list {
	struct idmap *pos;  /* id -> position; NULL: not built yet */
	json_t *by_content; /* content key -> id (the first entry wins);
			      * NULL: not built yet */
	int64_t highest;
	bool highest_stale; /* the highest was removed: rescan */
};

/* What the lists are called in metadata and in messages. */
struct list_kind {
	const char *list;        /* "schemas" */
	const char *idkey;       /* "schema-id" */
	int64_t missing_id;      /* what an entry without an id counts as */
	const char *current_key; /* "current-schema-id" */
	const char *current;     /* "current schema" */
	const char *noun;        /* "schema" in "unknown schema: 3" */
	const char *last_noun;   /* "schema" in "no schema has been added" */
};

extern const struct list_kind apply_lists[LIST_COUNT];
extern const char *const apply_stats_lists[STATS_COUNT];

struct apply {
	json_t *m; /* the working copy */
	int64_t now;
	bool changed;
	int64_t last[LIST_COUNT];        /* id last added in this commit, NONE_ADDED */
	struct idmap *added[LIST_COUNT]; /* ids added in this commit */
	struct idmap *added_snapshots;   /* snapshot ids added in this commit */
	json_t *main_targets;            /* snapshot ids main was set to, in order */
	bool snapshots_removed;
	/*
	 * Built on first use, so a commit of thousands of updates on a table
	 * of thousands of snapshots stays linear. Removed entries become JSON
	 * null holes (positions stay valid) until apply_settle compacts them.
	 */
	struct idmap *snapshot_index;           /* snapshot id -> position in snapshots */
	struct idmap *stats_index[STATS_COUNT]; /* snapshot id -> position */
	struct idmap *removed;                  /* snapshots removed here whose refs remain */
	json_t *key_index;                      /* encryption key-id -> position */
	struct id_list lists[LIST_COUNT];
	struct idmap *cur_fields; /* schema_index of schema cur_fields_of */
	int64_t cur_fields_of;
	bool holes;
};

/* Starts a commit on m (borrowed for the commit's length). The caller
 * calls apply_free afterwards, also when this fails (out of memory). */
bool apply_init(struct apply *a, json_t *m, int64_t now, struct floe_error *err) FLOE_WUR;

/* Frees the indexes of a (not a->m). */
void apply_free(struct apply *a);

/* The snapshot index of the working copy (borrowed), or NULL when out of
 * memory. */
struct idmap *apply_snapshot_index(struct apply *a, struct floe_error *err);

/* The snapshot with this id (borrowed), or NULL; *ok false when out of
 * memory. */
const json_t *apply_snapshot(struct apply *a, int64_t id, bool *ok, struct floe_error *err);

/* The index of statistics list k (borrowed), or NULL when out of memory. */
struct idmap *apply_stats_index(struct apply *a, size_t k, struct floe_error *err);

/* Drops the entry for snapshot id from statistics list k (a hole);
 * *dropped tells whether there was one. False when out of memory. */
bool apply_drop_stats(struct apply *a, size_t k, int64_t id, bool *dropped,
		      struct floe_error *err) FLOE_WUR;

/* Drops the refs that point at a snapshot removed in this commit (only at
 * *only when given); main going means no current snapshot. */
void apply_drop_removed_refs(struct apply *a, const int64_t *only);

/* List kind, its positions indexed (borrowed), or NULL when out of memory. */
struct id_list *apply_list(struct apply *a, int kind, struct floe_error *err);

/* The entry of list kind with this id (borrowed), or NULL; *ok false when
 * out of memory. */
const json_t *apply_list_get(struct apply *a, int kind, int64_t id, bool *ok,
			     struct floe_error *err);

/*
 * The id of an entry of list kind identical to entry, or NONE_ADDED; *ok
 * false when out of memory. Identical means: schemas by fields and
 * identifier fields, specs by source id, transform and name of each field
 * (not the field ids), sort orders by fields.
 */
int64_t apply_list_find(struct apply *a, int kind, const json_t *entry, bool *ok,
			struct floe_error *err);

/* The highest id in list kind (missing_id when empty). */
int64_t apply_list_highest(struct apply *a, int kind);

/* Appends entry (stolen, also on failure) with this id to list kind, as
 * the one last added in this commit (the commit has changed). */
bool apply_list_add(struct apply *a, int kind, int64_t id, json_t *entry,
		    struct floe_error *err) FLOE_WUR;

/* Removes the entry of list kind with this id, if any (a hole; the commit
 * has changed). False only when out of memory. */
bool apply_list_remove(struct apply *a, int kind, int64_t id, struct floe_error *err) FLOE_WUR;

/* The field index (schema_index) of schema, the one with this id that
 * specs and sort orders bind to, built once per commit and id. Borrowed;
 * NULL when out of memory. */
const struct idmap *apply_current_fields(struct apply *a, int64_t id, const json_t *schema,
					 struct floe_error *err);

/* The encryption keys by key-id -> position (borrowed), or NULL when out
 * of memory. A key without a key-id is found as "". */
json_t *apply_key_index(struct apply *a, struct floe_error *err);

/*
 * Puts entry (borrowed) at position pos of arr when known is true (no
 * change when it is equal to what is there), else appends it; *appended
 * tells the caller to index it at the end. False when out of memory.
 */
bool apply_put_entry(struct apply *a, json_t *arr, bool known, size_t pos, const json_t *entry,
		     bool *appended, struct floe_error *err) FLOE_WUR;

/* Back to plain metadata: refs of removed snapshots dropped, holes gone,
 * the position indexes rebuilt on next use. */
void apply_settle(struct apply *a);

/* --- updates.c: the one table of update actions --- */

struct action;

/* Applies update u (an object whose action is act's) to the working copy;
 * FE_BAD_REQUEST on an invalid update, FE_COMMIT_FAILED on a stale one
 * (the client should retry), FE_INTERNAL when out of memory. */
typedef bool action_fn(struct apply *a, const json_t *u, const struct action *act,
		       struct floe_error *err);

/* One update action. Actions that differ only in the list they work on
 * share a function, and their entry says which list. */
struct action {
	const char *name;
	action_fn *apply;
	int kind;          /* LIST_* or STATS_*, for the shared functions */
	const char *field; /* the update's field the shared functions read */
};

/* Applies every update of updates (an array, or NULL) in order. */
bool updates_apply(struct apply *a, const json_t *updates, struct floe_error *err) FLOE_WUR;

/* Actions tables and views share: assign-uuid (act->field is the
 * metadata's uuid key, "table-uuid" or "view-uuid"), set-location,
 * set-properties, remove-properties. */
action_fn updates_assign_uuid;
action_fn updates_set_location;
action_fn updates_set_properties;
action_fn updates_remove_properties;

/* The format version of a staged create: that of the first
 * upgrade-format-version update, else 2 (FE_BAD_REQUEST on a bad one). */
bool updates_staged_format(const json_t *updates, int *format, struct floe_error *err) FLOE_WUR;

/* --- snapshots.c: actions of the table in updates.c --- */

action_fn snapshots_add;          /* add-snapshot */
action_fn snapshots_set_ref;      /* set-snapshot-ref */
action_fn snapshots_remove_ref;   /* remove-snapshot-ref */
action_fn snapshots_remove;       /* remove-snapshots */
action_fn snapshots_set_stats;    /* set-(partition-)statistics, kind STATS_* */
action_fn snapshots_remove_stats; /* remove-(partition-)statistics */

/* --- finish.c --- */

/* Post-processing of a commit that changed something: logs, limits and
 * format-dependent fields. base and base_location are NULL for a new
 * table (no metadata-log entry). */
bool finish_commit(struct apply *a, const json_t *base, const char *base_location,
		   struct floe_error *err) FLOE_WUR;

/* Writes the fields that depend on the format version: v1's schema and
 * partition-spec copies (of schema and spec, borrowed; NULL: none), the
 * form of "no current snapshot", next-row-id, last-sequence-number. */
void finish_format_fields(json_t *m, const json_t *schema, const json_t *spec);

/* --- view.c: what viewupdates.c shares with it --- */

/*
 * Checks a view version's shape (version-id, schema-id, timestamp-ms,
 * summary, representations with at most one SQL query per dialect, the
 * dialects compared case-insensitively, default-namespace,
 * default-catalog); not whether its schema exists. FE_BAD_REQUEST.
 */
bool view_version_check(const json_t *v, struct floe_error *err) FLOE_WUR;

/* True when id fits the Java int that view, version and schema ids are. */
bool view_id_in_range(int64_t id);

/* What makes two view versions the same for Java's sameViewVersion
 * (summary, representations, default catalog and namespace, schema id),
 * as a string (new; caller frees), or NULL when out of memory. */
char *view_version_key(const json_t *v);

/* The history size of view properties props ("version.history.num-entries",
 * default 10): FE_BAD_REQUEST unless a positive integer. */
bool view_history_size(const json_t *props, int64_t *size, struct floe_error *err) FLOE_WUR;

#endif
