/* JSON Web Keys from an issuer's key set: RFC 7515's example keys read,
 * and every key floe must not verify with is refused with its reason. */
#include <criterion/criterion.h>
#include <string.h>

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
