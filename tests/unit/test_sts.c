/* The pure parts of vended credentials: the session policy scoped to a
 * table's prefix, the role session name, STS's times and XML answers,
 * and the X-Iceberg-Access-Delegation list. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "delegation.h"
#include "sts.h"

/* Appends name and a space to out (cap bytes, *used so far). */
static void append(char *out, size_t cap, size_t *used, const char *name)
{
	int n = snprintf(out + *used, cap - *used, "%s ", name);

	if (n > 0 && (size_t)n < cap - *used)
		*used += (size_t)n;
}

/* The actions of a policy's statements, in order, each followed by a
 * space. */
static void actions_of(const json_t *doc, char *out, size_t cap)
{
	size_t i;
	size_t used = 0;
	const json_t *st;

	out[0] = '\0';
	json_array_foreach(json_object_get(doc, "Statement"), i, st) {
		const json_t *a = json_object_get(st, "Action");
		size_t j;
		const json_t *one;
		if (json_is_string(a))
			append(out, cap, &used, json_string_value(a));
		json_array_foreach(a, j, one) {
			append(out, cap, &used, json_string_value(one));
		}
	}
}

Test(sts, read_policy_allows_reading_the_prefix_only)
{
	struct floe_error err = { 0 };
	char *text = sts_session_policy("lake", "wh/sales/orders", false, &err);

	cr_assert_not_null(text, "%s", err.message);
	json_t *doc = json_loads(text, 0, NULL);
	cr_assert_not_null(doc);
	cr_assert_str_eq(json_string_value(json_object_get(doc, "Version")), "2012-10-17");
	char actions[512];
	actions_of(doc, actions, sizeof(actions));
	cr_assert_str_eq(actions, "s3:GetObject s3:GetObjectVersion s3:ListBucket "
				  "s3:GetBucketLocation ");
	const json_t *sts = json_object_get(doc, "Statement");
	cr_assert_str_eq(json_string_value(json_object_get(json_array_get(sts, 0), "Resource")),
			 "arn:aws:s3:::lake/wh/sales/orders/*");
	const json_t *list = json_array_get(sts, 1);
	cr_assert_str_eq(json_string_value(json_object_get(list, "Resource")), "arn:aws:s3:::lake");
	const json_t *prefixes = json_object_get(json_object_get(json_object_get(list, "Condition"),
								 "StringLike"),
						 "s3:prefix");
	cr_assert_eq(json_array_size(prefixes), 2);
	/* Never "wh/sales/orders" alone: it would list wh/sales/orders2/... */
	cr_assert_str_eq(json_string_value(json_array_get(prefixes, 0)), "wh/sales/orders/");
	cr_assert_str_eq(json_string_value(json_array_get(prefixes, 1)), "wh/sales/orders/*");
	for (size_t i = 0; i < json_array_size(sts); i++)
		cr_assert_str_eq(json_string_value(
					 json_object_get(json_array_get(sts, i), "Effect")),
				 "Allow");
	json_decref(doc);
	free(text);
}

Test(sts, write_policy_adds_writes_on_the_same_prefix)
{
	struct floe_error err = { 0 };
	char *text = sts_session_policy("lake", "wh/t", true, &err);

	cr_assert_not_null(text, "%s", err.message);
	json_t *doc = json_loads(text, 0, NULL);
	char actions[512];
	actions_of(doc, actions, sizeof(actions));
	cr_assert_str_eq(actions, "s3:GetObject s3:GetObjectVersion s3:PutObject s3:DeleteObject "
				  "s3:AbortMultipartUpload s3:ListMultipartUploadParts "
				  "s3:ListBucket s3:GetBucketLocation ");
	const json_t *w = json_array_get(json_object_get(doc, "Statement"), 1);
	cr_assert_str_eq(json_string_value(json_object_get(w, "Resource")),
			 "arn:aws:s3:::lake/wh/t/*");
	cr_assert_null(strstr(text, "s3:*"));
	json_decref(doc);
	free(text);
}

