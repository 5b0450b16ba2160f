/* The registration rules of an audit hook (catalog/hookspec.c): the
 * fields, the URL check (scheme, address literals against the policy and
 * its allowlist) and the scope, with the messages a client is told. */
#include <criterion/criterion.h>
#include <string.h>

#include "hookspec.h"

/* Parses a JSON text; on failure err holds the answer. */
static bool parse(const char *text, const struct hook_policy *policy, struct hook_spec *spec,
		  struct floe_error *err)
{
	json_error_t jerr;
	json_t *body = json_loads(text, 0, &jerr);

	cr_assert_not_null(body, "%s: %s", text, jerr.text);
	floe_error_clear(err);
	bool ok = hook_spec_parse(body, policy, spec, err);
	json_decref(body);
	return ok;
}

static void refused(const char *text, const struct hook_policy *policy, const char *message)
{
	struct hook_spec spec;
	struct floe_error err;

	cr_assert_not(parse(text, policy, &spec, &err), "accepted: %s", text);
	cr_assert_eq(err.kind, FE_BAD_REQUEST, "%s", text);
	cr_assert_str_eq(err.message, message, "%s: %s", text, err.message);
}

Test(hookspec, a_full_registration)
{
	struct hook_spec spec;
	struct floe_error err;
	const char *text = "{\"name\": \"h\", \"url\": \"https://auditor.example.com/a\", "
			   "\"secret\": \"s\", \"timeout-ms\": 2500, "
			   "\"scope\": {\"namespace\": [\"a\", \"b\"], \"table\": \"t\"}}";
	json_error_t jerr;
	json_t *body = json_loads(text, 0, &jerr);

	floe_error_clear(&err);
	cr_assert(hook_spec_parse(body, NULL, &spec, &err), "%s", err.message);
	cr_assert_str_eq(spec.name, "h");
	cr_assert_str_eq(spec.url, "https://auditor.example.com/a");
	cr_assert_str_eq(spec.secret, "s");
	cr_assert_eq(spec.timeout_ms, 2500);
	cr_assert_eq(spec.scope_ns.nlevels, 2);
	cr_assert_str_eq(spec.scope_ns.levels[1], "b");
	cr_assert_str_eq(spec.scope_table, "t");
	hook_spec_clear(&spec);
	json_decref(body);
}

Test(hookspec, defaults)
{
	struct hook_spec spec;
	struct floe_error err;

	cr_assert(parse("{\"name\": \"h\", \"url\": \"http://192.0.2.1/\", \"secret\": null}", NULL,
			&spec, &err),
		  "%s", err.message);
	cr_assert_null(spec.secret);
	cr_assert_null(spec.scope_table);
	cr_assert_eq(spec.scope_ns.nlevels, 0);
	cr_assert_eq(spec.timeout_ms, HOOK_TIMEOUT_DEFAULT_MS);
	hook_spec_clear(&spec);
}

Test(hookspec, url_rules)
{
	refused("{\"name\": \"h\", \"url\": \"ftp://auditor/x\"}", NULL,
		"Field 'url' must be http or https, not ftp");
	refused("{\"name\": \"h\", \"url\": \"not a url\"}", NULL,
		"Field 'url' is not a valid URL: not a url");
	/* libcurl reads 127.1 as 127.0.0.1, and the message names what it reads. */
	refused("{\"name\": \"h\", \"url\": \"http://127.1:8080/x\"}", NULL,
		"Field 'url' targets 127.0.0.1, a loopback address: hooks may not reach loopback addresses unless the hook allowlist (--hook-allow) admits them");
	refused("{\"name\": \"h\", \"url\": \"http://[::ffff:10.0.0.1]/\"}", NULL,
		"Field 'url' targets [::ffff:10.0.0.1], a private (RFC 1918) address: hooks may not reach private (RFC 1918) addresses unless the hook allowlist (--hook-allow) admits them");
	refused("{\"name\": \"h\", \"url\": \"\"}", NULL, "Field 'url' must be a non-empty string");
}

Test(hookspec, the_allowlist_admits_literals)
{
	char errbuf[200];
	struct hook_policy *p = hook_policy_parse("127.0.0.0/8", errbuf, sizeof(errbuf));
	struct hook_spec spec;
	struct floe_error err;

	cr_assert_not_null(p, "%s", errbuf);
	cr_assert(parse("{\"name\": \"h\", \"url\": \"http://127.0.0.1:9/\"}", p, &spec, &err),
		  "%s", err.message);
	hook_spec_clear(&spec);
	hook_policy_free(p);
}

Test(hookspec, field_rules)
{
	refused("{\"url\": \"http://a/\"}", NULL, "Field 'name' must be a non-empty string");
	refused("{\"name\": \"h\", \"url\": \"http://a/\", \"secret\": \"\"}", NULL,
		"Field 'secret' must be a non-empty string");
	refused("{\"name\": \"h\", \"url\": \"http://a/\", \"timeout-ms\": 60001}", NULL,
		"Field 'timeout-ms' must be an integer from 1 to 60000");
	refused("{\"name\": \"h\", \"url\": \"http://a/\", \"scope\": {\"table\": \"t\"}}", NULL,
		"scope.table needs scope.namespace");
	refused("{\"name\": \"h\", \"url\": \"http://a/\", \"scope\": {\"namespace\": [\"a\"], \"table\": 1}}",
		NULL, "scope.table must be a string");
}

Test(hookspec, hook_ids_are_uuids)
{
	cr_assert(hook_id_valid("0b8f0a52-1c7e-4b59-9a4e-2f1e7d3c9a10"));
	cr_assert(hook_id_valid("0B8F0A52-1C7E-4B59-9A4E-2F1E7D3C9A10"));
	cr_assert_not(hook_id_valid("0b8f0a52-1c7e-4b59-9a4e-2f1e7d3c9a1"));
	cr_assert_not(hook_id_valid("0b8f0a52-1c7e-4b59-9a4e-2f1e7d3c9a100"));
	cr_assert_not(hook_id_valid("0b8f0a52x1c7e-4b59-9a4e-2f1e7d3c9a10"));
	cr_assert_not(hook_id_valid("0b8f0a52-1c7e-4b59-9a4e-2f1e7d3c9a1g"));
	cr_assert_not(hook_id_valid(""));
}
