/*
 * updates.c - the update actions of a commit, as Iceberg's
 * TableMetadata.Builder applies them: one table (actions[]) maps each
 * action name to its function and the parameters it shares with its
 * siblings, and both tablemeta_check_actions and updates_apply look a name
 * up there. Not how entries are indexed (apply.c) nor what follows the
 * last update (finish.c).
 */
#include "meta_internal.h"

#include "json.h"
#include "tablemeta.h"
#include "uuid.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

bool updates_assign_uuid(struct apply *a, const json_t *u, const struct action *act,
			 struct floe_error *err)
{
	const char *uuid = fjson_get_str(u, "uuid");

	if (uuid == NULL)
		return meta_bad(err, "assign-uuid: missing required field 'uuid'");
	if (!uuid_is_canonical(uuid))
		return meta_bad(err, "assign-uuid: '%.64s' is not a UUID (8-4-4-4-12 hex digits)",
				uuid);
	/* As in Java's TableMetadata.Builder and ViewMetadata.Builder: the
	 * same uuid is a no-op, a table or view that has one keeps it. */
	const char *cur = fjson_get_str(a->m, act->field);
	if (cur != NULL && strcasecmp(cur, uuid) == 0)
		return true;
	if (cur != NULL)
		return meta_bad(err, "Cannot reassign uuid: the %s is %s, not %s", act->field, cur,
				uuid);
	json_object_set_new(a->m, act->field, json_string(uuid));
	a->changed = true;
	return true;
}

static bool up_upgrade_format(struct apply *a, const json_t *u, const struct action *act,
			      struct floe_error *err)
{
	int64_t v;

	if (!fjson_get_int(u, "format-version", act->name, NULL, &v, err))
		return false;
	int cur = meta_format_of(a->m);
	if (v > TABLEMETA_MAX_FORMAT_VERSION || v < 1)
		return meta_bad(err,
				"Cannot upgrade table to unsupported format version: v%" PRId64
				" (floe supports up to v%d)",
				v, TABLEMETA_MAX_FORMAT_VERSION);
	if (v < cur)
		return meta_bad(err, "Cannot downgrade v%d table to v%" PRId64, cur, v);
	if (v == cur)
		return true;
	fjson_set_int(a->m, "format-version", v);
	if (v >= 3 && json_object_get(a->m, "next-row-id") == NULL)
		fjson_set_int(a->m, "next-row-id", 0);
	a->changed = true;
	return true;
}

/* The id a new entry of list kind gets: schemas and specs the highest + 1
 * (0 for the first), sort orders 0 when unsorted, else at least 1. */
static int64_t fresh_list_id(struct apply *a, int kind, const json_t *entry)
{
	if (kind == LIST_ORDERS) {
		if (json_array_size(json_object_get(entry, "fields")) == 0)
			return 0;
		int64_t id = apply_list_highest(a, kind) + 1;
		return id < 1 ? 1 : id;
	}
	if (idmap_count(a->lists[kind].pos) == 0)
		return 0;
	return apply_list_highest(a, kind) + 1;
}

/*
 * Adds entry (stolen) to list kind under a fresh id, unless an identical
 * entry is there: then *found is true, *id is that entry's, and the one
 * last added in this commit is it only if this commit added it (so a
 * later -1 can still fail, as in Java).
 */
static bool add_unless_known(struct apply *a, int kind, json_t *entry, int64_t *id, bool *found,
			     struct floe_error *err)
{
	bool ok;

	*id = apply_list_find(a, kind, entry, &ok, err);
	*found = *id != NONE_ADDED;
	if (!ok || *found) {
		if (*found)
			a->last[kind] = idmap_has(a->added[kind], *id) ? *id : NONE_ADDED;
		json_decref(entry);
		return ok;
	}
	*id = fresh_list_id(a, kind, entry);
	fjson_set_int(entry, apply_lists[kind].idkey, *id);
	return apply_list_add(a, kind, *id, entry, err);
}

static bool up_add_schema(struct apply *a, const json_t *u, const struct action *act,
			  struct floe_error *err)
{
	const json_t *schema = json_object_get(u, "schema");
	int64_t highest, id;
	bool found;

