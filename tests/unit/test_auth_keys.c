/* The signing keyring: the first open makes one key, mode 0600 in a 0700
 * directory whatever the umask, named by its thumbprint; a reopen reads
 * the same key; a token it signs verifies with keyring_find(kid) and
 * jwt_verify; after a rotation the new key signs and the old one
 * verifies until the overlap has passed, when its file is deleted; a
 * tampered, misnamed, foreign, linked, group- or world-readable key file
 * or directory is refused; the key set has no private member. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/pem.h>

#include "jwk.h"
#include "jwt.h"
#include "keys.h"

#define OVERLAP 3660LL

/* Short buffers for short paths, so that every longer one has room. */
static char base[64];
static char dir[128];

static void make_base(void)
{
	(void)snprintf(base, sizeof(base), "/tmp/floe-keys-XXXXXX");
	cr_assert_not_null(mkdtemp(base));
	(void)snprintf(dir, sizeof(dir), "%s/auth/signing", base);
}

static void remove_base(void)
{
	char cmd[PATH_MAX + 16];

	(void)snprintf(cmd, sizeof(cmd), "rm -rf '%s'", base);
	cr_assert_eq(system(cmd), 0);
}

static char *key_path(const char *kid)
{
	static char path[256];

	(void)snprintf(path, sizeof(path), "%s/%s.pem", dir, kid);
	return path;
}

/* The number of entries of dir whose names end in ".pem". */
static int pem_files(void)
{
	char cmd[PATH_MAX + 64];

	(void)snprintf(cmd, sizeof(cmd), "exit $(ls -A '%s' | grep -c '\\.pem$')", dir);
	int st = system(cmd);
	return WEXITSTATUS(st);
}

static struct keyring *open_ok(void)
{
	struct floe_error err = { 0 };
	struct keyring *kr = keyring_open(dir, OVERLAP, &err);

	cr_assert_not_null(kr, "%s", err.message);
	return kr;
}

static void open_refused(const char *fragment)
{
	struct floe_error err = { 0 };
	struct keyring *kr = keyring_open(dir, OVERLAP, &err);

	cr_assert_null(kr);
	cr_assert_eq(err.kind, FE_INTERNAL);
	cr_assert_not_null(strstr(err.message, fragment), "'%s' lacks '%s'", err.message, fragment);
}

static long long made(const char *kid)
{
	struct stat st;

	cr_assert_eq(stat(key_path(kid), &st), 0);
	return (long long)st.st_mtim.tv_sec;
}

static json_t *claims(void)
{
	return json_pack("{s:s, s:s, s:s, s:I}", "iss", "floe", "aud", "floe", "sub", "alice",
			 "exp", (json_int_t)time(NULL) + 3600);
}

/* Signs with kr; the token's kid is want_kid and it verifies with the
 * key keyring_find gives for it. */
static void sign_and_verify(struct keyring *kr, const char *want_kid)
{
	struct floe_error err = { 0 };
	json_t *c = claims();
	char *token = keyring_sign(kr, c, &err);
	struct jwt *jwt = NULL;

	cr_assert_not_null(token, "%s", err.message);
	cr_assert_eq(jwt_parse(token, strlen(token), &jwt), JWT_OK);
	cr_assert_eq(jwt->alg, JWT_ALG_ES256);
	cr_assert_str_eq(jwt->kid, want_kid);
	cr_assert_str_eq(json_string_value(json_object_get(jwt->header, "typ")), "JWT");
	EVP_PKEY *key = keyring_find(kr, jwt->kid);
	cr_assert_not_null(key);
	cr_assert_eq(jwt_verify(jwt, key), JWT_OK);
	EVP_PKEY *other = jwt_key_generate();
	cr_assert_eq(jwt_verify(jwt, other), JWT_BAD_SIGNATURE);
	EVP_PKEY_free(other);
	EVP_PKEY_free(key);
	jwt_free(jwt);
	free(token);
	json_decref(c);
}

