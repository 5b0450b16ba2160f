/*
 * hooks.h - audit webhooks: what a valid registration is, and calling
 * every hook in scope of a publish in parallel (libcurl multi), signed
 * with HMAC-SHA256 (OpenSSL) when the hook has a secret.
 */
#ifndef FLOE_HOOKS_H
#define FLOE_HOOKS_H

#include <stdbool.h>
#include <stddef.h>
#include <jansson.h>

#include "error.h"
#include "ident.h"

#define HOOK_TIMEOUT_DEFAULT_MS 10000
#define HOOK_TIMEOUT_MAX_MS 60000
#define HOOK_MAX_ATTEMPTS 3 /* the first call and at most two retries */

/* A parsed registration body. */
struct hook_spec {
	const char *name;
	const char *url;
	const char *secret;      /* NULL: unsigned */
	struct ns_ident scope_ns;/* empty: every table */
	const char *scope_table; /* NULL unless one table */
	long timeout_ms;
};

/* Checks a registration body and fills spec (strings borrowed from body).
 * FE_BAD_REQUEST naming what is wrong: the URL must be http or https and
 * must not name a link-local address (cloud metadata services). */
bool hook_spec_parse(const json_t *body, struct hook_spec *spec,
		     struct floe_error *err) FLOE_WUR;

void hook_spec_clear(struct hook_spec *spec);

/* True when a hook id (a path segment) has the form of a UUID. */
bool hook_id_valid(const char *id);

enum hook_verdict { HOOK_PASS, HOOK_REJECT, HOOK_ERROR };

struct hook_call {
	/* in */
	const char *url;
	const char *secret;       /* NULL: no signature header */
	const char *delivery_id;
	const char *body;         /* the payload, as sent and signed */
	long timeout_ms;
	/* out */
	enum hook_verdict verdict;
	long http_status;         /* 0: no answer */
	char reason[512];
	long latency_ms;
	int attempts;
};

/* Calls every hook at once; returns when each has a verdict (each within
 * its own timeout). Refused connections and 5xx answers are retried at
 * most twice, with backoff, inside the same budget. */
void hooks_call_all(struct hook_call *calls, size_t n);

/* The hex HMAC-SHA256 of body under secret, "sha256=<hex>" (for tests and
 * the signature header). out must hold 72 bytes. */
void hooks_signature(const char *secret, const char *body, char out[72]);

/* Initialises libcurl once for the process (before threads start). */
bool hooks_global_init(void);

#endif
