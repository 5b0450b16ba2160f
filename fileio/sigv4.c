/*
 * sigv4.c - AWS Signature Version 4 over a request described by its
 * parts (sigv4.h). The steps and their names are AWS's: the canonical
 * request, the string to sign, the derived signing key, the signature.
 */
#include "sigv4.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "buf.h"
#include "ident.h"

#define SIGV4_CANONICAL_MAX ((size_t)1024 * 1024)
#define SIGV4_QUERY_PARAMS_MAX 64

void sigv4_hex(const unsigned char *d, size_t n, char *out)
{
	static const char hex[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		out[2 * i] = hex[d[i] >> 4];
		out[2 * i + 1] = hex[d[i] & 15];
	}
	out[2 * n] = '\0';
}

static bool hmac256(const void *key, size_t klen, const char *data, size_t dlen,
		    unsigned char out[32])
{
	unsigned int ol = 0;

	return HMAC(EVP_sha256(), key, (int)klen, (const unsigned char *)data, dlen, out, &ol) !=
		       NULL &&
	       ol == 32;
}

/* A token character of RFC 9110, which a header name is made of. */
static bool token_char(unsigned char c)
{
	return isalnum(c) || (c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL);
}

struct canon_header {
	char name[SIGV4_HEADER_NAME_MAX + 1];
	const char *value;
};

static int canon_cmp(const void *a, const void *b)
{
	return strcmp(((const struct canon_header *)a)->name,
		      ((const struct canon_header *)b)->name);
}

/* Appends value trimmed, each run of spaces and tabs folded to one space. */
static void append_trimmed(struct buf *b, const char *value)
{
	const char *p = value;
	const char *end = value + strlen(value);

	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	while (end > p && (end[-1] == ' ' || end[-1] == '\t'))
		end--;
	while (p < end) {
		if (*p == ' ' || *p == '\t') {
			(void)buf_append(b, " ", 1);
			while (p < end && (*p == ' ' || *p == '\t'))
				p++;
		} else {
			(void)buf_append(b, p, 1);
			p++;
		}
	}
}

/* The headers in canonical form, sorted: false for a bad or repeated name. */
static bool canon_headers(const struct sigv4_request *r, struct canon_header *out)
{
	for (size_t i = 0; i < r->nheaders; i++) {
		const char *n = r->headers[i].name;
		size_t nl = n != NULL ? strlen(n) : 0;
		if (nl == 0 || nl > SIGV4_HEADER_NAME_MAX || r->headers[i].value == NULL ||
		    strlen(r->headers[i].value) > SIGV4_HEADER_VALUE_MAX)
			return false;
		for (size_t j = 0; j < nl; j++) {
			if (!token_char((unsigned char)n[j]))
				return false;
			out[i].name[j] = (char)tolower((unsigned char)n[j]);
		}
		out[i].name[nl] = '\0';
		out[i].value = r->headers[i].value;
	}
	qsort(out, r->nheaders, sizeof(*out), canon_cmp);
	for (size_t i = 1; i < r->nheaders; i++) {
		if (strcmp(out[i - 1].name, out[i].name) == 0)
			return false;
	}
	return true;
}

static bool well_formed(const struct sigv4_request *r, const struct sigv4_key *k)
{
	return r->method != NULL && r->method[0] != '\0' && r->canonical_uri != NULL &&
	       r->canonical_uri[0] == '/' && r->canonical_query != NULL &&
	       r->payload_hash != NULL && r->payload_hash[0] != '\0' && r->amz_date != NULL &&
	       strlen(r->amz_date) == SIGV4_DATE_LEN - 1 && r->amz_date[8] == 'T' &&
	       r->amz_date[15] == 'Z' && r->region != NULL && r->region[0] != '\0' &&
	       strchr(r->region, '/') == NULL && r->service != NULL && r->service[0] != '\0' &&
	       strchr(r->service, '/') == NULL && k->access_key_id != NULL &&
	       k->access_key_id[0] != '\0' && k->secret_access_key != NULL &&
	       r->nheaders <= SIGV4_HEADERS_MAX && (r->nheaders == 0 || r->headers != NULL);
}

