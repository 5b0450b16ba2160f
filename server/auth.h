/*
 * auth.h - authentication of every request (docs/auth.md): the bearer
 * token of the Authorization header becomes the request's principal, or
 * the request is answered 401 before any handler runs. Owns floe's
 * signing keys, the cache of verified tokens, the failure backoff of the
 * token endpoint and the external issuer's key set.
 */
#ifndef FLOE_AUTH_H
#define FLOE_AUTH_H

#include <stdbool.h>

#include "config.h"
#include "error.h"
#include "http.h"

struct auth;
struct call;
struct route;
struct secret_key;
struct store;
struct vend;

/* What a token of floe's may carry in its audience claim. */
#define AUTH_AUDIENCE "floe"

/*
 * Opens what authentication needs: the signing keys under
 * <data dir>/auth/signing (made on the first start), the token cache,
 * the backoff table, the hashing queue and, with --oidc-issuer, the
 * issuer's key set (fetched now: an issuer that cannot be reached is an
 * error at start-up). Returns NULL with err set on failure. With
 * --auth=none returns an auth that admits every request.
 */
struct auth *auth_new(const struct floe_config *cfg, struct floe_error *err) FLOE_WUR;

/*
 * Starts the thread that hears changes of authorization through a
 * session of its own to conninfo (catalog/authwatch.h): each change
 * forgets the decisions kept, the vended credentials of vended (vend.h;
 * borrowed, outliving a; NULL: none) and, for principals, roles and
 * memberships, the tokens verified. Until it hears, and whenever it
 * cannot, no decision is kept. Nothing with --auth=none. False with err
 * set when the thread cannot start.
 */
bool auth_watch_start(struct auth *a, const char *conninfo, struct vend *vended,
		      struct floe_error *err) FLOE_WUR;

/* Makes k (copied) the key floe's own client secrets are hashed with and
 * checked against (auth/secret.h's keyed form), before auth_bootstrap.
 * Without it every secret is hashed by scrypt. */
void auth_use_secret_key(struct auth *a, const struct secret_key *k);

/* Stops the hashing queue and frees everything; NULL is fine. */
void auth_free(struct auth *a);

/*
 * The first start: when the catalog has no principal, makes the role
 * admin (ADMIN on the catalog) and the client admin holding it, with the
 * secret of --admin-credential or, without it, a new random one written
 * to <data dir>/auth/admin-credential (mode 0600) and announced in the
 * log. Does nothing once a principal exists, or with --auth=none.
 */
bool auth_bootstrap(struct auth *a, struct store *s, struct floe_error *err) FLOE_WUR;

/*
 * The middleware step before a route's handler (struct middleware's
 * admit): true when the request may go on, its principal set unless the
 * route is public or authentication is off; false when it has been
 * answered (401 NotAuthorizedException with WWW-Authenticate, or 503
 * when the principal could not be looked up).
 */
bool auth_admit(struct http_request *req, const struct route *route);

/* Whether auth_admit lets a request of route through without looking at
 * it (struct middleware's admits_all): the route is public, or
 * authentication is off. Reads the configuration only. */
bool auth_admits_all(const struct http_request *req, const struct route *route);

/* The external issuer's token endpoint when req was authenticated by
 * that issuer's token (for /v1/config's oauth2-server-uri), else NULL. */
const char *auth_external_token_endpoint(struct http_request *req);

/* Rereads the signing keys (SIGHUP, and the janitor's rounds). */
void auth_reload_keys(struct auth *a);

/* POST /v1/oauth/tokens and GET /v1/oauth/jwks (handlers_oauth.c). */
void handle_oauth_tokens(struct call *c);
void handle_oauth_jwks(struct call *c);

#endif
