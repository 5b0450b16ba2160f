/*
 * subscriptions.c - event subscriptions (see subscriptions.h): what a
 * valid registration is, how the API shows one, and the dispatcher
 * thread that pushes each subscription's events.
 *
 * A dispatcher round leases the due subscriptions (each to one floe at a
 * time), reads the next event of each through its filter, calls every
 * receiver at once (hooks.h, in its acknowledgement mode) and records
 * each outcome under its lease: acknowledged, the position moves past
 * the event; failed, the attempt is counted and retried later, or the
 * event is held (dead-letter) when it was the last attempt allowed. No
 * transaction is open while receivers are called.
 */
#include "subscriptions.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "auditlog.h"
#include "control.h"
#include "idem.h"
#include "feed.h"
#include "hookspec.h"
#include "log.h"
#include "metric.h"
#include "position.h"
#include "rowjson.h"
#include "timefmt.h"
#include "uuid.h"
#include "wording.h"
#include "txguard.h"

/* Subscriptions leased per round, and the lease's margin beyond the
 * call's own timeout. */
#define DISPATCH_BATCH 64
#define DISPATCH_LEASE_MARGIN_S 30
/* The wait after a round that failed against the database. */
#define DISPATCH_BACKOFF_MS 1000

bool subscription_id_valid(const char *id)
{
	return uuid_is_canonical(id);
}

/* Writes the audit event of a subscription's change by who, taking
 * details (NULL: out of memory). */
static bool audit(struct store *s, const char *event, const struct store_actor *who,
		  json_t *details, struct floe_error *err)
{
	bool ok = details != NULL
			  ? store_event_insert(s, event, who, NULL, NULL, NULL, details, err)
			  : floe_err(err, FE_INTERNAL, "out of memory");

	json_decref(details);
	return ok;
}

/* --- the API's shape --- */

static json_t *ms_or_null(long long ms)
{
	return ms >= 0 ? json_integer(ms) : json_null();
}

/* A subscription as the API shows it; its position is a token of the
 * events endpoint on here's timeline: the stored position is in this
 * database's history, having survived whatever failover the events did. */
static json_t *sub_json(const struct sub_row *r, const struct feed_here *here)
{
	char position[POSITION_TOKEN_MAX];
	json_t *filter = rowjson_text(r->filter);

	position_format(position, sizeof(position), r->position_xid, r->position_id, here);
	json_t *o = json_pack(
		"{s:s, s:s, s:s, s:b, s:o, s:I, s:i, s:s, s:I, s:o, s:s, s:I, s:o, s:i, s:I}", "id",
		r->id, "name", r->name, "url", r->url, "signed", 1, "filter",
		json_is_object(filter) ? filter : json_object(), "timeout-ms",
		(json_int_t)r->timeout_ms, "max-attempts", r->max_attempts, "state",
		r->dead ? "dead-letter" : "active", "created-at-ms", (json_int_t)r->created_at_ms,
		"created-by", r->created_by != NULL ? json_string(r->created_by) : json_null(),
		"position", position, "delivered", (json_int_t)r->delivered, "last-delivered-at-ms",
		ms_or_null(r->last_delivered_at_ms), "attempts", r->attempts, "next-attempt-at-ms",
		(json_int_t)r->next_attempt_at_ms);
	if (!json_is_object(filter))
		json_decref(filter);
	if (o == NULL)
		return NULL;
	json_t *last = json_null();
	json_t *held = json_null();
	if (r->last_error_event >= 0) {
		char eid[32];
		(void)snprintf(eid, sizeof(eid), "%lld", r->last_error_event);
		json_t *status = r->last_error_status > 0 ? json_integer(r->last_error_status)
							  : json_null();
		last = json_pack("{s:s, s:s, s:o, s:I}", "event-id", eid, "reason",
				 r->last_error_reason != NULL ? r->last_error_reason : "",
				 "http-status", status, "at-ms", (json_int_t)r->last_error_at_ms);
		if (r->dead)
			held = json_pack("{s:s, s:i, s:s, s:O, s:I}", "event-id", eid, "attempts",
					 r->attempts, "reason",
					 r->last_error_reason != NULL ? r->last_error_reason : "",
					 "http-status", status, "since-ms",
					 (json_int_t)r->held_since_ms);
	}
	if (last == NULL || held == NULL || json_object_set_new(o, "last-error", last) != 0 ||
	    json_object_set_new(o, "held-event", held) != 0) {
		json_decref(o);
		return NULL;
	}
	return o;
}

