/*
 * vend.c - credentials for engines to reach one table's objects: floe's
 * own (static, not scoped) or STS AssumeRole with a session policy
 * scoped to the table's prefix, signed by libcurl (CURLOPT_AWS_SIGV4,
 * service sts) with the credentials and region of the S3 store holding
 * the table (s3_setup_get): a table of one warehouse is never vended
 * another's keys. Not for caching (catalog/vend.c decides what is asked
 * and keeps the answers). Secrets are never logged.
 */
#include "fileio.h"

#include <curl/curl.h>
#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "log.h"
#include "s3.h"
#include "sts.h"
#include "txguard.h"

#define STS_CONNECT_TIMEOUT_MS 5000L
#define STS_TIMEOUT_MS 10000L
#define STS_ATTEMPTS 3
#define STS_BACKOFF_BASE_MS 100L
#define STS_BACKOFF_MAX_MS 1000L
#define STS_ANSWER_MAX ((size_t)64 * 1024)
#define STS_FORM_MAX ((size_t)16 * 1024)

/* The configuration fileio_vend_start took; read-only afterwards. */
static struct {
	enum fileio_vend_mode mode;
	char client_endpoint[272]; /* the default warehouse's, "" for its storage's */
	char sts_endpoint[272];    /* the default warehouse's STS, "" for AWS's */
	char role_arn[2048];
	char read_role_arn[2048];
	int duration_s;
} vend;

/* Whether a store is AWS's own S3 (no endpoint of its own was given). */
static bool aws_host(const struct s3_setup *up)
{
	return strstr(up->host, ".amazonaws.com") != NULL;
}

bool fileio_vend_start(const struct fileio_vend_options *o, struct floe_error *err)
{
	memset(&vend, 0, sizeof(vend));
	if (o->mode == FILEIO_VEND_OFF)
		return true;
	if (s3_store_count() == 0)
		return floe_err(err, FE_BAD_REQUEST,
				"vended credentials need an s3:// warehouse (--warehouse)");
	if (o->mode == FILEIO_VEND_STS) {
		if (o->role_arn == NULL || o->role_arn[0] == '\0')
			return floe_err(err, FE_BAD_REQUEST,
					"--s3-vended-credentials=sts needs --s3-sts-role-arn");
		if (strlen(o->role_arn) >= sizeof(vend.role_arn) ||
		    (o->read_role_arn != NULL &&
		     strlen(o->read_role_arn) >= sizeof(vend.read_role_arn)))
			return floe_err(err, FE_BAD_REQUEST, "the role ARN is too long");
		(void)snprintf(vend.role_arn, sizeof(vend.role_arn), "%s", o->role_arn);
		(void)snprintf(vend.read_role_arn, sizeof(vend.read_role_arn), "%s",
			       o->read_role_arn != NULL && o->read_role_arn[0] != '\0'
				       ? o->read_role_arn
				       : o->role_arn);
		if (o->sts_endpoint != NULL && strlen(o->sts_endpoint) >= sizeof(vend.sts_endpoint))
			return floe_err(err, FE_BAD_REQUEST, "the STS endpoint is too long");
		(void)snprintf(vend.sts_endpoint, sizeof(vend.sts_endpoint), "%s",
			       o->sts_endpoint != NULL ? o->sts_endpoint : "");
		vend.duration_s = o->duration_s;
	}
	if (o->client_endpoint != NULL &&
	    strlen(o->client_endpoint) >= sizeof(vend.client_endpoint))
		return floe_err(err, FE_BAD_REQUEST, "the client endpoint is too long");
	(void)snprintf(vend.client_endpoint, sizeof(vend.client_endpoint), "%s",
		       o->client_endpoint != NULL ? o->client_endpoint : "");
	vend.mode = o->mode;
	return true;
}

enum fileio_vend_mode fileio_vend_mode(void)
{
	return vend.mode;
}

bool fileio_vend_client(const char *table_location, struct fileio_vend_client *out)
{
	struct s3_setup up;

	memset(out, 0, sizeof(*out));
	if (vend.mode == FILEIO_VEND_OFF || !s3_setup_get(table_location, &up))
		return false;
	/* --s3-client-endpoint is the default warehouse's address for engines
	 * (floe and they may reach its storage at different addresses); a
	 * further warehouse's engines are told its own endpoint. */
	if (up.default_warehouse && vend.client_endpoint[0] != '\0')
		(void)snprintf(out->endpoint, sizeof(out->endpoint), "%s", vend.client_endpoint);
	else if (!aws_host(&up))
		(void)snprintf(out->endpoint, sizeof(out->endpoint), "%s://%s", up.scheme, up.host);
	out->path_style = up.path_style;
	(void)snprintf(out->region, sizeof(out->region), "%s", up.region);
	return true;
}

