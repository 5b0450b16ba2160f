/*
 * tables.c - tables the failure tests start from, made by the real
 * metadata engine and put into the fake store and files.
 */
#include "fakes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "table.h"
#include "tablemeta.h"
#include "uuid.h"
#include "wap.h"

json_t *fake_new_table(const char *key, const char *location)
{
	struct floe_error err;
	char uuid[UUID_STR_LEN];
	char *loc = NULL;
	json_t *body = json_pack("{s:s, s:{s:s, s:i, s:[{s:i, s:s, s:b, s:s}]}}", "name", key,
				 "schema", "type", "struct", "schema-id", 0, "fields", "id", 1,
				 "name", "x", "required", false, "type", "int");
	json_t *m = NULL;

	if (body == NULL || !uuid_v4(uuid))
		goto done;
	m = tablemeta_create(body, location, uuid, 1700000000000LL, &err);
	if (m == NULL)
		goto done;
	char *text = json_dumps(m, JSON_COMPACT);
	bool written = text != NULL &&
		       fileio_write_metadata(location, 0, text, strlen(text), &loc, &err);
	free(text);
	if (!written) {
		json_decref(m);
		m = NULL;
		goto done;
	}
	fake_store_add_table(key, m, loc);
done:
	free(loc);
	json_decref(body);
	return m;
}

bool fake_start(struct table_env *env, struct ns_ident *ns)
{
	struct floe_error err;
	json_t *levels = json_pack("[s]", "db");
	bool ok = levels != NULL && ident_ns_from_json(levels, "namespace", ns, &err);

	fake_reset();
	memset(env, 0, sizeof(*env));
	env->warehouse = "file:///wh";
	env->warehouse_path = "/wh";
	env->request_id = "test";
	json_decref(levels);
	return ok;
}

json_t *fake_snapshot_updates(const char *location, long long id, long long parent, const char *ref)
{
	char list[512];

	snprintf(list, sizeof(list), "%s/metadata/snap-%lld.avro", location, id);
	json_t *snap = json_pack("{s:I, s:I, s:s, s:{s:s}, s:i, s:I}", "snapshot-id",
				 (json_int_t)id, "timestamp-ms", (json_int_t)(1700000000000LL + id),
				 "manifest-list", list, "summary", "operation", "append",
				 "schema-id", 0, "sequence-number", (json_int_t)id);
	if (snap != NULL && parent > 0)
		json_object_set_new(snap, "parent-snapshot-id", json_integer(parent));
	return json_pack("[{s:s, s:o}, {s:s, s:s, s:s, s:I}]", "action", "add-snapshot", "snapshot",
			 snap, "action", "set-snapshot-ref", "ref-name", ref, "type", "branch",
			 "snapshot-id", (json_int_t)id);
}

bool fake_other_writer(const char *key, json_t *updates, struct floe_error *err)
{
	json_t *base = fake_store_metadata(key);
	bool changed = false;
	json_t *m = tablemeta_apply(base, fake_store_location(key), updates, 1700000001000LL,
				    &changed, err);

	if (m != NULL)
		fake_store_other_commit(key, m);
	json_decref(m);
	json_decref(base);
	json_decref(updates);
	return m != NULL;
}

bool fake_wap_table(const char *hook_id, char *uuid, size_t len)
{
	struct floe_error err;
	json_t *m = fake_new_table("db.t", FAKE_WAP_LOCATION);

	if (m == NULL)
		return false;
	snprintf(uuid, len, "%s", json_string_value(json_object_get(m, "table-uuid")));
	json_decref(m);
	if (!fake_other_writer("db.t", fake_snapshot_updates(FAKE_WAP_LOCATION, 1, 0, "main"),
			       &err) ||
	    !fake_other_writer("db.t", fake_snapshot_updates(FAKE_WAP_LOCATION, 2, 1, "audit"),
			       &err))
		return false;
	json_t *hooks = json_pack("[{s:s, s:s, s:s, s:n, s:i}]", "id", hook_id, "name", "auditor",
				  "url", "http://auditor.example/", "secret", "timeout-ms", 1000);
	if (hooks == NULL)
		return false;
	fake_store_set_hooks(hooks);
	json_decref(hooks);
	return true;
}

json_t *fake_publish(const struct table_env *env, const struct ns_ident *ns, const char *run_id,
		     struct floe_error *err)
{
	json_t *body = json_object();
	json_t *out = wap_publish(fake_store_pool(), env, ns, "t", run_id, body, err);

	json_decref(body);
	return out;
}