/* The subscription id of s's warehouse as JSON into *out (NULL with
 * FE_NO_SUCH_SUBSCRIPTION when there is none). */
static bool load(struct store *s, const char *id, json_t **out, struct floe_error *err)
{
	struct sub_row row;
	struct feed_here here;
	bool found = false;

	*out = NULL;
	if (!store_sub_get(s, id, &row, &found, err))
		return false;
	if (!found)
		return wording_no_such_subscription(id, err);
	if (!position_here(s, &here, err)) {
		store_sub_row_clear(&row);
		return false;
	}
	*out = sub_json(&row, &here);
	store_sub_row_clear(&row);
	return *out != NULL || floe_err(err, FE_INTERNAL, "out of memory");
}

/* --- registration --- */

static const char *const fields[] = { "name",       "url",          "secret",     "filter",
				      "timeout-ms", "max-attempts", "start-after" };
static const char *const filter_fields[] = { "operation-types", "object-types",
					     "catalog-objects-by-name", "catalog-objects-by-id" };

static bool known(const char *key, const char *const *list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(key, list[i]) == 0)
			return true;
	return false;
}

/* An integer field from lo to hi, *out left as it is when absent. */
static bool int_field(const json_t *body, const char *field, long lo, long hi, long *out,
		      struct floe_error *err)
{
	const json_t *v = json_object_get(body, field);

	if (v == NULL || json_is_null(v))
		return true;
	if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
		return floe_err(err, FE_BAD_REQUEST,
				"field '%s' must be an integer from %ld to %ld", field, lo, hi);
	*out = (long)json_integer_value(v);
	return true;
}

/* The filter as given, checked as the events endpoint checks it; *text
 * is its JSON (caller frees). */
static bool filter_read(const json_t *body, char **text, struct floe_error *err)
{
	const json_t *f = json_object_get(body, "filter");
	struct feed_filter parsed;
	const char *key;
	json_t *v;

	*text = NULL;
	if (f == NULL || json_is_null(f)) {
		*text = strdup("{}");
		return *text != NULL || floe_err(err, FE_INTERNAL, "out of memory");
	}
	if (!json_is_object(f))
		return floe_err(err, FE_BAD_REQUEST, "field 'filter' must be an object");
	json_object_foreach((json_t *)f, key, v) {
		if (!known(key, filter_fields, sizeof(filter_fields) / sizeof(filter_fields[0])))
			return floe_err(
				err, FE_BAD_REQUEST,
				"filter.%.64s is not a filter floe knows: operation-types, object-types, catalog-objects-by-name, catalog-objects-by-id",
				key);
	}
	if (!feed_filter_parse(f, &parsed, err))
		return false;
	feed_filter_clear(&parsed);
	*text = json_dumps(f, JSON_COMPACT | JSON_SORT_KEYS);
	return *text != NULL || floe_err(err, FE_INTERNAL, "out of memory");
}

static bool string_field(const json_t *body, const char *field, size_t max, const char **out,
			 struct floe_error *err)
{
	const json_t *v = json_object_get(body, field);

	if (!json_is_string(v) || json_string_length(v) == 0)
		return floe_err(err, FE_BAD_REQUEST, "field '%s' must be a non-empty string",
				field);
	if (json_string_length(v) > max)
		return floe_err(err, FE_BAD_REQUEST, "field '%s' is longer than %zu bytes", field,
				max);
	if (strlen(json_string_value(v)) != json_string_length(v))
		return floe_err(err, FE_BAD_REQUEST, "field '%s' must not contain NUL", field);
	*out = json_string_value(v);
	return true;
}

