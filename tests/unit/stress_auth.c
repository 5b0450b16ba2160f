/*
 * stress_auth.c - auth/'s shared structures under threads: the token
 * cache (puts, gets, drops and clears at once; every hit must be a whole
 * entry), the backoff table (a wait is never more than the cap) and the
 * keyring (signing and finding while another thread rotates and
 * reloads; every token verifies with the key its kid finds). A plain
 * program rather than a Criterion suite so that the ThreadSanitizer
 * build can run it too (Criterion's runner does not start under TSan).
 * Exits 0 when every check held.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backoff.h"
#include "jwt.h"
#include "keys.h"
#include "tokencache.h"

#define THREADS 4
#define ROUNDS 20000
#define NOW 1700000000LL

static int failures;
static pthread_mutex_t failures_lock = PTHREAD_MUTEX_INITIALIZER;

static void fail(const char *what)
{
	(void)pthread_mutex_lock(&failures_lock);
	failures++;
	(void)pthread_mutex_unlock(&failures_lock);
	fprintf(stderr, "stress_auth: %s\n", what);
}

struct worker {
	struct tokencache *tc;
	struct backoff *b;
	struct keyring *kr;
	int id;
};

static struct tokencache_entry entry_of(int k)
{
	struct tokencache_entry e;

	memset(&e, 0, sizeof(e));
	e.principal_id = k;
	(void)snprintf(e.principal_name, sizeof(e.principal_name), "p%d", k);
	e.nroles = 3;
	e.roles[2] = k * 10 + 2;
	e.exp = NOW + 100;
	return e;
}

static void *cache_worker(void *arg)
{
	struct worker *w = arg;
	char token[32];
	char name[32];

	for (int i = 0; i < ROUNDS; i++) {
		int k = (i * 7 + w->id) % 300;
		struct tokencache_entry out;
		(void)snprintf(token, sizeof(token), "tok-%d", k);
		if (i % 3 == 0) {
			struct tokencache_entry e = entry_of(k);
			tokencache_put(w->tc, token, strlen(token), &e);
		} else if (tokencache_get(w->tc, token, strlen(token), NOW, &out)) {
			(void)snprintf(name, sizeof(name), "p%lld", (long long)out.principal_id);
			if (out.principal_id != k || strcmp(out.principal_name, name) != 0 ||
			    out.roles[2] != k * 10 + 2 || out.nroles != 3)
				fail("token cache: a torn or wrong entry");
		}
		if (i % 5000 == 4999)
			(void)tokencache_drop_principal(w->tc, k);
		if (w->id == 0 && i % 10000 == 9999)
			tokencache_clear(w->tc);
		if (tokencache_count(w->tc) > 128)
			fail("token cache: over its capacity");
	}
	return NULL;
}

static void *backoff_worker(void *arg)
{
	struct worker *w = arg;
	char key[32];

	for (int i = 0; i < ROUNDS; i++) {
		(void)snprintf(key, sizeof(key), "ip:192.0.2.%d", i % 40);
		long long now = NOW + i / 100;
		if (backoff_wait(w->b, key, now) > BACKOFF_MAX_WAIT_S ||
		    backoff_fail(w->b, key, now) > BACKOFF_MAX_WAIT_S)
			fail("backoff: a wait over the cap");
		if (i % 97 == 0)
			backoff_clear(w->b, key);
	}
	if (backoff_count(w->b) > 32)
		fail("backoff: over its capacity");
	return NULL;
}

static void *sign_worker(void *arg)
{
	struct worker *w = arg;
	struct floe_error err;
	json_t *claims = json_pack("{s:s, s:I}", "sub", "alice", "exp", (json_int_t)NOW + 60);

	for (int i = 0; i < 200; i++) {
		struct jwt *jwt = NULL;
		char *token = keyring_sign(w->kr, claims, &err);
		if (token == NULL || jwt_parse(token, strlen(token), &jwt) != JWT_OK) {
			fail("keyring: a token not signed or not readable");
		} else {
			EVP_PKEY *key = keyring_find(w->kr, jwt->kid);
			/* The key may have been dropped since: then none, never a wrong one. */
			if (key != NULL && jwt_verify(jwt, key) != JWT_OK)
				fail("keyring: a token that does not verify with its kid's key");
			EVP_PKEY_free(key);
		}
		jwt_free(jwt);
		free(token);
		json_t *jwks = keyring_jwks(w->kr);
		if (json_array_size(json_object_get(jwks, "keys")) == 0)
			fail("keyring: an empty key set");
		json_decref(jwks);
	}
	json_decref(claims);
	return NULL;
}

struct rotator {
	const char *dir;
	struct keyring *kr;
};

static void *rotate_worker(void *arg)
{
	struct rotator *r = arg;
	struct floe_error err;
	char kid[JWK_THUMBPRINT_LEN + 1];

	for (int i = 0; i < 10; i++) {
		if (!keyring_rotate_dir(r->dir, kid, &err) ||
		    !keyring_reload(r->kr, (long long)time(NULL) + 10, &err))
			fail("keyring: a rotation or reload failed");
	}
	return NULL;
}

static int run(void *(*fn)(void *), struct worker *w)
{
	pthread_t th[THREADS];

	for (int i = 0; i < THREADS; i++) {
		w[i].id = i;
		if (pthread_create(&th[i], NULL, fn, &w[i]) != 0)
			return -1;
	}
	for (int i = 0; i < THREADS; i++)
		(void)pthread_join(th[i], NULL);
	return 0;
}

int main(void)
{
	char base[] = "/tmp/floe-stress-XXXXXX";
	char dir[64];
	char cmd[96];
	struct floe_error err;
	struct worker w[THREADS];
	struct rotator r;
	pthread_t rot;

	struct tokencache *tc = tokencache_new(128);
	struct backoff *b = backoff_new(32);
	if (tc == NULL || b == NULL || mkdtemp(base) == NULL)
		return 2;
	(void)snprintf(dir, sizeof(dir), "%s/signing", base);
	/* Overlap 0: every reload drops the keys before the newest, while
	 * other threads sign and find. */
	struct keyring *kr = keyring_open(dir, 0, &err);
	if (kr == NULL) {
		fprintf(stderr, "stress_auth: %s\n", err.message);
		return 2;
	}
	for (int i = 0; i < THREADS; i++)
		w[i] = (struct worker){ .tc = tc, .b = b, .kr = kr };
	if (run(cache_worker, w) != 0 || run(backoff_worker, w) != 0)
		return 2;
	r = (struct rotator){ .dir = dir, .kr = kr };
	if (pthread_create(&rot, NULL, rotate_worker, &r) != 0 || run(sign_worker, w) != 0)
		return 2;
	(void)pthread_join(rot, NULL);
	keyring_close(kr);
	backoff_free(b);
	tokencache_free(tc);
	(void)snprintf(cmd, sizeof(cmd), "rm -rf '%s'", base);
	if (system(cmd) != 0)
		return 2;
	if (failures == 0)
		printf("stress_auth: every check held\n");
	return failures == 0 ? 0 : 1;
}
