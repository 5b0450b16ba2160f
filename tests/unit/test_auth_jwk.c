/* JSON Web Keys from an issuer's key set: RFC 7515's example keys read,
 * and every key floe must not verify with is refused with its reason;
 * floe's own keys as JWKs and their RFC 7638 thumbprints. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/ec.h>
#include <openssl/rsa.h>

#include "jwk.h"

#define EC_X "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU"
#define EC_Y "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"
#define RSA_N                                                                                        \
	"ofgWCuLjybRlzo0tZWJjNiuSfb4p4fAkd_wWJcyQoTbji9k0l8W26mPddxHmfHQp-Vaw-4qPCJrcS2mJPMEzP1Pt0B" \
	"m4d4QlL-yRT-SFd2lZS-pCgNMsD1W_YpRPEwOWvG6b32690r2jZ47soMZo9wGzjb_7OMg0LOL-bSf63kpaSHSXndS5" \
	"z5rexMdbBYUsLA9e-KXBdQOS-UTo7WTBEMa2R2CapHg665xsmtdVMTBQY4uDZlxvb3qCo5ZwKh9kG4LT6_I5IhlJH7" \
	"aGhyxXFvUK-DWNmoudF8NAco9_h9iaGNj8q2ethFkMLs91kzk2PAcDTW9gb54h4FRWyuXpoQ"

/* Parses text; returns the key (new) or NULL with the reason in why. */
static EVP_PKEY *parse(const char *text, enum jwt_alg *alg, char *why, size_t whylen)
{
	json_t *jwk = json_loads(text, 0, NULL);

	cr_assert_not_null(jwk, "%s", text);
	why[0] = '\0';
	EVP_PKEY *key = jwk_parse(jwk, alg, why, whylen);
	json_decref(jwk);
	return key;
}

Test(auth_jwk, rfc7515_keys_are_read)
{
	enum jwt_alg alg = JWT_ALG_RS256;
	char why[160];
	EVP_PKEY *key = NULL;

	key = parse("{\"kty\":\"EC\",\"crv\":\"P-256\",\"x\":\"" EC_X "\",\"y\":\"" EC_Y
		    "\",\"use\":\"sig\",\"alg\":\"ES256\",\"kid\":\"a3\"}",
		    &alg, why, sizeof(why));
	cr_assert_not_null(key, "%s", why);
	cr_assert_eq(alg, JWT_ALG_ES256);
	cr_assert(EVP_PKEY_is_a(key, "EC"));
	EVP_PKEY_free(key);

	key = parse("{\"kty\":\"RSA\",\"n\":\"" RSA_N "\",\"e\":\"AQAB\",\"alg\":\"RS256\"}", &alg,
		    why, sizeof(why));
	cr_assert_not_null(key, "%s", why);
	cr_assert_eq(alg, JWT_ALG_RS256);
	cr_assert_eq(EVP_PKEY_get_bits(key), 2048);
	EVP_PKEY_free(key);
}

