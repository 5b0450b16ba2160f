/*
 * http.c - libmicrohttpd glue. Request state lives in *req_cls from the
 * first callback to the completed callback, which frees it on every path,
 * aborted connections included. Bodies are capped while they stream in.
 */
#include "http.h"

#include <errno.h>
#include <netdb.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <microhttpd.h>
#include <openssl/crypto.h>

#include "cors.h"
#include "framing.h"
#include "gzip.h"
#include "jsonmem.h"
#include "log.h"
#include "metric.h"
#include "router.h"
#include "warehouses.h"
#include "wording.h"

/* How long shutdown waits for suspended requests still running (an audit
 * may take a hook's whole timeout, at most a minute, plus the database
 * work); those still queued are answered at once. */
#define HTTP_ASYNC_WAIT_SECONDS 90
/* Then how long it waits for their answers to be written out. */
#define HTTP_DRAIN_SECONDS 5
/* Memory one connection may use for its headers and buffers. */
#define HTTP_CONNECTION_MEMORY (64 * 1024)

/* --- request state --- */

static void request_id_init(struct http_request *req)
{
	const char *given = MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, "X-Request-Id");
	if (given != NULL) {
		size_t len = strlen(given);
		bool ok = len > 0 && len < sizeof(req->request_id);
		for (size_t i = 0; ok && i < len; i++) {
			char c = given[i];
			ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			     (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.';
		}
		if (ok) {
			memcpy(req->request_id, given, len + 1);
			return;
		}
	}
	unsigned char rnd[8] = { 0 };
	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd)) {
		/* Still unique enough for a log line within this process. */
		unsigned long long t = (unsigned long long)req->start.tv_nsec ^
				       (unsigned long long)(uintptr_t)req;
		memcpy(rnd, &t, sizeof(rnd));
	}
	for (size_t i = 0; i < sizeof(rnd); i++)
		(void)snprintf(req->request_id + 2 * i, 3, "%02x", rnd[i]);
}

void http_split_segments(struct http_request *req)
{
	char *p = req->segbuf;

	/* "/a/b" -> "a", "b"; "/" -> none; "/a/" -> "a", "" */
	if (*p == '/')
		p++;
	if (*p == '\0')
		return;
	for (;;) {
		if (req->nsegs >= HTTP_MAX_SEGMENTS) {
			req->too_many_segments = true;
			return;
		}
		req->segs[req->nsegs++] = p;
		char *slash = strchr(p, '/');
		if (slash == NULL)
			return;
		*slash = '\0';
		p = slash + 1;
	}
}

static struct http_request *request_new(struct app *app, struct MHD_Connection *conn,
					const char *url, const char *method)
{
	struct http_request *req = calloc(1, sizeof(*req));

	if (req == NULL)
		return NULL;
	req->app = app;
	req->conn = conn;
	req->pool = app->pool;
	req->method = method;
	clock_gettime(CLOCK_MONOTONIC, &req->start);
	req->path = strdup(url);
	req->segbuf = strdup(url);
	if (req->path == NULL || req->segbuf == NULL) {
		free(req->path);
		free(req->segbuf);
		free(req);
		return NULL;
	}
	http_split_segments(req);
	request_id_init(req);
	return req;
}

/* Counts the request's body as `total` bytes in the budget shared by every
 * request. False (nothing counted) when that would exceed the budget. */
static bool body_reserve(struct http_request *req, size_t total)
{
	struct app *app = req->app;

	if (total <= req->body_reserved)
		return true;
	long long delta = (long long)(total - req->body_reserved);
	long long after = atomic_fetch_add(&app->body_bytes, delta) + delta;
	if (after > app->cfg->max_pending_body_bytes) {
		atomic_fetch_sub(&app->body_bytes, delta);
		return false;
	}
	req->body_reserved = total;
	return true;
}

/* Counts bytes more, the parsed form of req's body, in the same budget.
 * False (nothing counted) when that would exceed it. */
static bool parsed_reserve(struct http_request *req, long long bytes)
{
	struct app *app = req->app;
	long long after = atomic_fetch_add(&app->body_bytes, bytes) + bytes;

	if (after > app->cfg->max_pending_body_bytes) {
		atomic_fetch_sub(&app->body_bytes, bytes);
		return false;
	}
	req->parsed_reserved += bytes;
	return true;
}

