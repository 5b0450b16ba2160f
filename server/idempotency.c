/*
 * idempotency.c - claims a key before the handler runs and records the
 * answer after it. The claim borrows a connection of its own for a moment
 * (catalog/idem.c), so the gate holds none while it asks.
 */
#include "idempotency.h"

#include <stdlib.h>
#include <string.h>

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

/* What a key is bound to: the method, path and body hash of req, and its
 * principal. */
static void request_route(const struct http_request *req, char *route, size_t len)
{
	/* The same key with another body is another request: refused. */
	unsigned long long h = 1469598103934665603ULL;
	for (size_t i = 0; i < req->body_len; i++) {
		h ^= (unsigned char)req->body[i];
		h *= 1099511628211ULL;
	}
	/* A key is one principal's: another's request under it is another
	 * request, never the first one's answer replayed. */
	(void)snprintf(route, len, "%s %s #%016llx %s", req->method, req->path, h,
		       req->principal != NULL ? req->principal : "");
}

bool idempotent_replayed(struct http_request *req)
{
	const char *key = http_header(req, "Idempotency-Key");
	struct floe_error err;
	char route[1024];
	int status = 0;
	char *response = NULL;

	floe_error_clear(&err);
	if (key == NULL || !key_is_uuid(key))
		return false;
	request_route(req, route, sizeof(route));
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
	char route[1024];
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
	request_route(req, route, sizeof(route));
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
