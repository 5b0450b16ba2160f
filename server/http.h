/*
 * http.h - the HTTP layer over libmicrohttpd: per-request state, capped
 * request bodies, JSON answers, the Iceberg error body, request ids and the
 * access log. Route handlers see only struct http_request and these calls.
 */
#ifndef FLOE_HTTP_H
#define FLOE_HTTP_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <time.h>
#include <jansson.h>

#include "app.h"
#include "error.h"
#include "ident.h"
#include "tokencache.h"

struct MHD_Connection;
struct MHD_Response;
struct MHD_Daemon;
struct call;

#define HTTP_MAX_SEGMENTS 16
#define HTTP_MAX_PARAMS 6

struct http_request {
	struct app *app;
	struct MHD_Connection *conn;
	const char *method; /* owned by libmicrohttpd */
	char *path;         /* the raw path, still percent-encoded */
	char *segbuf;       /* path split into segments in place */
	const char *segs[HTTP_MAX_SEGMENTS];
	size_t nsegs;
	bool too_many_segments;
	char request_id[40];
	/* The authenticated principal and its token's client id, set by the
	 * authentication middleware and borrowed for the request (deferred
	 * jobs included: the request outlives them); NULL: none, recorded
	 * as "anonymous". */
	const char *principal;
	const char *client_id;
	struct tokencache_entry who; /* what principal and client_id point into */
	/* who as catalog/authz.c reads it; set with principal. */
	struct principal acting;
	long long acting_roles[TOKENCACHE_MAX_ROLES];
	struct timespec start;
	size_t route_slot; /* counted under (metric.h); 0 until routed */
	int warehouse;     /* the {prefix}'s (warehouses_find): 0 the default */

	char *body; /* capped at the configured maximum */
	size_t body_len;
	size_t body_cap;
	size_t body_reserved; /* counted in app->body_bytes */
	/* What the parsed body holds (jansson's allocations of its parse),
	 * counted in app->body_bytes beside the raw body. */
	long long parsed_reserved;
	bool body_too_large;
	bool body_over_budget; /* every body held at once exceeds the budget */

	/* The pool this request borrows from: the request workers' until the
	 * request is handed to a commit or publish thread. */
	struct store_pool *pool;
	const struct route *route; /* routed: the row it runs (router.h) */

	/* Route parameters, raw, pointing into segbuf. */
	const char *param_names[HTTP_MAX_PARAMS]; /* not NUL-terminated */
	size_t param_name_lens[HTTP_MAX_PARAMS];
	const char *param_values[HTTP_MAX_PARAMS];
	size_t nparams;

	/* The answer, queued once the handler returns. */
	struct MHD_Response *response;
	int status;
	int retry_after_s; /* a 503's Retry-After; 0: the default, 1 s */
	bool queued;
	bool capture;        /* keep a copy of the body (idempotency) */
	bool idem_claimed;   /* an Idempotency-Key awaits the answer */
	char idem_owner[40]; /* this request's claim on the key */
	bool suspended;      /* answered later, from another thread */
	/* Handed on by the thread running it to a queue's job, which answers
	 * (http_hand_on); written and read by the thread that handed it. */
	bool handed_on;
	/* The jobs that must let the request go before its answer is sent:
	 * while one holds it, the request is not freed. */
	atomic_int holders;
	struct call *call; /* the gate's (gate.h), freed with the request */
	char *captured;
	size_t captured_len;
};

/* Starts serving on the configured address. Returns NULL (logged) when
 * the address cannot be used. */
struct MHD_Daemon *http_start(struct app *app);

/* The port actually bound (useful with port 0). */
int http_bound_port(struct MHD_Daemon *d);

/* Stops accepting and answers with "Connection: close" from now on; waits
 * up to grace_seconds for in-flight requests; answers every job still
 * queued with 503; waits (bounded) for the jobs still running, so that no
 * connection is suspended; then stops every thread and closes every
 * connection. Returns false when a job was still running after that
 * bound: the daemon is then left running (stopping it would abort) and
 * the caller should exit non-zero. */