/* The canonical request's SHA-256 (hex) and the signed headers' list. */
static bool canonical_request_hash(const struct sigv4_request *r, const struct canon_header *h,
				   struct buf *signed_headers, char hash_hex[65])
{
	struct buf c;
	unsigned char d[EVP_MAX_MD_SIZE];
	unsigned int dl = 0;
	bool ok = false;

	buf_init(&c, SIGV4_CANONICAL_MAX);
	(void)buf_append(&c, r->method, strlen(r->method));
	(void)buf_append(&c, "\n", 1);
	(void)buf_append(&c, r->canonical_uri, strlen(r->canonical_uri));
	(void)buf_append(&c, "\n", 1);
	(void)buf_append(&c, r->canonical_query, strlen(r->canonical_query));
	(void)buf_append(&c, "\n", 1);
	for (size_t i = 0; i < r->nheaders; i++) {
		(void)buf_append(&c, h[i].name, strlen(h[i].name));
		(void)buf_append(&c, ":", 1);
		append_trimmed(&c, h[i].value);
		(void)buf_append(&c, "\n", 1);
		if (i > 0)
			(void)buf_append(signed_headers, ";", 1);
		(void)buf_append(signed_headers, h[i].name, strlen(h[i].name));
	}
	(void)buf_append(&c, "\n", 1);
	(void)buf_append(&c, signed_headers->data != NULL ? signed_headers->data : "",
			 signed_headers->len);
	(void)buf_append(&c, "\n", 1);
	(void)buf_append(&c, r->payload_hash, strlen(r->payload_hash));
	if (c.status != BUF_OK || signed_headers->status != BUF_OK || c.data == NULL)
		goto done;
	if (EVP_Digest(c.data, c.len, d, &dl, EVP_sha256(), NULL) != 1 || dl != 32)
		goto done;
	sigv4_hex(d, dl, hash_hex);
	ok = true;
done:
	buf_free(&c);
	return ok;
}

/* kSigning = HMAC(HMAC(HMAC(HMAC("AWS4" + secret, date), region),
 * service), "aws4_request"). */
static bool signing_key(const struct sigv4_request *r, const struct sigv4_key *k,
			unsigned char key[32])
{
	char secret[300];
	int sl = snprintf(secret, sizeof(secret), "AWS4%s", k->secret_access_key);
	bool ok = sl > 0 && (size_t)sl < sizeof(secret) &&
		  hmac256(secret, (size_t)sl, r->amz_date, 8, key) &&
		  hmac256(key, 32, r->region, strlen(r->region), key) &&
		  hmac256(key, 32, r->service, strlen(r->service), key) &&
		  hmac256(key, 32, "aws4_request", 12, key);
	OPENSSL_cleanse(secret, sizeof(secret));
	return ok;
}

bool sigv4_sign(const struct sigv4_request *r, const struct sigv4_key *k, char *authorization,
		size_t cap)
{
	struct canon_header *h = NULL;
	struct buf signed_headers;
	char req_hash[65];
	char sts[512];
	unsigned char key[32];
	unsigned char sig[32];
	char sig_hex[65];
	bool ok = false;

	buf_init(&signed_headers, (size_t)SIGV4_HEADERS_MAX * (SIGV4_HEADER_NAME_MAX + 1));
	if (cap > 0)
		authorization[0] = '\0';
	if (!well_formed(r, k))
		goto done;
	h = calloc(r->nheaders > 0 ? r->nheaders : 1, sizeof(*h));
	if (h == NULL || !canon_headers(r, h) ||
	    !canonical_request_hash(r, h, &signed_headers, req_hash))
		goto done;
	int n = snprintf(sts, sizeof(sts), "AWS4-HMAC-SHA256\n%s\n%.8s/%s/%s/aws4_request\n%s",
			 r->amz_date, r->amz_date, r->region, r->service, req_hash);
	if (n < 0 || (size_t)n >= sizeof(sts))
		goto done;
	if (!signing_key(r, k, key) || !hmac256(key, sizeof(key), sts, (size_t)n, sig))
		goto done;
	sigv4_hex(sig, sizeof(sig), sig_hex);
	n = snprintf(
		authorization, cap,
		"AWS4-HMAC-SHA256 Credential=%s/%.8s/%s/%s/aws4_request, SignedHeaders=%s, Signature=%s",
		k->access_key_id, r->amz_date, r->region, r->service,
		signed_headers.data != NULL ? signed_headers.data : "", sig_hex);
	ok = n > 0 && (size_t)n < cap;
	if (!ok && cap > 0)
		authorization[0] = '\0';
done:
	OPENSSL_cleanse(key, sizeof(key));
	OPENSSL_cleanse(sig, sizeof(sig));
	OPENSSL_cleanse(sig_hex, sizeof(sig_hex));
	buf_free(&signed_headers);
	free(h);
	return ok;
}

