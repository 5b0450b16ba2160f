/*
 * oidc.h - tokens of an external OpenID issuer: its discovery document
 * and key set fetched over libcurl, kept and fetched again when a token
 * names a key the set lacks, and tokens verified against them (RS256,
 * ES256) with their iss, aud, exp and nbf. Which floe principal a verified
 * token stands for is decided above; this only reads the claims.
 *
 * The program initialises libcurl (curl_global_init) before oidc_new.
 */
#ifndef FLOE_OIDC_H
#define FLOE_OIDC_H

#include <stdbool.h>
#include <stddef.h>
#include <jansson.h>

#include "error.h"
#include "jwt.h"

/* The largest discovery document and key set read, in bytes: a transfer
 * that passes it is aborted. */
#define OIDC_DOC_MAX 65536
/* The most members a key set may have. */
#define OIDC_KEYS_MAX 32
/* A key set is fetched again for an unknown kid at most this often... */
#define OIDC_REFRESH_SECONDS 30
/* ...or, after a fetch that failed, this often (ms). */
#define OIDC_RETRY_MS 1000
/* How long a token with a kid the set lacks waits for the refresher's
 * fetch, in ms; then it is answered as undecided. */
#define OIDC_WAIT_MS 2000
/* The longest principal name and role name, in bytes, and the most roles. */
#define OIDC_NAME_MAX 255
#define OIDC_ROLES_MAX 32

struct oidc_config {
	const char *issuer;          /* exactly as the discovery document's "issuer" */
	const char *audience;        /* the token's aud must name it */
	const char *principal_claim; /* NULL: "sub" */
	const char *roles_claim;     /* NULL: the token names no roles */
	long long leeway;            /* seconds of clock skew on exp and nbf */
	long timeout_ms;             /* per fetch; 0: 5000 */
	long wait_ms;                /* a token's wait for a fetch; 0: OIDC_WAIT_MS */
	long retry_ms;               /* between fetches after one failed; 0: OIDC_RETRY_MS */
};

struct oidc;

/*
 * Fetches the issuer's discovery document (ISSUER/.well-known/openid-
 * configuration) and its key set once. The issuer and the key set's
 * address must be https, or http on a loopback host (an http address is
 * only connected to on a loopback address); the document's "issuer" must
 * equal cfg->issuer exactly (OpenID Connect Discovery 1.0, 4.3); no
 * redirect is followed. cfg's strings are copied. Returns a new issuer
 * (oidc_free), or NULL with err filled (FE_BAD_REQUEST for a bad
 * configuration, FE_UNAVAILABLE when a fetch failed or its answer is not
 * usable): a start-up error.
 */
struct oidc *oidc_new(const struct oidc_config *cfg, struct floe_error *err) FLOE_WUR;

/*
 * Verifies an issuer token of len bytes at time now (seconds since the
 * epoch): jwt_parse, the key by its kid and algorithm (a token without
 * kid takes the set's only key of its algorithm), the signature, then
 * iss, aud, exp and nbf (jwt_check_claims). Thread-safe; never fetches on
 * the calling thread: a thread of the issuer's own (started by oidc_new)
 * fetches the key set when a token names a kid the set lacks, at most
 * once every OIDC_REFRESH_SECONDS while its fetches succeed (meanwhile
 * such a token is JWT_UNKNOWN_KEY), every OIDC_RETRY_MS after one failed;
 * the token waits for that fetch at most OIDC_WAIT_MS, so a rotation seen
 * by many requests at once costs one fetch, and tokens with known keys
 * verify meanwhile.
 *
 * On JWT_OK with *claims set, *claims is the token's payload (new
 * reference). JWT_OK with *claims NULL and err filled (FE_UNAVAILABLE)
 * means the key set could not be fetched, or not within OIDC_WAIT_MS:
 * whether the token is good cannot be decided now (never accept it; a
 * retry may). Any other status says why the token is refused; *claims is
 * NULL.
 */
enum jwt_status oidc_verify(struct oidc *o, const char *token, size_t len, long long now,
			    json_t **claims, struct floe_error *err) FLOE_WUR;

/*
 * The principal and roles of verified claims, by the issuer's
 * principal_claim and roles_claim (oidc_claims_principal). Fills name
 * (namelen at least OIDC_NAME_MAX + 1), *roles (new: oidc_roles_free)
 * and *nroles; false with err filled (FE_NOT_AUTHORIZED) otherwise.
 */
bool oidc_principal(const struct oidc *o, const json_t *claims, char *name, size_t namelen,
		    char ***roles, size_t *nroles, struct floe_error *err) FLOE_WUR;

/*
 * The same for any claim names: the principal is the string claim
 * principal_claim, 1 to OIDC_NAME_MAX bytes without control characters;
 * the roles (roles_claim NULL: none; the claim absent: none) an array of
 * strings or one space-separated string, each role 1 to OIDC_NAME_MAX
 * bytes without spaces or control characters, duplicates dropped, at most
 * OIDC_ROLES_MAX. *roles is NULL when there are none. A claim of another
 * shape, or past a bound, refuses the token rather than dropping roles.
 */
bool oidc_claims_principal(const json_t *claims, const char *principal_claim,
			   const char *roles_claim, char *name, size_t namelen, char ***roles,
			   size_t *nroles, struct floe_error *err) FLOE_WUR;

/* Frees roles from oidc_principal; NULL is fine. */
void oidc_roles_free(char **roles, size_t nroles);

/* The discovery document's token_endpoint (borrowed from o), for
 * advertising as oauth2-server-uri; NULL when it names none. */
const char *oidc_token_endpoint(const struct oidc *o);

/* Frees o; NULL is fine. No verification may be running. */
void oidc_free(struct oidc *o);

/*
 * Whether url may be fetched from: https with a host, or, unless
 * https_only, http with a loopback host ("localhost", 127.0.0.0/8, ::1).
 * Fills err (FE_BAD_REQUEST, naming what) when not; what says whose
 * address it is.
 */
bool oidc_url_allowed(const char *url, const char *what, bool https_only,
		      struct floe_error *err) FLOE_WUR;

/*
 * Reads a fetched discovery document of len bytes (at most OIDC_DOC_MAX):
 * a JSON object whose "issuer" equals issuer, whose "jwks_uri" is
 * allowed (oidc_url_allowed; https when the issuer is), and whose
 * "token_endpoint", when present, is allowed too. Sets *jwks_uri and *token_endpoint (new strings, free();
 * the latter NULL when absent). False with err filled (FE_UNAVAILABLE).
 */
bool oidc_discovery_parse(const char *body, size_t len, const char *issuer, char **jwks_uri,
			  char **token_endpoint, struct floe_error *err) FLOE_WUR;

/* A key set read into keys floe verifies with. */
struct oidc_keyset;

/*
 * Reads a fetched key set of len bytes (at most OIDC_DOC_MAX): {"keys":
 * [...]} of at most OIDC_KEYS_MAX members. A member jwk_parse refuses
 * (an encryption key, a symmetric or private key, another curve) is
 * skipped; a set left with no key is refused. Returns a new key set
 * (oidc_keyset_free), or NULL with err filled (FE_UNAVAILABLE).
 */
struct oidc_keyset *oidc_keyset_parse(const char *body, size_t len,
				      struct floe_error *err) FLOE_WUR;

/* How many usable keys ks holds. */
size_t oidc_keyset_count(const struct oidc_keyset *ks);

/* Frees ks; NULL is fine. */
void oidc_keyset_free(struct oidc_keyset *ks);

#endif
