/* The issuer's key set over a loopback socket: the test serves the
 * discovery document and a key set it changes, and counts the fetches.
 * Threads verifying tokens with known keys while another token's unknown
 * kid swaps the set; the 30 s limit on fetches for unknown kids; a failed
 * fetch refusing the token (fail closed) and keeping the keys held; a
 * token without kid. Against a real provider: test_oidc.py. */
#include <criterion/criterion.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "jwk.h"
#include "jwt.h"
#include "oidc.h"

#define VERIFIERS 4
#define ROUNDS 100

/* The test's issuer: one thread answering GETs one connection at a time. */
static struct {
	int fd;
	int port;
	pthread_t thread;
	pthread_mutex_t lock;
	bool stop;
	char issuer[64];
	char *jwks;      /* the key set served; guarded by lock */
	int jwks_status; /* 200, or the failure to answer with */
	int jwks_fetches;
	bool jwks_hold;        /* a key set request waits until the test lets it go */
	int jwks_held;         /* requests waiting so */
	pthread_cond_t let_go; /* signalled when jwks_hold is cleared */
} srv;

static void serve_one(int c)
{
	char req[2048];
	size_t got = 0;
	char head[256];
	char *body = NULL;
	int status = 200;

	while (got < sizeof(req) - 1) {
		ssize_t n = read(c, req + got, sizeof(req) - 1 - got);
		if (n <= 0)
			break;
		got += (size_t)n;
		req[got] = '\0';
		if (strstr(req, "\r\n\r\n") != NULL)
			break;
	}
	req[got] = '\0';
	pthread_mutex_lock(&srv.lock);
	if (strncmp(req, "GET /.well-known/openid-configuration ", 38) == 0) {
		json_t *doc = json_pack("{s:s,s:s+}", "issuer", srv.issuer, "jwks_uri", srv.issuer,
					"/jwks");
		body = doc != NULL ? json_dumps(doc, JSON_COMPACT) : NULL;
		json_decref(doc);
	} else if (strncmp(req, "GET /jwks ", 10) == 0) {
		srv.jwks_fetches++;
		status = srv.jwks_status;
		srv.jwks_held++;
		while (srv.jwks_hold)
			pthread_cond_wait(&srv.let_go, &srv.lock);
		srv.jwks_held--;
		body = strdup(srv.jwks);
	} else {
		status = 404;
		body = strdup("{}");
	}
	pthread_mutex_unlock(&srv.lock);
	if (body == NULL)
		return;
	int hl = snprintf(head, sizeof(head),
			  "HTTP/1.1 %d X\r\nContent-Type: application/json\r\n"
			  "Content-Length: %zu\r\nConnection: close\r\n\r\n",
			  status, strlen(body));
	if (write(c, head, (size_t)hl) < 0 || write(c, body, strlen(body)) < 0)
		perror("serve_one");
	free(body);
}

static void *serve(void *arg)
{
	(void)arg;
	for (;;) {
		struct pollfd p = { .fd = srv.fd, .events = POLLIN };

		pthread_mutex_lock(&srv.lock);
		bool stop = srv.stop;
		pthread_mutex_unlock(&srv.lock);
		if (stop)
			return NULL;
		if (poll(&p, 1, 50) <= 0)
			continue;
		int c = accept(srv.fd, NULL, NULL);
		if (c < 0)
			continue;
		serve_one(c);
		close(c);
	}
}

/* The issuer's keys: a from the start, b after it rotates. */
static EVP_PKEY *key_a;
static EVP_PKEY *key_b;

/* Serves set (JSON text, copied) from now on, with status. */
static void serve_keys(const json_t *set, int status)
{
	pthread_mutex_lock(&srv.lock);
	free(srv.jwks);
	srv.jwks = json_dumps(set, JSON_COMPACT);
	srv.jwks_status = status;
	pthread_mutex_unlock(&srv.lock);
}

/* Serves keys b and a (the issuer rotated to b). */
static void serve_both(void)
{
	json_t *both = json_pack("{s:[o,o]}", "keys", jwk_from_key(key_b, "b"),
				 jwk_from_key(key_a, "a"));

	serve_keys(both, 200);
	json_decref(both);
}

