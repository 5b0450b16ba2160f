/*
 * s3cred.c - floe's own S3 credentials, read once at start-up: from the
 * environment's AWS_* variables as config.c passed them, or from a
 * profile of the shared credentials file. Never logged; the file's text
 * is wiped once parsed.
 */
#include "s3.h"

#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "fileio.h"

static bool read_small_file(const char *path, char **text, size_t *len, struct floe_error *err)
{
	FILE *f = fopen(path, "re");
	struct buf b;

	*text = NULL;
	if (f == NULL)
		return floe_err(err, FE_BAD_REQUEST, "cannot read the shared credentials file %s",
				path);
	buf_init(&b, (size_t)256 * 1024);
	for (;;) {
		if (buf_reserve(&b, 4096) != BUF_OK)
			break;
		size_t r = fread(b.data + b.len, 1, b.cap - b.len, f);
		if (r == 0)
			break;
		buf_commit(&b, r);
	}
	bool bad = ferror(f) != 0 || b.status != BUF_OK;
	(void)fclose(f);
	if (bad) {
		buf_free(&b);
		return floe_err(err, FE_BAD_REQUEST,
				"cannot read the shared credentials file %s (at most 256 KiB)",
				path);
	}
	*text = buf_take(&b, len);
	if (*text == NULL)
		*text = strdup("");
	return *text != NULL || floe_err(err, FE_INTERNAL, "out of memory");
}

bool s3_credentials_load(const struct fileio_s3_options *o, struct s3_credentials *cr,
			 struct floe_error *err)
{

	if (o->access_key_id != NULL && o->access_key_id[0] != '\0') {
		if (o->secret_access_key == NULL || o->secret_access_key[0] == '\0')
			return floe_err(
				err, FE_BAD_REQUEST,
				"AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not");
		if (strlen(o->access_key_id) >= sizeof(cr->access_key_id) ||
		    strlen(o->secret_access_key) >= sizeof(cr->secret_access_key) ||
		    (o->session_token != NULL &&
		     strlen(o->session_token) >= sizeof(cr->session_token)))
			return floe_err(err, FE_BAD_REQUEST, "the AWS credentials are too long");
		(void)snprintf(cr->access_key_id, sizeof(cr->access_key_id), "%s",
			       o->access_key_id);
		(void)snprintf(cr->secret_access_key, sizeof(cr->secret_access_key), "%s",
			       o->secret_access_key);
		(void)snprintf(cr->session_token, sizeof(cr->session_token), "%s",
			       o->session_token != NULL ? o->session_token : "");
		return true;
	}
	if (o->credentials_file == NULL)
		return floe_err(
			err, FE_BAD_REQUEST,
			"no S3 credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or a shared credentials file and profile");
	char *text = NULL;
	size_t len = 0;
	if (!read_small_file(o->credentials_file, &text, &len, err))
		return false;
	bool ok = s3_credentials_parse(text, len, o->profile, cr, err);
	OPENSSL_cleanse(text, len);
	free(text);
	return ok;
}