/* Frees the request body, wiped first: it may hold a client secret, a
 * subject token or a hook's secret. */
static void body_forget(struct http_request *req)
{
	if (req->body != NULL)
		OPENSSL_cleanse(req->body, req->body_cap > 0 ? req->body_cap : req->body_len);
	free(req->body);
	req->body = NULL;
}

static void request_free(struct http_request *req)
{
	if (req->app->middleware.release != NULL)
		req->app->middleware.release(req);
	if (req->body_reserved > 0)
		atomic_fetch_sub(&req->app->body_bytes, (long long)req->body_reserved);
	if (req->parsed_reserved > 0)
		atomic_fetch_sub(&req->app->body_bytes, req->parsed_reserved);
	if (req->response != NULL)
		MHD_destroy_response(req->response);
	if (req->captured != NULL)
		OPENSSL_cleanse(req->captured, req->captured_len);
	free(req->captured);
	body_forget(req);
	free(req->path);
	free(req->segbuf);
	free(req);
}

/* --- answers --- */

/* A GET (or HEAD) answer: the ones whose encoding follows Accept-Encoding. */
static bool method_reads(const char *method)
{
	return strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
}

static void reply_buffer(struct http_request *req, int status, char *data, size_t len,
			 const char *content_type)
{
	bool reads = method_reads(req->method);
	bool gzipped = false;

	if (reads && status == 200 && len >= HTTP_GZIP_MIN_BYTES && content_type != NULL &&
	    gzip_accepted(http_header(req, "Accept-Encoding"))) {
		size_t gz_len = 0;
		char *gz = (char *)gzip_compress(data, len, &gz_len);
		if (gz != NULL) {
			free(data);
			data = gz;
			len = gz_len;
			gzipped = true;
		}
	}
	if (req->response != NULL)
		MHD_destroy_response(req->response);
	req->response = MHD_create_response_from_buffer(len, data, MHD_RESPMEM_MUST_FREE);
	if (req->response == NULL) {
		free(data);
		return;
	}
	req->status = status;
	req->retry_after_s = 0;
	free(req->captured);
	req->captured = NULL;
	req->captured_len = 0;
	if (req->capture && len > 0) {
		req->captured = strndup(data, len);
		req->captured_len = req->captured ? len : 0;
	}
	MHD_add_response_header(req->response, "X-Request-Id", req->request_id);
	if (content_type != NULL)
		MHD_add_response_header(req->response, "Content-Type", content_type);
	if (gzipped)
		MHD_add_response_header(req->response, "Content-Encoding", "gzip");
	if (reads)
		MHD_add_response_header(req->response, "Vary", "Accept-Encoding");
}

void http_reply_json(struct http_request *req, int status, json_t *body)
{
	char *text = NULL;

	if (body != NULL)
		text = json_dumps(body, JSON_COMPACT);
	json_decref(body);
	if (text == NULL) {
		struct floe_error err;
		floe_err(&err, FE_INTERNAL, "out of memory");
		if (status != 500)
			http_reply_error(req, &err);
		return;
	}
	reply_buffer(req, status, text, strlen(text), "application/json");
}

void http_reply_text(struct http_request *req, int status, char *text, size_t len)
{
	reply_buffer(req, status, text, len, "application/json");
}

void http_reply_gzipped(struct http_request *req, int status, char *gz, size_t len)
{
	/* Compressed already: below the on-the-fly path's notice. */
	reply_buffer(req, status, gz, len, NULL);
	if (req->response == NULL)
		return;
	MHD_add_response_header(req->response, "Content-Type", "application/json");
	MHD_add_response_header(req->response, "Content-Encoding", "gzip");
}

void http_reply_empty(struct http_request *req, int status)
{
	if (req->response != NULL)
		MHD_destroy_response(req->response);
	req->response = MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
	if (req->response == NULL)
		return;
	req->status = status;
	req->retry_after_s = 0;
	free(req->captured);
	req->captured = NULL;
	req->captured_len = 0;
	MHD_add_response_header(req->response, "X-Request-Id", req->request_id);
}

/* True for the methods that change the catalog. */
static bool method_mutates(const char *method)
{
	return strcmp(method, "POST") == 0 || strcmp(method, "DELETE") == 0 ||
	       strcmp(method, "PUT") == 0 || strcmp(method, "PATCH") == 0;
}

