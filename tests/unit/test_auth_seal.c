/* Sealed secrets: AES-256-GCM against the GCM specification's test case
 * 16, the sealed form, round trips, and every way a sealed value can fail
 * to open (another key, a changed tag, nonce, ciphertext or associated
 * data, a malformed text); the key file's checks and its making. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "b64url.h"
#include "seal.h"
#include "sealkey.h"

static void unhex(const char *hex, unsigned char *out, size_t *n)
{
	size_t len = strlen(hex) / 2;

	for (size_t i = 0; i < len; i++) {
		unsigned v = 0;
		cr_assert_eq(sscanf(hex + 2 * i, "%2x", &v), 1);
		out[i] = (unsigned char)v;
	}
	*n = len;
}

static struct seal_key key_of(unsigned char fill)
{
	unsigned char raw[SEAL_KEY_LEN];
	struct seal_key k;

	memset(raw, fill, sizeof(raw));
	cr_assert(seal_key_init(&k, raw, sizeof(raw)));
	return k;
}

/* The Galois/Counter Mode specification (McGrew and Viega), test case
 * 16: AES-256, a 96-bit IV, 60 bytes of plaintext, 20 of associated data. */
Test(auth_seal, gcm_spec_test_case_16)
{
	unsigned char raw[64], nonce[16], aad[32], want[128];
	size_t n = 0, nn = 0, na = 0, nw = 0, nt = 0;
	unsigned char plain[64];
	struct floe_error err;
	struct seal_key k;

	unhex("feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308", raw, &n);
	unhex("cafebabefacedbaddecaf888", nonce, &nn);
	unhex("feedfacedeadbeeffeedfacedeadbeefabaddad2", aad, &na);
	unhex("d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a72"
	      "1c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b39",
	      plain, &nt);
	/* nonce || ciphertext || tag */
	unhex("cafebabefacedbaddecaf888"
	      "522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa"
	      "8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662"
	      "76fc6ece0f4e1768cddf8853bb2d551b",
	      want, &nw);
	cr_assert(seal_key_init(&k, raw, n));
	cr_assert_str_eq(k.id, "7f70dfd819c3c582", "the first 8 bytes of the key's SHA-256");
	char *sealed = seal_text_with_nonce(&k, nonce, aad, na, (const char *)plain, nt, &err);
	cr_assert_not_null(sealed);
	char *body = b64url_encode(want, nw);
	char expect[512];
	(void)snprintf(expect, sizeof(expect), "v1:%s:%s", k.id, body);
	cr_assert_str_eq(sealed, expect);

	char *opened = NULL;
	size_t len = 0;
	char other[SEAL_KEY_ID_LEN + 1];
	cr_assert_eq(seal_open(&k, aad, na, sealed, &opened, &len, other), SEAL_OK);
	cr_assert_eq(len, nt);
	cr_assert_eq(memcmp(opened, plain, nt), 0);
	seal_plain_free(opened);
	free(body);
	free(sealed);
}

Test(auth_seal, round_trip_with_a_fresh_nonce_each_time)
{
	struct seal_key k = key_of(7);
	struct floe_error err;
	const char *id = "0b5c1b1e-2f5e-4c55-9a55-3c1d2e4f5a6b";
	char *a = seal_text(&k, id, strlen(id), "hook-secret", 11, &err);
	char *b = seal_text(&k, id, strlen(id), "hook-secret", 11, &err);
	char *plain = NULL;
	size_t len = 0;
	char other[SEAL_KEY_ID_LEN + 1];

	cr_assert_not_null(a);
	cr_assert_not_null(b);
	cr_assert_str_neq(a, b, "each sealing has its own nonce");
	cr_assert_null(strstr(a, "hook-secret"));
	cr_assert_eq(strncmp(a, "v1:", 3), 0);
	cr_assert_eq(strncmp(a + 3, k.id, SEAL_KEY_ID_LEN), 0, "the value names its key");
	cr_assert_eq(seal_open(&k, id, strlen(id), a, &plain, &len, other), SEAL_OK);
	cr_assert_str_eq(plain, "hook-secret");
	cr_assert_eq(len, 11);
	seal_plain_free(plain);
	cr_assert_eq(seal_open(&k, id, strlen(id), b, &plain, &len, other), SEAL_OK);
	cr_assert_str_eq(plain, "hook-secret");
	seal_plain_free(plain);
	free(a);
	free(b);
}

Test(auth_seal, an_empty_text_and_no_aad_seal_too)
{
	struct seal_key k = key_of(1);
	struct floe_error err;
	char *s = seal_text(&k, NULL, 0, "", 0, &err);
	char *plain = NULL;
	size_t len = 9;
	char other[SEAL_KEY_ID_LEN + 1];

	cr_assert_not_null(s);
	cr_assert_eq(seal_open(&k, NULL, 0, s, &plain, &len, other), SEAL_OK);
	cr_assert_str_eq(plain, "");
	cr_assert_eq(len, 0);
	seal_plain_free(plain);
	free(s);
}