static int jwks_fetches(void)
{
	pthread_mutex_lock(&srv.lock);
	int n = srv.jwks_fetches;
	pthread_mutex_unlock(&srv.lock);
	return n;
}

/* Key set requests wait (hold) or are answered, those waiting at once. */
static void hold_keys(bool hold)
{
	pthread_mutex_lock(&srv.lock);
	srv.jwks_hold = hold;
	if (!hold)
		pthread_cond_broadcast(&srv.let_go);
	pthread_mutex_unlock(&srv.lock);
}

/* Waits (in steps of a millisecond, at most 10 s) until a key set request
 * is held. */
static void await_held(void)
{
	for (int i = 0; i < 10000; i++) {
		pthread_mutex_lock(&srv.lock);
		int held = srv.jwks_held;
		pthread_mutex_unlock(&srv.lock);
		if (held > 0)
			return;
		usleep(1000);
	}
	cr_assert_fail("no key set request arrived");
}

static void *let_keys_go_soon(void *arg)
{
	(void)arg;
	usleep(20 * 1000);
	hold_keys(false);
	return NULL;
}

static void setup(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t alen = sizeof(a);

	cr_assert_eq(curl_global_init(CURL_GLOBAL_DEFAULT), CURLE_OK);
	srv.fd = socket(AF_INET, SOCK_STREAM, 0);
	cr_assert_geq(srv.fd, 0);
	cr_assert_eq(bind(srv.fd, (struct sockaddr *)&a, sizeof(a)), 0);
	cr_assert_eq(listen(srv.fd, 64), 0);
	cr_assert_eq(getsockname(srv.fd, (struct sockaddr *)&a, &alen), 0);
	srv.port = ntohs(a.sin_port);
	(void)snprintf(srv.issuer, sizeof(srv.issuer), "http://127.0.0.1:%d", srv.port);
	pthread_mutex_init(&srv.lock, NULL);
	srv.stop = false;
	srv.jwks_fetches = 0;
	srv.jwks_hold = false;
	srv.jwks_held = 0;
	pthread_cond_init(&srv.let_go, NULL);
	key_a = jwt_key_generate();
	key_b = jwt_key_generate();
	cr_assert(key_a != NULL && key_b != NULL);
	json_t *set = json_pack("{s:[o]}", "keys", jwk_from_key(key_a, "a"));
	serve_keys(set, 200);
	json_decref(set);
	cr_assert_eq(pthread_create(&srv.thread, NULL, serve, NULL), 0);
}

static void teardown(void)
{
	pthread_mutex_lock(&srv.lock);
	srv.stop = true;
	pthread_mutex_unlock(&srv.lock);
	pthread_join(srv.thread, NULL);
	close(srv.fd);
	free(srv.jwks);
	srv.jwks = NULL;
	pthread_mutex_destroy(&srv.lock);
	EVP_PKEY_free(key_a);
	EVP_PKEY_free(key_b);
	curl_global_cleanup();
}

/* A token for the test's issuer signed by key under kid (NULL: none). */
static char *token(EVP_PKEY *key, const char *kid)
{
	long long now = (long long)time(NULL);
	json_t *claims = json_pack("{s:s,s:s,s:s,s:I,s:I}", "iss", srv.issuer, "aud", "floe", "sub",
				   "alice", "iat", now, "exp", now + 300);
	char *t = jwt_sign(key, kid, claims);

	json_decref(claims);
	cr_assert_not_null(t);
	return t;
}

#define WAIT_MS 80
#define RETRY_MS 60

/* An issuer whose tokens wait wait_ms for a fetch. */
static struct oidc *issuer_waiting(long wait_ms)
{
	/* The retry in tenths of a second, so no test sleeps long. */
	struct oidc_config cfg = { .issuer = srv.issuer,
				   .audience = "floe",
				   .leeway = 0,
				   .wait_ms = wait_ms,
				   .retry_ms = RETRY_MS };
	struct floe_error err;

	floe_error_clear(&err);
	struct oidc *o = oidc_new(&cfg, &err);
	cr_assert_not_null(o, "%s", err.message);
	return o;
}

static struct oidc *issuer(void)
{
	return issuer_waiting(WAIT_MS);
}