void http_reply_error(struct http_request *req, const struct floe_error *err)
{
	struct floe_error shown = *err;

	/* A mutation's 5xx says whether it took effect: 500 only when that is
	 * unknown, 503 when it is known that nothing changed. */
	if (method_mutates(req->method)) {
		shown.kind = floe_error_mutation_kind(err);
		if (shown.kind == FE_COMMIT_STATE_UNKNOWN && err->kind != FE_COMMIT_STATE_UNKNOWN)
			(void)snprintf(
				shown.message, sizeof(shown.message),
				"The database connection broke while the change was being committed; its outcome is unknown");
	}
	err = &shown;
	int status = floe_errkind_status(err->kind);
	json_t *body = floe_error_to_json(err);
	char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;

	json_decref(body);
	if (text == NULL) {
		static const char fallback[] = "{\"error\":{\"message\":\"Out of memory\","
					       "\"type\":\"InternalServerError\",\"code\":500}}";
		text = strdup(fallback);
		status = 500;
		if (text == NULL)
			return;
	}
	if (status >= 500)
		log_warn("http", "%s %s -> %d %s: %s rid=%s", req->method, req->path, status,
			 floe_errkind_type(err->kind), err->message, req->request_id);
	reply_buffer(req, status, text, strlen(text), "application/json");
	req->retry_after_s = err->kind == FE_AUDIT_UNAVAILABLE ? 30 : 1;
}

void http_add_header(struct http_request *req, const char *name, const char *value)
{
	char tag[600];
	size_t n = strlen(value);

	if (req->response == NULL)
		return;
	/* A gzip answer is another representation: its strong tag differs. */
	if (strcasecmp(name, "ETag") == 0 && n >= 2 && value[n - 1] == '"' && n < sizeof(tag) - 8 &&
	    MHD_get_response_header(req->response, "Content-Encoding") != NULL) {
		(void)snprintf(tag, sizeof(tag), "%.*s;gzip\"", (int)(n - 1), value);
		value = tag;
	}
	MHD_add_response_header(req->response, name, value);
}

void http_reply_typed(struct http_request *req, int status, char *text, size_t len,
		      const char *content_type)
{
	reply_buffer(req, status, text, len, content_type);
}

/* --- request accessors --- */

const char *http_param(const struct http_request *req, const char *name)
{
	size_t len = strlen(name);

	for (size_t i = 0; i < req->nparams; i++) {
		if (req->param_name_lens[i] == len && strncmp(req->param_names[i], name, len) == 0)
			return req->param_values[i];
	}
	return NULL;
}

const char *http_query_raw(struct http_request *req, const char *name)
{
	return MHD_lookup_connection_value(req->conn, MHD_GET_ARGUMENT_KIND, name);
}

bool http_query(struct http_request *req, const char *name, char **out, struct floe_error *err)
{
	const char *raw = http_query_raw(req, name);
	size_t len = 0;

	*out = NULL;
	if (raw == NULL)
		return true;
	if (!url_decode(raw, strlen(raw), true, out, &len, err))
		return false;
	if (!utf8_valid(*out, len) || strlen(*out) != len) {
		free(*out);
		*out = NULL;
		return floe_err(err, FE_BAD_REQUEST, "query parameter '%s' is not valid UTF-8 text",
				name);
	}
	return true;
}

bool http_client_address(struct http_request *req, char *out, size_t len)
{
	const union MHD_ConnectionInfo
		*ci = MHD_get_connection_info(req->conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);

	out[0] = '\0';
	if (ci == NULL || ci->client_addr == NULL)
		return false;
	socklen_t slen = ci->client_addr->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
								: sizeof(struct sockaddr_in);
	if (getnameinfo(ci->client_addr, slen, out, (socklen_t)len, NULL, 0, NI_NUMERICHOST) != 0) {
		out[0] = '\0';
		return false;
	}
	return true;
}

const char *http_header(struct http_request *req, const char *name)
{
	return MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, name);
}

