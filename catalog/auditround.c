/*
 * auditround.c - one audit round of a publish (auditround.h): the lease,
 * the hook calls made with no transaction open, the record of every call
 * and verdict, and the fence on the lease, for runs and releases alike.
 */
#include "auditround.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auditlog.h"
#include "hooksecrets.h"
#include "log.h"
#include "system.h"
#include "timefmt.h"

/* "<kind>.<what>", the name of one of the round's events. */
static const char *event_name(const struct auditround *r, const char *what, char *buf, size_t len)
{
	(void)snprintf(buf, len, "%s.%s", r->kind, what);
	return buf;
}

/* One <kind>.hook-called event per call made, in the caller's
 * transaction. */
static bool record_calls(struct store *s, const struct auditround *r, struct floe_error *err)
{
	struct store_actor who = audit_actor(r->env);
	char event[64];
	size_t i;
	json_t *d;

	event_name(r, "hook-called", event, sizeof(event));
	json_array_foreach(r->called, i, d) {
		if (!store_event_insert(s, event, &who, r->ns, r->table, r->id, d, err))
			return false;
	}
	return true;
}

/* FE_RUN_STATE: "<Noun> <id> <what>", capitalised as Iceberg's messages
 * are (floe_err leaves a message that starts with %s as it is). */
static bool state_error(const struct auditround *r, const char *what, struct floe_error *err)
{
	char noun[16];

	(void)snprintf(noun, sizeof(noun), "%s", r->noun);
	noun[0] = (char)toupper((unsigned char)noun[0]);
	return floe_err(err, FE_RUN_STATE, "%s %s %s", noun, r->id, what);
}

/* A move out of "auditing" that found the lease another's: FE_RUN_STATE,
 * and the round remembers it so that auditround_end records its calls. */
static bool lease_taken(struct auditround *r, const char *what, struct floe_error *err)
{
	r->lease_lost = true;
	return state_error(r, what, err);
}

bool auditround_claim(struct store *s, struct auditround *r, const char *from, json_t *started,
		      struct floe_error *err)
{
	char event[64];
	bool moved = false;
	bool ok = false;

	r->lease_ms = 0;
	for (size_t i = 0; i < r->n; i++) {
		if ((long)r->hooks[i].timeout_ms > r->lease_ms)
			r->lease_ms = (long)r->hooks[i].timeout_ms;
	}
	r->lease_ms += AUDITROUND_LEASE_MARGIN_MS;
	/* The lease and its audit-started event land together. The lease
	 * token fences this round: once another publish has taken the lease
	 * over, nothing this one learns is written as an outcome. */
	if (!uuid_v4(r->lease)) {
		floe_err(err, FE_INTERNAL, "no randomness for a lease token");
		goto done;
	}
	if (started == NULL) {
		floe_err(err, FE_INTERNAL, "out of memory");
		goto done;
	}
	json_object_set_new(started, "hooks", json_integer((json_int_t)r->n));
	json_object_set_new(started, "lease-ms", json_integer(r->lease_ms));
	if (!store_begin(s, err))
		goto done;
	if (!r->ops->move(s, r->ctx, from, "auditing", NULL, r->lease_ms, r->lease, &moved, err)) {
		store_rollback(s);
		goto done;
	}
	if (!moved) {
		store_rollback(s);
		state_error(r, "is being published by another request", err);
		goto done;
	}
	struct store_actor who = audit_actor(r->env);
	if (!store_event_insert(s, event_name(r, "audit-started", event, sizeof(event)), &who,
				r->ns, r->table, r->id, started, err)) {
		store_rollback(s);
		goto done;
	}
	ok = store_commit(s, err);
done:
	json_decref(started);
	return ok;
}