static enum jwt_status check(struct oidc *o, const char *t, struct floe_error *err)
{
	json_t *claims = NULL;

	floe_error_clear(err);
	enum jwt_status st = oidc_verify(o, t, strlen(t), (long long)time(NULL), &claims, err);
	if (st == JWT_OK && claims != NULL)
		cr_assert_str_eq(json_string_value(json_object_get(claims, "sub")), "alice");
	if (st == JWT_OK && claims == NULL)
		cr_assert_eq(err->kind, FE_UNAVAILABLE);
	json_decref(claims);
	return st;
}

struct verifier {
	struct oidc *o;
	const char *token;
	int failures;
};

static void *verify_many(void *arg)
{
	struct verifier *v = arg;

	for (int i = 0; i < ROUNDS; i++) {
		json_t *claims = NULL;
		struct floe_error err;
		enum jwt_status st = oidc_verify(v->o, v->token, strlen(v->token),
						 (long long)time(NULL), &claims, &err);
		if (st != JWT_OK || claims == NULL)
			v->failures++;
		json_decref(claims);
	}
	return NULL;
}

TestSuite(auth_oidc_fetch, .init = setup, .fini = teardown);

Test(auth_oidc_fetch, known_keys_verify_while_an_unknown_kid_swaps_the_set)
{
	struct oidc *o = issuer();
	char *ta = token(key_a, "a");
	char *tb = token(key_b, "b");
	struct verifier v[VERIFIERS];
	pthread_t th[VERIFIERS];
	struct floe_error err;

	cr_assert_eq(jwks_fetches(), 1);
	cr_assert_null(oidc_token_endpoint(o), "the document names none");
	serve_both();
	for (int i = 0; i < VERIFIERS; i++) {
		v[i] = (struct verifier){ .o = o, .token = ta };
		cr_assert_eq(pthread_create(&th[i], NULL, verify_many, &v[i]), 0);
	}
	/* Key b is not in the set held: one fetch, and it verifies. */
	cr_assert_eq(check(o, tb, &err), JWT_OK, "%s", err.message);
	for (int i = 0; i < VERIFIERS; i++) {
		pthread_join(th[i], NULL);
		cr_assert_eq(v[i].failures, 0);
	}
	cr_assert_eq(jwks_fetches(), 2);
	cr_assert_eq(check(o, ta, &err), JWT_OK);
	cr_assert_eq(check(o, tb, &err), JWT_OK);
	cr_assert_eq(jwks_fetches(), 2, "known keys fetch nothing");
	free(ta);
	free(tb);
	oidc_free(o);
}

Test(auth_oidc_fetch, unknown_kids_fetch_at_most_once_in_30_seconds)
{
	struct oidc *o = issuer();
	char *tb = token(key_b, "b");
	char *tc = token(key_b, "c");
	struct floe_error err;

	cr_assert_eq(check(o, tc, &err), JWT_UNKNOWN_KEY);
	cr_assert_eq(jwks_fetches(), 2, "the first unknown kid fetches at once");
	serve_both();
	for (int i = 0; i < 20; i++) {
		cr_assert_eq(check(o, tc, &err), JWT_UNKNOWN_KEY);
		cr_assert_eq(check(o, tb, &err), JWT_UNKNOWN_KEY, "b not fetched within 30 s");
	}
	cr_assert_eq(jwks_fetches(), 2);
	free(tb);
	free(tc);
	oidc_free(o);
}

Test(auth_oidc_fetch, a_failed_fetch_refuses_and_keeps_the_keys)
{
	struct oidc *o = issuer();
	char *ta = token(key_a, "a");
	char *tb = token(key_b, "b");
	struct floe_error err;

	json_t *set = json_pack("{s:[o]}", "keys", jwk_from_key(key_b, "b"));
	serve_keys(set, 500);
	json_decref(set);
	cr_assert_eq(check(o, tb, &err), JWT_OK);
	cr_assert_eq(err.kind, FE_UNAVAILABLE, "undecided, never passed: %s", err.message);
	cr_assert_str_eq(err.message, "The token issuer's keys could not be fetched");
	cr_assert_eq(check(o, ta, &err), JWT_OK, "%s", err.message);
	cr_assert_eq(err.kind, FE_NONE, "key a still verifies");
	free(ta);
	free(tb);
	oidc_free(o);
}

