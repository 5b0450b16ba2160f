/* JWT: RFC 7515's ES256 (A.3) and RS256 (A.2) examples verify with their
 * published keys; a changed payload or signature, a swapped or absent
 * algorithm, a malformed or oversize token are refused with their own
 * reason; the time, issuer and audience checks at a clock the test sets;
 * and tokens floe signs verify with the key and only with it. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/rsa.h>

#include "b64url.h"
#include "jwk.h"
#include "jwt.h"

static const char es256_token[] =
	"eyJhbGciOiJFUzI1NiJ9"
	".eyJpc3MiOiJqb2UiLA0KICJleHAiOjEzMDA4MTkzODAsDQogImh0dHA6Ly9leGFtcGxlLmNvbS9pc19yb290Ijp0cnVlfQ"
	".DtEhU3ljbEg8L38VWAfUAqOyKAM6-Xx-F4GawxaepmXFCgfTjDxw5djxLa8ISlSApmWQxfKTUJqPP3-Kg6NU1Q";
static const char es256_jwk[] = "{\"kty\":\"EC\",\"crv\":\"P-256\","
				"\"x\":\"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU\","
				"\"y\":\"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0\"}";

static const char rs256_token[] =
	"eyJhbGciOiJSUzI1NiJ9"
	".eyJpc3MiOiJqb2UiLA0KICJleHAiOjEzMDA4MTkzODAsDQogImh0dHA6Ly9leGFtcGxlLmNvbS9pc19yb290Ijp0cnVlfQ"
	".cC4hiUPoj9Eetdgtv3hF80EGrhuB__dzERat0XF9g2VtQgr9PJbu3XOiZj5RZmh7AAuHIm4Bh-0Qc_lF5YKt_O8W2Fp5"
	"jujGbds9uJdbF9CUAr7t1dnZcAcQjbKBYNX4BAynRFdiuB--f_nZLgrnbyTyWzO75vRK5h6xBArLIARNPvkSjtQBMHlb1L07"
	"Qe7K0GarZRmB_eSN9383LcOLn6_dO--xi12jzDwusC-eOkHWEsqtFZESc6BfI7noOPqvhJ1phCnvWh6IeYI2w9QOYEUipUT"
	"I8np6LbgGY9Fs98rqVt5AXLIhWkWywlVmtVrBp0igcN_IoypGlUPQGe77Rw";
static const char rs256_jwk[] =
	"{\"kty\":\"RSA\",\"e\":\"AQAB\",\"n\":\"ofgWCuLjybRlzo0tZWJjNiuSfb4p4fAkd_wWJcyQoTbji9k0l8W26m"
	"PddxHmfHQp-Vaw-4qPCJrcS2mJPMEzP1Pt0Bm4d4QlL-yRT-SFd2lZS-pCgNMsD1W_YpRPEwOWvG6b32690r2jZ47soMZo9"
	"wGzjb_7OMg0LOL-bSf63kpaSHSXndS5z5rexMdbBYUsLA9e-KXBdQOS-UTo7WTBEMa2R2CapHg665xsmtdVMTBQY4uDZlxvb"
	"3qCo5ZwKh9kG4LT6_I5IhlJH7aGhyxXFvUK-DWNmoudF8NAco9_h9iaGNj8q2ethFkMLs91kzk2PAcDTW9gb54h4FRWyuXp"
	"oQ\"}";

/* The examples' exp is 1300819380; this is before it. */
#define RFC_NOW 1300819000LL

static EVP_PKEY *key_from_jwk(const char *text)
{
	json_t *jwk = json_loads(text, 0, NULL);
	enum jwt_alg alg = JWT_ALG_ES256;
	char errbuf[128] = "";

	cr_assert_not_null(jwk);
	EVP_PKEY *key = jwk_parse(jwk, &alg, errbuf, sizeof(errbuf));
	cr_assert_not_null(key, "%s", errbuf);
	json_decref(jwk);
	return key;
}