/* Where a store's AssumeRole goes: --s3-sts-endpoint for the default
 * warehouse, a further warehouse's own endpoint (S3-compatible servers
 * serve STS there), else AWS's STS of the store's region. */
static void sts_url_of(const struct s3_setup *up, char *url, size_t cap)
{
	if (up->default_warehouse && vend.sts_endpoint[0] != '\0')
		(void)snprintf(url, cap, "%s/", vend.sts_endpoint);
	else if (!up->default_warehouse && !aws_host(up))
		(void)snprintf(url, cap, "%s://%s/", up->scheme, up->host);
	else
		(void)snprintf(url, cap, "https://sts.%s.amazonaws.com/", up->region);
}

static size_t on_answer(char *data, size_t size, size_t n, void *ctx)
{
	struct buf *b = ctx;
	size_t len = size * n;

	return buf_append(b, data, len) == BUF_OK ? len : 0;
}

/* The AssumeRole form: parameters in name order, values encoded. */
static bool assume_role_form(char *form, size_t cap, const char *role, const char *session,
			     const char *policy, int duration_s)
{
	char dur[16];

	(void)snprintf(dur, sizeof(dur), "%d", duration_s);
	form[0] = '\0';
	return s3_query_add(form, cap, "Action", "AssumeRole") &&
	       s3_query_add(form, cap, "DurationSeconds", dur) &&
	       s3_query_add(form, cap, "Policy", policy) &&
	       s3_query_add(form, cap, "RoleArn", role) &&
	       s3_query_add(form, cap, "RoleSessionName", session) &&
	       s3_query_add(form, cap, "Version", "2011-06-15");
}

/* One POST to the STS of store up, signed with its credentials and
 * region; *status 0 and *curl_code set when no answer came. */
static bool sts_post(const struct s3_setup *up, const char *form, struct buf *answer, long *status,
		     CURLcode *curl_code, struct floe_error *err)
{
	struct curl_slist *h = NULL;
	char token[sizeof(((struct s3_credentials *)0)->session_token) + 32];
	char url[320];
	char sigv4[128];
	bool ok = false;
	CURL *curl = curl_easy_init();

	*status = 0;
	*curl_code = CURLE_OK;
	token[0] = '\0';
	if (curl == NULL) {
		floe_err(err, FE_INTERNAL, "out of memory");
		goto done;
	}
	sts_url_of(up, url, sizeof(url));
	(void)snprintf(sigv4, sizeof(sigv4), "aws:amz:%s:sts", up->region);
	struct curl_slist
		*all = curl_slist_append(NULL, "Content-Type: application/x-www-form-urlencoded");
	h = all;
	if (all != NULL && up->cred->session_token[0] != '\0') {
		(void)snprintf(token, sizeof(token), "x-amz-security-token: %s",
			       up->cred->session_token);
		all = curl_slist_append(h, token);
	}
	if (all == NULL) {
		floe_err(err, FE_INTERNAL, "out of memory");
		goto done;
	}
	(void)curl_easy_setopt(curl, CURLOPT_URL, url);
	(void)curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
	(void)curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 0L);
	(void)curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
	(void)curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, STS_CONNECT_TIMEOUT_MS);
	(void)curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, STS_TIMEOUT_MS);
	(void)curl_easy_setopt(curl, CURLOPT_AWS_SIGV4, sigv4);
	(void)curl_easy_setopt(curl, CURLOPT_USERNAME, up->cred->access_key_id);
	(void)curl_easy_setopt(curl, CURLOPT_PASSWORD, up->cred->secret_access_key);
	(void)curl_easy_setopt(curl, CURLOPT_HTTPHEADER, h);
	(void)curl_easy_setopt(curl, CURLOPT_POSTFIELDS, form);
	(void)curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(form));
	(void)curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_answer);
	(void)curl_easy_setopt(curl, CURLOPT_WRITEDATA, answer);
	TXGUARD_ASSERT_NONE();
	*curl_code = curl_easy_perform(curl);
	if (*curl_code == CURLE_OK)
		(void)curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, status);
	ok = true;
done:
	curl_slist_free_all(h);
	OPENSSL_cleanse(token, sizeof(token));
	curl_easy_cleanup(curl);
	return ok;
}

