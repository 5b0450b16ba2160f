/*
 * s3sign.c - engines' S3 requests read and signed with floe's
 * credentials (s3sign.h). The configuration is that of the S3 store
 * holding the table (s3_signing_get), so each warehouse's requests are
 * signed with its own keys; the signature is sigv4.c's. Nothing here
 * decides who may have what signed.
 */
#include "s3sign.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "ident.h"
#include "location.h"
#include "s3.h"
#include "sigv4.h"

#define SIGN_QUERY_MAX 4096
#define SIGN_DELETE_KEYS_MAX 1000
#define SIGN_VALUES_MAX 16
#define SIGN_AUTH_MAX 1024

bool fileio_s3_client_config(const char *table_location, struct fileio_s3_client *out)
{
	struct s3_signing cfg;

	if (!s3_signing_get(table_location, &cfg))
		return false;
	(void)snprintf(out->endpoint, sizeof(out->endpoint), "%s://%s", cfg.ep.scheme, cfg.ep.host);
	out->path_style = cfg.ep.path_style;
	(void)snprintf(out->region, sizeof(out->region), "%s", cfg.region);
	return true;
}

void fileio_s3_target_clear(struct fileio_s3_target *t)
{
	free(t->location);
	free(t->bucket);
	free(t->key);
	for (size_t i = 0; i < t->nparams; i++) {
		free(t->names[i]);
		free(t->values[i]);
	}
	free(t->url);
	free(t->canonical_query);
	memset(t, 0, sizeof(*t));
}

const char *fileio_s3_target_param(const struct fileio_s3_target *t, const char *name)
{
	for (size_t i = 0; i < t->nparams; i++) {
		if (strcmp(t->names[i], name) == 0)
			return t->values[i];
	}
	return NULL;
}

/* A decoded text that holds no NUL byte, or false with FE_BAD_REQUEST. */
static bool decode_text(const char *in, size_t len, const char *what, char **out,
			struct floe_error *err)
{
	size_t ol = 0;

	*out = NULL;
	if (!url_decode(in, len, false, out, &ol, err))
		return floe_err(err, FE_BAD_REQUEST, "the request URI's %s has a malformed escape",
				what);
	if (strlen(*out) != ol) {
		free(*out);
		*out = NULL;
		return floe_err(err, FE_BAD_REQUEST, "the request URI's %s holds a NUL byte", what);
	}
	return true;
}

static bool parse_query(const char *q, struct fileio_s3_target *t, struct floe_error *err)
{
	for (const char *p = q; *p != '\0';) {
		size_t len = strcspn(p, "&");
		if (len > 0) {
			if (t->nparams == FILEIO_SIGN_PARAMS_MAX)
				return floe_err(err, FE_BAD_REQUEST,
						"the request URI has more than %d query parameters",
						FILEIO_SIGN_PARAMS_MAX);
			const char *eq = memchr(p, '=', len);
			size_t nl = eq != NULL ? (size_t)(eq - p) : len;
			size_t i = t->nparams;
			if (!decode_text(p, nl, "query", &t->names[i], err))
				return false;
			t->nparams++;
			if (!decode_text(eq != NULL ? eq + 1 : "", eq != NULL ? len - nl - 1 : 0,
					 "query", &t->values[i], err))
				return false;
		}
		p += len;
		if (*p == '&')
			p++;
	}
	char canon[SIGN_QUERY_MAX];
	if (!sigv4_canonical_query(q, canon, sizeof(canon)))
		return floe_err(err, FE_BAD_REQUEST, "the request URI's query cannot be read");
	t->canonical_query = strdup(canon);
	return t->canonical_query != NULL || floe_err(err, FE_INTERNAL, "out of memory");
}