/* The two RFC example keys, for the tests that use both. */
static EVP_PKEY *rfc_ec;
static EVP_PKEY *rfc_rsa;

static void rfc_keys(void)
{
	rfc_ec = key_from_jwk(es256_jwk);
	rfc_rsa = key_from_jwk(rs256_jwk);
}

static void rfc_keys_free(void)
{
	EVP_PKEY_free(rfc_ec);
	EVP_PKEY_free(rfc_rsa);
	rfc_ec = NULL;
	rfc_rsa = NULL;
}

static enum jwt_status parse_status(const char *token)
{
	struct jwt *jwt = NULL;
	enum jwt_status st = jwt_parse(token, strlen(token), &jwt);

	cr_assert_eq(st == JWT_OK, jwt != NULL);
	jwt_free(jwt);
	return st;
}

/* Parses then verifies with key. */
static enum jwt_status verify_status(const char *token, EVP_PKEY *key)
{
	struct jwt *jwt = NULL;
	enum jwt_status st = jwt_parse(token, strlen(token), &jwt);

	if (st == JWT_OK)
		st = jwt_verify(jwt, key);
	jwt_free(jwt);
	return st;
}

/* "b64(header).b64(payload).sig" (new string). */
static char *make_token(const char *header, const char *payload, const char *sig)
{
	char *h = b64url_encode((const unsigned char *)header, strlen(header));
	char *p = b64url_encode((const unsigned char *)payload, strlen(payload));
	size_t n = strlen(h) + strlen(p) + strlen(sig) + 3;
	char *t = malloc(n);

	cr_assert_not_null(t);
	cr_assert_lt(snprintf(t, n, "%s.%s.%s", h, p, sig), (int)n);
	free(h);
	free(p);
	return t;
}

/* The signature segment of a token (borrowed). */
static const char *sig_of(const char *token)
{
	return strrchr(token, '.') + 1;
}

Test(auth_jwt, rfc7515_examples_verify, .init = rfc_keys, .fini = rfc_keys_free)
{
	struct jwt *jwt = NULL;
	const struct jwt_expect want = { .issuer = "joe", .leeway = 0 };

	cr_assert_eq(jwt_parse(es256_token, strlen(es256_token), &jwt), JWT_OK);
	cr_assert_eq(jwt->alg, JWT_ALG_ES256);
	cr_assert_null(jwt->kid);
	cr_assert_eq(jwt->sig_len, 64, "ES256 signatures are raw r||s");
	cr_assert_eq(jwt_verify(jwt, rfc_ec), JWT_OK);
	cr_assert_eq(jwt_check_claims(jwt->claims, &want, RFC_NOW), JWT_OK);
	cr_assert(json_is_true(json_object_get(jwt->claims, "http://example.com/is_root")));
	jwt_free(jwt);

	cr_assert_eq(jwt_parse(rs256_token, strlen(rs256_token), &jwt), JWT_OK);
	cr_assert_eq(jwt->alg, JWT_ALG_RS256);
	cr_assert_eq(jwt_verify(jwt, rfc_rsa), JWT_OK);
	jwt_free(jwt);
}