bool http_stop(struct MHD_Daemon *d, struct app *app, int grace_seconds);

/* Splits req->segbuf (a copy of the raw path) in place into req->segs:
 * "/a/b" gives "a" and "b", "/" none, "/a/" "a" and "". More than
 * HTTP_MAX_SEGMENTS sets too_many_segments. */
void http_split_segments(struct http_request *req);

/* The raw value of route parameter name, or NULL. */
const char *http_param(const struct http_request *req, const char *name);

/* A query argument, percent-decoded ('+' is a space). *out is NULL when
 * absent; else a new string (caller frees). FE_BAD_REQUEST when it is not
 * valid UTF-8 or is malformed. */
bool http_query(struct http_request *req, const char *name, char **out,
		struct floe_error *err) FLOE_WUR;

/* The raw query argument (not decoded), or NULL. */
const char *http_query_raw(struct http_request *req, const char *name);

/* The client's address (numeric) into out; false, out empty, when it
 * cannot be told. */
bool http_client_address(struct http_request *req, char *out, size_t len);

/* A request header, or NULL. */
const char *http_header(struct http_request *req, const char *name);

/* Parses the body as a JSON object. FE_BAD_REQUEST when empty, malformed
 * or not an object. *out is a new reference. */
bool http_body_json(struct http_request *req, json_t **out, struct floe_error *err) FLOE_WUR;

/* Answers with a JSON body; steals body. */
void http_reply_json(struct http_request *req, int status, json_t *body);

/* Answers with a JSON text already encoded; steals text (malloc'd). */
void http_reply_text(struct http_request *req, int status, char *text, size_t len);

/* Answers with a JSON text already gzip-compressed (Content-Encoding:
 * gzip, for a client that accepts it); steals gz (malloc'd). Any other
 * JSON answer of a GET of at least HTTP_GZIP_MIN_BYTES is compressed on
 * the fly when the client accepts gzip, and every GET answer says that it
 * varies with Accept-Encoding. */
#define HTTP_GZIP_MIN_BYTES ((size_t)64 * 1024)
void http_reply_gzipped(struct http_request *req, int status, char *gz, size_t len);

/* Answers with no body (204, HEAD answers). */
void http_reply_empty(struct http_request *req, int status);

/* Answers with the Iceberg error body for err. Every answer with status
 * 503, of this function or any other, is sent with Retry-After (30 s for
 * AuditUnavailableException, else 1 s): the header is added where every
 * answer is queued, so no 503 goes without it. */
void http_reply_error(struct http_request *req, const struct floe_error *err);

/*
 * Threads. libmicrohttpd's few threads (--http-threads) read requests and
 * write answers and never wait on the database: a routed request is
 * suspended there and run by a job of the request queue (app->requests,
 * --threads workers) unless its route is inline (router.h). The route's
 * handler may hand the request on once more, to the commit, publish or
 * hashing queue; that job answers it.
 */

/*
 * Hands the request to another job, which answers with the http_reply_*
 * calls and ends with http_async_complete (long work such as calling
 * audit hooks must not hold a request worker). Call before submitting the
 * job, from the thread running the request (libmicrohttpd's, for an
 * inline route: the connection is suspended then), at most once; the
 * caller then touches the request no more but to return.
 */
void http_hand_on(struct http_request *req);

/* Ends the work of a request handed on: its answer goes out. Call once,
 * from the job that did the work, after replying. */
void http_async_complete(struct http_request *req);

/* Adds a header to the answer already made. */
void http_add_header(struct http_request *req, const char *name, const char *value);

/* Answers with a body of the given Content-Type (not JSON: the /metrics
 * page); steals text (malloc'd). */
void http_reply_typed(struct http_request *req, int status, char *text, size_t len,
		      const char *content_type);

#endif
