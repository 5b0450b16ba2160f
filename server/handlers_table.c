/*
 * handlers_table.c - the table routes of the Iceberg REST API, and
 * commitTransaction.
 */
#include "handlers.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "delegation.h"
#include "gzip.h"
#include "history.h"
#include "idem.h"
#include "ident.h"
#include "log.h"
#include "namespace.h"
#include "signer.h"
#include "table.h"
#include "tables.h"
#include "vend.h"
#include "wording.h"

/* The vended-credentials cache when the client asked for credentials
 * and floe vends them, else NULL. */
static struct vend *vend_asked(struct http_request *req)
{
	if (req->app->vend == NULL ||
	    !delegation_asks(http_header(req, "X-Iceberg-Access-Delegation"), "vended-credentials"))
		return NULL;
	return req->app->vend;
}

/* Adds to vended (vend_table's answer) where the engine refreshes its
 * credentials: this table's loadCredentials route, under the request's
 * prefix. False only when out of memory. */
static bool refresh_config(struct http_request *req, const struct ns_ident *ns, const char *name,
			   json_t *vended, struct floe_error *err)
{
	return vend_refresh_config(vended, http_param(req, "prefix"), ns, name, err);
}

void handle_table_list(struct call *c)
{
	handler_list_names(c, tables_list_text);
}

/* Answers 200 with a LoadTableResult or a CommitTableResponse (stolen)
 * and the ETag a later loadTable gives for its metadata; a staged create
 * (no metadata-location yet) has none. */
static void reply_table_result(struct http_request *req, json_t *out)
{
	char etag[520];
	bool tagged = table_result_etag(out, etag, sizeof(etag));

	http_reply_json(req, 200, out);
	if (tagged)
		http_add_header(req, "ETag", etag);
}

/* createTable and registerTable: a namespace, a body, a LoadTableResult. */
static void on_namespace_body(struct call *c,
			      json_t *(*op)(struct store *s, const struct table_env *env,
					    const struct ns_ident *ns, const json_t *body,
					    struct floe_error *err))
{
	struct http_request *req = c->req;
	struct floe_error err;
	struct store *s = call_store(c);

	if (s == NULL)
		return;
	c->env.vend = vend_asked(req);
	json_t *out = op(s, &c->env, &c->ns, c->body, &err);
	call_release(c);
	if (out != NULL && req->idem_claimed &&
	    json_object_get(out, "storage-credentials") != NULL &&
	    json_is_null(json_object_get(out, "metadata-location"))) {
		/* A staged create stored nothing, and its answer holds secrets:
		 * no replay keeps them. The key is given back; a retry stages
		 * again. (A create records its answer, without them, itself.) */
		req->idem_claimed = false;
		idem_settle(req->pool, http_header(req, "Idempotency-Key"), req->idem_owner, 0,
			    NULL, req->request_id);
	}
	/* The table exists now: a config that cannot be added (out of
	 * memory) leaves the answer without it, never a failure. */
	struct floe_error unsigned_err;
	const char *created = json_string_value(json_object_get(c->body, "name"));
	if (out != NULL && op == table_create &&
	    !handler_sign_config(req, &c->ns, created, json_object_get(out, "config"),
				 &unsigned_err))
		log_warn("sign", "the created table's answer lacks its remote-signing config: %s",
			 unsigned_err.message);
	/* Likewise where an engine refreshes the credentials it was given. */
	bool vended = out != NULL && json_object_get(out, "storage-credentials") != NULL;
	if (vended && !refresh_config(req, &c->ns, created, out, &unsigned_err))
		log_warn("vend", "the table's answer lacks its credentials' refresh endpoint: %s",
			 unsigned_err.message);
	if (out == NULL) {
		http_reply_error(req, &err);
	} else {
		reply_table_result(req, out);
		if (vended)
			http_add_header(req, "Cache-Control", "no-store");
	}
}

void handle_table_create(struct call *c)
{
	on_namespace_body(c, table_create);
}

