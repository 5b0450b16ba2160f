/*
 * hookspec.h - the registration rules of an audit hook: what a valid
 * registration body is, and what a hook id looks like. Calling hooks is
 * hooks.h's business.
 */
#ifndef FLOE_HOOKSPEC_H
#define FLOE_HOOKSPEC_H

#include <stdbool.h>
#include <jansson.h>

#include "error.h"
#include "ports.h"
#include "ident.h"

#define HOOK_TIMEOUT_DEFAULT_MS 10000
#define HOOK_TIMEOUT_MAX_MS 60000

/* A parsed registration body. */
struct hook_spec {
	const char *name;
	const char *url;
	const char *secret;       /* NULL: unsigned */
	struct ns_ident scope_ns; /* empty: every table */
	const char *scope_table;  /* NULL unless one table */
	long timeout_ms;
};

/* Checks a registration body and fills spec (strings borrowed from body;
 * the scope namespace is owned: release it with hook_spec_clear after a
 * success, a failure leaves nothing to release). FE_BAD_REQUEST naming what is wrong: the URL must be
 * http or https and an address literal in it must pass policy (the rule is
 * named); host names are checked at connect time against every address
 * they resolve to. FE_INTERNAL when memory runs out. policy may be NULL
 * (no allowlist). */
bool hook_spec_parse(const json_t *body, const struct hook_policy *policy, struct hook_spec *spec,
		     struct floe_error *err) FLOE_WUR;

void hook_spec_clear(struct hook_spec *spec);

/* Checks a target URL as hook_spec_parse does (field 'url'): http or
 * https, no address literal policy refuses. */
bool hook_url_check(const char *url, const struct hook_policy *policy,
		    struct floe_error *err) FLOE_WUR;

/* True when a hook id (a path segment) has the form of a UUID. */
bool hook_id_valid(const char *id);

#endif