/* AssumeRole, retried on a transport failure, 5xx or throttling. */
static bool assume_role(const struct s3_setup *up, const char *location, const char *role,
			const char *form, struct fileio_vended *out, struct floe_error *err)
{
	struct buf answer;
	long status = 0;
	CURLcode cc = CURLE_OK;
	char code[64] = "";
	char message[256] = "";

	for (int attempt = 1;; attempt++) {
		buf_init(&answer, STS_ANSWER_MAX);
		if (!sts_post(up, form, &answer, &status, &cc, err)) {
			buf_free(&answer);
			return false;
		}
		code[0] = '\0';
		message[0] = '\0';
		if (status >= 300 && answer.data != NULL)
			(void)sts_parse_error(answer.data, answer.len, code, sizeof(code), message,
					      sizeof(message));
		bool again = cc != CURLE_OK || status >= 500 || status == 429 ||
			     strcmp(code, "Throttling") == 0;
		if (!again || attempt == STS_ATTEMPTS)
			break;
		OPENSSL_cleanse(answer.data, answer.len);
		buf_free(&answer);
		s3_pause(attempt, STS_BACKOFF_BASE_MS, STS_BACKOFF_MAX_MS);
	}
	bool ok = false;
	if (cc != CURLE_OK) {
		log_error("fileio", "AssumeRole %s for %.200s: %s", role, location,
			  curl_easy_strerror(cc));
		floe_err(err, FE_UNAVAILABLE,
			 "Cannot vend storage credentials: STS cannot be reached (%s); retry",
			 curl_easy_strerror(cc));
	} else if (status >= 500 || status == 429 || strcmp(code, "Throttling") == 0) {
		log_error("fileio", "AssumeRole %s for %.200s: status %ld (%s) %.200s", role,
			  location, status, code[0] != '\0' ? code : "no error code", message);
		floe_err(err, FE_UNAVAILABLE,
			 "Cannot vend storage credentials: STS answered %ld (%s); retry", status,
			 code[0] != '\0' ? code : "no error code");
	} else if (status != 200) {
		log_error("fileio", "AssumeRole %s for %.200s: refused, status %ld (%s) %.200s",
			  role, location, status, code[0] != '\0' ? code : "no error code",
			  message);
		floe_err(err, FE_UNAVAILABLE,
			 "Cannot vend storage credentials: STS refused AssumeRole (%ld %s)", status,
			 code[0] != '\0' ? code : "no error code");
	} else if (answer.data == NULL || !sts_parse_credentials(answer.data, answer.len, out)) {
		log_error("fileio", "AssumeRole %s for %.200s: an unreadable answer", role,
			  location);
		floe_err(err, FE_INTERNAL,
			 "Cannot vend storage credentials: STS answered AssumeRole unreadably");
	} else {
		ok = true;
	}
	if (answer.data != NULL)
		OPENSSL_cleanse(answer.data, answer.len);
	buf_free(&answer);
	return ok;
}

bool fileio_vend(const char *table_location, bool write, const char *session_name,
		 struct fileio_vended *out, struct floe_error *err)
{
	struct s3_setup up;
	char *bucket = NULL;
	char *key = NULL;
	char *policy = NULL;
	char *form = NULL;
	bool ok = false;

	memset(out, 0, sizeof(*out));
	if (vend.mode == FILEIO_VEND_OFF)
		return floe_err(err, FE_BAD_REQUEST, "credential vending is off");
	if (!s3_split(table_location, &bucket, &key, err))
		return false;
	if (!s3_setup_get(table_location, &up)) {
		floe_err(
			err, FE_BAD_REQUEST,
			"location %.200s lies in no s3:// warehouse of floe's: there are no credentials to vend for it",
			table_location);
		goto done;
	}
	if (vend.mode == FILEIO_VEND_STATIC) {
		(void)snprintf(out->access_key_id, sizeof(out->access_key_id), "%s",
			       up.cred->access_key_id);
		(void)snprintf(out->secret_access_key, sizeof(out->secret_access_key), "%s",
			       up.cred->secret_access_key);
		(void)snprintf(out->session_token, sizeof(out->session_token), "%s",
			       up.cred->session_token);
		ok = true;
		goto done;
	}
	char session[STS_SESSION_NAME_MAX + 1];
	sts_session_name(session_name, session);
	policy = sts_session_policy(bucket, key, write, err);
	form = malloc(STS_FORM_MAX);
	if (policy == NULL)
		goto done;
	if (form == NULL) {
		floe_err(err, FE_INTERNAL, "out of memory");
		goto done;
	}
	const char *role = write ? vend.role_arn : vend.read_role_arn;
	if (!assume_role_form(form, STS_FORM_MAX, role, session, policy, vend.duration_s)) {
		floe_err(err, FE_BAD_REQUEST, "the AssumeRole request is too long");
		goto done;
	}
	ok = assume_role(&up, table_location, role, form, out, err);
done:
	free(form);
	free(policy);
	free(bucket);
	free(key);
	return ok;
}
