/*
 * s3.c - the S3-compatible object-storage backend of fileio (s3://
 * locations), over libcurl with its built-in Signature V4 signing
 * (CURLOPT_AWS_SIGV4). Metadata objects are created with a conditional
 * PutObject (If-None-Match: *): an object already at the name is never
 * overwritten. Reads are bounded, purges list and delete only the
 * table's own prefix. Every request has a connect and a total timeout;
 * idempotent ones are retried with exponential backoff and full jitter
 * on transport failures, 5xx and SlowDown. There is one store per
 * s3:// warehouse (its endpoint, region, addressing and credentials),
 * and each request goes to the store whose location holds its object:
 * never signed with another warehouse's keys. Each thread keeps one curl
 * handle for every store, so its connection is reused (curl keeps one per
 * host). Secrets are never logged.
 *
 * Past 1,000 lines on purpose: every operation goes through the one
 * request loop here (signing, timeouts, retries, the store chosen by
 * location); the XML, credential and signing helpers already stand apart
 * (s3xml.c, s3cred.c, s3sign.c, s3util.c).
 */
#include "backend.h"

#include <curl/curl.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "buf.h"
#include "clock.h"
#include "location.h"
#include "log.h"
#include "s3.h"
#include "sigv4.h"
#include "uuid.h"
#include "txguard.h"

#define S3_CONNECT_TIMEOUT_MS 5000L
#define S3_TIMEOUT_MS 30000L
#define S3_ATTEMPTS 4
#define S3_BACKOFF_BASE_MS 100L
#define S3_BACKOFF_MAX_MS 2000L
#define S3_ERROR_BODY_MAX ((size_t)64 * 1024)
#define S3_LIST_BODY_MAX ((size_t)8 * 1024 * 1024)
#define S3_DELETE_BATCH 1000

/* One s3:// warehouse's storage, as fileio_s3_start took it. */
struct s3_store {
	char *location; /* canonical s3://bucket[/prefix] */
	bool default_warehouse;
	char scheme[8];
	char host[256];
	bool path_style;
	char sigv4[128];
	char region[72];
	struct s3_credentials cred;
	char token_header[sizeof(((struct s3_credentials *)0)->session_token) + 32];
};

/* The stores fileio_s3_start added, before any worker thread runs;
 * read-only afterwards. */
static struct {
	struct s3_store *stores[FILEIO_S3_STORES_MAX];
	const char *locations[FILEIO_S3_STORES_MAX]; /* stores[i]->location */
	size_t n;
	bool key_made;
	pthread_key_t handle_key;
} s3;

struct s3_call {
	const struct s3_store *store; /* where the request goes, signed with its keys */
	const char *method;           /* GET, HEAD, PUT, DELETE or POST */
	const char *bucket;
	const char *key; /* "" for the bucket */
	const char *query;
	const void *body;
	size_t body_len;
	const char *content_type;
	bool if_none_match;
	bool content_md5;
	size_t max; /* of a 2xx answer's body */
};

struct s3_answer {
	CURL *curl;
	long status;
	int curl_code;
	bool too_large;
	size_t max; /* of a 2xx answer's body; an error's is S3_ERROR_BODY_MAX */
	struct buf body;
	char code[64];
};

/* Whether the answer being received is a 2xx one. */
static bool receiving_success(const struct s3_answer *a)
{
	long status = 0;

	(void)curl_easy_getinfo(a->curl, CURLINFO_RESPONSE_CODE, &status);
	return status >= 200 && status < 300;
}

static void handle_free(void *h)
{
	curl_easy_cleanup(h);
}

/* This thread's handle, reset for a new request (its connections kept). */
static CURL *thread_handle(void)
{
	CURL *h = pthread_getspecific(s3.handle_key);

	if (h != NULL) {
		curl_easy_reset(h);
		return h;
	}
	h = curl_easy_init();
	if (h != NULL && pthread_setspecific(s3.handle_key, h) != 0) {
		curl_easy_cleanup(h);
		h = NULL;
	}
	return h;
}

/* x-amz-content-sha256: the payload's SHA-256, which S3 requires and
 * curl then signs. */
static bool payload_hash(const void *body, size_t len, char out[65])
{
	unsigned char d[EVP_MAX_MD_SIZE];
	unsigned int dl = 0;

	if (EVP_Digest(body != NULL ? body : "", len, d, &dl, EVP_sha256(), NULL) != 1 || dl != 32)
		return false;
	sigv4_hex(d, dl, out);
	return true;
}

/* Content-MD5, which DeleteObjects requires: base64 of the body's MD5. */
static bool content_md5(const void *body, size_t len, char out[32])
{
	unsigned char d[EVP_MAX_MD_SIZE];
	unsigned int dl = 0;

	if (EVP_Digest(body, len, d, &dl, EVP_md5(), NULL) != 1 || dl != 16)
		return false;
	return EVP_EncodeBlock((unsigned char *)out, d, (int)dl) == 24;
}

