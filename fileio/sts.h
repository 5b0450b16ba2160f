/*
 * sts.h - the pure parts of vending credentials through STS AssumeRole
 * (vend.c): the session policy that scopes them to one table's prefix,
 * the session name, and the reading of STS's XML answer. Nothing here
 * does I/O. Only fileio/ and the tests include it.
 */
#ifndef FLOE_FILEIO_STS_H
#define FLOE_FILEIO_STS_H

#include <stdbool.h>
#include <stddef.h>

#include "error.h"
#include "fileio.h"

/* The longest session policy STS takes, in bytes of packed JSON. */
#define STS_POLICY_MAX 2048

/* The longest role session name STS takes. */
#define STS_SESSION_NAME_MAX 64

/*
 * The session policy (compact IAM JSON, a new string) allowing the objects
 * below bucket/key/ and nothing else: GetObject, ListBucket with an
 * s3:prefix condition of key and key/..., GetBucketLocation; with write
 * also PutObject, DeleteObject and the multipart-upload actions. The
 * key's '*', '?' and '$' are written as IAM's ${*}, ${?} and ${$}, so a
 * name never widens the scope. FE_BAD_REQUEST when key is empty or the
 * policy would pass STS_POLICY_MAX; FE_INTERNAL when out of memory.
 */
char *sts_session_policy(const char *bucket, const char *key, bool write,
			 struct floe_error *err) FLOE_WUR;

/* A role session name from any text: "floe-" and the text, each byte
 * outside [A-Za-z0-9+=,.@_-] written '-', cut to STS_SESSION_NAME_MAX
 * (out holds STS_SESSION_NAME_MAX + 1 bytes). */
void sts_session_name(const char *who, char *out);

/* Milliseconds since the epoch of an ISO 8601 UTC time as STS writes it
 * (2026-12-02T01:30:00Z, with an optional fraction). False when it is
 * not one. */
bool sts_parse_time(const char *text, long long *ms);

/* Reads an AssumeRoleResponse: its Credentials' AccessKeyId,
 * SecretAccessKey, SessionToken and Expiration into *out. False when the
 * document is not one, or a part is missing or too long. */
bool sts_parse_credentials(const char *text, size_t len, struct fileio_vended *out);

/* The Code and Message of an STS error (ErrorResponse/Error as AWS
 * writes it, ErrorResponse/Errors/Error, or a bare Error), cut to fit.
 * False when text is not one. */
bool sts_parse_error(const char *text, size_t len, char *code, size_t code_cap, char *message,
		     size_t message_cap);

#endif
