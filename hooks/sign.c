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

void hooks_signature(const char *secret, long long timestamp, const char *body, char out[72])
{
	static const char hex[] = "0123456789abcdef";
	unsigned char mac[EVP_MAX_MD_SIZE];
	unsigned int len = 0;
	int tlen = snprintf(NULL, 0, "%lld.", timestamp);
	size_t mlen = (size_t)(tlen > 0 ? tlen : 0) + strlen(body);
	char *msg = malloc(mlen + 1);

	/* Without memory the signature is all zeros, which no receiver
	 * accepts: the call fails closed. */
	if (msg != NULL && tlen > 0 &&
	    snprintf(msg, mlen + 1, "%lld.%s", timestamp, body) == (int)mlen) {
		if (HMAC(EVP_sha256(), secret, (int)strlen(secret), (const unsigned char *)msg,
			 mlen, mac, &len) == NULL)
			len = 0;
	}
	free(msg);
	(void)snprintf(out, 8, "sha256=");
	for (size_t i = 0; i < 32; i++) {
		unsigned char b = i < len ? mac[i] : 0;
		out[7 + 2 * i] = hex[b >> 4];
		out[8 + 2 * i] = hex[b & 0x0f];
	}
	out[7 + 64] = '\0';
}
