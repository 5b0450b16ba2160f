/*
 * tokencache.c - the cost of a verified-token cache hit (auth/tokencache.h)
 * with several threads at once, one lock against TOKENCACHE_STRIPES,
 * beside what it saves: one ES256 verification. A benchmark, not a test.
 *   build/bench/bench_tokencache [THREADS] [SECONDS]      (default 2, 2)
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "jwt.h"
#include "tokencache.h"

#define TOKENS 1000
#define NOW 1700000000LL

struct run {
	struct tokencache *tc;
	char **tokens;
	double seconds;
	unsigned long long gets;
	unsigned long long misses;
	double cpu; /* the thread's CPU seconds */
	unsigned seed;
};

static double clock_now(void)
{
	struct timespec ts;

	(void)clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double thread_cpu(void)
{
	struct timespec ts;

	(void)clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *run_gets(void *arg)
{
	struct run *r = arg;
	double cpu0 = thread_cpu();
	double end = clock_now() + r->seconds;
	unsigned long long n = 0;
	unsigned x = r->seed;

	while (clock_now() < end) {
		for (int i = 0; i < 1024; i++) {
			struct tokencache_entry out;
			x = x * 1103515245u + 12345u;
			const char *t = r->tokens[(x >> 8) % TOKENS];
			if (!tokencache_get(r->tc, t, strlen(t), NOW, &out))
				r->misses++;
		}
		n += 1024;
	}
	r->gets = n;
	r->cpu = thread_cpu() - cpu0;
	return NULL;
}

/* Gets per second, all threads together, on a cache of stripes; the
 * CPU nanoseconds a get into *cpu_ns (the figure that holds on a shared
 * machine, where wall time also counts other programs' turns). */
static double measure(char **tokens, size_t stripes, int threads, double seconds, double *cpu_ns)
{
	struct tokencache *tc = tokencache_new_striped(TOKENCACHE_DEFAULT_CAPACITY, stripes);
	pthread_t th[64];
	struct run runs[64];
	unsigned long long total = 0;
	unsigned long long misses = 0;
	double cpu = 0;

	if (tc == NULL)
		exit(1);
	for (int i = 0; i < TOKENS; i++) {
		struct tokencache_entry e;
		memset(&e, 0, sizeof(e));
		e.principal_id = i;
		(void)snprintf(e.principal_name, sizeof(e.principal_name), "principal-%d", i);
		e.nroles = 2;
		e.exp = NOW + 3600;
		tokencache_put(tc, tokens[i], strlen(tokens[i]), &e);
	}
	for (int i = 0; i < threads; i++) {
		runs[i] = (struct run){ .tc = tc,
					.tokens = tokens,
					.seconds = seconds,
					.seed = (unsigned)i * 7919u + 1u };
		if (pthread_create(&th[i], NULL, run_gets, &runs[i]) != 0)
			exit(1);
	}
	for (int i = 0; i < threads; i++) {
		(void)pthread_join(th[i], NULL);
		total += runs[i].gets;
		misses += runs[i].misses;
		cpu += runs[i].cpu;
	}
	tokencache_free(tc);
	if (misses != 0) {
		fprintf(stderr, "bench: %llu misses on a full cache\n", misses);
		exit(1);
	}
	*cpu_ns = cpu / (double)total * 1e9;
	return (double)total / seconds;
}

/* CPU microseconds per ES256 parse and verification of one token. */
static double verify_cost(const char *token, EVP_PKEY *key)
{
	const int rounds = 2000;
	double start = thread_cpu();

	for (int i = 0; i < rounds; i++) {
		struct jwt *jwt = NULL;
		if (jwt_parse(token, strlen(token), &jwt) != JWT_OK ||
		    jwt_verify(jwt, key) != JWT_OK)
			exit(1);
		jwt_free(jwt);
	}
	return (thread_cpu() - start) / rounds * 1e6;
}

int main(int argc, char **argv)
{
	int threads = argc > 1 ? (int)strtol(argv[1], NULL, 10) : 2;
	double seconds = argc > 2 ? strtod(argv[2], NULL) : 2.0;
	char **tokens = calloc(TOKENS, sizeof(*tokens));
	EVP_PKEY *key = jwt_key_generate();
	int rc = 1;

	if (threads < 1 || threads > 64 || seconds <= 0 || tokens == NULL || key == NULL)
		goto done;
	/* Tokens of the size floe issues (about 450 bytes), each its own jti. */
	for (int i = 0; i < TOKENS; i++) {
		char jti[40];
		(void)snprintf(jti, sizeof(jti), "%032d", i);
		json_t *claims = json_pack("{s:s, s:s, s:s, s:s, s:I, s:I, s:I, s:s, s:s}", "iss",
					   "floe", "sub", "principal-name", "client_id",
					   "principal-client-id", "aud", "floe", "iat",
					   (json_int_t)NOW, "nbf", (json_int_t)NOW, "exp",
					   (json_int_t)NOW + 3600, "jti", jti, "scope", "catalog");
		tokens[i] = jwt_sign(key, "kid-0123456789012345678901234567890123456", claims);
		json_decref(claims);
		if (tokens[i] == NULL)
			goto done;
	}
	printf("tokens of %zu bytes, %d threads, %.1f s each\n", strlen(tokens[0]), threads,
	       seconds);
	double cpu_ns = 0;
	double rate = measure(tokens, 1, threads, seconds, &cpu_ns);
	printf("cache hit, %d threads, 1 lock:      %10.0f gets/s  %5.0f ns CPU a get\n", threads,
	       rate, cpu_ns);
	rate = measure(tokens, TOKENCACHE_STRIPES, threads, seconds, &cpu_ns);
	printf("cache hit, %d threads, %d stripes:  %10.0f gets/s  %5.0f ns CPU a get\n", threads,
	       TOKENCACHE_STRIPES, rate, cpu_ns);
	rate = measure(tokens, TOKENCACHE_STRIPES, 1, seconds, &cpu_ns);
	printf("cache hit, 1 thread:                 %10.0f gets/s  %5.0f ns CPU a get\n", rate,
	       cpu_ns);
	printf("ES256 parse + verify, 1 thread:    %.1f us CPU\n", verify_cost(tokens[0], key));
	rc = 0;
done:
	for (int i = 0; tokens != NULL && i < TOKENS; i++)
		free(tokens[i]);
	free(tokens);
	EVP_PKEY_free(key);
	return rc;
}
