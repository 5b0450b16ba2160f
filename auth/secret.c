/*
 * secret.c - generating, hashing and checking client secrets (secret.h)
 * with OpenSSL's scrypt, HMAC and random source.
 */
#include "secret.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include "b64url.h"

#define SECRET_MAX_N (1u << 20)
#define SECRET_MAX_R 32
#define SECRET_MAX_P 16
#define SECRET_MIN_BYTES 16
#define SECRET_MAX_BYTES 64
#define SECRET_STORED_MAX 256

bool secret_random(char out[SECRET_RANDOM_LEN + 1])
{
	unsigned char raw[32];

	if (RAND_bytes(raw, sizeof(raw)) != 1)
		return false;
	(void)b64url_encode_into(raw, sizeof(raw), out);
	OPENSSL_cleanse(raw, sizeof(raw));
	return true;
}

/* The memory scrypt needs (OpenSSL's own count: 128 r (N + 2) for V and
 * 128 r p for B), or 0 when the parameters are out of bounds. */
static uint64_t secret_scrypt_mem(uint64_t n, uint32_t r, uint32_t p)
{
	uint64_t mem = 0;

	if (n < 2 || n > SECRET_MAX_N || (n & (n - 1)) != 0 || r < 1 || r > SECRET_MAX_R || p < 1 ||
	    p > SECRET_MAX_P)
		return 0;
	mem = 128ull * r * (n + 2) + 128ull * r * p;
	return mem <= SECRET_SCRYPT_MAX_MEM ? mem : 0;
}

bool secret_scrypt(const char *pass, size_t passlen, const unsigned char *salt, size_t saltlen,
		   uint64_t n, uint32_t r, uint32_t p, unsigned char *out, size_t outlen)
{
	uint64_t mem = secret_scrypt_mem(n, r, p);

	if (mem == 0)
		return false;
	/* OpenSSL reads an empty password or salt through the pointer, so
	 * give it a real one. */
	return EVP_PBE_scrypt(passlen > 0 ? pass : "", passlen,
			      saltlen > 0 ? salt : (const unsigned char *)"", saltlen, n, r, p,
			      mem + 4096, out, outlen) == 1;
}

char *secret_hash_with(const char *secret, size_t len, uint64_t n, uint32_t r, uint32_t p)
{
	unsigned char salt[SECRET_SALT_LEN];
	unsigned char hash[SECRET_HASH_LEN];
	char salt64[SECRET_SALT_LEN * 2];
	char hash64[SECRET_HASH_LEN * 2];
	char *out = NULL;
	int w = 0;

	if (RAND_bytes(salt, sizeof(salt)) != 1 ||
	    !secret_scrypt(secret, len, salt, sizeof(salt), n, r, p, hash, sizeof(hash)))
		goto done;
	(void)b64url_encode_into(salt, sizeof(salt), salt64);
	(void)b64url_encode_into(hash, sizeof(hash), hash64);
	out = malloc(SECRET_STORED_MAX);
	if (out == NULL)
		goto done;
	w = snprintf(out, SECRET_STORED_MAX, "scrypt$%llu$%u$%u$%s$%s", (unsigned long long)n, r, p,
		     salt64, hash64);
	if (w < 0 || w >= SECRET_STORED_MAX) {
		free(out);
		out = NULL;
	}
done:
	OPENSSL_cleanse(hash, sizeof(hash));
	return out;
}

char *secret_hash(const char *secret, size_t len)
{
	return secret_hash_with(secret, len, SECRET_SCRYPT_N, SECRET_SCRYPT_R, SECRET_SCRYPT_P);
}

/* Reads a decimal field of at most 7 digits, no sign, no leading zero,
 * ending at '$'; advances *s past the '$'. */
static bool secret_read_number(const char **s, uint64_t *out)
{
	const char *p = *s;
	uint64_t v = 0;
	size_t digits = 0;

	if (*p == '0')
		return false;
	for (; *p >= '0' && *p <= '9' && digits < 8; p++, digits++)
		v = v * 10 + (uint64_t)(*p - '0');
	if (digits == 0 || digits > 7 || *p != '$')
		return false;
	*out = v;
	*s = p + 1;
	return true;
}

