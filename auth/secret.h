/*
 * secret.h - client secrets: made from the system's random source, stored
 * only as a slow salted hash (scrypt, RFC 7914), checked in constant
 * time. The stored form carries its own parameters,
 *   scrypt$N$r$p$SALT$HASH     (SALT and HASH in base64url)
 * so the cost can be raised later without making old hashes unreadable.
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