static void newest(struct keyring *kr, char kid[JWK_THUMBPRINT_LEN + 1])
{
	keyring_newest_kid(kr, kid);
	cr_assert_eq(strlen(kid), JWK_THUMBPRINT_LEN);
}

/* Opens the directory once (making its first key) and gives its kid. */
static void first_key(char kid[JWK_THUMBPRINT_LEN + 1])
{
	struct keyring *kr = open_ok();

	newest(kr, kid);
	keyring_close(kr);
}

TestSuite(auth_keys, .init = make_base, .fini = remove_base);

Test(auth_keys, first_open_makes_one_key_named_by_its_thumbprint)
{
	char kid[JWK_THUMBPRINT_LEN + 1];
	char thumb[JWK_THUMBPRINT_LEN + 1];
	struct stat st;
	struct keyring *kr = open_ok();

	newest(kr, kid);
	cr_assert_eq(pem_files(), 1);
	cr_assert_eq(stat(dir, &st), 0);
	cr_assert_eq(st.st_mode & 07777, 0700);
	cr_assert_eq(stat(key_path(kid), &st), 0);
	cr_assert(S_ISREG(st.st_mode));
	cr_assert_eq(st.st_mode & 07777, 0600);
	/* The file's public key is what names it. */
	FILE *f = fopen(key_path(kid), "r");
	cr_assert_not_null(f);
	EVP_PKEY *key = PEM_read_PrivateKey(f, NULL, NULL, NULL);
	fclose(f);
	cr_assert_not_null(key);
	json_t *jwk = jwk_from_key(key, NULL);
	cr_assert(jwk_thumbprint(jwk, thumb));
	cr_assert_str_eq(thumb, kid);
	json_decref(jwk);
	EVP_PKEY_free(key);
	sign_and_verify(kr, kid);
	keyring_close(kr);
}

Test(auth_keys, modes_do_not_depend_on_the_umask)
{
	const mode_t umasks[] = { 0, 0277 };

	for (size_t i = 0; i < sizeof(umasks) / sizeof(umasks[0]); i++) {
		char kid[JWK_THUMBPRINT_LEN + 1];
		struct floe_error err = { 0 };
		struct stat st;
		mode_t old = umask(umasks[i]);
		(void)snprintf(dir, sizeof(dir), "%s/u%zu/signing", base, i);
		struct keyring *kr = keyring_open(dir, OVERLAP, &err);
		cr_assert_not_null(kr, "umask %04o: %s", (unsigned)umasks[i], err.message);
		cr_assert(keyring_rotate_dir(dir, kid, &err), "%s", err.message);
		(void)umask(old);
		cr_assert_eq(stat(dir, &st), 0);
		cr_assert_eq(st.st_mode & 07777, 0700, "umask %04o", (unsigned)umasks[i]);
		cr_assert_eq(stat(key_path(kid), &st), 0);
		cr_assert_eq(st.st_mode & 07777, 0600, "umask %04o", (unsigned)umasks[i]);
		keyring_close(kr);
	}
}

Test(auth_keys, reopen_reads_the_same_key)
{
	char first[JWK_THUMBPRINT_LEN + 1];
	char again[JWK_THUMBPRINT_LEN + 1];
	struct keyring *kr = open_ok();

	newest(kr, first);
	keyring_close(kr);
	kr = open_ok();
	newest(kr, again);
	cr_assert_str_eq(first, again);
	cr_assert_eq(pem_files(), 1);
	sign_and_verify(kr, first);
	keyring_close(kr);
}

Test(auth_keys, a_token_of_an_unknown_kid_finds_no_key)
{
	struct keyring *kr = open_ok();

	cr_assert_null(keyring_find(kr, "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"));
	cr_assert_null(keyring_find(kr, NULL));
	cr_assert_null(keyring_find(kr, ""));
	keyring_close(kr);
}

