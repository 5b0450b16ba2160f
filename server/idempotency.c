/*
 * idempotency.c - claims a key before the handler runs and records the
 * answer after it. The claim borrows a connection of its own for a moment
 * (catalog/idem.c), so the gate holds none while it asks.
 */
#include "idempotency.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "idem.h"
#include "log.h"
#include "table.h"
#include "uuid.h"

/* Keys are kept past the advertised lifetime to allow for clock skew. */
#define KEEP_SECONDS (IDEMPOTENCY_LIFETIME_SECONDS + 5 * 60)

static bool key_is_uuid(const char *k)
{
	if (strlen(k) != 36)
		return false;
	for (int i = 0; i < 36; i++) {
		char c = k[i];
		bool dash = i == 8 || i == 13 || i == 18 || i == 23;
		if (dash ? c != '-'
			 : !((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') ||
			     (c >= 'A' && c <= 'F')))
			return false;
	}
	return true;
}

/* Hashes one part, its length first, so no two lists of parts hash
 * alike by moving bytes from one part to the next. */
static bool digest_part(EVP_MD_CTX *ctx, const char *part, size_t len)
{
	unsigned char n[8];
	uint64_t v = len;

	for (int i = 7; i >= 0; i--) {
		n[i] = (unsigned char)(v & 0xff);
		v >>= 8;
	}
	return EVP_DigestUpdate(ctx, n, sizeof(n)) == 1 &&
	       (len == 0 || EVP_DigestUpdate(ctx, part, len) == 1);
}

/* What a key is claimed for: SHA-256 over the method, the path, the body
 * and the principal, as hex with a tag (72 bytes and the NUL). Every part
 * counts whatever its length: a key is one principal's, and the same key
 * with another body or path is another request, refused. */
#define ROUTE_TAG "sha256:"
#define ROUTE_LEN (sizeof(ROUTE_TAG) + 64) /* the tag, 64 hex digits, the NUL */

static bool route_of(const struct http_request *req, char out[ROUTE_LEN])
{
	const char *principal = req->principal != NULL ? req->principal : "";
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	bool ok = ctx != NULL && EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) == 1 &&
		  digest_part(ctx, req->method, strlen(req->method)) &&
		  digest_part(ctx, req->path, strlen(req->path)) &&
		  digest_part(ctx, req->body != NULL ? req->body : "", req->body_len) &&
		  digest_part(ctx, principal, strlen(principal)) &&
		  EVP_DigestFinal_ex(ctx, md, &mdlen) == 1 && mdlen == 32;

	EVP_MD_CTX_free(ctx);
	if (!ok)
		return false;
	char *hex = out + sizeof(ROUTE_TAG) - 1;
	memcpy(out, ROUTE_TAG, sizeof(ROUTE_TAG) - 1);
	for (unsigned int i = 0; i < mdlen; i++, hex += 2)
		(void)snprintf(hex, 3, "%02x", md[i]);
	return true;
}

static void replay(struct http_request *req, int status, char *response)
{
	char etag[520] = "";

	/* A replayed create or commit carries its ETag, as the first answer
	 * did. */
	if (status == 200 && response != NULL) {
		json_t *doc = json_loads(response, 0, NULL);
		(void)table_result_etag(doc, etag, sizeof(etag));
		json_decref(doc);
	}
	if (response == NULL || response[0] == '\0') {
		free(response);
		http_reply_empty(req, status);
	} else {
		http_reply_text(req, status, response, strlen(response));
	}
	http_add_header(req, "Idempotency-Replayed", "true");
	if (etag[0] != '\0')
		http_add_header(req, "ETag", etag);
	log_info("http", "replayed the answer to Idempotency-Key %s rid=%s",
		 http_header(req, "Idempotency-Key"), req->request_id);
}

bool idempotent_replayed(struct http_request *req)
{
	const char *key = http_header(req, "Idempotency-Key");
	struct floe_error err;
	char route[ROUTE_LEN];
	int status = 0;
	char *response = NULL;

	floe_error_clear(&err);
	if (key == NULL || !key_is_uuid(key) || !route_of(req, route))
		return false;
	if (!idem_answered(req->pool, key, route, &status, &response, &err) || status == 0) {
		free(response);
		return false;
	}
	replay(req, status, response);
	return true;
}

bool idempotent_begin(struct http_request *req)
{
	const char *key = http_header(req, "Idempotency-Key");
	struct floe_error err;
	char route[ROUTE_LEN];
	bool claimed = false;
	int status = 0;
	char *response = NULL;

	floe_error_clear(&err);
	if (key == NULL)
		return true;
	if (!key_is_uuid(key)) {
		floe_err(&err, FE_BAD_REQUEST, "Idempotency-Key must be a UUID (36 characters)");
		http_reply_error(req, &err);
		return false;
	}
	if (!uuid_v4(req->idem_owner)) {
		floe_err(&err, FE_UNAVAILABLE, "no randomness for an idempotency claim; retry");
		http_reply_error(req, &err);
		return false;
	}
	if (!route_of(req, route)) {
		floe_err(&err, FE_UNAVAILABLE,
			 "cannot hash the request for its Idempotency-Key; retry");
		http_reply_error(req, &err);
		return false;
	}
	if (!idem_claim(req->pool, key, route, req->idem_owner, KEEP_SECONDS,
			req->app->cfg->idempotency_lease_seconds, &claimed, &status, &response,
			&err)) {
		http_reply_error(req, &err);
		return false;
	}
	if (!claimed && status != 0) {
		replay(req, status, response);
		return false;
	}
	free(response);
	if (!claimed) {
		/* Not 409: a client reads that as "not committed" and may delete
		 * files the first attempt is about to commit. */
		floe_err(&err, FE_UNAVAILABLE,
			 "a request with Idempotency-Key %s is still running; retry later", key);
		http_reply_error(req, &err);
		return false;
	}
	req->capture = true;
	req->idem_claimed = true;
	return true;
}

void idempotent_finish(struct http_request *req)
{
	const char *key = http_header(req, "Idempotency-Key");

	if (!req->idem_claimed || key == NULL)
		return;
	req->idem_claimed = false;
	idem_settle(req->pool, key, req->idem_owner, req->status, req->captured, req->request_id);
}
