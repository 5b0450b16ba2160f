/*
 * auth.c - the bearer token of every request, checked before its handler
 * runs (docs/auth.md "Answers on the other routes").
 *
 * A token is looked up in the cache of verified tokens first, so most
 * requests cost one SHA-256 and a hash lookup. On a miss: floe's own
 * tokens (a "kid" of floe's keyring) are verified with that key, and
 * their principal must exist and not be disabled; any other token goes
 * to the external issuer when one is configured. A cached entry lives
 * at most AUTH_RECHECK_SECONDS, so a principal disabled through another
 * floe of the same catalog stops being let in within that time.
 */
#include "auth_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <openssl/rand.h>

#include "authwatch.h"
#include "authzcache.h"
#include "b64url.h"
#include "handlers.h"
#include "identity.h"
#include "jwt.h"
#include "log.h"
#include "principals.h"
#include "router.h"
#include "scope.h"
#include "secret.h"
#include "system.h"

/* How long a verified token is let in without looking at its principal
 * again. */
#define AUTH_RECHECK_SECONDS 30

/* Token endpoint checks running or waiting at once (32 MiB each while
 * running). */
#define AUTH_HASH_THREADS 2
#define AUTH_HASH_QUEUE 64

/* Entries of the verified-token cache. */
#define AUTH_CACHE_ENTRIES 10000
/* Kept decisions (authzcache.h): about 3 MB; an entry lives at most as
 * long as a verified token's entry. */
#define AUTH_DECISION_SLOTS 8192
#define AUTH_DECISION_TTL_MS 30000

long long auth_token_epoch(const json_t *claims)
{
	const json_t *epoch = json_object_get(claims, "epoch");

	return json_is_integer(epoch) ? (long long)json_integer_value(epoch) : 0;
}

long long auth_now(void)
{
	return (long long)time(NULL);
}

struct auth *auth_new(const struct floe_config *cfg, struct floe_error *err)
{
	struct auth *a = calloc(1, sizeof(*a));
	char dir[4096];

	if (a == NULL) {
		floe_err(err, FE_INTERNAL, "out of memory");
		return NULL;
	}
	a->cfg = cfg;
	if (cfg->auth_none)
		return a;
	/* The data directory itself is made here when no embedded
	 * PostgreSQL made it. */
	if (mkdir(cfg->data_dir, 0700) != 0 && errno != EEXIST) {
		floe_err(err, FE_INTERNAL, "cannot make %s: %s", cfg->data_dir,
			 log_strerror(errno));
		goto fail;
	}
	(void)snprintf(dir, sizeof(dir), "%s/auth", cfg->data_dir);
	if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
		floe_err(err, FE_INTERNAL, "cannot make %s: %s", dir, log_strerror(errno));
		goto fail;
	}
	(void)snprintf(dir, sizeof(dir), "%s/auth/signing", cfg->data_dir);
	/* An older key verifies for as long as a token it signed may live,
	 * plus the minute a floe may take to reread the directory and stop
	 * signing with it. */
	a->keys = keyring_open(dir, cfg->token_ttl_seconds + cfg->auth_leeway_seconds + 60, err);
	if (a->keys == NULL)
		goto fail;
	a->cache = tokencache_new(AUTH_CACHE_ENTRIES);
	a->decisions = authz_cache_new(AUTH_DECISION_SLOTS, AUTH_DECISION_TTL_MS);
	a->guard = guard_new();
	a->hashes = workq_start("auth", AUTH_HASH_THREADS, AUTH_HASH_QUEUE);
	if (a->cache == NULL || a->decisions == NULL || a->guard == NULL || a->hashes == NULL) {
		floe_err(err, FE_INTERNAL, "out of memory");
		goto fail;
	}
	if (cfg->oidc_issuer != NULL) {
		struct oidc_config oc = {
			.issuer = cfg->oidc_issuer,
			.audience = cfg->oidc_audience,
			.principal_claim = cfg->oidc_principal_claim,
			.roles_claim = cfg->oidc_roles_claim,
			.leeway = cfg->auth_leeway_seconds,
			.timeout_ms = 5000,
		};
		a->oidc = oidc_new(&oc, err);
		if (a->oidc == NULL)
			goto fail;
	}
	return a;
