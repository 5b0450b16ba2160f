/* An external issuer's documents and claims, without a network: the
 * principal and roles read from verified claims, the bounds of a fetched
 * key set (64 KiB, 32 keys, unusable keys skipped), the discovery
 * document's issuer and addresses, and which URLs may be fetched. The
 * fetching itself is tested against a real provider in
 * tests/integration/test_oidc.py. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "jwk.h"
#include "jwt.h"
#include "oidc.h"

/* Reads claims (JSON text) with the claim names given; returns whether
 * they were accepted, with the name and roles filled. */
static bool principal(const char *claims_text, const char *pclaim, const char *rclaim,
		      char name[OIDC_NAME_MAX + 1], char ***roles, size_t *nroles,
		      struct floe_error *err)
{
	json_t *claims = json_loads(claims_text, JSON_ALLOW_NUL, NULL);

	cr_assert_not_null(claims, "%s", claims_text);
	floe_error_clear(err);
	bool ok = oidc_claims_principal(claims, pclaim, rclaim, name, OIDC_NAME_MAX + 1, roles,
					nroles, err);
	json_decref(claims);
	return ok;
}

Test(auth_oidc, principal_and_roles_are_read)
{
	char name[OIDC_NAME_MAX + 1];
	char **roles = NULL;
	size_t n = 0;
	struct floe_error err;

	cr_assert(principal("{\"sub\":\"alice\",\"roles\":[\"reader\",\"writer\",\"reader\"]}",
			    "sub", "roles", name, &roles, &n, &err),
		  "%s", err.message);
	cr_assert_str_eq(name, "alice");
	cr_assert_eq(n, 2, "a repeated role is named once");
	cr_assert_str_eq(roles[0], "reader");
	cr_assert_str_eq(roles[1], "writer");
	oidc_roles_free(roles, n);

	/* One space-separated string, spaces repeated and at the ends. */
	cr_assert(principal("{\"email\":\"bob@example.com\",\"groups\":\"  auditor  analyst \"}",
			    "email", "groups", name, &roles, &n, &err),
		  "%s", err.message);
	cr_assert_str_eq(name, "bob@example.com");
	cr_assert_eq(n, 2);
	cr_assert_str_eq(roles[0], "auditor");
	cr_assert_str_eq(roles[1], "analyst");
	oidc_roles_free(roles, n);

	/* No roles claim configured: a roles member means nothing. */
	cr_assert(principal("{\"sub\":\"carol\",\"roles\":[\"admin\"]}", "sub", NULL, name, &roles,
			    &n, &err));
	cr_assert_eq(n, 0);
	cr_assert_null(roles);

	/* The claim absent or empty: a principal without roles. */
	cr_assert(principal("{\"sub\":\"dave\"}", "sub", "roles", name, &roles, &n, &err));
	cr_assert_eq(n, 0);
	cr_assert_null(roles);
	cr_assert(principal("{\"sub\":\"dave\",\"roles\":[]}", "sub", "roles", name, &roles, &n,
			    &err));
	cr_assert_eq(n, 0);
	cr_assert_null(roles);
}

/* Each of the count claim sets is refused, the message naming claim. */
static void assert_refused(const char *const *cases, size_t count, const char *claim)
{
	char name[OIDC_NAME_MAX + 1];
	char **roles = NULL;
	size_t n = 0;
	struct floe_error err;

	for (size_t i = 0; i < count; i++) {
		cr_assert_not(principal(cases[i], "sub", "roles", name, &roles, &n, &err), "%s",
			      cases[i]);
		cr_assert_eq(err.kind, FE_NOT_AUTHORIZED);
		cr_assert(strstr(err.message, claim) != NULL, "%s", err.message);
		cr_assert_null(roles);
		cr_assert_eq(n, 0);
	}
}

Test(auth_oidc, unusable_principal_claims_refuse_the_token)
{
	static const char *const cases[] = {
		"{}",
		"{\"sub\":42}",
		"{\"sub\":[\"alice\"]}",
		"{\"sub\":\"\"}",
		"{\"sub\":\"al\\nice\"}",
		"{\"sub\":\"al\\u0000ice\"}",
	};

	assert_refused(cases, sizeof(cases) / sizeof(cases[0]), "'sub'");
}

