/*
 * s3.h - the pure parts of the S3 backend (s3.c), shared with its unit
 * tests and fuzz target: request URLs and keys, the retry decision, the
 * shared-credentials file, and the bounded XML walk of S3's answers.
 * Nothing here does I/O but s3_credentials_load (s3cred.c), which reads
 * the shared credentials file. Only fileio/ and the tests include it.
 */
#ifndef FLOE_FILEIO_S3_H
#define FLOE_FILEIO_S3_H

#include <stdbool.h>
#include <stddef.h>

#include "error.h"

/* The longest object key S3 accepts, in bytes. */
#define S3_KEY_MAX 1024

/* The longest text one XML element may hold (a key, escaped or not). */
#define S3XML_TEXT_MAX 2048

/* Where requests go: an endpoint and an addressing style. */
struct s3_endpoint {
	const char *scheme; /* "https" or "http" */
	const char *host;   /* host[:port], no path */
	bool path_style;    /* http://host/bucket/key, else http://bucket.host/key */
};

/*
 * Splits a canonical s3:// location (location_canonical's form) into its
 * bucket and key (new strings, the key "" for the bucket's root).
 * FE_BAD_REQUEST when it is not one, or the key is longer than S3_KEY_MAX.
 */
bool s3_split(const char *url, char **bucket, char **key, struct floe_error *err) FLOE_WUR;

/*
 * The request URL of an object (or of the bucket, for key "") with an
 * optional query (already canonical: s3_query_add), every key byte but
 * the unreserved ones and '/' percent-encoded, as Signature V4 signs it.
 * A new string, or NULL when out of memory.
 */
char *s3_request_url(const struct s3_endpoint *ep, const char *bucket, const char *key,
		     const char *query) FLOE_WUR;

/*
 * Appends name=value to a canonical query string of at most cap bytes,
 * value percent-encoded as Signature V4 wants (every byte but A-Z a-z
 * 0-9 - _ . ~). Callers add parameters in name order, which is the order
 * Signature V4 sorts them in. False when it does not fit.
 */
bool s3_query_add(char *query, size_t cap, const char *name, const char *value);

/* Whether a failed attempt may be tried again: a transport failure
 * (curl_code != 0, a connection or timeout), a 5xx, 429, or an answer
 * whose S3 error code is SlowDown, RequestTimeout or InternalError.
 * A 4xx is the request's own fault and is never retried. */
bool s3_retryable(int curl_code, long status, const char *code);

/* The delay before retry number attempt (1, 2, ...): exponential from
 * base_ms, capped at max_ms, with full jitter drawn from rnd. */
long s3_backoff_ms(int attempt, long base_ms, long max_ms, unsigned rnd);

/* Sleeps before retry number attempt: s3_backoff_ms with this thread's
 * own jitter (s3.c). */
void s3_pause(int attempt, long base_ms, long max_ms);

struct s3_credentials {
	char access_key_id[256];
	char secret_access_key[256];
	char session_token[4096];
};

/*
 * Reads profile's keys (aws_access_key_id, aws_secret_access_key,
 * aws_session_token) from the text of a shared credentials file (INI:
 * [profile] sections, key = value, '#' and ';' comments).
 * FE_BAD_REQUEST naming what is missing; values are never quoted in it.
 */
bool s3_credentials_parse(const char *text, size_t len, const char *profile,
			  struct s3_credentials *out, struct floe_error *err) FLOE_WUR;

struct fileio_s3_options;

/*
 * Which of n stores' locations (canonical s3://bucket[/prefix]) holds url
 * (canonical too): the longest one that url is or lies below at a path
 * boundary (s3://b/p holds s3://b/p/x, never s3://b/px; s3://b holds the
 * whole bucket). Its index, or -1 when none does.
 */
int s3_store_pick(const char *const *locations, size_t n, const char *url);

/* The S3 store (s3.c) holding a location, borrowed and read-only while
 * floe serves: for signing STS calls with its credentials and telling
 * engines where it is (vend.c). */
struct s3_setup {
	const char *scheme;
	const char *host;
	bool path_style;
	const char *region;
	const struct s3_credentials *cred;
	bool default_warehouse; /* the default warehouse's store */
};

/* Fills *out with the store holding location (a table location or an
 * object URL, in any form location_canonical accepts), or the default
 * warehouse's store when location is NULL; false when there is none. */
bool s3_setup_get(const char *location, struct s3_setup *out);

/* How many stores fileio_s3_start added (0 before any). */
size_t s3_store_count(void);

/*
 * floe's own credentials for the options (fileio.h): the access key given
 * there (with its secret, and a session token when set), else the
 * profile's keys from the shared credentials file, whose text is wiped
 * once read. FE_BAD_REQUEST naming what is missing or unreadable.
 */
bool s3_credentials_load(const struct fileio_s3_options *o, struct s3_credentials *cr,
			 struct floe_error *err) FLOE_WUR;
/* What the remote signer (s3sign.c) reads of one store: its endpoint, its
 * region and its credentials, borrowed until fileio_s3_stop. */
struct s3_signing {
	struct s3_endpoint ep;
	char region[64];
	const struct s3_credentials *cred;
};

/* Fills out with the store holding location (as s3_setup_get; NULL: the
 * default warehouse's); false when there is none. (s3.c) */
bool s3_signing_get(const char *location, struct s3_signing *out);

/* Called with each element holding only text, its path of local names
 * from the root ("ListBucketResult/Contents/Key") and its text with
 * entities and CDATA decoded (NUL-terminated). Returning false stops the
 * walk, which then fails. */
typedef bool (*s3xml_leaf_fn)(void *ctx, const char *path, const char *text, size_t len);

/* Walks an XML document of S3's: one root, depth at most 8, names at most
 * 64 bytes, text at most S3XML_TEXT_MAX bytes per element; no DTD. False
 * for anything else or when leaf said stop. */
bool s3xml_walk(const char *text, size_t len, s3xml_leaf_fn leaf, void *ctx);

/* The Code (and Message, when message is not NULL) of an S3 Error
 * document, cut to fit. False when text is not one. */
bool s3xml_error(const char *text, size_t len, char *code, size_t code_cap, char *message,
		 size_t message_cap);

#endif
