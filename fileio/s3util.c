/*
 * s3util.c - the pure parts of the S3 backend: keys and request URLs,
 * the canonical query, the retry decision and its backoff, the
 * shared-credentials file, and which store holds a location. No I/O.
 */
#include "s3.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "buf.h"
#include "location.h"

bool s3_split(const char *url, char **bucket, char **key, struct floe_error *err)
{
	*bucket = NULL;
	*key = NULL;
	if (strncmp(url, "s3://", 5) != 0)
		return floe_err(err, FE_BAD_REQUEST, "location %.200s is not an s3:// location",
				url);
	const char *b = url + 5;
	size_t bl = strcspn(b, "/");
	const char *k = b[bl] == '/' ? b + bl + 1 : b + bl;
	if (bl == 0)
		return floe_err(err, FE_BAD_REQUEST, "location %.200s names no bucket", url);
	if (strlen(k) > S3_KEY_MAX)
		return floe_err(err, FE_BAD_REQUEST,
				"location %.200s: an S3 key is at most %d bytes", url, S3_KEY_MAX);
	*bucket = strndup(b, bl);
	*key = strdup(k);
	if (*bucket == NULL || *key == NULL) {
		free(*bucket);
		free(*key);
		*bucket = NULL;
		*key = NULL;
		return floe_err(err, FE_INTERNAL, "out of memory");
	}
	return true;
}

static bool unreserved(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
	       c == '-' || c == '_' || c == '.' || c == '~';
}

/* Appends s percent-encoded; '/' kept when keep_slash. */
static void escape_into(struct buf *b, const char *s, bool keep_slash)
{
	static const char hex[] = "0123456789ABCDEF";

	for (const unsigned char *p = (const unsigned char *)s; *p != '\0'; p++) {
		if (unreserved(*p) || (keep_slash && *p == '/')) {
			(void)buf_append(b, p, 1);
		} else {
			char e[3] = { '%', hex[*p >> 4], hex[*p & 15] };
			(void)buf_append(b, e, 3);
		}
	}
}

char *s3_request_url(const struct s3_endpoint *ep, const char *bucket, const char *key,
		     const char *query)
{
	struct buf b;
	size_t len;

	buf_init(&b, (size_t)16 * 1024);
	(void)buf_append(&b, ep->scheme, strlen(ep->scheme));
	(void)buf_append(&b, "://", 3);
	if (!ep->path_style) {
		(void)buf_append(&b, bucket, strlen(bucket));
		(void)buf_append(&b, ".", 1);
	}
	(void)buf_append(&b, ep->host, strlen(ep->host));
	(void)buf_append(&b, "/", 1);
	if (ep->path_style) {
		(void)buf_append(&b, bucket, strlen(bucket));
		if (key[0] != '\0')
			(void)buf_append(&b, "/", 1);
	}
	escape_into(&b, key, true);
	if (query != NULL && query[0] != '\0') {
		(void)buf_append(&b, "?", 1);
		(void)buf_append(&b, query, strlen(query));
	}
	if (b.status != BUF_OK) {
		buf_free(&b);
		return NULL;
	}
	return buf_take(&b, &len);
}

bool s3_query_add(char *query, size_t cap, const char *name, const char *value)
{
	struct buf b;
	size_t have = strlen(query);

	buf_init(&b, cap - 1);
	(void)buf_append(&b, query, have);
	if (have > 0)
		(void)buf_append(&b, "&", 1);
	escape_into(&b, name, false);
	(void)buf_append(&b, "=", 1);
	escape_into(&b, value, false);
	bool ok = b.status == BUF_OK;
	if (ok && b.data != NULL)
		memcpy(query, b.data, b.len + 1);
	buf_free(&b);
	return ok;
}

bool s3_retryable(int curl_code, long status, const char *code)
{
	if (curl_code != 0)
		return true;
	if (status >= 500 || status == 429)
		return true;
	return code != NULL &&
	       (strcmp(code, "SlowDown") == 0 || strcmp(code, "RequestTimeout") == 0 ||
		strcmp(code, "InternalError") == 0);
}