Test(auth_oidc, name_bounds)
{
	char text[2 * OIDC_NAME_MAX];
	char name[OIDC_NAME_MAX + 1];
	char **roles = NULL;
	size_t n = 0;
	struct floe_error err;
	char longest[OIDC_NAME_MAX + 2];

	memset(longest, 'a', OIDC_NAME_MAX);
	longest[OIDC_NAME_MAX] = '\0';
	(void)snprintf(text, sizeof(text), "{\"sub\":\"%s\"}", longest);
	cr_assert(principal(text, "sub", NULL, name, &roles, &n, &err), "%s", err.message);
	cr_assert_eq(strlen(name), OIDC_NAME_MAX);

	longest[OIDC_NAME_MAX] = 'a';
	longest[OIDC_NAME_MAX + 1] = '\0';
	(void)snprintf(text, sizeof(text), "{\"sub\":\"%s\"}", longest);
	cr_assert_not(principal(text, "sub", NULL, name, &roles, &n, &err));

	/* A role name past the bound refuses the token, as does a name too
	 * long for the caller's buffer. */
	(void)snprintf(text, sizeof(text), "{\"sub\":\"a\",\"roles\":[\"%s\"]}", longest);
	cr_assert_not(principal(text, "sub", "roles", name, &roles, &n, &err));
	cr_assert_null(roles);
	json_t *claims = json_pack("{s:s}", "sub", "twelve bytes");
	cr_assert_not(oidc_claims_principal(claims, "sub", NULL, name, 12, &roles, &n, &err));
	cr_assert(oidc_claims_principal(claims, "sub", NULL, name, 13, &roles, &n, &err));
	json_decref(claims);
}

Test(auth_oidc, unusable_roles_claims_refuse_the_token)
{
	static const char *const cases[] = {
		"{\"sub\":\"a\",\"roles\":42}",
		"{\"sub\":\"a\",\"roles\":{\"reader\":true}}",
		"{\"sub\":\"a\",\"roles\":[\"reader\",7]}",
		"{\"sub\":\"a\",\"roles\":[\"\"]}",
		"{\"sub\":\"a\",\"roles\":[\"two words\"]}",
		"{\"sub\":\"a\",\"roles\":[\"tab\\there\"]}",
		"{\"sub\":\"a\",\"roles\":\"reader\\twriter\"}",
	};
	assert_refused(cases, sizeof(cases) / sizeof(cases[0]), "'roles'");
}

Test(auth_oidc, at_most_32_roles)
{
	json_t *claims = json_pack("{s:s}", "sub", "a");
	json_t *list = json_array();
	char name[OIDC_NAME_MAX + 1];
	char **roles = NULL;
	size_t n = 0;
	struct floe_error err;
	char role[16];

	for (int i = 0; i < OIDC_ROLES_MAX; i++) {
		(void)snprintf(role, sizeof(role), "role%d", i);
		cr_assert_eq(json_array_append_new(list, json_string(role)), 0);
	}
	cr_assert_eq(json_object_set(claims, "roles", list), 0);
	cr_assert(oidc_claims_principal(claims, "sub", "roles", name, sizeof(name), &roles, &n,
					&err),
		  "%s", err.message);
	cr_assert_eq(n, OIDC_ROLES_MAX);
	cr_assert_str_eq(roles[OIDC_ROLES_MAX - 1], "role31");
	oidc_roles_free(roles, n);

	/* The 33rd role refuses the token: dropping a role silently could
	 * drop a narrowing one. A repeated role does not count twice. */
	cr_assert_eq(json_array_append_new(list, json_string("role0")), 0);
	cr_assert(oidc_claims_principal(claims, "sub", "roles", name, sizeof(name), &roles, &n,
					&err));
	oidc_roles_free(roles, n);
	cr_assert_eq(json_array_append_new(list, json_string("one-too-many")), 0);
	cr_assert_not(oidc_claims_principal(claims, "sub", "roles", name, sizeof(name), &roles, &n,
					    &err));
	cr_assert(strstr(err.message, "more than 32 roles") != NULL, "%s", err.message);
	cr_assert_null(roles);
	json_decref(list);
	json_decref(claims);
}

/* A key set of n fresh P-256 public keys, kids k0, k1, ... (new). */
static json_t *ec_set(int n)
{
	json_t *keys = json_array();
	char kid[16];

	for (int i = 0; i < n; i++) {
		EVP_PKEY *key = jwt_key_generate();

		cr_assert_not_null(key);
		(void)snprintf(kid, sizeof(kid), "k%d", i);
		cr_assert_eq(json_array_append_new(keys, jwk_from_key(key, kid)), 0);
		EVP_PKEY_free(key);
	}
	return json_pack("{s:o}", "keys", keys);
}

static struct oidc_keyset *parse_set(const json_t *set, struct floe_error *err)
{
	char *text = json_dumps(set, JSON_COMPACT);

	cr_assert_not_null(text);
	floe_error_clear(err);
	struct oidc_keyset *ks = oidc_keyset_parse(text, strlen(text), err);
	free(text);
	return ks;
}

