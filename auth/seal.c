/*
 * seal.c - AES-256-GCM sealing of short secrets (seal.h) over OpenSSL's
 * EVP interface. The nonce, the ciphertext and the tag travel together
 * in one base64url field; the version and the key id before it are
 * checked before any decryption is tried.
 */
#include "seal.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include "b64url.h"

#define SEAL_PREFIX "v1:"
#define SEAL_PREFIX_LEN 3

bool seal_key_init(struct seal_key *k, const unsigned char *raw, size_t len)
{
	unsigned char digest[32];
	unsigned int dlen = 0;
	static const char hex[] = "0123456789abcdef";

	if (len != SEAL_KEY_LEN || EVP_Digest(raw, len, digest, &dlen, EVP_sha256(), NULL) != 1 ||
	    dlen != 32)
		return false;
	memcpy(k->key, raw, SEAL_KEY_LEN);
	for (size_t i = 0; i < SEAL_KEY_ID_LEN / 2; i++) {
		k->id[2 * i] = hex[digest[i] >> 4];
		k->id[2 * i + 1] = hex[digest[i] & 15];
	}
	k->id[SEAL_KEY_ID_LEN] = '\0';
	return true;
}

void seal_key_clear(struct seal_key *k)
{
	OPENSSL_cleanse(k, sizeof(*k));
}

/* One AES-256-GCM pass: encrypt (tag written) or decrypt (tag checked)
 * len bytes of in into out. False when the cipher fails or, decrypting,
 * the tag does not check. */
static bool seal_gcm(bool encrypt, const unsigned char *key, const unsigned char *nonce,
		     const void *aad, size_t aadlen, const unsigned char *in, size_t len,
		     unsigned char *out, unsigned char *tag)
{
	EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
	int n = 0;
	bool ok = false;

	if (ctx == NULL || len > INT_MAX || aadlen > INT_MAX)
		goto done;
	if (EVP_CipherInit_ex(ctx, EVP_aes_256_gcm(), NULL, NULL, NULL, encrypt ? 1 : 0) != 1 ||
	    EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_IVLEN, SEAL_NONCE_LEN, NULL) != 1 ||
	    EVP_CipherInit_ex(ctx, NULL, NULL, key, nonce, -1) != 1)
		goto done;
	if (aadlen > 0 && EVP_CipherUpdate(ctx, NULL, &n, aad, (int)aadlen) != 1)
		goto done;
	if (len > 0 && EVP_CipherUpdate(ctx, out, &n, in, (int)len) != 1)
		goto done;
	if (!encrypt && EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, SEAL_TAG_LEN, tag) != 1)
		goto done;
	if (EVP_CipherFinal_ex(ctx, out + len, &n) != 1)
		goto done;
	if (encrypt && EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, SEAL_TAG_LEN, tag) != 1)
		goto done;
	ok = true;
done:
	EVP_CIPHER_CTX_free(ctx);
	return ok;
}

char *seal_text_with_nonce(const struct seal_key *k, const unsigned char nonce[SEAL_NONCE_LEN],
			   const void *aad, size_t aadlen, const char *plain, size_t len,
			   struct floe_error *err)
{
	size_t rawlen = SEAL_NONCE_LEN + len + SEAL_TAG_LEN;
	unsigned char *raw = NULL;
	char *out = NULL;

	if (len > SEAL_MAX_PLAIN) {
		floe_err(err, FE_INTERNAL, "a secret of over %d bytes is not sealed",
			 SEAL_MAX_PLAIN);
		return NULL;
	}
	/* + 1: a block of room for EVP_CipherFinal_ex, which writes none. */
	raw = malloc(rawlen + 1);
	size_t outlen = SEAL_PREFIX_LEN + SEAL_KEY_ID_LEN + 1 + b64url_encoded_len(rawlen) + 1;
	out = malloc(outlen);
	if (raw == NULL || out == NULL) {
		floe_err(err, FE_INTERNAL, "out of memory");
		goto fail;
	}
	memcpy(raw, nonce, SEAL_NONCE_LEN);
	if (!seal_gcm(true, k->key, nonce, aad, aadlen, (const unsigned char *)plain, len,
		      raw + SEAL_NONCE_LEN, raw + SEAL_NONCE_LEN + len)) {
		floe_err(err, FE_INTERNAL, "the secret could not be sealed (AES-256-GCM failed)");
		goto fail;
	}
	int head = snprintf(out, outlen, SEAL_PREFIX "%s:", k->id);
	(void)b64url_encode_into(raw, rawlen, out + head);
	OPENSSL_cleanse(raw, rawlen);
	free(raw);
	return out;
fail:
	free(raw);
	free(out);
	return NULL;
}

