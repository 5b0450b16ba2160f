/*
 * signer.c - which S3 requests floe signs for whom (signer.h): the
 * table's own objects and listings, with GET and HEAD for readers and
 * PUT, POST and DELETE for writers, and only headers that act on the
 * object the URI names. Reading the URI and computing the signature are
 * fileio's (s3sign.h).
 */
#include "signer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "buf.h"
#include "location.h"
#include "ports.h"
#include "route.h"
#include "wording.h"

/* The body of a DeleteObjects request, at most (1,000 keys of at most
 * 1,024 bytes, escaped, and their markup). */
#define SIGNER_DELETE_BODY_MAX ((size_t)8 * 1024 * 1024)

bool signer_requested(const char *delegation)
{
	static const char mode[] = "remote-signing";

	for (const char *p = delegation; p != NULL && *p != '\0';) {
		while (*p == ' ' || *p == '\t' || *p == ',')
			p++;
		size_t n = strcspn(p, ",");
		size_t t = n;
		while (t > 0 && (p[t - 1] == ' ' || p[t - 1] == '\t'))
			t--;
		if (t == sizeof(mode) - 1 && strncasecmp(p, mode, t) == 0)
			return true;
		p += n;
	}
	return false;
}

bool signer_table_config(json_t *config, const char *warehouse, const char *prefix,
			 const struct ns_ident *ns, const char *name, struct floe_error *err)
{
	struct fileio_s3_client c;

	/* The table lies inside its warehouse's location, so the store
	 * holding the warehouse holds the table. */
	if (!fileio_s3_client_config(warehouse, &c))
		return true;
	char *endpoint = route_table(prefix, ns, name, "sign");
	bool ok = endpoint != NULL &&
		  json_object_set_new(config, "s3.remote-signing-enabled", json_string("true")) ==
			  0 &&
		  json_object_set_new(config, "s3.signer", json_string("S3V4RestSigner")) == 0 &&
		  json_object_set_new(config, "s3.signer.endpoint", json_string(endpoint)) == 0 &&
		  json_object_set_new(config, "s3.endpoint", json_string(c.endpoint)) == 0 &&
		  json_object_set_new(config, "s3.path-style-access",
				      json_string(c.path_style ? "true" : "false")) == 0 &&
		  json_object_set_new(config, "client.region", json_string(c.region)) == 0;
	free(endpoint);
	return ok || floe_err(err, FE_INTERNAL, "out of memory");
}

/* The table's canonical s3:// location (*location), and split: *bucket
 * and *key (all new). */
static bool table_place(struct store *s, const struct ns_ident *ns, const char *name,
			char **location, char **bucket, char **key, struct floe_error *err)
{
	struct table_row row;
	json_t *m = NULL;
	char *canon = NULL;
	bool ok = false;

	*location = NULL;
	*bucket = NULL;
	*key = NULL;
	if (!store_table_load_as(s, ns, name, true, &row, err)) {
		(void)tables_word_error(s, ns, name, NULL, false, err);
		return false;
	}
	m = json_loadb(row.metadata != NULL ? row.metadata : "", row.metadata_len, 0, NULL);
	const char *loc = json_string_value(json_object_get(m, "location"));
	if (loc == NULL) {
		floe_err(err, FE_INTERNAL, "the table's metadata names no location");
		goto done;
	}
	canon = location_canonical(loc, err);
	if (canon == NULL)
		goto done;
	if (!location_is_s3(canon)) {
		floe_err(err, FE_UNSUPPORTED,
			 "the table's location %.300s is not on S3: there is nothing to sign", loc);
		goto done;
	}
	const char *b = canon + 5;
	size_t bl = strcspn(b, "/");
	*bucket = strndup(b, bl);
	*key = strdup(b[bl] == '/' ? b + bl + 1 : "");
	ok = *bucket != NULL && *key != NULL;
	if (!ok)
		floe_err(err, FE_INTERNAL, "out of memory");
	*location = canon;
	canon = NULL;
done:
	free(canon);
	json_decref(m);
	store_table_row_clear(&row);
	return ok;
}

/* The table a signature is for, and what the caller may do with it. */
struct sign_scope {
	const char *bucket;
	const char *key; /* the table's key prefix, without the trailing '/' */
};

/* Whether an object key lies under the table: "wh/t/..." for "wh/t",
 * never "wh/t" itself or "wh/t2/...". */
