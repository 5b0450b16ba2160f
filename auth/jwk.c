/*
 * jwk.c - public JSON Web Keys into OpenSSL keys (jwk.h), built with the
 * OpenSSL 3 parameter interface (EVP_PKEY_fromdata), which checks that
 * an EC point lies on its curve.
 */
#include "jwk.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/param_build.h>
#include <openssl/sha.h>

#include "b64url.h"

#define JWK_P256_COORD 32

static EVP_PKEY *jwk_refuse(char *errbuf, size_t errlen, const char *fmt, ...) FLOE_PRINTF(3, 4);

static EVP_PKEY *jwk_refuse(char *errbuf, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	(void)vsnprintf(errbuf, errlen, fmt, ap);
	va_end(ap);
	return NULL;
}

/* The bytes of the base64url string member name of jwk (new buffer,
 * free()), or NULL when it is absent, not canonical, or empty. */
static unsigned char *jwk_member(const json_t *jwk, const char *name, size_t *len)
{
	const json_t *v = json_object_get(jwk, name);
	const char *s = json_string_value(v);
	unsigned char *raw = NULL;

	if (s == NULL)
		return NULL;
	raw = b64url_decode(s, json_string_length(v), len);
	if (raw != NULL && *len == 0) {
		free(raw);
		return NULL;
	}
	return raw;
}

/* A key from OSSL parameters, of type name ("RSA", "EC"). */
static EVP_PKEY *jwk_from_params(const char *name, OSSL_PARAM *params)
{
	EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_name(NULL, name, NULL);
	EVP_PKEY *key = NULL;

	if (ctx == NULL || EVP_PKEY_fromdata_init(ctx) != 1 ||
	    EVP_PKEY_fromdata(ctx, &key, EVP_PKEY_PUBLIC_KEY, params) != 1)
		key = NULL;
	EVP_PKEY_CTX_free(ctx);
	return key;
}

static EVP_PKEY *jwk_parse_rsa(const json_t *jwk, char *errbuf, size_t errlen)
{
	unsigned char *n = NULL;
	unsigned char *e = NULL;
	size_t nlen = 0;
	size_t elen = 0;
	BIGNUM *bn_n = NULL;
	BIGNUM *bn_e = NULL;
	OSSL_PARAM_BLD *bld = NULL;
	OSSL_PARAM *params = NULL;
	EVP_PKEY *key = NULL;
	int bits = 0;

	n = jwk_member(jwk, "n", &nlen);
	e = jwk_member(jwk, "e", &elen);
	if (n == NULL || e == NULL) {
		(void)jwk_refuse(errbuf, errlen, "JWK: RSA key needs base64url 'n' and 'e'");
		goto done;
	}
	/* A leading zero byte would make the size a lie; e is small, odd
	 * and not 1 (with e = 1 anyone could sign). */
	if (n[0] == 0 || e[0] == 0 || elen > 8 || (e[elen - 1] & 1) == 0 ||
	    (elen == 1 && e[0] < 3)) {
		(void)jwk_refuse(errbuf, errlen, "JWK: RSA 'n' or 'e' is not a valid key value");
		goto done;
	}
	bits = (int)(nlen * 8);
	for (unsigned char top = n[0]; (top & 0x80) == 0; top = (unsigned char)(top << 1))
		bits--;
	if (bits < JWK_RSA_MIN_BITS || bits > JWK_RSA_MAX_BITS) {
		(void)jwk_refuse(errbuf, errlen, "JWK: RSA key of %d bits (%d to %d accepted)",
				 bits, JWK_RSA_MIN_BITS, JWK_RSA_MAX_BITS);
		goto done;
	}
	bn_n = BN_bin2bn(n, (int)nlen, NULL);
	bn_e = BN_bin2bn(e, (int)elen, NULL);
	bld = OSSL_PARAM_BLD_new();
	if (bn_n == NULL || bn_e == NULL || bld == NULL ||
	    OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_N, bn_n) != 1 ||
	    OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_E, bn_e) != 1) {
		(void)jwk_refuse(errbuf, errlen, "JWK: out of memory");
		goto done;
	}
	params = OSSL_PARAM_BLD_to_param(bld);
	key = params != NULL ? jwk_from_params("RSA", params) : NULL;
	if (key == NULL)
		(void)jwk_refuse(errbuf, errlen, "JWK: RSA key is not valid");
done:
	OSSL_PARAM_free(params);
	OSSL_PARAM_BLD_free(bld);
	BN_free(bn_n);
	BN_free(bn_e);
	free(n);
	free(e);
	return key;
}

