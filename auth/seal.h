/*
 * seal.h - secrets sealed at rest with AES-256-GCM (OpenSSL EVP): a text
 * sealed under a 32-byte key and bound to associated data (the row it
 * belongs to), written as "v1:<key id>:<base64url of nonce, ciphertext
 * and tag>". The key id is the hex of the first 8 bytes of the key's
 * SHA-256, so a sealed value names the key that opens it. Pure: no I/O;
 * where the key comes from is sealkey.h's business.
 */
#ifndef FLOE_SEAL_H
#define FLOE_SEAL_H

#include <stdbool.h>
#include <stddef.h>

#include "error.h"

#define SEAL_KEY_LEN 32   /* AES-256 */
#define SEAL_NONCE_LEN 12 /* 96 bits, fresh for every sealing */
#define SEAL_TAG_LEN 16
#define SEAL_KEY_ID_LEN 16 /* hex characters */
/* The longest text sealed or opened (a hook secret is far shorter). */
#define SEAL_MAX_PLAIN 65536

struct seal_key {
	unsigned char key[SEAL_KEY_LEN];
	char id[SEAL_KEY_ID_LEN + 1];
};

/* Fills k from len bytes of raw; false (k untouched) unless len is
 * SEAL_KEY_LEN or SHA-256 fails. */
bool seal_key_init(struct seal_key *k, const unsigned char *raw, size_t len) FLOE_WUR;

/* Zeroes k. */
void seal_key_clear(struct seal_key *k);

/*
 * Seals len bytes of plain under k with a fresh random nonce and aad
 * (aadlen bytes, may be 0) as associated data. Returns the sealed text
 * (a new string, free with free()), or NULL with FE_INTERNAL when plain
 * is longer than SEAL_MAX_PLAIN, randomness or memory ran out, or the
 * cipher failed.
 */
char *seal_text(const struct seal_key *k, const void *aad, size_t aadlen, const char *plain,
		size_t len, struct floe_error *err) FLOE_WUR;

enum seal_result {
	SEAL_OK,
	SEAL_MALFORMED, /* not "v1:<key id>:<base64url>" of a possible length */
	SEAL_OTHER_KEY, /* sealed under another key (its id is in other_id) */
	SEAL_FORGED,    /* the tag does not check: altered, or other aad */
	SEAL_NOMEM,
};

/*
 * Opens sealed (a seal_text result) with k and the same aad. SEAL_OK:
 * *plain is a new NUL-terminated string of *len bytes (free it with
 * seal_plain_free). Otherwise *plain is NULL; for SEAL_OTHER_KEY
 * other_id holds the key id the value names.
 */
enum seal_result seal_open(const struct seal_key *k, const void *aad, size_t aadlen,
			   const char *sealed, char **plain, size_t *len,
			   char other_id[SEAL_KEY_ID_LEN + 1]) FLOE_WUR;

/* Zeroes and frees a seal_open result; NULL is fine. */
void seal_plain_free(char *plain);

/* seal_text with the nonce given: for known-answer tests only (a nonce
 * must never be used twice under one key). */
char *seal_text_with_nonce(const struct seal_key *k, const unsigned char nonce[SEAL_NONCE_LEN],
			   const void *aad, size_t aadlen, const char *plain, size_t len,
			   struct floe_error *err) FLOE_WUR;

#endif