Test(auth_jwk, unusable_keys_are_refused)
{
	static const struct {
		const char *jwk;
		const char *why; /* a part of the reason */
	} cases[] = {
		{ "[]", "not a JSON object" },
		{ "{\"n\":\"" RSA_N "\",\"e\":\"AQAB\"}", "missing 'kty'" },
		{ "{\"kty\":\"oct\",\"k\":\"AyM1SysPpbyDfgZld3umj1qzKObwVMkoqQ\"}",
		  "unsupported kty 'oct'" },
		{ "{\"kty\":\"OKP\",\"crv\":\"Ed25519\",\"x\":\"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo\"}",
		  "unsupported kty 'OKP'" },
		/* RFC 7515 A.3's private key: a key set must never carry one. */
		{ "{\"kty\":\"EC\",\"crv\":\"P-256\",\"x\":\"" EC_X "\",\"y\":\"" EC_Y
		  "\",\"d\":\"jpsQnnGQmL-YBIffH1136cspYG6-0iY7X1fCE9-E9LI\"}",
		  "private key member 'd'" },
		{ "{\"kty\":\"EC\",\"crv\":\"P-384\",\"x\":\"" EC_X "\",\"y\":\"" EC_Y "\"}",
		  "unsupported EC curve 'P-384'" },
		{ "{\"kty\":\"EC\",\"x\":\"" EC_X "\",\"y\":\"" EC_Y "\"}",
		  "unsupported EC curve" },
		/* y changed in its last character (a canonical one): no longer on
		 * the curve. */
		{ "{\"kty\":\"EC\",\"crv\":\"P-256\",\"x\":\"" EC_X
		  "\",\"y\":\"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a4\"}",
		  "not on P-256" },
		{ "{\"kty\":\"EC\",\"crv\":\"P-256\",\"x\":\"" EC_X "\",\"y\":\"AAAA\"}",
		  "32 bytes" },
		{ "{\"kty\":\"EC\",\"crv\":\"P-256\",\"x\":\"" EC_X "\"}", "32 bytes" },
		{ "{\"kty\":\"EC\",\"crv\":\"P-256\",\"x\":\"" EC_X "\",\"y\":\"" EC_Y
		  "\",\"use\":\"enc\"}",
		  "not for signatures" },
		{ "{\"kty\":\"EC\",\"crv\":\"P-256\",\"x\":\"" EC_X "\",\"y\":\"" EC_Y
		  "\",\"alg\":\"RS256\"}",
		  "'alg' RS256 does not fit kty EC" },
		{ "{\"kty\":\"RSA\",\"n\":\"" RSA_N "\",\"e\":\"AQAB\",\"alg\":\"ES256\"}",
		  "'alg' ES256 does not fit kty RSA" },
		{ "{\"kty\":\"RSA\",\"n\":\"" RSA_N "\",\"e\":\"AQAB\",\"alg\":\"HS256\"}",
		  "does not fit" },
		{ "{\"kty\":\"RSA\",\"e\":\"AQAB\"}", "needs base64url 'n' and 'e'" },
		{ "{\"kty\":\"RSA\",\"n\":\"" RSA_N "=\",\"e\":\"AQAB\"}", "needs base64url" },
		{ "{\"kty\":\"RSA\",\"n\":\"" RSA_N "\",\"e\":\"AQAA\"}", "not a valid key value" },
		{ "{\"kty\":\"RSA\",\"n\":\"" RSA_N "\",\"e\":\"AQ\"}", "not a valid key value" },
		{ "{\"kty\":\"RSA\",\"n\":\"AKH4Fgri48m0Zc6NLWViYzYrkn2-KeHwJHf8FiXMkKE\",\"e\":\"AQAB\"}",
		  "not a valid key value" },
		/* RSA with a short modulus (the start of A.2's). */
		{ "{\"kty\":\"RSA\",\"n\":\"ofgWCuLjybRlzo0tZWJjNiuSfb4p4fAkd_wWJcyQoTbji9k0l8W26mPddxHmf"
		  "HQp-Vaw-4qPCJrcS2mJPMEzP1Pt0Bm4d4QlL-yRT-SFd2lZS-pCgNMsD1W_YpRPEwOWvG6b32690r2jZ47soMZo9wGzjb_7OMg0LOL-bSf63kpaSHSXndS5\",\"e\":\"AQAB\"}",
		  "bits (2048 to 8192 accepted)" },
	};
	enum jwt_alg alg = JWT_ALG_ES256;
	char why[160];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		EVP_PKEY *key = parse(cases[i].jwk, &alg, why, sizeof(why));
		cr_assert_null(key, "case %zu was accepted: %s", i, cases[i].jwk);
		cr_assert_not_null(strstr(why, cases[i].why), "case %zu: '%s' lacks '%s'", i, why,
				   cases[i].why);
	}
}

Test(auth_jwk, set_lookup_by_kid)
{
	json_t *set = json_loads("{\"keys\":[{\"kid\":\"a\",\"kty\":\"EC\"},{\"kty\":\"RSA\"},"
				 "{\"kid\":\"b\",\"kty\":\"RSA\"}]}",
				 0, NULL);
	json_t *bad = json_loads("{\"keys\":{\"kid\":\"a\"}}", 0, NULL);

	cr_assert_str_eq(json_string_value(json_object_get(jwk_set_find(set, "b"), "kty")), "RSA");
	cr_assert_str_eq(json_string_value(json_object_get(jwk_set_find(set, "a"), "kty")), "EC");
	cr_assert_null(jwk_set_find(set, "c"));
	cr_assert_null(jwk_set_find(set, NULL));
	cr_assert_null(jwk_set_find(bad, "a"));
	json_decref(set);
	json_decref(bad);
}

