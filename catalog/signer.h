/*
 * signer.h - S3 remote signing (docs/storage.md "Remote signing"): the
 * config a loadTable or createTable answer carries when an engine asks
 * for remote signing, and the decision of the signRequest route, which
 * signs an engine's S3 request only for the table's own objects and only
 * with the methods the caller's privileges allow. The signature itself is
 * fileio's (s3sign.h), made with floe's credentials, which never leave
 * floe and are never logged, nor are signatures.
 */
#ifndef FLOE_SIGNER_H
#define FLOE_SIGNER_H

#include <stdbool.h>
#include <jansson.h>

#include "authz.h"
#include "error.h"
#include "ident.h"

struct store;

/* Whether an X-Iceberg-Access-Delegation header value (a comma list, may
 * be NULL) names remote-signing. */
bool signer_requested(const char *delegation);

/*
 * Adds to config (a JSON object) what an engine needs to have the S3
 * requests of table ns.name signed by floe: s3.remote-signing-enabled,
 * s3.signer (PyIceberg's signer class), s3.signer.endpoint (the table's
 * sign route relative to the catalog URI, under prefix when not NULL),
 * s3.endpoint, s3.path-style-access and client.region of the store of
 * warehouse (the location of the warehouse holding the table; NULL: the
 * default warehouse). Adds nothing when that warehouse is not on S3.
 * False only when out of memory.
 */
bool signer_table_config(json_t *config, const char *warehouse, const char *prefix,
			 const struct ns_ident *ns, const char *name,
			 struct floe_error *err) FLOE_WUR;

/*
 * signRequest for table ns.name: body is a RemoteSignRequest {region,
 * uri, method, headers, body?, provider?}; the caller p may read the
 * table (the route checked). Returns the RemoteSignResult {uri, headers}
 * (new reference), signed at now (seconds since the epoch); a
 * DeleteObjects is signed with the SHA-256 of the body whose keys were
 * checked, so it holds for no other body. Errors: FE_BAD_REQUEST for a
 * malformed request (a DeleteObjects body that is not a plain Delete
 * document, a key with an empty, "." or ".." segment); FE_NO_SUCH_TABLE;
 * FE_FORBIDDEN naming what is refused (an object outside the table's
 * location, another server or bucket, a bucket-level request other than a
 * listing under the table or a DeleteObjects of its keys, a write method
 * without TABLE_WRITE, a header that does not act on the object named
 * alone: a copy's source above all, a payload hash or Content-MD5 that is
 * not the checked body's); FE_UNSUPPORTED when the warehouse is not on
 * S3; the store's failure.
 */
json_t *signer_sign(struct store *s, const struct principal *p, const struct ns_ident *ns,
		    const char *name, const json_t *body, long long now,
		    struct floe_error *err) FLOE_WUR;

#endif
