/*
 * keys.c - floe's signing keys in a directory of KID.pem files: the
 * checks a key file must pass to be read, the durable write of a new
 * key, and the keyring that signs with the newest and verifies with all.
 * Deciding when to reload (SIGHUP, a timer) is not here.
 */
#include "keys.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/bio.h>
#include <openssl/pem.h>

#include "jwt.h"
#include "keyfile.h"
#include "log.h"

#define KEYS_SUFFIX ".pem"
#define KEYS_SUFFIX_LEN (sizeof(KEYS_SUFFIX) - 1)
#define KEYS_PEM_HEAD "-----BEGIN PRIVATE KEY-----\n"

struct keyring_key {
	char kid[JWK_THUMBPRINT_LEN + 1];
	EVP_PKEY *key;        /* owned */
	struct timespec made; /* the file's modification time */
};

/* Keys oldest first; nkeys is at least 1 once open. */
struct keyset {
	struct keyring_key keys[KEYRING_MAX_KEYS];
	size_t nkeys;
};

struct keyring {
	pthread_rwlock_t lock;       /* guards set */
	pthread_mutex_t reload_lock; /* one reload (and its deletes) at a time */
	char *dir;                   /* owned */
	long long overlap_s;
	struct keyset *set; /* owned */
};

static void keyset_free(struct keyset *set)
{
	if (set == NULL)
		return;
	for (size_t i = 0; i < set->nkeys; i++)
		EVP_PKEY_free(set->keys[i].key);
	free(set);
}

static int timespec_cmp(const struct timespec *a, const struct timespec *b)
{
	if (a->tv_sec != b->tv_sec)
		return a->tv_sec < b->tv_sec ? -1 : 1;
	if (a->tv_nsec != b->tv_nsec)
		return a->tv_nsec < b->tv_nsec ? -1 : 1;
	return 0;
}

/* Oldest first; equal times (copied files) by kid, so every replica
 * agrees on which key is the newest. */
static int key_cmp(const void *pa, const void *pb)
{
	const struct keyring_key *a = pa;
	const struct keyring_key *b = pb;
	int c = timespec_cmp(&a->made, &b->made);

	return c != 0 ? c : strcmp(a->kid, b->kid);
}

static bool keys_fsync_dir(int dirfd, const char *dir)
{
	if (fsync(dirfd) != 0) {
		log_error("auth", "cannot sync directory %s: %s", dir, log_strerror(errno));
		return false;
	}
	return true;
}

/* Makes directory path (mode exactly 0700, whatever the umask) and the
 * missing ones above it, each made durable in its parent; an existing
 * one is left as it is (keys_open_dir checks the last). */
static bool keys_make_dirs(const char *path, struct floe_error *err)
{
	char parent[PATH_MAX];
	const char *slash = strrchr(path, '/');
	size_t plen = slash == NULL ? 0 : (size_t)(slash - path);
	int made = mkdir(path, 0700);
	int e = made != 0 ? errno : 0;
	int fd = -1;

	if (e == EEXIST)
		return true;
	if (plen >= sizeof(parent))
		return floe_err(err, FE_INTERNAL, "signing key directory '%s': bad path", path);
	/* "a" is in ".", "/a" in "/". */
	if (slash == NULL)
		parent[plen++] = '.';
	else if (plen == 0)
		parent[plen++] = '/';
	else
		memcpy(parent, path, plen);
	parent[plen] = '\0';
	if (e == ENOENT && slash != NULL && slash != path) {
		if (!keys_make_dirs(parent, err))
			return false;
		made = mkdir(path, 0700);
		e = made != 0 ? errno : 0;
	}
	if (made != 0) {
		log_error("auth", "cannot create directory %s: %s", path, log_strerror(e));
		return floe_err(err, FE_INTERNAL, "signing key directory '%s': cannot create it",
				path);
	}
	fd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (chmod(path, 0700) != 0 || fd < 0 || !keys_fsync_dir(fd, parent)) {
		log_error("auth", "cannot set up directory %s: %s", path, log_strerror(errno));
		if (fd >= 0)
			close(fd);
		return floe_err(err, FE_INTERNAL, "signing key directory '%s': cannot set it up",
				path);
	}
	close(fd);
	return true;
}

