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

void handle_table_sign(struct call *c)
{
	struct floe_error err;
	struct store *s;

	floe_error_clear(&err);
	if (!c->req->app->cfg->s3_remote_signing) {
		floe_err(
			&err, FE_UNSUPPORTED,
			"remote signing is off on this server (--s3-remote-signing=on turns it on)");
		http_reply_error(c->req, &err);
		return;
	}
	s = call_store(c);
	if (s == NULL)
		return;
	/* Which object the request touches, and whether a write, is the
	 * signer's to decide: the route needs TABLE_READ to ask at all. */
	json_t *out = signer_sign(s, handler_principal(c->req), &c->ns, c->name, c->body,
				  (long long)time(NULL), &err);
	call_release(c);
	if (out == NULL) {
		http_reply_error(c->req, &err);
		return;
	}
	http_reply_json(c->req, 200, out);
	/* A signature holds a date and is for one request: never cached. */
	http_add_header(c->req, "Cache-Control", "no-store");
}