Test(auth_keys, rotation_new_key_signs_old_verifies_until_the_overlap_has_passed)
{
	char a[JWK_THUMBPRINT_LEN + 1];
	char b[JWK_THUMBPRINT_LEN + 1];
	char kid[JWK_THUMBPRINT_LEN + 1];
	struct floe_error err = { 0 };
	struct keyring *kr = open_ok();

	newest(kr, a);
	/* A token of the old key, issued before the rotation. */
	json_t *c = claims();
	char *old_token = keyring_sign(kr, c, &err);
	cr_assert_not_null(old_token);
	json_decref(c);

	cr_assert(keyring_rotate_dir(dir, b, &err), "%s", err.message);
	cr_assert_str_neq(a, b);
	cr_assert_eq(pem_files(), 2);
	/* Not reread yet: the old key still signs. */
	newest(kr, kid);
	cr_assert_str_eq(kid, a);

	long long b_made = made(b);
	cr_assert(keyring_reload(kr, b_made + 1, &err), "%s", err.message);
	newest(kr, kid);
	cr_assert_str_eq(kid, b);
	sign_and_verify(kr, b);
	EVP_PKEY *old_key = keyring_find(kr, a);
	cr_assert_not_null(old_key);

	/* The last second of the overlap: still there. */
	cr_assert(keyring_reload(kr, b_made + OVERLAP, &err), "%s", err.message);
	EVP_PKEY *still = keyring_find(kr, a);
	cr_assert_not_null(still);
	EVP_PKEY_free(still);
	cr_assert_eq(access(key_path(a), F_OK), 0);

	/* Past it: dropped, its file deleted, the new key signing. */
	cr_assert(keyring_reload(kr, b_made + OVERLAP + 1, &err), "%s", err.message);
	cr_assert_null(keyring_find(kr, a));
	cr_assert_eq(access(key_path(a), F_OK), -1);
	cr_assert_eq(errno, ENOENT);
	cr_assert_eq(pem_files(), 1);
	sign_and_verify(kr, b);

	/* A reference taken before the drop stays usable. */
	struct jwt *jwt = NULL;
	cr_assert_eq(jwt_parse(old_token, strlen(old_token), &jwt), JWT_OK);
	cr_assert_eq(jwt_verify(jwt, old_key), JWT_OK);
	jwt_free(jwt);
	EVP_PKEY_free(old_key);
	free(old_token);

	/* A reopen finds only the new key. */
	keyring_close(kr);
	kr = open_ok();
	newest(kr, kid);
	cr_assert_str_eq(kid, b);
	keyring_close(kr);
}