static bool key_under(const struct sign_scope *sc, const char *key)
{
	size_t kl = strlen(sc->key);

	return kl > 0 && strncmp(key, sc->key, kl) == 0 && key[kl] == '/' && key[kl + 1] != '\0';
}

/* A listing prefix under the table: "wh/t/" or longer, with no empty,
 * "." or ".." segment after it. */
static bool prefix_under(const struct sign_scope *sc, const char *prefix)
{
	size_t kl = strlen(sc->key);

	return kl > 0 && strncmp(prefix, sc->key, kl) == 0 && prefix[kl] == '/' &&
	       fileio_s3_key_segments_ok(prefix, true);
}

static bool refuse_key(const struct sign_scope *sc, const char *key, struct floe_error *err)
{
	return floe_err(
		err, FE_FORBIDDEN,
		"floe signs requests only for objects under the table's location s3://%s/%s/, not s3://%s/%.1024s",
		sc->bucket, sc->key, sc->bucket, key);
}

static bool delete_key_ok(void *ctx, const char *key, struct floe_error *err)
{
	const struct sign_scope *sc = ctx;

	return key_under(sc, key) || refuse_key(sc, key, err);
}

/* ListObjects (V1 or V2) with a prefix under the table, and only the
 * parameters of a listing. */
static bool listing_ok(const struct sign_scope *sc, const struct fileio_s3_target *t,
		       struct floe_error *err)
{
	static const char *const allowed[] = {
		"list-type",   "prefix",        "delimiter",   "max-keys", "continuation-token",
		"start-after", "encoding-type", "fetch-owner", "marker",
	};
	for (size_t i = 0; i < t->nparams; i++) {
		bool known = false;
		for (size_t j = 0; j < sizeof(allowed) / sizeof(allowed[0]); j++)
			known = known || strcmp(t->names[i], allowed[j]) == 0;
		if (!known)
			return floe_err(
				err, FE_FORBIDDEN,
				"floe signs no bucket-level request but a listing under the table's location; '%.64s' is not a listing's parameter",
				t->names[i]);
	}
	const char *prefix = fileio_s3_target_param(t, "prefix");
	if (prefix == NULL || !prefix_under(sc, prefix))
		return floe_err(
			err, FE_FORBIDDEN,
			"floe signs a listing only with a prefix under the table's location %s/ in bucket %s",
			sc->key, sc->bucket);
	return true;
}

static bool method_is(const char *m, const char *name)
{
	return strcmp(m, name) == 0;
}

/* What the method needs: false with err for one floe never signs. */
static bool method_writes(const char *m, bool *writes, struct floe_error *err)
{
	*writes = method_is(m, "PUT") || method_is(m, "POST") || method_is(m, "DELETE");
	if (*writes || method_is(m, "GET") || method_is(m, "HEAD"))
		return true;
	if (method_is(m, "PATCH") || method_is(m, "OPTIONS"))
		return floe_err(err, FE_FORBIDDEN, "floe does not sign %s requests", m);
	return floe_err(err, FE_BAD_REQUEST,
			"'method' must be one of PUT, GET, HEAD, POST, DELETE, PATCH, OPTIONS");
}

/*
 * The headers floe signs besides those fileio leaves unsigned: the ones
 * S3 reads for a read, a write or a listing of the one object (or prefix)
 * the URI names. A header that is not here is refused, whatever it does:
 * an S3 server acts on the x-amz-* headers it is sent, and one a vendor
 * adds later may name a second object. Refused by name, with their own
 * words: those of a copy (x-amz-copy-source* names the object to read,
 * which may be any object floe's credentials reach) and of a rename, and
 * the metadata MinIO reads as "unpack this archive" (Snowball).
 */
