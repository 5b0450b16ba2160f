/* The pure parts of the S3 backend: keys and request URLs, the canonical
 * query, the retry decision and its backoff, the shared-credentials file,
 * the bounded walk of S3's XML answers and the keys of a DeleteObjects
 * body the remote signer checks. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "s3.h"
#include "s3sign.h"

Test(s3, split_and_urls)
{
	struct floe_error err = { 0 };
	char *bucket = NULL;
	char *key = NULL;

	cr_assert(s3_split("s3://lake/wh/ns/t", &bucket, &key, &err), "%s", err.message);
	cr_assert_str_eq(bucket, "lake");
	cr_assert_str_eq(key, "wh/ns/t");
	free(bucket);
	free(key);
	cr_assert(s3_split("s3://lake", &bucket, &key, &err));
	cr_assert_str_eq(key, "");
	free(bucket);
	free(key);
	cr_assert_not(s3_split("file:///lake", &bucket, &key, &err));
	cr_assert_eq(err.kind, FE_BAD_REQUEST);
	char big[S3_KEY_MAX + 32];
	memset(big, 'k', sizeof(big));
	memcpy(big, "s3://lake/", 10);
	big[sizeof(big) - 1] = '\0';
	cr_assert_not(s3_split(big, &bucket, &key, &err));
	cr_assert(strstr(err.message, "1024") != NULL, "%s", err.message);

	struct s3_endpoint path = { "http", "127.0.0.1:9000", true };
	struct s3_endpoint virt = { "https", "s3.eu-west-1.amazonaws.com", false };
	char *u = s3_request_url(&path, "lake", "wh/a b/%25/ü~._-", NULL);
	cr_assert_str_eq(u, "http://127.0.0.1:9000/lake/wh/a%20b/%2525/%C3%BC~._-");
	free(u);
	u = s3_request_url(&virt, "lake", "wh/x", NULL);
	cr_assert_str_eq(u, "https://lake.s3.eu-west-1.amazonaws.com/wh/x");
	free(u);
	u = s3_request_url(&path, "lake", "", "delete=");
	cr_assert_str_eq(u, "http://127.0.0.1:9000/lake?delete=");
	free(u);
	u = s3_request_url(&virt, "lake", "", "list-type=2");
	cr_assert_str_eq(u, "https://lake.s3.eu-west-1.amazonaws.com/?list-type=2");
	free(u);
}

Test(s3, canonical_query)
{
	char q[128] = "";

	cr_assert(s3_query_add(q, sizeof(q), "continuation-token", "a+b/c="));
	cr_assert(s3_query_add(q, sizeof(q), "list-type", "2"));
	cr_assert(s3_query_add(q, sizeof(q), "prefix", "wh/ns t/"));
	cr_assert_str_eq(q, "continuation-token=a%2Bb%2Fc%3D&list-type=2&prefix=wh%2Fns%20t%2F");
	char small[8] = "";
	cr_assert_not(s3_query_add(small, sizeof(small), "prefix", "toolong"));
	cr_assert_str_eq(small, "");
}

Test(s3, retry_decision_and_backoff)
{
	cr_assert(s3_retryable(7, 0, NULL));  /* could not connect */
	cr_assert(s3_retryable(28, 0, NULL)); /* timed out */
	cr_assert(s3_retryable(0, 500, ""));
	cr_assert(s3_retryable(0, 503, "SlowDown"));
	cr_assert(s3_retryable(0, 429, ""));
	cr_assert(s3_retryable(0, 400, "RequestTimeout"));
	cr_assert_not(s3_retryable(0, 412, "PreconditionFailed"));
	cr_assert_not(s3_retryable(0, 403, "AccessDenied"));
	cr_assert_not(s3_retryable(0, 404, "NoSuchKey"));
	cr_assert_not(s3_retryable(0, 400, "InvalidArgument"));

	for (unsigned r = 0; r < 1000; r += 37) {
		cr_assert_leq(s3_backoff_ms(1, 100, 2000, r), 100);
		cr_assert_leq(s3_backoff_ms(2, 100, 2000, r), 200);
		cr_assert_leq(s3_backoff_ms(3, 100, 2000, r), 400);
		cr_assert_leq(s3_backoff_ms(30, 100, 2000, r), 2000);
		cr_assert_geq(s3_backoff_ms(30, 100, 2000, r), 0);
	}
	/* Jitter: different draws give different delays. */
	cr_assert_neq(s3_backoff_ms(5, 100, 2000, 1), s3_backoff_ms(5, 100, 2000, 999));
}