Test(sts, wildcards_in_a_key_never_widen_the_scope)
{
	struct floe_error err = { 0 };
	char *text = sts_session_policy("lake", "wh/a*b?c$d", false, &err);

	cr_assert_not_null(text, "%s", err.message);
	cr_assert_not_null(strstr(text, "arn:aws:s3:::lake/wh/a${*}b${?}c${$}d/*"), "%s", text);
	cr_assert_not_null(strstr(text, "\"wh/a${*}b${?}c${$}d/\""), "%s", text);
	free(text);
}

Test(sts, a_whole_bucket_or_an_oversize_policy_is_refused)
{
	struct floe_error err = { 0 };

	cr_assert_null(sts_session_policy("lake", "", false, &err));
	cr_assert_eq(err.kind, FE_BAD_REQUEST);
	char key[1001];
	memset(key, 'k', sizeof(key) - 1);
	key[sizeof(key) - 1] = '\0';
	cr_assert_null(sts_session_policy("lake", key, true, &err));
	cr_assert_eq(err.kind, FE_BAD_REQUEST);
	cr_assert_not_null(strstr(err.message, "too long for an STS session policy"), "%s",
			   err.message);
}

Test(sts, session_names)
{
	char out[STS_SESSION_NAME_MAX + 1];

	sts_session_name("alice", out);
	cr_assert_str_eq(out, "floe-alice");
	sts_session_name(NULL, out);
	cr_assert_str_eq(out, "floe");
	sts_session_name("https://issuer/ü ser:x", out);
	cr_assert_str_eq(out, "floe-https---issuer----ser-x");
	char longer[200];
	memset(longer, 'a', sizeof(longer) - 1);
	longer[sizeof(longer) - 1] = '\0';
	sts_session_name(longer, out);
	cr_assert_eq(strlen(out), STS_SESSION_NAME_MAX);
}

Test(sts, times)
{
	long long ms = 0;

	cr_assert(sts_parse_time("1970-01-01T00:00:00Z", &ms));
	cr_assert_eq(ms, 0);
	cr_assert(sts_parse_time("2026-12-02T01:30:00Z", &ms));
	cr_assert_eq(ms, 1796175000000LL);
	cr_assert(sts_parse_time("2026-12-02T01:30:00.25Z", &ms));
	cr_assert_eq(ms, 1796175000250LL);
	cr_assert(sts_parse_time("2024-02-29T23:59:59+00:00", &ms));
	cr_assert_eq(ms, 1709251199000LL);
	cr_assert_not(sts_parse_time("2026-12-02 01:30:00Z", &ms));
	cr_assert_not(sts_parse_time("2026-13-02T01:30:00Z", &ms));
	cr_assert_not(sts_parse_time("2026-12-02T01:30:00", &ms));
	cr_assert_not(sts_parse_time("2026-12-02T01:30:00.Z", &ms));
	cr_assert_not(sts_parse_time("2026-12-02T01:30:00+02:00", &ms));
	cr_assert_not(sts_parse_time("", &ms));
}

static const char answer[] =
	"<AssumeRoleResponse xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\">"
	"<AssumeRoleResult><SourceIdentity>x</SourceIdentity>"
	"<AssumedRoleUser><Arn>arn:aws:sts::1:assumed-role/r/floe-alice</Arn>"
	"<AssumedRoleId>ARO:floe-alice</AssumedRoleId></AssumedRoleUser>"
	"<Credentials><AccessKeyId>ASIAEXAMPLE</AccessKeyId>"
	"<SecretAccessKey>se/cr+et&amp;</SecretAccessKey>"
	"<SessionToken><![CDATA[tok<en>]]></SessionToken>"
	"<Expiration>2026-12-02T01:45:00Z</Expiration></Credentials>"
	"<PackedPolicySize>6</PackedPolicySize></AssumeRoleResult>"
	"<ResponseMetadata><RequestId>r</RequestId></ResponseMetadata></AssumeRoleResponse>";

Test(sts, assume_role_answer)
{
	struct fileio_vended v;

	cr_assert(sts_parse_credentials(answer, strlen(answer), &v));
	cr_assert_str_eq(v.access_key_id, "ASIAEXAMPLE");
	cr_assert_str_eq(v.secret_access_key, "se/cr+et&");
	cr_assert_str_eq(v.session_token, "tok<en>");
	cr_assert_eq(v.expires_at_ms, 1796175900000LL);
}

