/*
 * handlers_oauth.c - floe as its own token issuer (docs/auth.md
 * "POST /v1/oauth/tokens"): OAuth2 client credentials and token exchange,
 * answered with a short-lived ES256 token, and the public keys that check
 * those tokens.
 *
 * 400 and 401 answers carry the OAuth2 error body of RFC 6749 section 5.2
 * (Java's and PyIceberg's clients read that one for those codes); 429 and
 * 503 the Iceberg error body. The check of a secret runs on the hashing
 * queue of its own, never on a request worker (an operator's secret is still
 * checked by scrypt: 32 MiB, about a tenth of a second); a full queue
 * answers 503 at once. Failures back off per client and address
 * (auth/guard.h).
 */
#include "auth_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "form.h"
#include "handlers.h"
#include "identity.h"
#include "jwt.h"
#include "log.h"
#include "scope.h"
#include "secret.h"
#include "system.h"

#define GRANT_CLIENT_CREDENTIALS "client_credentials"
#define GRANT_TOKEN_EXCHANGE "urn:ietf:params:oauth:grant-type:token-exchange"
#define TOKEN_TYPE_ACCESS "urn:ietf:params:oauth:token-type:access_token"
#define TOKEN_TYPE_JWT "urn:ietf:params:oauth:token-type:jwt"

/* The largest token request body read. */
#define OAUTH_BODY_MAX 8192

static void oauth_error(struct http_request *req, int status, const char *code, const char *desc)
{
	http_reply_json(req, status,
			json_pack("{s:s, s:s}", "error", code, "error_description", desc));
	http_add_header(req, "Cache-Control", "no-store");
	http_add_header(req, "Pragma", "no-cache");
	if (status == 401)
		http_add_header(req, "WWW-Authenticate", "Basic realm=\"floe\"");
}

/* Copies len bytes of in into out; false when 256 bytes or longer.
 * RFC 6749 section 2.3.1 has clients form-encode the two parts first,
 * but Iceberg's Java client, PyIceberg and curl -u send them as they
 * are, so they are read as they are. */
static bool credential_part(const char *in, size_t len, char out[256])
{
	if (len >= 256)
		return false;
	memcpy(out, in, len);
	out[len] = '\0';
	return true;
}

bool auth_basic_credentials(struct http_request *req, char id[256], char secret[256], bool *present)
{
	const char *h = http_header(req, "Authorization");
	unsigned char decoded[800];
	size_t len;
	int n;

	*present = h != NULL && strncasecmp(h, "Basic ", 6) == 0;
	if (!*present)
		return false;
	h += 6;
	while (*h == ' ')
		h++;
	len = strlen(h);
	while (len > 0 && h[len - 1] == ' ')
		len--;
	if (len == 0 || len % 4 != 0 || len / 4 * 3 >= sizeof(decoded))
		return false;
	n = EVP_DecodeBlock(decoded, (const unsigned char *)h, (int)len);
	if (n < 0)
		return false;
	/* EVP_DecodeBlock counts the padding's bytes too. */
	if (h[len - 1] == '=')
		n--;
	if (h[len - 2] == '=')
		n--;
	decoded[n] = '\0';
	const char *colon = memchr(decoded, ':', (size_t)n);
	bool ok = colon != NULL && memchr(decoded, '\0', (size_t)n) == NULL &&
		  credential_part((const char *)decoded, (size_t)(colon - (const char *)decoded),
				  id) &&
		  credential_part(colon + 1,
				  (size_t)n - (size_t)(colon + 1 - (const char *)decoded), secret);
	OPENSSL_cleanse(decoded, sizeof(decoded));
	return ok;
}

/* One token request on the hashing queue. */
struct token_job {
	struct http_request *req;
	bool exchange;
	char client_id[256];
	char secret[256];
	bool have_secret;
	char scope[AUTH_SCOPE_MAX + 1];
	char subject_sub[256]; /* the exchanged token's principal */
	char subject_scope[AUTH_SCOPE_MAX + 1];
	char subject_client[256];
	long long subject_epoch; /* the exchanged token's epoch */
	char addr[64];           /* the client's address, for the guard */
};