Test(auth_oidc_fetch, a_token_without_kid_takes_the_only_key_of_its_algorithm)
{
	char *bare = token(key_a, NULL);
	struct floe_error err;
	struct oidc *o = issuer();

	cr_assert_eq(check(o, bare, &err), JWT_OK, "%s", err.message);
	cr_assert_eq(err.kind, FE_NONE);
	oidc_free(o);

	/* Two ES256 keys: which one is not said. */
	serve_both();
	o = issuer();
	cr_assert_eq(check(o, bare, &err), JWT_UNKNOWN_KEY);
	oidc_free(o);
	free(bare);
}

Test(auth_oidc_fetch, a_token_arriving_during_a_fetch_waits_for_it)
{
	struct oidc *o = issuer_waiting(OIDC_WAIT_MS);
	char *tb = token(key_b, "b");
	struct verifier v = { .o = o, .token = tb };
	pthread_t th;
	struct floe_error err;

	serve_both();
	pthread_mutex_lock(&srv.lock);
	srv.jwks_hold = true;
	pthread_mutex_unlock(&srv.lock);
	/* The thread's first token fetches the set (held); this one, arriving
	 * meanwhile, waits for that fetch instead of failing. */
	cr_assert_eq(pthread_create(&th, NULL, verify_many, &v), 0);
	await_held();
	pthread_t releaser;
	cr_assert_eq(pthread_create(&releaser, NULL, let_keys_go_soon, NULL), 0);
	cr_assert_eq(check(o, tb, &err), JWT_OK, "%s", err.message);
	pthread_join(releaser, NULL);
	pthread_join(th, NULL);
	cr_assert_eq(v.failures, 0);
	cr_assert_eq(jwks_fetches(), 2);
	free(tb);
	oidc_free(o);
}

Test(auth_oidc_fetch, a_slow_key_set_is_undecided_after_the_bounded_wait)
{
	struct oidc *o = issuer();
	char *tb = token(key_b, "b");
	struct floe_error err;
	struct timespec t0, t1;

	serve_both();
	pthread_mutex_lock(&srv.lock);
	srv.jwks_hold = true;
	pthread_mutex_unlock(&srv.lock);
	/* The fetch runs on the issuer's own thread: the caller is answered
	 * when the wait ends, not when the fetch does. */
	clock_gettime(CLOCK_MONOTONIC, &t0);
	cr_assert_eq(check(o, tb, &err), JWT_OK);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	cr_assert_eq(err.kind, FE_UNAVAILABLE, "undecided: %s", err.message);
	long long ms = (long long)(t1.tv_sec - t0.tv_sec) * 1000 +
		       (t1.tv_nsec - t0.tv_nsec) / 1000000;
	cr_assert(ms >= WAIT_MS - 5, "answered after %lld ms", ms);
	/* ... while the fetch is still held. */
	pthread_mutex_lock(&srv.lock);
	cr_assert_eq(srv.jwks_held, 1, "the fetch had ended");
	pthread_mutex_unlock(&srv.lock);
	hold_keys(false);
	free(tb);
	oidc_free(o);
}

Test(auth_oidc_fetch, a_failed_fetch_does_not_hold_the_next_one_back)
{
	struct oidc *o = issuer();
	char *tb = token(key_b, "b");
	struct floe_error err;

	json_t *set = json_pack("{s:[o]}", "keys", jwk_from_key(key_b, "b"));
	serve_keys(set, 500);
	cr_assert_eq(check(o, tb, &err), JWT_OK);
	cr_assert_eq(err.kind, FE_UNAVAILABLE);
	/* The issuer is back: once the retry interval has passed the same
	 * token is decided, not refused for the 30 s a fetch that read a set
	 * holds the next back. */
	serve_keys(set, 200);
	json_decref(set);
	usleep((useconds_t)(RETRY_MS + 20) * 1000);
	cr_assert_eq(check(o, tb, &err), JWT_OK, "%s", err.message);
	cr_assert_eq(err.kind, FE_NONE, "%s", err.message);
	cr_assert_eq(jwks_fetches(), 3);
	free(tb);
	oidc_free(o);
}
