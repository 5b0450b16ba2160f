/*
 * keys.h - floe's own signing keys on disk: a directory of KID.pem files
 * (PKCS#8 P-256 private keys, KID the RFC 7638 thumbprint of the public
 * key), the newest of which signs the tokens floe issues while every one
 * verifies. Rotation writes a new newest key; a key is dropped (and its
 * file deleted) once every token it can have signed has expired. Which
 * tokens to issue and when to reread the directory is the caller's
 * business.
 *
 * A key's "made" time is its file's modification time (nanoseconds): a
 * key file is written once and never changed, the time survives a
 * restart and is the same for every replica reading one directory, and
 * keyring_rotate_dir makes each new file's time later than every other's.
 *
 * Thread safety: a struct keyring may be shared by any number of
 * threads; keyring_sign, keyring_find and keyring_jwks read under a
 * read lock, keyring_reload swaps the keys under the write lock.
 * keyring_close must not race with anything.
 */
#ifndef FLOE_KEYS_H
#define FLOE_KEYS_H

#include <stdbool.h>
#include <jansson.h>
#include <openssl/evp.h>

#include "error.h"
#include "jwk.h"

/* The most key files a directory may hold; more is refused (rotation
 * every few minutes with a day of overlap stays far below it). */
#define KEYRING_MAX_KEYS 64

/* The largest key file read: a P-256 PKCS#8 PEM is about 240 bytes. */
#define KEYRING_MAX_FILE 16384

struct keyring;

/*
 * Opens dir: made (with its missing parents) mode 0700 if missing;
 * refused if it is not a directory, not owned by the effective user, or
 * group- or world-accessible. Reads every KID.pem in it: a regular file
 * (no symbolic link) owned by us, without group or world permission, a
 * PEM "PRIVATE KEY" (PKCS#8, unencrypted) holding a P-256 key whose
 * private and public halves agree and whose thumbprint is KID. A .pem
 * file that fails any of these refuses the whole directory; files whose
 * names start with '.' or do not end in ".pem" (a crashed write's
 * ".KID.pem.tmp") are ignored. Makes a first key when there is none;
 * drops none (the first keyring_reload does). overlap_s: how long an
 * older key still verifies after the next newer one was made (the token
 * lifetime, the leeway and the reload period together).
 * Returns a new keyring (keyring_close), or NULL with FE_INTERNAL and a
 * message naming the directory or file and the reason (logged too).
 */
struct keyring *keyring_open(const char *dir, long long overlap_s, struct floe_error *err) FLOE_WUR;

/*
 * Rereads the directory with the rules of keyring_open (making a key if
 * there is none), then drops every key whose successor (the next newer
 * key) was made more than overlap_s seconds before now and deletes its
 * file. All or nothing: on failure (FE_INTERNAL) the keyring keeps the
 * keys it had. now: seconds since the epoch, the caller's clock.
 */
bool keyring_reload(struct keyring *kr, long long now, struct floe_error *err) FLOE_WUR;

/* Signs claims (borrowed) with ES256 and the newest key, its kid in the
 * header. Returns the compact token (free with free()), or NULL with
 * FE_INTERNAL when out of memory or the crypto library fails. */
char *keyring_sign(struct keyring *kr, const json_t *claims, struct floe_error *err) FLOE_WUR;

/* The key named kid, for jwt_verify: a new reference (EVP_PKEY_free it;
 * it stays valid after a reload drops the key), or NULL when the keyring
 * holds no such key. */
EVP_PKEY *keyring_find(struct keyring *kr, const char *kid) FLOE_WUR;

/* The kid of the newest key into out. */
void keyring_newest_kid(struct keyring *kr, char out[JWK_THUMBPRINT_LEN + 1]);

/* {"keys": [the public JWK of each key, newest first, with its kid]}: a
 * new object (decref it), or NULL when out of memory. No private member
 * is ever written. */
json_t *keyring_jwks(struct keyring *kr) FLOE_WUR;

/*
 * Writes a new key to dir (checked and made as keyring_open does) and
 * makes it the newest: the file is written as a temporary name with
 * mode 0600 from its creation whatever the umask, fsynced, given a
 * modification time after every other key's, renamed to KID.pem, and the
 * directory fsynced. Fills kid. False with FE_INTERNAL on failure, when
 * nothing is left but possibly a temporary file that keyring_open ignores.
 * A running floe signs with it after its next keyring_reload.
 */
bool keyring_rotate_dir(const char *dir, char kid[JWK_THUMBPRINT_LEN + 1],
			struct floe_error *err) FLOE_WUR;

/* Frees the keyring and its keys; NULL is fine. */
void keyring_close(struct keyring *kr);

#endif
