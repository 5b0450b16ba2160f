/*
 * handlers_sign.c - S3 remote signing on the HTTP side: the signRequest
 * route, and the config a loadTable or createTable answer carries when
 * the client asks for remote-signing and --s3-remote-signing is on. The
 * decisions are catalog/signer.c's.
 */
#include "handlers.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "app.h"
#include "config.h"
#include "ident.h"
#include "signer.h"

/* Whether this request gets the signing config: the mode is on and the
 * client asked for it. */
bool handler_sign_wanted(struct http_request *req)
{
	return req->app->cfg->s3_remote_signing &&
	       signer_requested(http_header(req, "X-Iceberg-Access-Delegation"));
}

bool handler_sign_config(struct http_request *req, const struct ns_ident *ns, const char *name,
			 json_t *config, struct floe_error *err)
{
	if (!handler_sign_wanted(req))
		return true;
	return signer_table_config(config, handler_warehouse_location(req),
				   http_param(req, "prefix"), ns, name, err);
}

void handle_table_sign(struct http_request *req)
{
	struct floe_error err;
	struct ns_ident ns = { 0 };
	char *name = NULL;
	json_t *in = NULL;
	struct store *s;

	floe_error_clear(&err);
	if (!req->app->cfg->s3_remote_signing) {
		floe_err(
			&err, FE_UNSUPPORTED,
			"remote signing is off on this server (--s3-remote-signing=on turns it on)");
		http_reply_error(req, &err);
		return;
	}
	if (!handler_table_params(req, &ns, &name, &err) || !http_body_json(req, &in, &err)) {
		http_reply_error(req, &err);
		goto done;
	}
	s = handler_acquire(req);
	if (s == NULL || !handler_allowed(req, s, PRIV_TABLE_READ, &ns, name))
		goto done;
	json_t *out = signer_sign(s, handler_principal(req), &ns, name, in, (long long)time(NULL),
				  &err);
	handler_release(req, s);
	if (out == NULL) {
		http_reply_error(req, &err);
		goto done;
	}
	http_reply_json(req, 200, out);
	/* A signature holds a date and is for one request: never cached. */
	http_add_header(req, "Cache-Control", "no-store");
done:
	json_decref(in);
	free(name);
	ident_ns_clear(&ns);
}
