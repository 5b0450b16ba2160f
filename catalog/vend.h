/*
 * vend.h - vended credentials for engines (docs/storage.md "Vended
 * credentials"): which access a principal gets to a table's objects
 * (read-write with a write privilege on it, else read-only), the
 * credentials fileio makes for that, and the bounded cache that keeps
 * them per table location, principal and access until shortly before
 * they expire. Not the HTTP header, nor the STS call.
 */
#ifndef FLOE_VEND_H
#define FLOE_VEND_H

#include <stdbool.h>
#include <stddef.h>
#include <jansson.h>

#include "authz.h"
#include "error.h"
#include "ident.h"

struct store;
struct vend;

/* A cache of at most slots entries (rounded up to a power of two, at
 * least 16), or NULL when out of memory. */
struct vend *vend_new(size_t slots) FLOE_WUR;

/* Wipes and frees the cache; sets *v to NULL. */
void vend_free(struct vend **v);

/* Forgets every entry (grants changed: an access level may have). */
void vend_forget(struct vend *v);

/*
 * The members a LoadTableResult gains when its client asked for vended
 * credentials, as a new object: "config" (always; {} when vending is off
 * or the table is not in s3:// storage) with s3.access-key-id,
 * s3.secret-access-key, s3.session-token, s3.session-token-expires-at-ms,
 * s3.endpoint, s3.path-style-access, client.region and s3.region, and
 * "storage-credentials" [{"prefix": the table location, "config": the
 * same keys}]. location: the table's (NULL: looked up, FE_NO_SUCH_TABLE
 * when there is none). p NULL (authentication off): read-write.
 * Errors: the store's, or fileio_vend's (FE_UNAVAILABLE when STS cannot
 * be reached): never an answer without the credentials when vending is on.
 */
json_t *vend_table(struct vend *v, struct store *s, const struct principal *p,
		   const struct ns_ident *ns, const char *name, const char *location,
		   struct floe_error *err) FLOE_WUR;

/*
 * Adds client.refresh-credentials-endpoint, the table's loadCredentials
 * route relative to the catalog URI (route.h, under prefix
 * when not NULL), to the "config" of vended (vend_table's answer, or a
 * LoadTableResult holding it) and to each "storage-credentials" entry's,
 * when those credentials expire (s3.session-token-expires-at-ms): Iceberg
 * Java then refreshes them there before they do. Credentials that never
 * expire (static) get nothing. False only when out of memory.
 */
bool vend_refresh_config(json_t *vended, const char *prefix, const struct ns_ident *ns,
			 const char *name, struct floe_error *err) FLOE_WUR;

#endif
