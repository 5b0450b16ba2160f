/* Client secrets: scrypt against RFC 7914's test vectors, the stored
 * form and its bounds, constant-time checking, generated secrets. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "b64url.h"
#include "secret.h"

static void hex(const unsigned char *raw, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[raw[i] >> 4];
		out[2 * i + 1] = digits[raw[i] & 15];
	}
	out[2 * n] = '\0';
}

/* RFC 7914 section 12; the fourth vector (N = 2^20, 1 GiB) is beyond the
 * bound a stored hash may ask for, so it is refused instead. */
Test(auth_secret, rfc7914_vectors)
{
	static const struct {
		const char *pass;
		const char *salt;
		uint64_t n;
		uint32_t r, p;
		const char *hex;
	} cases[] = {
		{ "", "", 16, 1, 1,
		  "77d6576238657b203b19ca42c18a0497f16b4844e3074ae8dfdffa3fede21442"
		  "fcd0069ded0948f8326a753a0fc81f17e8d3e0fb2e0d3628cf35e20c38d18906" },
		{ "password", "NaCl", 1024, 8, 16,
		  "fdbabe1c9d3472007856e7190d01e9fe7c6ad7cbc8237830e77376634b373162"
		  "2eaf30d92e22a3886ff109279d9830dac727afb94a83ee6d8360cbdfa2cc0640" },
		{ "pleaseletmein", "SodiumChloride", 16384, 8, 1,
		  "7023bdcb3afd7348461c06cd81fd38ebfda8fbba904f8e3ea9b543f6545da1f2"
		  "d5432955613f0fcf62d49705242a9af9e61e85dc0d651e40dfcf017b45575887" },
	};
	unsigned char out[64];
	char got[129];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		cr_assert(secret_scrypt(cases[i].pass, strlen(cases[i].pass),
					(const unsigned char *)cases[i].salt, strlen(cases[i].salt),
					cases[i].n, cases[i].r, cases[i].p, out, sizeof(out)),
			  "vector %zu", i + 1);
		hex(out, sizeof(out), got);
		cr_assert_str_eq(got, cases[i].hex, "vector %zu", i + 1);
	}
	cr_assert_not(secret_scrypt("pleaseletmein", 13, (const unsigned char *)"SodiumChloride",
				    14, 1048576, 8, 1, out, sizeof(out)),
		      "1 GiB of scrypt is beyond the bound");
	cr_assert_not(secret_scrypt("x", 1, (const unsigned char *)"y", 1, 1000, 8, 1, out, 32),
		      "N must be a power of two");
	cr_assert_not(secret_scrypt("x", 1, (const unsigned char *)"y", 1, 1024, 0, 1, out, 32));
	cr_assert_not(secret_scrypt("x", 1, (const unsigned char *)"y", 1, 1024, 8, 0, out, 32));
}

Test(auth_secret, hash_then_verify)
{
	char *stored = secret_hash_with("s3cret", 6, 1024, 8, 1);
	char *again = secret_hash_with("s3cret", 6, 1024, 8, 1);

	cr_assert_not_null(stored);
	cr_assert_eq(strncmp(stored, "scrypt$1024$8$1$", 16), 0, "%s", stored);
	cr_assert(secret_verify("s3cret", 6, stored));
	cr_assert_not(secret_verify("s3cret!", 7, stored));
	cr_assert_not(secret_verify("s3cre", 5, stored));
	cr_assert_not(secret_verify("", 0, stored));
	cr_assert_str_neq(stored, again, "each hash has its own salt");
	cr_assert(secret_verify("s3cret", 6, again));
	free(stored);
	free(again);
}

Test(auth_secret, floe_cost_is_the_default)
{
	char *stored = secret_hash("correct horse", 13);

	cr_assert_not_null(stored);
	cr_assert_eq(strncmp(stored, "scrypt$32768$8$1$", 17), 0, "%s", stored);
	cr_assert(secret_verify("correct horse", 13, stored));
	free(stored);
	cr_assert_not(secret_verify("correct horse", 13, NULL),
		      "an unknown client matches nothing");
}