	(void)act;
	if (schema == NULL)
		return meta_bad(err, "add-schema: missing required field 'schema'");
	if (!schema_check(schema, meta_format_of(a->m), &highest, NULL, err))
		return false;
	int64_t last_col = fjson_int_or(a->m, "last-column-id", 0);
	int64_t new_last = highest > last_col ? highest : last_col;
	json_t *copy = json_deep_copy(schema);
	if (copy == NULL)
		return meta_oom(err);
	json_object_set_new(copy, "type", json_string("struct"));
	/* An identical schema (fields and identifier fields) keeps its id. */
	if (!add_unless_known(a, LIST_SCHEMAS, copy, &id, &found, err))
		return false;
	if (found && new_last == last_col)
		return true;
	fjson_set_int(a->m, "last-column-id", new_last);
	a->last[LIST_SCHEMAS] = id;
	a->changed = true;
	return true;
}

/* Resolves -1 to the one added last in this commit. */
static bool resolve_last(int64_t *id, int64_t last, const char *what, struct floe_error *err)
{
	if (*id != -1)
		return true;
	if (last == NONE_ADDED)
		return meta_bad(err, "Cannot set last added %s: no %s has been added", what, what);
	*id = last;
	return true;
}

/* set-current-schema, set-default-spec, set-default-sort-order. */
static bool up_set_default(struct apply *a, const json_t *u, const struct action *act,
			   struct floe_error *err)
{
	const struct list_kind *lk = &apply_lists[act->kind];
	int64_t id;
	bool ok;

	if (!fjson_get_int(u, act->field, act->name, NULL, &id, err) ||
	    !resolve_last(&id, a->last[act->kind], lk->last_noun, err))
		return false;
	if (id == fjson_int_or(a->m, lk->current_key, -1))
		return true;
	if (apply_list_get(a, act->kind, id, &ok, err) == NULL)
		return ok ? meta_bad(err, "Cannot set %s to unknown %s: %" PRId64, lk->current,
				     lk->noun, id)
			  : false;
	fjson_set_int(a->m, lk->current_key, id);
	a->changed = true;
	return true;
}

/*
 * The 'fields' array of the entry an add-spec or add-sort-order carries
 * (in its field act->field), and the schema they are bound to (*schema:
 * borrowed, NULL when there is none; *schema_id its id). That is the
 * current schema; a table being created that has none yet binds to schema
 * 0, as Java's fresh TableMetadata.Builder does (its current schema id
 * starts at 0), so a create may add its spec before set-current-schema.
 * False with FE_BAD_REQUEST on a bad shape, or when out of memory.
 */
static bool bound_fields(struct apply *a, const json_t *u, const struct action *act,
			 const json_t **fields, const json_t **schema, int64_t *schema_id,
			 struct floe_error *err)
{
	const json_t *entry = json_object_get(u, act->field);
	bool ok;

	*fields = json_object_get(entry, "fields");
	*schema_id = fjson_int_or(a->m, "current-schema-id", -1);
	if (*schema_id < 0)
		*schema_id = 0;
	*schema = apply_list_get(a, LIST_SCHEMAS, *schema_id, &ok, err);
	if (!ok)
		return false;
	if (!json_is_object(entry) || !json_is_array(*fields))
		return meta_bad(err, "%s: '%s' must be an object with a 'fields' array", act->name,
				act->field);
	return true;
}

/* The fields of an add-spec bound to the current schema (index): field
 * ids kept as sent, or assigned after *next_pid. New array, or NULL. */
static json_t *spec_fields(struct apply *a, const json_t *fields, const struct idmap *index,
			   int64_t *next_pid, struct floe_error *err)
{
	json_t *nfields = json_array();
	size_t i;
	json_t *f;

	json_array_foreach(fields, i, f) {
		bool present;
		int64_t fid = 0;
		if (!schema_partition_field_check(f, index, err) ||
		    !fjson_get_int(f, "field-id", "partition field", &present, &fid, err))
			goto fail;
		if (!present)
			fid = ++*next_pid;
		if (meta_format_of(a->m) == 1 && fid != META_PARTITION_DATA_ID_START + (int64_t)i) {
			meta_bad(err, "add-spec: a v1 spec needs sequential field ids from %d",
				 META_PARTITION_DATA_ID_START);
			goto fail;
		}
		json_t *nf = json_deep_copy(f);
		fjson_set_int(nf, "field-id", fid);
		json_array_append_new(nfields, nf);
		if (fid > *next_pid)
			*next_pid = fid;
	}
	return nfields;
fail:
	json_decref(nfields);
	return NULL;
}

