/*
 * fuzz_jwt.c - libFuzzer target for what a bearer token and an issuer's
 * key set can hold: the compact JWT parser, signature checks, the claim
 * checks, base64url and public JWKs.
 * A parsed token never verifies with a key made in this process (a
 * forgery would be a bug), its signing input is the token's own prefix,
 * base64url decoding is canonical (encoding what was decoded gives the
 * input back), an accepted JWK written back out keeps its thumbprint,
 * and a JSON object input signed as claims verifies and reads back equal.
 * An issuer's documents (oidc.h): a key set read holds 1 to 32 keys, an
 * https issuer's discovery document read names an https key set, and the
 * principal and roles read from claims keep their bounds.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "b64url.h"
#include "jwk.h"
#include "jwt.h"
#include "oidc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static EVP_PKEY *fuzz_key;

static void check_token(const char *in, size_t size)
{
	struct jwt *jwt = NULL;
	const struct jwt_expect want = { .issuer = "floe", .audience = "floe", .leeway = 60 };
	enum jwt_status st = jwt_parse(in, size, &jwt);

	if ((st == JWT_OK) != (jwt != NULL))
		abort();
	if (size > JWT_MAX_LEN && st != JWT_TOO_LARGE)
		abort();
	if (jwt == NULL)
		return;
	if (jwt->signing_len >= size || memcmp(jwt->signing_input, in, jwt->signing_len) != 0 ||
	    !json_is_object(jwt->header) || !json_is_object(jwt->claims))
		abort();
	if (jwt->kid != NULL &&
	    strcmp(jwt->kid, json_string_value(json_object_get(jwt->header, "kid"))) != 0)
		abort();
	st = jwt_verify(jwt, fuzz_key);
	if (st == JWT_OK)
		abort();
	st = jwt_check_claims(jwt->claims, &want, 1700000000);
	if ((int)st < 0 || st >= JWT_STATUS_COUNT)
		abort();
	jwt_free(jwt);
}

static void check_b64url(const char *in, size_t size)
{
	size_t n = 0;
	unsigned char *raw = b64url_decode(in, size, &n);

	if (raw == NULL)
		return;
	char *back = b64url_encode(raw, n);
	if (back == NULL || strlen(back) != size || memcmp(back, in, size) != 0)
		abort();
	free(back);
	free(raw);
}

static void check_json(const char *in, size_t size)
{
	json_t *doc = json_loadb(in, size, 0, NULL);
	enum jwt_alg alg = JWT_ALG_ES256;
	char errbuf[160];
	struct jwt *jwt = NULL;

	if (doc == NULL)
		return;
	EVP_PKEY *key = jwk_parse(doc, &alg, errbuf, sizeof(errbuf));
	if (key != NULL) {
		/* An accepted key written back out has the same thumbprint:
		 * reading kept every bit of it. */
		char t1[JWK_THUMBPRINT_LEN + 1];
		char t2[JWK_THUMBPRINT_LEN + 1];
		json_t *back = jwk_from_key(key, NULL);
		if (back == NULL || !jwk_thumbprint(doc, t1) || !jwk_thumbprint(back, t2) ||
		    strcmp(t1, t2) != 0)
			abort();
		json_decref(back);
		EVP_PKEY_free(key);
	}
	(void)jwk_set_find(doc, "k");
	if (json_is_object(doc)) {
		char *token = jwt_sign(fuzz_key, "k", doc);
		if (token == NULL)
			abort();
		/* A token over the limit is refused as such; any other reads
		 * back as signed. */
		if (jwt_parse(token, strlen(token), &jwt) == JWT_OK) {
			if (jwt_verify(jwt, fuzz_key) != JWT_OK || !json_equal(jwt->claims, doc))
				abort();
			jwt_free(jwt);
		} else if (strlen(token) <= JWT_MAX_LEN) {
			abort();
		}
		free(token);
	}
	json_decref(doc);
}

static void check_oidc_claims(const json_t *claims)
{
	char name[OIDC_NAME_MAX + 1];
	char **roles = NULL;
	size_t n = 0;
	struct floe_error err;

	if (!oidc_claims_principal(claims, "sub", "roles", name, sizeof(name), &roles, &n, &err))
		return;
	if (name[0] == '\0' || strlen(name) > OIDC_NAME_MAX || n > OIDC_ROLES_MAX ||
	    (n == 0) != (roles == NULL))
		abort();
	for (size_t i = 0; i < n; i++) {
		if (roles[i][0] == '\0' || strchr(roles[i], ' ') != NULL)
			abort();
	}
	oidc_roles_free(roles, n);
}

static void check_oidc(const char *in, size_t size)
{
	struct floe_error err;
	struct oidc_keyset *ks = oidc_keyset_parse(in, size, &err);
	char *jwks = NULL;
	char *token = NULL;

	if (ks != NULL && (size > OIDC_DOC_MAX || oidc_keyset_count(ks) == 0 ||
			   oidc_keyset_count(ks) > OIDC_KEYS_MAX))
		abort();
	oidc_keyset_free(ks);
	if (oidc_discovery_parse(in, size, "https://issuer.example", &jwks, &token, &err)) {
		/* curl's URL parser reads the scheme; "https:/host" is https too. */
		if (jwks == NULL || strncasecmp(jwks, "https:", 6) != 0 ||
		    (token != NULL && strncasecmp(token, "https:", 6) != 0))
			abort();
		free(jwks);
		free(token);
	}
	json_t *doc = json_loadb(in, size, JSON_ALLOW_NUL, NULL);
	if (json_is_object(doc))
		check_oidc_claims(doc);
	json_decref(doc);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *in = (const char *)data;

	if (fuzz_key == NULL) {
		fuzz_key = jwt_key_generate();
		if (fuzz_key == NULL)
			abort();
	}
	check_token(in, size);
	check_b64url(in, size);
	check_json(in, size);
	check_oidc(in, size);
	return 0;
}
