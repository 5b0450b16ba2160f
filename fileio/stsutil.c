/*
 * stsutil.c - the pure parts of vending through STS AssumeRole: the
 * session policy scoped to a table's prefix, the session name, and STS's
 * XML answers read with the bounded walk of s3xml.c. No I/O.
 */
#include "sts.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "s3.h"

/* An ARN resource part, with IAM's wildcards and policy-variable sign
 * written as the literal characters they are. */
static bool arn_escaped_into(struct buf *b, const char *s)
{
	for (; *s != '\0'; s++) {
		if (*s == '*' || *s == '?' || *s == '$') {
			char lit[5] = { '$', '{', *s, '}', '\0' };
			(void)buf_append(b, lit, 4);
		} else {
			(void)buf_append(b, s, 1);
		}
	}
	return b->status == BUF_OK;
}

/* "<prefix><escaped s><suffix>" as a new JSON string, or NULL. */
static json_t *arn_string(const char *prefix, const char *bucket, const char *key,
			  const char *suffix)
{
	struct buf b;
	json_t *v = NULL;

	buf_init(&b, (size_t)STS_POLICY_MAX * 4);
	(void)buf_append(&b, prefix, strlen(prefix));
	if (arn_escaped_into(&b, bucket) &&
	    (key == NULL || (buf_append(&b, "/", 1) == BUF_OK && arn_escaped_into(&b, key)))) {
		(void)buf_append(&b, suffix, strlen(suffix));
		if (b.status == BUF_OK && buf_append(&b, "", 1) == BUF_OK)
			v = json_string(b.data);
	}
	buf_free(&b);
	return v;
}

static json_t *statement(const char *sid, json_t *actions, json_t *resource, json_t *condition)
{
	json_t *st = json_pack("{s:s, s:s, s:o, s:o}", "Sid", sid, "Effect", "Allow", "Action",
			       actions, "Resource", resource);

	if (st != NULL && condition != NULL) {
		if (json_object_set_new(st, "Condition", condition) != 0) {
			json_decref(st);
			st = NULL;
		}
	} else {
		json_decref(condition);
	}
	return st;
}

char *sts_session_policy(const char *bucket, const char *key, bool write, struct floe_error *err)
{
	json_t *doc = NULL;
	char *text = NULL;

	if (key == NULL || key[0] == '\0') {
		floe_err(err, FE_BAD_REQUEST,
			 "credentials are vended for a table's prefix, not for a whole bucket");
		return NULL;
	}
	json_t *objects = arn_string("arn:aws:s3:::", bucket, key, "/*");
	json_t *bucket_arn = arn_string("arn:aws:s3:::", bucket, NULL, "");
	json_t *prefixes = json_pack("[o, o]", arn_string("", key, NULL, "/"),
				     arn_string("", key, NULL, "/*"));
	json_t *statements = json_array();
	if (objects == NULL || bucket_arn == NULL || prefixes == NULL || statements == NULL)
		goto oom;
	if (json_array_append_new(statements, statement("ReadTableObjects",
							json_pack("[s, s]", "s3:GetObject",
								  "s3:GetObjectVersion"),
							json_incref(objects), NULL)) != 0)
		goto oom;
	if (write &&
	    json_array_append_new(statements,
				  statement("WriteTableObjects",
					    json_pack("[s, s, s, s]", "s3:PutObject",
						      "s3:DeleteObject", "s3:AbortMultipartUpload",
						      "s3:ListMultipartUploadParts"),
					    json_incref(objects), NULL)) != 0)
		goto oom;
	/* key/ and key/...: a listing with the prefix key (no slash) would
	 * also list key2/..., another table's objects. */
	if (json_array_append_new(statements,
				  statement("ListTablePrefix", json_string("s3:ListBucket"),
					    json_incref(bucket_arn),
					    json_pack("{s:{s:O}}", "StringLike", "s3:prefix",
						      prefixes))) != 0 ||
	    json_array_append_new(statements,
				  statement("LocateBucket", json_string("s3:GetBucketLocation"),
					    json_incref(bucket_arn), NULL)) != 0)
		goto oom;
	doc = json_pack("{s:s, s:O}", "Version", "2012-10-17", "Statement", statements);
	if (doc == NULL)
		goto oom;
	text = json_dumps(doc, JSON_COMPACT | JSON_PRESERVE_ORDER);
	if (text == NULL)
		goto oom;
	if (strlen(text) > STS_POLICY_MAX) {
		floe_err(
			err, FE_BAD_REQUEST,
			"the table location is too long for an STS session policy (%zu bytes, at most %d)",
			strlen(text), STS_POLICY_MAX);
		free(text);
		text = NULL;
	}
	goto done;
oom:
	floe_err(err, FE_INTERNAL, "out of memory");
done:
	json_decref(doc);
	json_decref(statements);
	json_decref(prefixes);
	json_decref(bucket_arn);
	json_decref(objects);
	return text;
}

void sts_session_name(const char *who, char *out)
{
	size_t n = (size_t)snprintf(out, STS_SESSION_NAME_MAX + 1, "floe-%s",
				    who != NULL ? who : "");

	if (n > STS_SESSION_NAME_MAX)
		n = STS_SESSION_NAME_MAX;
	for (size_t i = 5; i < n; i++) {
		char c = out[i];
		bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			  (c >= '0' && c <= '9') || strchr("+=,.@_-", c) != NULL;
		if (!ok)
			out[i] = '-';
	}
	if (n == 5)
		out[4] = '\0'; /* "floe" alone: no dangling dash */
}