static bool up_add_spec(struct apply *a, const json_t *u, const struct action *act,
			struct floe_error *err)
{
	const json_t *fields, *schema;
	const struct idmap *index = NULL;
	bool found;
	int64_t id, schema_id;

	if (!bound_fields(a, u, act, &fields, &schema, &schema_id, err))
		return false;
	/* An unpartitioned spec binds to no column, so it needs no schema. */
	if (schema == NULL && json_array_size(fields) > 0)
		return meta_bad(err, "add-spec: the table has no current schema");
	if (schema != NULL) {
		index = apply_current_fields(a, schema_id, schema, err);
		if (index == NULL)
			return false;
	}
	int64_t last_pid = fjson_int_or(a->m, "last-partition-id",
					META_PARTITION_DATA_ID_START - 1);
	int64_t next_pid = last_pid;
	json_t *nfields = spec_fields(a, fields, index, &next_pid, err);
	if (nfields == NULL)
		return false;
	json_t *nspec = json_pack("{s:I, s:o}", "spec-id", (json_int_t)0, "fields", nfields);
	if (nspec == NULL)
		return meta_oom(err);
	if (!add_unless_known(a, LIST_SPECS, nspec, &id, &found, err))
		return false;
	if (!found)
		fjson_set_int(a->m, "last-partition-id", next_pid > last_pid ? next_pid : last_pid);
	return true;
}

static bool up_add_sort_order(struct apply *a, const json_t *u, const struct action *act,
			      struct floe_error *err)
{
	const json_t *fields, *schema;
	const struct idmap *index = NULL;
	bool found;
	int64_t id, schema_id;
	size_t i;
	json_t *f;

	if (!bound_fields(a, u, act, &fields, &schema, &schema_id, err))
		return false;
	if (json_array_size(fields) > 0 && schema != NULL) {
		index = apply_current_fields(a, schema_id, schema, err);
		if (index == NULL)
			return false;
	}
	json_array_foreach(fields, i, f) {
		if (!schema_sort_field_check(f, index, err))
			return false;
	}
	if (json_array_size(fields) > 0 && schema == NULL)
		return meta_bad(err, "add-sort-order: the table has no current schema");
	json_t *norder = json_pack("{s:I, s:O}", "order-id", (json_int_t)0, "fields", fields);
	if (norder == NULL)
		return meta_oom(err);
	return add_unless_known(a, LIST_ORDERS, norder, &id, &found, err);
}

/* remove-partition-specs and remove-schemas. */
static bool up_remove_ids(struct apply *a, const json_t *u, const struct action *act,
			  struct floe_error *err)
{
	const struct list_kind *lk = &apply_lists[act->kind];
	const json_t *ids = json_object_get(u, act->field);
	size_t i;
	json_t *v;

	if (!json_is_array(ids))
		return meta_bad(err, "'%s' must be an array of integers", act->field);
	json_array_foreach(ids, i, v) {
		if (!json_is_integer(v))
			return meta_bad(err, "'%s' must be an array of integers", act->field);
		if (json_integer_value(v) == fjson_int_or(a->m, lk->current_key, -1))
			return meta_bad(err, "Cannot remove the %s %" PRId64, lk->current,
					(int64_t)json_integer_value(v));
	}
	if (apply_list(a, act->kind, err) == NULL)
		return false;
	if (act->kind == LIST_SCHEMAS) {
		idmap_free(a->cur_fields);
		a->cur_fields = NULL;
	}
	json_array_foreach(ids, i, v) {
		if (!apply_list_remove(a, act->kind, json_integer_value(v), err))
			return false;
	}
	return true;
}

bool updates_set_location(struct apply *a, const json_t *u, const struct action *act,
			  struct floe_error *err)
{
	const char *loc = fjson_get_str(u, "location");