/* Changing any part of the stored form makes it match nothing. */
Test(auth_secret, tampered_or_unreadable_stored_forms_match_nothing)
{
	char *stored = secret_hash_with("pw", 2, 1024, 8, 1);
	char buf[300];
	size_t len = strlen(stored);
	static const char *const bad[] = {
		"",
		"scrypt",
		"bcrypt$1024$8$1$AAAAAAAAAAAAAAAAAAAAAA$AAAAAAAAAAAAAAAAAAAAAA",
		"scrypt$1000$8$1$AAAAAAAAAAAAAAAAAAAAAA$AAAAAAAAAAAAAAAAAAAAAA",
		"scrypt$01024$8$1$AAAAAAAAAAAAAAAAAAAAAA$AAAAAAAAAAAAAAAAAAAAAA",
		"scrypt$-1024$8$1$AAAAAAAAAAAAAAAAAAAAAA$AAAAAAAAAAAAAAAAAAAAAA",
		"scrypt$1048576$8$1$AAAAAAAAAAAAAAAAAAAAAA$AAAAAAAAAAAAAAAAAAAAAA",
		"scrypt$1024$0$1$AAAAAAAAAAAAAAAAAAAAAA$AAAAAAAAAAAAAAAAAAAAAA",
		"scrypt$1024$8$99$AAAAAAAAAAAAAAAAAAAAAA$AAAAAAAAAAAAAAAAAAAAAA",
		"scrypt$1024$8$1$AAAA$AAAAAAAAAAAAAAAAAAAAAA",
		"scrypt$1024$8$1$AAAAAAAAAAAAAAAAAAAAAA$AAAA",
		"scrypt$1024$8$1$AAAAAAAAAAAAAAAAAAAAAA==$AAAAAAAAAAAAAAAAAAAAAA",
		"scrypt$1024$8$1$AAAAAAAAAAAAAAAAAAAAAA$AAAAAAAAAAAAAAAAAAAAAA$",
		"scrypt$1024$8$1$AAAAAAAAAAAAAAAAAAAAAA",
	};

	cr_assert(len < sizeof(buf));
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_assert_not(secret_verify("pw", 2, bad[i]), "'%s' matched", bad[i]);
	/* Every character of the hash part changed in turn. */
	const char *hash = strrchr(stored, '$') + 1;
	for (size_t i = (size_t)(hash - stored); i < len; i++) {
		memcpy(buf, stored, len + 1);
		buf[i] = buf[i] == 'A' ? 'B' : 'A';
		cr_assert_not(secret_verify("pw", 2, buf), "'%s' matched", buf);
	}
	/* And the salt's first character. */
	memcpy(buf, stored, len + 1);
	char *salt = strchr(buf + 16, '$') - 22;
	salt[0] = salt[0] == 'A' ? 'B' : 'A';
	cr_assert_not(secret_verify("pw", 2, buf), "'%s' matched", buf);
	free(stored);
}

Test(auth_secret, random_secrets)
{
	char a[SECRET_RANDOM_LEN + 1];
	char b[SECRET_RANDOM_LEN + 1];
	size_t len = 0;

	cr_assert(secret_random(a));
	cr_assert(secret_random(b));
	cr_assert_eq(strlen(a), SECRET_RANDOM_LEN);
	cr_assert_str_neq(a, b);
	unsigned char *raw = b64url_decode(a, strlen(a), &len);
	cr_assert_not_null(raw, "a secret is base64url: %s", a);
	cr_assert_eq(len, 32);
	free(raw);
}

/* --- the keyed form --- */

static struct secret_key test_key(unsigned char first)
{
	unsigned char master[32];
	struct secret_key k;

	for (size_t i = 0; i < sizeof(master); i++)
		master[i] = (unsigned char)(first + i);
	cr_assert(secret_key_derive(master, sizeof(master), &k));
	return k;
}

/* The derived key is HKDF-Expand (RFC 5869) of the key file's bytes with
 * floe's info, and a stored form is the base64url HMAC-SHA256 under it
 * (both computed independently with Python's cryptography and hmac). */
Test(auth_secret, keyed_vectors)
{
	struct secret_key k = test_key(0);
	char got[65];
	const char *secret = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";

	hex(k.key, sizeof(k.key), got);
	cr_assert_str_eq(got, "a3aea165066e08256f24dd0f2177f092f7bf239f00c557766b990c379a57b094");
	cr_assert_str_eq(k.id, "a9c98d11894f81d1");
	char *stored = secret_hash_keyed(&k, secret, strlen(secret));
	cr_assert_str_eq(
		stored, "hmac-sha256$a9c98d11894f81d1$UvmxQEdhyZk7xZf0dDRX6Lhm5tzqTSKyzuPpnadFEdg");
	free(stored);
	unsigned char short_master[16] = { 0 };
	cr_assert_not(secret_key_derive(short_master, sizeof(short_master), &k));
}