long s3_backoff_ms(int attempt, long base_ms, long max_ms, unsigned rnd)
{
	long ceiling = base_ms;

	for (int i = 1; i < attempt && ceiling < max_ms; i++)
		ceiling *= 2;
	if (ceiling > max_ms)
		ceiling = max_ms;
	if (ceiling <= 0)
		return 0;
	/* Full jitter: anywhere from nothing to the ceiling. */
	return (long)(rnd % (unsigned long)(ceiling + 1));
}

/* The line at *p (its end excluded), *p moved to the next one. */
static const char *next_line(const char **p, const char *end, size_t *len)
{
	const char *start = *p;
	const char *nl = memchr(start, '\n', (size_t)(end - start));
	const char *stop = nl != NULL ? nl : end;

	*p = nl != NULL ? nl + 1 : end;
	while (stop > start && (stop[-1] == '\r' || stop[-1] == ' ' || stop[-1] == '\t'))
		stop--;
	while (start < stop && (*start == ' ' || *start == '\t'))
		start++;
	*len = (size_t)(stop - start);
	return start;
}

static bool set_field(char *dst, size_t cap, const char *v, size_t n)
{
	if (n >= cap)
		return false;
	memcpy(dst, v, n);
	dst[n] = '\0';
	return true;
}

bool s3_credentials_parse(const char *text, size_t len, const char *profile,
			  struct s3_credentials *out, struct floe_error *err)
{
	const char *p = text;
	const char *end = text + len;
	bool in = false;
	bool found = false;

	memset(out, 0, sizeof(*out));
	while (p < end) {
		size_t n;
		const char *line = next_line(&p, end, &n);
		if (n == 0 || line[0] == '#' || line[0] == ';')
			continue;
		if (line[0] == '[') {
			if (line[n - 1] != ']')
				return floe_err(
					err, FE_BAD_REQUEST,
					"the shared credentials file has a malformed section");
			const char *s = line + 1;
			size_t sl = n - 2;
			while (sl > 0 && (*s == ' ' || *s == '\t')) {
				s++;
				sl--;
			}
			while (sl > 0 && (s[sl - 1] == ' ' || s[sl - 1] == '\t'))
				sl--;
			in = strlen(profile) == sl && strncmp(s, profile, sl) == 0;
			found = found || in;
			continue;
		}
		if (!in)
			continue;
		const char *eq = memchr(line, '=', n);
		if (eq == NULL)
			continue;
		size_t kl = (size_t)(eq - line);
		while (kl > 0 && (line[kl - 1] == ' ' || line[kl - 1] == '\t'))
			kl--;
		const char *v = eq + 1;
		size_t vl = n - (size_t)(v - line);
		while (vl > 0 && (*v == ' ' || *v == '\t')) {
			v++;
			vl--;
		}
		bool ok = true;
		if (kl == 17 && strncasecmp(line, "aws_access_key_id", kl) == 0)
			ok = set_field(out->access_key_id, sizeof(out->access_key_id), v, vl);
		else if (kl == 21 && strncasecmp(line, "aws_secret_access_key", kl) == 0)
			ok = set_field(out->secret_access_key, sizeof(out->secret_access_key), v,
				       vl);
		else if (kl == 17 && strncasecmp(line, "aws_session_token", kl) == 0)
			ok = set_field(out->session_token, sizeof(out->session_token), v, vl);
		if (!ok)
			return floe_err(
				err, FE_BAD_REQUEST,
				"profile %.100s of the shared credentials file has an overlong value",
				profile);
	}
	if (!found)
		return floe_err(err, FE_BAD_REQUEST,
				"the shared credentials file has no profile [%.100s]", profile);
	if (out->access_key_id[0] == '\0' || out->secret_access_key[0] == '\0')
		return floe_err(
			err, FE_BAD_REQUEST,
			"profile [%.100s] of the shared credentials file lacks aws_access_key_id or aws_secret_access_key",
			profile);
	return true;
}

int s3_store_pick(const char *const *locations, size_t n, const char *url)
{
	int best = -1;
	size_t best_len = 0;

	if (url == NULL || !location_is_s3(url))
		return -1;
	for (size_t i = 0; i < n; i++) {
		size_t len = strlen(locations[i]);
		/* location_within compares at a path boundary: s3://b/p holds
		 * s3://b/p/x but not s3://b/px. */
		if (location_within(url, locations[i]) && (best < 0 || len > best_len)) {
			best = (int)i;
			best_len = len;
		}
	}
	return best;
}