Test(auth_keys, each_key_lives_until_its_successor_is_overlap_old)
{
	char a[JWK_THUMBPRINT_LEN + 1];
	char b[JWK_THUMBPRINT_LEN + 1];
	char c[JWK_THUMBPRINT_LEN + 1];
	struct floe_error err = { 0 };
	struct keyring *kr = open_ok();
	struct timespec times[2];

	newest(kr, a);
	cr_assert(keyring_rotate_dir(dir, b, &err), "%s", err.message);
	cr_assert(keyring_rotate_dir(dir, c, &err), "%s", err.message);
	/* Each rotation's file is made after the last, to the nanosecond,
	 * however coarse the file system's clock. */
	struct stat sa, sb, sc;
	cr_assert_eq(stat(key_path(a), &sa), 0);
	cr_assert_eq(stat(key_path(b), &sb), 0);
	cr_assert_eq(stat(key_path(c), &sc), 0);
	cr_assert(sa.st_mtim.tv_sec < sb.st_mtim.tv_sec ||
		  (sa.st_mtim.tv_sec == sb.st_mtim.tv_sec &&
		   sa.st_mtim.tv_nsec < sb.st_mtim.tv_nsec));
	cr_assert(sb.st_mtim.tv_sec < sc.st_mtim.tv_sec ||
		  (sb.st_mtim.tv_sec == sc.st_mtim.tv_sec &&
		   sb.st_mtim.tv_nsec < sc.st_mtim.tv_nsec));
	/* Made an hour apart: a, then b, then c. */
	long long t0 = made(a);
	times[0].tv_nsec = times[1].tv_nsec = 0;
	times[0].tv_sec = times[1].tv_sec = (time_t)(t0 + 3600);
	cr_assert_eq(utimensat(AT_FDCWD, key_path(b), times, 0), 0);
	times[0].tv_sec = times[1].tv_sec = (time_t)(t0 + 7200);
	cr_assert_eq(utimensat(AT_FDCWD, key_path(c), times, 0), 0);

	cr_assert(keyring_reload(kr, t0 + 3600 + OVERLAP + 1, &err), "%s", err.message);
	cr_assert_null(keyring_find(kr, a));
	EVP_PKEY *kb = keyring_find(kr, b);
	cr_assert_not_null(kb);
	EVP_PKEY_free(kb);
	sign_and_verify(kr, c);
	json_t *jwks = keyring_jwks(kr);
	cr_assert_eq(json_array_size(json_object_get(jwks, "keys")), 2);
	/* Newest first. */
	cr_assert_str_eq(json_string_value(
				 json_object_get(json_array_get(json_object_get(jwks, "keys"), 0),
						 "kid")),
			 c);
	json_decref(jwks);

	cr_assert(keyring_reload(kr, t0 + 7200 + OVERLAP + 1, &err), "%s", err.message);
	cr_assert_null(keyring_find(kr, b));
	cr_assert_eq(pem_files(), 1);
	sign_and_verify(kr, c);
	keyring_close(kr);
}

Test(auth_keys, jwks_has_the_public_keys_and_no_private_member)
{
	char a[JWK_THUMBPRINT_LEN + 1];
	char b[JWK_THUMBPRINT_LEN + 1];
	struct floe_error err = { 0 };
	struct keyring *kr = open_ok();

	newest(kr, a);
	cr_assert(keyring_rotate_dir(dir, b, &err), "%s", err.message);
	cr_assert(keyring_reload(kr, made(b), &err), "%s", err.message);
	json_t *jwks = keyring_jwks(kr);
	cr_assert_not_null(jwks);
	cr_assert_eq(json_object_size(jwks), 1);
	json_t *keys = json_object_get(jwks, "keys");
	cr_assert_eq(json_array_size(keys), 2);
	size_t i = 0;
	json_t *k = NULL;
	json_array_foreach(keys, i, k) {
		char thumb[JWK_THUMBPRINT_LEN + 1];
		const char *name = NULL;
		json_t *v = NULL;
		json_object_foreach(k, name, v) {
			cr_assert(strcmp(name, "kty") == 0 || strcmp(name, "crv") == 0 ||
					  strcmp(name, "x") == 0 || strcmp(name, "y") == 0 ||
					  strcmp(name, "use") == 0 || strcmp(name, "alg") == 0 ||
					  strcmp(name, "kid") == 0,
				  "member %s", name);
		}
		cr_assert_null(json_object_get(k, "d"));
		cr_assert_str_eq(json_string_value(json_object_get(k, "alg")), "ES256");
		cr_assert(jwk_thumbprint(k, thumb));
		cr_assert_str_eq(thumb, json_string_value(json_object_get(k, "kid")));
		cr_assert_str_eq(thumb, i == 0 ? b : a);
		/* Each verifies what keyring_find's key verifies. */
		enum jwt_alg alg = JWT_ALG_RS256;
		char errbuf[128];
		EVP_PKEY *pub = jwk_parse(k, &alg, errbuf, sizeof(errbuf));
		cr_assert_not_null(pub, "%s", errbuf);
		cr_assert_eq(alg, JWT_ALG_ES256);
		EVP_PKEY_free(pub);
	}
	json_decref(jwks);
	keyring_close(kr);
}