Test(s3, credentials_file)
{
	static const char text[] = "# floe's keys\n"
				   "[default]\n"
				   "aws_access_key_id = AKIDDEFAULT\n"
				   "aws_secret_access_key=secret/default\n"
				   "\n"
				   "[ floe ]\r\n"
				   "; a comment\n"
				   "AWS_ACCESS_KEY_ID = AKIDFLOE  \n"
				   "aws_secret_access_key = s3cr=t\n"
				   "aws_session_token = tok\n"
				   "region = eu-west-1\n"
				   "[other]\n"
				   "aws_access_key_id = AKIDOTHER\n";
	struct s3_credentials c;
	struct floe_error err = { 0 };

	cr_assert(s3_credentials_parse(text, strlen(text), "default", &c, &err), "%s", err.message);
	cr_assert_str_eq(c.access_key_id, "AKIDDEFAULT");
	cr_assert_str_eq(c.secret_access_key, "secret/default");
	cr_assert_str_eq(c.session_token, "");
	cr_assert(s3_credentials_parse(text, strlen(text), "floe", &c, &err), "%s", err.message);
	cr_assert_str_eq(c.access_key_id, "AKIDFLOE");
	cr_assert_str_eq(c.secret_access_key, "s3cr=t");
	cr_assert_str_eq(c.session_token, "tok");
	cr_assert_not(s3_credentials_parse(text, strlen(text), "other", &c, &err));
	cr_assert(strstr(err.message, "lacks") != NULL, "%s", err.message);
	cr_assert_not(s3_credentials_parse(text, strlen(text), "missing", &c, &err));
	cr_assert(strstr(err.message, "no profile [missing]") != NULL, "%s", err.message);
	cr_assert_not(s3_credentials_parse("[bad\n", 5, "bad", &c, &err));
	/* The secret is never in a message. */
	cr_assert_not(s3_credentials_parse(text, strlen(text), "other", &c, &err));
	cr_assert(strstr(err.message, "secret/default") == NULL);
}

struct collected {
	char text[8192];
	int count;
};

static bool collect(void *ctx, const char *path, const char *text, size_t len)
{
	struct collected *c = ctx;
	size_t have = strlen(c->text);

	cr_assert_eq(strlen(text), len);
	(void)snprintf(c->text + have, sizeof(c->text) - have, "%s=%s;", path, text);
	c->count++;
	return true;
}

static const char *walk(const char *xml)
{
	static struct collected c;

	memset(&c, 0, sizeof(c));
	if (!s3xml_walk(xml, strlen(xml), collect, &c))
		return NULL;
	return c.text;
}

Test(s3, xml_list_answer)
{
	const char *got = walk(
		"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		"<ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
		"<Name>lake</Name><KeyCount>2</KeyCount>"
		"<Contents><Key>wh/t/a&amp;b&lt;&#62;&#x41;&#233;</Key>"
		"<ETag>&#34;d41d8&quot;</ETag><Size>0</Size></Contents>\n"
		"<Contents><Key><![CDATA[wh/t/<raw>&]]></Key></Contents>"
		"<IsTruncated>true</IsTruncated>"
		"<NextContinuationToken>1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=</NextContinuationToken>"
		"<!-- a comment --><Empty/></ListBucketResult>\n");
	cr_assert_not_null(got);
	cr_assert_str_eq(
		got,
		"ListBucketResult/Name=lake;ListBucketResult/KeyCount=2;"
		"ListBucketResult/Contents/Key=wh/t/a&b<>A\xC3\xA9;"
		"ListBucketResult/Contents/ETag=\"d41d8\";ListBucketResult/Contents/Size=0;"
		"ListBucketResult/Contents/Key=wh/t/<raw>&;"
		"ListBucketResult/IsTruncated=true;"
		"ListBucketResult/NextContinuationToken=1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=;");
}