Test(auth_seal, another_key_is_named_not_tried)
{
	struct seal_key k = key_of(1);
	struct seal_key other_key = key_of(2);
	struct floe_error err;
	char *s = seal_text(&k, "h", 1, "secret", 6, &err);
	char *plain = NULL;
	size_t len = 0;
	char other[SEAL_KEY_ID_LEN + 1];

	cr_assert_str_neq(k.id, other_key.id);
	cr_assert_eq(seal_open(&other_key, "h", 1, s, &plain, &len, other), SEAL_OTHER_KEY);
	cr_assert_null(plain);
	cr_assert_str_eq(other, k.id);

	/* The same key id on another key (a forged id): the tag refuses it. */
	memcpy(s + 3, other_key.id, SEAL_KEY_ID_LEN);
	cr_assert_eq(seal_open(&other_key, "h", 1, s, &plain, &len, other), SEAL_FORGED);
	cr_assert_null(plain);
	free(s);
}

/* Flips one bit of the decoded body at offset off and encodes it again. */
static char *flip(const char *sealed, size_t off)
{
	const char *body = sealed + 3 + SEAL_KEY_ID_LEN + 1;
	size_t n = 0;
	unsigned char *raw = b64url_decode(body, strlen(body), &n);
	char *out = malloc(strlen(sealed) + 1);

	cr_assert_not_null(raw);
	cr_assert(off < n);
	raw[off] ^= 0x01;
	memcpy(out, sealed, (size_t)(body - sealed));
	(void)b64url_encode_into(raw, n, out + (body - sealed));
	free(raw);
	return out;
}

Test(auth_seal, a_changed_nonce_ciphertext_tag_or_aad_is_refused)
{
	struct seal_key k = key_of(3);
	struct floe_error err;
	const char *id = "hook-a";
	char *s = seal_text(&k, id, strlen(id), "the-secret", 10, &err);
	char *plain = NULL;
	size_t len = 0;
	char other[SEAL_KEY_ID_LEN + 1];
	/* nonce, ciphertext, tag */
	size_t offsets[] = { 0,
			     SEAL_NONCE_LEN - 1,
			     SEAL_NONCE_LEN,
			     SEAL_NONCE_LEN + 9,
			     SEAL_NONCE_LEN + 10,
			     SEAL_NONCE_LEN + 10 + SEAL_TAG_LEN - 1 };

	for (size_t i = 0; i < sizeof(offsets) / sizeof(offsets[0]); i++) {
		char *bad = flip(s, offsets[i]);
		cr_assert_eq(seal_open(&k, id, strlen(id), bad, &plain, &len, other), SEAL_FORGED,
			     "a bit flipped at %zu", offsets[i]);
		cr_assert_null(plain);
		free(bad);
	}
	cr_assert_eq(seal_open(&k, "hook-b", 6, s, &plain, &len, other), SEAL_FORGED,
		     "moved to another hook's row");
	cr_assert_eq(seal_open(&k, NULL, 0, s, &plain, &len, other), SEAL_FORGED);
	free(s);
}

Test(auth_seal, malformed_texts_are_refused)
{
	struct seal_key k = key_of(4);
	char *plain = NULL;
	size_t len = 0;
	char other[SEAL_KEY_ID_LEN + 1];
	char shortbody[64];
	char badb64[64];
	char v2[64];

	(void)snprintf(shortbody, sizeof(shortbody), "v1:%s:AAAA", k.id);
	(void)snprintf(badb64, sizeof(badb64), "v1:%s:not base64!", k.id);
	(void)snprintf(v2, sizeof(v2), "v2:%s:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", k.id);
	const char *cases[] = { "",
				"plain-text-secret",
				"v1:",
				"v1:0123456789abcdef",
				"v1:0123456789abcdef:",
				"v1:0123456789ABCDEF:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
				"v1:0123456789abcde:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
				shortbody,
				badb64,
				v2 };
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		cr_assert_eq(seal_open(&k, NULL, 0, cases[i], &plain, &len, other), SEAL_MALFORMED,
			     "case %zu: %s", i, cases[i]);
		cr_assert_null(plain);
	}
}

Test(auth_seal, a_key_must_be_32_bytes)
{
	unsigned char raw[33] = { 0 };
	struct seal_key k;

	cr_assert_not(seal_key_init(&k, raw, 31));
	cr_assert_not(seal_key_init(&k, raw, 33));
	cr_assert_not(seal_key_init(&k, raw, 0));
}

/* --- the key file --- */

static char dir[64];