Test(auth_jwt, changed_payload_or_signature_is_refused, .init = rfc_keys, .fini = rfc_keys_free)
{
	char *t = NULL;

	/* The same header and signature over other claims. */
	t = make_token("{\"alg\":\"ES256\"}",
		       "{\"iss\":\"joe\",\r\n \"exp\":1300819380,\r\n "
		       "\"http://example.com/is_root\":false}",
		       sig_of(es256_token));
	cr_assert_eq(verify_status(t, rfc_ec), JWT_BAD_SIGNATURE);
	free(t);
	t = make_token("{\"alg\":\"RS256\"}", "{\"iss\":\"mallory\",\"exp\":1300819380}",
		       sig_of(rs256_token));
	cr_assert_eq(verify_status(t, rfc_rsa), JWT_BAD_SIGNATURE);
	free(t);

	/* One signature character changed, in every position of ES256's. */
	size_t len = strlen(es256_token);
	char *copy = strdup(es256_token);
	size_t start = (size_t)(sig_of(es256_token) - es256_token);
	for (size_t i = start; i < len - 1; i++) {
		char was = copy[i];
		copy[i] = was == 'A' ? 'B' : 'A';
		cr_assert_neq(verify_status(copy, rfc_ec), JWT_OK, "position %zu", i);
		copy[i] = was;
	}
	/* The signature one byte short: refused, not read past. */
	copy[len - 3] = '\0';
	cr_assert_neq(verify_status(copy, rfc_ec), JWT_OK);
	free(copy);

	/* A DER-encoded ECDSA signature (what OpenSSL makes) is not JWS's. */
	unsigned char der[72];
	memset(der, 0x30, sizeof(der));
	char *d64 = b64url_encode(der, sizeof(der));
	t = make_token("{\"alg\":\"ES256\"}", "{\"exp\":1}", d64);
	cr_assert_eq(verify_status(t, rfc_ec), JWT_BAD_SIGNATURE);
	free(t);
	free(d64);
}

/* What jwt.h warns of: (r, n - s) verifies too, so a token's text does
 * not identify it (its jti does). */
Test(auth_jwt, an_ecdsa_token_has_a_twin, .init = rfc_keys, .fini = rfc_keys_free)
{
	unsigned char sig[64];
	size_t len = 0;
	const char *sig64 = sig_of(es256_token);
	BIGNUM *order = NULL;
	BIGNUM *s = NULL;

	cr_assert(b64url_decode_into(sig64, strlen(sig64), sig, &len));
	cr_assert_eq(len, 64);
	cr_assert(BN_hex2bn(&order,
			    "FFFFFFFF00000000FFFFFFFFFFFFFFFFBCE6FAADA7179E84F3B9CAC2FC632551") >
		  0);
	s = BN_bin2bn(sig + 32, 32, NULL);
	cr_assert(BN_sub(s, order, s));
	cr_assert_eq(BN_bn2binpad(s, sig + 32, 32), 32);
	char *twin64 = b64url_encode(sig, sizeof(sig));
	char *twin = make_token("{\"alg\":\"ES256\"}",
				"{\"iss\":\"joe\",\r\n \"exp\":1300819380,\r\n "
				"\"http://example.com/is_root\":true}",
				twin64);
	cr_assert_str_neq(twin, es256_token);
	cr_assert_eq(verify_status(twin, rfc_ec), JWT_OK);
	free(twin);
	free(twin64);
	BN_free(s);
	BN_free(order);
}

Test(auth_jwt, swapped_algorithms_are_refused, .init = rfc_keys, .fini = rfc_keys_free)
{
	char *t = NULL;
	const char *payload = "{\"iss\":\"joe\",\r\n \"exp\":1300819380,\r\n "
			      "\"http://example.com/is_root\":true}";

	/* Each example checked with the other's key. */
	cr_assert_eq(verify_status(es256_token, rfc_rsa), JWT_KEY_MISMATCH);
	cr_assert_eq(verify_status(rs256_token, rfc_ec), JWT_KEY_MISMATCH);
	/* The ES256 signature relabelled RS256, and the other way round. */
	t = make_token("{\"alg\":\"RS256\"}", payload, sig_of(es256_token));
	cr_assert_eq(verify_status(t, rfc_ec), JWT_KEY_MISMATCH);
	cr_assert_eq(verify_status(t, rfc_rsa), JWT_BAD_SIGNATURE);
	free(t);
	t = make_token("{\"alg\":\"ES256\"}", payload, sig_of(rs256_token));
	cr_assert_eq(verify_status(t, rfc_rsa), JWT_KEY_MISMATCH);
	cr_assert_eq(verify_status(t, rfc_ec), JWT_BAD_SIGNATURE);
	free(t);
	/* HS256 "signed" with the public key as the secret: the classic
	 * confusion. No HMAC algorithm is read at all. */
	t = make_token("{\"alg\":\"HS256\"}", payload, sig_of(es256_token));
	cr_assert_eq(verify_status(t, rfc_ec), JWT_ALG_UNSUPPORTED);
	free(t);
	static const char *const others[] = { "ES384", "ES512", "RS512",  "PS256",
					      "EdDSA", "es256", "ES256 ", "" };
	for (size_t i = 0; i < sizeof(others) / sizeof(others[0]); i++) {
		char header[64];
		(void)snprintf(header, sizeof(header), "{\"alg\":\"%s\"}", others[i]);
		t = make_token(header, payload, sig_of(es256_token));
		cr_assert_eq(parse_status(t), JWT_ALG_UNSUPPORTED, "%s", others[i]);
		free(t);
	}
}