static size_t on_body(char *data, size_t size, size_t n, void *ctx)
{
	struct s3_answer *a = ctx;
	size_t len = size * n;

	if (receiving_success(a) && a->body.len + len > a->max) {
		a->too_large = true;
		return 0; /* stops the transfer */
	}
	if (buf_append(&a->body, data, len) != BUF_OK)
		return 0;
	return len;
}

/* Refuses a 2xx answer whose Content-Length is past the cap before any
 * of its body is read. */
static size_t on_header(char *data, size_t size, size_t n, void *ctx)
{
	struct s3_answer *a = ctx;
	size_t len = size * n;
	static const char cl[] = "content-length:";

	if (len > sizeof(cl) && strncasecmp(data, cl, sizeof(cl) - 1) == 0) {
		char num[32];
		size_t vl = len - (sizeof(cl) - 1);
		if (vl >= sizeof(num))
			return len;
		memcpy(num, data + sizeof(cl) - 1, vl);
		num[vl] = '\0';
		char *end = NULL;
		unsigned long long v = strtoull(num, &end, 10);
		if (end != num && v > a->max && receiving_success(a)) {
			a->too_large = true;
			return 0;
		}
	}
	return len;
}

static void answer_init(struct s3_answer *a, size_t max)
{
	memset(a, 0, sizeof(*a));
	a->max = max;
	buf_init(&a->body, max > S3_ERROR_BODY_MAX ? max : S3_ERROR_BODY_MAX);
}

/* One attempt at a request; false only when it could not even be made
 * (out of memory, no handle), with err. The outcome is in *a. */
static bool s3_once(const struct s3_call *c, struct s3_answer *a, struct floe_error *err)
{
	struct curl_slist *h = NULL;
	char hash[65];
	char md5[32];
	char line[128];
	bool ok = false;
	const struct s3_store *st = c->store;
	CURL *curl = thread_handle();
	char *url = s3_request_url(&(struct s3_endpoint){ st->scheme, st->host, st->path_style },
				   c->bucket, c->key, c->query);

	if (curl == NULL || url == NULL) {
		floe_err(err, FE_INTERNAL, "out of memory");
		goto done;
	}
	a->curl = curl;
	if (!payload_hash(c->body, c->body_len, hash) ||
	    (c->content_md5 && !content_md5(c->body, c->body_len, md5))) {
		floe_err(err, FE_INTERNAL, "cannot hash a request body");
		goto done;
	}
	(void)snprintf(line, sizeof(line), "x-amz-content-sha256: %s", hash);
	struct curl_slist *all = curl_slist_append(NULL, line);
	h = all;
	if (all != NULL && c->content_type != NULL) {
		char ct[96];
		(void)snprintf(ct, sizeof(ct), "Content-Type: %s", c->content_type);
		all = curl_slist_append(h, ct);
	}
	if (all != NULL && c->if_none_match)
		all = curl_slist_append(h, "If-None-Match: *");
	if (all != NULL && c->content_md5) {
		(void)snprintf(line, sizeof(line), "Content-MD5: %s", md5);
		all = curl_slist_append(h, line);
	}
	if (all != NULL && st->token_header[0] != '\0')
		all = curl_slist_append(h, st->token_header);
	/* (No "Expect:" to turn 100-continue off: curl would sign the header
	 * it then does not send.) */
	if (all == NULL) {
		floe_err(err, FE_INTERNAL, "out of memory");
		goto done;
	}
	(void)curl_easy_setopt(curl, CURLOPT_URL, url);
	(void)curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
	(void)curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 0L);
	(void)curl_easy_setopt(curl, CURLOPT_PATH_AS_IS, 1L);
	(void)curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
	(void)curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, S3_CONNECT_TIMEOUT_MS);
	(void)curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, S3_TIMEOUT_MS);
	(void)curl_easy_setopt(curl, CURLOPT_AWS_SIGV4, st->sigv4);
	(void)curl_easy_setopt(curl, CURLOPT_USERNAME, st->cred.access_key_id);
	(void)curl_easy_setopt(curl, CURLOPT_PASSWORD, st->cred.secret_access_key);
	(void)curl_easy_setopt(curl, CURLOPT_HTTPHEADER, h);
	(void)curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
	(void)curl_easy_setopt(curl, CURLOPT_WRITEDATA, a);
	(void)curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, on_header);
	(void)curl_easy_setopt(curl, CURLOPT_HEADERDATA, a);
	if (strcmp(c->method, "HEAD") == 0) {
		(void)curl_easy_setopt(curl, CURLOPT_NOBODY, 1L);
	} else if (strcmp(c->method, "PUT") == 0 || strcmp(c->method, "POST") == 0) {
		(void)curl_easy_setopt(curl, CURLOPT_POSTFIELDS, c->body != NULL ? c->body : "");
		(void)curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)c->body_len);
		(void)curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, c->method);
	} else if (strcmp(c->method, "GET") != 0) {
		(void)curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, c->method);
	}
	TXGUARD_ASSERT_NONE();
	CURLcode rc = curl_easy_perform(curl);
	(void)curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &a->status);
	if (rc != CURLE_OK && !(a->too_large && a->status >= 200 && a->status < 300)) {
		a->curl_code = (int)rc;
		a->too_large = false;
	}
	if (a->status >= 300 && a->body.data != NULL)
		(void)s3xml_error(a->body.data, a->body.len, a->code, sizeof(a->code), NULL, 0);
	ok = true;
