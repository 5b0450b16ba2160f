/*
 * jwt.c - reading, verifying and signing compact JWS tokens (jwt.h).
 * The claims' meaning (who the principal is, which roles) is not here:
 * this file only decides whether a token is well formed, signed by a key
 * and current.
 */
#include "jwt.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>

#include "b64url.h"

/* P-256: 32-byte r and s. */
#define JWT_ES256_HALF 32
#define JWT_ES256_SIG ((size_t)64)
#define JWT_RSA_MIN_BITS 2048

static const char *const jwt_messages[JWT_STATUS_COUNT] = {
	[JWT_OK] = "Token is valid",
	[JWT_TOO_LARGE] = "Token is too long",
	[JWT_MALFORMED] = "Token is malformed",
	[JWT_ALG_NONE] = "Unsigned tokens (alg none) are not accepted",
	[JWT_ALG_UNSUPPORTED] = "Token signing algorithm is not supported (ES256 and RS256 are)",
	[JWT_CRIT] = "Token has a critical header parameter that is not supported",
	[JWT_KEY_MISMATCH] = "Token signing algorithm does not match the key",
	[JWT_BAD_SIGNATURE] = "Token signature is invalid",
	[JWT_BAD_CLAIM] = "Token has a claim of the wrong type",
	[JWT_NO_EXPIRY] = "Token has no expiry (exp)",
	[JWT_EXPIRED] = "Token has expired",
	[JWT_NOT_YET_VALID] = "Token is not valid yet (nbf)",
	[JWT_BAD_ISSUER] = "Token issuer is not accepted",
	[JWT_BAD_AUDIENCE] = "Token audience is not accepted",
	[JWT_UNKNOWN_KEY] = "Token is signed by an unknown key",
	[JWT_NOMEM] = "Token could not be checked",
};

const char *jwt_status_message(enum jwt_status status)
{
	if ((int)status < 0 || status >= JWT_STATUS_COUNT)
		return "Token is invalid";
	return jwt_messages[status];
}

/* Decodes one base64url segment that must be a JSON object. */
static enum jwt_status jwt_decode_object(const char *seg, size_t len, json_t **out)
{
	size_t n = 0;
	unsigned char *raw = NULL;
	json_t *obj = NULL;
	json_error_t jerr;

	*out = NULL;
	if (len == 0)
		return JWT_MALFORMED;
	raw = b64url_decode(seg, len, &n);
	if (raw == NULL)
		return JWT_MALFORMED;
	/* Duplicate names are refused: two "alg" members must not let two
	 * readers of one token see two algorithms. */
	obj = json_loadb((const char *)raw, n, JSON_REJECT_DUPLICATES, &jerr);
	free(raw);
	if (obj == NULL || !json_is_object(obj)) {
		json_decref(obj);
		return JWT_MALFORMED;
	}
	*out = obj;
	return JWT_OK;
}

/* Reads the header's "alg", "kid" and "crit" into jwt. */
static enum jwt_status jwt_read_header(struct jwt *jwt)
{
	json_t *alg = json_object_get(jwt->header, "alg");
	json_t *kid = json_object_get(jwt->header, "kid");
	const char *name = NULL;

	if (!json_is_string(alg))
		return JWT_MALFORMED;
	name = json_string_value(alg);
	if (strcasecmp(name, "none") == 0)
		return JWT_ALG_NONE;
	if (strcmp(name, "ES256") == 0)
		jwt->alg = JWT_ALG_ES256;
	else if (strcmp(name, "RS256") == 0)
		jwt->alg = JWT_ALG_RS256;
	else
		return JWT_ALG_UNSUPPORTED;
	/* RFC 7515 section 4.1.11: an extension the recipient does not
	 * understand, once marked critical, makes the token invalid; floe
	 * understands none. */
	if (json_object_get(jwt->header, "crit") != NULL)
		return JWT_CRIT;
	if (kid != NULL && !json_is_string(kid))
		return JWT_MALFORMED;
	jwt->kid = kid != NULL ? json_string_value(kid) : NULL;
	return JWT_OK;
}

enum jwt_status jwt_parse(const char *token, size_t len, struct jwt **out)
{
	enum jwt_status st = JWT_MALFORMED;
	struct jwt *jwt = NULL;
	const char *dot1 = NULL;
	const char *dot2 = NULL;
	size_t hlen = 0;
	size_t plen = 0;
	size_t slen = 0;