Test(auth_jwt, alg_none_is_refused_in_every_spelling)
{
	static const char *const spellings[] = { "none", "None", "NONE", "nOnE" };

	for (size_t i = 0; i < sizeof(spellings) / sizeof(spellings[0]); i++) {
		char header[64];
		(void)snprintf(header, sizeof(header), "{\"alg\":\"%s\",\"typ\":\"JWT\"}",
			       spellings[i]);
		char *t = make_token(header, "{\"sub\":\"admin\",\"exp\":9999999999}", "");
		cr_assert_eq(parse_status(t), JWT_ALG_NONE, "%s", spellings[i]);
		free(t);
		t = make_token(header, "{\"sub\":\"admin\",\"exp\":9999999999}",
			       sig_of(es256_token));
		cr_assert_eq(parse_status(t), JWT_ALG_NONE, "%s with a signature", spellings[i]);
		free(t);
	}
	cr_assert_str_eq(jwt_status_message(JWT_ALG_NONE),
			 "Unsigned tokens (alg none) are not accepted");
}

Test(auth_jwt, malformed_tokens_are_refused)
{
	static const struct {
		const char *header;
		const char *payload;
	} bad[] = {
		{ "", "{}" },                  /* empty header */
		{ "{\"alg\":\"ES256\"}", "" }, /* empty payload */
		{ "not json", "{}" },
		{ "[\"ES256\"]", "{}" },                          /* not an object */
		{ "{}", "{}" },                                   /* no alg */
		{ "{\"alg\":256}", "{}" },                        /* alg not a string */
		{ "{\"alg\":\"ES256\",\"alg\":\"none\"}", "{}" }, /* duplicate names */
		{ "{\"alg\":\"ES256\",\"kid\":7}", "{}" },        /* kid not a string */
		{ "{\"alg\":\"ES256\"}", "[1]" },                 /* claims not an object */
		{ "{\"alg\":\"ES256\"}", "\"sub\"" },
		{ "{\"alg\":\"ES256\"} x", "{}" },                /* trailing text */
		{ "{\"alg\":\"ES256\"}", "{\"a\":\"\\u0000\"}" }, /* NUL in a string */
		{ "{\"alg\":\"ES256\"}", "{\"a\":1,\"a\":2}" },
	};
	const char *sig = sig_of(es256_token);

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *t = make_token(bad[i].header, bad[i].payload, sig);
		cr_assert_eq(parse_status(t), JWT_MALFORMED, "case %zu: %s", i, t);
		free(t);
	}
	/* The segments themselves. */
	static const char *const shapes[] = {
		"",
		"eyJhbGciOiJFUzI1NiJ9",
		"eyJhbGciOiJFUzI1NiJ9.e30",
		"eyJhbGciOiJFUzI1NiJ9.e30.",          /* no signature */
		"eyJhbGciOiJFUzI1NiJ9.e30.AAAA.AAAA", /* JWE has five; four is nothing */
		"eyJhbGciOiJFUzI1NiJ9..AAAA",
		"eyJhbGciOiJFUzI1NiJ9=.e30.AAAA", /* padding */
		"eyJhbGciOiJFUzI1NiJ9.e30=.AAAA",
		"eyJhbGciOiJFUzI1NiJ9.e30.AAAA=",
		"eyJhbGciOiJFUzI1NiJ9.e3+.AAAA", /* the standard alphabet */
		"eyJhbGciOiJFUzI1NiJ9 .e30.AAAA",
		"eyJhbGciOiJFUzI1NiJ9.e30.AAA A",
		"eyJhbGciOiJFUzI1NiJ9.e31.AAAA", /* stray bits */
	};
	for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++)
		cr_assert_eq(parse_status(shapes[i]), JWT_MALFORMED, "'%s'", shapes[i]);
	/* A critical extension floe does not know. */
	char *t = make_token("{\"alg\":\"ES256\",\"crit\":[\"exp\"],\"exp\":1}", "{}", sig);
	cr_assert_eq(parse_status(t), JWT_CRIT);
	free(t);
}