fail:
	auth_free(a);
	return NULL;
}

void auth_use_secret_key(struct auth *a, const struct secret_key *k)
{
	a->secret_key = *k;
	a->have_secret_key = true;
}

const struct secret_key *auth_secret_key(const struct auth *a)
{
	return a != NULL && a->have_secret_key ? &a->secret_key : NULL;
}

static void forget_tokens(void *arg)
{
	tokencache_clear(arg);
}

bool auth_watch_start(struct auth *a, const char *conninfo, struct vend *vended,
		      struct floe_error *err)
{
	if (a == NULL || a->decisions == NULL)
		return true; /* authentication is off: nothing is kept */
	struct authwatch_config wc = {
		.conninfo = conninfo,
		.decisions = a->decisions,
		.vended = vended,
		.forget_tokens = forget_tokens,
		.arg = a->cache,
	};
	a->watch = authwatch_start(&wc, err);
	return a->watch != NULL;
}

void auth_free(struct auth *a)
{
	if (a == NULL)
		return;
	authwatch_stop(&a->watch);
	workq_stop(&a->hashes);
	secret_key_clear(&a->secret_key);
	authz_cache_free(a->decisions);
	oidc_free(a->oidc);
	guard_free(a->guard);
	tokencache_free(a->cache);
	keyring_close(a->keys);
	free(a);
}

const char *auth_external_token_endpoint(struct http_request *req)
{
	struct auth *a = req->app->auth;

	if (a == NULL || a->oidc == NULL || req->principal == NULL || !req->who.external)
		return NULL;
	return oidc_token_endpoint(a->oidc);
}

void auth_reload_keys(struct auth *a)
{
	struct floe_error err;

	if (a == NULL || a->keys == NULL)
		return;
	if (!keyring_reload(a->keys, auth_now(), &err))
		log_warn("auth", "signing keys not reread: %s", err.message);
}

/* --- the first start --- */

/* Writes "id:secret\n" to path's temporary twin, mode 0600, fsynced. */
static bool credential_write(const char *tmp, const char *id, const char *secret,
			     struct floe_error *err)
{
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	char line[600];
	int n = snprintf(line, sizeof(line), "%s:%s\n", id, secret);
	bool ok;

	if (fd < 0)
		return floe_err(err, FE_INTERNAL, "cannot write %s: %s", tmp, log_strerror(errno));
	ok = n > 0 && (size_t)n < sizeof(line) && write(fd, line, (size_t)n) == n &&
	     fchmod(fd, 0600) == 0 && fsync(fd) == 0;
	if (close(fd) != 0)
		ok = false;
	if (!ok) {
		(void)unlink(tmp);
		return floe_err(err, FE_INTERNAL, "cannot write %s", tmp);
	}
	return true;
}

