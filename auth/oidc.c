/*
 * oidc.c - an external OpenID issuer (oidc.h): discovery and key set
 * fetched with libcurl's easy interface, bounded in size and time, the
 * key set swapped under a lock, and tokens checked with jwt.c and jwk.c.
 */
#include "oidc.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "buf.h"
#include "jwk.h"
#include "log.h"
#include "txguard.h"

#define OIDC_TIMEOUT_MS_DEFAULT 5000L
#define OIDC_DISCOVERY_PATH "/.well-known/openid-configuration"

struct oidc_key {
	char *kid; /* NULL when the set gave none */
	enum jwt_alg alg;
	EVP_PKEY *key;
};

struct oidc_keyset {
	size_t n;
	struct oidc_key keys[OIDC_KEYS_MAX];
};

struct oidc {
	char *issuer;
	char *audience;
	char *principal_claim;
	char *roles_claim;
	long long leeway;
	long timeout_ms;
	long wait_ms;  /* OIDC_WAIT_MS unless the config says otherwise */
	long retry_ms; /* OIDC_RETRY_MS unless the config says otherwise */
	char *jwks_uri;
	char *token_endpoint;

	/* The refresher: a thread of its own fetches the key set when a
	 * request asks (wanted), so no request thread waits on the issuer
	 * longer than OIDC_WAIT_MS. */
	pthread_t refresher;
	bool started;             /* the refresher runs */
	pthread_mutex_t lock;     /* guards what follows */
	struct oidc_keyset *keys; /* never NULL after oidc_new */
	unsigned long fetches;    /* fetches ended, the initial one not counted */
	bool last_ok;             /* whether the last fetch (or the initial one) read a set */
	long long last_fetch_ms;  /* monotonic ms at which the last fetch ended */
	bool wanted;              /* a request asks for a fetch */
	bool fetching;            /* the refresher is fetching */
	bool stopping;
	pthread_cond_t wake;    /* the refresher waits on it */
	pthread_cond_t fetched; /* signalled when a fetch ends */
};

/* ---- addresses ---- */

static bool oidc_host_is_loopback(const char *host)
{
	struct in_addr v4;
	struct in6_addr v6;
	char bare[64];
	size_t n = strlen(host);

	if (strcasecmp(host, "localhost") == 0)
		return true;
	if (inet_pton(AF_INET, host, &v4) == 1)
		return (ntohl(v4.s_addr) >> 24) == 127;
	if (n >= 2 && n < sizeof(bare) + 2 && host[0] == '[' && host[n - 1] == ']') {
		memcpy(bare, host + 1, n - 2);
		bare[n - 2] = '\0';
		host = bare;
	}
	return inet_pton(AF_INET6, host, &v6) == 1 && IN6_IS_ADDR_LOOPBACK(&v6);
}

static bool oidc_sockaddr_is_loopback(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)(const void *)sa;
		return (ntohl(in->sin_addr.s_addr) >> 24) == 127;
	}
	if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)(const void *)sa;
		const uint8_t *b = in6->sin6_addr.s6_addr;
		static const uint8_t v4mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

		if (IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr))
			return true;
		return memcmp(b, v4mapped, sizeof(v4mapped)) == 0 && b[12] == 127;
	}
	return false;
}

/* Reads url's scheme into *https and its host into host; false when url
 * is not an absolute http(s) URL with a host. */
static bool oidc_url_parts(const char *url, bool *https, char *host, size_t hostlen)
{
	CURLU *u = curl_url();
	char *scheme = NULL;
	char *h = NULL;
	bool ok = false;

	if (u == NULL || curl_url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_HOST, &h, 0) != CURLUE_OK)
		goto done;
	if (strcmp(scheme, "https") != 0 && strcmp(scheme, "http") != 0)
		goto done;
	if (h[0] == '\0' || strlen(h) >= hostlen)
		goto done;
	*https = strcmp(scheme, "https") == 0;
	memcpy(host, h, strlen(h) + 1);
	ok = true;