bool fileio_s3_key_segments_ok(const char *key, bool prefix)
{
	if (key[0] == '\0')
		return true;
	for (const char *p = key;;) {
		size_t n = strcspn(p, "/");
		if (n == 0 && prefix && p != key && p[0] == '\0')
			return true; /* "a/b/": a listing's prefix may end in '/' */
		if (n == 0 || (n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
			return false;
		if (p[n] == '\0')
			return true;
		p += n + 1;
	}
}

/* Splits the decoded path into bucket (path-style) and key. */
static bool split_path(const char *path, bool path_style, struct fileio_s3_target *t,
		       struct floe_error *err)
{
	const char *k = path + 1;

	if (path_style) {
		size_t bl = strcspn(k, "/");
		t->bucket = strndup(k, bl);
		k = k[bl] == '/' ? k + bl + 1 : k + bl;
	}
	t->key = strdup(k);
	if (t->bucket == NULL || t->key == NULL)
		return floe_err(err, FE_INTERNAL, "out of memory");
	if (!location_bucket_valid(t->bucket, strlen(t->bucket)))
		return floe_err(err, FE_BAD_REQUEST, "the request URI names no valid bucket");
	if (strlen(t->key) > S3_KEY_MAX)
		return floe_err(err, FE_BAD_REQUEST,
				"the request URI's key is longer than %d bytes", S3_KEY_MAX);
	if (!fileio_s3_key_segments_ok(t->key, false))
		return floe_err(err, FE_BAD_REQUEST,
				"the request URI's key has an empty, '.' or '..' segment");
	return true;
}

/* Checks the authority against the endpoint; virtual-hosted, takes the
 * bucket from it. */
static bool check_host(const char *auth, size_t al, const struct s3_signing *cfg,
		       struct fileio_s3_target *t, struct floe_error *err)
{
	size_t hl = strlen(cfg->ep.host);

	if (memchr(auth, '@', al) != NULL)
		return floe_err(err, FE_BAD_REQUEST, "the request URI may not carry user info");
	if (cfg->ep.path_style) {
		if (al == hl && strncasecmp(auth, cfg->ep.host, hl) == 0)
			return true;
	} else if (al > hl + 1 && auth[al - hl - 1] == '.' &&
		   strncasecmp(auth + al - hl, cfg->ep.host, hl) == 0) {
		t->bucket = strndup(auth, al - hl - 1);
		return t->bucket != NULL || floe_err(err, FE_INTERNAL, "out of memory");
	}
	return floe_err(err, FE_FORBIDDEN,
			"the request is not for floe's S3 endpoint %s://%s (%s addressing)",
			cfg->ep.scheme, cfg->ep.host,
			cfg->ep.path_style ? "path-style" : "virtual-hosted");
}

bool fileio_s3_target_parse(const char *table_location, const char *uri, struct fileio_s3_target *t,
			    struct floe_error *err)
{
	struct s3_signing cfg;
	char *path = NULL;
	bool ok = false;

	memset(t, 0, sizeof(*t));
	if (table_location == NULL || !s3_signing_get(table_location, &cfg))
		return floe_err(err, FE_UNSUPPORTED,
				"remote signing needs an s3:// warehouse; this one is not on S3");
	t->location = strdup(table_location);
	if (t->location == NULL)
		return floe_err(err, FE_INTERNAL, "out of memory");
	size_t ul = strlen(uri);
	if (ul > FILEIO_SIGN_URI_MAX)
		return floe_err(err, FE_BAD_REQUEST, "the request URI is longer than %d bytes",
				FILEIO_SIGN_URI_MAX);
	const char *sep = strstr(uri, "://");
	if (sep == NULL || strchr(uri, '#') != NULL)
		return floe_err(err, FE_BAD_REQUEST,
				"the request URI is not an absolute http(s) URI");
	for (const char *c = uri; *c != '\0'; c++) {
		if ((unsigned char)*c <= ' ' || *c == 0x7f)
			return floe_err(err, FE_BAD_REQUEST,
					"the request URI holds a space or control character");
	}
	size_t sl = (size_t)(sep - uri);
	if (sl != strlen(cfg.ep.scheme) || strncasecmp(uri, cfg.ep.scheme, sl) != 0) {
		floe_err(err, FE_FORBIDDEN, "the request is not for floe's S3 endpoint %s://%s",
			 cfg.ep.scheme, cfg.ep.host);
		goto done;
	}
	const char *auth = sep + 3;
	size_t al = strcspn(auth, "/?");
	if (al == 0) {
		floe_err(err, FE_BAD_REQUEST, "the request URI names no host");
		goto done;
	}
	if (!check_host(auth, al, &cfg, t, err))
		goto done;
	const char *p = auth + al;
	size_t pl = strcspn(p, "?");
	if (pl == 0) {
		path = strdup("/");
		if (path == NULL) {
			floe_err(err, FE_INTERNAL, "out of memory");
			goto done;
		}
	} else if (!decode_text(p, pl, "path", &path, err)) {
		goto done;
	}
	if (!split_path(path, cfg.ep.path_style, t, err) ||
	    !parse_query(p[pl] == '?' ? p + pl + 1 : "", t, err))
		goto done;
	t->url = s3_request_url(&cfg.ep, t->bucket, t->key, t->canonical_query);
	if (t->url == NULL) {
		floe_err(err, FE_INTERNAL, "out of memory");
		goto done;
	}
	ok = true;
done:
	free(path);
	if (!ok)
		fileio_s3_target_clear(t);
	return ok;
}

bool fileio_s3_header_unsigned(const char *name)
{
	static const char *const names[] = {
		"host",
		"user-agent",
		"expect",
		"connection",
		"content-length",
		"transfer-encoding",
		"accept",
		"accept-encoding",
		"x-amzn-trace-id",
		"traceparent",
		"tracestate",
		"amz-sdk-invocation-id",
		"amz-sdk-request",
		"cache-control" /* a signer answer's, never the request's */,
	};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (strcmp(name, names[i]) == 0)
			return true;
	}
	return false;
}

struct sign_headers {
	struct sigv4_header h[SIGV4_HEADERS_MAX];
	char *owned[SIGV4_HEADERS_MAX * 2];
	size_t n;
	size_t nowned;
	const char *date;
	const char *payload;
	const char *md5;
};

static char *keep(struct sign_headers *s, char *text)
{
	if (text != NULL)
		s->owned[s->nowned++] = text;
	return text;
}

/* The values of one header, ','-joined (new), or NULL with err. */
static char *joined_values(const char *name, const json_t *v, struct floe_error *err)
{
	char *out = NULL;
	size_t len = 0;
	size_t i;
	json_t *e;

	if (json_is_string(v))
		v = json_pack("[O]", v);
	else
		json_incref((json_t *)v);
	if (!json_is_array(v) || json_array_size(v) == 0 || json_array_size(v) > SIGN_VALUES_MAX) {
		floe_err(err, FE_BAD_REQUEST,
			 "header %.128s: its value is a list of 1 to %d strings", name,
			 SIGN_VALUES_MAX);
		goto done;
	}
	json_array_foreach(v, i, e) {
		const char *s = json_string_value(e);
		size_t el = s != NULL ? json_string_length(e) : 0;
		if (s == NULL || strlen(s) != el || len + el + 1 > SIGV4_HEADER_VALUE_MAX) {
			floe_err(err, FE_BAD_REQUEST,
				 "header %.128s: each value is a string, all at most %d bytes",
				 name, SIGV4_HEADER_VALUE_MAX);
			goto fail;
		}
		for (size_t j = 0; j < el; j++) {
			if (((unsigned char)s[j] < ' ' && s[j] != '\t') || s[j] == 0x7f) {
				floe_err(err, FE_BAD_REQUEST,
					 "header %.128s holds a control character", name);
				goto fail;
			}
		}
		char *grown = realloc(out, len + el + 2);
		if (grown == NULL) {
			floe_err(err, FE_INTERNAL, "out of memory");
			goto fail;
		}
		out = grown;
		if (len > 0)
			out[len++] = ',';
		memcpy(out + len, s, el);
		len += el;
		out[len] = '\0';
	}
	goto done;
fail:
	free(out);
	out = NULL;
done:
	json_decref((json_t *)v);
	return out;
}

/* The engine's headers to sign, lower-cased, into s. */
static bool engine_headers(const json_t *headers, struct sign_headers *s, struct floe_error *err)
{
	const char *name;
	json_t *v;

	if (headers != NULL && !json_is_object(headers))
		return floe_err(err, FE_BAD_REQUEST, "'headers' must be an object");
	if (json_object_size(headers) > SIGV4_HEADERS_MAX - 4)
		return floe_err(err, FE_BAD_REQUEST, "the request to sign has more than %d headers",
				SIGV4_HEADERS_MAX - 4);
	json_object_foreach((json_t *)headers, name, v) {
		size_t nl = strlen(name);
		if (nl == 0 || nl > SIGV4_HEADER_NAME_MAX)
			return floe_err(err, FE_BAD_REQUEST,
					"a header name is empty or longer than %d bytes",
					SIGV4_HEADER_NAME_MAX);
		char *lower = keep(s, strdup(name));
		if (lower == NULL)
			return floe_err(err, FE_INTERNAL, "out of memory");
		for (size_t i = 0; i < nl; i++) {
			unsigned char c = (unsigned char)lower[i];
			if (!isalnum(c) && strchr("!#$%&'*+-.^_`|~", c) == NULL)
				return floe_err(err, FE_BAD_REQUEST,
						"the header name '%.128s' is not a token", name);
			lower[i] = (char)tolower(c);
		}
		if (strcmp(lower, "authorization") == 0 ||
		    strcmp(lower, "x-amz-security-token") == 0)
			return floe_err(err, FE_BAD_REQUEST,
					"the request to sign may not carry its own %s header",
					lower);
		if (fileio_s3_header_unsigned(lower))
			continue;
		char *value = keep(s, joined_values(name, v, err));
		if (value == NULL)
			return false;
		if (strcmp(lower, "x-amz-date") == 0) {
			if (strlen(value) != SIGV4_DATE_LEN - 1)
				return floe_err(err, FE_BAD_REQUEST,
						"x-amz-date must be YYYYMMDDTHHMMSSZ");
			s->date = value;
		} else if (strcmp(lower, "x-amz-content-sha256") == 0) {
			s->payload = value;
		} else if (strcmp(lower, "content-md5") == 0) {
			s->md5 = value;
		}
		s->h[s->n++] = (struct sigv4_header){ lower, value };
	}
	return true;
}

/* The caller's say on each header, once all are known to be well formed
 * (a malformed request is a 400 whatever else it holds). */
static bool admitted(const struct fileio_s3_sign_request *r, const struct sign_headers *s,
		     struct floe_error *err)
{
	for (size_t i = 0; r->admit != NULL && i < s->n; i++) {
		if (!r->admit(s->h[i].name, s->h[i].value, err))
			return false;
	}
	return true;
}

/* The path of an encoded URL ("/" at least), new. */
static char *url_path(const char *url)
{
	const char *p = strstr(url, "://");
	p = p != NULL ? p + 3 + strcspn(p + 3, "/") : url;
	return *p == '/' ? strndup(p, strcspn(p, "?")) : strdup("/");
}

static bool add_answer_header(json_t *h, const char *name, const char *value)
{
	return json_object_set_new(h, name, json_pack("[s]", value)) == 0;
}

/* The SHA-256 (hex) and MD5 (base64, as Content-MD5 has it) of a body. */
static bool body_digests(const char *body, size_t len, char sha_hex[65], char md5_b64[25])
{
	unsigned char d[EVP_MAX_MD_SIZE];
	unsigned int dl = 0;

	if (EVP_Digest(body, len, d, &dl, EVP_sha256(), NULL) != 1 || dl != 32)
		return false;
	sigv4_hex(d, dl, sha_hex);
	if (EVP_Digest(body, len, d, &dl, EVP_md5(), NULL) != 1 || dl != 16)
		return false;
	return EVP_EncodeBlock((unsigned char *)md5_b64, d, 16) == 24;
}

/* The payload hash of a request whose body the caller checked: that
 * body's, and the engine's own x-amz-content-sha256 and Content-MD5 must
 * be that body's too, or the signature would hold for another body. */
static bool bind_body(struct sign_headers *s, const char *body, size_t len, char sha_hex[65],
		      struct floe_error *err)
{
	char md5[25];

	if (!body_digests(body, len, sha_hex, md5))
		return floe_err(err, FE_INTERNAL, "cannot hash the request's body");
	if (s->payload != NULL && strcmp(s->payload, sha_hex) != 0)
		return floe_err(
			err, FE_FORBIDDEN,
			"floe signs a DeleteObjects request only with the SHA-256 of the body it checked; the request's x-amz-content-sha256 '%.80s' is not that body's",
			s->payload);
	if (s->md5 != NULL && strcmp(s->md5, md5) != 0)
		return floe_err(
			err, FE_FORBIDDEN,
			"the request's Content-MD5 '%.80s' is not the MD5 of the body floe checked",
			s->md5);
	return true;
}

json_t *fileio_s3_sign(const struct fileio_s3_sign_request *r, struct floe_error *err)
{
	const struct fileio_s3_target *t = r->target;
	char body_sha[65];
	struct s3_signing cfg;
	struct sign_headers s = { .n = 0 };
	char date[SIGV4_DATE_LEN];
	char host[320];
	char auth[SIGN_AUTH_MAX];
	char *canonical_uri = NULL;
	json_t *out = NULL;
	json_t *add = NULL;

	auth[0] = '\0';
	if (t->location == NULL || !s3_signing_get(t->location, &cfg)) {
		floe_err(err, FE_UNSUPPORTED,
			 "remote signing needs an s3:// warehouse; this one is not on S3");
		goto done;
	}
	if (!engine_headers(r->headers, &s, err) || !admitted(r, &s, err) ||
	    (r->body != NULL && !bind_body(&s, r->body, r->body_len, body_sha, err)))
		goto done;
	add = json_object();
	if (add == NULL || !sigv4_date(r->now, date)) {
		floe_err(err, FE_INTERNAL, "out of memory");
		goto done;
	}
	(void)snprintf(host, sizeof(host), "%s%s%s", cfg.ep.path_style ? "" : t->bucket,
		       cfg.ep.path_style ? "" : ".", cfg.ep.host);
	s.h[s.n++] = (struct sigv4_header){ "host", host };
	bool ok = true;
	if (s.date == NULL) {
		s.date = date;
		s.h[s.n++] = (struct sigv4_header){ "x-amz-date", date };
		ok = add_answer_header(add, "x-amz-date", date);
	}
	if (s.payload == NULL) {
		/* The body's own hash when floe checked it: S3 then refuses
		 * the request with any other body. */
		s.payload = r->body != NULL ? body_sha : SIGV4_UNSIGNED_PAYLOAD;
		s.h[s.n++] = (struct sigv4_header){ "x-amz-content-sha256", s.payload };
		ok = ok && add_answer_header(add, "x-amz-content-sha256", s.payload);
	}
	if (cfg.cred->session_token[0] != '\0') {
		s.h[s.n++] = (struct sigv4_header){ "x-amz-security-token",
						    cfg.cred->session_token };
		ok = ok && add_answer_header(add, "x-amz-security-token", cfg.cred->session_token);
	}
	canonical_uri = url_path(t->url);
	if (!ok || canonical_uri == NULL) {
		floe_err(err, FE_INTERNAL, "out of memory");
		goto done;
	}
	struct sigv4_request sr = {
		.method = r->method,
		.canonical_uri = canonical_uri,
		.canonical_query = t->canonical_query,
		.headers = s.h,
		.nheaders = s.n,
		.payload_hash = s.payload,
		.amz_date = s.date,
		.region = cfg.region,
		.service = "s3",
	};
	struct sigv4_key k = { cfg.cred->access_key_id, cfg.cred->secret_access_key };
	if (!sigv4_sign(&sr, &k, auth, sizeof(auth))) {
		floe_err(
			err, FE_BAD_REQUEST,
			"the request cannot be signed: a header name is not a token or is repeated");
		goto done;
	}
	if (!add_answer_header(add, "Authorization", auth)) {
		floe_err(err, FE_INTERNAL, "out of memory");
		goto done;
	}
	out = json_pack("{s:s, s:O}", "uri", t->url, "headers", add);
	if (out == NULL)
		floe_err(err, FE_INTERNAL, "out of memory");
done:
	OPENSSL_cleanse(auth, sizeof(auth));
	json_decref(add);
	free(canonical_uri);
	for (size_t i = 0; i < s.nowned; i++)
		free(s.owned[i]);
	return out;
}

struct delete_walk {
	bool (*each)(void *ctx, const char *key, struct floe_error *err);
	void *ctx;
	struct floe_error *err;
	size_t n;
	bool refused; /* a key was refused: err says why */
};

/* Whether path is an element of a Delete document S3 reads: anything
 * else (an element inside Key, a Key spelt otherwise, another root) may
 * be read by S3 in a way floe cannot see, and is refused. */
static bool delete_path_known(const char *path)
{
	static const char *const known[] = {
		"Delete/Quiet",
		"Delete/Object/Key",
		"Delete/Object/VersionId",
		"Delete/Object/ETag",
		"Delete/Object/LastModifiedTime",
		"Delete/Object/Size",
	};
	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
		if (strcmp(path, known[i]) == 0)
			return true;
	}
	return false;
}

