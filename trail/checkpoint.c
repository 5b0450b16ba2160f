/*
 * checkpoint.c - Ed25519 keys and the signed checkpoints of the audit
 * chain (trail.h).
 */
#include "trail.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include "keyfile.h"

/* A PEM key file is a few hundred bytes. */
#define KEY_FILE_MAX 16384

struct trail_key {
	EVP_PKEY *pkey;
	bool secret;
	char id[TRAIL_KEY_ID_LEN + 1];
};

void trail_key_free(struct trail_key *k)
{
	if (k == NULL)
		return;
	EVP_PKEY_free(k->pkey);
	free(k);
}

/* Takes pkey (an Ed25519 key) into a new trail_key with its id. */
static struct trail_key *key_wrap(EVP_PKEY *pkey, bool secret, struct floe_error *err)
{
	unsigned char *der = NULL;
	unsigned char digest[TRAIL_HASH_LEN];
	char hex[TRAIL_HASH_HEX];
	struct trail_key *k = NULL;

	if (EVP_PKEY_get_id(pkey) != EVP_PKEY_ED25519) {
		EVP_PKEY_free(pkey);
		floe_err(err, FE_BAD_REQUEST, "the key is not an Ed25519 key");
		return NULL;
	}
	int len = i2d_PUBKEY(pkey, &der);
	k = calloc(1, sizeof(*k));
	if (len <= 0 || k == NULL ||
	    EVP_Digest(der, (size_t)len, digest, NULL, EVP_sha256(), NULL) != 1) {
		OPENSSL_free(der);
		EVP_PKEY_free(pkey);
		free(k);
		floe_err(err, FE_INTERNAL, "cannot read the key's public half");
		return NULL;
	}
	OPENSSL_free(der);
	trail_hex(digest, hex);
	memcpy(k->id, hex, TRAIL_KEY_ID_LEN);
	k->id[TRAIL_KEY_ID_LEN] = '\0';
	k->pkey = pkey;
	k->secret = secret;
	return k;
}

struct trail_key *trail_key_load(const char *path, struct floe_error *err)
{
	char buf[KEY_FILE_MAX];
	struct stat st;
	size_t len = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);

	if (fd < 0) {
		floe_err(err, FE_BAD_REQUEST, "the audit signing key %s cannot be opened: %s", path,
			 errno == ENOENT ? "no such file" : "permission denied or not a file");
		return NULL;
	}
	const char *why = keyfile_refusal(fd, &st);
	if (why != NULL) {
		(void)close(fd);
		floe_err(err, FE_BAD_REQUEST, "the audit signing key %s is refused: %s", path, why);
		return NULL;
	}
	bool read_ok = keyfile_read(fd, buf, sizeof(buf), &len);
	(void)close(fd);
	if (!read_ok || len == 0 || len >= sizeof(buf)) {
		floe_err(err, FE_BAD_REQUEST, "the audit signing key %s cannot be read", path);
		return NULL;
	}
	BIO *bio = BIO_new_mem_buf(buf, (int)len);
	EVP_PKEY *pkey = bio ? PEM_read_bio_PrivateKey(bio, NULL, NULL, NULL) : NULL;
	BIO_free(bio);
	OPENSSL_cleanse(buf, sizeof(buf));
	if (pkey == NULL) {
		floe_err(err, FE_BAD_REQUEST,
			 "the audit signing key %s is no PEM private key (make one with: "
			 "openssl genpkey -algorithm ed25519 -out %s)",
			 path, path);
		return NULL;
	}
	return key_wrap(pkey, true, err);
}

struct trail_key *trail_key_parse_public(const char *pem, size_t len, struct floe_error *err)
{
	bool secret = false;

	if (len > KEY_FILE_MAX) {
		floe_err(err, FE_BAD_REQUEST, "the public key is too long");
		return NULL;
	}
	BIO *bio = BIO_new_mem_buf(pem, (int)len);
	EVP_PKEY *pkey = bio ? PEM_read_bio_PUBKEY(bio, NULL, NULL, NULL) : NULL;
	if (pkey == NULL && bio != NULL) {
		(void)BIO_reset(bio);
		pkey = PEM_read_bio_PrivateKey(bio, NULL, NULL, NULL);
		secret = pkey != NULL;
	}
	BIO_free(bio);
	if (pkey == NULL) {
		floe_err(err, FE_BAD_REQUEST, "the public key is no PEM key");
		return NULL;
	}
	return key_wrap(pkey, secret, err);
}

const char *trail_key_id(const struct trail_key *k)
{
	return k->id;
}

char *trail_key_public_pem(const struct trail_key *k)
{
	BIO *bio = BIO_new(BIO_s_mem());
	char *data = NULL;
	char *out = NULL;

	if (bio == NULL)
		return NULL;
	if (PEM_write_bio_PUBKEY(bio, k->pkey) == 1) {
		long n = BIO_get_mem_data(bio, &data);
		if (n > 0) {
			out = malloc((size_t)n + 1);
			if (out != NULL) {
				memcpy(out, data, (size_t)n);
				out[n] = '\0';
			}
		}
	}
	BIO_free(bio);
	return out;
}

/* The bytes a checkpoint's signature covers (a static buffer's worth). */
static int checkpoint_message(char *buf, size_t cap, long long position,
			      const unsigned char hash[TRAIL_HASH_LEN], const char *signed_at,
			      const char *key_id)
{
	char hex[TRAIL_HASH_HEX];

	trail_hex(hash, hex);
	return snprintf(buf, cap, "floe-audit-checkpoint/1\n%lld\n%s\n%s\n%s\n", position, hex,
			signed_at, key_id);
}

bool trail_checkpoint_sign(const struct trail_key *k, long long position,
			   const unsigned char hash[TRAIL_HASH_LEN], const char *signed_at,
			   unsigned char sig[TRAIL_SIG_MAX], size_t *siglen)
{
	char msg[512];
	bool ok = false;

	if (!k->secret)
		return false;
	int n = checkpoint_message(msg, sizeof(msg), position, hash, signed_at, k->id);
	if (n <= 0 || (size_t)n >= sizeof(msg))
		return false;
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	*siglen = TRAIL_SIG_MAX;
	ok = ctx != NULL && EVP_DigestSignInit(ctx, NULL, NULL, NULL, k->pkey) == 1 &&
	     EVP_DigestSign(ctx, sig, siglen, (const unsigned char *)msg, (size_t)n) == 1;
	EVP_MD_CTX_free(ctx);
	return ok;
}

bool trail_checkpoint_verify(const struct trail_key *k, long long position,
			     const unsigned char hash[TRAIL_HASH_LEN], const char *signed_at,
			     const char *key_id, const unsigned char *sig, size_t siglen)
{
	char msg[512];
	bool ok = false;

	if (key_id == NULL || strcmp(key_id, k->id) != 0 || signed_at == NULL)
		return false;
	int n = checkpoint_message(msg, sizeof(msg), position, hash, signed_at, key_id);
	if (n <= 0 || (size_t)n >= sizeof(msg))
		return false;
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	ok = ctx != NULL && EVP_DigestVerifyInit(ctx, NULL, NULL, NULL, k->pkey) == 1 &&
	     EVP_DigestVerify(ctx, sig, siglen, (const unsigned char *)msg, (size_t)n) == 1;
	EVP_MD_CTX_free(ctx);
	return ok;
}