Test(auth_oidc, at_most_32_keys)
{
	struct floe_error err;
	json_t *set = ec_set(OIDC_KEYS_MAX);
	struct oidc_keyset *ks = parse_set(set, &err);

	cr_assert_not_null(ks, "%s", err.message);
	cr_assert_eq(oidc_keyset_count(ks), OIDC_KEYS_MAX);
	oidc_keyset_free(ks);
	json_decref(set);

	set = ec_set(OIDC_KEYS_MAX + 1);
	cr_assert_null(parse_set(set, &err));
	cr_assert_eq(err.kind, FE_UNAVAILABLE);
	cr_assert(strstr(err.message, "33 keys, more than 32") != NULL, "%s", err.message);
	json_decref(set);
}

Test(auth_oidc, keys_floe_cannot_use_are_skipped)
{
	struct floe_error err;
	json_t *set = ec_set(1);
	json_t *keys = json_object_get(set, "keys");
	json_t *enc = json_deep_copy(json_array_get(keys, 0));

	/* An encryption key, a symmetric key, an Ed25519 key, a private key,
	 * a kid that is not a string: skipped, the usable key kept. */
	cr_assert_eq(json_object_set_new(enc, "use", json_string("enc")), 0);
	cr_assert_eq(json_array_append_new(keys, enc), 0);
	cr_assert_eq(json_array_append_new(keys, json_pack("{s:s,s:s}", "kty", "oct", "k",
							   "AyM1SysPpbyDfgZld3umj1qzKObwVMkoqQ")),
		     0);
	cr_assert_eq(json_array_append_new(
			     keys, json_pack("{s:s,s:s,s:s}", "kty", "OKP", "crv", "Ed25519", "x",
					     "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo")),
		     0);
	json_t *priv = json_deep_copy(json_array_get(keys, 0));
	cr_assert_eq(json_object_set_new(priv, "d", json_string("AAAA")), 0);
	cr_assert_eq(json_array_append_new(keys, priv), 0);
	json_t *numkid = json_deep_copy(json_array_get(keys, 0));
	cr_assert_eq(json_object_set_new(numkid, "kid", json_integer(7)), 0);
	cr_assert_eq(json_array_append_new(keys, numkid), 0);
	cr_assert_eq(json_array_append_new(keys, json_string("not a key")), 0);

	struct oidc_keyset *ks = parse_set(set, &err);
	cr_assert_not_null(ks, "%s", err.message);
	cr_assert_eq(oidc_keyset_count(ks), 1);
	oidc_keyset_free(ks);

	/* Without the usable key nothing is left: refused. */
	cr_assert_eq(json_array_remove(keys, 0), 0);
	cr_assert_null(parse_set(set, &err));
	cr_assert(strstr(err.message, "no RS256 or ES256 signing key") != NULL, "%s", err.message);
	json_decref(set);
}

Test(auth_oidc, key_set_documents_of_the_wrong_shape_or_size)
{
	static const char *const cases[] = { "",
					     "[]",
					     "{}",
					     "{\"keys\":{}}",
					     "{\"keys\":[]}",
					     "{\"keys\":[] \"x\":1}",
					     "{\"keys\":[],\"keys\":[]}" };
	struct floe_error err;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		floe_error_clear(&err);
		cr_assert_null(oidc_keyset_parse(cases[i], strlen(cases[i]), &err), "%s", cases[i]);
		cr_assert_eq(err.kind, FE_UNAVAILABLE);
	}

	/* A usable set padded to exactly 64 KiB is read; one byte more is not. */
	json_t *set = ec_set(1);
	char *text = json_dumps(set, JSON_COMPACT);
	size_t len = strlen(text);
	char *big = malloc(OIDC_DOC_MAX + 2);

	cr_assert_not_null(big);
	memcpy(big, text, len);
	memset(big + len, ' ', OIDC_DOC_MAX + 1 - len);
	struct oidc_keyset *ks = oidc_keyset_parse(big, OIDC_DOC_MAX, &err);
	cr_assert_not_null(ks, "%s", err.message);
	oidc_keyset_free(ks);
	cr_assert_null(oidc_keyset_parse(big, OIDC_DOC_MAX + 1, &err));
	cr_assert(strstr(err.message, "larger than 65536 bytes") != NULL, "%s", err.message);
	free(big);
	free(text);
	json_decref(set);
}