/* Makes dir if missing and opens it: a directory of ours that only we
 * can reach. Returns its descriptor, or -1 with err set. */
static int keys_open_dir(const char *dir, struct floe_error *err)
{
	struct stat st;
	int fd = -1;

	if (!keys_make_dirs(dir, err))
		return -1;
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		log_error("auth", "cannot open %s: %s", dir, log_strerror(errno));
		floe_err(err, FE_INTERNAL, "signing key directory '%s': cannot open it", dir);
		return -1;
	}
	if (fstat(fd, &st) != 0) {
		floe_err(err, FE_INTERNAL, "signing key directory '%s': cannot stat it", dir);
		goto fail;
	}
	if (st.st_uid != geteuid()) {
		floe_err(err, FE_INTERNAL,
			 "signing key directory '%s' is owned by uid %ld, not by floe's uid %ld",
			 dir, (long)st.st_uid, (long)geteuid());
		goto fail;
	}
	if ((st.st_mode & 077) != 0) {
		floe_err(
			err, FE_INTERNAL,
			"signing key directory '%s' has mode %04o; it must not be group- or world-accessible (chmod 0700)",
			dir, (unsigned)(st.st_mode & 07777));
		goto fail;
	}
	return fd;
fail:
	log_error("auth", "%s", err != NULL ? err->message : "signing key directory refused");
	close(fd);
	return -1;
}

/* True when name is KID.pem with a KID of thumbprint length and
 * alphabet; fills kid. */
static bool keys_name_kid(const char *name, char kid[JWK_THUMBPRINT_LEN + 1])
{
	size_t len = strlen(name);

	if (len != JWK_THUMBPRINT_LEN + KEYS_SUFFIX_LEN)
		return false;
	for (size_t i = 0; i < JWK_THUMBPRINT_LEN; i++) {
		char c = name[i];
		if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		      c == '-' || c == '_'))
			return false;
	}
	memcpy(kid, name, JWK_THUMBPRINT_LEN);
	kid[JWK_THUMBPRINT_LEN] = '\0';
	return true;
}

static bool keys_is_pem_name(const char *name)
{
	size_t len = strlen(name);

	return name[0] != '.' && len > KEYS_SUFFIX_LEN &&
	       strcmp(name + len - KEYS_SUFFIX_LEN, KEYS_SUFFIX) == 0;
}

static int keys_no_password(char *buf, int size, int rwflag, void *u)
{
	(void)buf;
	(void)size;
	(void)rwflag;
	(void)u;
	return -1;
}

/* The thumbprint of key's public JWK; false when it is not P-256. */
static bool keys_thumbprint(EVP_PKEY *key, char out[JWK_THUMBPRINT_LEN + 1])
{
	json_t *jwk = jwk_from_key(key, NULL);
	const char *kty = json_string_value(json_object_get(jwk, "kty"));
	bool ok = kty != NULL && strcmp(kty, "EC") == 0 && jwk_thumbprint(jwk, out);

	json_decref(jwk);
	return ok;
}

/* Reads the PKCS#8 P-256 key of text; NULL with the reason in why. */
static EVP_PKEY *keys_parse_pem(const char *text, size_t len, const char **why)
{
	BIO *bio = NULL;
	EVP_PKEY *key = NULL;
	EVP_PKEY_CTX *ctx = NULL;

	if (len < sizeof(KEYS_PEM_HEAD) - 1 ||
	    memcmp(text, KEYS_PEM_HEAD, sizeof(KEYS_PEM_HEAD) - 1) != 0) {
		*why = "it is not an unencrypted PKCS#8 PEM private key (BEGIN PRIVATE KEY)";
		return NULL;
	}
	bio = BIO_new_mem_buf(text, (int)len);
	if (bio != NULL)
		key = PEM_read_bio_PrivateKey(bio, NULL, keys_no_password, NULL);
	BIO_free(bio);
	if (key == NULL) {
		*why = "its PEM does not decode to a private key";
		return NULL;
	}
	if (!EVP_PKEY_is_a(key, "EC")) {
		*why = "it is not an EC P-256 key";
		goto fail;
	}
	/* The public half stored next to the private one must be its own:
	 * the thumbprint (the kid) is taken from the public half. */
	ctx = EVP_PKEY_CTX_new_from_pkey(NULL, key, NULL);
	if (ctx == NULL || EVP_PKEY_pairwise_check(ctx) != 1) {
		*why = "its public and private halves do not agree";
		goto fail;
	}
	EVP_PKEY_CTX_free(ctx);
	return key;
fail:
	EVP_PKEY_CTX_free(ctx);
	EVP_PKEY_free(key);
	return NULL;
}