static EVP_PKEY *jwk_parse_ec(const json_t *jwk, char *errbuf, size_t errlen)
{
	const char *crv = json_string_value(json_object_get(jwk, "crv"));
	unsigned char *x = NULL;
	unsigned char *y = NULL;
	size_t xlen = 0;
	size_t ylen = 0;
	unsigned char point[1 + 2 * JWK_P256_COORD];
	char group[] = "P-256";
	OSSL_PARAM params[3];
	EVP_PKEY *key = NULL;

	if (crv == NULL || strcmp(crv, "P-256") != 0)
		return jwk_refuse(errbuf, errlen, "JWK: unsupported EC curve '%s' (P-256 is)",
				  crv != NULL ? crv : "");
	x = jwk_member(jwk, "x", &xlen);
	y = jwk_member(jwk, "y", &ylen);
	if (x == NULL || y == NULL || xlen != JWK_P256_COORD || ylen != JWK_P256_COORD) {
		(void)jwk_refuse(errbuf, errlen, "JWK: EC key needs 'x' and 'y' of 32 bytes");
		goto done;
	}
	/* The uncompressed SEC 1 point: 0x04 || x || y. */
	point[0] = 0x04;
	memcpy(point + 1, x, JWK_P256_COORD);
	memcpy(point + 1 + JWK_P256_COORD, y, JWK_P256_COORD);
	params[0] = OSSL_PARAM_construct_utf8_string(OSSL_PKEY_PARAM_GROUP_NAME, group, 0);
	params[1] = OSSL_PARAM_construct_octet_string(OSSL_PKEY_PARAM_PUB_KEY, point,
						      sizeof(point));
	params[2] = OSSL_PARAM_construct_end();
	key = jwk_from_params("EC", params);
	if (key == NULL)
		(void)jwk_refuse(errbuf, errlen, "JWK: EC point is not on P-256");
done:
	free(x);
	free(y);
	return key;
}

EVP_PKEY *jwk_parse(const json_t *jwk, enum jwt_alg *alg, char *errbuf, size_t errlen)
{
	static const char *const private_members[] = { "d", "p", "q", "dp", "dq", "qi", "oth" };
	const char *kty = json_string_value(json_object_get(jwk, "kty"));
	const json_t *use = json_object_get(jwk, "use");
	const json_t *jalg = json_object_get(jwk, "alg");
	enum jwt_alg want = JWT_ALG_ES256;
	EVP_PKEY *key = NULL;

	if (!json_is_object(jwk))
		return jwk_refuse(errbuf, errlen, "JWK: not a JSON object");
	if (kty == NULL)
		return jwk_refuse(errbuf, errlen, "JWK: missing 'kty'");
	if (strcmp(kty, "RSA") == 0)
		want = JWT_ALG_RS256;
	else if (strcmp(kty, "EC") != 0)
		return jwk_refuse(errbuf, errlen, "JWK: unsupported kty '%s' (RSA and EC are)",
				  kty);
	for (size_t i = 0; i < sizeof(private_members) / sizeof(private_members[0]); i++) {
		if (json_object_get(jwk, private_members[i]) != NULL)
			return jwk_refuse(errbuf, errlen,
					  "JWK: private key member '%s' in a public key",
					  private_members[i]);
	}
	if (use != NULL && (!json_is_string(use) || strcmp(json_string_value(use), "sig") != 0))
		return jwk_refuse(errbuf, errlen, "JWK: key is not for signatures ('use')");
	if (jalg != NULL &&
	    (!json_is_string(jalg) ||
	     strcmp(json_string_value(jalg), want == JWT_ALG_RS256 ? "RS256" : "ES256") != 0))
		return jwk_refuse(errbuf, errlen, "JWK: 'alg' %s does not fit kty %s",
				  json_is_string(jalg) ? json_string_value(jalg) : "(not a string)",
				  kty);
	key = want == JWT_ALG_RS256 ? jwk_parse_rsa(jwk, errbuf, errlen)
				    : jwk_parse_ec(jwk, errbuf, errlen);
	if (key != NULL)
		*alg = want;
	return key;
}

const json_t *jwk_set_find(const json_t *jwks, const char *kid)
{
	const json_t *keys = json_object_get(jwks, "keys");
	size_t i = 0;
	const json_t *k = NULL;

	if (!json_is_array(keys) || kid == NULL)
		return NULL;
	json_array_foreach(keys, i, k) {
		const char *id = json_string_value(json_object_get(k, "kid"));
		if (id != NULL && strcmp(id, kid) == 0)
			return k;
	}
	return NULL;
}

/* Sets member name of obj to the base64url of n bytes; false on failure. */
static bool jwk_set_b64(json_t *obj, const char *name, const unsigned char *raw, size_t n)
{
	char *enc = b64url_encode(raw, n);
	bool ok = enc != NULL && json_object_set_new(obj, name, json_string(enc)) == 0;

	free(enc);
	return ok;
}