json_t *subscription_create(struct store *s, const struct table_env *env, const json_t *body,
			    struct floe_error *err)
{
	struct sub_row row = { .timeout_ms = SUB_TIMEOUT_DEFAULT_MS,
			       .max_attempts = SUB_ATTEMPTS_DEFAULT };
	struct feed_position start = { .id = 0 };
	const char *name = NULL, *url = NULL, *secret = NULL;
	const char *key;
	json_t *v;
	json_t *out = NULL;
	char *filter = NULL;
	char *sealed = NULL;
	long attempts = SUB_ATTEMPTS_DEFAULT;
	bool from_token = false;

	if (!json_is_object(body))
		return floe_err(err, FE_BAD_REQUEST, "the body must be a subscription object"),
		       NULL;
	json_object_foreach((json_t *)body, key, v) {
		if (!known(key, fields, sizeof(fields) / sizeof(fields[0])))
			return floe_err(err, FE_BAD_REQUEST,
					"field '%.64s' is not a field of a subscription", key),
			       NULL;
	}
	const json_t *sec = json_object_get(body, "secret");
	if (!string_field(body, "name", 255, &name, err) ||
	    !string_field(body, "url", 2048, &url, err))
		return NULL;
	if (!json_is_string(sec) || json_string_length(sec) < SUB_SECRET_MIN ||
	    json_string_length(sec) > SUB_SECRET_MAX ||
	    strlen(json_string_value(sec)) != json_string_length(sec))
		return floe_err(
			       err, FE_BAD_REQUEST,
			       "field 'secret' must be a string of %d to %d bytes: every delivery is signed with it",
			       SUB_SECRET_MIN, SUB_SECRET_MAX),
		       NULL;
	secret = json_string_value(sec);
	if (!int_field(body, "timeout-ms", 1, SUB_TIMEOUT_MAX_MS, &row.timeout_ms, err) ||
	    !int_field(body, "max-attempts", 1, SUB_ATTEMPTS_MAX, &attempts, err) ||
	    !hook_url_check(url, env->hook_policy, err))
		return NULL;
	row.max_attempts = (int)attempts;
	const json_t *after = json_object_get(body, "start-after");
	if (after != NULL && !json_is_null(after)) {
		if (!json_is_string(after))
			return floe_err(
				       err, FE_BAD_REQUEST,
				       "field 'start-after' must be a continuation token of the events endpoint"),
			       NULL;
		if (!position_parse(json_string_value(after), &start))
			return floe_err(
				       err, FE_BAD_REQUEST,
				       "field 'start-after' is not a continuation token this server issued"),
			       NULL;
		/* Never a subscription that silently starts past lost events. */
		struct feed_here here;
		if (!position_check(s, POSITION_CHANGE_FEED, &start, "start-after", &here, err))
			return NULL;
		from_token = true;
	}
	if (!filter_read(body, &filter, err))
		return NULL;
	if (!uuid_v4(row.id)) {
		free(filter);
		return floe_err(err, FE_INTERNAL, "no randomness for a subscription id"), NULL;
	}
	/* Only the sealed secret ever reaches the database. */
	sealed = hooksecrets_seal(env->hook_sealer, row.id, secret, err);
	if (sealed == NULL) {
		free(filter);
		return NULL;
	}
	row.name = (char *)name;
	row.url = (char *)url;
	row.secret = sealed;
	row.filter = filter;
	row.created_by = (char *)env->principal;
	bool ok = store_begin(s, err) &&
		  store_sub_insert(s, &row, from_token ? start.xid : NULL, start.id, err) &&
		  load(s, row.id, &out, err);
	if (ok) {
		struct store_actor who = audit_actor(env);
		ok = audit(s, "subscription.created", &who,
			   json_pack("{s:s, s:s, s:s, s:O}", "subscription-id", row.id, "name",
				     name, "url", url, "filter", json_object_get(out, "filter")),
			   err) &&
		     idem_record(s, env, 201, out, err);
	}
	free(filter);
	free(sealed);
	if (!control_finish_tx(s, ok, err)) {
		json_decref(out);
		return NULL;
	}
	return out;
}