static void make_dir(void)
{
	(void)snprintf(dir, sizeof(dir), "/tmp/floe-sealkey-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
}

static void remove_dir(void)
{
	char cmd[128];

	(void)snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	cr_assert_eq(system(cmd), 0);
}

static void write_file(const char *path, size_t n, mode_t mode)
{
	unsigned char raw[64];
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	memset(raw, 9, sizeof(raw));
	cr_assert(fd >= 0);
	cr_assert_eq(write(fd, raw, n), (ssize_t)n);
	cr_assert_eq(fchmod(fd, mode), 0);
	close(fd);
}

TestSuite(auth_sealkey, .init = make_dir, .fini = remove_dir);

Test(auth_sealkey, made_once_0600_and_read_back)
{
	char path[128];
	struct seal_key a, b;
	struct floe_error err;
	struct stat st;
	bool created = false;

	(void)snprintf(path, sizeof(path), "%s/hook-secrets.key", dir);
	cr_assert(sealkey_load(path, true, &a, &created, &err), "%s", err.message);
	cr_assert(created);
	cr_assert_eq(stat(path, &st), 0);
	cr_assert_eq(st.st_mode & 07777, 0600);
	cr_assert_eq(st.st_size, SEAL_KEY_LEN);
	cr_assert(sealkey_load(path, true, &b, &created, &err), "%s", err.message);
	cr_assert_not(created, "the second start reads the key the first made");
	cr_assert_str_eq(a.id, b.id);
	cr_assert_eq(memcmp(a.key, b.key, SEAL_KEY_LEN), 0);
}

Test(auth_sealkey, floes_starting_at_once_agree_on_one_key)
{
	char path[128];
	int fds[8][2];
	char ids[8][SEAL_KEY_ID_LEN + 1];

	(void)snprintf(path, sizeof(path), "%s/hook-secrets.key", dir);
	for (int i = 0; i < 8; i++) {
		cr_assert_eq(pipe(fds[i]), 0);
		pid_t pid = fork();
		cr_assert(pid >= 0);
		if (pid == 0) {
			struct seal_key k;
			struct floe_error err;
			bool created = false;
			if (!sealkey_load(path, true, &k, &created, &err))
				_exit(1);
			_exit(write(fds[i][1], k.id, SEAL_KEY_ID_LEN) == SEAL_KEY_ID_LEN ? 0 : 1);
		}
		close(fds[i][1]);
	}
	for (int i = 0; i < 8; i++) {
		int status = 0;
		cr_assert_eq(read(fds[i][0], ids[i], SEAL_KEY_ID_LEN), SEAL_KEY_ID_LEN);
		ids[i][SEAL_KEY_ID_LEN] = '\0';
		close(fds[i][0]);
		(void)wait(&status);
		cr_assert_eq(status, 0);
		cr_assert_str_eq(ids[i], ids[0], "every floe reads the key that won");
	}
}

Test(auth_sealkey, a_bad_key_file_is_refused_with_its_reason)
{
	char path[128], link_path[128], missing[128];
	struct seal_key k;
	struct floe_error err;
	bool created = false;

	(void)snprintf(path, sizeof(path), "%s/key", dir);
	write_file(path, SEAL_KEY_LEN, 0644);
	cr_assert_not(sealkey_load(path, false, &k, &created, &err));
	cr_assert(strstr(err.message, "group- or world-accessible") != NULL, "%s", err.message);

	write_file(path, SEAL_KEY_LEN - 1, 0600);
	cr_assert_not(sealkey_load(path, false, &k, &created, &err));
	cr_assert(strstr(err.message, "exactly 32 bytes") != NULL, "%s", err.message);
	write_file(path, SEAL_KEY_LEN + 1, 0600);
	cr_assert_not(sealkey_load(path, false, &k, &created, &err));
	cr_assert(strstr(err.message, "exactly 32 bytes") != NULL, "%s", err.message);

	write_file(path, SEAL_KEY_LEN, 0600);
	cr_assert(sealkey_load(path, false, &k, &created, &err), "%s", err.message);
	(void)snprintf(link_path, sizeof(link_path), "%s/link", dir);
	cr_assert_eq(symlink(path, link_path), 0);
	cr_assert_not(sealkey_load(link_path, true, &k, &created, &err));
	cr_assert(strstr(err.message, "symbolic link") != NULL, "%s", err.message);

	(void)snprintf(missing, sizeof(missing), "%s/missing", dir);
	cr_assert_not(sealkey_load(missing, false, &k, &created, &err));
	cr_assert(strstr(err.message, "does not exist") != NULL, "%s", err.message);
	cr_assert_not(sealkey_load(dir, false, &k, &created, &err));
	cr_assert(strstr(err.message, "not a regular file") != NULL, "%s", err.message);
}
