/*
 * b64url.c - base64url encoding and its strict decoding (b64url.h).
 * Written here rather than taken from OpenSSL, whose EVP_DecodeBlock
 * reads the other alphabet, wants padding and skips whitespace.
 */
#include "b64url.h"

#include <stdlib.h>

static const char b64url_alphabet[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

size_t b64url_encoded_len(size_t n)
{
	return n / 3 * 4 + (n % 3 == 0 ? 0 : n % 3 + 1);
}

size_t b64url_decoded_max(size_t len)
{
	return len / 4 * 3 + (len % 4 == 0 ? 0 : len % 4 - 1);
}

size_t b64url_encode_into(const unsigned char *in, size_t n, char *out)
{
	size_t o = 0;
	size_t i = 0;

	for (; i + 3 <= n; i += 3) {
		unsigned long v = (unsigned long)in[i] << 16 | (unsigned long)in[i + 1] << 8 |
				  in[i + 2];
		out[o++] = b64url_alphabet[v >> 18 & 63];
		out[o++] = b64url_alphabet[v >> 12 & 63];
		out[o++] = b64url_alphabet[v >> 6 & 63];
		out[o++] = b64url_alphabet[v & 63];
	}
	if (n - i == 1) {
		out[o++] = b64url_alphabet[in[i] >> 2];
		out[o++] = b64url_alphabet[(in[i] & 3) << 4];
	} else if (n - i == 2) {
		unsigned long v = (unsigned long)in[i] << 8 | in[i + 1];
		out[o++] = b64url_alphabet[v >> 10 & 63];
		out[o++] = b64url_alphabet[v >> 4 & 63];
		out[o++] = b64url_alphabet[(v & 15) << 2];
	}
	out[o] = '\0';
	return o;
}

char *b64url_encode(const unsigned char *in, size_t n)
{
	char *out = malloc(b64url_encoded_len(n) + 1);

	if (out == NULL)
		return NULL;
	(void)b64url_encode_into(in, n, out);
	return out;
}

/* The value of one character of the alphabet, or -1. */
static int b64url_value(char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '-')
		return 62;
	if (c == '_')
		return 63;
	return -1;
}

bool b64url_decode_into(const char *in, size_t len, unsigned char *out, size_t *outlen)
{
	unsigned long acc = 0;
	unsigned bits = 0;
	size_t o = 0;

	if (len % 4 == 1)
		return false;
	for (size_t i = 0; i < len; i++) {
		int v = b64url_value(in[i]);
		if (v < 0)
			return false;
		acc = (acc << 6 | (unsigned long)v) & 0xffffff;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[o++] = (unsigned char)(acc >> bits & 0xff);
		}
	}
	/* The bits left over pad the last character: a canonical encoding
	 * has them zero, so "QQ" and "QR" are not both "A". */
	if ((acc & ((1UL << bits) - 1)) != 0)
		return false;
	*outlen = o;
	return true;
}

unsigned char *b64url_decode(const char *in, size_t len, size_t *outlen)
{
	unsigned char *out = malloc(b64url_decoded_max(len) + 1);

	if (out == NULL)
		return NULL;
	if (!b64url_decode_into(in, len, out, outlen)) {
		free(out);
		return NULL;
	}
	out[*outlen] = '\0';
	return out;
}
