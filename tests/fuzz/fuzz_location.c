/*
 * fuzz_location.c - libFuzzer target for location and URL parsing: table
 * locations (lib/location.h) and audit-hook URLs (how delivery reads them,
 * the address policy on literals, the registration check). The input is
 * split at its first newline into two strings.
 * Canonical locations (file:// and s3://) are fixed points, lie within
 * themselves and overlap symmetrically; a hook URL is accepted or refused
 * with 400.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hooks.h"
#include "hookspec.h"
#include "location.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct hook_policy *allowlist;

static void check_location(const char *c)
{
	struct floe_error err;

	bool s3 = strncmp(c, "s3://", 5) == 0;
	if ((!s3 && strncmp(c, "file://", 7) != 0) || strlen(c) > LOCATION_MAX)
		abort();
	if (s3 != location_is_s3(c))
		abort();
	/* An s3 location's path is the part after its bucket; "" for the
	 * bucket's root, else like a local one. */
	const char *path = s3 ? c + 5 + strcspn(c + 5, "/") : location_path(c);
	if (s3 && !location_bucket_valid(c + 5, (size_t)(path - c - 5)))
		abort();
	if (s3 && path[0] == '\0')
		path = "/";
	if (path == NULL || path[0] != '/')
		abort();
	/* Every segment is a name: none empty, none "." or "..", no trailing
	 * '/' (but for the root). */
	for (const char *seg = path + 1; *seg != '\0' || seg == path + 1;) {
		const char *end = strchr(seg, '/');
		size_t len = end ? (size_t)(end - seg) : strlen(seg);
		if (len == 0 && !(seg == path + 1 && end == NULL))
			abort();
		if ((len == 1 && seg[0] == '.') || (len == 2 && seg[0] == '.' && seg[1] == '.'))
			abort();
		if (end == NULL)
			break;
		seg = end + 1;
		if (*seg == '\0')
			abort();
	}
	char *again = location_canonical(c, &err);
	if (again == NULL || strcmp(again, c) != 0)
		abort(); /* the canonical form is its own canonical form */
	free(again);
	if (!location_within(c, c) || !location_overlaps(c, c))
		abort();
}

static void check_locations(const char *a, const char *b)
{
	struct floe_error err;
	char *ca = location_canonical(a, &err);
	char *cb = location_canonical(b, &err);

	if (ca != NULL)
		check_location(ca);
	else if (err.kind != FE_BAD_REQUEST && err.kind != FE_INTERNAL)
		abort();
	if (cb != NULL)
		check_location(cb);
	if (ca != NULL && cb != NULL) {
		bool ab = location_overlaps(ca, cb);
		if (ab != location_overlaps(cb, ca))
			abort();
		if ((location_within(ca, cb) || location_within(cb, ca)) && !ab)
			abort();
		if (location_within(ca, cb) && location_within(cb, ca) && strcmp(ca, cb) != 0)
			abort();
	}
	free(ca);
	free(cb);
}

static void check_hook_url(const char *url)
{
	char *scheme = NULL;
	char *host = NULL;
	struct floe_error err;
	struct hook_spec spec;

	enum hook_url_result r = hook_url_split(url, &scheme, &host);
	if (r == HOOK_URL_OK) {
		if (scheme == NULL || host == NULL)
			abort();
		const char *rule = hook_policy_check_literal(NULL, host);
		if (rule != NULL && rule[0] == '\0')
			abort();
		/* The allowlist only ever admits more. */
		if (rule == NULL && hook_policy_check_literal(allowlist, host) != NULL)
			abort();
		(void)hook_policy_admits_host(allowlist, host);
	} else if (scheme != NULL || host != NULL) {
		abort();
	}
	free(scheme);
	free(host);

	json_t *body = json_pack("{s:s, s:s%}", "name", "h", "url", url, strlen(url));
	if (body == NULL)
		return; /* not UTF-8: no JSON body can carry it */
	floe_error_clear(&err);
	if (hook_spec_parse(body, allowlist, &spec, &err)) {
		if (r != HOOK_URL_OK || strcmp(spec.url, url) != 0)
			abort(); /* accepted only what delivery can read */
		hook_spec_clear(&spec);
	} else if (err.kind != FE_BAD_REQUEST && err.kind != FE_INTERNAL) {
		abort();
	}
	json_decref(body);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *in = malloc(size + 1);
	char errbuf[200] = "";

	if (allowlist == NULL)
		allowlist = hook_policy_parse("auditor, 10.0.0.0/8, ::1, 127.0.0.1/32", errbuf,
					      sizeof(errbuf));
	if (in == NULL || allowlist == NULL) {
		free(in);
		return 0;
	}
	memcpy(in, data, size);
	in[size] = '\0';
	char *nl = strchr(in, '\n');
	const char *second = "";
	if (nl != NULL) {
		*nl = '\0';
		second = nl + 1;
	}
	check_locations(in, second);
	check_hook_url(in);
	/* The same text as an allowlist. */
	errbuf[0] = '\0';
	struct hook_policy *p = hook_policy_parse(in, errbuf, sizeof(errbuf));
	if (p == NULL && errbuf[0] == '\0')
		abort(); /* a refused allowlist is named */
	hook_policy_free(p);
	free(in);
	return 0;
}
