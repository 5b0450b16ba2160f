/*
 * signer.c - which S3 requests floe signs for whom (signer.h): the
 * table's own objects and listings, with GET and HEAD for readers and
 * PUT, POST and DELETE for writers. Reading the URI and computing the
 * signature are fileio's (s3sign.h).
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

/* A listing prefix under the table: "wh/t/" or longer. */
static bool prefix_under(const struct sign_scope *sc, const char *prefix)
{
	size_t kl = strlen(sc->key);

	return kl > 0 && strncmp(prefix, sc->key, kl) == 0 && prefix[kl] == '/';
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
	bool allowed = t.key[0] != '\0' ? key_under(&sc, t.key) || refuse_key(&sc, t.key, err)
					: bucket_request_ok(&sc, method, &t, body, err);
	if (!allowed)
		goto done;
	if (writes) {
		struct authz_object obj = { .kind = AUTHZ_TABLE, .ns = ns, .table = name };
		if (!authz_check(s, p, PRIV_TABLE_WRITE, &obj, err))
			goto done;
	}
	out = fileio_s3_sign(method, &t, json_object_get(body, "headers"), now, err);
done:
	fileio_s3_target_clear(&t);
	free(location);
	free(bucket);
	free(key);
	return out;
}
