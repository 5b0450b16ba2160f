/*
 * fuzz_s3xml.c - libFuzzer target for the S3 backend's answers: the
 * bounded XML walk (fileio/s3xml.c) over ListObjectsV2, DeleteObjects and
 * Error documents, STS's AssumeRole and error answers (fileio/stsutil.c),
 * and the shared-credentials file reader. Every element reported has a
 * path of at most 8 names and text within the cap with no NUL; an Error's
 * code is a NUL-terminated string that fits; read credentials have every
 * part.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "s3.h"
#include "sts.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool leaf(void *ctx, const char *path, const char *text, size_t len)
{
	int *count = ctx;
	int slashes = 0;

	if (len > S3XML_TEXT_MAX || strlen(text) != len || path[0] == '\0')
		abort();
	for (const char *p = path; *p != '\0'; p++)
		slashes += *p == '/';
	if (slashes >= 8)
		abort();
	(*count)++;
	return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data;
	int count = 0;
	char code[16];
	char message[32];
	struct s3_credentials cred;
	struct fileio_vended vended;
	struct floe_error err;

	(void)s3xml_walk(text, size, leaf, &count);
	if (s3xml_error(text, size, code, sizeof(code), message, sizeof(message))) {
		if (code[0] == '\0' || strlen(code) >= sizeof(code) ||
		    strlen(message) >= sizeof(message))
			abort();
	}
	if (sts_parse_credentials(text, size, &vended)) {
		if (vended.access_key_id[0] == '\0' || vended.secret_access_key[0] == '\0' ||
		    vended.session_token[0] == '\0')
			abort();
	} else if (vended.access_key_id[0] != '\0') {
		abort(); /* nothing is left of a refused answer */
	}
	if (sts_parse_error(text, size, code, sizeof(code), message, sizeof(message))) {
		if (strlen(code) >= sizeof(code) || strlen(message) >= sizeof(message))
			abort();
	}
	if (s3_credentials_parse(text, size, "default", &cred, &err)) {
		if (cred.access_key_id[0] == '\0' || cred.secret_access_key[0] == '\0')
			abort();
	} else if (err.kind != FE_BAD_REQUEST) {
		abort();
	}
	return 0;
}