bool auth_bootstrap(struct auth *a, struct store *s, struct floe_error *err)
{
	const struct floe_config *cfg = a->cfg;
	char id[256] = "admin";
	char secret[256];
	char path[4096];
	char tmp[4200];
	long long n = 0;
	bool created = false;
	bool generated = cfg->admin_credential == NULL;
	char *hash = NULL;

	if (cfg->auth_none)
		return true;
	if (!identity_count(s, &n, err))
		return false;
	if (n > 0)
		return true;
	if (generated) {
		if (!secret_random(secret))
			return floe_err(err, FE_INTERNAL, "no randomness for the admin secret");
	} else {
		const char *colon = strchr(cfg->admin_credential, ':');
		(void)snprintf(id, sizeof(id), "%.*s", (int)(colon - cfg->admin_credential),
			       cfg->admin_credential);
		(void)snprintf(secret, sizeof(secret), "%s", colon + 1);
	}
	/* A generated secret is random: the keyed hash. One given by the
	 * operator may be anything: scrypt, unless it has the generated
	 * shape. */
	hash = secret_hash_for(auth_secret_key(a), secret, strlen(secret));
	if (hash == NULL) {
		OPENSSL_cleanse(secret, sizeof(secret));
		return floe_err(err, FE_INTERNAL, "cannot hash the admin secret");
	}
	(void)snprintf(path, sizeof(path), "%s/auth/admin-credential", cfg->data_dir);
	(void)snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	/* The file first, so that no admin exists whose secret is nowhere. */
	if (generated && !credential_write(tmp, id, secret, err))
		goto fail;
	if (!principals_bootstrap(s, "admin", id, hash, &created, err)) {
		if (generated)
			(void)unlink(tmp);
		goto fail;
	}
	if (!generated) {
		if (created)
			log_info("auth", "made the admin client %s from --admin-credential", id);
	} else if (!created) {
		(void)unlink(tmp); /* another floe of this catalog made it first */
	} else if (rename(tmp, path) != 0) {
		log_error("auth",
			  "made the admin client but could not write its credential to %s: %s; "
			  "start floe again on an empty catalog to make another",
			  path, log_strerror(errno));
	} else {
		log_warn("auth",
			 "made the admin client %s; its credential is in %s (CLIENT_ID:SECRET). "
			 "Get a token with: curl -d grant_type=client_credentials -d client_id=%s "
			 "--data-urlencode client_secret=\"$(cut -d: -f2- %s)\" "
			 "http://HOST:PORT/v1/oauth/tokens",
			 id, path, id, path);
	}
	OPENSSL_cleanse(secret, sizeof(secret));
	free(hash);
	return true;
fail:
	OPENSSL_cleanse(secret, sizeof(secret));
	free(hash);
	return false;
}

/* --- principals and their roles --- */

bool auth_principal_roles(struct store *s, const struct principal_row *row, const char *scope,
			  struct tokencache_entry *who, char *why, size_t whylen, bool *unavailable,
			  struct floe_error *err)
{
	long long *ids = NULL;
	char **names = NULL;
	size_t n = 0;
	bool ok = false;

	*unavailable = false;
	memset(who, 0, sizeof(*who));
	who->principal_id = row->id;
	(void)snprintf(who->principal_name, sizeof(who->principal_name), "%s", row->name);
	if (row->client_id != NULL)
		(void)snprintf(who->client_id, sizeof(who->client_id), "%s", row->client_id);
	/* "catalog" asks for every role, as does a scope without any
	 * "role:NAME"; other words (clients' defaults such as DuckDB's
	 * PRINCIPAL_ROLE:ALL) are ignored, as RFC 6749 section 3.3 allows:
	 * they narrow nothing. */
	bool all = !scope_narrows(scope);
	if (!identity_roles(s, row->id, &ids, &names, &n, err)) {
		*unavailable = true;
		return false;
	}
	for (size_t i = 0; i < n; i++) {
		char tok[300];
		int tl = snprintf(tok, sizeof(tok), "role:%s", names[i]);
		if (!all &&
		    !(tl > 0 && (size_t)tl < sizeof(tok) && scope_has(scope, tok, (size_t)tl)))
			continue;
		if (who->nroles >= TOKENCACHE_MAX_ROLES) {
			(void)snprintf(why, whylen, "Principal %s holds more than %d roles",
				       row->name, TOKENCACHE_MAX_ROLES);
			goto done;
		}
		who->roles[who->nroles++] = ids[i];
	}
	/* A role asked for and not held is refused, not dropped. */
	for (const char *p = scope != NULL ? scope : ""; *p != '\0';) {
		while (*p == ' ')
			p++;
		size_t len = strcspn(p, " ");
		if (len > 5 && strncmp(p, "role:", 5) == 0) {
			bool held = false;
			for (size_t i = 0; i < n && !held; i++)
				held = strlen(names[i]) == len - 5 &&
				       strncmp(names[i], p + 5, len - 5) == 0;
			if (!held) {
				(void)snprintf(why, whylen, "Principal %s does not hold role %.*s",
					       row->name, (int)(len - 5), p + 5);
				goto done;
			}
		}
		p += len;
	}
	ok = true;
done:
	identity_roles_free(ids, names, n);
	return ok;
}