Test(auth_oidc, discovery_document)
{
	static const char
		*const good = "{\"issuer\":\"https://idp.example.com/realms/x\","
			      "\"jwks_uri\":\"https://idp.example.com/realms/x/certs\","
			      "\"token_endpoint\":\"https://idp.example.com/realms/x/token\"}";
	char *jwks = NULL;
	char *token = NULL;
	struct floe_error err;

	cr_assert(oidc_discovery_parse(good, strlen(good), "https://idp.example.com/realms/x",
				       &jwks, &token, &err),
		  "%s", err.message);
	cr_assert_str_eq(jwks, "https://idp.example.com/realms/x/certs");
	cr_assert_str_eq(token, "https://idp.example.com/realms/x/token");
	free(jwks);
	free(token);

	/* The issuer must match exactly: a trailing slash is another issuer. */
	cr_assert_not(oidc_discovery_parse(good, strlen(good), "https://idp.example.com/realms/x/",
					   &jwks, &token, &err));
	cr_assert(strstr(err.message, "names the issuer") != NULL, "%s", err.message);
	cr_assert_null(jwks);
	cr_assert_null(token);

	static const struct {
		const char *doc;
		const char *why;
	} bad[] = {
		{ "{\"jwks_uri\":\"https://a/k\"}", "names the issuer" },
		{ "{\"issuer\":\"https://a\"}", "no jwks_uri" },
		{ "{\"issuer\":\"https://a\",\"jwks_uri\":\"http://a/k\"}", "must be https" },
		{ "{\"issuer\":\"https://a\",\"jwks_uri\":\"file:///etc/passwd\"}",
		  "not an http or https URL" },
		{ "{\"issuer\":\"https://a\",\"jwks_uri\":\"https://a/k\",\"token_endpoint\":"
		  "\"http://a/t\"}",
		  "token_endpoint must be https" },
		{ "{\"issuer\":\"https://a\",\"jwks_uri\":\"https://a/k\",\"token_endpoint\":1}",
		  "" },
		{ "[\"https://a\"]", "not a JSON object" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		floe_error_clear(&err);
		cr_assert_not(oidc_discovery_parse(bad[i].doc, strlen(bad[i].doc), "https://a",
						   &jwks, &token, &err),
			      "%s", bad[i].doc);
		cr_assert_eq(err.kind, FE_UNAVAILABLE);
		cr_assert(strstr(err.message, bad[i].why) != NULL, "%s: %s", bad[i].doc,
			  err.message);
	}

	/* An https issuer's key set is https, even on loopback. */
	static const char *const downgrade = "{\"issuer\":\"https://a\","
					     "\"jwks_uri\":\"http://127.0.0.1/jwks\"}";
	cr_assert_not(oidc_discovery_parse(downgrade, strlen(downgrade), "https://a", &jwks, &token,
					   &err));
	cr_assert(strstr(err.message, "must be https, as the issuer is") != NULL, "%s",
		  err.message);
	cr_assert(oidc_url_allowed("https://a/k", "x", true, &err));
	cr_assert_not(oidc_url_allowed("http://localhost/k", "x", true, &err));

	/* Without a token endpoint; a loopback issuer over http. */
	static const char *const local = "{\"issuer\":\"http://127.0.0.1:8080\","
					 "\"jwks_uri\":\"http://localhost:8080/jwks\"}";
	cr_assert(oidc_discovery_parse(local, strlen(local), "http://127.0.0.1:8080", &jwks, &token,
				       &err),
		  "%s", err.message);
	cr_assert_null(token);
	free(jwks);
}

Test(auth_oidc, only_https_or_loopback_http_is_fetched)
{
	static const char *const allowed[] = {
		"https://idp.example.com",     "https://idp.example.com:8443/realms/x",
		"http://127.0.0.1:9000",       "http://127.8.9.10/x",
		"http://localhost:1234/realm", "http://[::1]:8080",
	};
	static const char *const refused[] = {
		"http://idp.example.com",
		"http://127.0.0.1.example.com",
		"http://10.0.0.1",
		"http://[::2]",
		"ftp://127.0.0.1/x",
		"file:///etc/passwd",
		"127.0.0.1:8080",
		"",
		"https://",
		"http://0.0.0.0",
	};
	struct floe_error err;

	for (size_t i = 0; i < sizeof(allowed) / sizeof(allowed[0]); i++)
		cr_assert(oidc_url_allowed(allowed[i], "issuer", false, &err), "%s: %s", allowed[i],
			  err.message);
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		floe_error_clear(&err);
		cr_assert_not(oidc_url_allowed(refused[i], "issuer", false, &err), "%s",
			      refused[i]);
		cr_assert_eq(err.kind, FE_BAD_REQUEST);
	}
}

Test(auth_oidc, a_bad_configuration_fails_before_any_fetch)
{
	struct floe_error err;
	struct oidc_config cfg = { .issuer = "http://idp.example.com", .audience = "floe" };

	floe_error_clear(&err);
	cr_assert_null(oidc_new(&cfg, &err));
	cr_assert(strstr(err.message, "must be https") != NULL, "%s", err.message);
	cfg.issuer = "https://idp.example.com";
	cfg.audience = "";
	cr_assert_null(oidc_new(&cfg, &err));
	cr_assert(strstr(err.message, "audience") != NULL, "%s", err.message);
}