done:
	curl_slist_free_all(h);
	free(url);
	return ok;
}

void s3_pause(int attempt, long base_ms, long max_ms)
{
	static _Thread_local unsigned state;

	if (state == 0)
		state = (unsigned)time(NULL) ^ (unsigned)(uintptr_t)&state;
	state ^= state << 13;
	state ^= state >> 17;
	state ^= state << 5;
	long ms = s3_backoff_ms(attempt, base_ms, max_ms, state);
	clock_sleep_ms(ms);
}

/* Whether an answer is a success. */
static bool answer_ok(const struct s3_answer *a)
{
	return a->curl_code == 0 && !a->too_large && a->status >= 200 && a->status < 300;
}

/*
 * A request, tried again (when idempotent) on a transport failure, 5xx
 * or SlowDown, after a backoff. *retried tells whether more than one
 * attempt was made. False with err when it could not be made at all;
 * otherwise the last attempt's answer is in *a (the caller frees its
 * body) and the caller judges it.
 */
static bool s3_request(const struct s3_call *c, bool idempotent, struct s3_answer *a, bool *retried,
		       struct floe_error *err)
{
	*retried = false;
	for (int attempt = 1;; attempt++) {
		answer_init(a, c->max);
		if (!s3_once(c, a, err)) {
			buf_free(&a->body);
			return false;
		}
		if (answer_ok(a) || a->too_large || !idempotent || attempt == S3_ATTEMPTS ||
		    !s3_retryable(a->curl_code, a->status, a->code))
			return true;
		log_warn("fileio", "%s s3://%s/%.200s: %s%s; retrying", c->method, c->bucket,
			 c->key,
			 a->curl_code != 0 ? curl_easy_strerror((CURLcode)a->curl_code) : "status ",
			 a->curl_code != 0 ? "" : (a->code[0] != '\0' ? a->code : "5xx"));
		buf_free(&a->body);
		s3_pause(attempt, S3_BACKOFF_BASE_MS, S3_BACKOFF_MAX_MS);
		*retried = true;
	}
}

/* Words a failed answer: FE_UNAVAILABLE when the store could not be
 * reached or was failing (a retry may do), FE_INTERNAL otherwise. The
 * cause is logged. */
static bool answer_error(const struct s3_call *c, const struct s3_answer *a, const char *what,
			 struct floe_error *err)
{
	if (a->curl_code != 0) {
		const char *why = curl_easy_strerror((CURLcode)a->curl_code);
		log_error("fileio", "%s s3://%s/%.200s: %s", c->method, c->bucket, c->key, why);
		floe_err(err, FE_UNAVAILABLE, "%s: object storage cannot be reached (%s); retry",
			 what, why);
		return false;
	}
	const char *code = a->code[0] != '\0' ? a->code : "no error code";
	log_error("fileio", "%s s3://%s/%.200s: status %ld (%s)", c->method, c->bucket, c->key,
		  a->status, code);
	if (s3_retryable(0, a->status, a->code))
		return floe_err(err, FE_UNAVAILABLE, "%s: object storage answered %ld (%s); retry",
				what, a->status, code);
	if (a->status == 403)
		return floe_err(err, FE_INTERNAL,
				"%s: object storage refused floe's credentials (%s)", what, code);
	return floe_err(err, FE_INTERNAL, "%s: object storage answered %ld (%s)", what, a->status,
			code);
}

/* The store holding a canonical location, or NULL. */
static const struct s3_store *store_of(const char *canon)
{
	int i = s3_store_pick(s3.locations, s3.n, canon);

	return i >= 0 ? s3.stores[i] : NULL;
}

/* The store holding a location, and its bucket and key (canonicalised).
 * A location in no store's is refused, never sent with some other
 * warehouse's credentials. */
static bool split_location(const char *url, const struct s3_store **store, char **bucket,
			   char **key, struct floe_error *err)
{
	char *canon = location_canonical(url, err);

	*store = NULL;
	if (canon == NULL)
		return false;
	bool ok = s3_split(canon, bucket, key, err);
	if (ok) {
		*store = store_of(canon);
		if (*store == NULL) {
			free(*bucket);
			free(*key);
			*bucket = NULL;
			*key = NULL;
			ok = false;
			if (s3.n == 0)
				floe_err(
					err, FE_BAD_REQUEST,
					"location %.200s is in object storage, which floe is not set up for",
					url);
			else
				floe_err(
					err, FE_BAD_REQUEST,
					"location %.200s lies in no s3:// warehouse of floe's: floe reaches object storage only inside its warehouses",
					url);
		}
	}
	free(canon);
	return ok;
}