char *auth_issue(struct auth *a, const struct tokencache_entry *who, long long epoch,
		 const char *scope, long long now, struct floe_error *err)
{
	unsigned char jti[16];
	char *jti_text = NULL;
	json_t *claims = NULL;
	char *token = NULL;

	if (RAND_bytes(jti, sizeof(jti)) != 1 ||
	    (jti_text = b64url_encode(jti, sizeof(jti))) == NULL) {
		floe_err(err, FE_UNAVAILABLE, "no randomness for a token; retry");
		return NULL;
	}
	claims = json_pack("{s:s, s:s, s:s, s:I, s:I, s:I, s:s, s:s}", "iss", a->cfg->auth_issuer,
			   "sub", who->principal_name, "aud", AUTH_AUDIENCE, "iat", (json_int_t)now,
			   "nbf", (json_int_t)now, "exp",
			   (json_int_t)(now + a->cfg->token_ttl_seconds), "jti", jti_text, "scope",
			   scope != NULL && scope[0] != '\0' ? scope : "catalog");
	/* Epoch 0 is no claim: the tokens before migration 0012 had none. */
	if (claims != NULL && epoch != 0 &&
	    json_object_set_new(claims, "epoch", json_integer((json_int_t)epoch)) != 0) {
		json_decref(claims);
		claims = NULL;
	}
	if (claims != NULL && who->client_id[0] != '\0' &&
	    json_object_set_new(claims, "client_id", json_string(who->client_id)) != 0) {
		json_decref(claims);
		claims = NULL;
	}
	if (claims == NULL)
		floe_err(err, FE_INTERNAL, "out of memory");
	else
		token = keyring_sign(a->keys, claims, err);
	json_decref(claims);
	free(jti_text);
	return token;
}

/* --- the check on every request --- */

enum verdict { V_OK, V_REFUSED, V_UNAVAILABLE };

/* Whether route asks for no token: its row says public, or public when
 * --auth-public names it. */
static bool route_is_public(const struct floe_config *cfg, const struct route *route)
{
	switch (route->access) {
	case ROUTE_PUBLIC:
		return true;
	case ROUTE_PUBLIC_IF:
		return (cfg->auth_public & route->public_bit) != 0;
	case ROUTE_PRINCIPAL:
	case ROUTE_PRIVILEGED:
		break;
	}
	return false;
}

/* A floe token whose signature verified: its claims and its principal. */
static enum verdict floe_token(struct auth *a, struct http_request *req, const struct jwt *jwt,
			       long long now, struct tokencache_entry *who, char *why,
			       size_t whylen, struct floe_error *err)
{
	struct jwt_expect want = { .issuer = a->cfg->auth_issuer,
				   .audience = AUTH_AUDIENCE,
				   .leeway = a->cfg->auth_leeway_seconds };
	enum jwt_status st = jwt_check_claims(jwt->claims, &want, now);
	const char *sub = json_string_value(json_object_get(jwt->claims, "sub"));
	const char *scope = json_string_value(json_object_get(jwt->claims, "scope"));
	struct principal_row row;
	bool found = false;
	bool unavailable = false;
	enum verdict v = V_REFUSED;

	if (st != JWT_OK) {
		(void)snprintf(why, whylen, "%s", jwt_status_message(st));
		return V_REFUSED;
	}
	if (sub == NULL) {
		(void)snprintf(why, whylen, "Token names no principal");
		return V_REFUSED;
	}
	memset(&row, 0, sizeof(row));
	struct store *s = system_acquire(req->pool, err);
	if (s == NULL)
		return V_UNAVAILABLE;
	if (!identity_by_name(s, sub, &row, &found, err)) {
		v = V_UNAVAILABLE;
	} else if (!found || row.disabled) {
		(void)snprintf(why, whylen, "%s",
			       found ? "Principal is disabled" : "Principal does not exist");
	} else if (auth_token_epoch(jwt->claims) != row.token_epoch) {
		(void)snprintf(why, whylen,
			       "Token was issued before the principal's secret was rotated or the "
			       "principal was disabled");
	} else if (!auth_principal_roles(s, &row, scope, who, why, whylen, &unavailable, err)) {
		v = unavailable ? V_UNAVAILABLE : V_REFUSED;
	} else {
		long long exp = (long long)json_integer_value(json_object_get(jwt->claims, "exp")) +
				a->cfg->auth_leeway_seconds;
		who->exp = exp < now + AUTH_RECHECK_SECONDS ? exp : now + AUTH_RECHECK_SECONDS;
		v = V_OK;
	}
	system_release(req->pool, s);
	store_principal_row_clear(&row);
	return v;
}