Test(sts, incomplete_or_broken_answers_are_refused)
{
	struct fileio_vended v;
	char buf[sizeof(answer) + 64];
	const char *cut = strstr(answer, "<Expiration>");

	/* no Expiration */
	(void)snprintf(buf, sizeof(buf),
		       "%.*s</Credentials></AssumeRoleResult></AssumeRoleResponse>",
		       (int)(cut - answer), answer);
	cr_assert_not(sts_parse_credentials(buf, strlen(buf), &v));
	cr_assert_str_eq(v.access_key_id, "");
	/* truncated document */
	cr_assert_not(sts_parse_credentials(answer, strlen(answer) - 10, &v));
	/* an error document */
	static const char e[] = "<ErrorResponse><Error><Type>Sender</Type><Code>AccessDenied</Code>"
				"<Message>not allowed</Message></Error><RequestId>r</RequestId>"
				"</ErrorResponse>";
	cr_assert_not(sts_parse_credentials(e, strlen(e), &v));
	/* a secret longer than the field */
	char big[1200];
	char key[600];
	memset(key, 'k', sizeof(key) - 1);
	key[sizeof(key) - 1] = '\0';
	(void)snprintf(big, sizeof(big),
		       "<AssumeRoleResponse><AssumeRoleResult><Credentials>"
		       "<AccessKeyId>A</AccessKeyId><SecretAccessKey>%s</SecretAccessKey>"
		       "<SessionToken>t</SessionToken><Expiration>2026-12-02T01:45:00Z</Expiration>"
		       "</Credentials></AssumeRoleResult></AssumeRoleResponse>",
		       key);
	cr_assert_not(sts_parse_credentials(big, strlen(big), &v));
}

Test(sts, error_answers)
{
	char code[64];
	char msg[128];
	static const char aws[] =
		"<ErrorResponse><Error><Type>Sender</Type><Code>AccessDenied</Code>"
		"<Message>User is not authorized</Message></Error></ErrorResponse>";
	static const char wrapped[] = "<ErrorResponse><Errors><Error><Code>Throttling</Code>"
				      "<Message>slow</Message></Error></Errors></ErrorResponse>";
	static const char bare[] = "<Error><Code>InvalidClientTokenId</Code></Error>";

	cr_assert(sts_parse_error(aws, strlen(aws), code, sizeof(code), msg, sizeof(msg)));
	cr_assert_str_eq(code, "AccessDenied");
	cr_assert_str_eq(msg, "User is not authorized");
	cr_assert(sts_parse_error(wrapped, strlen(wrapped), code, sizeof(code), msg, sizeof(msg)));
	cr_assert_str_eq(code, "Throttling");
	cr_assert(sts_parse_error(bare, strlen(bare), code, sizeof(code), msg, sizeof(msg)));
	cr_assert_str_eq(code, "InvalidClientTokenId");
	cr_assert_not(
		sts_parse_error(answer, strlen(answer), code, sizeof(code), msg, sizeof(msg)));
	cr_assert_not(sts_parse_error("<html>", 6, code, sizeof(code), msg, sizeof(msg)));
}

Test(sts, delegation_header)
{
	cr_assert(delegation_asks("vended-credentials", "vended-credentials"));
	cr_assert(delegation_asks(" remote-signing ,Vended-Credentials ", "vended-credentials"));
	cr_assert(delegation_asks("remote-signing,vended-credentials", "remote-signing"));
	cr_assert_not(delegation_asks(NULL, "vended-credentials"));
	cr_assert_not(delegation_asks("", "vended-credentials"));
	cr_assert_not(delegation_asks("remote-signing", "vended-credentials"));
	cr_assert_not(delegation_asks("vended-credentials-x", "vended-credentials"));
	cr_assert_not(delegation_asks("vended", "vended-credentials"));
	cr_assert_not(delegation_asks(",,,", "vended-credentials"));
}