/* Reads name (a .pem entry of dirfd) into k; false with err set. */
static bool keys_read_file(int dirfd, const char *dir, const char *name, struct keyring_key *k,
			   struct floe_error *err)
{
	char text[KEYRING_MAX_FILE + 1];
	char thumb[JWK_THUMBPRINT_LEN + 1];
	struct stat st;
	const char *why = NULL;
	size_t len = 0;
	int fd = -1;

	if (!keys_name_kid(name, k->kid)) {
		why = "its name is not KID.pem with KID a key thumbprint";
		goto fail;
	}
	fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		why = errno == ELOOP ? "it is a symbolic link" : "it cannot be opened";
		goto fail;
	}
	why = keyfile_refusal(fd, &st);
	if (why != NULL)
		goto fail;
	if (st.st_size > KEYRING_MAX_FILE) {
		why = "it is larger than a key file can be";
		goto fail;
	}
	if (!keyfile_read(fd, text, sizeof(text) - 1, &len)) {
		why = "it cannot be read";
		goto fail;
	}
	text[len] = '\0';
	k->made = st.st_mtim;
	k->key = keys_parse_pem(text, len, &why);
	OPENSSL_cleanse(text, sizeof(text));
	if (k->key == NULL)
		goto fail;
	if (!keys_thumbprint(k->key, thumb) || strcmp(thumb, k->kid) != 0) {
		why = "its name is not its key's thumbprint";
		goto fail;
	}
	close(fd);
	return true;
fail:
	EVP_PKEY_free(k->key);
	k->key = NULL;
	if (fd >= 0)
		close(fd);
	log_error("auth", "signing key file %s/%s refused: %s", dir, name, why);
	return floe_err(err, FE_INTERNAL, "signing key file '%s/%s' refused: %s", dir, name, why);
}

/* Every key of dirfd, oldest first, into a new set (possibly empty);
 * NULL with err set when a .pem file is refused. */
static struct keyset *keys_load(int dirfd, const char *dir, struct floe_error *err)
{
	struct keyset *set = calloc(1, sizeof(*set));
	DIR *d = NULL;
	int fd2 = -1;

	if (set == NULL) {
		floe_err(err, FE_INTERNAL, "out of memory");
		return NULL;
	}
	fd2 = dup(dirfd);
	d = fd2 < 0 ? NULL : fdopendir(fd2);
	if (d == NULL) {
		if (fd2 >= 0)
			close(fd2);
		floe_err(err, FE_INTERNAL, "signing key directory '%s': cannot list it", dir);
		goto fail;
	}
	rewinddir(d);
	for (;;) {
		errno = 0;
		const struct dirent *e = readdir(d);
		if (e == NULL) {
			if (errno != 0) {
				floe_err(err, FE_INTERNAL,
					 "signing key directory '%s': cannot list it", dir);
				goto fail;
			}
			break;
		}
		if (!keys_is_pem_name(e->d_name))
			continue;
		if (set->nkeys == KEYRING_MAX_KEYS) {
			floe_err(err, FE_INTERNAL,
				 "signing key directory '%s' holds more than %d keys", dir,
				 KEYRING_MAX_KEYS);
			goto fail;
		}
		if (!keys_read_file(dirfd, dir, e->d_name, &set->keys[set->nkeys], err))
			goto fail;
		set->nkeys++;
	}
	closedir(d);
	qsort(set->keys, set->nkeys, sizeof(set->keys[0]), key_cmp);
	return set;
fail:
	if (d != NULL)
		closedir(d);
	keyset_free(set);
	return NULL;
}

/* The latest modification time among the .pem files of dirfd, or zero. */
static struct timespec keys_latest_made(int dirfd)
{
	struct timespec latest = { 0, 0 };
	int fd2 = dup(dirfd);
	DIR *d = fd2 < 0 ? NULL : fdopendir(fd2);