bool http_body_json(struct http_request *req, json_t **out, struct floe_error *err)
{
	json_error_t jerr;

	*out = NULL;
	if (req->body_len == 0)
		return floe_err(err, FE_BAD_REQUEST,
				"request body is empty; a JSON object is required");
	/* The parsed form costs several times the text (measured: a 960 KB
	 * commit held 8.5 MB): it is counted in the budget too, as what the
	 * parse kept, so --max-pending-body-bytes bounds what is held. */
	long long before = jsonmem_thread_bytes();
	*out = json_loadb(req->body, req->body_len, JSON_REJECT_DUPLICATES, &jerr);
	if (*out == NULL)
		return floe_err(err, FE_BAD_REQUEST,
				"malformed JSON in request body: %s (line %d, column %d)",
				jerr.text, jerr.line, jerr.column);
	long long held = jsonmem_thread_bytes() - before;
	if (held > 0 && !parsed_reserve(req, held)) {
		json_decref(*out);
		*out = NULL;
		return floe_err(err, FE_UNAVAILABLE,
				"too many request bodies are held in memory (%lld bytes for this "
				"one, parsed); retry",
				(long long)req->body_len + held);
	}
	if (!json_is_object(*out)) {
		json_decref(*out);
		*out = NULL;
		return floe_err(err, FE_BAD_REQUEST, "request body must be a JSON object");
	}
	return true;
}

/* --- libmicrohttpd callbacks --- */

/* Keeps paths and query values percent-encoded: segments are split first
 * and decoded one by one, so %2F stays inside a namespace level. */
static size_t unescape_none(void *cls, struct MHD_Connection *conn, char *s)
{
	(void)cls;
	(void)conn;
	return strlen(s);
}

/* Adds req's CORS headers (cors.h): with preflight, when req is an
 * allowed origin's preflight, to a 204 made here; without, to req's
 * answer when req is not a preflight (one is answered whole already).
 * True when any was added. */
static bool cors_add_headers(struct http_request *req, bool preflight)
{
	const char *allowed = req->app->cfg->cors_origins;

	/* Off (the default): no header is looked up on the request path. */
	if (allowed == NULL || allowed[0] == '\0')
		return false;
	struct cors_request c = {
		.method = req->method,
		.origin = http_header(req, "Origin"),
		.request_method = http_header(req, "Access-Control-Request-Method"),
		.request_headers = http_header(req, "Access-Control-Request-Headers"),
	};
	struct cors_header h[CORS_MAX_HEADERS];

	if (preflight != cors_is_preflight(&c))
		return false;
	size_t n = cors_headers(allowed, &c, h);
	if (n == 0)
		return false;
	if (preflight)
		http_reply_empty(req, 204);
	for (size_t i = 0; i < n; i++)
		http_add_header(req, h[i].name, h[i].value);
	return true;
}

/* The {prefix} of a /v1/{prefix}/ route names a warehouse: the default
 * one (by its name or URL) or one of --warehouses, whose catalog the
 * request then reads and writes; a prefix naming none is answered 404
 * NoSuchWarehouseException, the type /v1/config answers for an unknown
 * warehouse, so a client shows the name it got wrong. */
static bool prefix_admit(struct http_request *req)
{
	const struct floe_config *cfg = req->app->cfg;
	const char *raw = http_param(req, "prefix");
	struct floe_error err;
	char *name = NULL;
	size_t len = 0;

	floe_error_clear(&err);
	req->warehouse = 0;
	if (raw == NULL)
		return true;
	if (!url_decode(raw, strlen(raw), false, &name, &len, &err)) {
		http_reply_error(req, &err);
		return false;
	}
	int w = strlen(name) == len ? warehouses_find(&cfg->warehouses, cfg->warehouse_name,
						      cfg->warehouse, name)
				    : -1;
	if (w < 0)
		wording_no_such_warehouse(name, &err);
	free(name);
	if (err.kind != FE_NONE) {
		http_reply_error(req, &err);
		return false;
	}
	req->warehouse = w;
	return true;
}

/* Ends the hold of one job on a request handed on; the last one lets
 * libmicrohttpd send its answer (and free it, so nothing may touch req
 * after this). */
static void async_let_go(struct http_request *req)
{
	struct app *app = req->app;

	if (atomic_fetch_sub(&req->holders, 1) != 1)
		return;
	MHD_resume_connection(req->conn);
	atomic_fetch_sub(&app->async, 1);
}

/* Suspends the connection on libmicrohttpd's thread (the only one allowed
 * to, from within the access handler): one job holds the request now. */
static void suspend(struct http_request *req)
{
	req->suspended = true;
	atomic_store(&req->holders, 1);
	atomic_fetch_add(&req->app->async, 1);
	MHD_suspend_connection(req->conn);
}