void handle_table_register(struct call *c)
{
	on_namespace_body(c, table_register);
}

/* True when an If-None-Match header lists etag followed by suffix; with
 * etag NULL, when it is "*". */
static bool etag_listed(const char *header, const char *etag, const char *suffix)
{
	size_t elen = etag != NULL ? strlen(etag) : 0;
	size_t slen = strlen(suffix);

	if (header == NULL)
		return false;
	for (const char *p = header; *p;) {
		while (*p == ' ' || *p == ',')
			p++;
		if (*p == '*' && etag == NULL)
			return true;
		if (strncmp(p, "W/", 2) == 0)
			p += 2;
		if (etag != NULL && *p == '"' && strncmp(p + 1, etag, elen) == 0 &&
		    strncmp(p + 1 + elen, suffix, slen) == 0 && p[1 + elen + slen] == '"')
			return true;
		while (*p && *p != ',')
			p++;
	}
	return false;
}

/* True when an If-None-Match header lists etag (or is "*"). */
static bool etag_matches(const char *header, const char *etag)
{
	return etag_listed(header, NULL, "") || etag_listed(header, etag, "");
}

void handle_table_load(struct call *c)
{
	struct http_request *req = c->req;
	const struct ns_ident *ns = &c->ns;
	const char *name = c->name;
	struct floe_error err;
	char *snaps = NULL;
	char *as_of = NULL;
	char *as_of_version = NULL;
	struct table_point at;
	char etag[512];
	enum snapshots_mode mode = SNAPSHOTS_ALL;
	struct store *s;
	size_t len = 0;
	bool gzipped = false;
	json_t *extra = NULL;

	floe_error_clear(&err);
	if (!http_query(req, "snapshots", &snaps, &err) ||
	    !http_query(req, "as-of", &as_of, &err) ||
	    !http_query(req, "as-of-version", &as_of_version, &err)) {
		http_reply_error(req, &err);
		goto done;
	}
	bool past = as_of != NULL || as_of_version != NULL;
	bool point_ok = !past || table_point_parse(as_of, as_of_version, &at, &err);
	if (point_ok && past && snaps != NULL && strcasecmp(snaps, "all") != 0)
		point_ok = floe_err(
			&err, FE_BAD_REQUEST,
			"a load as of a point answers all snapshots: snapshots=%s cannot be combined with it",
			snaps);
	if (!point_ok) {
		http_reply_error(req, &err);
		goto done;
	}
	if (snaps != NULL) {
		if (strcasecmp(snaps, "refs") == 0) {
			mode = SNAPSHOTS_REFS;
		} else if (strcasecmp(snaps, "all") != 0) {
			floe_err(&err, FE_BAD_REQUEST,
				 "query parameter 'snapshots' must be 'all' or 'refs', not '%s'",
				 snaps);
			http_reply_error(req, &err);
			goto done;
		}
	}
	s = call_store(c);
	if (s == NULL)
		goto done;
	struct vend *vend = vend_asked(req);
	if (vend != NULL) {
		extra = vend_table(vend, s, handler_principal(req), ns, name, NULL, &err);
		if (extra != NULL && !refresh_config(req, ns, name, extra, &err)) {
			json_decref(extra);
			extra = NULL;
		}
		if (extra == NULL) {
			http_reply_error(req, &err);
			goto done;
		}
	}
	/* Remote signing's keys join the config (vended credentials' too);
	 * a plain load builds no config object at all. */
	if (handler_sign_wanted(req)) {
		if (extra == NULL)
			extra = json_pack("{s:{}}", "config");
		if (extra == NULL ||
		    !handler_sign_config(req, ns, name, json_object_get(extra, "config"), &err)) {
			if (extra == NULL)
				floe_err(&err, FE_INTERNAL, "out of memory");
			http_reply_error(req, &err);
			goto done;
		}
	}
	if (past) {
		/* The past is a file that never changes again: no tag, no 304,
		 * and nothing a cache of the current state would take. */
		json_t *then = table_load_at(s, ns, name, &at, extra, &err);
		handler_answer(req, 200, then, &err);
		goto done;
	}
	char *text = table_load(s, ns, name, mode,
				gzip_accepted(http_header(req, "Accept-Encoding")), extra, etag,
				sizeof(etag), &len, &gzipped, &err);
	if (text == NULL) {
		http_reply_error(req, &err);
		goto done;
	}
	/* Each encoding is its own representation with its own strong tag
	 * (http.c adds ";gzip" to the tag of a gzip answer); a client holding
	 * either holds the current metadata. */
	char quoted[sizeof(etag) + 8];
	const char *inm = http_header(req, "If-None-Match");
	/* A 304 names the tag the client holds ("*": the one it would get). */
	bool gz_tag = etag_listed(inm, etag, ";gzip") || (gzipped && etag_listed(inm, NULL, ""));
	(void)snprintf(quoted, sizeof(quoted), "\"%s%s\"", etag, gz_tag ? ";gzip" : "");
	/* Credentials and signing keys asked for are always sent: never a
	 * 304 without them (the tag is the metadata's, not the config's). */
	bool vended = json_object_get(extra, "storage-credentials") != NULL;
	bool configured = json_object_size(json_object_get(extra, "config")) > 0;
	if (!vended && !configured && (etag_matches(inm, etag) || gz_tag)) {
		free(text);
		http_reply_empty(req, 304);
		http_add_header(req, "Vary", "Accept-Encoding");
	} else if (gzipped) {
		http_reply_gzipped(req, 200, text, len);
	} else {
		http_reply_text(req, 200, text, len);
	}
	http_add_header(req, "ETag", quoted);
	if (vended)
		http_add_header(req, "Cache-Control", "no-store");
done:
	json_decref(extra);
	free(as_of);
	free(as_of_version);
	free(snaps);
}

