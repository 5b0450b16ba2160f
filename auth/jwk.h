/*
 * jwk.h - public JSON Web Keys (RFC 7517, 7518 section 6): the keys an
 * external issuer publishes in its key set (JWKS), read into OpenSSL
 * keys that jwt_verify checks tokens with; floe's own public keys written
 * as JWKs, and their RFC 7638 thumbprints (floe's key ids). Fetching and
 * caching a key set is not here.
 */
#ifndef FLOE_JWK_H
#define FLOE_JWK_H

#include <stdbool.h>
#include <stddef.h>
#include <jansson.h>
#include <openssl/evp.h>

#include "error.h"
#include "jwt.h"

/* RSA moduli floe accepts, in bits: smaller is weak, larger only makes
 * every verification slow. */
#define JWK_RSA_MIN_BITS 2048
#define JWK_RSA_MAX_BITS 8192

/*
 * Reads one public key: kty "RSA" (n, e) or kty "EC" with crv "P-256"
 * (x and y of 32 bytes each, a point on the curve). A key with private
 * members ("d", "p", ...), a "use" other than "sig", an "alg" other than
 * RS256 for RSA or ES256 for EC, or without its own n and e (x and y) is
 * refused: a certificate chain (x5c) alone is not read. On success returns a new key (free with EVP_PKEY_free) and sets *alg to
 * the algorithm it verifies; otherwise NULL, with the reason in errbuf
 * ("JWK: unsupported kty 'oct'").
 */
EVP_PKEY *jwk_parse(const json_t *jwk, enum jwt_alg *alg, char *errbuf, size_t errlen) FLOE_WUR;

/* The length of a thumbprint: base64url of a SHA-256 digest. */
#define JWK_THUMBPRINT_LEN 43

/*
 * The public JWK of key (borrowed): {"kty":"EC","crv":"P-256","x","y"}
 * for an EC P-256 key, {"kty":"RSA","n","e"} for RSA, with "use":"sig",
 * "alg" and, when kid is not NULL, "kid". Returns a new object (decref
 * it), or NULL for any other key or when out of memory. No private member
 * is ever written.
 */
json_t *jwk_from_key(EVP_PKEY *key, const char *kid) FLOE_WUR;

/*
 * The RFC 7638 thumbprint of a public JWK: base64url of the SHA-256 of
 * its required members (RSA: e, kty, n; EC: crv, kty, x, y) in that order
 * without whitespace. Other members do not change it. Fills out (room for
 * JWK_THUMBPRINT_LEN + 1); false when kty is neither, a required member
 * is not a string, or the digest fails.
 */
bool jwk_thumbprint(const json_t *jwk, char out[JWK_THUMBPRINT_LEN + 1]) FLOE_WUR;

/* The member of a key set ({"keys": [...]}) whose "kid" is kid
 * (borrowed), or NULL when there is none or the set is malformed. */
const json_t *jwk_set_find(const json_t *jwks, const char *kid);

#endif
