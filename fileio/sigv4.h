/*
 * sigv4.h - AWS Signature Version 4, computed by floe (HMAC-SHA256 of
 * libcrypto) for requests floe does not send itself: the remote signer
 * signs the S3 requests of engines (catalog/signer.c). floe's own
 * requests are signed by libcurl (CURLOPT_AWS_SIGV4), which can sign only
 * a request it sends. Pure: no I/O, no clock, no globals.
 */
#ifndef FLOE_FILEIO_SIGV4_H
#define FLOE_FILEIO_SIGV4_H

#include <stdbool.h>
#include <stddef.h>

/* The payload hash a client may send instead of the body's SHA-256. */
#define SIGV4_UNSIGNED_PAYLOAD "UNSIGNED-PAYLOAD"

/* "YYYYMMDDTHHMMSSZ" and its NUL. */
#define SIGV4_DATE_LEN 17

/* One header to sign: any case in the name; the value is trimmed and its
 * runs of spaces folded to one, as the canonical request wants. */
struct sigv4_header {
	const char *name;
	const char *value;
};

/* A request to sign. Every string is borrowed. */
struct sigv4_request {
	const char *method;          /* "GET", "PUT", ... */
	const char *canonical_uri;   /* the path as sent, already percent-encoded ("/" at least) */
	const char *canonical_query; /* name=value pairs encoded and sorted, '&'-joined; "" none */
	const struct sigv4_header *headers; /* host, x-amz-date, x-amz-content-sha256 among them */
	size_t nheaders;
	const char *payload_hash; /* hex SHA-256 of the body, or SIGV4_UNSIGNED_PAYLOAD */
	const char *amz_date;     /* "YYYYMMDDTHHMMSSZ", the x-amz-date header's value */
	const char *region;       /* "us-east-1" */
	const char *service;      /* "s3" */
};

/* The secret half of a signature; borrowed, never copied or logged. */
struct sigv4_key {
	const char *access_key_id;
	const char *secret_access_key;
};

/* The longest header name and value sigv4_sign accepts, and how many. */
#define SIGV4_HEADER_NAME_MAX 128
#define SIGV4_HEADER_VALUE_MAX 8192
#define SIGV4_HEADERS_MAX 64

/*
 * Signs r with k: the canonical request, the string to sign and the
 * signing key of AWS's Signature V4. Writes the Authorization header's
 * value ("AWS4-HMAC-SHA256 Credential=..., SignedHeaders=...,
 * Signature=...") into authorization (cap bytes). False when a field is
 * missing or malformed (a date that is not 16 characters, a header name
 * with a character outside a token, two headers of one name, a header
 * past the limits above) or it does not fit; authorization is then "".
 */
bool sigv4_sign(const struct sigv4_request *r, const struct sigv4_key *k, char *authorization,
		size_t cap);

/*
 * The canonical query of a raw query string ("b=2&a=1&flag"): each name
 * and value percent-decoded, encoded again as Signature V4 wants (every
 * byte but A-Z a-z 0-9 - _ . ~), sorted by name then value, a missing
 * value written "name=". Written into out (cap bytes). False when raw
 * holds a malformed escape, more than 64 parameters, or out is too small.
 */
bool sigv4_canonical_query(const char *raw, char *out, size_t cap);

/* Writes the n bytes at d as 2n lower-case hex digits and a NUL into out. */
void sigv4_hex(const unsigned char *d, size_t n, char *out);

/* Formats a UTC time (seconds since the epoch) as "YYYYMMDDTHHMMSSZ". */
bool sigv4_date(long long epoch_s, char out[SIGV4_DATE_LEN]);

#endif