static void token_job_free(struct token_job *job)
{
	OPENSSL_cleanse(job->secret, sizeof(job->secret));
	free(job);
}

/* The 200 answer of RFC 6749 section 5.1 and RFC 8693 section 2.2.1. */
static void answer_token(struct http_request *req, struct auth *a,
			 const struct tokencache_entry *who, long long epoch, const char *scope)
{
	struct floe_error err;
	char *token = auth_issue(a, who, epoch, scope, auth_now(), &err);

	if (token == NULL) {
		http_reply_error(req, &err);
		return;
	}
	http_reply_json(req, 200,
			json_pack("{s:s, s:s, s:I, s:s, s:s}", "access_token", token, "token_type",
				  "bearer", "expires_in", (json_int_t)a->cfg->token_ttl_seconds,
				  "issued_token_type", TOKEN_TYPE_ACCESS, "scope",
				  scope[0] != '\0' ? scope : "catalog"));
	http_add_header(req, "Cache-Control", "no-store");
	http_add_header(req, "Pragma", "no-cache");
	OPENSSL_cleanse(token, strlen(token));
	free(token);
}

/* A random secret still under scrypt, just proved: stores its keyed hash
 * instead, so that its next grants cost microseconds. A failure only
 * leaves the slow hash in place. */
static void upgrade_secret(struct store *s, const struct principal_row *row,
			   const struct secret_key *key, const char *secret, const char *rid)
{
	struct floe_error err;
	bool done = false;
	char *hash = secret_hash_keyed(key, secret, strlen(secret));

	floe_error_clear(&err);
	if (hash == NULL)
		return;
	if (!identity_upgrade_secret(s, row->id, row->secret_hash, hash, &done, &err))
		log_warn("auth", "the secret of %s stays under scrypt: %s rid=%s", row->name,
			 err.message, rid);
	else if (done)
		log_info("auth", "the secret of %s is now checked by its keyed hash rid=%s",
			 row->name, rid);
	free(hash);
}