done:
	curl_free(scheme);
	curl_free(h);
	curl_url_cleanup(u);
	return ok;
}

bool oidc_url_allowed(const char *url, const char *what, bool https_only, struct floe_error *err)
{
	char host[256];
	bool https = false;

	if (url == NULL || !oidc_url_parts(url, &https, host, sizeof(host)))
		return floe_err(err, FE_BAD_REQUEST, "The %s is not an http or https URL", what);
	if (!https && https_only)
		return floe_err(err, FE_BAD_REQUEST, "The %s must be https, as the issuer is: %s",
				what, url);
	if (!https && !oidc_host_is_loopback(host))
		return floe_err(err, FE_BAD_REQUEST,
				"The %s must be https (http only on a loopback host): %s", what,
				url);
	return true;
}

/* ---- fetching ---- */

struct oidc_fetch {
	struct buf body;
	bool too_large;
	bool loopback_only; /* an http URL: connect to loopback addresses only */
	bool blocked;
};

static size_t oidc_on_body(char *p, size_t size, size_t n, void *userdata)
{
	struct oidc_fetch *f = userdata;
	size_t len = size * n;

	if (buf_append(&f->body, p, len) != BUF_OK) {
		f->too_large = f->body.status == BUF_FULL;
		return 0; /* aborts the transfer */
	}
	return len;
}

static curl_socket_t oidc_open_socket(void *clientp, curlsocktype purpose,
				      struct curl_sockaddr *addr)
{
	struct oidc_fetch *f = clientp;

	(void)purpose;
	if (f->loopback_only && !oidc_sockaddr_is_loopback(&addr->addr)) {
		f->blocked = true;
		return CURL_SOCKET_BAD;
	}
	return socket(addr->family, addr->socktype, addr->protocol);
}

/* GETs url (allowed already) into *body (new, NUL-terminated, free()):
 * 200 and at most OIDC_DOC_MAX bytes, within timeout_ms, no redirect.
 * False with err filled (FE_UNAVAILABLE), and the detail logged. */
static bool oidc_get(const char *url, long timeout_ms, char **body, size_t *len,
		     struct floe_error *err)
{
	struct oidc_fetch f = { 0 };
	char errbuf[CURL_ERROR_SIZE] = "";
	char host[256];
	bool https = false;
	CURL *easy = NULL;
	CURLcode rc;
	long status = 0;
	bool ok = false;

	*body = NULL;
	*len = 0;
	buf_init(&f.body, OIDC_DOC_MAX);
	if (!oidc_url_parts(url, &https, host, sizeof(host))) {
		floe_err(err, FE_UNAVAILABLE, "Cannot fetch %s: not an http or https URL", url);
		goto done;
	}
	f.loopback_only = !https;
	easy = curl_easy_init();
	if (easy == NULL) {
		floe_err(err, FE_UNAVAILABLE, "Cannot fetch %s: out of memory", url);
		goto done;
	}
	curl_easy_setopt(easy, CURLOPT_URL, url);
	curl_easy_setopt(easy, CURLOPT_HTTPGET, 1L);
	curl_easy_setopt(easy, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(easy, CURLOPT_PROTOCOLS_STR, https ? "https" : "http");
	curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS, timeout_ms);
	curl_easy_setopt(easy, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms);
	curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(easy, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)OIDC_DOC_MAX);
	curl_easy_setopt(easy, CURLOPT_SSL_VERIFYPEER, 1L);
	curl_easy_setopt(easy, CURLOPT_SSL_VERIFYHOST, 2L);
	/* A loopback issuer is never reached through a proxy. */
	curl_easy_setopt(easy, CURLOPT_NOPROXY, "localhost,127.0.0.1,::1");
	curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, oidc_on_body);
	curl_easy_setopt(easy, CURLOPT_WRITEDATA, &f);
	curl_easy_setopt(easy, CURLOPT_OPENSOCKETFUNCTION, oidc_open_socket);
	curl_easy_setopt(easy, CURLOPT_OPENSOCKETDATA, &f);
	curl_easy_setopt(easy, CURLOPT_ERRORBUFFER, errbuf);
	curl_easy_setopt(easy, CURLOPT_USERAGENT, "floe-oidc/1");
	TXGUARD_ASSERT_NONE();
	rc = curl_easy_perform(easy);
	if (f.too_large || rc == CURLE_FILESIZE_EXCEEDED) {
		floe_err(err, FE_UNAVAILABLE, "%s is larger than %d bytes", url, OIDC_DOC_MAX);
		goto done;
	}
	if (f.blocked) {
		floe_err(err, FE_UNAVAILABLE, "%s: an http address is only fetched from loopback",
			 url);
		goto done;
	}
	if (rc != CURLE_OK) {
		floe_err(err, FE_UNAVAILABLE, "Cannot fetch %s: %s", url,
			 errbuf[0] != '\0' ? errbuf : curl_easy_strerror(rc));
		goto done;
	}
	curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
	if (status != 200) {
		floe_err(err, FE_UNAVAILABLE, "Cannot fetch %s: HTTP status %ld", url, status);
		goto done;
	}
	if (f.body.status != BUF_OK || f.body.data == NULL) {
		floe_err(err, FE_UNAVAILABLE, "Cannot fetch %s: an empty answer", url);
		goto done;
	}
	*body = buf_take(&f.body, len);
	ok = true;
