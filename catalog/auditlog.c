/*
 * auditlog.c - the audit log: appending an event in the caller's
 * transaction, and reading the log page by page with a cursor that never
 * skips an event of a transaction still running, nor one written after a
 * failover (auditlog.h).
 */
#include "auditlog.h"

#include <string.h>

#include "hookspec.h"
#include "log.h"
#include "ports.h"
#include "position.h"
#include "rowjson.h"
#include "timefmt.h"

/* The most events one page lists. */
#define EVENTS_PAGE_MAX 1000

struct store_actor audit_actor(const struct table_env *env)
{
	struct store_actor who = {
		.request_id = env->request_id,
		.principal = env->principal,
		.client_id = env->client_id,
	};
	return who;
}

const char *audit_principal(const struct table_env *env)
{
	return env->principal != NULL ? env->principal : "anonymous";
}

bool audit_record(struct store *s, const struct table_env *env, const char *event,
		  const struct ns_ident *ns, const char *table, const char *run_id, json_t *details,
		  struct floe_error *err)
{
	struct store_actor who = audit_actor(env);
	bool ok = store_event_insert(s, event, &who, ns, table, run_id, details, err);

	if (!ok)
		log_error("audit", "cannot record %s for run %s: %s rid=%s", event,
			  run_id ? run_id : "-", err->message, env->request_id);
	json_decref(details);
	return ok;
}

/* A page token: the position of the last event served, as the change
 * feed's (position.h), or "<xid>-<id>" as floe issued it before (taken
 * as of the current timeline). */
static bool parse_log_token(const char *token, struct feed_position *pos)
{
	char dotted[POSITION_TOKEN_MAX];
	const char *dash = strchr(token, '-');
	size_t n = strlen(token);

	if (dash == NULL)
		return position_parse(token, pos);
	/* The older form is the two-part token with a dash for the dot. */
	if (n >= sizeof(dotted) || strchr(token, '.') != NULL || strchr(dash + 1, '-') != NULL) {
		memset(pos, 0, sizeof(*pos));
		return false;
	}
	memcpy(dotted, token, n + 1);
	dotted[dash - token] = '.';
	return position_parse(dotted, pos);
}

/* An audit event as the API shows it (new reference). */
static json_t *event_json(const void *row)
{
	const struct event_row *e = row;

	return json_pack("{s:I, s:s, s:s, s:s, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o}", "id",
			 (json_int_t)e->id, "at", e->at, "event", e->event, "principal",
			 e->principal, "client-id",
			 e->client_id ? json_string(e->client_id) : json_null(), "request-id",
			 e->request_id ? json_string(e->request_id) : json_null(), "namespace",
			 e->ns.nlevels > 0 ? ident_ns_to_json(&e->ns) : json_null(), "table",
			 e->table ? json_string(e->table) : json_null(), "run-id",
			 e->run_id ? json_string(e->run_id) : json_null(), "details",
			 rowjson_text(e->details), "chain-position",
			 e->chain_position > 0 ? json_integer(e->chain_position) : json_null(),
			 "chain-hash", e->chain_hash[0] ? json_string(e->chain_hash) : json_null());
}

json_t *audit_log_list(struct store *s, const struct ns_ident *ns, const char *table,
		       const char *run_id, const char *since, const char *token, long page_size,
		       struct floe_error *err)
{
	struct feed_position after = { .id = 0 };
	struct feed_here here;
	struct event_row *rows = NULL;
	size_t count = 0;
	json_t *events = NULL;
	bool more = false;

	if (run_id != NULL && !hook_id_valid(run_id))
		return floe_err(err, FE_BAD_REQUEST, "run must be a run id (a UUID)"), NULL;
	if (token != NULL && *token != '\0' && !parse_log_token(token, &after))
		return floe_err(err, FE_BAD_REQUEST, "pageToken is not a token this server issued"),
		       NULL;
	/* Checked here: PostgreSQL's timestamptz input would also take
	 * "yesterday", "now", "epoch" or "infinity". */
	if (since != NULL && !timefmt_rfc3339_valid(since))
		return floe_err(
			       err, FE_BAD_REQUEST,
			       "query parameter 'since' must be an RFC 3339 time with a zone (2026-12-05T10:00:00Z), not '%.64s'",
			       since),
		       NULL;
	long limit = page_size > EVENTS_PAGE_MAX ? EVENTS_PAGE_MAX : page_size;
	/* A token of another timeline is paged on from only when nothing
	 * after it was lost in the switch: never a silent skip. */
	if (!position_check(s, POSITION_AUDIT_LOG, &after, "pageToken", &here, err))
		return NULL;
	if (!store_event_list(s, after.xid[0] != '\0' ? after.xid : "0", after.id, ns, table,
			      run_id, since, limit, &rows, &count, &more, err)) {
		if (err->kind == FE_BAD_REQUEST)
			floe_err(err, FE_BAD_REQUEST,
				 "query parameter 'since' must be an RFC 3339 timestamp");
		return NULL;
	}
	events = rowjson_array(rows, count, sizeof(*rows), event_json);
	json_t *next = json_null();
	if (events != NULL && more && count > 0) {
		char t[POSITION_TOKEN_MAX];
		position_format(t, sizeof(t), rows[count - 1].xid, rows[count - 1].id, &here);
		next = json_string(t);
	}
	store_event_rows_free(rows, count);
	if (events == NULL)
		return floe_err(err, FE_INTERNAL, "out of memory"), NULL;
	return json_pack("{s:o, s:o}", "events", events, "next-page-token", next);
}