static void token_job_run(void *arg, const struct floe_error *refused)
{
	struct token_job *job = arg;
	struct http_request *req = job->req;
	struct auth *a = req->app->auth;
	struct principal_row row;
	bool found = false;
	bool unavailable = false;
	struct floe_error err;
	struct tokencache_entry who;
	char why[FLOE_ERROR_MESSAGE_MAX] = "";
	const char *lookup = job->exchange && !job->have_secret ? NULL : job->client_id;

	memset(&row, 0, sizeof(row));
	floe_error_clear(&err);
	if (refused != NULL) {
		handler_refuse(req, refused);
		goto done;
	}
	req->pool = req->app->pool;
	struct store *s = system_acquire(req->pool, &err);
	if (s == NULL) {
		http_reply_error(req, &err);
		goto done;
	}
	bool looked = lookup != NULL ? identity_by_client(s, lookup, &row, &found, &err)
				     : identity_by_name(s, job->subject_sub, &row, &found, &err);
	if (!looked) {
		system_release(req->pool, s);
		http_reply_error(req, &err);
		goto done;
	}
	if (job->have_secret) {
		/* An unknown client or a disabled one spends the time a wrong
		 * secret of a floe client does, and is answered the same. */
		const char *stored = found && !row.disabled ? row.secret_hash : NULL;
		const struct secret_key *key = auth_secret_key(a);
		char other[SECRET_KEY_ID_LEN + 1] = "";
		bool rehash = false;
		enum secret_verdict verdict = secret_check(key, job->secret, strlen(job->secret),
							   stored, other, &rehash);
		if (verdict == SECRET_OTHER_KEY) {
			/* Not the client's failure: floe cannot decide. */
			system_release(req->pool, s);
			log_error(
				"auth",
				"the secret of client %s was hashed under key %s; this floe has key "
				"%s (derived from --hook-secrets-key): every floe of a catalog needs "
				"the same key file rid=%s",
				job->client_id, other, key != NULL ? key->id : "none",
				req->request_id);
			oauth_error(req, 401, "invalid_client", "Client authentication failed");
			goto done;
		}
		bool match = verdict == SECRET_MATCH;
		if (match && rehash)
			upgrade_secret(s, &row, key, job->secret, req->request_id);
		if (!match) {
			system_release(req->pool, s);
			guard_fail(a->guard, job->client_id, job->addr, auth_now());
			log_info("auth", "client authentication failed for %s from %s rid=%s",
				 job->client_id, job->addr, req->request_id);
			oauth_error(req, 401, "invalid_client", "Client authentication failed");
			goto done;
		}
		/* The client proved its secret: whatever follows, this pair and
		 * this address start afresh. */
		guard_succeed(a->guard, job->client_id, job->addr);
		if (job->exchange && strcmp(row.name, job->subject_sub) != 0) {
			system_release(req->pool, s);
			oauth_error(req, 400, "invalid_grant",
				    "The subject token is not this client's");
			goto done;
		}
	} else if (!found || row.disabled) {
		system_release(req->pool, s);
		oauth_error(req, 400, "invalid_grant",
			    "The subject token's principal cannot be used");
		goto done;
	} else if (job->subject_epoch != row.token_epoch) {
		/* Without the new secret, a token from before a rotation
		 * buys no newer one. */
		system_release(req->pool, s);
		oauth_error(req, 400, "invalid_grant",
			    "The subject token was issued before the principal's secret was "
			    "rotated: exchange it with the client's credentials");
		goto done;
	}
	if (!auth_principal_roles(s, &row, job->scope, &who, why, sizeof(why), &unavailable,
				  &err)) {
		system_release(req->pool, s);
		if (unavailable)
			http_reply_error(req, &err);
		else
			oauth_error(req, 400, "invalid_scope", why);
		goto done;
	}
	system_release(req->pool, s);
	answer_token(req, a, &who, row.token_epoch, job->scope);
	log_info("auth", "issued a token to %s rid=%s", row.name, req->request_id);
done:
	store_principal_row_clear(&row);
	token_job_free(job);
	http_async_complete(req);
}

/* The subject token of an exchange: floe's, signed by a key of floe's,
 * of floe's issuer and audience. valid tells whether it is also within
 * its time; an expired one can still be exchanged by its client's own
 * credentials. */
static bool subject_token(struct auth *a, const char *token, struct token_job *job, bool *valid,
			  char *why, size_t whylen)
{
	struct jwt *jwt = NULL;
	struct jwt_expect want = { .issuer = a->cfg->auth_issuer,
				   .audience = AUTH_AUDIENCE,
				   .leeway = a->cfg->auth_leeway_seconds };
	bool ok = false;

	*valid = false;
	enum jwt_status st = jwt_parse(token, strlen(token), &jwt);
	if (st != JWT_OK) {
		(void)snprintf(why, whylen, "%s", jwt_status_message(st));
		return false;
	}
	EVP_PKEY *key = jwt->kid != NULL ? keyring_find(a->keys, jwt->kid) : NULL;
	if (key == NULL) {
		(void)snprintf(why, whylen, "The subject token is not floe's");
		goto done;
	}
	st = jwt_verify(jwt, key);
	EVP_PKEY_free(key);
	if (st != JWT_OK) {
		(void)snprintf(why, whylen, "%s", jwt_status_message(st));
		goto done;
	}
	st = jwt_check_claims(jwt->claims, &want, auth_now());
	if (st != JWT_OK && st != JWT_EXPIRED) {
		(void)snprintf(why, whylen, "%s", jwt_status_message(st));
		goto done;
	}
	*valid = st == JWT_OK;
	const char *sub = json_string_value(json_object_get(jwt->claims, "sub"));
	const char *client = json_string_value(json_object_get(jwt->claims, "client_id"));
	const char *scope = json_string_value(json_object_get(jwt->claims, "scope"));
	if (sub == NULL || strlen(sub) >= sizeof(job->subject_sub)) {
		(void)snprintf(why, whylen, "The subject token names no principal");
		goto done;
	}
	(void)snprintf(job->subject_sub, sizeof(job->subject_sub), "%s", sub);
	job->subject_epoch = auth_token_epoch(jwt->claims);
	(void)snprintf(job->subject_client, sizeof(job->subject_client), "%s",
		       client != NULL ? client : "");
	/* floe issues no longer scope; a longer one is not a token of floe's. */
	if (scope != NULL && strlen(scope) >= sizeof(job->subject_scope)) {
		(void)snprintf(why, whylen, "The subject token's scope is too long");
		goto done;
	}
	(void)snprintf(job->subject_scope, sizeof(job->subject_scope), "%s",
		       scope != NULL ? scope : "");
	ok = true;
done:
	jwt_free(jwt);
	return ok;
}