/* Runs a routed request: authentication, the warehouse its prefix names,
 * then the route (the gate). On a request worker, or on libmicrohttpd's
 * thread for an inline route. */
static void route_run(struct http_request *req, const struct route *route)
{
	struct floe_error err;

	if (req->app->middleware.admit != NULL && !req->app->middleware.admit(req, route))
		return;
	if (!prefix_admit(req))
		return;
	if (req->app->middleware.run != NULL)
		req->app->middleware.run(req, route);
	/* Handed on: another job answers, and may have already. */
	if (!req->handed_on && req->response == NULL) {
		floe_err(&err, FE_INTERNAL, "no answer was produced");
		floe_error_set_outcome(&err, FO_UNKNOWN);
		http_reply_error(req, &err);
	}
}

/* A routed request's job on a request worker (refused: the request queue
 * is full or stopping). */
static void request_job(void *arg, const struct floe_error *refused)
{
	struct http_request *req = arg;

	if (refused != NULL)
		http_reply_error(req, refused);
	else
		route_run(req, req->route);
	/* This job's hold keeps req alive even when it was handed on. */
	if (req->handed_on)
		async_let_go(req);
	else
		http_async_complete(req);
}

/* Whether the route may run on libmicrohttpd's thread: marked inline, and
 * no token to check (which may take the database). */
static bool runs_inline(struct http_request *req, const struct route *route)
{
	const struct middleware *m = &req->app->middleware;

	if (req->app->requests == NULL)
		return true;
	return route->queue == ROUTE_QUEUE_INLINE &&
	       (m->admits_all == NULL || m->admits_all(req, route));
}

static void dispatch(struct http_request *req)
{
	struct floe_error err;
	const struct route *route = NULL;
	char allow[128];

	floe_error_clear(&err);
	if (req->body_too_large) {
		floe_err(&err, FE_TOO_LARGE, "request body exceeds the limit of %lld bytes",
			 req->app->cfg->max_body_bytes);
		http_reply_error(req, &err);
		return;
	}
	if (req->body_over_budget) {
		floe_err(&err, FE_UNAVAILABLE, "too many request bodies are being received; retry");
		http_reply_error(req, &err);
		return;
	}
	/* An allowed origin's preflight is answered here; any other goes to
	 * the router. */
	if (strcmp(req->method, "OPTIONS") == 0 && cors_add_headers(req, true))
		return;
	switch (router_match(req, &route, allow, sizeof(allow))) {
	case ROUTE_FOUND:
		req->route_slot = router_slot(route);
		req->route = route;
		if (runs_inline(req, route)) {
			route_run(req, route);
			return;
		}
		/* Everything else may wait on the database: on a request
		 * worker, this thread free meanwhile. */
		suspend(req);
		if (!workq_submit(req->app->requests, request_job, req, &err))
			request_job(req, &err);
		return;
	case ROUTE_BAD_METHOD:
		floe_err(&err, FE_METHOD_NOT_ALLOWED, "method %s is not allowed on %s; allowed: %s",
			 req->method, req->path, allow);
		http_reply_error(req, &err);
		http_add_header(req, "Allow", allow);
		return;
	case ROUTE_NO_PATH:
		break;
	}
	floe_err(&err, FE_NOT_FOUND, "no route for %s %s", req->method, req->path);
	http_reply_error(req, &err);
}

static enum MHD_Result queue(struct http_request *req)
{
	enum MHD_Result r;

	req->queued = true;
	if (req->response == NULL)
		return MHD_NO;
	/* While stopping, each keep-alive connection ends with its next
	 * answer, so the load drains within the grace period. */
	if (atomic_load(&req->app->stopping))
		MHD_add_response_header(req->response, "Connection", "close");
	/* Every answer passes here, so every 503 says when to come back: a
	 * client may retry a request that is not idempotent only when
	 * Retry-After is there. */
	if (req->status == 503 && MHD_get_response_header(req->response, "Retry-After") == NULL) {
		char seconds[16];
		(void)snprintf(seconds, sizeof(seconds), "%d",
			       req->retry_after_s > 0 ? req->retry_after_s : 1);
		MHD_add_response_header(req->response, "Retry-After", seconds);
	}
	(void)cors_add_headers(req, false);
	r = MHD_queue_response(req->conn, (unsigned int)req->status, req->response);
	MHD_destroy_response(req->response);
	req->response = NULL;
	return r;
}

