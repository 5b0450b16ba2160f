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

/* Runs handler under req's Idempotency-Key (as it is when the request
 * has none, or is not a POST or DELETE): replays a finished answer,
 * answers 503 with Retry-After while the first request still runs, else
 * runs it and records what it answered (2xx and 4xx; a 5xx is not
 * recorded, so a retry runs again, and table commits record theirs in the
 * commit's own transaction). */
void idempotent_run(struct http_request *req, void (*handler)(struct http_request *req));

/* Records the answer of a request whose key idempotent_run claimed (done
 * by idempotent_run itself unless the handler suspended the request). */
void idempotent_finish(struct http_request *req);

#endif
