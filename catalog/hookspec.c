/*
 * hookspec.c - the rules of an audit-hook registration: the fields of the
 * body, the URL (http or https, no refused address literal) and the scope.
 * Delivery and the address policy itself live in hooks/.
 */
#include "hookspec.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "uuid.h"

bool hook_id_valid(const char *id)
{
	return uuid_is_canonical(id);
}

bool hook_url_check(const char *url, const struct hook_policy *policy, struct floe_error *err)
{
	char *scheme = NULL;
	char *host = NULL;
	bool ok = false;

	switch (hook_url_split(url, &scheme, &host)) {
	case HOOK_URL_OK:
		break;
	case HOOK_URL_NOMEM:
		return floe_err(err, FE_INTERNAL, "out of memory");
	case HOOK_URL_INVALID:
	default:
		return floe_err(err, FE_BAD_REQUEST, "field 'url' is not a valid URL: %.200s", url);
	}
	if (strcasecmp(scheme, "http") != 0 && strcasecmp(scheme, "https") != 0) {
		floe_err(err, FE_BAD_REQUEST, "field 'url' must be http or https, not %.20s",
			 scheme);
		goto done;
	}
	const char *rule = hook_policy_check_literal(policy, host);
	if (rule != NULL) {
		floe_err(
			err, FE_BAD_REQUEST,
			"field 'url' targets %.100s, a %s address: hooks may not reach %s addresses unless the hook allowlist (--hook-allow) admits them",
			host, rule, rule);
		goto done;
	}
	ok = true;
done:
	free(scheme);
	free(host);
	return ok;
}

bool hook_spec_parse(const json_t *body, const struct hook_policy *policy, struct hook_spec *spec,
		     struct floe_error *err)
{
	const json_t *name = json_object_get(body, "name");
	const json_t *url = json_object_get(body, "url");
	const json_t *secret = json_object_get(body, "secret");
	const json_t *scope = json_object_get(body, "scope");
	const json_t *tmo = json_object_get(body, "timeout-ms");

	memset(spec, 0, sizeof(*spec));
	spec->timeout_ms = HOOK_TIMEOUT_DEFAULT_MS;
	if (!json_is_string(name) || json_string_length(name) == 0)
		return floe_err(err, FE_BAD_REQUEST, "field 'name' must be a non-empty string");
	if (json_string_length(name) > 255)
		return floe_err(err, FE_BAD_REQUEST, "field 'name' is longer than 255 bytes");
	if (!json_is_string(url) || json_string_length(url) == 0)
		return floe_err(err, FE_BAD_REQUEST, "field 'url' must be a non-empty string");
	if (json_string_length(url) > 2048)
		return floe_err(err, FE_BAD_REQUEST, "field 'url' is longer than 2048 bytes");
	if (strlen(json_string_value(url)) != json_string_length(url))
		return floe_err(err, FE_BAD_REQUEST, "field 'url' must not contain NUL");
	if (secret != NULL && !json_is_null(secret) &&
	    (!json_is_string(secret) || json_string_length(secret) == 0))
		return floe_err(err, FE_BAD_REQUEST, "field 'secret' must be a non-empty string");
	if (tmo != NULL && !json_is_null(tmo)) {
		if (!json_is_integer(tmo) || json_integer_value(tmo) < 1 ||
		    json_integer_value(tmo) > HOOK_TIMEOUT_MAX_MS)
			return floe_err(err, FE_BAD_REQUEST,
					"field 'timeout-ms' must be an integer from 1 to %d",
					HOOK_TIMEOUT_MAX_MS);
		spec->timeout_ms = (long)json_integer_value(tmo);
	}
	if (!hook_url_check(json_string_value(url), policy, err))
		return false;
	if (scope != NULL && !json_is_null(scope)) {
		const json_t *ns = json_object_get(scope, "namespace");
		const json_t *table = json_object_get(scope, "table");
		if (!json_is_object(scope))
			return floe_err(err, FE_BAD_REQUEST, "field 'scope' must be an object");
		if (table != NULL && !json_is_null(table)) {
			if (ns == NULL || json_is_null(ns))
				return floe_err(err, FE_BAD_REQUEST,
						"scope.table needs scope.namespace");
			if (!json_is_string(table) ||
			    !ident_name_check(json_string_value(table), json_string_length(table),
					      "scope.table", err))
				return err->kind != FE_NONE
					       ? false
					       : floe_err(err, FE_BAD_REQUEST,
							  "scope.table must be a string");
			spec->scope_table = json_string_value(table);
		}
		if (ns != NULL && !json_is_null(ns) &&
		    !ident_ns_from_json(ns, "scope.namespace", &spec->scope_ns, err))
			return false;
	}
	spec->name = json_string_value(name);
	spec->url = json_string_value(url);
	spec->secret = json_is_string(secret) ? json_string_value(secret) : NULL;
	return true;
}

void hook_spec_clear(struct hook_spec *spec)
{
	ident_ns_clear(&spec->scope_ns);
}