/* The declared Content-Length, 0 when absent or malformed (libmicrohttpd
 * rejects a malformed length). */
static unsigned long long content_length(struct http_request *req)
{
	const char *cl = MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, "Content-Length");
	char *end = NULL;
	unsigned long long v;

	if (cl == NULL)
		return 0;
	errno = 0;
	v = strtoull(cl, &end, 10);
	if (errno != 0 || end == cl)
		return 0;
	return v;
}

static enum MHD_Result framing_each(void *cls, enum MHD_ValueKind kind, const char *name,
				    size_t name_len, const char *value, size_t value_len)
{
	(void)kind;
	return framing_field(cls, name, name_len, value, value_len) ? MHD_YES : MHD_NO;
}

/* Whether every parser reads the request's body length as libmicrohttpd
 * does (framing.h); else err says why, and the caller answers and closes
 * before any body byte is read. Called on the first callback. */
static bool framing_admit(struct http_request *req, const char *version, struct floe_error *err)
{
	struct framing f;

	framing_init(&f);
	(void)MHD_get_connection_values_n(req->conn, MHD_HEADER_KIND, framing_each, &f);
	return framing_verdict(&f, strcmp(version, MHD_HTTP_VERSION_1_0) == 0, err);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
				  const char *method, const char *version, const char *upload_data,
				  size_t *upload_data_size, void **req_cls)
{
	struct app *app = cls;
	struct http_request *req = *req_cls;

	if (req == NULL) {
		req = request_new(app, conn, url, method);
		if (req == NULL)
			return MHD_NO;
		*req_cls = req;
		atomic_fetch_add(&app->inflight, 1);
		unsigned long long cl = content_length(req);
		struct floe_error err;
		floe_error_clear(&err);
		if (!framing_admit(req, version, &err))
			log_warn("http",
				 "%s %s: ambiguous framing refused, connection closed: %s rid=%s",
				 method, req->path, err.message, req->request_id);
		else if (cl > (unsigned long long)app->cfg->max_body_bytes)
			floe_err(&err, FE_TOO_LARGE, "request body exceeds the limit of %lld bytes",
				 app->cfg->max_body_bytes);
		else if (cl > 0 && !body_reserve(req, (size_t)cl + 1))
			floe_err(&err, FE_UNAVAILABLE,
				 "too many request bodies are being received; retry");
		if (err.kind != FE_NONE) {
			/* Answer now, without reading the body; the connection
			 * closes afterwards (libmicrohttpd discards the rest of
			 * what was sent on it), so no byte after these headers
			 * is read as another request. */
			http_reply_error(req, &err);
			http_add_header(req, "Connection", "close");
			return queue(req);
		}
		/* Answering on a later call keeps the connection alive. */
		return MHD_YES;
	}
	if (req->queued) {
		*upload_data_size = 0;
		return MHD_YES;
	}
	if (*upload_data_size > 0) {
		size_t n = *upload_data_size;
		size_t max = (size_t)app->cfg->max_body_bytes;

		*upload_data_size = 0;
		if (req->body_over_budget)
			return MHD_YES;
		if (req->body_too_large || req->body_len + n > max) {
			/* Keep reading (and dropping) so the 413 is delivered
			 * at the end of a chunked body. */
			req->body_too_large = true;
			body_forget(req);
			req->body_len = 0;
			return MHD_YES;
		}
		if (req->body_len + n + 1 > req->body_cap) {
			size_t cap = req->body_cap ? req->body_cap : 4096;
			while (cap < req->body_len + n + 1)
				cap *= 2;
			if (cap > max + 1)
				cap = max + 1;
			/* A declared length (already counted) is the exact size. */
			if (req->body_reserved > req->body_len + n && req->body_reserved < cap)
				cap = req->body_reserved;
			if (!body_reserve(req, cap)) {
				/* Dropped like a body too large; 503 at the end. */
				req->body_over_budget = true;
				body_forget(req);
				req->body_len = 0;
				req->body_cap = 0;
				return MHD_YES;
			}
			/* Not realloc: the old buffer is wiped before it is
			 * freed, as any body is. */
			char *nb = malloc(cap);
			if (nb == NULL)
				return MHD_NO;
			if (req->body != NULL)
				memcpy(nb, req->body, req->body_len);
			body_forget(req);
			req->body = nb;
			req->body_cap = cap;
		}
		memcpy(req->body + req->body_len, upload_data, n);
		req->body_len += n;
		req->body[req->body_len] = '\0';
		return MHD_YES;
	}
	if (req->suspended) {
		/* Resumed: the other thread has made the answer. */
		req->suspended = false;
		return queue(req);
	}
	log_set_request(req->request_id);
	log_set_principal(req->principal);
	dispatch(req);
	log_set_request(NULL);
	if (req->suspended)
		return MHD_YES;
	return queue(req);
}

