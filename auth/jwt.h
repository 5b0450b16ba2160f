/*
 * jwt.h - JSON Web Tokens in the JWS compact form (RFC 7515, 7519):
 * reading a token, checking its signature with one key, checking its
 * time, issuer and audience claims, and signing a token.
 *
 * Two algorithms: ES256 (ECDSA over P-256 with SHA-256, the raw r||s
 * signature RFC 7518 section 3.4 asks for), which floe signs with, and
 * RS256 (RSASSA-PKCS1-v1_5 with SHA-256), which external issuers use.
 * Everything else is refused, "none" (in any spelling) and the HMAC
 * algorithms included. Which key verifies a token (its "kid", the issuer's
 * key set) is the caller's business.
 */
#ifndef FLOE_JWT_H
#define FLOE_JWT_H

#include <stdbool.h>
#include <stddef.h>
#include <jansson.h>
#include <openssl/evp.h>

#include "error.h"

/* The longest token read, in bytes: a bearer token longer than this is
 * refused before it is decoded. */
#define JWT_MAX_LEN 8192

enum jwt_alg {
	JWT_ALG_ES256,
	JWT_ALG_RS256,
};

/* Why a token is refused. jwt_status_message words each one. */
enum jwt_status {
	JWT_OK = 0,
	JWT_TOO_LARGE,       /* longer than JWT_MAX_LEN */
	JWT_MALFORMED,       /* not header.payload.signature of base64url JSON objects */
	JWT_ALG_NONE,        /* an unsigned token */
	JWT_ALG_UNSUPPORTED, /* an algorithm other than ES256 and RS256 */
	JWT_CRIT,            /* a critical header extension floe does not implement */
	JWT_KEY_MISMATCH,    /* the algorithm does not fit the key (type, curve, size) */
	JWT_BAD_SIGNATURE,   /* the signature does not verify with the key */
	JWT_BAD_CLAIM,       /* a registered claim (exp, nbf, iat, iss, aud) of the wrong type */
	JWT_NO_EXPIRY,       /* no exp claim */
	JWT_EXPIRED,         /* exp has passed, beyond the leeway */
	JWT_NOT_YET_VALID,   /* nbf is still ahead, beyond the leeway */
	JWT_BAD_ISSUER,      /* iss is not the expected issuer */
	JWT_BAD_AUDIENCE,    /* aud does not name the expected audience */
	JWT_UNKNOWN_KEY,     /* no key of the issuer's set has the token's kid and algorithm */
	JWT_NOMEM,           /* out of memory, or the crypto library failed */
	JWT_STATUS_COUNT
};

/* A sentence for the log and for the client's 401 ("Token has
 * expired"); static, never NULL. */
const char *jwt_status_message(enum jwt_status status);

/* A token whose structure has been read; its signature is not yet
 * checked. */
struct jwt {
	enum jwt_alg alg;
	const char *kid;     /* the header's "kid", NULL if none; borrowed from header */
	json_t *header;      /* owned */
	json_t *claims;      /* owned: the payload, a JSON object */
	char *signing_input; /* owned: "header.payload" as the token spelled it */
	size_t signing_len;
	unsigned char *sig; /* owned: the decoded signature */
	size_t sig_len;
};

/*
 * Reads the compact token of len bytes (not NUL-terminated necessarily).
 * On JWT_OK *out is a new struct jwt (free with jwt_free); otherwise *out
 * is NULL and the status says why: JWT_TOO_LARGE, JWT_MALFORMED (three
 * segments, each canonical base64url, the header and payload JSON objects
 * without duplicate names, a string "alg", a string "kid" if any),
 * JWT_ALG_NONE, JWT_ALG_UNSUPPORTED, JWT_CRIT, JWT_NOMEM.
 */
enum jwt_status jwt_parse(const char *token, size_t len, struct jwt **out) FLOE_WUR;

/* Checks the token's signature with key (borrowed). JWT_KEY_MISMATCH
 * when the token's algorithm does not fit the key (ES256 needs an EC key
 * on P-256; RS256 an RSA key of at least 2048 bits), JWT_BAD_SIGNATURE,
 * JWT_NOMEM, or JWT_OK. An ECDSA signature (r, s) has a twin (r, n - s)
 * that verifies too, so one token can be spelled two ways: identify a
 * token by its "jti", never by its text. */
enum jwt_status jwt_verify(const struct jwt *jwt, EVP_PKEY *key) FLOE_WUR;

/* What jwt_check_claims expects. */
struct jwt_expect {
	const char *issuer; /* iss must equal it; NULL: not checked */
	const char *
		audience; /* aud (a string or an array of strings) must name it; NULL: not checked */
	long long leeway; /* seconds of clock skew allowed on exp and nbf */
};

/*
 * Checks the claims of a verified token at time now (seconds since the
 * epoch, from the caller's clock so that tests can set it): iss and aud
 * as want says, exp present and not passed (now < exp + leeway), nbf if
 * present not ahead (nbf <= now + leeway), iat if present a number.
 * Returns JWT_OK or the first failure: JWT_BAD_CLAIM, JWT_BAD_ISSUER,
 * JWT_BAD_AUDIENCE, JWT_NO_EXPIRY, JWT_EXPIRED, JWT_NOT_YET_VALID.
 */
enum jwt_status jwt_check_claims(const json_t *claims, const struct jwt_expect *want,
				 long long now) FLOE_WUR;

/* Frees a token from jwt_parse; NULL is fine. */
void jwt_free(struct jwt *jwt);

/*
 * Signs claims (borrowed) with key (borrowed; ES256 for an EC P-256 key,
 * RS256 for an RSA key of at least 2048 bits), with kid in the header when
 * not NULL. Returns the compact token as a new string (free with free()),
 * or NULL when the key fits neither algorithm or out of memory.
 */
char *jwt_sign(EVP_PKEY *key, const char *kid, const json_t *claims) FLOE_WUR;

/* A new P-256 key pair for ES256 (free with EVP_PKEY_free), or NULL. */
EVP_PKEY *jwt_key_generate(void) FLOE_WUR;

#endif