done:
	if (!ok)
		log_warn("oidc", "%s", err != NULL ? err->message : url);
	curl_easy_cleanup(easy);
	buf_free(&f.body);
	return ok;
}

/* ---- documents ---- */

static json_t *oidc_load_object(const char *body, size_t len, const char *what,
				struct floe_error *err)
{
	json_error_t jerr;
	json_t *doc = NULL;

	if (len > OIDC_DOC_MAX) {
		floe_err(err, FE_UNAVAILABLE, "The %s is larger than %d bytes", what, OIDC_DOC_MAX);
		return NULL;
	}
	doc = json_loadb(body, len, JSON_REJECT_DUPLICATES, &jerr);
	if (doc == NULL || !json_is_object(doc)) {
		json_decref(doc);
		floe_err(err, FE_UNAVAILABLE, "The %s is not a JSON object", what);
		return NULL;
	}
	return doc;
}

bool oidc_discovery_parse(const char *body, size_t len, const char *issuer, char **jwks_uri,
			  char **token_endpoint, struct floe_error *err)
{
	json_t *doc = NULL;
	const char *iss = NULL;
	const char *jwks = NULL;
	const json_t *tok = NULL;
	bool https = false;
	bool ok = false;

	*jwks_uri = NULL;
	*token_endpoint = NULL;
	https = strncmp(issuer, "https://", 8) == 0;
	doc = oidc_load_object(body, len, "issuer's discovery document", err);
	if (doc == NULL)
		goto fail;
	iss = json_string_value(json_object_get(doc, "issuer"));
	if (iss == NULL || strcmp(iss, issuer) != 0) {
		floe_err(err, FE_UNAVAILABLE,
			 "The discovery document names the issuer '%.200s', not '%.200s'",
			 iss != NULL ? iss : "", issuer);
		goto fail;
	}
	jwks = json_string_value(json_object_get(doc, "jwks_uri"));
	if (jwks == NULL) {
		floe_err(err, FE_UNAVAILABLE, "The discovery document has no jwks_uri");
		goto fail;
	}
	if (!oidc_url_allowed(jwks, "issuer's jwks_uri", https, err))
		goto fail;
	tok = json_object_get(doc, "token_endpoint");
	if (tok != NULL &&
	    (!json_is_string(tok) ||
	     !oidc_url_allowed(json_string_value(tok), "issuer's token_endpoint", https, err)))
		goto fail;
	*jwks_uri = strdup(jwks);
	if (tok != NULL)
		*token_endpoint = strdup(json_string_value(tok));
	if (*jwks_uri == NULL || (tok != NULL && *token_endpoint == NULL)) {
		floe_err(err, FE_UNAVAILABLE, "Out of memory reading the discovery document");
		goto fail;
	}
	ok = true;
fail:
	if (!ok) {
		if (err != NULL && err->kind != FE_UNAVAILABLE)
			err->kind = FE_UNAVAILABLE;
		free(*jwks_uri);
		free(*token_endpoint);
		*jwks_uri = NULL;
		*token_endpoint = NULL;
	}
	json_decref(doc);
	return ok;
}