	(void)act;
	if (loc == NULL || *loc == '\0')
		return meta_bad(err, "set-location: missing required field 'location'");
	char *s = create_strip_trailing_slash(loc);
	if (s == NULL)
		return meta_oom(err);
	const char *cur = fjson_get_str(a->m, "location");
	if (cur == NULL || strcmp(cur, s) != 0) {
		json_object_set_new(a->m, "location", json_string(s));
		a->changed = true;
	}
	free(s);
	return true;
}

bool updates_set_properties(struct apply *a, const json_t *u, const struct action *act,
			    struct floe_error *err)
{
	const json_t *upd = json_object_get(u, "updates");
	const char *k;
	json_t *v;

	(void)act;
	if (upd == NULL)
		upd = json_object_get(u, "updated");
	if (upd == NULL)
		return meta_bad(err, "set-properties: missing required field 'updates'");
	if (!fjson_check_string_map(upd, "set-properties updates", err))
		return false;
	json_t *props = fjson_object_field(a->m, "properties");
	json_object_foreach((json_t *)upd, k, v) {
		if (!json_equal(json_object_get(props, k), v)) {
			json_object_set(props, k, v);
			a->changed = true;
		}
	}
	return true;
}

bool updates_remove_properties(struct apply *a, const json_t *u, const struct action *act,
			       struct floe_error *err)
{
	const json_t *rem = json_object_get(u, "removals");
	size_t i;
	json_t *v;

	(void)act;
	if (rem == NULL)
		rem = json_object_get(u, "removed");
	if (!fjson_is_array_of(rem, JSON_STRING))
		return meta_bad(err, "remove-properties: 'removals' must be an array of strings");
	json_t *props = fjson_object_field(a->m, "properties");
	json_array_foreach(rem, i, v) {
		if (json_object_del(props, json_string_value(v)) == 0)
			a->changed = true;
	}
	return true;
}

static bool up_add_encryption_key(struct apply *a, const json_t *u, const struct action *act,
				  struct floe_error *err)
{
	const json_t *key = json_object_get(u, "encryption-key");
	const char *kid = fjson_get_str(key, "key-id");
	bool appended;

	(void)act;
	if (!json_is_object(key) || kid == NULL)
		return meta_bad(err,
				"add-encryption-key: 'encryption-key' needs a string 'key-id'");
	if (!json_is_string(json_object_get(key, "encrypted-key-metadata")))
		return meta_bad(
			err, "add-encryption-key: 'encryption-key' needs 'encrypted-key-metadata'");
	json_t *keys = fjson_array_field(a->m, "encryption-keys");
	json_t *index = apply_key_index(a, err);
	if (index == NULL)
		return false;
	json_t *pos = json_object_get(index, kid);
	if (!apply_put_entry(a, keys, pos != NULL, (size_t)json_integer_value(pos), key, &appended,
			     err))
		return false;
	if (appended &&
	    json_object_set_new(index, kid, json_integer((json_int_t)json_array_size(keys) - 1)) !=
		    0)
		return meta_oom(err);
	return true;
}

static bool up_remove_encryption_key(struct apply *a, const json_t *u, const struct action *act,
				     struct floe_error *err)
{
	const char *kid = fjson_get_str(u, "key-id");

	(void)act;
	if (kid == NULL)
		return meta_bad(err, "remove-encryption-key: missing required field 'key-id'");
	json_t *keys = fjson_array_field(a->m, "encryption-keys");
	json_t *index = apply_key_index(a, err);
	if (index == NULL)
		return false;
	json_t *pos = json_object_get(index, kid);
	if (pos == NULL)
		return true;
	size_t i = (size_t)json_integer_value(pos);
	if (fjson_get_str(json_array_get(keys, i), "key-id") == NULL)
		return true;
	/* A hole keeps the other positions; finish_commit compacts. */
	json_array_set_new(keys, i, json_null());
	json_object_del(index, kid);
	a->holes = true;
	a->changed = true;
	return true;
}

