/*
 * secret.h - client secrets: made from the system's random source, stored
 * only as a hash, checked in constant time. Two stored forms:
 *
 *   hmac-sha256$KEYID$HASH     HMAC-SHA256 under a server key that is not
 *                              in the database (secret_key below); for
 *                              secrets of floe's own making, 32 random
 *                              bytes, which no amount of guessing finds,
 *                              so a slow hash would buy nothing but time
 *                              on every grant
 *   scrypt$N$r$p$SALT$HASH     a slow salted hash (RFC 7914), for a secret
 *                              that may be low-entropy (an operator's);
 *                              it carries its parameters, so the cost can
 *                              be raised without making old hashes
 *                              unreadable
 *
 * SALT, HASH in base64url; KEYID names the key without revealing it.
 */
#ifndef FLOE_SECRET_H
#define FLOE_SECRET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

/* floe's cost: 32 MiB and about a tenth of a second a hash. */
#define SECRET_SCRYPT_N 32768
#define SECRET_SCRYPT_R 8
#define SECRET_SCRYPT_P 1
#define SECRET_SALT_LEN 16
#define SECRET_HASH_LEN 32

/* The bounds a stored hash must keep to be checked at all, so that a
 * corrupt row cannot make a check take a gigabyte or a minute. */
#define SECRET_SCRYPT_MAX_MEM ((uint64_t)128 * 1024 * 1024)

/* A generated secret: 32 random bytes in base64url, 43 characters. */
#define SECRET_RANDOM_LEN 43

/* The keyed form's key: 32 bytes and its id (hex of the first 8 bytes of
 * its SHA-256). */
#define SECRET_KEY_LEN 32
#define SECRET_KEY_ID_LEN 16
struct secret_key {
	unsigned char key[SECRET_KEY_LEN];
	char id[SECRET_KEY_ID_LEN + 1];
};

/* Derives the key of the keyed form from len (at least 32) uniformly
 * random bytes of master (floe's key file): HKDF-Expand (RFC 5869) of
 * master as the pseudorandom key with the info "floe client secret
 * hmac-sha256 v1", so it shares nothing usable with the key's other
 * uses. False on a crypto failure or a short master. */
bool secret_key_derive(const unsigned char *master, size_t len, struct secret_key *k) FLOE_WUR;

/* Zeroes k. */
void secret_key_clear(struct secret_key *k);

/* Whether secret has the shape of one secret_random makes: 43 base64url
 * characters that decode to 32 bytes. Such a secret is taken to be
 * random; any other is taken to be possibly low-entropy. */
bool secret_is_generated(const char *secret, size_t len);

/* The keyed stored form of secret under k (new string, free()), or NULL
 * on failure. */
char *secret_hash_keyed(const struct secret_key *k, const char *secret, size_t len) FLOE_WUR;

/* The stored form floe keeps for secret: keyed under k when it has the
 * generated shape and k is not NULL, else scrypt at floe's cost. */
char *secret_hash_for(const struct secret_key *k, const char *secret, size_t len) FLOE_WUR;

enum secret_verdict {
	SECRET_MATCH,
	SECRET_MISMATCH,  /* a wrong secret, an unknown client, a stored form not read */
	SECRET_OTHER_KEY, /* a keyed form under another key: cannot be decided */
};

/*
 * Checks secret against stored, in either form, in constant time.
 * stored NULL (an unknown client) spends the time of a keyed check and
 * is SECRET_MISMATCH. k NULL: a keyed form is SECRET_OTHER_KEY. With
 * SECRET_OTHER_KEY, other_id (when not NULL) is the stored key id.
 * *rehash (when not NULL) is set on a match of a scrypt form whose
 * secret has the generated shape while k is not NULL: the caller may
 * store secret_hash_keyed in its place.
 */
enum secret_verdict secret_check(const struct secret_key *k, const char *secret, size_t len,
				 const char *stored, char other_id[SECRET_KEY_ID_LEN + 1],
				 bool *rehash) FLOE_WUR;

/* Fills out (room for SECRET_RANDOM_LEN + 1) with a new secret from
 * RAND_bytes. False when the random source fails. */
bool secret_random(char out[SECRET_RANDOM_LEN + 1]) FLOE_WUR;

/* scrypt itself (EVP_PBE_scrypt): outlen bytes of key derived from pass
 * and salt. False on parameters beyond the bounds above (N a power of two
 * from 2 to 2^20, r from 1 to 32, p from 1 to 16) or a crypto failure. */
bool secret_scrypt(const char *pass, size_t passlen, const unsigned char *salt, size_t saltlen,
		   uint64_t n, uint32_t r, uint32_t p, unsigned char *out, size_t outlen) FLOE_WUR;

/* The stored form of secret with floe's cost and a new random salt
 * (new string, free()), or NULL on failure. */
char *secret_hash(const char *secret, size_t len) FLOE_WUR;

/* The same with the given cost (tests use a small one). */
char *secret_hash_with(const char *secret, size_t len, uint64_t n, uint32_t r, uint32_t p) FLOE_WUR;

/*
 * True when secret matches stored (a secret_hash result). The comparison
 * is constant-time (CRYPTO_memcmp). A stored form that cannot be read, or
 * whose parameters are out of bounds, matches nothing. stored NULL (an
 * unknown client) spends the time of a check at floe's cost and answers
 * false, so a wrong client id costs what a wrong secret does.
 */
bool secret_verify(const char *secret, size_t len, const char *stored) FLOE_WUR;

#endif
