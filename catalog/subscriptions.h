/*
 * subscriptions.h - event subscriptions: the change feed (feed.h) pushed
 * to receivers. A subscription is a URL, a filter and a secret; the
 * dispatcher delivers its events one at a time in the feed's order as
 * CloudEvents 1.0 (structured mode), signed as audit hook calls are,
 * until the receiver acknowledges each (at least once). Failures are
 * retried with backoff and jitter; after the subscription's last allowed
 * attempt it enters the dead-letter state, holding the event, until an
 * operator resumes it. The dispatcher runs on a thread and a connection
 * of its own; several floes share the work by leases (migration 0022).
 */
#ifndef FLOE_SUBSCRIPTIONS_H
#define FLOE_SUBSCRIPTIONS_H

#include <stdbool.h>
#include <jansson.h>

#include "error.h"
#include "hooksecrets.h"
#include "ports.h"
#include "table.h"

#define SUB_TIMEOUT_DEFAULT_MS 10000
#define SUB_TIMEOUT_MAX_MS 60000
#define SUB_ATTEMPTS_DEFAULT 10
#define SUB_ATTEMPTS_MAX 100
#define SUB_SECRET_MIN 16
#define SUB_SECRET_MAX 1024
/* The longest wait between two attempts at one event. */
#define SUB_RETRY_MAX_MS 300000LL

/* POST .../event-subscriptions: body (borrowed) checked and stored; the
 * new subscription (new reference), or NULL: FE_BAD_REQUEST naming the
 * field, FE_INTERNAL when its secret cannot be sealed, the store's
 * error. */
json_t *subscription_create(struct store *s, const struct table_env *env, const json_t *body,
			    struct floe_error *err) FLOE_WUR;

/* {"subscriptions": [...]}: the warehouse's, oldest first. */
json_t *subscription_list(struct store *s, struct floe_error *err) FLOE_WUR;

/* One subscription; FE_NO_SUCH_SUBSCRIPTION when there is none. */
json_t *subscription_get(struct store *s, const char *id, struct floe_error *err) FLOE_WUR;

bool subscription_delete(struct store *s, const struct table_env *env, const char *id,
			 struct floe_error *err) FLOE_WUR;

/* POST .../resume: a dead-lettered subscription delivers again, from
 * its held event or ({"skip-held-event": true}) past it. The
 * subscription as it now is; FE_SUBSCRIPTION_STATE when it is active. */
json_t *subscription_resume(struct store *s, const struct table_env *env, const char *id,
			    const json_t *body, struct floe_error *err) FLOE_WUR;

/* True when id (a path segment) has the form of a subscription id. */
bool subscription_id_valid(const char *id);

struct dispatcher_config {
	struct store_pool *pool;          /* its own connection; borrowed */
	const struct hook_sealer *sealer; /* opens the secrets; borrowed */
	const struct hook_policy *policy; /* NULL: no allowlist; borrowed */
	/* The name the default warehouse is served under (the CloudEvents
	 * source of its events); copied. */
	const char *default_name;
	int poll_ms;  /* between looks at the feed when nothing is due */
	int retry_ms; /* the first retry's wait; doubles each failure */
};

struct dispatcher;

/* Starts the dispatcher thread. NULL (logged) when out of memory or no
 * thread can be started. */
struct dispatcher *dispatcher_start(const struct dispatcher_config *cfg);

/* Stops the thread (a round in progress finishes first: at most the
 * longest timeout of its calls) and frees it; NULL-safe. */
void dispatcher_stop(struct dispatcher **d);

#endif