static const struct {
	const char *name;
	bool prefix; /* name is a prefix: x-amz-meta-<anything> */
} signer_headers[] = {
	{ "content-type", false },
	{ "content-md5", false },
	{ "content-encoding", false },
	{ "content-language", false },
	{ "content-disposition", false },
	{ "expires", false },
	{ "range", false },
	{ "if-match", false },
	{ "if-none-match", false },
	{ "if-modified-since", false },
	{ "if-unmodified-since", false },
	{ "x-amz-date", false },
	{ "x-amz-content-sha256", false },
	{ "x-amz-decoded-content-length", false },
	{ "x-amz-trailer", false },
	{ "x-amz-sdk-checksum-algorithm", false },
	{ "x-amz-checksum-", true },
	{ "x-amz-storage-class", false },
	{ "x-amz-server-side-encryption", true },
	{ "x-amz-tagging", false },
	{ "x-amz-meta-", true },
	{ "x-amz-expected-bucket-owner", false },
	{ "x-amz-request-payer", false },
	{ "x-amz-object-attributes", false },
	{ "x-amz-optional-object-attributes", false },
	{ "x-amz-max-parts", false },
	{ "x-amz-part-number-marker", false },
	{ "x-amz-mp-object-size", false },
	{ "x-amz-if-match-last-modified-time", false },
	{ "x-amz-if-match-size", false },
	{ "x-amz-if-match-initiated-time", false },
	{ "x-amz-te", false },  /* append-md5: Iceberg Java's GETs */
	{ "x-amz-acl", false }, /* checked below: private ones only */
};

/* Canned ACLs that keep an object to its owner (floe's credentials). */
static bool acl_private(const char *v)
{
	return strcmp(v, "private") == 0 || strcmp(v, "bucket-owner-read") == 0 ||
	       strcmp(v, "bucket-owner-full-control") == 0;
}