/* Flips one base64 character in the middle of the key file of kid. */
static void tamper(const char *kid)
{
	char text[4096];
	FILE *f = fopen(key_path(kid), "r+");

	cr_assert_not_null(f);
	size_t n = fread(text, 1, sizeof(text), f);
	cr_assert_gt(n, 100);
	size_t at = 28 + 60; /* inside the private scalar's base64 */
	text[at] = text[at] == 'A' ? 'B' : 'A';
	cr_assert_eq(fseek(f, 0, SEEK_SET), 0);
	cr_assert_eq(fwrite(text, 1, n, f), n);
	cr_assert_eq(fclose(f), 0);
}

Test(auth_keys, a_tampered_key_file_is_refused)
{
	char kid[JWK_THUMBPRINT_LEN + 1];

	first_key(kid);
	tamper(kid);
	open_refused(kid);
	/* Nothing was made in its place. */
	cr_assert_eq(pem_files(), 1);
}

Test(auth_keys, a_file_named_other_than_its_thumbprint_is_refused)
{
	char kid[JWK_THUMBPRINT_LEN + 1];
	char path[PATH_MAX];

	first_key(kid);
	(void)snprintf(path, sizeof(path), "%s", key_path(kid));
	cr_assert_eq(rename(path, key_path("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA")), 0);
	open_refused("its name is not its key's thumbprint");
	(void)snprintf(path, sizeof(path), "%s",
		       key_path("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"));
	cr_assert_eq(rename(path, key_path("signing")), 0);
	open_refused("its name is not KID.pem");
}

Test(auth_keys, a_group_or_world_readable_key_file_is_refused)
{
	char kid[JWK_THUMBPRINT_LEN + 1];

	first_key(kid);
	cr_assert_eq(chmod(key_path(kid), 0644), 0);
	open_refused("group- or world-accessible");
	cr_assert_eq(chmod(key_path(kid), 0640), 0);
	open_refused("group- or world-accessible");
	cr_assert_eq(chmod(key_path(kid), 0600), 0);
	struct keyring *kr = open_ok();
	keyring_close(kr);
}

Test(auth_keys, a_group_or_world_accessible_directory_is_refused)
{
	struct keyring *kr = open_ok();

	keyring_close(kr);
	cr_assert_eq(chmod(dir, 0750), 0);
	open_refused("must not be group- or world-accessible");
	cr_assert_eq(chmod(dir, 0701), 0);
	open_refused("must not be group- or world-accessible");
	char kid[JWK_THUMBPRINT_LEN + 1];
	struct floe_error err = { 0 };
	cr_assert_not(keyring_rotate_dir(dir, kid, &err));
	cr_assert_eq(chmod(dir, 0700), 0);
	kr = open_ok();
	keyring_close(kr);
}

Test(auth_keys, a_file_or_directory_of_another_user_is_refused)
{
	char kid[JWK_THUMBPRINT_LEN + 1];

	first_key(kid);
	if (geteuid() != 0)
		cr_skip_test("changing a file's owner needs root");
	cr_assert_eq(chown(key_path(kid), 65534, 65534), 0);
	open_refused("not owned by floe's user");
	cr_assert_eq(chown(key_path(kid), 0, 0), 0);
	cr_assert_eq(chown(dir, 65534, 65534), 0);
	open_refused("is owned by uid 65534");
}

Test(auth_keys, a_symbolic_link_is_refused)
{
	char kid[JWK_THUMBPRINT_LEN + 1];
	char moved[PATH_MAX];

	first_key(kid);
	(void)snprintf(moved, sizeof(moved), "%s/elsewhere.key", base);
	cr_assert_eq(rename(key_path(kid), moved), 0);
	cr_assert_eq(symlink(moved, key_path(kid)), 0);
	open_refused("symbolic link");
}