Test(auth_jwt, oversize_tokens_are_refused_before_decoding, .init = rfc_keys, .fini = rfc_keys_free)
{
	size_t n = JWT_MAX_LEN + 1;
	char *big = malloc(n + 1);
	struct jwt *jwt = NULL;

	memset(big, 'A', n);
	big[n] = '\0';
	memcpy(big, es256_token, strlen(es256_token));
	cr_assert_eq(jwt_parse(big, n, &jwt), JWT_TOO_LARGE);
	cr_assert_null(jwt);
	/* Exactly the limit is read: a long signature segment, whose
	 * length then fails the check. */
	size_t at = JWT_MAX_LEN;
	while ((at - (size_t)(sig_of(es256_token) - es256_token)) % 4 == 1)
		at--;
	cr_assert_eq(jwt_parse(big, at, &jwt), JWT_OK);
	cr_assert_eq(jwt_verify(jwt, rfc_ec), JWT_BAD_SIGNATURE);
	jwt_free(jwt);
	free(big);
}

Test(auth_jwt, time_claims_at_a_set_clock)
{
	json_t *c = json_pack("{s:i, s:i, s:i}", "exp", 1000, "nbf", 900, "iat", 900);
	struct jwt_expect want = { .leeway = 0 };

	cr_assert_eq(jwt_check_claims(c, &want, 950), JWT_OK);
	cr_assert_eq(jwt_check_claims(c, &want, 999), JWT_OK);
	cr_assert_eq(jwt_check_claims(c, &want, 1000), JWT_EXPIRED,
		     "exp is the first second refused");
	cr_assert_eq(jwt_check_claims(c, &want, 899), JWT_NOT_YET_VALID);
	cr_assert_eq(jwt_check_claims(c, &want, 900), JWT_OK, "nbf is the first second accepted");
	want.leeway = 60;
	cr_assert_eq(jwt_check_claims(c, &want, 1059), JWT_OK);
	cr_assert_eq(jwt_check_claims(c, &want, 1060), JWT_EXPIRED);
	cr_assert_eq(jwt_check_claims(c, &want, 840), JWT_OK);
	cr_assert_eq(jwt_check_claims(c, &want, 839), JWT_NOT_YET_VALID);
	want.leeway = -5; /* a negative leeway is none */
	cr_assert_eq(jwt_check_claims(c, &want, 1000), JWT_EXPIRED);
	json_decref(c);

	want.leeway = 0;
	c = json_pack("{s:s}", "sub", "a");
	cr_assert_eq(jwt_check_claims(c, &want, 0), JWT_NO_EXPIRY, "a token must expire");
	json_decref(c);
	c = json_pack("{s:s}", "exp", "1000");
	cr_assert_eq(jwt_check_claims(c, &want, 0), JWT_BAD_CLAIM);
	json_decref(c);
	c = json_pack("{s:f}", "exp", 1000.9);
	cr_assert_eq(jwt_check_claims(c, &want, 999), JWT_OK, "a NumericDate may have a fraction");
	cr_assert_eq(jwt_check_claims(c, &want, 1000), JWT_EXPIRED);
	json_decref(c);
	c = json_pack("{s:f}", "exp", 1e300);
	cr_assert_eq(jwt_check_claims(c, &want, 1700000000), JWT_OK);
	json_decref(c);
	c = json_pack("{s:i, s:b}", "exp", 1000, "nbf", 1);
	cr_assert_eq(jwt_check_claims(c, &want, 0), JWT_BAD_CLAIM);
	json_decref(c);
	c = json_pack("{s:i, s:s}", "exp", 1000, "iat", "yesterday");
	cr_assert_eq(jwt_check_claims(c, &want, 0), JWT_BAD_CLAIM);
	json_decref(c);
}