/* The big-endian bytes of the RSA parameter name of key into obj. */
static bool jwk_set_rsa_param(json_t *obj, const char *member, EVP_PKEY *key, const char *param)
{
	BIGNUM *bn = NULL;
	unsigned char *raw = NULL;
	int n = 0;
	bool ok = false;

	if (EVP_PKEY_get_bn_param(key, param, &bn) != 1)
		return false;
	n = BN_num_bytes(bn);
	raw = n > 0 ? malloc((size_t)n) : NULL;
	if (raw != NULL && BN_bn2bin(bn, raw) == n)
		ok = jwk_set_b64(obj, member, raw, (size_t)n);
	free(raw);
	BN_free(bn);
	return ok;
}

json_t *jwk_from_key(EVP_PKEY *key, const char *kid)
{
	enum jwt_alg alg = JWT_ALG_ES256;
	unsigned char point[1 + 2 * JWK_P256_COORD];
	size_t plen = 0;
	char group[64];
	size_t glen = 0;
	json_t *jwk = NULL;

	if (key == NULL)
		return NULL;
	if (EVP_PKEY_is_a(key, "RSA")) {
		if (EVP_PKEY_get_bits(key) < JWK_RSA_MIN_BITS)
			return NULL;
		alg = JWT_ALG_RS256;
		jwk = json_pack("{s:s}", "kty", "RSA");
		if (jwk == NULL || !jwk_set_rsa_param(jwk, "n", key, OSSL_PKEY_PARAM_RSA_N) ||
		    !jwk_set_rsa_param(jwk, "e", key, OSSL_PKEY_PARAM_RSA_E))
			goto fail;
	} else if (EVP_PKEY_is_a(key, "EC")) {
		if (EVP_PKEY_get_utf8_string_param(key, OSSL_PKEY_PARAM_GROUP_NAME, group,
						   sizeof(group), &glen) != 1 ||
		    strcmp(group, "prime256v1") != 0)
			return NULL;
		/* The uncompressed point, 0x04 || x || y, whatever form the
		 * key was made to print. */
		if (EVP_PKEY_get_octet_string_param(key, OSSL_PKEY_PARAM_ENCODED_PUBLIC_KEY, point,
						    sizeof(point), &plen) != 1 ||
		    plen != sizeof(point) || point[0] != 0x04)
			return NULL;
		jwk = json_pack("{s:s, s:s}", "kty", "EC", "crv", "P-256");
		if (jwk == NULL || !jwk_set_b64(jwk, "x", point + 1, JWK_P256_COORD) ||
		    !jwk_set_b64(jwk, "y", point + 1 + JWK_P256_COORD, JWK_P256_COORD))
			goto fail;
	} else {
		return NULL;
	}
	if (json_object_set_new(jwk, "use", json_string("sig")) != 0 ||
	    json_object_set_new(jwk, "alg",
				json_string(alg == JWT_ALG_RS256 ? "RS256" : "ES256")) != 0 ||
	    (kid != NULL && json_object_set_new(jwk, "kid", json_string(kid)) != 0))
		goto fail;
	return jwk;
fail:
	json_decref(jwk);
	return NULL;
}

bool jwk_thumbprint(const json_t *jwk, char out[JWK_THUMBPRINT_LEN + 1])
{
	static const char *const rsa_members[] = { "e", "kty", "n", NULL };
	static const char *const ec_members[] = { "crv", "kty", "x", "y", NULL };
	const char *kty = json_string_value(json_object_get(jwk, "kty"));
	const char *const *members = NULL;
	unsigned char digest[SHA256_DIGEST_LENGTH];
	json_t *canon = NULL;
	char *text = NULL;
	bool ok = false;

	if (kty == NULL)
		return false;
	if (strcmp(kty, "RSA") == 0)
		members = rsa_members;
	else if (strcmp(kty, "EC") == 0)
		members = ec_members;
	else
		return false;
	canon = json_object();
	if (canon == NULL)
		return false;
	for (size_t i = 0; members[i] != NULL; i++) {
		json_t *v = json_object_get(jwk, members[i]);
		if (!json_is_string(v) || json_object_set(canon, members[i], v) != 0)
			goto done;
	}
	/* Sorted names, no whitespace: RFC 7638 section 3.3 (the values
	 * are base64url and curve names, which JSON writes without escapes). */
	text = json_dumps(canon, JSON_COMPACT | JSON_SORT_KEYS);
	if (text == NULL || EVP_Digest(text, strlen(text), digest, NULL, EVP_sha256(), NULL) != 1)
		goto done;
	(void)b64url_encode_into(digest, sizeof(digest), out);
	ok = true;
done:
	free(text);
	json_decref(canon);
	return ok;
}