/* Whether the table the path names exists, in *exists; false when the
 * request has been answered instead (no connection, or the database could
 * not tell). */
static bool path_table_exists(struct call *c, bool *exists)
{
	struct floe_error err;
	struct store *s = call_store(c);

	if (s == NULL)
		return false;
	if (tables_exists(s, &c->ns, c->name, exists, &err))
		return true;
	http_reply_error(c->req, &err);
	return false;
}

void handle_table_exists(struct call *c)
{
	bool exists = false;

	if (path_table_exists(c, &exists))
		http_reply_empty(c->req, exists ? 204 : 404);
}

/* On a commit thread (the route's queue). */
void handle_table_commit(struct call *c)
{
	struct floe_error err;
	struct store *s;

	if (!handler_commit_body(c, "table", &err)) {
		http_reply_error(c->req, &err);
		return;
	}
	s = call_store(c);
	if (s == NULL)
		return;
	json_t *out = table_commit(s, &c->env, &c->ns, c->name, c->body, &err);
	call_release(c);
	if (out == NULL)
		http_reply_error(c->req, &err);
	else
		reply_table_result(c->req, out);
}

/* On a commit thread (the route's queue). */
void handle_transaction_commit(struct call *c)
{
	struct floe_error err;
	struct store *s = call_store(c);

	if (s != NULL) {
		bool ok = table_commit_transaction(s, &c->env, c->body, &err);
		call_release(c);
		handler_answer_done(c->req, ok, &err);
	}
}

void handle_table_drop(struct call *c)
{
	struct http_request *req = c->req;
	struct floe_error err;
	char *purge = NULL;
	struct store *s;

	floe_error_clear(&err);
	if (!http_query(req, "purgeRequested", &purge, &err)) {
		http_reply_error(req, &err);
		return;
	}
	if (purge != NULL && strcasecmp(purge, "true") != 0 && strcasecmp(purge, "false") != 0) {
		floe_err(&err, FE_BAD_REQUEST, "purgeRequested must be true or false");
		http_reply_error(req, &err);
		free(purge);
		return;
	}
	bool purging = purge != NULL && strcasecmp(purge, "true") == 0;
	free(purge);
	s = call_store(c);
	if (s == NULL)
		return;
	bool ok = table_drop(s, &c->env, &c->ns, c->name, purging, &err);
	call_release(c);
	if (ok && purging)
		janitor_wake(req->app->janitor);
	handler_answer_done(req, ok, &err);
}