static char *object_url(const char *bucket, const char *key, struct floe_error *err)
{
	size_t len = strlen(bucket) + strlen(key) + sizeof("s3:///");
	char *url = malloc(len);

	if (url == NULL)
		return floe_err(err, FE_INTERNAL, "out of memory"), NULL;
	(void)snprintf(url, len, "s3://%s/%s", bucket, key);
	return url;
}

/* GETs an object of at most max bytes into *a (body kept). */
static bool get_object(const struct s3_store *st, const char *bucket, const char *key, size_t max,
		       struct s3_answer *a, struct floe_error *err)
{
	struct s3_call c = {
		.store = st, .method = "GET", .bucket = bucket, .key = key, .max = max
	};
	bool retried;

	return s3_request(&c, true, a, &retried, err);
}

/*
 * Creates object key with data, never over another object. A 412 after
 * a retry may be this very write, whose first answer was lost: the
 * object is read back and counts as written when it holds exactly data.
 */
static bool put_new(const struct s3_store *st, const char *bucket, const char *key,
		    const void *data, size_t len, struct floe_error *err)
{
	struct s3_call c = { .store = st,
			     .method = "PUT",
			     .bucket = bucket,
			     .key = key,
			     .body = data,
			     .body_len = len,
			     .content_type = "application/octet-stream",
			     .if_none_match = true,
			     .max = S3_ERROR_BODY_MAX };
	struct s3_answer a;
	bool retried;
	bool ok = false;

	if (!s3_request(&c, true, &a, &retried, err))
		return false;
	if (answer_ok(&a)) {
		ok = true;
	} else if (a.status == 412 && retried) {
		struct s3_answer got;
		struct s3_call g = {
			.store = st, .method = "GET", .bucket = bucket, .key = key, .max = len
		};
		bool looked = get_object(st, bucket, key, len, &got, err);
		bool read = looked && (answer_ok(&got) || got.too_large);
		ok = read && answer_ok(&got) && got.body.len == len &&
		     (len == 0 || memcmp(got.body.data, data, len) == 0);
		if (ok)
			log_info("fileio", "s3://%s/%.200s: a retried write found its own object",
				 bucket, key);
		else if (read)
			floe_err(err, FE_INTERNAL,
				 "another object already exists at s3://%s/%.200s", bucket, key);
		else if (looked)
			answer_error(&g, &got, "cannot check the object a retried write found",
				     err);
		if (looked)
			buf_free(&got.body);
	} else if (a.status == 412) {
		log_error("fileio", "s3://%s/%.200s exists already; not overwritten", bucket, key);
		floe_err(err, FE_INTERNAL, "an object already exists at s3://%s/%.200s", bucket,
			 key);
	} else {
		answer_error(&c, &a, "cannot write the metadata object", err);
	}
	buf_free(&a.body);
	return ok;
}

/* PUTs data as the new object <location's key>/<middle><name>; *location
 * receives its URL. what names the location in a too-long error. */
static bool put_below(const char *base, const char *middle, const char *name, const void *data,
		      size_t len, const char *what, char **location, struct floe_error *err)
{
	const struct s3_store *st = NULL;
	char *bucket = NULL;
	char *key = NULL;
	char *obj = NULL;
	bool ok = false;

	*location = NULL;
	if (!split_location(base, &st, &bucket, &key, err))
		return false;
	size_t olen = strlen(key) + strlen(middle) + strlen(name) + 2;
	obj = malloc(olen);
	if (obj == NULL) {
		floe_err(err, FE_INTERNAL, "out of memory");
		goto done;
	}
	(void)snprintf(obj, olen, "%s%s%s%s", key, key[0] != '\0' ? "/" : "", middle, name);
	if (strlen(obj) > S3_KEY_MAX) {
		floe_err(err, FE_BAD_REQUEST, "%s is too long for an S3 key", what);
		goto done;
	}
	if (!put_new(st, bucket, obj, data, len, err))
		goto done;
	*location = object_url(bucket, obj, err);
	ok = *location != NULL;
done:
	free(obj);
	free(key);
	free(bucket);
	return ok;
}

static bool s3_write_new(const char *table_location, const char *name, const void *data, size_t len,
			 char **location, struct floe_error *err)
{
	return put_below(table_location, "metadata/", name, data, len, "table location", location,
			 err);
}

/* The name of metadata file number version (into name). */
static bool metadata_name(long long version, char name[64 + UUID_STR_LEN], struct floe_error *err)
{
	char uuid[UUID_STR_LEN];

	if (!uuid_v4(uuid))
		return floe_err(err, FE_INTERNAL, "no randomness for a file name");
	(void)snprintf(name, 64 + UUID_STR_LEN, "%05lld-%s.metadata.json", version, uuid);
	return true;
}

static bool s3_write_metadata(const char *table_location, long long version, const char *text,
			      size_t len, char **location, struct floe_error *err)
{
	char name[64 + UUID_STR_LEN];

	*location = NULL;
	return metadata_name(version, name, err) &&
	       s3_write_new(table_location, name, text, len, location, err);
}