/* The parts of a stored hash; false when it is not one. */
static bool secret_read_stored(const char *stored, uint64_t *n, uint32_t *r, uint32_t *p,
			       unsigned char *salt, size_t *saltlen, unsigned char *hash,
			       size_t *hashlen)
{
	const char *s = stored;
	const char *dollar = NULL;
	uint64_t rv = 0;
	uint64_t pv = 0;

	if (strnlen(stored, SECRET_STORED_MAX) >= SECRET_STORED_MAX ||
	    strncmp(s, "scrypt$", 7) != 0)
		return false;
	s += 7;
	if (!secret_read_number(&s, n) || !secret_read_number(&s, &rv) ||
	    !secret_read_number(&s, &pv) || rv > SECRET_MAX_R || pv > SECRET_MAX_P)
		return false;
	*r = (uint32_t)rv;
	*p = (uint32_t)pv;
	dollar = strchr(s, '$');
	if (dollar == NULL || b64url_decoded_max((size_t)(dollar - s)) > SECRET_MAX_BYTES ||
	    b64url_decoded_max(strlen(dollar + 1)) > SECRET_MAX_BYTES)
		return false;
	if (!b64url_decode_into(s, (size_t)(dollar - s), salt, saltlen) ||
	    !b64url_decode_into(dollar + 1, strlen(dollar + 1), hash, hashlen))
		return false;
	return *saltlen >= SECRET_MIN_BYTES && *hashlen >= SECRET_MIN_BYTES &&
	       secret_scrypt_mem(*n, *r, *p) != 0;
}

bool secret_verify(const char *secret, size_t len, const char *stored)
{
	unsigned char salt[SECRET_MAX_BYTES];
	unsigned char want[SECRET_MAX_BYTES];
	unsigned char got[SECRET_MAX_BYTES];
	size_t saltlen = 0;
	size_t wantlen = 0;
	uint64_t n = 0;
	uint32_t r = 0;
	uint32_t p = 0;
	bool ok = false;

	if (stored == NULL) {
		/* An unknown client: the same work, a fixed salt, no match. */
		memset(salt, 0, SECRET_SALT_LEN);
		if (secret_scrypt(secret, len, salt, SECRET_SALT_LEN, SECRET_SCRYPT_N,
				  SECRET_SCRYPT_R, SECRET_SCRYPT_P, got, SECRET_HASH_LEN))
			OPENSSL_cleanse(got, sizeof(got));
		return false;
	}
	if (!secret_read_stored(stored, &n, &r, &p, salt, &saltlen, want, &wantlen))
		return false;
	if (secret_scrypt(secret, len, salt, saltlen, n, r, p, got, wantlen))
		ok = CRYPTO_memcmp(got, want, wantlen) == 0;
	OPENSSL_cleanse(got, sizeof(got));
	return ok;
}

/* --- the keyed form --- */

#define SECRET_KEYED_PREFIX "hmac-sha256$"
#define SECRET_KEYED_PREFIX_LEN 12
#define SECRET_KEY_INFO "floe client secret hmac-sha256 v1"

bool secret_key_derive(const unsigned char *master, size_t len, struct secret_key *k)
{
	unsigned char info[sizeof(SECRET_KEY_INFO)];
	unsigned char digest[32];
	unsigned int outlen = 0;
	static const char digits[] = "0123456789abcdef";

	if (len < SECRET_KEY_LEN || len > INT32_MAX)
		return false;
	/* HKDF-Expand for one block: T(1) = HMAC(PRK, info || 0x01). */
	memcpy(info, SECRET_KEY_INFO, sizeof(SECRET_KEY_INFO) - 1);
	info[sizeof(SECRET_KEY_INFO) - 1] = 0x01;
	if (HMAC(EVP_sha256(), master, (int)len, info, sizeof(info), k->key, &outlen) == NULL ||
	    outlen != SECRET_KEY_LEN ||
	    EVP_Digest(k->key, SECRET_KEY_LEN, digest, NULL, EVP_sha256(), NULL) != 1) {
		OPENSSL_cleanse(k->key, sizeof(k->key));
		return false;
	}
	for (size_t i = 0; i < SECRET_KEY_ID_LEN / 2; i++) {
		k->id[2 * i] = digits[digest[i] >> 4];
		k->id[2 * i + 1] = digits[digest[i] & 15];
	}
	k->id[SECRET_KEY_ID_LEN] = '\0';
	return true;
}

void secret_key_clear(struct secret_key *k)
{
	OPENSSL_cleanse(k, sizeof(*k));
}