/* RFC 7638 section 3.1: the example key and its thumbprint, which the
 * optional members do not change. */
Test(auth_jwk, rfc7638_thumbprint)
{
	json_t *jwk = json_pack(
		"{s:s, s:s, s:s}", "kty", "RSA", "e", "AQAB", "n",
		"0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_"
		"BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-"
		"65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyr"
		"dkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw");
	char thumb[JWK_THUMBPRINT_LEN + 1];

	cr_assert(jwk_thumbprint(jwk, thumb));
	cr_assert_str_eq(thumb, "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs");
	cr_assert_eq(json_object_set_new(jwk, "kid", json_string("2011-04-29")), 0);
	cr_assert_eq(json_object_set_new(jwk, "alg", json_string("RS256")), 0);
	cr_assert(jwk_thumbprint(jwk, thumb));
	cr_assert_str_eq(thumb, "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs");
	cr_assert_eq(json_object_del(jwk, "e"), 0);
	cr_assert_not(jwk_thumbprint(jwk, thumb), "a required member is missing");
	json_decref(jwk);
	jwk = json_pack("{s:s, s:s}", "kty", "oct", "k", "AAAA");
	cr_assert_not(jwk_thumbprint(jwk, thumb));
	json_decref(jwk);
}

/* floe's own keys written as JWKs read back as the same public key: a
 * token signed with the private key verifies with what was read. */
Test(auth_jwk, own_keys_round_trip)
{
	EVP_PKEY *keys[] = { jwt_key_generate(), EVP_RSA_gen(2048) };
	const enum jwt_alg algs[] = { JWT_ALG_ES256, JWT_ALG_RS256 };
	json_t *claims = json_pack("{s:s, s:i}", "sub", "alice", "exp", 1000);

	for (size_t i = 0; i < 2; i++) {
		char thumb[JWK_THUMBPRINT_LEN + 1];
		char why[160] = "";
		enum jwt_alg alg = algs[1 - i];
		struct jwt *jwt = NULL;

		cr_assert_not_null(keys[i]);
		json_t *jwk = jwk_from_key(keys[i], "k1");
		cr_assert_not_null(jwk);
		cr_assert_null(json_object_get(jwk, "d"), "no private member is written");
		cr_assert_str_eq(json_string_value(json_object_get(jwk, "use")), "sig");
		cr_assert_str_eq(json_string_value(json_object_get(jwk, "kid")), "k1");
		cr_assert(jwk_thumbprint(jwk, thumb));
		cr_assert_eq(strlen(thumb), JWK_THUMBPRINT_LEN);

		EVP_PKEY *pub = jwk_parse(jwk, &alg, why, sizeof(why));
		cr_assert_not_null(pub, "%s", why);
		cr_assert_eq(alg, algs[i]);
		cr_assert_eq(EVP_PKEY_eq(pub, keys[i]), 1, "the same public key");
		char *token = jwt_sign(keys[i], thumb, claims);
		cr_assert_eq(jwt_parse(token, strlen(token), &jwt), JWT_OK);
		cr_assert_str_eq(jwt->kid, thumb);
		cr_assert_eq(jwt_verify(jwt, pub), JWT_OK);
		jwt_free(jwt);
		free(token);
		EVP_PKEY_free(pub);
		json_decref(jwk);
		EVP_PKEY_free(keys[i]);
	}
	json_decref(claims);

	EVP_PKEY *p384 = EVP_EC_gen("P-384");
	EVP_PKEY *weak = EVP_RSA_gen(1024);
	cr_assert_null(jwk_from_key(p384, NULL));
	cr_assert_null(jwk_from_key(weak, NULL));
	cr_assert_null(jwk_from_key(NULL, NULL));
	EVP_PKEY_free(p384);
	EVP_PKEY_free(weak);
}