/* A metadata object directly below dir (no metadata/ between). */
static bool s3_write_metadata_in(const char *dir, long long version, const char *text, size_t len,
				 char **location, struct floe_error *err)
{
	char name[64 + UUID_STR_LEN];

	*location = NULL;
	return metadata_name(version, name, err) &&
	       put_below(dir, "", name, text, len, "the metadata path", location, err);
}

static bool s3_make_metadata_dir(const char *table_location, struct floe_error *err)
{
	const struct s3_store *st = NULL;
	char *bucket = NULL;
	char *key = NULL;
	bool ok = split_location(table_location, &st, &bucket, &key, err);

	/* No directories in object storage: nothing to make. */
	free(bucket);
	free(key);
	return ok;
}

static bool s3_read(const char *url, size_t max, char **text, size_t *len, struct floe_error *err)
{
	const struct s3_store *st = NULL;
	char *bucket = NULL;
	char *key = NULL;
	struct s3_answer a;
	bool ok = false;

	*text = NULL;
	*len = 0;
	if (!split_location(url, &st, &bucket, &key, err))
		return false;
	struct s3_call c = {
		.store = st, .method = "GET", .bucket = bucket, .key = key, .max = max
	};
	if (!get_object(st, bucket, key, max, &a, err))
		goto done;
	if (a.too_large) {
		floe_err(err, FE_BAD_REQUEST, "%.200s is larger than %zu bytes", url, max);
	} else if (a.curl_code == 0 && a.status == 404) {
		floe_err(err, FE_BAD_REQUEST, "cannot read %.200s: no such object", url);
	} else if (!answer_ok(&a)) {
		answer_error(&c, &a, "cannot read the object", err);
	} else {
		if (a.body.data == NULL)
			(void)buf_reserve(&a.body, 1);
		if (a.body.data == NULL) {
			floe_err(err, FE_INTERNAL, "out of memory");
		} else {
			*text = buf_take(&a.body, len);
			ok = true;
		}
	}
	buf_free(&a.body);
done:
	free(bucket);
	free(key);
	return ok;
}

static void s3_remove(const char *url)
{
	struct floe_error err;
	const struct s3_store *st = NULL;
	char *bucket = NULL;
	char *key = NULL;
	struct s3_answer a;
	bool retried;

	if (!split_location(url, &st, &bucket, &key, &err)) {
		log_warn("fileio", "not removing %.200s: %s", url, err.message);
		return;
	}
	struct s3_call c = {
		.store = st, .method = "DELETE", .bucket = bucket, .key = key, .max = 0
	};
	if (s3_request(&c, true, &a, &retried, &err)) {
		if (!answer_ok(&a) && a.status != 404)
			(void)answer_error(&c, &a, "cannot remove the object", &err);
		buf_free(&a.body);
	}
	free(bucket);
	free(key);
}

/* The rule for every s3 location floe writes below: inside the warehouse
 * (both canonical s3 locations) and short enough for its metadata keys. */
static bool s3_check_beneath(const char *url, const char *warehouse_path, struct floe_error *err)
{
	char *canon = location_canonical(url, err);
	bool ok = false;

	if (canon == NULL)
		return false;
	if (!location_is_s3(warehouse_path) || !location_within(canon, warehouse_path) ||
	    strcmp(canon, warehouse_path) == 0) {
		floe_err(err, FE_BAD_REQUEST, "location %.200s is outside the warehouse", url);
		goto done;
	}
	/* <key>/metadata/<19 digits>-<uuid>.metadata.json */
	size_t key_len = strlen(canon) - (strcspn(canon + 5, "/") + 6);
	if (key_len + sizeof("/metadata/") + 20 + UUID_STR_LEN + sizeof(".metadata.json") >
	    S3_KEY_MAX) {
		floe_err(
			err, FE_BAD_REQUEST,
			"table location %.200s is too long: with its metadata file names an S3 key must stay within %d bytes",
			url, S3_KEY_MAX);
		goto done;
	}
	ok = true;
done:
	free(canon);
	return ok;
}

/* --- purge --- */

struct list_page {
	char **keys;
	size_t n;
	bool truncated;
	char token[S3XML_TEXT_MAX + 1];
	bool bad;
};

static bool list_leaf(void *ctx, const char *path, const char *text, size_t len)
{
	struct list_page *p = ctx;

	if (strcmp(path, "ListBucketResult/Contents/Key") == 0) {
		if (p->n == S3_DELETE_BATCH)
			return false;
		p->keys[p->n] = strndup(text, len);
		if (p->keys[p->n] == NULL)
			return false;
		p->n++;
	} else if (strcmp(path, "ListBucketResult/IsTruncated") == 0) {
		p->truncated = strcmp(text, "true") == 0;
	} else if (strcmp(path, "ListBucketResult/NextContinuationToken") == 0) {
		(void)snprintf(p->token, sizeof(p->token), "%s", text);
	}
	return true;
}