/* An external issuer's token: verified by the issuer's key set, its
 * principal made on first sight, its roles the floe roles it holds plus
 * those its roles claim names. */
static enum verdict issuer_token(struct auth *a, struct http_request *req, const char *token,
				 size_t len, long long now, struct tokencache_entry *who, char *why,
				 size_t whylen, struct floe_error *err)
{
	json_t *claims = NULL;
	char name[256];
	char **roles = NULL;
	size_t nroles = 0;
	struct principal_row row;
	bool unavailable = false;
	enum verdict v = V_REFUSED;
	struct floe_error ierr;

	floe_error_clear(&ierr);
	memset(&row, 0, sizeof(row));
	enum jwt_status st = oidc_verify(a->oidc, token, len, now, &claims, &ierr);
	if (st == JWT_OK && claims == NULL && ierr.kind == FE_UNAVAILABLE) {
		/* The issuer's keys could not be fetched: neither yes nor no,
		 * so neither an answer as if refused nor a pass; 503. */
		log_warn("auth", "cannot decide on an issuer token: %s rid=%s", ierr.message,
			 req->request_id);
		*err = ierr;
		v = V_UNAVAILABLE;
		goto done;
	}
	if (st != JWT_OK || claims == NULL) {
		(void)snprintf(why, whylen, "%s",
			       st != JWT_OK ? jwt_status_message(st) : ierr.message);
		goto done;
	}
	if (!oidc_principal(a->oidc, claims, name, sizeof(name), &roles, &nroles, &ierr)) {
		(void)snprintf(why, whylen, "%s", ierr.message);
		goto done;
	}
	struct store *s = system_acquire(req->pool, err);
	if (s == NULL) {
		v = V_UNAVAILABLE;
		goto done;
	}
	if (!identity_external(s, name, &row, err)) {
		if (err->kind == FE_NOT_AUTHORIZED)
			(void)snprintf(why, whylen, "%s", err->message);
		else
			v = V_UNAVAILABLE;
	} else if (row.disabled) {
		(void)snprintf(why, whylen, "Principal is disabled");
	} else if (!auth_principal_roles(s, &row, "catalog", who, why, whylen, &unavailable, err)) {
		v = unavailable ? V_UNAVAILABLE : V_REFUSED;
	} else {
		/* The roles the issuer names, where floe has a role of that
		 * name that the issuer may grant (an issuer names roles; it
		 * does not make them, and never grants ADMIN). */
		char left_out[512];
		who->external = true;
		if (!identity_add_roles(s, (const char *const *)roles, nroles, who->roles,
					&who->nroles, TOKENCACHE_MAX_ROLES, left_out,
					sizeof(left_out), err)) {
			system_release(req->pool, s);
			v = V_UNAVAILABLE;
			goto done;
		}
		if (left_out[0] != '\0')
			log_info(
				"auth",
				"the issuer's token for %s names roles it may not grant, left out: "
				"%s (no such role, not issuer-grantable, or holding ADMIN) rid=%s",
				name, left_out, req->request_id);
		long long exp = (long long)json_integer_value(json_object_get(claims, "exp")) +
				a->cfg->auth_leeway_seconds;
		who->exp = exp < now + AUTH_RECHECK_SECONDS ? exp : now + AUTH_RECHECK_SECONDS;
		v = V_OK;
	}
	system_release(req->pool, s);
done:
	store_principal_row_clear(&row);
	for (size_t i = 0; i < nroles; i++)
		free(roles[i]);
	free(roles);
	json_decref(claims);
	return v;
}

static enum verdict verify(struct auth *a, struct http_request *req, const char *token, size_t len,
			   struct tokencache_entry *who, char *why, size_t whylen,
			   struct floe_error *err)
{
	long long now = auth_now();
	struct jwt *jwt = NULL;
	enum verdict v = V_REFUSED;