Test(auth_keys, a_traditional_or_foreign_pem_is_refused)
{
	char kid[JWK_THUMBPRINT_LEN + 1];

	first_key(kid);
	FILE *f = fopen(key_path(kid), "r");
	cr_assert_not_null(f);
	EVP_PKEY *key = PEM_read_PrivateKey(f, NULL, NULL, NULL);
	fclose(f);
	cr_assert_not_null(key);
	BIO *bio = BIO_new_file(key_path(kid), "w");
	cr_assert_not_null(bio);
	cr_assert_eq(PEM_write_bio_PrivateKey_traditional(bio, key, NULL, NULL, 0, NULL, NULL), 1);
	BIO_free(bio);
	EVP_PKEY_free(key);
	open_refused("PKCS#8");
	f = fopen(key_path(kid), "w");
	cr_assert_not_null(f);
	fputs("-----BEGIN PRIVATE KEY-----\nnot base64\n-----END PRIVATE KEY-----\n", f);
	fclose(f);
	open_refused("does not decode");
}

Test(auth_keys, other_files_are_ignored)
{
	char kid[JWK_THUMBPRINT_LEN + 1];
	char path[PATH_MAX];

	first_key(kid);
	(void)snprintf(path, sizeof(path), "%s/.%s.pem.tmp", dir, kid);
	FILE *f = fopen(path, "w");
	cr_assert_not_null(f);
	fputs("half a key", f);
	fclose(f);
	(void)snprintf(path, sizeof(path), "%s/README", dir);
	f = fopen(path, "w");
	cr_assert_not_null(f);
	fclose(f);
	struct keyring *kr = open_ok();
	sign_and_verify(kr, kid);
	keyring_close(kr);
}

Test(auth_keys, a_failed_reload_keeps_the_keys)
{
	char kid[JWK_THUMBPRINT_LEN + 1];
	char path[PATH_MAX];
	struct floe_error err = { 0 };
	struct keyring *kr = open_ok();

	newest(kr, kid);
	(void)snprintf(path, sizeof(path), "%s/broken.pem", dir);
	FILE *f = fopen(path, "w");
	cr_assert_not_null(f);
	fclose(f);
	cr_assert_not(keyring_reload(kr, time(NULL), &err));
	cr_assert_not_null(strstr(err.message, "broken.pem"), "%s", err.message);
	sign_and_verify(kr, kid);
	cr_assert_eq(unlink(path), 0);
	cr_assert(keyring_reload(kr, time(NULL), &err), "%s", err.message);
	sign_and_verify(kr, kid);
	keyring_close(kr);
}

Test(auth_keys, a_reload_of_an_emptied_directory_makes_a_key)
{
	char kid[JWK_THUMBPRINT_LEN + 1];
	char again[JWK_THUMBPRINT_LEN + 1];
	struct floe_error err = { 0 };
	struct keyring *kr = open_ok();

	newest(kr, kid);
	cr_assert_eq(unlink(key_path(kid)), 0);
	cr_assert(keyring_reload(kr, time(NULL), &err), "%s", err.message);
	newest(kr, again);
	cr_assert_str_neq(kid, again);
	cr_assert_eq(pem_files(), 1);
	sign_and_verify(kr, again);
	keyring_close(kr);
}

Test(auth_keys, a_path_that_is_a_file_is_refused)
{
	struct floe_error err = { 0 };
	char path[PATH_MAX];

	(void)snprintf(path, sizeof(path), "%s/file", base);
	FILE *f = fopen(path, "w");
	cr_assert_not_null(f);
	fclose(f);
	cr_assert_null(keyring_open(path, OVERLAP, &err));
	cr_assert_not_null(strstr(err.message, path), "%s", err.message);
}

Test(auth_keys, more_keys_than_the_bound_are_refused)
{
	char kid[JWK_THUMBPRINT_LEN + 1];
	struct floe_error err = { 0 };

	first_key(kid);
	for (int i = 1; i < KEYRING_MAX_KEYS; i++)
		cr_assert(keyring_rotate_dir(dir, kid, &err), "%s", err.message);
	struct keyring *kr = open_ok();
	keyring_close(kr);
	cr_assert(keyring_rotate_dir(dir, kid, &err), "%s", err.message);
	open_refused("holds more than 64 keys");
}