	*out = NULL;
	if (len > JWT_MAX_LEN)
		return JWT_TOO_LARGE;
	dot1 = memchr(token, '.', len);
	if (dot1 == NULL)
		return JWT_MALFORMED;
	dot2 = memchr(dot1 + 1, '.', len - (size_t)(dot1 + 1 - token));
	if (dot2 == NULL || memchr(dot2 + 1, '.', len - (size_t)(dot2 + 1 - token)) != NULL)
		return JWT_MALFORMED;
	hlen = (size_t)(dot1 - token);
	plen = (size_t)(dot2 - dot1 - 1);
	slen = len - (size_t)(dot2 + 1 - token);

	jwt = calloc(1, sizeof(*jwt));
	if (jwt == NULL)
		return JWT_NOMEM;
	st = jwt_decode_object(token, hlen, &jwt->header);
	if (st != JWT_OK)
		goto fail;
	st = jwt_read_header(jwt);
	if (st != JWT_OK)
		goto fail;
	st = jwt_decode_object(dot1 + 1, plen, &jwt->claims);
	if (st != JWT_OK)
		goto fail;
	st = JWT_MALFORMED;
	if (slen == 0)
		goto fail;
	jwt->sig = b64url_decode(dot2 + 1, slen, &jwt->sig_len);
	if (jwt->sig == NULL)
		goto fail;
	st = JWT_NOMEM;
	jwt->signing_len = (size_t)(dot2 - token);
	jwt->signing_input = malloc(jwt->signing_len + 1);
	if (jwt->signing_input == NULL)
		goto fail;
	memcpy(jwt->signing_input, token, jwt->signing_len);
	jwt->signing_input[jwt->signing_len] = '\0';
	*out = jwt;
	return JWT_OK;
fail:
	jwt_free(jwt);
	return st;
}

void jwt_free(struct jwt *jwt)
{
	if (jwt == NULL)
		return;
	json_decref(jwt->header);
	json_decref(jwt->claims);
	free(jwt->signing_input);
	free(jwt->sig);
	free(jwt);
}

/* Whether key can sign or verify alg: the type, the curve, the size. */
static bool jwt_key_fits(EVP_PKEY *key, enum jwt_alg alg)
{
	char group[64];
	size_t glen = 0;

	if (alg == JWT_ALG_RS256)
		return EVP_PKEY_is_a(key, "RSA") && EVP_PKEY_get_bits(key) >= JWT_RSA_MIN_BITS;
	if (!EVP_PKEY_is_a(key, "EC"))
		return false;
	if (EVP_PKEY_get_utf8_string_param(key, OSSL_PKEY_PARAM_GROUP_NAME, group, sizeof(group),
					   &glen) != 1)
		return false;
	return strcmp(group, "prime256v1") == 0 || strcmp(group, "P-256") == 0;
}

/* The DER form of a raw r||s ECDSA signature, as OpenSSL verifies it.
 * Returns a new buffer (OPENSSL_free) of *derlen bytes, or NULL. */
static unsigned char *jwt_es256_to_der(const unsigned char *raw, int *derlen)
{
	ECDSA_SIG *sig = ECDSA_SIG_new();
	BIGNUM *r = BN_bin2bn(raw, JWT_ES256_HALF, NULL);
	BIGNUM *s = BN_bin2bn(raw + JWT_ES256_HALF, JWT_ES256_HALF, NULL);
	unsigned char *der = NULL;

	*derlen = 0;
	if (sig == NULL || r == NULL || s == NULL || ECDSA_SIG_set0(sig, r, s) != 1) {
		BN_free(r);
		BN_free(s);
		goto done;
	}
	/* sig owns r and s now. */
	*derlen = i2d_ECDSA_SIG(sig, &der);
	if (*derlen <= 0) {
		der = NULL;
		*derlen = 0;
	}
done:
	ECDSA_SIG_free(sig);
	return der;
}

/* The raw r||s form (64 bytes into raw) of a DER ECDSA signature. */
static bool jwt_es256_from_der(const unsigned char *der, size_t derlen, unsigned char *raw)
{
	const unsigned char *p = der;
	ECDSA_SIG *sig = d2i_ECDSA_SIG(NULL, &p, (long)derlen);
	const BIGNUM *r = NULL;
	const BIGNUM *s = NULL;
	bool ok = false;

	if (sig == NULL)
		return false;
	ECDSA_SIG_get0(sig, &r, &s);
	ok = BN_bn2binpad(r, raw, JWT_ES256_HALF) == JWT_ES256_HALF &&
	     BN_bn2binpad(s, raw + JWT_ES256_HALF, JWT_ES256_HALF) == JWT_ES256_HALF;
	ECDSA_SIG_free(sig);
	return ok;
}