void oidc_keyset_free(struct oidc_keyset *ks)
{
	if (ks == NULL)
		return;
	for (size_t i = 0; i < ks->n; i++) {
		free(ks->keys[i].kid);
		EVP_PKEY_free(ks->keys[i].key);
	}
	free(ks);
}

size_t oidc_keyset_count(const struct oidc_keyset *ks)
{
	return ks != NULL ? ks->n : 0;
}

struct oidc_keyset *oidc_keyset_parse(const char *body, size_t len, struct floe_error *err)
{
	json_t *doc = NULL;
	const json_t *keys = NULL;
	struct oidc_keyset *ks = NULL;
	const json_t *jwk = NULL;
	size_t i = 0;
	char why[160];

	doc = oidc_load_object(body, len, "issuer's key set", err);
	if (doc == NULL)
		goto fail;
	keys = json_object_get(doc, "keys");
	if (!json_is_array(keys)) {
		floe_err(err, FE_UNAVAILABLE, "The issuer's key set has no \"keys\" array");
		goto fail;
	}
	if (json_array_size(keys) > OIDC_KEYS_MAX) {
		floe_err(err, FE_UNAVAILABLE, "The issuer's key set has %zu keys, more than %d",
			 json_array_size(keys), OIDC_KEYS_MAX);
		goto fail;
	}
	ks = calloc(1, sizeof(*ks));
	if (ks == NULL) {
		floe_err(err, FE_UNAVAILABLE, "Out of memory reading the issuer's key set");
		goto fail;
	}
	json_array_foreach(keys, i, jwk) {
		const json_t *kid = json_object_get(jwk, "kid");
		struct oidc_key *k = &ks->keys[ks->n];

		why[0] = '\0';
		k->key = jwk_parse(jwk, &k->alg, why, sizeof(why));
		if (k->key == NULL) {
			log_debug("oidc", "key %zu of the issuer's key set is skipped: %s", i, why);
			continue;
		}
		if (kid != NULL && !json_is_string(kid)) {
			log_debug("oidc",
				  "key %zu of the issuer's key set is skipped: kid not a string",
				  i);
			EVP_PKEY_free(k->key);
			k->key = NULL;
			continue;
		}
		if (kid != NULL) {
			k->kid = strdup(json_string_value(kid));
			if (k->kid == NULL) {
				EVP_PKEY_free(k->key);
				k->key = NULL;
				floe_err(err, FE_UNAVAILABLE,
					 "Out of memory reading the issuer's key set");
				goto fail;
			}
		}
		ks->n++;
	}
	if (ks->n == 0) {
		floe_err(err, FE_UNAVAILABLE,
			 "The issuer's key set has no RS256 or ES256 signing key");
		goto fail;
	}
	json_decref(doc);
	return ks;
fail:
	oidc_keyset_free(ks);
	json_decref(doc);
	return NULL;
}

/* Fetches and reads the key set at jwks_uri. */
static struct oidc_keyset *oidc_fetch_keys(const struct oidc *o, struct floe_error *err)
{
	char *body = NULL;
	size_t len = 0;
	struct oidc_keyset *ks = NULL;

	if (!oidc_get(o->jwks_uri, o->timeout_ms, &body, &len, err))
		return NULL;
	ks = oidc_keyset_parse(body, len, err);
	free(body);
	if (ks == NULL)
		log_warn("oidc", "the key set of %s is refused: %s", o->issuer,
			 err != NULL ? err->message : "");
	return ks;
}

