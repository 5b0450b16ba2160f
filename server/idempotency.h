/*
 * idempotency.h - the Idempotency-Key header of mutation routes: a retry
 * with the same key within the advertised lifetime gets the first answer
 * and changes nothing.
 */
#ifndef FLOE_IDEMPOTENCY_H
#define FLOE_IDEMPOTENCY_H

#include "http.h"

/* The lifetime advertised in /v1/config; keys live a little longer. */
#define IDEMPOTENCY_LIFETIME "PT30M"
#define IDEMPOTENCY_LIFETIME_SECONDS (30 * 60)

/* Claims req's Idempotency-Key, when it has one, for a route that changes
 * the catalog (the gate asks once the request is authorized): true when
 * the route is to run (no key, or the key is now this request's); false
 * when req has been answered: the first request's answer replayed, 503
 * with Retry-After while the first request still runs, or 400/422 for a
 * key that is no UUID or was used for another request. */
bool idempotent_begin(struct http_request *req);

/* For a keyed request the gate refused because the object its path names
 * is gone: true when req has been answered with the answer its key
 * recorded for this very request (its first attempt removed the object,
 * a deleted hook), false when there is none (the refusal stands). */
bool idempotent_replayed(struct http_request *req);

/* Records the answer of a request whose key idempotent_begin claimed
 * (2xx and 4xx; a 5xx gives the key back, so a retry runs again; every
 * change records its answer in its own transaction, catalog/idem.h). Called when
 * the answer is made: by the gate, or on completion of a deferred one
 * (struct middleware's finish). */
void idempotent_finish(struct http_request *req);

#endif