static bool has_prefix(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* Whether floe signs header name (lower case) with value (its values
 * ','-joined): fileio's admit callback (s3sign.h); FE_FORBIDDEN naming
 * the header otherwise. */
static bool header_ok(const char *name, const char *value, struct floe_error *err)
{
	if (has_prefix(name, "x-amz-copy-source") || has_prefix(name, "x-amz-rename-source") ||
	    strcmp(name, "x-amz-metadata-directive") == 0 ||
	    strcmp(name, "x-amz-tagging-directive") == 0 ||
	    strcmp(name, "x-amz-source-expected-bucket-owner") == 0)
		return floe_err(
			err, FE_FORBIDDEN,
			"floe signs no copy of an object (CopyObject, UploadPartCopy): header %.64s names a second object, which may lie outside the table; write the data instead",
			name);
	/* User metadata, but MinIO (and servers following it) unpacks an
	 * object carrying it as an archive into objects of any key. */
	if (has_prefix(name, "x-amz-meta-snowball-") || has_prefix(name, "x-amz-meta-minio-"))
		return floe_err(
			err, FE_FORBIDDEN,
			"floe does not sign header %.64s: an S3 server may read it to unpack the object into objects of other keys",
			name);
	for (size_t i = 0; i < sizeof(signer_headers) / sizeof(signer_headers[0]); i++) {
		bool match = signer_headers[i].prefix ? has_prefix(name, signer_headers[i].name)
						      : strcmp(name, signer_headers[i].name) == 0;
		if (!match)
			continue;
		if (strcmp(name, "x-amz-acl") != 0 || acl_private(value))
			return true;
		return floe_err(
			err, FE_FORBIDDEN,
			"floe signs no ACL but private, bucket-owner-read or bucket-owner-full-control: x-amz-acl '%.64s' would let others than floe read or write the table's objects",
			value);
	}
	return floe_err(
		err, FE_FORBIDDEN,
		"floe does not sign header %.64s: it signs only the headers of a read, write or listing of the table's own objects (see floe's storage documentation, Remote signing)",
		name);
}

/* Subresources of an object floe does not sign a write of: its ACL (who
 * else may read it) and its lock (which floe could then not lift). */
static bool object_request_ok(bool writes, const struct fileio_s3_target *t, struct floe_error *err)
{
	static const char *const refused[] = { "acl", "retention", "legal-hold" };

	for (size_t i = 0; writes && i < sizeof(refused) / sizeof(refused[0]); i++) {
		if (fileio_s3_target_param(t, refused[i]) != NULL)
			return floe_err(err, FE_FORBIDDEN, "floe signs no change of an object's %s",
					refused[i]);
	}
	return true;
}

/* The request's own fields, checked for type before anything is read. */
static bool check_body(const json_t *body, struct floe_error *err)
{
	const json_t *provider = json_object_get(body, "provider");
	const json_t *b = json_object_get(body, "body");

	if (!json_is_object(body))
		return floe_err(err, FE_BAD_REQUEST, "the body must be a RemoteSignRequest object");
	if (!json_is_string(json_object_get(body, "region")) ||
	    !json_is_string(json_object_get(body, "uri")) ||
	    !json_is_string(json_object_get(body, "method")) ||
	    !json_is_object(json_object_get(body, "headers")))
		return floe_err(
			err, FE_BAD_REQUEST,
			"a RemoteSignRequest needs 'region', 'uri' and 'method' (strings) and 'headers' (an object)");
	if (provider != NULL && !json_is_null(provider) &&
	    (!json_is_string(provider) || strcmp(json_string_value(provider), "s3") != 0))
		return floe_err(err, FE_BAD_REQUEST, "floe signs requests for provider 's3' only");
	if (b != NULL && !json_is_null(b) && !json_is_string(b))
		return floe_err(err, FE_BAD_REQUEST, "'body' must be a string");
	if (json_is_string(b) && json_string_length(b) > SIGNER_DELETE_BODY_MAX)
		return floe_err(err, FE_BAD_REQUEST, "'body' is longer than %zu bytes",
				SIGNER_DELETE_BODY_MAX);
	return true;
}

/* A bucket-level request: a listing (GET), or DeleteObjects (POST
 * ?delete) of the table's keys, checked in the body it carries. */
static bool bucket_request_ok(const struct sign_scope *sc, const char *method,
			      const struct fileio_s3_target *t, const json_t *body,
			      struct floe_error *err)
{
	if (method_is(method, "GET"))
		return listing_ok(sc, t, err);
	if (method_is(method, "POST") && t->nparams == 1 &&
	    fileio_s3_target_param(t, "delete") != NULL) {
		const json_t *b = json_object_get(body, "body");
		return fileio_s3_delete_keys(json_string_value(b),
					     json_is_string(b) ? json_string_length(b) : 0,
					     delete_key_ok, (void *)sc, err);
	}
	return floe_err(
		err, FE_FORBIDDEN,
		"floe signs no bucket-level %s request: only listings under the table's location and DeleteObjects of its keys",
		method);
}

json_t *signer_sign(struct store *s, const struct principal *p, const struct ns_ident *ns,
		    const char *name, const json_t *body, long long now, struct floe_error *err)
{
	struct fileio_s3_target t = { 0 };
	char *location = NULL;
	char *bucket = NULL;
	char *key = NULL;
	json_t *out = NULL;
	bool writes = false;

	if (!check_body(body, err))
		return NULL;
	const char *method = json_string_value(json_object_get(body, "method"));
	if (!method_writes(method, &writes, err) ||
	    !table_place(s, ns, name, &location, &bucket, &key, err))
		goto done;
	/* Read against, and signed by, the store of the table's warehouse. */
	if (!fileio_s3_target_parse(location, json_string_value(json_object_get(body, "uri")), &t,
				    err))
		goto done;
	struct sign_scope sc = { bucket, key };
	if (strcmp(t.bucket, bucket) != 0) {
		floe_err(err, FE_FORBIDDEN,
			 "floe signs requests only for the table's bucket %s, not %.63s", bucket,
			 t.bucket);
		goto done;
	}
	bool allowed = t.key[0] != '\0' ? (key_under(&sc, t.key) || refuse_key(&sc, t.key, err)) &&
						  object_request_ok(writes, &t, err)
					: bucket_request_ok(&sc, method, &t, body, err);
	if (!allowed)
		goto done;
	if (writes) {
		struct authz_object obj = { .kind = AUTHZ_TABLE, .ns = ns, .table = name };
		if (!authz_check(s, p, PRIV_TABLE_WRITE, &obj, err))
			goto done;
	}
	/* A DeleteObjects is signed for exactly the body whose keys were
	 * checked; any other request without its body. */
	const json_t *checked = t.key[0] == '\0' && method_is(method, "POST")
					? json_object_get(body, "body")
					: NULL;
	struct fileio_s3_sign_request req = {
		.method = method,
		.target = &t,
		.headers = json_object_get(body, "headers"),
		.admit = header_ok,
		.body = json_string_value(checked),
		.body_len = json_is_string(checked) ? json_string_length(checked) : 0,
		.now = now,
	};
	out = fileio_s3_sign(&req, err);
done:
	fileio_s3_target_clear(&t);
	free(location);
	free(bucket);
	free(key);
	return out;
}