	if (d == NULL) {
		if (fd2 >= 0)
			close(fd2);
		return latest;
	}
	/* The duplicate shares the position of dirfd, which may be at its end. */
	rewinddir(d);
	for (;;) {
		const struct dirent *e = readdir(d);
		struct stat st;
		if (e == NULL)
			break;
		if (keys_is_pem_name(e->d_name) &&
		    fstatat(dirfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    timespec_cmp(&st.st_mtim, &latest) > 0)
			latest = st.st_mtim;
	}
	closedir(d);
	return latest;
}

static bool keys_write_all(int fd, const char *data, size_t len)
{
	while (len > 0) {
		ssize_t n = write(fd, data, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return false;
		data += n;
		len -= (size_t)n;
	}
	return true;
}

/* The PKCS#8 PEM of key: a new string (free with OPENSSL_clear_free of
 * *len + 1 bytes), or NULL. */
static char *keys_pem(EVP_PKEY *key, size_t *len)
{
	BIO *bio = BIO_new(BIO_s_mem());
	char *data = NULL;
	char *out = NULL;
	long n = 0;

	if (bio == NULL || PEM_write_bio_PrivateKey(bio, key, NULL, NULL, 0, NULL, NULL) != 1)
		goto done;
	n = BIO_get_mem_data(bio, &data);
	if (n <= 0)
		goto done;
	out = OPENSSL_malloc((size_t)n + 1);
	if (out == NULL)
		goto done;
	memcpy(out, data, (size_t)n);
	out[n] = '\0';
	*len = (size_t)n;
done:
	BIO_free_all(bio);
	return out;
}

/* Writes key as KID.pem in dirfd, made after every other key's time. */
static bool keys_write_key(int dirfd, const char *dir, EVP_PKEY *key,
			   const char kid[JWK_THUMBPRINT_LEN + 1], struct floe_error *err)
{
	char name[JWK_THUMBPRINT_LEN + KEYS_SUFFIX_LEN + 1];
	char tmp[sizeof(name) + 8];
	struct timespec times[2];
	struct timespec latest = keys_latest_made(dirfd);
	size_t len = 0;
	char *pem = keys_pem(key, &len);
	int fd = -1;

	(void)snprintf(name, sizeof(name), "%s%s", kid, KEYS_SUFFIX);
	(void)snprintf(tmp, sizeof(tmp), ".%s.tmp", name);
	if (pem == NULL) {
		floe_err(err, FE_INTERNAL, "cannot encode the new signing key");
		goto fail;
	}
	(void)unlinkat(dirfd, tmp, 0);
	fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	/* Created with no more than 0600 (the umask only takes bits away);
	 * fchmod makes it exactly 0600, so the owner can read it back. */
	if (fd < 0 || fchmod(fd, 0600) != 0 || !keys_write_all(fd, pem, len)) {
		log_error("auth", "cannot write %s/%s: %s", dir, tmp, log_strerror(errno));
		floe_err(err, FE_INTERNAL, "signing key directory '%s': cannot write a key file",
			 dir);
		goto fail;
	}
	/* Its made time: now, or just after the newest key's if the clock
	 * (or a coarse file system clock) says otherwise. */
	if (clock_gettime(CLOCK_REALTIME, &times[0]) != 0)
		times[0] = latest;
	if (timespec_cmp(&times[0], &latest) <= 0) {
		times[0] = latest;
		times[0].tv_nsec++;
		if (times[0].tv_nsec >= 1000000000L) {
			times[0].tv_sec++;
			times[0].tv_nsec = 0;
		}
	}
	times[1] = times[0];
	if (futimens(fd, times) != 0 || fsync(fd) != 0) {
		log_error("auth", "cannot sync %s/%s: %s", dir, tmp, log_strerror(errno));
		floe_err(err, FE_INTERNAL, "signing key directory '%s': cannot write a key file",
			 dir);
		goto fail;
	}
	close(fd);
	fd = -1;
	if (renameat(dirfd, tmp, dirfd, name) != 0) {
		log_error("auth", "cannot rename %s/%s: %s", dir, tmp, log_strerror(errno));
		floe_err(err, FE_INTERNAL, "signing key directory '%s': cannot write a key file",
			 dir);
		goto fail;
	}
	if (!keys_fsync_dir(dirfd, dir)) {
		floe_err(err, FE_INTERNAL, "signing key directory '%s': cannot sync it", dir);
		OPENSSL_clear_free(pem, len + 1);
		return false;
	}
	OPENSSL_clear_free(pem, len + 1);
	return true;
fail:
	if (fd >= 0) {
		close(fd);
		(void)unlinkat(dirfd, tmp, 0);
	}
	if (pem != NULL)
		OPENSSL_clear_free(pem, len + 1);
	return false;
}

static bool keys_rotate_fd(int dirfd, const char *dir, char kid[JWK_THUMBPRINT_LEN + 1],
			   struct floe_error *err)
{
	EVP_PKEY *key = jwt_key_generate();
	bool ok = false;

	if (key == NULL || !keys_thumbprint(key, kid)) {
		floe_err(err, FE_INTERNAL, "cannot generate a signing key");
		goto done;
	}
	ok = keys_write_key(dirfd, dir, key, kid, err);
	if (ok)
		log_info("auth", "new signing key %s in %s", kid, dir);
done:
	EVP_PKEY_free(key);
	return ok;
}

bool keyring_rotate_dir(const char *dir, char kid[JWK_THUMBPRINT_LEN + 1], struct floe_error *err)
{
	int dirfd = keys_open_dir(dir, err);
	bool ok = false;

	if (dirfd < 0)
		return false;
	ok = keys_rotate_fd(dirfd, dir, kid, err);
	close(dirfd);
	return ok;
}

/* The keys of dir, with a first one made when there is none. */
static struct keyset *keys_read_dir(const char *dir, struct floe_error *err)
{
	char kid[JWK_THUMBPRINT_LEN + 1];
	int dirfd = keys_open_dir(dir, err);
	struct keyset *set = NULL;

	if (dirfd < 0)
		return NULL;
	set = keys_load(dirfd, dir, err);
	if (set != NULL && set->nkeys == 0) {
		keyset_free(set);
		set = NULL;
		if (keys_rotate_fd(dirfd, dir, kid, err))
			set = keys_load(dirfd, dir, err);
		if (set != NULL && set->nkeys == 0) {
			floe_err(err, FE_INTERNAL, "signing key directory '%s': no key", dir);
			keyset_free(set);
			set = NULL;
		}
	}
	close(dirfd);
	return set;
}

struct keyring *keyring_open(const char *dir, long long overlap_s, struct floe_error *err)
{
	struct keyring *kr = calloc(1, sizeof(*kr));

	if (kr == NULL) {
		floe_err(err, FE_INTERNAL, "out of memory");
		return NULL;
	}
	kr->overlap_s = overlap_s;
	kr->dir = strdup(dir);
	if (kr->dir == NULL) {
		free(kr);
		floe_err(err, FE_INTERNAL, "out of memory");
		return NULL;
	}
	kr->set = keys_read_dir(dir, err);
	if (kr->set == NULL) {
		free(kr->dir);
		free(kr);
		return NULL;
	}
	if (pthread_rwlock_init(&kr->lock, NULL) != 0) {
		keyset_free(kr->set);
		free(kr->dir);
		free(kr);
		floe_err(err, FE_INTERNAL, "cannot create a lock");
		return NULL;
	}
	if (pthread_mutex_init(&kr->reload_lock, NULL) != 0) {
		pthread_rwlock_destroy(&kr->lock);
		keyset_free(kr->set);
		free(kr->dir);
		free(kr);
		floe_err(err, FE_INTERNAL, "cannot create a lock");
		return NULL;
	}
	return kr;
}

/* Drops from set every key whose successor was made more than overlap_s
 * before now, deleting its file. */
static void keys_drop_expired(struct keyset *set, const char *dir, long long overlap_s,
			      long long now)
{
	size_t dropped = 0;
	int dirfd = -1;

	while (dropped + 1 < set->nkeys &&
	       now - (long long)set->keys[dropped + 1].made.tv_sec > overlap_s)
		dropped++;
	if (dropped == 0)
		return;
	dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	for (size_t i = 0; i < dropped; i++) {
		char name[JWK_THUMBPRINT_LEN + KEYS_SUFFIX_LEN + 1];
		(void)snprintf(name, sizeof(name), "%s%s", set->keys[i].kid, KEYS_SUFFIX);
		/* Another replica may have deleted it first. */
		if (dirfd < 0 || (unlinkat(dirfd, name, 0) != 0 && errno != ENOENT))
			log_warn("auth", "cannot delete the retired signing key %s/%s: %s", dir,
				 name, log_strerror(errno));
		else
			log_info("auth", "retired signing key %s", set->keys[i].kid);
		EVP_PKEY_free(set->keys[i].key);
	}
	if (dirfd >= 0) {
		(void)keys_fsync_dir(dirfd, dir);
		close(dirfd);
	}
	memmove(set->keys, set->keys + dropped, (set->nkeys - dropped) * sizeof(set->keys[0]));
	set->nkeys -= dropped;
}

bool keyring_reload(struct keyring *kr, long long now, struct floe_error *err)
{
	struct keyset *set = NULL;
	struct keyset *old = NULL;

	(void)pthread_mutex_lock(&kr->reload_lock);
	set = keys_read_dir(kr->dir, err);
	if (set == NULL) {
		(void)pthread_mutex_unlock(&kr->reload_lock);
		return false;
	}
	keys_drop_expired(set, kr->dir, kr->overlap_s, now);
	(void)pthread_rwlock_wrlock(&kr->lock);
	old = kr->set;
	kr->set = set;
	(void)pthread_rwlock_unlock(&kr->lock);
	(void)pthread_mutex_unlock(&kr->reload_lock);
	keyset_free(old);
	return true;
}

char *keyring_sign(struct keyring *kr, const json_t *claims, struct floe_error *err)
{
	char *token = NULL;

	(void)pthread_rwlock_rdlock(&kr->lock);
	const struct keyring_key *k = &kr->set->keys[kr->set->nkeys - 1];
	token = jwt_sign(k->key, k->kid, claims);
	(void)pthread_rwlock_unlock(&kr->lock);
	if (token == NULL)
		floe_err(err, FE_INTERNAL, "cannot sign the token");
	return token;
}

EVP_PKEY *keyring_find(struct keyring *kr, const char *kid)
{
	EVP_PKEY *found = NULL;

	if (kid == NULL)
		return NULL;
	(void)pthread_rwlock_rdlock(&kr->lock);
	for (size_t i = 0; i < kr->set->nkeys; i++) {
		if (strcmp(kr->set->keys[i].kid, kid) == 0) {
			if (EVP_PKEY_up_ref(kr->set->keys[i].key) == 1)
				found = kr->set->keys[i].key;
			break;
		}
	}
	(void)pthread_rwlock_unlock(&kr->lock);
	return found;
}

void keyring_newest_kid(struct keyring *kr, char out[JWK_THUMBPRINT_LEN + 1])
{
	(void)pthread_rwlock_rdlock(&kr->lock);
	memcpy(out, kr->set->keys[kr->set->nkeys - 1].kid, JWK_THUMBPRINT_LEN + 1);
	(void)pthread_rwlock_unlock(&kr->lock);
}

json_t *keyring_jwks(struct keyring *kr)
{
	json_t *keys = json_array();
	json_t *set = NULL;

	if (keys == NULL)
		return NULL;
	(void)pthread_rwlock_rdlock(&kr->lock);
	for (size_t i = kr->set->nkeys; i > 0; i--) {
		const struct keyring_key *k = &kr->set->keys[i - 1];
		if (json_array_append_new(keys, jwk_from_key(k->key, k->kid)) != 0) {
			(void)pthread_rwlock_unlock(&kr->lock);
			json_decref(keys);
			return NULL;
		}
	}
	(void)pthread_rwlock_unlock(&kr->lock);
	set = json_pack("{s:o}", "keys", keys);
	return set;
}

void keyring_close(struct keyring *kr)
{
	if (kr == NULL)
		return;
	pthread_rwlock_destroy(&kr->lock);
	pthread_mutex_destroy(&kr->reload_lock);
	keyset_free(kr->set);
	free(kr->dir);
	free(kr);
}