void handle_table_commits(struct call *c)
{
	struct floe_error err;
	struct page_request page = { 0 };
	char *token = NULL, *size = NULL;
	struct store *s;

	floe_error_clear(&err);
	if (!handler_page(c, false, &page, &token, &size, &err))
		http_reply_error(c->req, &err);
	else if ((s = call_store(c)) != NULL)
		handler_answer(c->req, 200,
			       table_commits(s, &c->ns, c->name, token, page.page_size, &err),
			       &err);
	page_request_clear(&page);
	free(token);
	free(size);
}

void handle_table_undrop(struct call *c)
{
	struct floe_error err;
	struct store *s = call_store(c);

	if (s != NULL)
		handler_answer(c->req, 200, table_undrop(s, &c->env, &c->ns, c->name, &err), &err);
}

void handle_dropped_list(struct call *c)
{
	struct floe_error err;
	struct page_request page = { 0 };
	char *token = NULL, *size = NULL;
	struct store *s;

	floe_error_clear(&err);
	if (!handler_page(c, false, &page, &token, &size, &err))
		http_reply_error(c->req, &err);
	else if ((s = call_store(c)) != NULL)
		handler_answer(c->req, 200,
			       table_dropped_list(s, &c->env, &c->ns, token, page.page_size, &err),
			       &err);
	page_request_clear(&page);
	free(token);
	free(size);
}

void handle_table_rename(struct call *c)
{
	struct floe_error err;
	struct store *s = call_store(c);

	if (s != NULL)
		handler_answer_done(c->req, table_rename(s, &c->env, c->body, NULL, &err), &err);
}

void handle_table_metrics(struct call *c)
{
	struct floe_error err;
	struct store *s;

	if (json_string_value(json_object_get(c->body, "report-type")) == NULL) {
		floe_err(&err, FE_BAD_REQUEST, "missing required field 'report-type'");
		http_reply_error(c->req, &err);
		return;
	}
	s = call_store(c);
	if (s != NULL)
		handler_answer_done(c->req,
				    tables_report_metrics(s, &c->env, &c->ns, c->name, c->req->body,
							  &err),
				    &err);
}

void handle_table_credentials(struct call *c)
{
	struct http_request *req = c->req;
	struct floe_error err;
	bool exists = false;

	floe_error_clear(&err);
	if (req->app->vend == NULL) {
		if (!path_table_exists(c, &exists))
			return;
		/* Nothing is vended: an empty list. */
		if (exists) {
			http_reply_json(req, 200, json_pack("{s:[]}", "storage-credentials"));
		} else {
			wording_no_such_table(&c->ns, c->name, &err);
			http_reply_error(req, &err);
		}
		return;
	}
	/* loadCredentials: fresh credentials under loadTable's rules, the
	 * header not needed (asking is the request itself). */
	struct store *s = call_store(c);
	if (s == NULL)
		return;
	json_t *got = vend_table(req->app->vend, s, handler_principal(req), &c->ns, c->name, NULL,
				 &err);
	call_release(c);
	if (got != NULL &&
	    !vend_refresh_config(got, http_param(req, "prefix"), &c->ns, c->name, &err)) {
		json_decref(got);
		got = NULL;
	}
	if (got == NULL) {
		http_reply_error(req, &err);
		return;
	}
	json_t *list = json_object_get(got, "storage-credentials");
	http_reply_json(req, 200,
			list != NULL ? json_pack("{s:O}", "storage-credentials", list)
				     : json_pack("{s:[]}", "storage-credentials"));
	http_add_header(req, "Cache-Control", "no-store");
	json_decref(got);
}