enum jwt_status jwt_verify(const struct jwt *jwt, EVP_PKEY *key)
{
	enum jwt_status st = JWT_BAD_SIGNATURE;
	EVP_MD_CTX *ctx = NULL;
	unsigned char *der = NULL;
	const unsigned char *sig = jwt->sig;
	size_t sig_len = jwt->sig_len;
	int derlen = 0;
	int rc = 0;

	if (key == NULL || !jwt_key_fits(key, jwt->alg))
		return JWT_KEY_MISMATCH;
	if (jwt->alg == JWT_ALG_ES256) {
		if (jwt->sig_len != JWT_ES256_SIG)
			return JWT_BAD_SIGNATURE;
		der = jwt_es256_to_der(jwt->sig, &derlen);
		if (der == NULL)
			return JWT_NOMEM;
		sig = der;
		sig_len = (size_t)derlen;
	} else if (jwt->sig_len != (size_t)EVP_PKEY_get_size(key)) {
		return JWT_BAD_SIGNATURE;
	}
	ctx = EVP_MD_CTX_new();
	if (ctx == NULL || EVP_DigestVerifyInit(ctx, NULL, EVP_sha256(), NULL, key) != 1) {
		st = JWT_NOMEM;
		goto done;
	}
	rc = EVP_DigestVerify(ctx, sig, sig_len, (const unsigned char *)jwt->signing_input,
			      jwt->signing_len);
	st = rc == 1 ? JWT_OK : JWT_BAD_SIGNATURE;
done:
	EVP_MD_CTX_free(ctx);
	OPENSSL_free(der);
	return st;
}

/* A NumericDate claim as whole seconds; false when it is not a number. A
 * real is cut to whole seconds and clamped, so 1e300 is "far ahead", not
 * undefined behaviour. */
static bool jwt_numeric_date(const json_t *v, long long *out)
{
	if (json_is_integer(v)) {
		*out = (long long)json_integer_value(v);
		return true;
	}
	if (!json_is_real(v))
		return false;
	double d = json_real_value(v);
	if (d >= 9.2e18)
		*out = LLONG_MAX;
	else if (d <= -9.2e18)
		*out = LLONG_MIN;
	else
		*out = (long long)d;
	return true;
}

/* Whether aud (a string or an array of strings) names audience. */
static enum jwt_status jwt_check_audience(const json_t *aud, const char *audience)
{
	size_t i = 0;
	json_t *v = NULL;

	if (aud == NULL)
		return JWT_BAD_AUDIENCE;
	if (json_is_string(aud))
		return strcmp(json_string_value(aud), audience) == 0 ? JWT_OK : JWT_BAD_AUDIENCE;
	if (!json_is_array(aud))
		return JWT_BAD_CLAIM;
	json_array_foreach(aud, i, v) {
		if (!json_is_string(v))
			return JWT_BAD_CLAIM;
	}
	json_array_foreach(aud, i, v) {
		if (strcmp(json_string_value(v), audience) == 0)
			return JWT_OK;
	}
	return JWT_BAD_AUDIENCE;
}

enum jwt_status jwt_check_claims(const json_t *claims, const struct jwt_expect *want, long long now)
{
	const json_t *iss = json_object_get(claims, "iss");
	const json_t *exp = json_object_get(claims, "exp");
	const json_t *nbf = json_object_get(claims, "nbf");
	const json_t *iat = json_object_get(claims, "iat");
	long long leeway = want->leeway > 0 ? want->leeway : 0;
	long long t = 0;
	enum jwt_status st = JWT_OK;

	if (iss != NULL && !json_is_string(iss))
		return JWT_BAD_CLAIM;
	if (want->issuer != NULL &&
	    (iss == NULL || strcmp(json_string_value(iss), want->issuer) != 0))
		return JWT_BAD_ISSUER;
	if (want->audience != NULL) {
		st = jwt_check_audience(json_object_get(claims, "aud"), want->audience);
		if (st != JWT_OK)
			return st;
	}
	if (iat != NULL && !jwt_numeric_date(iat, &t))
		return JWT_BAD_CLAIM;
	if (exp == NULL)
		return JWT_NO_EXPIRY;
	if (!jwt_numeric_date(exp, &t))
		return JWT_BAD_CLAIM;
	/* now < exp + leeway, written so that no sum can overflow. */
	if (t <= now - leeway)
		return JWT_EXPIRED;
	if (nbf != NULL) {
		if (!jwt_numeric_date(nbf, &t))
			return JWT_BAD_CLAIM;
		if (t > now + leeway)
			return JWT_NOT_YET_VALID;
	}
	return JWT_OK;
}