/* ---- the issuer ---- */

static long long oidc_monotonic_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000LL + ts.tv_nsec / 1000000L;
}

static struct timespec oidc_deadline(long long at_ms)
{
	struct timespec ts = { .tv_sec = (time_t)(at_ms / 1000),
			       .tv_nsec = (long)(at_ms % 1000) * 1000000L };
	return ts;
}

/* The refresher: one fetch each time a request asks, no sooner than
 * OIDC_REFRESH_SECONDS after a fetch that read a set (the requests check
 * that themselves) or OIDC_RETRY_MS after one that failed. */
static void *oidc_refresher_main(void *arg)
{
	struct oidc *o = arg;

	pthread_mutex_lock(&o->lock);
	while (!o->stopping) {
		if (!o->wanted) {
			pthread_cond_wait(&o->wake, &o->lock);
			continue;
		}
		long long due = o->last_fetch_ms + (o->last_ok ? 0 : o->retry_ms);
		if (oidc_monotonic_ms() < due) {
			struct timespec until = oidc_deadline(due);
			(void)pthread_cond_timedwait(&o->wake, &o->lock, &until);
			continue;
		}
		o->wanted = false;
		o->fetching = true;
		pthread_mutex_unlock(&o->lock);
		log_info("oidc", "a token names a key the set lacks: fetching %s again",
			 o->jwks_uri);
		struct floe_error err;
		floe_error_clear(&err);
		struct oidc_keyset *fresh = oidc_fetch_keys(o, &err);
		struct oidc_keyset *old = NULL;
		if (fresh == NULL)
			log_warn("oidc", "cannot fetch the key set of %s: %s", o->issuer,
				 err.message);
		pthread_mutex_lock(&o->lock);
		if (fresh != NULL) {
			old = o->keys;
			o->keys = fresh;
		}
		o->fetching = false;
		o->last_ok = fresh != NULL;
		o->last_fetch_ms = oidc_monotonic_ms();
		o->fetches++;
		pthread_cond_broadcast(&o->fetched);
		pthread_mutex_unlock(&o->lock);
		oidc_keyset_free(old);
		pthread_mutex_lock(&o->lock);
	}
	pthread_mutex_unlock(&o->lock);
	return NULL;
}

void oidc_free(struct oidc *o)
{
	if (o == NULL)
		return;
	if (o->started) {
		pthread_mutex_lock(&o->lock);
		o->stopping = true;
		pthread_cond_signal(&o->wake);
		pthread_mutex_unlock(&o->lock);
		pthread_join(o->refresher, NULL);
	}
	pthread_cond_destroy(&o->wake);
	pthread_cond_destroy(&o->fetched);
	pthread_mutex_destroy(&o->lock);
	oidc_keyset_free(o->keys);
	free(o->issuer);
	free(o->audience);
	free(o->principal_claim);
	free(o->roles_claim);
	free(o->jwks_uri);
	free(o->token_endpoint);
	free(o);
}

static char *oidc_strdup_or_null(const char *s, bool *failed)
{
	char *copy = NULL;

	if (s == NULL)
		return NULL;
	copy = strdup(s);
	if (copy == NULL)
		*failed = true;
	return copy;
}

struct oidc *oidc_new(const struct oidc_config *cfg, struct floe_error *err)
{
	struct oidc *o = NULL;
	char *url = NULL;
	char *body = NULL;
	size_t len = 0;
	size_t n = 0;
	bool nomem = false;