static bool delete_leaf(void *ctx, const char *path, const char *text, size_t len)
{
	struct delete_walk *w = ctx;

	if (!delete_path_known(path))
		return false;
	if (strcmp(path, "Delete/Object/Key") != 0)
		return true;
	if (++w->n > SIGN_DELETE_KEYS_MAX || strlen(text) != len)
		return false;
	if (len == 0 || len > S3_KEY_MAX || !fileio_s3_key_segments_ok(text, false)) {
		floe_err(
			w->err, FE_BAD_REQUEST,
			"the DeleteObjects body's key '%.1024s' is empty, longer than %d bytes or has an empty, '.' or '..' segment",
			text, S3_KEY_MAX);
		w->refused = true;
		return false;
	}
	if (!w->each(w->ctx, text, w->err)) {
		w->refused = true;
		return false;
	}
	return true;
}

bool fileio_s3_delete_keys(const char *body, size_t len,
			   bool (*each)(void *ctx, const char *key, struct floe_error *err),
			   void *ctx, struct floe_error *err)
{
	struct delete_walk w = { each, ctx, err, 0, false };

	if (body == NULL || len == 0)
		return floe_err(
			err, FE_FORBIDDEN,
			"a DeleteObjects request is signed only with its body, to check its keys");
	bool ok = s3xml_walk(body, len, delete_leaf, &w);
	if (w.refused)
		return false;
	if (!ok || w.n == 0)
		return floe_err(
			err, FE_BAD_REQUEST,
			"the DeleteObjects body is not a Delete document of 1 to %d keys (only its elements, no text mixed with them)",
			SIGN_DELETE_KEYS_MAX);
	return true;
}