Test(auth_secret, keyed_check)
{
	struct secret_key k = test_key(0);
	struct secret_key other = test_key(1);
	char secret[SECRET_RANDOM_LEN + 1];
	char id[SECRET_KEY_ID_LEN + 1] = "";
	bool rehash = true;

	cr_assert(secret_random(secret));
	char *stored = secret_hash_keyed(&k, secret, strlen(secret));
	cr_assert_not_null(stored);
	cr_assert_eq(secret_check(&k, secret, strlen(secret), stored, id, &rehash), SECRET_MATCH);
	cr_assert_not(rehash, "the keyed form is the one to keep");
	cr_assert_eq(secret_check(&k, secret, strlen(secret) - 1, stored, id, NULL),
		     SECRET_MISMATCH);
	char wrong[SECRET_RANDOM_LEN + 1];
	cr_assert(secret_random(wrong));
	cr_assert_eq(secret_check(&k, wrong, strlen(wrong), stored, id, NULL), SECRET_MISMATCH);
	/* Under another key it cannot be decided, and says which key. */
	cr_assert_eq(secret_check(&other, secret, strlen(secret), stored, id, NULL),
		     SECRET_OTHER_KEY);
	cr_assert_str_eq(id, k.id);
	cr_assert_eq(secret_check(NULL, secret, strlen(secret), stored, NULL, NULL),
		     SECRET_OTHER_KEY);
	/* An unknown client, and forms that do not read, match nothing. */
	cr_assert_eq(secret_check(&k, secret, strlen(secret), NULL, id, NULL), SECRET_MISMATCH);
	const char *bad[] = {
		"hmac-sha256$",
		"hmac-sha256$a9c98d11894f81d1$",
		"hmac-sha256$A9C98D11894F81D1$UvmxQEdhyZk7xZf0dDRX6Lhm5tzqTSKyzuPpnadFEdg",
		"hmac-sha256$a9c98d11894f81d1$UvmxQEdhyZk7xZf0dDRX6Lhm5tzqTSKyzuPpnadFEd",
		"hmac-sha256$a9c98d11894f81d1$UvmxQEdhyZk7xZf0dDRX6Lhm5tzqTSKyzuPpnadFEdh",
		"hmac-sha256$a9c98d11894f81d1$UvmxQEdhyZk7xZf0dDRX6Lhm5tzqTSKyzuPpnadFEdgA",
		"md5$x"
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_assert_eq(secret_check(&k, secret, strlen(secret), bad[i], id, NULL),
			     SECRET_MISMATCH, "%s", bad[i]);
	free(stored);
}

/* A random secret under scrypt still matches, and asks to be stored
 * keyed; an operator's secret stays under scrypt. */
Test(auth_secret, scrypt_forms_keep_working)
{
	struct secret_key k = test_key(0);
	char secret[SECRET_RANDOM_LEN + 1];
	bool rehash = false;

	cr_assert(secret_random(secret));
	char *stored = secret_hash_with(secret, strlen(secret), 1024, 8, 1);
	cr_assert_eq(secret_check(&k, secret, strlen(secret), stored, NULL, &rehash), SECRET_MATCH);
	cr_assert(rehash);
	cr_assert_eq(secret_check(NULL, secret, strlen(secret), stored, NULL, &rehash),
		     SECRET_MATCH);
	cr_assert_not(rehash, "no key, nothing to rehash to");
	cr_assert_eq(secret_check(&k, "nope", 4, stored, NULL, &rehash), SECRET_MISMATCH);
	cr_assert_not(rehash);
	free(stored);

	stored = secret_hash_with("hunter2", 7, 1024, 8, 1);
	cr_assert_eq(secret_check(&k, "hunter2", 7, stored, NULL, &rehash), SECRET_MATCH);
	cr_assert_not(rehash, "a secret that may be low-entropy stays slow");
	free(stored);
}

Test(auth_secret, which_secrets_are_taken_as_random)
{
	struct secret_key k = test_key(0);
	char secret[SECRET_RANDOM_LEN + 1];

	cr_assert(secret_random(secret));
	cr_assert(secret_is_generated(secret, strlen(secret)));
	cr_assert_not(secret_is_generated(secret, strlen(secret) - 1));
	cr_assert_not(secret_is_generated("correct horse battery staple", 28));
	/* 43 characters, but not canonical base64url of 32 bytes. */
	cr_assert_not(secret_is_generated("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAB", 43));
	cr_assert_not(secret_is_generated("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA+", 43));

	char *fast = secret_hash_for(&k, secret, strlen(secret));
	char *slow = secret_hash_for(&k, "hunter2", 7);
	char *nokey = secret_hash_for(NULL, secret, strlen(secret));
	cr_assert(strncmp(fast, "hmac-sha256$", 12) == 0, "%s", fast);
	cr_assert(strncmp(slow, "scrypt$32768$8$1$", 17) == 0, "%s", slow);
	cr_assert(strncmp(nokey, "scrypt$", 7) == 0, "%s", nokey);
	free(fast);
	free(slow);
	free(nokey);
}