void handle_oauth_tokens(struct call *c)
{
	struct http_request *req = c->req;
	struct auth *a = req->app->auth;
	const char *ctype = http_header(req, "Content-Type");
	struct form form = { 0 };
	char ferr[200];
	struct token_job *job = NULL;
	char basic_id[256] = "";
	char basic_secret[256] = "";
	bool basic = false;
	struct floe_error err;

	if (a == NULL || a->keys == NULL) {
		oauth_error(req, 400, "invalid_request",
			    "floe issues no tokens: authentication is off (--auth=none)");
		return;
	}
	if (ctype == NULL || strncasecmp(ctype, "application/x-www-form-urlencoded", 33) != 0) {
		oauth_error(req, 400, "invalid_request",
			    "The body must be application/x-www-form-urlencoded");
		return;
	}
	if (req->body_len > OAUTH_BODY_MAX) {
		oauth_error(req, 400, "invalid_request", "The request body is too large");
		return;
	}
	if (!form_parse(req->body != NULL ? req->body : "", req->body_len, &form, ferr,
			sizeof(ferr))) {
		oauth_error(req, 400, "invalid_request", ferr);
		return;
	}
	job = calloc(1, sizeof(*job));
	if (job == NULL) {
		floe_err(&err, FE_UNAVAILABLE, "out of memory; retry");
		http_reply_error(req, &err);
		goto done;
	}
	job->req = req;
	const char *grant = form_get(&form, "grant_type");
	const char *id = form_get(&form, "client_id");
	const char *secret = form_get(&form, "client_secret");
	const char *scope = form_get(&form, "scope");
	bool basic_ok = auth_basic_credentials(req, basic_id, basic_secret, &basic);

	if (grant == NULL || (strcmp(grant, GRANT_CLIENT_CREDENTIALS) != 0 &&
			      strcmp(grant, GRANT_TOKEN_EXCHANGE) != 0)) {
		oauth_error(req, 400, "unsupported_grant_type",
			    grant == NULL ? "grant_type is required"
					  : "grant_type must be client_credentials or "
					    "urn:ietf:params:oauth:grant-type:token-exchange");
		goto done;
	}
	if (basic && !basic_ok) {
		oauth_error(req, 400, "invalid_request", "The Basic credentials are malformed");
		goto done;
	}
	if (basic && id != NULL && strcmp(id, basic_id) != 0) {
		oauth_error(req, 400, "invalid_request",
			    "The Basic credentials and client_id name different clients");
		goto done;
	}
	if (basic) {
		id = basic_id;
		secret = basic_secret;
	}
	if (scope != NULL && strlen(scope) > AUTH_SCOPE_MAX) {
		oauth_error(req, 400, "invalid_scope", "The scope is too long");
		goto done;
	}
	(void)snprintf(job->scope, sizeof(job->scope), "%s", scope != NULL ? scope : "");
	job->exchange = strcmp(grant, GRANT_TOKEN_EXCHANGE) == 0;
	if (job->exchange) {
		const char *subject = form_get(&form, "subject_token");
		const char *type = form_get(&form, "subject_token_type");
		char why[FLOE_ERROR_MESSAGE_MAX];
		bool valid = false;
		if (form_get(&form, "actor_token") != NULL) {
			oauth_error(req, 400, "invalid_request", "actor_token is not supported");
			goto done;
		}
		if (subject == NULL || type == NULL ||
		    (strcmp(type, TOKEN_TYPE_ACCESS) != 0 && strcmp(type, TOKEN_TYPE_JWT) != 0)) {
			oauth_error(req, 400, "invalid_request",
				    "subject_token and a subject_token_type of access_token or jwt "
				    "are required");
			goto done;
		}
		if (!subject_token(a, subject, job, &valid, why, sizeof(why))) {
			oauth_error(req, 400, "invalid_grant", why);
			goto done;
		}
		if (!valid && (id == NULL || secret == NULL)) {
			oauth_error(req, 400, "invalid_grant",
				    "The subject token has expired: exchange it with the client's "
				    "credentials");
			goto done;
		}
		if (id != NULL && job->subject_client[0] != '\0' &&
		    strcmp(id, job->subject_client) != 0) {
			oauth_error(req, 400, "invalid_grant",
				    "The subject token is not this client's");
			goto done;
		}
		/* The new token carries no more than the subject token, whatever
		 * the credentials sent beside it: a client that wants more
		 * asks by client credentials. */
		char narrowed[AUTH_SCOPE_MAX + 1];
		if (!scope_exchange(job->subject_scope, scope, narrowed, sizeof(narrowed), why,
				    sizeof(why))) {
			oauth_error(req, 400, "invalid_scope", why);
			goto done;
		}
		(void)snprintf(job->scope, sizeof(job->scope), "%s", narrowed);
	} else if (id == NULL || secret == NULL) {
		oauth_error(req, 400, "invalid_request",
			    "client_id and client_secret are required");
		goto done;
	}
	if (id != NULL && secret != NULL) {
		if (strlen(id) >= sizeof(job->client_id) || strlen(secret) >= sizeof(job->secret)) {
			oauth_error(req, 401, "invalid_client", "Client authentication failed");
			goto done;
		}
		(void)snprintf(job->client_id, sizeof(job->client_id), "%s", id);
		(void)snprintf(job->secret, sizeof(job->secret), "%s", secret);
		job->have_secret = true;
		/* An address that cannot be read is one address: "". */
		(void)http_client_address(req, job->addr, sizeof(job->addr));
		long long wait = guard_wait(a->guard, job->client_id, job->addr, auth_now());
		if (wait > 0) {
			char retry[24];
			floe_err(&err, FE_TOO_MANY_REQUESTS,
				 "Too many failed authentications; retry in %lld s", wait);
			http_reply_error(req, &err);
			(void)snprintf(retry, sizeof(retry), "%lld", wait);
			http_add_header(req, "Retry-After", retry);
			goto done;
		}
	}
	handler_defer_to(req, a->hashes, req->app->pool, token_job_run, job);
	job = NULL;
done:
	if (job != NULL)
		token_job_free(job);
	OPENSSL_cleanse(basic_secret, sizeof(basic_secret));
	form_free(&form);
}

void handle_oauth_jwks(struct call *c)
{
	struct http_request *req = c->req;
	struct auth *a = req->app->auth;
	struct floe_error err;

	/* With authentication off floe signs nothing: an empty key set. */
	json_t *jwks = a == NULL || a->keys == NULL ? json_pack("{s:[]}", "keys")
						    : keyring_jwks(a->keys);
	if (jwks == NULL) {
		floe_err(&err, FE_UNAVAILABLE, "out of memory; retry");
		http_reply_error(req, &err);
		return;
	}
	http_reply_json(req, 200, jwks);
	http_add_header(req, "Cache-Control", "max-age=60");
}
