/*
 * location.h - table locations in one canonical form, so that two
 * spellings of one directory are compared (and purged) as one. Pure
 * string work: nothing here touches the file system (fileio.h resolves
 * symbolic links).
 */
#ifndef FLOE_LOCATION_H
#define FLOE_LOCATION_H

#include <stdbool.h>
#include <stddef.h>

#include "error.h"

/* The longest canonical location accepted, in bytes. */
#define LOCATION_MAX 4096

/*
 * The canonical form of a local location: "file://" followed by an
 * absolute path without empty, "." or ".." segments and without a
 * trailing '/' ("file:///" for the root). Accepts file:///p, file:/p (as
 * Java and Hadoop write it), file://localhost/p and a bare /p; the scheme
 * is case-insensitive. Segments are taken literally (no percent
 * decoding: floe names files exactly as the location spells them).
 * An object-store location s3://bucket/key is canonicalised the same way
 * below its bucket: "s3://bucket" followed by the key's segments, each
 * after a '/' ("s3://bucket" for the bucket's root); the bucket must be a
 * valid S3 bucket name (location_bucket_valid).
 * Returns a new string, or NULL with FE_BAD_REQUEST (another scheme or a
 * host, a relative path, ".." climbing above '/' or the bucket, a bad
 * bucket name, too long) or FE_INTERNAL (out of memory).
 */
char *location_canonical(const char *location, struct floe_error *err) FLOE_WUR;

/* The absolute path inside a canonical local location (borrowed: points
 * into it); an s3 location is its own path (the whole string). */
const char *location_path(const char *canonical);

/* True when a canonical location is an s3:// one. */
bool location_is_s3(const char *canonical);

/* True when the len bytes at name are a valid S3 bucket name: 3-63
 * lowercase letters, digits, '.' and '-', starting and ending with a
 * letter or digit, no ".." and no '.' next to a '-'. */
bool location_bucket_valid(const char *name, size_t len);

/* True when canonical location inner is outer or lies below it. */
bool location_within(const char *inner, const char *outer);

/* True when one of two canonical locations lies within the other. */
bool location_overlaps(const char *a, const char *b);

/* True when locations a and b, in any form location_canonical accepts
 * (file:/p and file:///p alike), are one place; false when they differ
 * or either is not a local location (or out of memory). */
bool location_same(const char *a, const char *b);

#endif