/* Appends text escaped for XML content. */
static void xml_escape_into(struct buf *b, const char *s)
{
	for (; *s != '\0'; s++) {
		const char *e = *s == '&'   ? "&amp;"
				: *s == '<' ? "&lt;"
				: *s == '>' ? "&gt;"
					    : NULL;
		if (e != NULL)
			(void)buf_append(b, e, strlen(e));
		else
			(void)buf_append(b, s, 1);
	}
}

struct delete_result {
	long deleted;
	long failed;
	char first[256];
	char key[S3XML_TEXT_MAX + 1];
};

static bool delete_leaf(void *ctx, const char *path, const char *text, size_t len)
{
	struct delete_result *r = ctx;

	(void)len;
	if (strcmp(path, "DeleteResult/Deleted/Key") == 0) {
		r->deleted++;
	} else if (strcmp(path, "DeleteResult/Error/Key") == 0) {
		(void)snprintf(r->key, sizeof(r->key), "%s", text);
	} else if (strcmp(path, "DeleteResult/Error/Code") == 0) {
		if (r->failed++ == 0)
			(void)snprintf(r->first, sizeof(r->first), "%.180s: %s", r->key, text);
	}
	return true;
}

/* Deletes a page of keys with one DeleteObjects; counts into *removed
 * and *failed (first failure in first). */
static bool delete_batch(const struct s3_store *st, const char *bucket, char **keys, size_t n,
			 long *removed, long *failed, char *first, size_t first_cap,
			 struct floe_error *err)
{
	struct buf body;
	struct s3_answer a;
	bool retried;
	bool ok = false;

	buf_init(&body, (size_t)S3_DELETE_BATCH * (S3_KEY_MAX * 5 + 64) + 128);
	(void)buf_append(&body, "<Delete><Quiet>true</Quiet>", 27);
	for (size_t i = 0; i < n; i++) {
		(void)buf_append(&body, "<Object><Key>", 13);
		xml_escape_into(&body, keys[i]);
		(void)buf_append(&body, "</Key></Object>", 15);
	}
	(void)buf_append(&body, "</Delete>", 9);
	if (body.status != BUF_OK) {
		buf_free(&body);
		return floe_err(err, FE_INTERNAL, "out of memory");
	}
	struct s3_call c = { .store = st,
			     .method = "POST",
			     .bucket = bucket,
			     .key = "",
			     .query = "delete=",
			     .body = body.data,
			     .body_len = body.len,
			     .content_type = "application/xml",
			     .content_md5 = true,
			     .max = S3_LIST_BODY_MAX };
	if (!s3_request(&c, true, &a, &retried, err))
		goto done;
	if (!answer_ok(&a)) {
		answer_error(&c, &a, "cannot delete the table's objects", err);
		buf_free(&a.body);
		goto done;
	}
	struct delete_result r = { 0 };
	if (a.body.data == NULL || !s3xml_walk(a.body.data, a.body.len, delete_leaf, &r)) {
		floe_err(err, FE_INTERNAL, "object storage answered DeleteObjects unreadably");
		buf_free(&a.body);
		goto done;
	}
	buf_free(&a.body);
	/* Quiet: only failures are listed; the rest were deleted. */
	if (r.failed > 0 && *failed == 0)
		(void)snprintf(first, first_cap, "%s", r.first);
	*failed += r.failed;
	*removed += (long)n - r.failed;
	ok = true;
done:
	buf_free(&body);
	return ok;
}

/* One page of ListObjectsV2 below prefix, from token (or the start). */
static bool list_page(const struct s3_store *st, const char *bucket, const char *prefix,
		      const char *token, struct list_page *p, struct floe_error *err)
{
	char query[S3_KEY_MAX * 3 + S3XML_TEXT_MAX * 3 + 128] = "";
	struct s3_answer a;
	bool retried;
	bool ok = false;

	if ((token[0] != '\0' &&
	     !s3_query_add(query, sizeof(query), "continuation-token", token)) ||
	    !s3_query_add(query, sizeof(query), "list-type", "2") ||
	    !s3_query_add(query, sizeof(query), "prefix", prefix))
		return floe_err(err, FE_INTERNAL, "the listing's query is too long");
	struct s3_call c = { .store = st,
			     .method = "GET",
			     .bucket = bucket,
			     .key = "",
			     .query = query,
			     .max = S3_LIST_BODY_MAX };
	if (!s3_request(&c, true, &a, &retried, err))
		return false;
	if (!answer_ok(&a)) {
		answer_error(&c, &a, "cannot list the table's objects", err);
	} else if (a.body.data == NULL || !s3xml_walk(a.body.data, a.body.len, list_leaf, p)) {
		floe_err(err, FE_INTERNAL, "object storage answered ListObjectsV2 unreadably");
	} else {
		ok = true;
	}
	buf_free(&a.body);
	return ok;
}

static void page_clear(struct list_page *p)
{
	for (size_t i = 0; i < p->n; i++)
		free(p->keys[i]);
	p->n = 0;
}

