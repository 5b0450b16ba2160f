/*
 * b64url.h - base64url without padding (RFC 4648 section 5, as JWS and
 * JWK write it). Decoding is strict, so every byte string has exactly one
 * spelling: no padding, no whitespace, no characters outside the
 * alphabet, no length of the form 4k+1 and no non-zero bits after the
 * last byte.
 */
#ifndef FLOE_B64URL_H
#define FLOE_B64URL_H

#include <stdbool.h>
#include <stddef.h>

#include "error.h"

/* The length of the encoding of n bytes, without the terminating NUL. */
size_t b64url_encoded_len(size_t n);

/* The most bytes an encoding of len characters can decode to. */
size_t b64url_decoded_max(size_t len);

/* Encodes n bytes of in into out, which has room for
 * b64url_encoded_len(n) + 1 characters, and NUL-terminates it. Returns
 * the length written. */
size_t b64url_encode_into(const unsigned char *in, size_t n, char *out);

/* Encodes n bytes. Returns a new NUL-terminated string (free with
 * free()), or NULL when out of memory. */
char *b64url_encode(const unsigned char *in, size_t n) FLOE_WUR;

/* Decodes len characters of in into out, which has room for
 * b64url_decoded_max(len) bytes, and sets *outlen. False when in is not a
 * canonical unpadded base64url string; out is then undefined. */
bool b64url_decode_into(const char *in, size_t len, unsigned char *out, size_t *outlen) FLOE_WUR;

/* Decodes len characters. Returns a new buffer (free with free()) of
 * *outlen bytes, with a NUL byte after them so text can be read in place;
 * NULL when in is not canonical base64url or when out of memory. */
unsigned char *b64url_decode(const char *in, size_t len, size_t *outlen) FLOE_WUR;

#endif