/* The payloads and secrets of every call; false when memory ran out. */
static bool prepare_calls(struct auditround *r)
{
	char now[40];

	r->calls = calloc(r->n, sizeof(*r->calls));
	r->bodies = calloc(r->n, sizeof(*r->bodies));
	r->deliveries = calloc(r->n, sizeof(*r->deliveries));
	if (r->calls == NULL || r->bodies == NULL || r->deliveries == NULL)
		return false;
	/* Each secret opened for these calls only; one that does not open
	 * refuses its call (never sent unsigned). */
	if (!hooksecrets_prepare(r->env->hook_sealer, r->hooks, r->n, r->calls, &r->opened))
		log_error(r->kind, "%s %s: out of memory opening the hooks' secrets rid=%s",
			  r->noun, r->id, r->env->request_id);
	(void)timefmt_rfc3339_now(now, sizeof(now));
	event_name(r, "audit", r->event, sizeof(r->event));
	for (size_t i = 0; i < r->n; i++) {
		const struct hook_target *h = &r->hooks[i];
		/* Each call has its own delivery id. */
		if (!uuid_v4(r->deliveries[i]))
			(void)snprintf(r->deliveries[i], UUID_STR_LEN, "%s", r->id);
		r->bodies[i] = r->ops->payload(r->ctx, h, r->deliveries[i], now);
		r->calls[i].url = h->url;
		r->calls[i].delivery_id = r->deliveries[i];
		r->calls[i].event = r->event; /* X-Floe-Event */
		/* NULL: the call is an error verdict and nothing is sent. */
		r->calls[i].body = r->bodies[i];
		r->calls[i].timeout_ms = (long)h->timeout_ms;
		r->calls[i].policy = r->env->hook_policy;
	}
	return true;
}

/* r->audits and r->called from the calls' verdicts. */
static bool keep_verdicts(struct auditround *r)
{
	static const char *const verdicts[] = { "pass", "reject", "error" };

	r->audits = json_array();
	r->called = json_array();
	if (r->audits == NULL || r->called == NULL)
		return false;
	for (size_t i = 0; i < r->n; i++) {
		const struct hook_target *h = &r->hooks[i];
		const struct hook_call *c = &r->calls[i];
		char at[40];
		(void)timefmt_rfc3339_now(at, sizeof(at));
		json_t *a = json_pack("{s:s, s:s, s:s, s:I, s:s}", "hook-id", h->id, "hook-name",
				      h->name, "verdict", verdicts[c->verdict], "latency-ms",
				      (json_int_t)c->latency_ms, "at", at);
		if (a == NULL)
			return false;
		if (c->http_status > 0)
			json_object_set_new(a, "http-status", json_integer(c->http_status));
		if (c->reason[0] != '\0')
			json_object_set_new(a, "reason", json_string(c->reason));
		json_array_append(r->audits, a);
		json_t *details = json_deep_copy(a);
		json_decref(a);
		if (details == NULL)
			return false;
		json_object_set_new(details, "attempts", json_integer(c->attempts));
		json_object_set_new(details, "delivery-id", json_string(r->deliveries[i]));
		if (r->call_extra != NULL)
			json_object_update(details, r->call_extra);
		json_array_append_new(r->called, details);
	}
	return true;
}

/* One <kind>.hook-calling event per call about to be made, committed
 * before any is made: a floe that dies while a hook holds its call (and
 * so never writes <kind>.hook-called) leaves the attempt on record. */
static bool record_calling(struct store *s, const struct auditround *r, struct floe_error *err)
{
	struct store_actor who = audit_actor(r->env);
	char event[64];

	event_name(r, "hook-calling", event, sizeof(event));
	if (!store_begin(s, err))
		return false;
	for (size_t i = 0; i < r->n; i++) {
		const struct hook_target *h = &r->hooks[i];
		json_t *d = json_pack("{s:s, s:s, s:s, s:I}", "hook-id", h->id, "hook-name",
				      h->name, "delivery-id", r->deliveries[i], "timeout-ms",
				      (json_int_t)h->timeout_ms);
		bool ok = d != NULL || floe_err(err, FE_INTERNAL, "out of memory");
		if (ok && r->call_extra != NULL)
			json_object_update(d, r->call_extra);
		ok = ok && store_event_insert(s, event, &who, r->ns, r->table, r->id, d, err);
		json_decref(d);
		if (!ok) {
			store_rollback(s);
			return false;
		}
	}
	return store_commit(s, err);
}

bool auditround_call(struct store_pool *pool, struct store **s, struct auditround *r,
		     struct floe_error *err)
{
	if (!prepare_calls(r)) {
		struct floe_error ferr;
		floe_err(err, FE_INTERNAL, "out of memory");
		(void)auditround_finish(*s, r, "audit-failed", NULL, NULL, &ferr);
		return false;
	}
	/* No call is made whose attempt is not on record. */
	if (!record_calling(*s, r, err)) {
		struct floe_error ferr;
		log_error(r->kind,
			  "%s %s: the hook calls cannot be recorded; none is made: %s rid=%s",
			  r->noun, r->id, err->message, r->env->request_id);
		(void)auditround_finish(*s, r, "audit-failed", NULL, NULL, &ferr);
		return false;
	}
	/* No connection, row or lock is held while the hooks run. */
	store_pool_release(pool, *s);
	*s = NULL;
	hooks_call_all(r->calls, r->n);
	*s = system_acquire_in(pool, r->env->warehouse_name, err);
	if (*s == NULL) {
		log_error(r->kind, "%s %s: database gone after its audit rid=%s", r->noun, r->id,
			  r->env->request_id);
		return false;
	}
	if (!keep_verdicts(r)) {
		/* The calls were made: an auditor must see them, so the round
		 * ends in error and its lease runs out. */
		log_error(r->kind, "%s %s: out of memory keeping the hooks' verdicts rid=%s",
			  r->noun, r->id, r->env->request_id);
		return floe_err(err, FE_INTERNAL, "out of memory");
	}
	return true;
}