	if (cfg->issuer == NULL || cfg->issuer[0] == '\0' || cfg->audience == NULL ||
	    cfg->audience[0] == '\0') {
		floe_err(err, FE_BAD_REQUEST,
			 "An external issuer needs an issuer URL and an audience");
		return NULL;
	}
	if (!oidc_url_allowed(cfg->issuer, "issuer", false, err))
		return NULL;
	o = calloc(1, sizeof(*o));
	if (o == NULL || pthread_mutex_init(&o->lock, NULL) != 0) {
		free(o);
		floe_err(err, FE_UNAVAILABLE, "Out of memory");
		return NULL;
	}
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	bool fetched_ok = pthread_cond_init(&o->fetched, &ca) == 0;
	bool wake_ok = pthread_cond_init(&o->wake, &ca) == 0;
	pthread_condattr_destroy(&ca);
	if (!fetched_ok || !wake_ok) {
		if (fetched_ok)
			pthread_cond_destroy(&o->fetched);
		if (wake_ok)
			pthread_cond_destroy(&o->wake);
		pthread_mutex_destroy(&o->lock);
		free(o);
		floe_err(err, FE_UNAVAILABLE, "Out of memory");
		return NULL;
	}
	o->issuer = oidc_strdup_or_null(cfg->issuer, &nomem);
	o->audience = oidc_strdup_or_null(cfg->audience, &nomem);
	o->principal_claim = oidc_strdup_or_null(cfg->principal_claim != NULL ? cfg->principal_claim
									      : "sub",
						 &nomem);
	o->roles_claim = oidc_strdup_or_null(cfg->roles_claim, &nomem);
	o->leeway = cfg->leeway;
	o->timeout_ms = cfg->timeout_ms > 0 ? cfg->timeout_ms : OIDC_TIMEOUT_MS_DEFAULT;
	o->wait_ms = cfg->wait_ms > 0 ? cfg->wait_ms : OIDC_WAIT_MS;
	o->retry_ms = cfg->retry_ms > 0 ? cfg->retry_ms : OIDC_RETRY_MS;
	/* OpenID Connect Discovery 1.0, 4: a terminating "/" of the issuer
	 * goes before the well-known path is appended. */
	n = strlen(o->issuer != NULL ? o->issuer : "");
	if (n > 0 && o->issuer[n - 1] == '/')
		n--;
	url = malloc(n + sizeof(OIDC_DISCOVERY_PATH));
	if (nomem || url == NULL) {
		floe_err(err, FE_UNAVAILABLE, "Out of memory");
		goto fail;
	}
	memcpy(url, o->issuer, n);
	memcpy(url + n, OIDC_DISCOVERY_PATH, sizeof(OIDC_DISCOVERY_PATH));
	if (!oidc_get(url, o->timeout_ms, &body, &len, err) ||
	    !oidc_discovery_parse(body, len, o->issuer, &o->jwks_uri, &o->token_endpoint, err))
		goto fail;
	o->keys = oidc_fetch_keys(o, err);
	if (o->keys == NULL)
		goto fail;
	/* The set just read does not count against OIDC_REFRESH_SECONDS: the
	 * first unknown kid fetches at once. */
	o->last_ok = true;
	o->last_fetch_ms = oidc_monotonic_ms() - OIDC_REFRESH_SECONDS * 1000LL;
	if (pthread_create(&o->refresher, NULL, oidc_refresher_main, o) != 0) {
		floe_err(err, FE_UNAVAILABLE, "Cannot start the key set refresher");
		goto fail;
	}
	o->started = true;
	log_info("oidc", "issuer %s: %zu keys from %s", o->issuer, o->keys->n, o->jwks_uri);
	free(url);
	free(body);
	return o;
fail:
	free(url);
	free(body);
	oidc_free(o);
	return NULL;
}

const char *oidc_token_endpoint(const struct oidc *o)
{
	return o->token_endpoint;
}

/* The key for kid and alg in ks (a new reference, EVP_PKEY_free), or
 * NULL. Without kid, the set's only key of alg. */
static EVP_PKEY *oidc_keyset_find(const struct oidc_keyset *ks, const char *kid, enum jwt_alg alg)
{
	const struct oidc_key *found = NULL;

	for (size_t i = 0; i < ks->n; i++) {
		const struct oidc_key *k = &ks->keys[i];

		if (k->alg != alg)
			continue;
		if (kid != NULL) {
			if (k->kid != NULL && strcmp(k->kid, kid) == 0) {
				found = k;
				break;
			}
		} else if (found == NULL) {
			found = k;
		} else {
			return NULL; /* two candidates: which one is not said */
		}
	}
	if (found == NULL || EVP_PKEY_up_ref(found->key) != 1)
		return NULL;
	return found->key;
}