/* Signs input with key: the raw r||s for ES256, PKCS#1 v1.5 for RS256.
 * Returns a new buffer (free()) of *siglen bytes, or NULL. */
static unsigned char *jwt_sign_bytes(EVP_PKEY *key, enum jwt_alg alg, const char *input, size_t len,
				     size_t *siglen)
{
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	unsigned char *der = NULL;
	unsigned char *out = NULL;
	size_t derlen = 0;

	if (ctx == NULL || EVP_DigestSignInit(ctx, NULL, EVP_sha256(), NULL, key) != 1 ||
	    EVP_DigestSign(ctx, NULL, &derlen, (const unsigned char *)input, len) != 1)
		goto fail;
	der = malloc(derlen);
	if (der == NULL ||
	    EVP_DigestSign(ctx, der, &derlen, (const unsigned char *)input, len) != 1)
		goto fail;
	if (alg == JWT_ALG_RS256) {
		*siglen = derlen;
		EVP_MD_CTX_free(ctx);
		return der;
	}
	out = malloc(JWT_ES256_SIG);
	if (out == NULL || !jwt_es256_from_der(der, derlen, out))
		goto fail;
	*siglen = JWT_ES256_SIG;
	free(der);
	EVP_MD_CTX_free(ctx);
	return out;
fail:
	free(out);
	free(der);
	EVP_MD_CTX_free(ctx);
	return NULL;
}

/* The base64url of the compact JSON text of obj (new string), or NULL. */
static char *jwt_encode_object(const json_t *obj)
{
	char *text = json_dumps(obj, JSON_COMPACT);
	char *enc = NULL;

	if (text == NULL)
		return NULL;
	enc = b64url_encode((const unsigned char *)text, strlen(text));
	free(text);
	return enc;
}

char *jwt_sign(EVP_PKEY *key, const char *kid, const json_t *claims)
{
	enum jwt_alg alg = JWT_ALG_ES256;
	json_t *header = NULL;
	char *h64 = NULL;
	char *p64 = NULL;
	char *token = NULL;
	unsigned char *sig = NULL;
	size_t siglen = 0;
	size_t hlen = 0;
	size_t plen = 0;

	if (key == NULL || !json_is_object(claims))
		return NULL;
	if (jwt_key_fits(key, JWT_ALG_RS256))
		alg = JWT_ALG_RS256;
	else if (!jwt_key_fits(key, JWT_ALG_ES256))
		return NULL;
	header = json_pack("{s:s, s:s}", "alg", alg == JWT_ALG_ES256 ? "ES256" : "RS256", "typ",
			   "JWT");
	if (header == NULL ||
	    (kid != NULL && json_object_set_new(header, "kid", json_string(kid)) != 0))
		goto fail;
	h64 = jwt_encode_object(header);
	p64 = jwt_encode_object(claims);
	if (h64 == NULL || p64 == NULL)
		goto fail;
	hlen = strlen(h64);
	plen = strlen(p64);
	/* header.payload.signature: EVP_PKEY_get_size bounds the signature
	 * (the modulus for RSA, the DER form, longer than r||s, for EC). */
	token = malloc(hlen + 1 + plen + 1 + b64url_encoded_len((size_t)EVP_PKEY_get_size(key)) +
		       1);
	if (token == NULL)
		goto fail;
	memcpy(token, h64, hlen);
	token[hlen] = '.';
	memcpy(token + hlen + 1, p64, plen);
	token[hlen + 1 + plen] = '\0';
	sig = jwt_sign_bytes(key, alg, token, hlen + 1 + plen, &siglen);
	if (sig == NULL)
		goto fail;
	token[hlen + 1 + plen] = '.';
	(void)b64url_encode_into(sig, siglen, token + hlen + 1 + plen + 1);
	free(sig);
	free(h64);
	free(p64);
	json_decref(header);
	return token;
fail:
	free(token);
	free(h64);
	free(p64);
	json_decref(header);
	return NULL;
}

EVP_PKEY *jwt_key_generate(void)
{
	return EVP_EC_gen("P-256");
}