json_t *subscription_list(struct store *s, struct floe_error *err)
{
	struct sub_row *rows = NULL;
	struct feed_here here;
	size_t count = 0;

	if (!position_here(s, &here, err) || !store_sub_list(s, &rows, &count, err))
		return NULL;
	json_t *list = json_array();
	for (size_t i = 0; list != NULL && i < count; i++) {
		json_t *one = sub_json(&rows[i], &here);
		if (one == NULL || json_array_append_new(list, one) != 0) {
			json_decref(list);
			list = NULL;
		}
	}
	store_sub_rows_free(rows, count);
	json_t *out = list != NULL ? json_pack("{s:o}", "subscriptions", list) : NULL;
	if (out == NULL)
		floe_err(err, FE_INTERNAL, "out of memory");
	return out;
}

json_t *subscription_get(struct store *s, const char *id, struct floe_error *err)
{
	json_t *out = NULL;

	return load(s, id, &out, err) ? out : NULL;
}

bool subscription_delete(struct store *s, const struct table_env *env, const char *id,
			 struct floe_error *err)
{
	json_t *sub = NULL;
	bool deleted = false;

	if (!store_begin(s, err))
		return false;
	bool ok = load(s, id, &sub, err) && store_sub_delete(s, id, &deleted, err);
	if (ok && !deleted)
		ok = wording_no_such_subscription(id, err);
	if (ok) {
		struct store_actor who = audit_actor(env);
		ok = audit(s, "subscription.deleted", &who,
			   json_pack("{s:s, s:O, s:O}", "subscription-id", id, "name",
				     json_object_get(sub, "name"), "position",
				     json_object_get(sub, "position")),
			   err) &&
		     idem_record(s, env, 204, NULL, err);
	}
	json_decref(sub);
	return control_finish_tx(s, ok, err);
}

json_t *subscription_resume(struct store *s, const struct table_env *env, const char *id,
			    const json_t *body, struct floe_error *err)
{
	const json_t *skip = json_object_get(body, "skip-held-event");
	json_t *before = NULL;
	json_t *out = NULL;
	bool resumed = false;

	if (body != NULL && !json_is_null(body) && !json_is_object(body))
		return floe_err(err, FE_BAD_REQUEST, "the body must be an object"), NULL;
	if (skip != NULL && !json_is_null(skip) && !json_is_boolean(skip))
		return floe_err(err, FE_BAD_REQUEST, "field 'skip-held-event' must be a boolean"),
		       NULL;
	bool skipping = json_is_true(skip);
	if (!store_begin(s, err))
		return NULL;
	/* The update resumes only a dead-lettered subscription. */
	bool ok = load(s, id, &before, err) && store_sub_resume(s, id, skipping, &resumed, err);
	if (ok && !resumed)
		ok = floe_err(
			err, FE_SUBSCRIPTION_STATE,
			"Event subscription %s is active: only a subscription in the dead-letter state resumes",
			id);
	if (ok) {
		json_t *held = json_object_get(before, "held-event");
		struct store_actor who = audit_actor(env);
		ok = audit(s, "subscription.resumed", &who,
			   json_pack("{s:s, s:O, s:b}", "subscription-id", id, "held-event-id",
				     json_object_get(held, "event-id"), "skipped", skipping),
			   err) &&
		     load(s, id, &out, err) && idem_record(s, env, 200, out, err);
	}
	json_decref(before);
	if (!control_finish_tx(s, ok, err)) {
		json_decref(out);
		return NULL;
	}
	return out;
}

/* --- the dispatcher --- */

struct dispatcher {
	struct dispatcher_config cfg;
	char *default_name;
	char owner[UUID_STR_LEN + 16]; /* this floe's leases */
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool stopping;
};

/* One subscription's delivery in a round. */
struct delivery_job {
	struct sub_row *sub;
	struct feed_row event;
	bool have_event;
	char *body;
	char *secret; /* opened */
	char event_id[32];
	char type[160];
	char why[256]; /* the secret did not open */
};

/* The object's dotted name: its namespace's levels, then its name. */
static char *subject_of(const struct feed_row *e)
{
	char *ns = ident_ns_display(&e->ns);
	char *out = NULL;

	if (ns == NULL || e->name == NULL)
		return ns;
	size_t n = strlen(ns) + strlen(e->name) + 2;
	out = malloc(n);
	if (out != NULL)
		(void)snprintf(out, n, "%s%s%s", ns, ns[0] != '\0' ? "." : "", e->name);
	free(ns);
	return out;
}