/*
 * Looks kid up. When the set lacks it, asks the refresher for a fetch and
 * waits for it at most OIDC_WAIT_MS, unless a fetch that read a set ended
 * less than OIDC_REFRESH_SECONDS ago (the set is current: the kid is
 * unknown). NULL with *undecided (err filled, FE_UNAVAILABLE) when the key
 * set could not be fetched, or not in time: whether the key is the
 * issuer's cannot be told, which is neither a yes nor a no.
 */
static EVP_PKEY *oidc_key_for(struct oidc *o, const char *kid, enum jwt_alg alg, bool *undecided,
			      struct floe_error *err)
{
	EVP_PKEY *key = NULL;

	*undecided = false;
	pthread_mutex_lock(&o->lock);
	key = oidc_keyset_find(o->keys, kid, alg);
	long long now = oidc_monotonic_ms();
	if (key != NULL || (o->last_ok && now - o->last_fetch_ms < OIDC_REFRESH_SECONDS * 1000LL)) {
		pthread_mutex_unlock(&o->lock);
		return key;
	}
	/* A fetch already under way counts: a rotation seen by many requests
	 * at once costs one fetch. */
	unsigned long seen = o->fetches;
	if (!o->fetching) {
		o->wanted = true;
		pthread_cond_signal(&o->wake);
	}
	struct timespec until = oidc_deadline(now + o->wait_ms);
	while (o->fetches == seen && !o->stopping) {
		if (pthread_cond_timedwait(&o->fetched, &o->lock, &until) == ETIMEDOUT)
			break;
	}
	key = oidc_keyset_find(o->keys, kid, alg);
	bool decided = o->fetches != seen && o->last_ok;
	pthread_mutex_unlock(&o->lock);
	if (key == NULL && !decided) {
		*undecided = true;
		floe_err(err, FE_UNAVAILABLE, "The token issuer's keys could not be fetched");
	}
	return key;
}

enum jwt_status oidc_verify(struct oidc *o, const char *token, size_t len, long long now,
			    json_t **claims, struct floe_error *err)
{
	struct jwt *jwt = NULL;
	EVP_PKEY *key = NULL;
	bool undecided = false;
	enum jwt_status st;
	struct jwt_expect want = { .issuer = o->issuer,
				   .audience = o->audience,
				   .leeway = o->leeway };

	*claims = NULL;
	st = jwt_parse(token, len, &jwt);
	if (st != JWT_OK)
		goto done;
	key = oidc_key_for(o, jwt->kid, jwt->alg, &undecided, err);
	if (key == NULL) {
		st = undecided ? JWT_OK : JWT_UNKNOWN_KEY;
		goto done;
	}
	st = jwt_verify(jwt, key);
	if (st != JWT_OK)
		goto done;
	st = jwt_check_claims(jwt->claims, &want, now);
	if (st != JWT_OK)
		goto done;
	*claims = json_incref(jwt->claims);
done:
	EVP_PKEY_free(key);
	jwt_free(jwt);
	return st;
}

/* ---- claims ---- */

static bool oidc_name_ok(const char *s, size_t len)
{
	if (len == 0 || len > OIDC_NAME_MAX)
		return false;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c < 0x20 || c == 0x7f)
			return false;
	}
	return true;
}

void oidc_roles_free(char **roles, size_t nroles)
{
	if (roles == NULL)
		return;
	for (size_t i = 0; i < nroles; i++)
		free(roles[i]);
	free(roles);
}