void http_hand_on(struct http_request *req)
{
	if (req->suspended)
		atomic_fetch_add(&req->holders, 1);
	else
		suspend(req);
	req->handed_on = true;
}

void http_async_complete(struct http_request *req)
{
	struct app *app = req->app;

	if (req->response == NULL) {
		struct floe_error err;
		floe_err(&err, FE_INTERNAL, "no answer was produced");
		floe_error_set_outcome(&err, FO_UNKNOWN);
		http_reply_error(req, &err);
	}
	if (app->middleware.finish != NULL)
		app->middleware.finish(req);
	async_let_go(req);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **req_cls,
			 enum MHD_RequestTerminationCode toe)
{
	struct app *app = cls;
	struct http_request *req = *req_cls;
	struct timespec now;
	long long us;

	(void)conn;
	if (req == NULL)
		return;
	clock_gettime(CLOCK_MONOTONIC, &now);
	us = metric_elapsed_us(&req->start, &now);
	metric_add(METRIC_HTTP_REQUESTS,
		   metric_cell(METRIC_HTTP_REQUESTS, req->route_slot,
			       metric_status_slot(req->status)),
		   1);
	metric_observe(METRIC_HTTP_DURATION, req->route_slot, us);
	log_set_request(req->request_id);
	log_set_principal(req->principal);
	const char *who = req->principal != NULL ? req->principal : "anonymous";
	if (toe == MHD_REQUEST_TERMINATED_COMPLETED_OK)
		log_info("access", "%s %s %d %lldus principal=%s rid=%s", req->method, req->path,
			 req->status, us, who, req->request_id);
	else
		log_info("access", "%s %s %d %lldus principal=%s rid=%s aborted(%d)", req->method,
			 req->path, req->status, us, who, req->request_id, (int)toe);
	log_set_request(NULL);
	request_free(req);
	*req_cls = NULL;
	atomic_fetch_sub(&app->inflight, 1);
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	char line[512];
	size_t n;

	(void)cls;
	(void)vsnprintf(line, sizeof(line), fmt, ap);
	n = strlen(line);
	while (n > 0 && line[n - 1] == '\n')
		line[--n] = '\0';
	log_warn("http", "%s", line);
}

/* The global connection limit: the configured one, kept below the
 * open-file limit (raised to its hard maximum) with room for the
 * database connections and files. */
static unsigned int connection_limit(const struct floe_config *cfg)
{
	struct rlimit rl;
	unsigned long long want = (unsigned long long)cfg->connection_limit;

	if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
		return (unsigned int)want;
	if (rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		(void)setrlimit(RLIMIT_NOFILE, &rl);
		(void)getrlimit(RLIMIT_NOFILE, &rl);
	}
	unsigned long long spare = 64ULL +
				   2ULL * (unsigned long long)(cfg->threads + cfg->http_threads +
							       cfg->commit_threads +
							       cfg->publish_threads);
	if (rl.rlim_cur != RLIM_INFINITY && want + spare > rl.rlim_cur) {
		unsigned long long cap = rl.rlim_cur > spare + 16 ? rl.rlim_cur - spare : 16;
		log_warn(
			"http",
			"connection limit %llu lowered to %llu to stay below the open-file limit %llu",
			want, cap, (unsigned long long)rl.rlim_cur);
		want = cap;
	}
	return (unsigned int)want;
}