bool secret_is_generated(const char *secret, size_t len)
{
	unsigned char raw[SECRET_MAX_BYTES];
	size_t n = 0;
	bool ok = len == SECRET_RANDOM_LEN && b64url_decode_into(secret, len, raw, &n) && n == 32;

	OPENSSL_cleanse(raw, sizeof(raw));
	return ok;
}

/* HMAC-SHA256 of secret under k into mac. */
static bool secret_mac(const struct secret_key *k, const char *secret, size_t len,
		       unsigned char mac[SECRET_HASH_LEN])
{
	unsigned int outlen = 0;

	return HMAC(EVP_sha256(), k->key, SECRET_KEY_LEN,
		    len > 0 ? (const unsigned char *)secret : (const unsigned char *)"", len, mac,
		    &outlen) != NULL &&
	       outlen == SECRET_HASH_LEN;
}

char *secret_hash_keyed(const struct secret_key *k, const char *secret, size_t len)
{
	unsigned char mac[SECRET_HASH_LEN];
	char mac64[SECRET_HASH_LEN * 2];
	char *out = NULL;

	if (!secret_mac(k, secret, len, mac))
		goto done;
	(void)b64url_encode_into(mac, sizeof(mac), mac64);
	out = malloc(SECRET_STORED_MAX);
	if (out != NULL)
		(void)snprintf(out, SECRET_STORED_MAX, SECRET_KEYED_PREFIX "%s$%s", k->id, mac64);
done:
	OPENSSL_cleanse(mac, sizeof(mac));
	return out;
}

char *secret_hash_for(const struct secret_key *k, const char *secret, size_t len)
{
	if (k != NULL && secret_is_generated(secret, len))
		return secret_hash_keyed(k, secret, len);
	return secret_hash(secret, len);
}

/* A keyed stored form's key id (into id) and mac; false when stored is
 * not one. */
static bool secret_read_keyed(const char *stored, char id[SECRET_KEY_ID_LEN + 1],
			      unsigned char mac[SECRET_HASH_LEN])
{
	const char *s = stored + SECRET_KEYED_PREFIX_LEN;
	size_t n = 0;

	if (strnlen(s, SECRET_STORED_MAX) != SECRET_KEY_ID_LEN + 1 + 43 ||
	    s[SECRET_KEY_ID_LEN] != '$')
		return false;
	for (size_t i = 0; i < SECRET_KEY_ID_LEN; i++) {
		char c = s[i];
		if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
			return false;
		id[i] = c;
	}
	id[SECRET_KEY_ID_LEN] = '\0';
	return b64url_decode_into(s + SECRET_KEY_ID_LEN + 1, 43, mac, &n) && n == SECRET_HASH_LEN;
}

enum secret_verdict secret_check(const struct secret_key *k, const char *secret, size_t len,
				 const char *stored, char other_id[SECRET_KEY_ID_LEN + 1],
				 bool *rehash)
{
	unsigned char want[SECRET_MAX_BYTES];
	unsigned char got[SECRET_HASH_LEN];
	char id[SECRET_KEY_ID_LEN + 1];
	enum secret_verdict v = SECRET_MISMATCH;

	if (rehash != NULL)
		*rehash = false;
	if (stored == NULL || strncmp(stored, SECRET_KEYED_PREFIX, SECRET_KEYED_PREFIX_LEN) == 0) {
		bool read = stored != NULL && secret_read_keyed(stored, id, want);
		if (read && (k == NULL || strcmp(id, k->id) != 0)) {
			if (other_id != NULL)
				(void)snprintf(other_id, SECRET_KEY_ID_LEN + 1, "%s", id);
			v = SECRET_OTHER_KEY;
		} else if (k != NULL && secret_mac(k, secret, len, got)) {
			/* An unknown client, or a form not read, spends the
			 * same HMAC and matches nothing. */
			if (read && CRYPTO_memcmp(got, want, SECRET_HASH_LEN) == 0)
				v = SECRET_MATCH;
		}
	} else if (secret_verify(secret, len, stored)) {
		v = SECRET_MATCH;
		if (rehash != NULL)
			*rehash = k != NULL && secret_is_generated(secret, len);
	}
	OPENSSL_cleanse(got, sizeof(got));
	OPENSSL_cleanse(want, sizeof(want));
	return v;
}