enum hook_verdict auditround_verdict(const struct auditround *r, size_t *which)
{
	size_t failed = r->n;

	for (size_t i = 0; i < r->n; i++) {
		if (r->calls[i].verdict == HOOK_REJECT) {
			*which = i;
			return HOOK_REJECT;
		}
		if (r->calls[i].verdict == HOOK_ERROR && failed == r->n)
			failed = i;
	}
	*which = failed;
	return failed < r->n ? HOOK_ERROR : HOOK_PASS;
}

const char *auditround_reason(const struct auditround *r, size_t i)
{
	return r->calls[i].reason;
}

bool auditround_finish(struct store *s, struct auditround *r, const char *state, const char *event,
		       json_t *details, struct floe_error *err)
{
	struct store_actor who = audit_actor(r->env);
	bool moved = false;
	bool ok = store_begin(s, err) &&
		  r->ops->move(s, r->ctx, "auditing", state, r->audits, 0, r->lease, &moved, err);

	if (ok && !moved)
		ok = lease_taken(
			r,
			"was taken over by another publish while it was audited; its outcome is that publish's",
			err);
	if (ok)
		ok = record_calls(s, r, err);
	if (ok && r->ops->settle != NULL)
		ok = r->ops->settle(s, r->ctx, state, r->audits, err);
	if (ok && event != NULL)
		ok = store_event_insert(s, event, &who, r->ns, r->table, r->id, details, err);
	if (ok)
		ok = store_commit(s, err);
	else if (err->kind != FE_COMMIT_STATE_UNKNOWN)
		store_rollback(s);
	if (!ok)
		log_error(r->kind, "%s %s could not move to %s: %s rid=%s", r->noun, r->id, state,
			  err->message, r->env->request_id);
	json_decref(details);
	return ok;
}

bool auditround_publish(struct store *s, struct auditround *r, struct floe_error *err)
{
	bool moved = false;

	if (!r->ops->move(s, r->ctx, "auditing", "published", r->audits, 0, r->lease, &moved, err))
		return false;
	if (!moved)
		return lease_taken(r, "was taken over while it was audited; nothing published",
				   err);
	return record_calls(s, r, err);
}

/* The calls of a round whose lease was taken over, with <kind>.lease-lost,
 * in one transaction; a failure is logged (the client is told 409 either
 * way and nothing else changes). */
static void record_lease_lost(struct store *s, const struct auditround *r)
{
	struct floe_error err;
	struct store_actor who = audit_actor(r->env);
	char event[64];
	json_t *details = json_pack("{s:I}", "hook-calls", (json_int_t)json_array_size(r->called));
	bool ok = store_begin(s, &err) && record_calls(s, r, &err) &&
		  store_event_insert(s, event_name(r, "lease-lost", event, sizeof(event)), &who,
				     r->ns, r->table, r->id, details, &err) &&
		  store_commit(s, &err);

	json_decref(details);
	if (!ok) {
		store_rollback(s);
		log_error(
			r->kind,
			"%s %s: the hook calls of a publish that lost its lease are not recorded: %s rid=%s",
			r->noun, r->id, err.message, r->env->request_id);
	}
}

void auditround_end(struct store *s, struct auditround *r)
{
	/* Taken over while its hooks ran: this round wrote no outcome, but
	 * the calls it made are facts an auditor must see. */
	if (s != NULL && r->lease_lost && r->called != NULL)
		record_lease_lost(s, r);
	for (size_t i = 0; r->bodies != NULL && i < r->n; i++)
		free(r->bodies[i]);
	free(r->bodies);
	hooksecrets_release(r->opened, r->n);
	free(r->calls);
	free(r->deliveries);
	json_decref(r->audits);
	json_decref(r->called);
	json_decref(r->call_extra);
	memset(r, 0, sizeof(*r));
}