char *seal_text(const struct seal_key *k, const void *aad, size_t aadlen, const char *plain,
		size_t len, struct floe_error *err)
{
	unsigned char nonce[SEAL_NONCE_LEN];

	if (RAND_bytes(nonce, sizeof(nonce)) != 1) {
		floe_err(err, FE_INTERNAL, "no randomness for a nonce; the secret is not sealed");
		return NULL;
	}
	return seal_text_with_nonce(k, nonce, aad, aadlen, plain, len, err);
}

/* Whether the SEAL_KEY_ID_LEN characters at p are lower-case hex. */
static bool seal_is_key_id(const char *p)
{
	for (size_t i = 0; i < SEAL_KEY_ID_LEN; i++) {
		bool digit = p[i] >= '0' && p[i] <= '9';
		bool letter = p[i] >= 'a' && p[i] <= 'f';
		if (!digit && !letter)
			return false;
	}
	return true;
}

enum seal_result seal_open(const struct seal_key *k, const void *aad, size_t aadlen,
			   const char *sealed, char **plain, size_t *len,
			   char other_id[SEAL_KEY_ID_LEN + 1])
{
	const size_t head = SEAL_PREFIX_LEN + SEAL_KEY_ID_LEN + 1;
	unsigned char *raw = NULL;
	char *out = NULL;
	size_t rawlen = 0;
	enum seal_result res = SEAL_MALFORMED;

	*plain = NULL;
	*len = 0;
	other_id[0] = '\0';
	if (strlen(sealed) <= head || strncmp(sealed, SEAL_PREFIX, SEAL_PREFIX_LEN) != 0 ||
	    !seal_is_key_id(sealed + SEAL_PREFIX_LEN) || sealed[head - 1] != ':')
		return SEAL_MALFORMED;
	if (memcmp(sealed + SEAL_PREFIX_LEN, k->id, SEAL_KEY_ID_LEN) != 0) {
		memcpy(other_id, sealed + SEAL_PREFIX_LEN, SEAL_KEY_ID_LEN);
		other_id[SEAL_KEY_ID_LEN] = '\0';
		return SEAL_OTHER_KEY;
	}
	const char *body = sealed + head;
	size_t blen = strlen(body);
	if (b64url_decoded_max(blen) > SEAL_NONCE_LEN + SEAL_MAX_PLAIN + SEAL_TAG_LEN)
		return SEAL_MALFORMED;
	raw = b64url_decode(body, blen, &rawlen);
	if (raw == NULL)
		return SEAL_MALFORMED; /* not canonical base64url (memory: as good as) */
	if (rawlen < SEAL_NONCE_LEN + SEAL_TAG_LEN)
		goto done;
	size_t n = rawlen - SEAL_NONCE_LEN - SEAL_TAG_LEN;
	out = malloc(n + 1 + 1);
	if (out == NULL) {
		res = SEAL_NOMEM;
		goto done;
	}
	if (!seal_gcm(false, k->key, raw, aad, aadlen, raw + SEAL_NONCE_LEN, n,
		      (unsigned char *)out, raw + SEAL_NONCE_LEN + n)) {
		OPENSSL_cleanse(out, n + 2);
		free(out);
		out = NULL;
		res = SEAL_FORGED;
		goto done;
	}
	out[n] = '\0';
	*plain = out;
	*len = n;
	res = SEAL_OK;
done:
	OPENSSL_cleanse(raw, rawlen);
	free(raw);
	return res;
}

void seal_plain_free(char *plain)
{
	if (plain == NULL)
		return;
	OPENSSL_cleanse(plain, strlen(plain));
	free(plain);
}
