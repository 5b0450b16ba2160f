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

/* Parses {namespace} and {table} from the path. */
static bool table_params(struct http_request *req, struct ns_ident *ns, char **name,
			 struct floe_error *err)
{
	return handler_table_params(req, ns, name, err);
}

void handle_table_list(struct http_request *req)
{
	handler_list_names(req, tables_list_text);
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
static void on_namespace_body(struct http_request *req,
			      json_t *(*op)(struct store *s, const struct table_env *env,
					    const struct ns_ident *ns, const json_t *body,
					    struct floe_error *err),
			      access_set needs)
{
	struct floe_error err;
	struct ns_ident ns = { 0 };
	json_t *in = NULL;
	struct store *s;

	floe_error_clear(&err);
	if (!http_param_namespace(req, &ns, &err) || !http_body_json(req, &in, &err)) {
		http_reply_error(req, &err);
		goto done;
	}
	s = handler_acquire(req);
	struct authz_object obj = { .kind = AUTHZ_NAMESPACE, .ns = &ns, .table = NULL };
	if (s == NULL || !handler_allowed_all(req, s, needs, &obj))
		goto done;
	/* A register moves main at the name it registers (and with
	 * overwrite replaces the table there): access_register_table_needs
	 * on that table. */
	const char *registered = json_string_value(json_object_get(in, "name"));
	struct authz_object tobj = { .kind = AUTHZ_TABLE, .ns = &ns, .table = registered };
	if (op == table_register && registered != NULL &&
	    !handler_allowed_all(req, s, access_register_table_needs(in), &tobj))
		goto done;
	struct table_env env = handler_env(req);
	env.vend = vend_asked(req);
	json_t *out = op(s, &env, &ns, in, &err);
	handler_release(req, s);
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
	const char *created = json_string_value(json_object_get(in, "name"));
	if (out != NULL && op == table_create &&
	    !handler_sign_config(req, &ns, created, json_object_get(out, "config"), &unsigned_err))
		log_warn("sign", "the created table's answer lacks its remote-signing config: %s",
			 unsigned_err.message);
	/* Likewise where an engine refreshes the credentials it was given. */
	bool vended = out != NULL && json_object_get(out, "storage-credentials") != NULL;
	if (vended && !refresh_config(req, &ns, created, out, &unsigned_err))
		log_warn("vend", "the table's answer lacks its credentials' refresh endpoint: %s",
			 unsigned_err.message);
	if (out == NULL) {
		http_reply_error(req, &err);
	} else {
		reply_table_result(req, out);
		if (vended)
			http_add_header(req, "Cache-Control", "no-store");
	}
done:
	json_decref(in);
	ident_ns_clear(&ns);
}

void handle_table_create(struct http_request *req)
{
	on_namespace_body(req, table_create, ACCESS_BIT(PRIV_TABLE_CREATE));
}

void handle_table_register(struct http_request *req)
{
	on_namespace_body(req, table_register, ACCESS_BIT(PRIV_TABLE_CREATE));
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

void handle_table_load(struct http_request *req)
{
	struct floe_error err;
	struct ns_ident ns = { 0 };
	char *name = NULL;
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
	if (!table_params(req, &ns, &name, &err) || !http_query(req, "snapshots", &snaps, &err) ||
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
	s = handler_acquire(req);
	if (s == NULL || !handler_allowed(req, s, PRIV_TABLE_READ, &ns, name))
		goto done;
	struct vend *vend = vend_asked(req);
	if (vend != NULL) {
		extra = vend_table(vend, s, handler_principal(req), &ns, name, NULL, &err);
		if (extra != NULL && !refresh_config(req, &ns, name, extra, &err)) {
			json_decref(extra);
			extra = NULL;
		}
		if (extra == NULL) {
			handler_release(req, s);
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
		    !handler_sign_config(req, &ns, name, json_object_get(extra, "config"), &err)) {
			if (extra == NULL)
				floe_err(&err, FE_INTERNAL, "out of memory");
			handler_release(req, s);
			http_reply_error(req, &err);
			goto done;
		}
	}
	if (past) {
		/* The past is a file that never changes again: no tag, no 304,
		 * and nothing a cache of the current state would take. */
		json_t *then = table_load_at(s, &ns, name, &at, extra, &err);
		handler_release(req, s);
		handler_answer(req, 200, then, &err);
		goto done;
	}
	char *text = table_load(s, &ns, name, mode,
				gzip_accepted(http_header(req, "Accept-Encoding")), extra, etag,
				sizeof(etag), &len, &gzipped, &err);
	handler_release(req, s);
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
	free(name);
	ident_ns_clear(&ns);
}

/* Whether the table the path names exists, in *exists; false when the
 * request has been answered instead (a bad path, no connection, or the
 * database could not tell). */
static bool path_table_exists(struct http_request *req, struct ns_ident *ns, char **name,
			      bool *exists)
{
	struct floe_error err;
	struct store *s = handler_open(req, table_params(req, ns, name, &err), &err);

	if (s == NULL || !handler_allowed(req, s, PRIV_TABLE_READ, ns, *name))
		return false;
	bool ok = tables_exists(s, ns, *name, exists, &err);
	handler_release(req, s);
	if (!ok)
		http_reply_error(req, &err);
	return ok;
}

void handle_table_exists(struct http_request *req)
{
	struct ns_ident ns = { 0 };
	char *name = NULL;
	bool exists = false;

	if (path_table_exists(req, &ns, &name, &exists))
		http_reply_empty(req, exists ? 204 : 404);
	free(name);
	ident_ns_clear(&ns);
}

/* A commit, taken from the request and run on a commit thread. While it
 * waits it holds no more than the request's own body: the body is parsed
 * on the commit thread. */
struct commit_job {
	struct http_request *req;
	struct ns_ident ns;
	char *name; /* NULL: a multi-table transaction */
};

static void commit_job_run(void *arg, const struct floe_error *refused)
{
	struct commit_job *job = arg;
	struct http_request *req = job->req;
	struct floe_error err;
	json_t *in = NULL;
	struct store *s = NULL;

	floe_error_clear(&err);
	if (refused != NULL) {
		handler_refuse(req, refused);
		goto done;
	}
	if (job->name != NULL)
		in = handler_commit_body(req, &job->ns, job->name, "table", &err);
	else if (!http_body_json(req, &in, &err))
		in = NULL;
	if (in == NULL) {
		http_reply_error(req, &err);
		goto done;
	}
	s = handler_acquire(req);
	if (s == NULL)
		goto done;
	struct table_env env = handler_env(req);
	if (job->name != NULL) {
		json_t *out = table_commit(s, &env, &job->ns, job->name, in, &err);
		handler_release(req, s);
		if (out == NULL)
			http_reply_error(req, &err);
		else
			reply_table_result(req, out);
	} else {
		bool ok = table_commit_transaction(s, &env, in, &err);
		handler_release(req, s);
		handler_answer_done(req, ok, &err);
	}
done:
	json_decref(in);
	free(job->name);
	ident_ns_clear(&job->ns);
	free(job);
	http_async_complete(req);
}

void handle_table_commit(struct http_request *req)
{
	struct floe_error err;
	struct ns_ident ns = { 0 };
	char *name = NULL;

	floe_error_clear(&err);
	if (!table_params(req, &ns, &name, &err)) {
		http_reply_error(req, &err);
		return;
	}
	struct commit_job *job = calloc(1, sizeof(*job));
	if (job == NULL) {
		floe_err(&err, FE_INTERNAL, "out of memory");
		http_reply_error(req, &err);
		free(name);
		ident_ns_clear(&ns);
		return;
	}
	job->req = req;
	job->ns = ns;
	job->name = name;
	handler_defer(req, commit_job_run, job);
}

void handle_table_drop(struct http_request *req)
{
	struct floe_error err;
	struct ns_ident ns = { 0 };
	char *name = NULL;
	char *purge = NULL;
	struct store *s;

	floe_error_clear(&err);
	if (!table_params(req, &ns, &name, &err) ||
	    !http_query(req, "purgeRequested", &purge, &err)) {
		http_reply_error(req, &err);
		goto done;
	}
	if (purge != NULL && strcasecmp(purge, "true") != 0 && strcasecmp(purge, "false") != 0) {
		floe_err(&err, FE_BAD_REQUEST, "purgeRequested must be true or false");
		http_reply_error(req, &err);
		goto done;
	}
	s = handler_acquire(req);
	if (s == NULL || !handler_allowed(req, s, PRIV_TABLE_DROP, &ns, name))
		goto done;
	struct table_env env = handler_env(req);
	bool purging = purge != NULL && strcasecmp(purge, "true") == 0;
	bool ok = table_drop(s, &env, &ns, name, purging, &err);
	handler_release(req, s);
	if (ok && purging)
		janitor_wake(req->app->janitor);
	handler_answer_done(req, ok, &err);
done:
	free(purge);
	free(name);
	ident_ns_clear(&ns);
}

void handle_table_commits(struct http_request *req)
{
	struct floe_error err;
	struct ns_ident ns = { 0 };
	struct page_request page = { 0 };
	char *name = NULL, *token = NULL, *size = NULL;
	struct store *s;

	floe_error_clear(&err);
	bool parsed = table_params(req, &ns, &name, &err) &&
		      http_query(req, "pageToken", &token, &err) &&
		      http_query(req, "pageSize", &size, &err) &&
		      page_request_parse(NULL, size, &page, &err);
	s = handler_open(req, parsed, &err);
	if (s != NULL && handler_allowed(req, s, PRIV_TABLE_READ, &ns, name)) {
		json_t *out = table_commits(s, &ns, name, token, page.page_size, &err);
		handler_release(req, s);
		handler_answer(req, 200, out, &err);
	}
	page_request_clear(&page);
	free(token);
	free(size);
	free(name);
	ident_ns_clear(&ns);
}

void handle_table_undrop(struct http_request *req)
{
	struct floe_error err;
	struct ns_ident ns = { 0 };
	char *name = NULL;
	struct store *s;

	floe_error_clear(&err);
	bool parsed = table_params(req, &ns, &name, &err);
	s = handler_open(req, parsed, &err);
	if (s != NULL && handler_allowed(req, s, PRIV_TABLE_CREATE, &ns, NULL)) {
		struct table_env env = handler_env(req);
		json_t *out = table_undrop(s, &env, &ns, name, &err);
		handler_release(req, s);
		handler_answer(req, 200, out, &err);
	}
	free(name);
	ident_ns_clear(&ns);
}

void handle_dropped_list(struct http_request *req)
{
	struct floe_error err;
	struct ns_ident ns = { 0 };
	struct page_request page = { 0 };
	char *token = NULL, *size = NULL;
	struct store *s;

	floe_error_clear(&err);
	bool parsed = http_param_namespace(req, &ns, &err) &&
		      http_query(req, "pageToken", &token, &err) &&
		      http_query(req, "pageSize", &size, &err) &&
		      page_request_parse(NULL, size, &page, &err);
	s = handler_open(req, parsed, &err);
	if (s != NULL && handler_allowed(req, s, PRIV_TABLE_CREATE, &ns, NULL)) {
		struct table_env env = handler_env(req);
		json_t *out = table_dropped_list(s, &env, &ns, token, page.page_size, &err);
		handler_release(req, s);
		handler_answer(req, 200, out, &err);
	}
	page_request_clear(&page);
	free(token);
	free(size);
	ident_ns_clear(&ns);
}

void handle_table_rename(struct http_request *req)
{
	struct floe_error err;
	json_t *in = NULL;
	struct store *s;

	s = handler_open(req, http_body_json(req, &in, &err), &err);
	if (s != NULL) {
		struct table_env env = handler_env(req);
		bool ok = table_rename(s, &env, in, NULL, &err);
		handler_release(req, s);
		handler_answer_done(req, ok, &err);
	}
	json_decref(in);
}

void handle_table_metrics(struct http_request *req)
{
	struct floe_error err;
	struct ns_ident ns = { 0 };
	char *name = NULL;
	json_t *in = NULL;
	struct store *s;

	floe_error_clear(&err);
	if (!table_params(req, &ns, &name, &err) || !http_body_json(req, &in, &err)) {
		http_reply_error(req, &err);
		goto done;
	}
	const char *type = json_string_value(json_object_get(in, "report-type"));
	if (type == NULL) {
		floe_err(&err, FE_BAD_REQUEST, "missing required field 'report-type'");
		http_reply_error(req, &err);
		goto done;
	}
	s = handler_acquire(req);
	if (s == NULL || !handler_allowed(req, s, PRIV_TABLE_READ, &ns, name))
		goto done;
	bool ok = tables_report_metrics(s, &ns, name, req->body, &err);
	handler_release(req, s);
	handler_answer_done(req, ok, &err);
done:
	json_decref(in);
	free(name);
	ident_ns_clear(&ns);
}

void handle_table_credentials(struct http_request *req)
{
	struct floe_error err;
	struct ns_ident ns = { 0 };
	char *name = NULL;
	bool exists = false;

	floe_error_clear(&err);
	if (req->app->vend == NULL) {
		if (path_table_exists(req, &ns, &name, &exists)) {
			/* Nothing is vended: an empty list. */
			if (exists) {
				http_reply_json(req, 200,
						json_pack("{s:[]}", "storage-credentials"));
			} else {
				wording_no_such_table(&ns, name, &err);
				http_reply_error(req, &err);
			}
		}
		goto done;
	}
	/* loadCredentials: fresh credentials under loadTable's rules, the
	 * header not needed (asking is the request itself). */
	struct store *s = handler_open(req, table_params(req, &ns, &name, &err), &err);
	if (s == NULL || !handler_allowed(req, s, PRIV_TABLE_READ, &ns, name))
		goto done;
	json_t *got = vend_table(req->app->vend, s, handler_principal(req), &ns, name, NULL, &err);
	handler_release(req, s);
	if (got != NULL && !vend_refresh_config(got, http_param(req, "prefix"), &ns, name, &err)) {
		json_decref(got);
		got = NULL;
	}
	if (got == NULL) {
		http_reply_error(req, &err);
		goto done;
	}
	json_t *list = json_object_get(got, "storage-credentials");
	http_reply_json(req, 200,
			list != NULL ? json_pack("{s:O}", "storage-credentials", list)
				     : json_pack("{s:[]}", "storage-credentials"));
	http_add_header(req, "Cache-Control", "no-store");
	json_decref(got);
done:
	free(name);
	ident_ns_clear(&ns);
}

void handle_transaction_commit(struct http_request *req)
{
	struct floe_error err;
	struct commit_job *job = calloc(1, sizeof(*job));

	if (job == NULL) {
		floe_err(&err, FE_INTERNAL, "out of memory");
		http_reply_error(req, &err);
		return;
	}
	job->req = req;
	handler_defer(req, commit_job_run, job);
}
