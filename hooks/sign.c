/*
 * sign.c - the HMAC-SHA256 signature a hook with a secret receives, over
 * the delivery's timestamp and body (OpenSSL libcrypto).
 */
#include "hooks.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>

void hooks_signature(const char *secret, long long timestamp, const char *body,
		     char out[72])
{
	unsigned char mac[EVP_MAX_MD_SIZE];
	unsigned int len = 0;
	char ts[32];
	int tlen = snprintf(ts, sizeof(ts), "%lld.", timestamp);
	size_t blen = strlen(body);
	unsigned char *msg = malloc((size_t)tlen + blen + 1);

	/* Without memory the signature is all zeros, which no receiver
	 * accepts: the call fails closed. */
	if (msg != NULL) {
		memcpy(msg, ts, (size_t)tlen);
		memcpy(msg + tlen, body, blen);
		if (HMAC(EVP_sha256(), secret, (int)strlen(secret), msg, (size_t)tlen + blen, mac,
			 &len) == NULL)
			len = 0;
	}
	free(msg);
	memcpy(out, "sha256=", 7);
	for (unsigned int i = 0; i < 32; i++)
		snprintf(out + 7 + 2 * i, 3, "%02x", i < len ? mac[i] : 0);
	out[7 + 64] = '\0';
}