struct MHD_Daemon *http_start(struct app *app)
{
	const struct floe_config *cfg = app->cfg;
	struct addrinfo hints, *ai = NULL;
	char port[16];
	struct MHD_Daemon *d;
	/* poll(), not epoll: libmicrohttpd 0.9.75's quiesce races its own
	 * epoll workers for the listening socket and aborts the process on a
	 * SIGTERM now and then; poll() quiesces through the inter-thread
	 * channel, and measured as fast with 8 to 512 connections. */
	unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL | MHD_USE_ITC |
			     MHD_USE_ERROR_LOG | MHD_ALLOW_SUSPEND_RESUME;
	int rc;

	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICSERV | AI_PASSIVE;
	(void)snprintf(port, sizeof(port), "%d", cfg->listen_port);
	rc = getaddrinfo(cfg->listen_host, port, &hints, &ai);
	if (rc != 0) {
		log_error("http", "cannot resolve listen address %s: %s", cfg->listen_host,
			  gai_strerror(rc));
		return NULL;
	}
	if (ai->ai_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	unsigned int limit = connection_limit(cfg);
	d = MHD_start_daemon(flags, 0, NULL, NULL, on_request, app, MHD_OPTION_EXTERNAL_LOGGER,
			     mhd_log, NULL, MHD_OPTION_THREAD_POOL_SIZE,
			     (unsigned int)cfg->http_threads, MHD_OPTION_SOCK_ADDR, ai->ai_addr,
			     MHD_OPTION_NOTIFY_COMPLETED, on_completed, app,
			     MHD_OPTION_UNESCAPE_CALLBACK, unescape_none, NULL,
			     MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)cfg->idle_timeout_seconds,
			     MHD_OPTION_CONNECTION_LIMIT, limit, MHD_OPTION_PER_IP_CONNECTION_LIMIT,
			     (unsigned int)cfg->per_ip_connection_limit,
			     MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)HTTP_CONNECTION_MEMORY,
			     MHD_OPTION_LISTEN_BACKLOG_SIZE, (unsigned int)1024, MHD_OPTION_END);
	if (d == NULL)
		log_error("http", "cannot listen on %s:%d: %s", cfg->listen_host, cfg->listen_port,
			  log_strerror(errno));
	freeaddrinfo(ai);
	return d;
}

int http_bound_port(struct MHD_Daemon *d)
{
	const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
	return info ? (int)info->port : -1;
}

bool http_stop(struct MHD_Daemon *d, struct app *app, int grace_seconds)
{
	atomic_store(&app->stopping, true);
	MHD_socket fd = MHD_quiesce_daemon(d);

	/* New connections are refused from now on, but the descriptor is
	 * closed only once the daemon is stopped: libmicrohttpd's workers may
	 * still be polling it, and a number closed
	 * under them could be reused by another descriptor. */
	if (fd != MHD_INVALID_SOCKET)
		(void)shutdown(fd, SHUT_RDWR);
	/* Done when nothing has been in flight for a quarter of a second: a
	 * keep-alive client that just had an answer without "Connection:
	 * close" gets the time to send its next request, which is served. */
	for (int i = 0, quiet = 0; i < grace_seconds * 20 && quiet < 5; i++) {
		usleep(50000);
		quiet = atomic_load(&app->inflight) == 0 ? quiet + 1 : 0;
	}
	long left = atomic_load(&app->inflight);
	if (left > 0)
		log_warn("http",
			 "%ld requests still running after %d s; answering those queued with 503",
			 left, grace_seconds);
	/* Jobs not started by now are answered, not run, and not dropped:
	 * each one resumes its connection. */
	workq_cancel_pending(app->requests);
	workq_cancel_pending(app->commits);
	workq_cancel_pending(app->publishes);
	/* A suspended connection must be resumed before the daemon stops
	 * (libmicrohttpd aborts otherwise): wait for the jobs still running,
	 * which the database and hook timeouts bound. */
	for (int i = 0; atomic_load(&app->async) > 0 && i < HTTP_ASYNC_WAIT_SECONDS * 20; i++)
		usleep(50000);
	left = atomic_load(&app->async);
	if (left > 0) {
		log_error(
			"http",
			"%ld requests still running after %d s more; exiting without closing their connections",
			left, HTTP_ASYNC_WAIT_SECONDS);
		return false;
	}
	/* A resumed connection's answer is written by libmicrohttpd's
	 * thread: stopping first would close it without that answer. */
	for (int i = 0; atomic_load(&app->inflight) > 0 && i < HTTP_DRAIN_SECONDS * 20; i++)
		usleep(50000);
	MHD_stop_daemon(d);
	if (fd != MHD_INVALID_SOCKET)
		close(fd);
	return true;
}