/* Adds the role s[0..len) to roles unless it is there already. */
static bool oidc_add_role(char **roles, size_t *n, const char *s, size_t len, const char *claim,
			  struct floe_error *err)
{
	if (!oidc_name_ok(s, len) || memchr(s, ' ', len) != NULL)
		return floe_err(err, FE_NOT_AUTHORIZED,
				"Token claim '%s' has a role name that is empty, too long or "
				"not printable",
				claim);
	for (size_t i = 0; i < *n; i++) {
		if (strlen(roles[i]) == len && memcmp(roles[i], s, len) == 0)
			return true;
	}
	if (*n == OIDC_ROLES_MAX)
		return floe_err(err, FE_NOT_AUTHORIZED, "Token claim '%s' names more than %d roles",
				claim, OIDC_ROLES_MAX);
	roles[*n] = strndup(s, len);
	if (roles[*n] == NULL)
		return floe_err(err, FE_NOT_AUTHORIZED, "Out of memory reading the token's roles");
	(*n)++;
	return true;
}

static bool oidc_claims_roles(const json_t *claims, const char *roles_claim, char ***roles,
			      size_t *nroles, struct floe_error *err)
{
	const json_t *v = json_object_get(claims, roles_claim);
	char **list = NULL;
	size_t n = 0;
	size_t i = 0;
	const json_t *item = NULL;

	if (v == NULL || json_is_null(v))
		return true;
	if (!json_is_string(v) && !json_is_array(v))
		return floe_err(err, FE_NOT_AUTHORIZED,
				"Token claim '%s' is neither a string nor an array of strings",
				roles_claim);
	list = calloc(OIDC_ROLES_MAX, sizeof(*list));
	if (list == NULL)
		return floe_err(err, FE_NOT_AUTHORIZED, "Out of memory reading the token's roles");
	if (json_is_string(v)) {
		const char *s = json_string_value(v);
		size_t len = json_string_length(v);
		size_t at = 0;

		while (at < len) {
			size_t end = at;

			while (end < len && s[end] != ' ')
				end++;
			if (end > at &&
			    !oidc_add_role(list, &n, s + at, end - at, roles_claim, err))
				goto fail;
			at = end + 1;
		}
	} else {
		json_array_foreach(v, i, item) {
			if (!json_is_string(item)) {
				floe_err(
					err, FE_NOT_AUTHORIZED,
					"Token claim '%s' is neither a string nor an array of strings",
					roles_claim);
				goto fail;
			}
			if (!oidc_add_role(list, &n, json_string_value(item),
					   json_string_length(item), roles_claim, err))
				goto fail;
		}
	}
	if (n == 0) {
		free(list);
		return true;
	}
	*roles = list;
	*nroles = n;
	return true;
fail:
	oidc_roles_free(list, n);
	return false;
}

bool oidc_claims_principal(const json_t *claims, const char *principal_claim,
			   const char *roles_claim, char *name, size_t namelen, char ***roles,
			   size_t *nroles, struct floe_error *err)
{
	const json_t *p = json_object_get(claims, principal_claim);
	size_t len = json_string_length(p);

	*roles = NULL;
	*nroles = 0;
	if (namelen > 0)
		name[0] = '\0';
	if (!json_is_string(p) || !oidc_name_ok(json_string_value(p), len))
		return floe_err(err, FE_NOT_AUTHORIZED,
				"Token claim '%s' is not a printable string of 1 to %d bytes",
				principal_claim, OIDC_NAME_MAX);
	if (len >= namelen)
		return floe_err(err, FE_NOT_AUTHORIZED, "Token claim '%s' is too long",
				principal_claim);
	memcpy(name, json_string_value(p), len + 1);
	if (roles_claim == NULL)
		return true;
	return oidc_claims_roles(claims, roles_claim, roles, nroles, err);
}

bool oidc_principal(const struct oidc *o, const json_t *claims, char *name, size_t namelen,
		    char ***roles, size_t *nroles, struct floe_error *err)
{
	return oidc_claims_principal(claims, o->principal_claim, o->roles_claim, name, namelen,
				     roles, nroles, err);
}