/* Days since 1970-01-01 of a civil date (Howard Hinnant's algorithm). */
static long long days_from_civil(long long y, unsigned m, unsigned d)
{
	y -= m <= 2;
	long long era = (y >= 0 ? y : y - 399) / 400;
	unsigned yoe = (unsigned)(y - era * 400);
	unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + (long long)doe - 719468;
}

/* n decimal digits at s, into *v. */
static bool digits(const char *s, int n, unsigned *v)
{
	*v = 0;
	for (int i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		*v = *v * 10 + (unsigned)(s[i] - '0');
	}
	return true;
}

bool sts_parse_time(const char *text, long long *ms)
{
	unsigned y, mo, d, h, mi, s;
	unsigned frac_ms = 0;

	if (strlen(text) < 20 || !digits(text, 4, &y) || text[4] != '-' ||
	    !digits(text + 5, 2, &mo) || text[7] != '-' || !digits(text + 8, 2, &d) ||
	    text[10] != 'T' || !digits(text + 11, 2, &h) || text[13] != ':' ||
	    !digits(text + 14, 2, &mi) || text[16] != ':' || !digits(text + 17, 2, &s))
		return false;
	const char *p = text + 19;
	if (*p == '.') {
		int n = 0;
		for (p++; *p >= '0' && *p <= '9'; p++, n++) {
			if (n < 3)
				frac_ms = frac_ms * 10 + (unsigned)(*p - '0');
		}
		if (n == 0)
			return false;
		for (; n < 3; n++)
			frac_ms *= 10;
	}
	if (!(strcmp(p, "Z") == 0 || strcmp(p, "+00:00") == 0))
		return false;
	if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || s > 60)
		return false;
	*ms = ((days_from_civil(y, mo, d) * 24 + h) * 60 + mi) * 60000LL + s * 1000LL + frac_ms;
	return true;
}

struct credentials_read {
	struct fileio_vended *out;
	char expiration[64];
	unsigned seen; /* a bit per part */
	bool too_long;
};

/* Copies text into a field of cap bytes; false (and nothing copied)
 * when it does not fit or is empty. */
static bool field_set(char *field, size_t cap, const char *text, size_t len)
{
	if (len == 0 || len >= cap)
		return false;
	memcpy(field, text, len);
	field[len] = '\0';
	return true;
}

static bool credentials_leaf(void *ctx, const char *path, const char *text, size_t len)
{
	static const char base[] = "AssumeRoleResponse/AssumeRoleResult/Credentials/";
	struct credentials_read *r = ctx;
	struct fileio_vended *o = r->out;

	if (strncmp(path, base, sizeof(base) - 1) != 0)
		return true;
	const char *part = path + sizeof(base) - 1;
	bool ok = true;
	if (strcmp(part, "AccessKeyId") == 0) {
		ok = field_set(o->access_key_id, sizeof(o->access_key_id), text, len);
		r->seen |= 1u;
	} else if (strcmp(part, "SecretAccessKey") == 0) {
		ok = field_set(o->secret_access_key, sizeof(o->secret_access_key), text, len);
		r->seen |= 2u;
	} else if (strcmp(part, "SessionToken") == 0) {
		ok = field_set(o->session_token, sizeof(o->session_token), text, len);
		r->seen |= 4u;
	} else if (strcmp(part, "Expiration") == 0) {
		ok = field_set(r->expiration, sizeof(r->expiration), text, len);
		r->seen |= 8u;
	}
	if (!ok)
		r->too_long = true;
	return ok;
}

bool sts_parse_credentials(const char *text, size_t len, struct fileio_vended *out)
{
	struct credentials_read r = { .out = out };

	memset(out, 0, sizeof(*out));
	bool ok = s3xml_walk(text, len, credentials_leaf, &r) && !r.too_long && r.seen == 15u &&
		  sts_parse_time(r.expiration, &out->expires_at_ms);
	if (!ok)
		memset(out, 0, sizeof(*out));
	return ok;
}

struct error_read {
	char *code;
	size_t code_cap;
	char *message;
	size_t message_cap;
	bool found;
};

/* The error shapes STS servers write: ErrorResponse/Error (AWS),
 * ErrorResponse/Errors/Error and a bare Error. */
static bool error_part(const char *path, const char *part)
{
	static const char *const shapes[] = { "ErrorResponse/Error/", "ErrorResponse/Errors/Error/",
					      "Error/" };

	for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
		size_t n = strlen(shapes[i]);
		if (strncmp(path, shapes[i], n) == 0 && strcmp(path + n, part) == 0)
			return true;
	}
	return false;
}

static bool error_leaf(void *ctx, const char *path, const char *text, size_t len)
{
	struct error_read *r = ctx;

	(void)len;
	if (error_part(path, "Code")) {
		(void)snprintf(r->code, r->code_cap, "%s", text);
		r->found = true;
	} else if (error_part(path, "Message")) {
		(void)snprintf(r->message, r->message_cap, "%s", text);
	}
	return true;
}

bool sts_parse_error(const char *text, size_t len, char *code, size_t code_cap, char *message,
		     size_t message_cap)
{
	struct error_read r = { code, code_cap, message, message_cap, false };

	code[0] = '\0';
	message[0] = '\0';
	return s3xml_walk(text, len, error_leaf, &r) && r.found;
}