/* The CloudEvent of job's event, as sent and signed (caller frees); its
 * sequence is the event's position, a token of the events endpoint on
 * here's timeline. */
static char *cloudevent(const struct dispatcher *d, struct delivery_job *job,
			const struct feed_here *here)
{
	const struct feed_row *e = &job->event;
	char time[TIMEFMT_RFC3339_LEN], source[300], sequence[POSITION_TOKEN_MAX];
	char *subject = subject_of(e);
	json_t *data = feed_event_json(e);
	char *text = NULL;

	(void)timefmt_rfc3339_ms(e->at_ms, time, sizeof(time));
	(void)snprintf(source, sizeof(source), "/v1/%s",
		       job->sub->warehouse != NULL && job->sub->warehouse[0] != '\0'
			       ? job->sub->warehouse
			       : d->default_name);
	position_format(sequence, sizeof(sequence), e->xid, e->id, here);
	if (subject != NULL && data != NULL) {
		json_t *ce = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:O}",
				       "specversion", "1.0", "id", job->event_id, "source", source,
				       "type", job->type, "subject", subject, "time", time,
				       "datacontenttype", "application/json", "sequence", sequence,
				       "floesubscription", job->sub->id, "data", data);
		if (ce != NULL)
			text = json_dumps(ce, JSON_COMPACT);
		json_decref(ce);
	}
	json_decref(data);
	free(subject);
	return text;
}

/* Reads the next event of job's subscription into job (none:
 * !have_event). */
static bool next_event(struct store *s, struct delivery_job *job, struct floe_error *err)
{
	struct feed_query q = { .since_ms = -1 };
	struct feed_filter filter;
	struct feed_row *rows = NULL;
	size_t count = 0;
	bool more = false;
	json_t *f = rowjson_text(job->sub->filter);

	bool ok = f != NULL && feed_filter_parse(f, &filter, err);
	json_decref(f);
	if (!ok)
		return err->kind != FE_NONE || floe_err(err, FE_INTERNAL, "unreadable filter");
	(void)snprintf(q.after.xid, sizeof(q.after.xid), "%s", job->sub->position_xid);
	q.after.id = job->sub->position_id;
	feed_filter_apply(&filter, &q);
	ok = store_feed_list(s, &q, 1, &rows, &count, &more, err);
	feed_filter_clear(&filter);
	if (!ok)
		return false;
	if (count == 1) {
		job->event = rows[0];
		memset(&rows[0], 0, sizeof(rows[0]));
		job->have_event = true;
		(void)snprintf(job->event_id, sizeof(job->event_id), "%lld", job->event.id);
		(void)snprintf(job->type, sizeof(job->type), "floe.catalog.%.140s",
			       job->event.operation);
	}
	store_feed_rows_free(rows, count);
	return true;
}

/* The wait before the attempt after attempts failed ones. */
static long long retry_wait(const struct dispatcher *d, int attempts)
{
	long long w = (long long)d->cfg.retry_ms << (attempts < 20 ? attempts : 20);

	return w > SUB_RETRY_MAX_MS ? SUB_RETRY_MAX_MS : w;
}

/* Records one call's outcome under the lease; a failure's count and a
 * dead-lettering are one transaction with its audit event. */
