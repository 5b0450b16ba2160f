/*
 * chain.c - an audit event's canonical form and its link in the hash
 * chain (trail.h).
 */
#include "trail.h"

#include <stdio.h>
#include <string.h>

#include <openssl/evp.h>

/* One field: "<byte length>:<bytes>\n", or "-\n" for NULL. */
static bool field(EVP_MD_CTX *ctx, const char *v)
{
	char len[32];

	if (v == NULL)
		return EVP_DigestUpdate(ctx, "-\n", 2) == 1;
	size_t n = strlen(v);
	int k = snprintf(len, sizeof(len), "%zu:", n);
	return EVP_DigestUpdate(ctx, len, (size_t)k) == 1 && EVP_DigestUpdate(ctx, v, n) == 1 &&
	       EVP_DigestUpdate(ctx, "\n", 1) == 1;
}

bool trail_event_hash(const unsigned char prev[TRAIL_HASH_LEN], const struct trail_event *e,
		      unsigned char out[TRAIL_HASH_LEN])
{
	static const char magic[] = "floe-audit-event/1\n";
	char pos[32];
	unsigned int outlen = 0;
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	bool ok = false;

	if (ctx == NULL)
		return false;
	(void)snprintf(pos, sizeof(pos), "%lld", e->position);
	ok = EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) == 1 &&
	     EVP_DigestUpdate(ctx, prev, TRAIL_HASH_LEN) == 1 &&
	     EVP_DigestUpdate(ctx, magic, sizeof(magic) - 1) == 1 && field(ctx, pos) &&
	     field(ctx, e->id) && field(ctx, e->at) && field(ctx, e->event) &&
	     field(ctx, e->principal) && field(ctx, e->client_id) && field(ctx, e->request_id) &&
	     field(ctx, e->ns) && field(ctx, e->table) && field(ctx, e->run_id) &&
	     field(ctx, e->details) && EVP_DigestFinal_ex(ctx, out, &outlen) == 1 &&
	     outlen == TRAIL_HASH_LEN;
	EVP_MD_CTX_free(ctx);
	return ok;
}

void trail_genesis(unsigned char out[TRAIL_HASH_LEN])
{
	memset(out, 0, TRAIL_HASH_LEN);
}

void trail_hex_bytes(const unsigned char *b, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[b[i] >> 4];
		out[2 * i + 1] = digits[b[i] & 0xf];
	}
	out[2 * n] = '\0';
}

void trail_hex(const unsigned char h[TRAIL_HASH_LEN], char out[TRAIL_HASH_HEX])
{
	trail_hex_bytes(h, TRAIL_HASH_LEN, out);
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

bool trail_unhex_bytes(const char *hex, unsigned char *b, size_t cap, size_t *n)
{
	size_t len = hex != NULL ? strlen(hex) : 1;

	*n = 0;
	if (len % 2 != 0 || len / 2 > cap)
		return false;
	for (size_t i = 0; i < len / 2; i++) {
		int hi = hexval(hex[2 * i]);
		int lo = hexval(hex[2 * i + 1]);
		if (hi < 0 || lo < 0)
			return false;
		b[i] = (unsigned char)(hi << 4 | lo);
	}
	*n = len / 2;
	return true;
}

bool trail_unhex(const char *hex, unsigned char h[TRAIL_HASH_LEN])
{
	size_t n = 0;

	return trail_unhex_bytes(hex, h, TRAIL_HASH_LEN, &n) && n == TRAIL_HASH_LEN;
}