Test(s3, xml_error_answer)
{
	static const char xml[] =
		"<?xml version=\"1.0\"?>\n<Error>\n    <Code>SlowDown</Code>\n"
		"    <Message><![CDATA[Please reduce your request rate.]]></Message>\n"
		"    <RequestID>abc</RequestID>\n</Error>";
	char code[16];
	char message[128];

	cr_assert(s3xml_error(xml, strlen(xml), code, sizeof(code), message, sizeof(message)));
	cr_assert_str_eq(code, "SlowDown");
	cr_assert_str_eq(message, "Please reduce your request rate.");
	cr_assert_not(s3xml_error("<Other/>", 8, code, sizeof(code), NULL, 0));
	cr_assert_not(s3xml_error("", 0, code, sizeof(code), NULL, 0));
}

Test(s3, xml_refused)
{
	static const char *const bad[] = {
		"",
		"text",
		"<a>",
		"<a></b>",
		"<a><b></a></b>",
		"<a/><b/>",
		"<!DOCTYPE a [<!ENTITY x \"y\">]><a>&x;</a>",
		"<a>&unknown;</a>",
		"<a>&#0;</a>",
		"<a>&#xD800;</a>",
		"<a>&#x110000;</a>",
		"<a>&#;</a>",
		"<a>&amp</a>",
		"<a><![CDATA[open</a>",
		"<a><!-- open</a>",
		"<a b=\"unterminated></a>",
		"<1><2><3><4><5><6><7><8><9></9></8></7></6></5></4></3></2></1>",
		"<a>x</a>trailing",
		"<a></a><?pi after?>",
		/* Text mixed with elements: parsers differ in what they make
		 * of it (Go's keeps the text and drops the elements). */
		"<a>x<b/></a>",
		"<a><b/>x</a>",
		"<a>x<b>y</b>z</a>",
		"<a><b>y</b>&amp;</a>",
		"<a><b>y</b><![CDATA[z]]></a>",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_assert_null(walk(bad[i]), "case %zu accepted: %s", i, bad[i]);

	/* No NUL in text, in CDATA either. */
	static const char nul[] = "<a><![CDATA[x\0y]]></a>";
	struct collected c = { 0 };
	cr_assert_not(s3xml_walk(nul, sizeof(nul) - 1, collect, &c));
	/* Text past the cap is refused, not cut. */
	size_t n = S3XML_TEXT_MAX + 16;
	char *big = malloc(n + 16);
	memcpy(big, "<a>", 3);
	memset(big + 3, 'x', n);
	memcpy(big + 3 + n, "</a>", 5);
	cr_assert_null(walk(big));
	free(big);
	/* A name past 64 bytes too. */
	char name[200];
	(void)snprintf(name, sizeof(name), "<%070d></%070d>", 0, 0);
	cr_assert_null(walk(name));
}

Test(s3, xml_white_space_between_elements_is_no_text)
{
	const char *got = walk("<a>\n  <b>x</b>\r\n\t<c> y </c>\n</a>");
	cr_assert_not_null(got);
	cr_assert_str_eq(got, "a/b=x;a/c= y ;");
}

static bool take_key(void *ctx, const char *key, struct floe_error *err)
{
	struct collected *c = ctx;
	size_t have = strlen(c->text);

	(void)err;
	(void)snprintf(c->text + have, sizeof(c->text) - have, "%s;", key);
	c->count++;
	return true;
}

static const char *delete_keys(const char *xml, struct floe_error *err)
{
	static struct collected c;

	memset(&c, 0, sizeof(c));
	floe_error_clear(err);
	if (!fileio_s3_delete_keys(xml, strlen(xml), take_key, &c, err))
		return NULL;
	return c.text;
}

/* Every key S3 could read in a DeleteObjects body is one floe is shown. */
Test(s3, delete_body_keys)
{
	struct floe_error err;
	const char *got = delete_keys(
		"<?xml version=\"1.0\"?><Delete xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
		"<Quiet>true</Quiet><Object><Key>wh/t/a</Key><VersionId>1</VersionId></Object>"
		"<Object><Key>wh/t/&#98;</Key></Object></Delete>",
		&err);
	cr_assert_not_null(got, "%s", err.message);
	cr_assert_str_eq(got, "wh/t/a;wh/t/b;");

	static const char *const bad[] = {
		"<Delete><Object><Key>wh/t2/<i>x</i>b</Key></Object></Delete>",
		"<Delete><Object><Key>wh/t2/<i/>b</Key></Object></Delete>",
		"<Delete><Object><Key>wh/t/a</Key><key>wh/t2/b</key></Object></Delete>",
		"<Delete><Object><Name>wh/t2/b</Name></Object></Delete>",
		"<Delete><Key>wh/t2/b</Key></Delete>",
		"<Remove><Object><Key>wh/t/a</Key></Object></Remove>",
		"<Delete><Quiet>true</Quiet></Delete>",
		"<Delete><Object><Key>wh/t/../t2/b</Key></Object></Delete>",
		"<Delete><Object><Key>wh/t//b</Key></Object></Delete>",
		"<Delete><Object><Key>wh/t/./b</Key></Object></Delete>",
		"<Delete><Object><Key>/wh/t/b</Key></Object></Delete>",
		"<Delete><Object><Key></Key></Object></Delete>",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_assert_null(delete_keys(bad[i], &err), "case %zu accepted: %s", i, bad[i]);
		cr_assert_eq(err.kind, FE_BAD_REQUEST, "case %zu: %s", i, err.message);
	}
	cr_assert_null(delete_keys("", &err));
	cr_assert_eq(err.kind, FE_FORBIDDEN);
}

Test(s3, key_segments)
{
	cr_assert(fileio_s3_key_segments_ok("wh/t/a", false));
	cr_assert(fileio_s3_key_segments_ok("", false));
	cr_assert(fileio_s3_key_segments_ok("wh/t/", true));
	cr_assert(fileio_s3_key_segments_ok("wh/t/..x/.a", false));
	cr_assert_not(fileio_s3_key_segments_ok("wh/t/", false));
	cr_assert_not(fileio_s3_key_segments_ok("wh//t/", true));
	cr_assert_not(fileio_s3_key_segments_ok("/wh/t", true));
	cr_assert_not(fileio_s3_key_segments_ok("wh/t/../", true));
	cr_assert_not(fileio_s3_key_segments_ok("wh/t/..", true));
	cr_assert_not(fileio_s3_key_segments_ok("wh/./t", false));
}

Test(s3, xml_delete_answer)
{
	const char *got = walk("<DeleteResult><Deleted><Key>a</Key></Deleted>"
			       "<Error><Key>b</Key><Code>AccessDenied</Code>"
			       "<Message>no</Message></Error></DeleteResult>");
	cr_assert_not_null(got);
	cr_assert_str_eq(got,
			 "DeleteResult/Deleted/Key=a;DeleteResult/Error/Key=b;"
			 "DeleteResult/Error/Code=AccessDenied;DeleteResult/Error/Message=no;");
}

/* Which store a request goes to: the longest location holding the
 * object's URL at a path boundary, and none for a URL outside them all,
 * which s3.c then refuses rather than sign with some store's keys. */
Test(s3, store_choice_longest_prefix)
{
	const char *const stores[] = { "s3://lake", "s3://lake/wh", "s3://lake/wh/inner" };

	cr_assert_eq(s3_store_pick(stores, 3, "s3://lake/wh/inner/t/metadata/x.json"), 2);
	cr_assert_eq(s3_store_pick(stores, 3, "s3://lake/wh/t/metadata/x.json"), 1);
	cr_assert_eq(s3_store_pick(stores, 3, "s3://lake/other/t"), 0);
	/* The order stores were added in does not matter. */
	const char *const reversed[] = { "s3://lake/wh/inner", "s3://lake/wh", "s3://lake" };
	cr_assert_eq(s3_store_pick(reversed, 3, "s3://lake/wh/inner/t"), 0);
	cr_assert_eq(s3_store_pick(reversed, 3, "s3://lake/wh/t"), 1);
	cr_assert_eq(s3_store_pick(reversed, 3, "s3://lake/x"), 2);
}

Test(s3, store_choice_at_a_path_boundary)
{
	const char *const stores[] = { "s3://lake/p" };

	cr_assert_eq(s3_store_pick(stores, 1, "s3://lake/p/x"), 0);
	cr_assert_eq(s3_store_pick(stores, 1, "s3://lake/p"), 0);
	cr_assert_eq(s3_store_pick(stores, 1, "s3://lake/px"), -1);
	cr_assert_eq(s3_store_pick(stores, 1, "s3://lake/px/p/x"), -1);
	cr_assert_eq(s3_store_pick(stores, 1, "s3://lake"), -1);
	/* A bucket whose name starts with another's is another bucket. */
	const char *const buckets[] = { "s3://lake" };
	cr_assert_eq(s3_store_pick(buckets, 1, "s3://lakes/p/x"), -1);
	cr_assert_eq(s3_store_pick(buckets, 1, "s3://lake-2/x"), -1);
}

Test(s3, store_choice_at_the_bucket_root)
{
	const char *const stores[] = { "s3://lake" };

	cr_assert_eq(s3_store_pick(stores, 1, "s3://lake"), 0);
	cr_assert_eq(s3_store_pick(stores, 1, "s3://lake/x"), 0);
	cr_assert_eq(s3_store_pick(stores, 1, "s3://lake/a/b/c/metadata/00001-x.metadata.json"), 0);
}

Test(s3, store_choice_none)
{
	const char *const stores[] = { "s3://lake/wh", "s3://sea/wh" };

	cr_assert_eq(s3_store_pick(stores, 2, "s3://river/wh/t"), -1);
	cr_assert_eq(s3_store_pick(stores, 2, "s3://lake/elsewhere/t"), -1);
	cr_assert_eq(s3_store_pick(stores, 2, "file:///lake/wh/t"), -1);
	cr_assert_eq(s3_store_pick(stores, 2, "/lake/wh/t"), -1);
	cr_assert_eq(s3_store_pick(stores, 2, NULL), -1);
	cr_assert_eq(s3_store_pick(stores, 0, "s3://lake/wh/t"), -1);
	cr_assert_eq(s3_store_pick(NULL, 0, "s3://lake/wh/t"), -1);
}

Test(s3, store_choice_two_stores_in_one_bucket)
{
	const char *const stores[] = { "s3://lake/sales", "s3://lake/sales-eu" };

	cr_assert_eq(s3_store_pick(stores, 2, "s3://lake/sales/orders/data/a.parquet"), 0);
	cr_assert_eq(s3_store_pick(stores, 2, "s3://lake/sales-eu/orders/data/a.parquet"), 1);
	cr_assert_eq(s3_store_pick(stores, 2, "s3://lake/sales-e/orders"), -1);
	cr_assert_eq(s3_store_pick(stores, 2, "s3://lake/salesx"), -1);
	cr_assert_eq(s3_store_pick(stores, 2, "s3://lake"), -1);
}
