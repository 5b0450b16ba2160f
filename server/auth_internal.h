/*
 * auth_internal.h - what server/auth.c and server/handlers_oauth.c share:
 * the authentication state and the steps both take (a principal's roles
 * for a scope, a token signed for it). Not for other files.
 */
#ifndef FLOE_AUTH_INTERNAL_H
#define FLOE_AUTH_INTERNAL_H

#include <stdbool.h>
#include <jansson.h>

#include "auth.h"
#include "guard.h"
#include "keys.h"
#include "oidc.h"
#include "secret.h"
#include "tokencache.h"
#include "workq.h"

struct authwatch;
struct authz_cache;
struct principal_row;

struct auth {
	const struct floe_config *cfg;
	struct keyring *keys;          /* floe's signing keys; NULL with --auth=none */
	struct tokencache *cache;      /* verified tokens */
	struct guard *guard;           /* failed client authentications */
	struct oidc *oidc;             /* the external issuer; NULL: none */
	struct workq *hashes;          /* runs the scrypt checks of the token endpoint */
	struct authz_cache *decisions; /* kept decisions of authorization */
	struct authwatch *watch;       /* hears changes (catalog/authwatch.c); NULL: not started */
	struct secret_key secret_key;  /* keys floe's client secrets' hashes */
	bool have_secret_key;          /* set by auth_use_secret_key */
};

/* The key of the client secrets' keyed hashes, or NULL when none was
 * given (every secret is then hashed and checked by scrypt). */
const struct secret_key *auth_secret_key(const struct auth *a);

/* The longest scope a token request may ask for. */
#define AUTH_SCOPE_MAX 1024

/*
 * Fills who with the principal of row and the roles scope grants it:
 * "catalog" (or no scope) all the roles it holds, "role:NAME" only that
 * one. false with why set (an invalid_scope for the token endpoint) when
 * scope names something else or a role the principal does not hold;
 * false with err set on a store failure (*unavailable true).
 */
bool auth_principal_roles(struct store *s, const struct principal_row *row, const char *scope,
			  struct tokencache_entry *who, char *why, size_t whylen, bool *unavailable,
			  struct floe_error *err) FLOE_WUR;

/* A token of floe's for who (its principal and client id) and scope, of
 * the principal's token epoch, valid from now for --token-ttl-seconds; a
 * new string, or NULL. */
char *auth_issue(struct auth *a, const struct tokencache_entry *who, long long epoch,
		 const char *scope, long long now, struct floe_error *err) FLOE_WUR;

/* Reads "Authorization: Basic base64(id:secret)" into id and secret
 * (each at most 255 bytes, taken as they are: the clients floe serves do
 * not form-encode them). false when the header is absent (*present
 * false) or malformed. */
bool auth_basic_credentials(struct http_request *req, char id[256], char secret[256],
			    bool *present);

/* The principal's token epoch a token of floe's carries (its "epoch"
 * claim; 0 when it has none). A token whose epoch is not its principal's
 * token_epoch was issued before a secret rotation or a disable. */
long long auth_token_epoch(const json_t *claims);

/* The time now, in seconds since the epoch. */
long long auth_now(void);

#endif
