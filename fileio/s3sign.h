/*
 * s3sign.h - remote signing of engines' S3 requests with floe's own
 * credentials (docs/storage.md "Remote signing"): what an engine needs to
 * build its requests, an engine's request URI read against the endpoint
 * of the S3 store holding the table, and its Signature V4 (sigv4.h) with
 * that store's credentials and region. Which requests a
 * caller may have signed is catalog/signer.c's decision, not this one's.
 * Reached by catalog/ through ports.h. Credentials and signatures are
 * never logged.
 */
#ifndef FLOE_FILEIO_S3SIGN_H
#define FLOE_FILEIO_S3SIGN_H

#include <stdbool.h>
#include <stddef.h>
#include <jansson.h>

#include "error.h"

/* The longest request URI an engine may send to be signed. */
#define FILEIO_SIGN_URI_MAX 8192
/* The most query parameters one request may carry. */
#define FILEIO_SIGN_PARAMS_MAX 32

/* How engines reach a warehouse's storage: the keys of a table's
 * config (s3.endpoint, s3.path-style-access, client.region). */
struct fileio_s3_client {
	char endpoint[300]; /* scheme://host[:port] */
	bool path_style;
	char region[64];
};

/* Fills out for the store holding table_location (NULL: the default
 * warehouse's); false when no store holds it (not on S3). */
bool fileio_s3_client_config(const char *table_location, struct fileio_s3_client *out);

/* An engine's S3 request URI, read against the endpoint and addressing
 * of the store holding the table. Every string is owned;
 * fileio_s3_target_clear frees them. */
struct fileio_s3_target {
	char *location; /* the table's location, whose store signs */
	char *bucket;
	char *key; /* decoded; "" for a bucket-level request */
	size_t nparams;
	char *names[FILEIO_SIGN_PARAMS_MAX]; /* decoded query parameters */
	char *values[FILEIO_SIGN_PARAMS_MAX];
	char *url; /* the URI to send, encoded as it is signed */
	char *canonical_query;
};

/*
 * Parses uri (http(s)://host[:port]/path?query, no user info, no
 * fragment) for a request on the table at table_location (canonical
 * s3://): the scheme and host must be the endpoint of the store holding
 * the table (virtual-hosted: bucket.host), the bucket valid, the key at
 * most 1,024 bytes without a NUL, an empty, "." or ".." segment.
 * FE_BAD_REQUEST naming what is wrong (a malformed URI); FE_FORBIDDEN when
 * it is well-formed but names another server; FE_UNSUPPORTED when no
 * store holds the table (its warehouse is not on S3).
 */
bool fileio_s3_target_parse(const char *table_location, const char *uri, struct fileio_s3_target *t,
			    struct floe_error *err) FLOE_WUR;

/* The decoded value of query parameter name (borrowed; "" when it has
 * none), or NULL when t does not carry it. */
const char *fileio_s3_target_param(const struct fileio_s3_target *t, const char *name);

void fileio_s3_target_clear(struct fileio_s3_target *t);

/* Whether floe leaves header name (lower case) out of the signatures it
 * makes: one a client, its HTTP library or a proxy may set or change on
 * the way (user-agent, content-length, trace headers, ...), or floe's own
 * (host). S3 acts on none of them. */
bool fileio_s3_header_unsigned(const char *name);

/* Whether every '/'-separated segment of key is a name: no empty, "." or
 * ".." segment; with prefix, a last empty segment (a trailing '/') is
 * allowed, as in a listing's prefix. "" is one. */
bool fileio_s3_key_segments_ok(const char *key, bool prefix);

/* A request to sign; every pointer is borrowed. */
struct fileio_s3_sign_request {
	const char *method;
	const struct fileio_s3_target *target;
	const json_t *headers; /* name -> array of strings (or a string) */
	/* The caller's say on each header to be signed (name in lower case,
	 * its values ','-joined): false with err refuses the request. NULL
	 * admits every header. */
	bool (*admit)(const char *name, const char *value, struct floe_error *err);
	/* The body the request carries, when the caller checked it
	 * (DeleteObjects); NULL: none. */
	const char *body;
	size_t body_len;
	long long now; /* seconds since the epoch */
};

/*
 * Signs r->method on r->target with the credentials and region of the
 * store holding the target's table at r->now, over the headers the engine
 * sent (at most 60 names, each value at most 8 KiB, each name a token;
 * those fileio_s3_header_unsigned names are left unsigned, every other
 * one is signed once r->admit let it) and host, x-amz-date,
 * x-amz-content-sha256 and x-amz-security-token when floe's credentials
 * are temporary.
 *
 * With r->body, its SHA-256 is the payload hash signed, and an
 * x-amz-content-sha256 or Content-MD5 of the engine's that is not that
 * body's (UNSIGNED-PAYLOAD among them) is refused (FE_FORBIDDEN): the
 * signature then holds only for exactly that body, on an S3 server that
 * checks the payload hash. Without, the payload hash is the engine's,
 * else UNSIGNED-PAYLOAD.
 *
 * Returns the RemoteSignResult {"uri", "headers"} (new reference): the
 * headers to add, Authorization among them. FE_BAD_REQUEST for malformed
 * headers or one the engine may not set (its own x-amz-security-token or
 * Authorization); r->admit's error.
 */
json_t *fileio_s3_sign(const struct fileio_s3_sign_request *r, struct floe_error *err) FLOE_WUR;

/*
 * Calls each(ctx, key) for every Delete/Object/Key of a DeleteObjects
 * body (XML, at most 1,000 keys). The document must hold nothing S3 could
 * read as a key that each is not shown: only the elements of a Delete
 * document (Quiet, Object with Key, VersionId, ETag, LastModifiedTime,
 * Size), no text mixed with elements (s3xml.c refuses it).
 * FE_BAD_REQUEST when the body is not such a document, holds none or too
 * many keys, or a key with an empty, "." or ".." segment; FE_FORBIDDEN
 * without a body; each's err when each said no.
 */
bool fileio_s3_delete_keys(const char *body, size_t len,
			   bool (*each)(void *ctx, const char *key, struct floe_error *err),
			   void *ctx, struct floe_error *err) FLOE_WUR;

#endif