Test(auth_jwt, issuer_and_audience)
{
	json_t *c = json_pack("{s:s, s:s, s:i}", "iss", "https://idp.example.com", "aud", "floe",
			      "exp", 1000);
	struct jwt_expect want = { .issuer = "https://idp.example.com", .audience = "floe" };

	cr_assert_eq(jwt_check_claims(c, &want, 0), JWT_OK);
	want.issuer = "https://idp.example.com/";
	cr_assert_eq(jwt_check_claims(c, &want, 0), JWT_BAD_ISSUER, "issuers compare exactly");
	want.issuer = "https://idp.example.com";
	want.audience = "other";
	cr_assert_eq(jwt_check_claims(c, &want, 0), JWT_BAD_AUDIENCE);
	json_decref(c);

	c = json_pack("{s:[s, s], s:i}", "aud", "account", "floe", "exp", 1000);
	want.issuer = NULL;
	want.audience = "floe";
	cr_assert_eq(jwt_check_claims(c, &want, 0), JWT_OK, "aud may be an array");
	want.issuer = "x";
	cr_assert_eq(jwt_check_claims(c, &want, 0), JWT_BAD_ISSUER, "no iss is not the issuer");
	json_decref(c);

	want.issuer = NULL;
	c = json_pack("{s:[s, i], s:i}", "aud", "floe", 7, "exp", 1000);
	cr_assert_eq(jwt_check_claims(c, &want, 0), JWT_BAD_CLAIM);
	json_decref(c);
	c = json_pack("{s:i}", "exp", 1000);
	cr_assert_eq(jwt_check_claims(c, &want, 0), JWT_BAD_AUDIENCE, "no aud names no one");
	json_decref(c);
	c = json_pack("{s:i, s:i}", "iss", 1, "exp", 1000);
	cr_assert_eq(jwt_check_claims(c, &want, 0), JWT_BAD_CLAIM);
	json_decref(c);
}