static enum fileio_purge_result s3_purge(const char *table_location, const char *warehouse_path,
					 long *removed, struct floe_error *err)
{
	const struct s3_store *st = NULL;
	char *bucket = NULL;
	char *key = NULL;
	char *prefix = NULL;
	char *keys[S3_DELETE_BATCH];
	struct list_page page = { .keys = keys };
	long failed = 0;
	char first[256] = "";
	enum fileio_purge_result res = FILEIO_PURGE_REFUSED;

	*removed = 0;
	/* The table's own prefix, never the warehouse's root nor outside
	 * it. */
	if (!s3_check_beneath(table_location, warehouse_path, err) ||
	    !split_location(table_location, &st, &bucket, &key, err))
		return FILEIO_PURGE_REFUSED;
	res = FILEIO_PURGE_RETRY;
	size_t pl = strlen(key) + 2;
	prefix = malloc(pl);
	if (prefix == NULL) {
		floe_err(err, FE_INTERNAL, "out of memory");
		goto done;
	}
	(void)snprintf(prefix, pl, "%s/", key);
	for (;;) {
		char token[sizeof(page.token)];
		(void)snprintf(token, sizeof(token), "%s", page.token);
		page.truncated = false;
		page.token[0] = '\0';
		if (!list_page(st, bucket, prefix, token, &page, err))
			goto done;
		for (size_t i = 0; i < page.n; i++) {
			if (strncmp(keys[i], prefix, pl - 1) != 0) {
				floe_err(err, FE_INTERNAL,
					 "object storage listed a key outside the table's prefix");
				goto done;
			}
		}
		if (page.n > 0 && !delete_batch(st, bucket, keys, page.n, removed, &failed, first,
						sizeof(first), err))
			goto done;
		page_clear(&page);
		if (!page.truncated || page.token[0] == '\0')
			break;
	}
	if (failed > 0) {
		floe_err(err, FE_INTERNAL, "%ld objects could not be removed; first: %s", failed,
			 first);
		goto done;
	}
	res = FILEIO_PURGE_DONE;
done:
	page_clear(&page);
	free(prefix);
	free(key);
	free(bucket);
	return res;
}

static long s3_remove_stale_tmp(const char *table_location, const char *warehouse_path,
				int min_age_s)
{
	/* A PUT is atomic: no temporary objects. */
	(void)table_location;
	(void)warehouse_path;
	(void)min_age_s;
	return 0;
}

const struct fileio_backend fileio_s3 = {
	.scheme = "s3",
	.check_beneath = s3_check_beneath,
	.write_metadata = s3_write_metadata,
	.write_metadata_in = s3_write_metadata_in,
	.make_metadata_dir = s3_make_metadata_dir,
	.write_new = s3_write_new,
	.read = s3_read,
	.remove = s3_remove,
	.purge = s3_purge,
	.remove_stale_tmp = s3_remove_stale_tmp,
};

/* --- the stores --- */

/* Frees a store, its secrets wiped first. */
static void store_free(struct s3_store *st)
{
	if (st == NULL)
		return;
	OPENSSL_cleanse(&st->cred, sizeof(st->cred));
	OPENSSL_cleanse(st->token_header, sizeof(st->token_header));
	free(st->location);
	free(st);
}

/* HeadBucket with the store's own endpoint and keys: the bucket exists
 * and the credentials reach it. */
static bool check_bucket(const struct s3_store *st, const char *bucket, struct floe_error *err)
{
	struct s3_call c = { .store = st, .method = "HEAD", .bucket = bucket, .key = "", .max = 0 };
	struct s3_answer a;
	bool retried;
	bool ok = false;

	if (!s3_request(&c, true, &a, &retried, err))
		return false;
	if (answer_ok(&a)) {
		ok = true;
	} else if (a.curl_code == 0 && a.status == 404) {
		floe_err(err, FE_BAD_REQUEST, "the bucket %s does not exist at %s://%s", bucket,
			 st->scheme, st->host);
	} else if (a.curl_code == 0 && (a.status == 403 || a.status == 400)) {
		floe_err(
			err, FE_BAD_REQUEST,
			"The S3 server %s://%s refused floe's credentials for the bucket %s (status %ld): check AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY or the profile",
			st->scheme, st->host, bucket, a.status);
	} else if (a.curl_code == 0 && a.status == 301) {
		floe_err(err, FE_BAD_REQUEST,
			 "the bucket %s is in another region than %s (--s3-region)", bucket,
			 st->region);
	} else {
		answer_error(&c, &a, "cannot reach the warehouse's bucket", err);
	}
	buf_free(&a.body);
	return ok;
}