	if (tokencache_get(a->cache, token, len, now, who))
		return V_OK;
	enum jwt_status st = jwt_parse(token, len, &jwt);
	if (st != JWT_OK) {
		(void)snprintf(why, whylen, "%s", jwt_status_message(st));
		return V_REFUSED;
	}
	EVP_PKEY *key = jwt->kid != NULL ? keyring_find(a->keys, jwt->kid) : NULL;
	if (key != NULL) {
		st = jwt_verify(jwt, key);
		EVP_PKEY_free(key);
		if (st != JWT_OK)
			(void)snprintf(why, whylen, "%s", jwt_status_message(st));
		else
			v = floe_token(a, req, jwt, now, who, why, whylen, err);
	} else if (a->oidc != NULL) {
		v = issuer_token(a, req, token, len, now, who, why, whylen, err);
	} else {
		(void)snprintf(why, whylen, "Token is signed by a key floe does not know");
	}
	jwt_free(jwt);
	if (v == V_OK)
		tokencache_put(a->cache, token, len, who);
	return v;
}

/* 401 with the challenge of RFC 6750 section 3: with error="invalid_token"
 * when a token was sent. */
static void refuse(struct http_request *req, const char *why, bool token_sent)
{
	struct floe_error err;
	char challenge[400];
	char desc[200];
	size_t j = 0;

	floe_err(&err, FE_NOT_AUTHORIZED, "%s", why);
	http_reply_error(req, &err);
	if (!token_sent) {
		http_add_header(req, "WWW-Authenticate", "Bearer realm=\"floe\"");
		return;
	}
	/* A quoted-string holds no '"' or '\\'. */
	for (const char *p = why; *p != '\0' && j + 1 < sizeof(desc); p++) {
		char c = *p;
		if (c == '"' || c == '\\')
			c = '\'';
		desc[j++] = c;
	}
	desc[j] = '\0';
	(void)snprintf(challenge, sizeof(challenge),
		       "Bearer realm=\"floe\", error=\"invalid_token\", error_description=\"%s\"",
		       desc);
	http_add_header(req, "WWW-Authenticate", challenge);
}

bool auth_admits_all(const struct http_request *req, const struct route *route)
{
	const struct auth *a = req->app->auth;

	return a == NULL || a->cfg->auth_none || route_is_public(a->cfg, route);
}

bool auth_admit(struct http_request *req, const struct route *route)
{
	struct auth *a = req->app->auth;
	const char *h;
	char why[FLOE_ERROR_MESSAGE_MAX] = "";
	struct floe_error err;

	if (auth_admits_all(req, route))
		return true;
	floe_error_clear(&err);
	h = http_header(req, "Authorization");
	if (h == NULL) {
		refuse(req, "Authentication required: send a bearer token in Authorization", false);
		return false;
	}
	while (*h == ' ')
		h++;
	if (strncasecmp(h, "Bearer ", 7) != 0) {
		refuse(req, "Authorization is not a bearer token", false);
		return false;
	}
	h += 7;
	while (*h == ' ')
		h++;
	size_t len = strlen(h);
	while (len > 0 && h[len - 1] == ' ')
		len--;
	switch (verify(a, req, h, len, &req->who, why, sizeof(why), &err)) {
	case V_OK:
		req->principal = req->who.principal_name;
		req->client_id = req->who.client_id[0] != '\0' ? req->who.client_id : NULL;
		for (size_t i = 0; i < req->who.nroles; i++)
			req->acting_roles[i] = (long long)req->who.roles[i];
		req->acting = (struct principal){
			.id = (long long)req->who.principal_id,
			.name = req->principal,
			.client_id = req->client_id,
			.roles = req->acting_roles,
			.nroles = req->who.nroles,
			.cache = a->decisions,
		};
		log_set_principal(req->principal);
		return true;
	case V_UNAVAILABLE:
		http_reply_error(req, &err);
		return false;
	case V_REFUSED:
		break;
	}
	log_info("auth", "refused a token: %s rid=%s", why, req->request_id);
	refuse(req, why, true);
	return false;
}