static bool record(struct dispatcher *d, struct store *s, struct delivery_job *job,
		   const struct hook_call *call, struct floe_error *err)
{
	struct sub_row *sub = job->sub;
	bool kept = false, dead = false;
	int attempts = 0;

	if (call->verdict == HOOK_PASS) {
		if (!store_sub_delivered(s, sub->id, d->owner, job->event.xid, job->event.id, &kept,
					 err))
			return false;
		if (kept)
			metric_add(METRIC_EVENT_DELIVERIES, METRIC_DELIVERY_DELIVERED, 1);
		return true;
	}
	if (!store_begin(s, err))
		return false;
	bool ok = store_sub_failed(s, sub->id, d->owner, job->event.xid, job->event.id,
				   call->http_status, call->reason, retry_wait(d, sub->attempts),
				   &kept, &dead, &attempts, err);
	if (ok && dead) {
		struct store_actor who = { NULL, "floe", NULL };
		ok = audit(s, "subscription.dead-lettered", &who,
			   json_pack("{s:s, s:s, s:s, s:i, s:s, s:I}", "subscription-id", sub->id,
				     "name", sub->name, "event-id", job->event_id, "attempts",
				     attempts, "reason", call->reason, "http-status",
				     (json_int_t)call->http_status),
			   err);
	}
	if (!control_finish_tx(s, ok, err))
		return false;
	if (!kept)
		return true;
	metric_add(METRIC_EVENT_DELIVERIES,
		   dead ? METRIC_DELIVERY_DEAD_LETTERED : METRIC_DELIVERY_FAILED, 1);
	if (dead)
		log_warn(
			"events",
			"subscription %s (%s): event %s held after %d failed attempt(s), the last: %s; delivery stops until it is resumed",
			sub->id, sub->name, job->event_id, attempts, call->reason);
	else
		log_info("events",
			 "subscription %s (%s): event %s not delivered (attempt %d of %d): %s",
			 sub->id, sub->name, job->event_id, attempts, sub->max_attempts,
			 call->reason);
	return true;
}

static void job_clear(struct delivery_job *job)
{
	store_feed_row_clear(&job->event);
	free(job->body);
	hooksecrets_free(job->secret);
	memset(job, 0, sizeof(*job));
}

/* One round: true when an event was delivered (another round follows at
 * once). */
static bool dispatch_round(struct dispatcher *d, bool *failed)
{
	struct floe_error err;
	struct sub_row *subs = NULL;
	size_t nsubs = 0;
	struct delivery_job jobs[DISPATCH_BATCH];
	struct hook_call calls[DISPATCH_BATCH];
	struct feed_here here;
	size_t ncalls = 0;
	long long active = 0, dead = 0;
	bool delivered = false;

	*failed = false;
	floe_error_clear(&err);
	struct store *s = store_pool_acquire(d->cfg.pool, &err);
	if (s == NULL) {
		*failed = true;
		return false;
	}
	store_use_warehouse(s, "");
	if (store_sub_counts(s, &active, &dead, &err)) {
		metric_set(METRIC_SUBSCRIPTIONS, METRIC_SUB_ACTIVE, active);
		metric_set(METRIC_SUBSCRIPTIONS, METRIC_SUB_DEAD, dead);
	}
	/* Where this round reads the feed: the timeline its sequences name. */
	if (active == 0 || !position_here(s, &here, &err) ||
	    !store_sub_claim(s, d->owner, DISPATCH_LEASE_MARGIN_S, DISPATCH_BATCH, &subs, &nsubs,
			     &err)) {
		*failed = err.kind != FE_NONE;
		store_pool_release(d->cfg.pool, s);
		return false;
	}
	memset(jobs, 0, sizeof(jobs));
	memset(calls, 0, sizeof(calls));
	for (size_t i = 0; i < nsubs && i < DISPATCH_BATCH; i++) {
		struct delivery_job *job = &jobs[ncalls];
		job->sub = &subs[i];
		store_use_warehouse(s, subs[i].warehouse != NULL ? subs[i].warehouse : "");
		floe_error_clear(&err);
		if (!next_event(s, job, &err) || !job->have_event) {
			if (err.kind != FE_NONE)
				log_warn("events", "subscription %s: cannot read the feed: %s",
					 subs[i].id, err.message);
			floe_error_clear(&err);
			if (!store_sub_idle(s, subs[i].id, d->owner, &err))
				*failed = true; /* the lease ends on its own */
			job_clear(job);
			continue;
		}
		struct hook_call *c = &calls[ncalls];
		job->body = cloudevent(d, job, &here);
		job->secret = d->cfg.sealer != NULL
				      ? d->cfg.sealer->open(d->cfg.sealer->ctx, subs[i].id,
							    subs[i].secret, job->why,
							    sizeof(job->why))
				      : NULL;
		c->url = subs[i].url;
		c->secret = job->secret;
		c->delivery_id = job->event_id;
		c->event = job->type;
		c->body = job->body;
		c->timeout_ms = subs[i].timeout_ms;
		c->policy = d->cfg.policy;
		c->notify = true;
		c->content_type = "application/cloudevents+json";
		c->subscription = subs[i].id;
		if (job->secret == NULL) {
			/* Fail closed: never an unsigned delivery. */
			c->refused = true;
			c->verdict = HOOK_ERROR;
			hooks_clean_reason(d->cfg.sealer != NULL ? job->why
								 : "no key to open the secret",
					   c->reason, sizeof(c->reason));
		}
		ncalls++;
	}
	store_use_warehouse(s, "");
	/* No transaction is open and no row is locked while receivers are
	 * called; the leases keep other floes away. */
	TXGUARD_ASSERT_NONE();
	hooks_call_all(calls, ncalls);
	for (size_t i = 0; i < ncalls; i++) {
		store_use_warehouse(s,
				    jobs[i].sub->warehouse != NULL ? jobs[i].sub->warehouse : "");
		floe_error_clear(&err);
		if (!record(d, s, &jobs[i], &calls[i], &err)) {
			/* The lease ends on its own; the event is delivered again. */
			log_warn("events", "subscription %s: cannot record a delivery: %s",
				 jobs[i].sub->id, err.message);
			*failed = true;
		} else if (calls[i].verdict == HOOK_PASS) {
			delivered = true;
		}
		job_clear(&jobs[i]);
	}
	store_use_warehouse(s, "");
	store_sub_rows_free(subs, nsubs);
	store_pool_release(d->cfg.pool, s);
	return delivered;
}

