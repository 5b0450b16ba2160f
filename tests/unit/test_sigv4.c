/* AWS Signature V4 as floe computes it for remote signing (sigv4.c),
 * checked against the examples of AWS's S3 documentation ("Signature
 * Calculations for the Authorization Header: Transferring Payload in a
 * Single Chunk"): the example credentials, region us-east-1, bucket
 * examplebucket, 24 May 2013, and the signatures published there. */
#include <criterion/criterion.h>
#include <string.h>

#include "sigv4.h"

static const struct sigv4_key aws_example_key = {
	"AKIAIOSFODNN7EXAMPLE",
	"wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
};

#define EMPTY_SHA256 "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
#define CRED "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "

static void sign_ok(const struct sigv4_request *r, const char *expected)
{
	char auth[1024];

	cr_assert(sigv4_sign(r, &aws_example_key, auth, sizeof(auth)));
	cr_assert_str_eq(auth, expected);
}

Test(sigv4, get_object)
{
	const struct sigv4_header h[] = {
		{ "Host", "examplebucket.s3.amazonaws.com" },
		{ "Range", "bytes=0-9" },
		{ "x-amz-content-sha256", EMPTY_SHA256 },
		{ "x-amz-date", "20130524T000000Z" },
	};
	struct sigv4_request r = { "GET",        "/test.txt",        "",          h,   4,
				   EMPTY_SHA256, "20130524T000000Z", "us-east-1", "s3" };
	sign_ok(&r,
		CRED "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, "
		     "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
}

Test(sigv4, put_object)
{
	/* SHA-256 of "Welcome to Amazon S3." */
	const char *payload = "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072";
	const struct sigv4_header h[] = {
		{ "x-amz-storage-class", "REDUCED_REDUNDANCY" },
		{ "Date", "Fri, 24 May 2013 00:00:00 GMT" },
		{ "Host", "examplebucket.s3.amazonaws.com" },
		{ "x-amz-date", "20130524T000000Z" },
		{ "x-amz-content-sha256", payload },
	};
	struct sigv4_request r = { "PUT",   "/test%24file.text", "",          h,   5,
				   payload, "20130524T000000Z",  "us-east-1", "s3" };
	sign_ok(&r,
		CRED "SignedHeaders=date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class, "
		     "Signature=98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd");
}

/* A bucket-level GET of the examples: its query made canonical first. */
static void sign_bucket_get(const char *raw_query, const char *canonical, const char *expected)
{
	char q[64];
	const struct sigv4_header h[] = {
		{ "host", "examplebucket.s3.amazonaws.com" },
		{ "x-amz-date", "20130524T000000Z" },
		{ "x-amz-content-sha256", EMPTY_SHA256 },
	};

	cr_assert(sigv4_canonical_query(raw_query, q, sizeof(q)));
	cr_assert_str_eq(q, canonical);
	struct sigv4_request r = { "GET",       "/", q, h, 3, EMPTY_SHA256, "20130524T000000Z",
				   "us-east-1", "s3" };
	sign_ok(&r, expected);
}

Test(sigv4, get_bucket_lifecycle)
{
	sign_bucket_get(
		"lifecycle", "lifecycle=",
		CRED "SignedHeaders=host;x-amz-content-sha256;x-amz-date, "
		     "Signature=fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543");
}

Test(sigv4, list_objects)
{
	/* Sorted by name whatever order the client sent them in. */
	sign_bucket_get(
		"prefix=J&max-keys=2", "max-keys=2&prefix=J",
		CRED "SignedHeaders=host;x-amz-content-sha256;x-amz-date, "
		     "Signature=34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7");
}

Test(sigv4, header_values_trimmed_and_folded)
{
	/* The canonical form trims a value and folds its runs of spaces: the
	 * signature is that of the GetObject example. */
	const struct sigv4_header h[] = {
		{ "HOST", "  examplebucket.s3.amazonaws.com " },
		{ "range", "bytes=0-9" },
		{ "X-Amz-Content-Sha256", EMPTY_SHA256 },
		{ "X-Amz-Date", "\t20130524T000000Z" },
	};
	struct sigv4_request r = { "GET",        "/test.txt",        "",          h,   4,
				   EMPTY_SHA256, "20130524T000000Z", "us-east-1", "s3" };
	sign_ok(&r,
		CRED "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, "
		     "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
}

Test(sigv4, refuses_malformed)
{
	char auth[1024];
	const struct sigv4_header dup[] = { { "host", "a" }, { "Host", "b" } };
	struct sigv4_request r = { "GET",       "/", "", dup, 2, EMPTY_SHA256, "20130524T000000Z",
				   "us-east-1", "s3" };
	cr_assert_not(sigv4_sign(&r, &aws_example_key, auth, sizeof(auth)));
	cr_assert_str_eq(auth, "");
	const struct sigv4_header bad[] = { { "ho st", "a" } };
	r.headers = bad;
	r.nheaders = 1;
	cr_assert_not(sigv4_sign(&r, &aws_example_key, auth, sizeof(auth)));
	r.headers = dup;
	r.nheaders = 1;
	r.amz_date = "2013-05-24";
	cr_assert_not(sigv4_sign(&r, &aws_example_key, auth, sizeof(auth)));
	r.amz_date = "20130524T000000Z";
	r.canonical_uri = "test.txt";
	cr_assert_not(sigv4_sign(&r, &aws_example_key, auth, sizeof(auth)));
	r.canonical_uri = "/";
	cr_assert_not(sigv4_sign(&r, &aws_example_key, auth, 20), "too small a buffer");
	cr_assert(sigv4_sign(&r, &aws_example_key, auth, sizeof(auth)));
}

Test(sigv4, canonical_query)
{
	char q[128];

	cr_assert(sigv4_canonical_query("", q, sizeof(q)));
	cr_assert_str_eq(q, "");
	cr_assert(sigv4_canonical_query("list-type=2&prefix=wh%2Ft%2F&delimiter=/", q, sizeof(q)));
	cr_assert_str_eq(q, "delimiter=%2F&list-type=2&prefix=wh%2Ft%2F");
	cr_assert(sigv4_canonical_query("a=2&a=1&b&&c=x%20y+z", q, sizeof(q)));
	cr_assert_str_eq(q, "a=1&a=2&b=&c=x%20y%2Bz");
	cr_assert(sigv4_canonical_query("uploadId=ab~c.d_e-f", q, sizeof(q)));
	cr_assert_str_eq(q, "uploadId=ab~c.d_e-f");
	cr_assert_not(sigv4_canonical_query("a=%zz", q, sizeof(q)));
	cr_assert_not(sigv4_canonical_query("a=%4", q, sizeof(q)));
	cr_assert_not(sigv4_canonical_query("abcdefghijkl=1", q, 8));
}

Test(sigv4, date)
{
	char d[SIGV4_DATE_LEN];

	cr_assert(sigv4_date(1369353600LL, d));
	cr_assert_str_eq(d, "20130524T000000Z");
}