/* Every update action floe knows: the one list of their names. */
static const struct action actions[] = {
	{ "assign-uuid", updates_assign_uuid, 0, "table-uuid" },
	{ "upgrade-format-version", up_upgrade_format, 0, NULL },
	{ "add-schema", up_add_schema, 0, NULL },
	{ "set-current-schema", up_set_default, LIST_SCHEMAS, "schema-id" },
	{ "add-spec", up_add_spec, LIST_SPECS, "spec" },
	{ "set-default-spec", up_set_default, LIST_SPECS, "spec-id" },
	{ "add-sort-order", up_add_sort_order, LIST_ORDERS, "sort-order" },
	{ "set-default-sort-order", up_set_default, LIST_ORDERS, "sort-order-id" },
	{ "add-snapshot", snapshots_add, 0, NULL },
	{ "set-snapshot-ref", snapshots_set_ref, 0, NULL },
	{ "remove-snapshot-ref", snapshots_remove_ref, 0, NULL },
	{ "remove-snapshots", snapshots_remove, 0, NULL },
	{ "set-location", updates_set_location, 0, NULL },
	{ "set-properties", updates_set_properties, 0, NULL },
	{ "remove-properties", updates_remove_properties, 0, NULL },
	{ "set-statistics", snapshots_set_stats, STATS_SNAPSHOT, NULL },
	{ "remove-statistics", snapshots_remove_stats, STATS_SNAPSHOT, NULL },
	{ "set-partition-statistics", snapshots_set_stats, STATS_PARTITION, NULL },
	{ "remove-partition-statistics", snapshots_remove_stats, STATS_PARTITION, NULL },
	{ "remove-partition-specs", up_remove_ids, LIST_SPECS, "spec-ids" },
	{ "remove-schemas", up_remove_ids, LIST_SCHEMAS, "schema-ids" },
	{ "add-encryption-key", up_add_encryption_key, 0, NULL },
	{ "remove-encryption-key", up_remove_encryption_key, 0, NULL },
};

/* The table entry of the action called name (NULL: none). */
static const struct action *action_named(const char *name)
{
	for (size_t i = 0; name != NULL && i < sizeof(actions) / sizeof(actions[0]); i++) {
		if (strcmp(actions[i].name, name) == 0)
			return &actions[i];
	}
	return NULL;
}

/* The action of update u (a table entry), or NULL with FE_BAD_REQUEST;
 * who names the update in the message ("update 3"). */
static const struct action *action_of(const json_t *u, const char *who, struct floe_error *err)
{
	const char *name = fjson_get_str(u, "action");
	const struct action *act = action_named(name);

	if (!json_is_object(u) || name == NULL)
		return meta_bad(err, "%s needs a string 'action'", who), NULL;
	if (act == NULL)
		return meta_bad(err, "unknown update action '%s'", name), NULL;
	return act;
}

bool tablemeta_check_actions(const json_t *updates, struct floe_error *err)
{
	size_t i;
	json_t *u;

	if (!json_is_array(updates))
		return meta_bad(err, "'updates' must be an array");
	json_array_foreach(updates, i, u) {
		char who[32];
		(void)snprintf(who, sizeof(who), "update %zu", i);
		if (action_of(u, who, err) == NULL)
			return false;
	}
	return true;
}

bool updates_apply(struct apply *a, const json_t *updates, struct floe_error *err)
{
	size_t i;
	json_t *u;

	if (updates == NULL || json_is_null(updates))
		return true;
	if (!json_is_array(updates))
		return meta_bad(err, "'updates' must be an array");
	json_array_foreach(updates, i, u) {
		const struct action *act = action_of(u, "an update", err);
		if (act == NULL || !act->apply(a, u, act, err))
			return false;
	}
	return true;
}

bool updates_staged_format(const json_t *updates, int *format, struct floe_error *err)
{
	size_t i;
	json_t *u;

	*format = 2;
	json_array_foreach(updates, i, u) {
		const struct action *act = action_named(fjson_get_str(u, "action"));
		int64_t v;
		if (act == NULL || act->apply != up_upgrade_format)
			continue;
		if (!fjson_get_int(u, "format-version", act->name, NULL, &v, err))
			return false;
		if (v < 1 || v > TABLEMETA_MAX_FORMAT_VERSION)
			return meta_bad(err,
					"unsupported format version %" PRId64
					": floe supports 1 to %d",
					v, TABLEMETA_MAX_FORMAT_VERSION);
		*format = (int)v;
		return true;
	}
	return true;
}