static void *dispatcher_main(void *arg)
{
	struct dispatcher *d = arg;

	pthread_mutex_lock(&d->mu);
	while (!d->stopping) {
		pthread_mutex_unlock(&d->mu);
		bool failed = false;
		bool busy = dispatch_round(d, &failed);
		pthread_mutex_lock(&d->mu);
		if (busy && !failed)
			continue;
		struct timespec until;
		long wait_ms = failed ? DISPATCH_BACKOFF_MS : d->cfg.poll_ms;
		clock_gettime(CLOCK_MONOTONIC, &until);
		until.tv_sec += wait_ms / 1000;
		until.tv_nsec += (wait_ms % 1000) * 1000000L;
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
		while (!d->stopping) {
			if (pthread_cond_timedwait(&d->cv, &d->mu, &until) == ETIMEDOUT)
				break;
		}
	}
	pthread_mutex_unlock(&d->mu);
	return NULL;
}

static void dispatcher_free(struct dispatcher *d)
{
	pthread_mutex_destroy(&d->mu);
	pthread_cond_destroy(&d->cv);
	free(d->default_name);
	free(d);
}

struct dispatcher *dispatcher_start(const struct dispatcher_config *cfg)
{
	struct dispatcher *d = calloc(1, sizeof(*d));
	pthread_condattr_t ca;
	char id[UUID_STR_LEN];

	if (d == NULL || !uuid_v4(id)) {
		log_error("events", "cannot start the event dispatcher: out of memory");
		free(d);
		return NULL;
	}
	d->cfg = *cfg;
	d->default_name = strdup(cfg->default_name != NULL ? cfg->default_name : "warehouse");
	(void)snprintf(d->owner, sizeof(d->owner), "%s", id);
	pthread_mutex_init(&d->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&d->cv, &ca);
	pthread_condattr_destroy(&ca);
	if (d->default_name == NULL) {
		log_error("events", "cannot start the event dispatcher: out of memory");
		dispatcher_free(d);
		return NULL;
	}
	d->cfg.default_name = d->default_name;
	if (pthread_create(&d->thread, NULL, dispatcher_main, d) != 0) {
		log_error("events", "cannot start the event dispatcher thread");
		dispatcher_free(d);
		return NULL;
	}
	log_info("events", "dispatcher started: the feed looked at every %d ms, retries from %d ms",
		 cfg->poll_ms, cfg->retry_ms);
	return d;
}

void dispatcher_stop(struct dispatcher **dp)
{
	struct dispatcher *d = *dp;

	if (d == NULL)
		return;
	pthread_mutex_lock(&d->mu);
	d->stopping = true;
	pthread_cond_signal(&d->cv);
	pthread_mutex_unlock(&d->mu);
	pthread_join(d->thread, NULL);
	dispatcher_free(d);
	*dp = NULL;
}