/* The store's endpoint, region and credentials from the options. */
static bool store_setup(struct s3_store *st, const struct fileio_s3_options *o,
			struct floe_error *err)
{
	if (!s3_credentials_load(o, &st->cred, err))
		return false;
	if (st->cred.session_token[0] != '\0')
		(void)snprintf(st->token_header, sizeof(st->token_header),
			       "x-amz-security-token: %s", st->cred.session_token);
	if (strlen(o->region) >= sizeof(((struct s3_signing *)0)->region))
		return floe_err(err, FE_BAD_REQUEST, "the S3 region is too long");
	(void)snprintf(st->sigv4, sizeof(st->sigv4), "aws:amz:%s:s3", o->region);
	(void)snprintf(st->region, sizeof(st->region), "%s", o->region);
	st->path_style = o->path_style;
	st->default_warehouse = o->default_warehouse;
	if (o->endpoint != NULL && o->endpoint[0] != '\0') {
		const char *sep = strstr(o->endpoint, "://");
		if (sep == NULL || (size_t)(sep - o->endpoint) >= sizeof(st->scheme))
			return floe_err(err, FE_BAD_REQUEST, "the S3 endpoint is not a URL");
		if (strlen(sep + 3) >= sizeof(st->host))
			return floe_err(err, FE_BAD_REQUEST, "the S3 endpoint's host is too long");
		(void)snprintf(st->scheme, sizeof(st->scheme), "%.*s", (int)(sep - o->endpoint),
			       o->endpoint);
		(void)snprintf(st->host, sizeof(st->host), "%s", sep + 3);
	} else {
		(void)snprintf(st->scheme, sizeof(st->scheme), "https");
		(void)snprintf(st->host, sizeof(st->host), "s3.%s.amazonaws.com", o->region);
	}
	return true;
}

bool fileio_s3_start(const struct fileio_s3_options *o, const char *location,
		     struct floe_error *err)
{
	struct s3_store *st = NULL;
	char *canon = NULL;
	char *bucket = NULL;
	char *key = NULL;
	bool ok = false;

	if (s3.n == FILEIO_S3_STORES_MAX)
		return floe_err(err, FE_BAD_REQUEST, "floe keeps at most %d S3 stores",
				FILEIO_S3_STORES_MAX);
	canon = location_canonical(location, err);
	if (canon == NULL || !s3_split(canon, &bucket, &key, err))
		goto done;
	for (size_t i = 0; i < s3.n; i++) {
		if (strcmp(s3.locations[i], canon) == 0 ||
		    (o->default_warehouse && s3.stores[i]->default_warehouse)) {
			floe_err(err, FE_BAD_REQUEST, "%s has an S3 store already",
				 o->default_warehouse ? "the default warehouse" : canon);
			goto done;
		}
	}
	st = calloc(1, sizeof(*st));
	if (st == NULL) {
		floe_err(err, FE_INTERNAL, "out of memory");
		goto done;
	}
	if (!store_setup(st, o, err))
		goto done;
	if (!s3.key_made) {
		if (pthread_key_create(&s3.handle_key, handle_free) != 0) {
			floe_err(err, FE_INTERNAL, "cannot make a thread key");
			goto done;
		}
		s3.key_made = true;
	}
	if (!check_bucket(st, bucket, err))
		goto done;
	st->location = canon;
	canon = NULL;
	s3.stores[s3.n] = st;
	s3.locations[s3.n] = st->location;
	s3.n++;
	st = NULL;
	ok = true;
done:
	store_free(st);
	free(canon);
	free(bucket);
	free(key);
	return ok;
}

/* The store holding location (any spelling), or the default
 * warehouse's for NULL. */
static const struct s3_store *store_for(const char *location)
{
	struct floe_error ignored;

	if (location == NULL) {
		for (size_t i = 0; i < s3.n; i++) {
			if (s3.stores[i]->default_warehouse)
				return s3.stores[i];
		}
		return NULL;
	}
	char *canon = location_canonical(location, &ignored);
	const struct s3_store *st = canon != NULL ? store_of(canon) : NULL;
	free(canon);
	return st;
}

bool s3_signing_get(const char *location, struct s3_signing *out)
{
	const struct s3_store *st = store_for(location);

	if (st == NULL)
		return false;
	out->ep = (struct s3_endpoint){ st->scheme, st->host, st->path_style };
	/* store_setup refused a region longer than out->region. */
	(void)snprintf(out->region, sizeof(out->region), "%.63s", st->region);
	out->cred = &st->cred;
	return true;
}

bool s3_setup_get(const char *location, struct s3_setup *out)
{
	const struct s3_store *st = store_for(location);

	if (st == NULL)
		return false;
	*out = (struct s3_setup){ st->scheme, st->host,  st->path_style,
				  st->region, &st->cred, st->default_warehouse };
	return true;
}

size_t s3_store_count(void)
{
	return s3.n;
}

void fileio_s3_stop(void)
{
	if (s3.key_made) {
		CURL *h = pthread_getspecific(s3.handle_key);
		if (h != NULL) {
			(void)pthread_setspecific(s3.handle_key, NULL);
			curl_easy_cleanup(h);
		}
		(void)pthread_key_delete(s3.handle_key);
		s3.key_made = false;
	}
	for (size_t i = 0; i < s3.n; i++) {
		store_free(s3.stores[i]);
		s3.stores[i] = NULL;
		s3.locations[i] = NULL;
	}
	s3.n = 0;
}