Test(auth_jwt, signed_tokens_verify_with_their_key_only)
{
	EVP_PKEY *key = jwt_key_generate();
	EVP_PKEY *other = jwt_key_generate();
	EVP_PKEY *rfc = key_from_jwk(es256_jwk);
	json_t *claims = json_pack("{s:s, s:s, s:s, s:i, s:i}", "iss", "floe", "sub", "alice",
				   "aud", "floe", "iat", 1000, "exp", 1900);
	struct jwt *jwt = NULL;
	const struct jwt_expect want = { .issuer = "floe", .audience = "floe", .leeway = 30 };

	cr_assert_not_null(key);
	char *token = jwt_sign(key, "k1", claims);
	cr_assert_not_null(token);
	cr_assert_eq(jwt_parse(token, strlen(token), &jwt), JWT_OK);
	cr_assert_eq(jwt->alg, JWT_ALG_ES256);
	cr_assert_str_eq(jwt->kid, "k1");
	cr_assert_str_eq(json_string_value(json_object_get(jwt->header, "typ")), "JWT");
	cr_assert(json_equal(jwt->claims, claims));
	cr_assert_eq(jwt->sig_len, 64);
	cr_assert_eq(jwt_verify(jwt, key), JWT_OK);
	cr_assert_eq(jwt_verify(jwt, other), JWT_BAD_SIGNATURE);
	cr_assert_eq(jwt_verify(jwt, rfc), JWT_BAD_SIGNATURE);
	cr_assert_eq(jwt_check_claims(jwt->claims, &want, 1500), JWT_OK);
	cr_assert_eq(jwt_check_claims(jwt->claims, &want, 1930), JWT_EXPIRED);
	jwt_free(jwt);
	free(token);

	/* Without a kid the header has none. */
	token = jwt_sign(key, NULL, claims);
	cr_assert_eq(jwt_parse(token, strlen(token), &jwt), JWT_OK);
	cr_assert_null(jwt->kid);
	cr_assert_eq(jwt_verify(jwt, key), JWT_OK);
	jwt_free(jwt);
	free(token);

	/* ECDSA signs with a fresh nonce: two signatures of the same claims
	 * differ, and both verify (r and s of any size are padded). */
	for (int i = 0; i < 32; i++) {
		token = jwt_sign(key, "k1", claims);
		cr_assert_eq(verify_status(token, key), JWT_OK, "%s", token);
		free(token);
	}
	json_decref(claims);
	EVP_PKEY_free(key);
	EVP_PKEY_free(other);
	EVP_PKEY_free(rfc);
}

Test(auth_jwt, rs256_signing_and_weak_keys)
{
	EVP_PKEY *rsa = EVP_RSA_gen(2048);
	EVP_PKEY *weak = EVP_RSA_gen(1024);
	EVP_PKEY *p384 = EVP_EC_gen("P-384");
	json_t *claims = json_pack("{s:i}", "exp", 1000);
	struct jwt *jwt = NULL;

	cr_assert_not_null(rsa);
	char *token = jwt_sign(rsa, NULL, claims);
	cr_assert_not_null(token);
	cr_assert_eq(jwt_parse(token, strlen(token), &jwt), JWT_OK);
	cr_assert_eq(jwt->alg, JWT_ALG_RS256);
	cr_assert_eq(jwt_verify(jwt, rsa), JWT_OK);
	cr_assert_eq(jwt_verify(jwt, weak), JWT_KEY_MISMATCH, "RSA under 2048 bits is refused");
	cr_assert_eq(jwt_verify(jwt, NULL), JWT_KEY_MISMATCH);
	jwt_free(jwt);
	free(token);

	cr_assert_null(jwt_sign(weak, NULL, claims));
	cr_assert_null(jwt_sign(p384, NULL, claims), "ES256 is P-256 only");
	EVP_PKEY *p256 = jwt_key_generate();
	token = jwt_sign(p256, NULL, claims);
	cr_assert_eq(jwt_parse(token, strlen(token), &jwt), JWT_OK);
	cr_assert_eq(jwt_verify(jwt, p384), JWT_KEY_MISMATCH);
	cr_assert_eq(jwt_verify(jwt, rsa), JWT_KEY_MISMATCH);
	cr_assert_eq(jwt_verify(jwt, p256), JWT_OK);
	jwt_free(jwt);
	free(token);
	EVP_PKEY_free(p256);
	json_decref(claims);
	EVP_PKEY_free(rsa);
	EVP_PKEY_free(weak);
	EVP_PKEY_free(p384);
}

Test(auth_jwt, every_status_has_a_message)
{
	for (int s = 0; s < JWT_STATUS_COUNT; s++) {
		const char *m = jwt_status_message((enum jwt_status)s);
		cr_assert_not_null(m);
		cr_assert(m[0] >= 'A' && m[0] <= 'Z', "%d: %s", s, m);
	}
	cr_assert_str_eq(jwt_status_message(JWT_STATUS_COUNT), "Token is invalid");
}