/* Appends [p, p + n) percent-decoded ('+' is kept: S3 reads it as
 * itself) and encoded again; false for a malformed escape. */
static bool recode_into(struct buf *b, const char *p, size_t n)
{
	static const char hex[] = "0123456789ABCDEF";
	struct floe_error err;
	char *dec = NULL;
	size_t dl = 0;

	if (!url_decode(p, n, false, &dec, &dl, &err))
		return false;
	for (size_t i = 0; i < dl; i++) {
		unsigned char c = (unsigned char)dec[i];
		if (isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
			(void)buf_append(b, &c, 1);
		} else {
			char e[3] = { '%', hex[c >> 4], hex[c & 15] };
			(void)buf_append(b, e, 3);
		}
	}
	free(dec);
	return true;
}

struct query_param {
	char *text; /* "name=value", encoded */
	size_t name_len;
};

static int param_cmp(const void *a, const void *b)
{
	const struct query_param *x = a;
	const struct query_param *y = b;
	size_t n = x->name_len < y->name_len ? x->name_len : y->name_len;
	int c = memcmp(x->text, y->text, n);

	if (c != 0)
		return c;
	if (x->name_len != y->name_len)
		return x->name_len < y->name_len ? -1 : 1;
	return strcmp(x->text + x->name_len, y->text + y->name_len);
}

bool sigv4_canonical_query(const char *raw, char *out, size_t cap)
{
	struct query_param params[SIGV4_QUERY_PARAMS_MAX];
	size_t np = 0;
	struct buf all;
	bool ok = false;

	memset(params, 0, sizeof(params));
	buf_init(&all, cap > 0 ? cap - 1 : 0);
	if (cap > 0)
		out[0] = '\0';
	for (const char *p = raw; p != NULL && *p != '\0';) {
		size_t len = strcspn(p, "&");
		if (len > 0) {
			if (np == SIGV4_QUERY_PARAMS_MAX)
				goto done;
			const char *eq = memchr(p, '=', len);
			size_t nl = eq != NULL ? (size_t)(eq - p) : len;
			struct buf one;
			buf_init(&one, cap);
			bool good = recode_into(&one, p, nl);
			size_t name_len = one.len;
			(void)buf_append(&one, "=", 1);
			if (good && eq != NULL)
				good = recode_into(&one, eq + 1, len - nl - 1);
			if (!good || one.status != BUF_OK) {
				buf_free(&one);
				goto done;
			}
			size_t taken = 0;
			params[np].name_len = name_len;
			params[np].text = buf_take(&one, &taken);
			np++;
		}
		p += len;
		if (*p == '&')
			p++;
	}
	qsort(params, np, sizeof(params[0]), param_cmp);
	for (size_t i = 0; i < np; i++) {
		if (i > 0)
			(void)buf_append(&all, "&", 1);
		(void)buf_append(&all, params[i].text, strlen(params[i].text));
	}
	if (all.status != BUF_OK)
		goto done;
	if (all.data != NULL)
		memcpy(out, all.data, all.len + 1);
	ok = cap > 0;
done:
	for (size_t i = 0; i < np; i++)
		free(params[i].text);
	buf_free(&all);
	return ok;
}

bool sigv4_date(long long epoch_s, char out[SIGV4_DATE_LEN])
{
	struct tm tm;
	time_t t = (time_t)epoch_s;

	if (gmtime_r(&t, &tm) == NULL)
		return false;
	return strftime(out, SIGV4_DATE_LEN, "%Y%m%dT%H%M%SZ", &tm) == SIGV4_DATE_LEN - 1;
}
