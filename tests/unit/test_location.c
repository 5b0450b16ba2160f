/* Canonical locations: every spelling of one directory is one string,
 * and nothing can climb above '/'. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "location.h"

static void assert_canonical(const char *in, const char *want)
{
	struct floe_error err = { 0 };
	char *got = location_canonical(in, &err);
	cr_assert_not_null(got, "%s: %s", in, err.message);
	cr_assert_str_eq(got, want, "%s", in);
	free(got);
}

static void assert_refused(const char *in)
{
	struct floe_error err = { 0 };
	char *got = location_canonical(in, &err);
	cr_assert_null(got, "%s was accepted as %s", in, got ? got : "");
	cr_assert_eq(err.kind, FE_BAD_REQUEST, "%s", in);
	cr_assert(strlen(err.message) > 0);
}

Test(location, aliases_are_one_place)
{
	const char *forms[] = { "file:///wh/ns/victim",
				"file:/wh/ns/victim",
				"file:/wh//ns/./victim/",
				"File:/wh/ns/victim",
				"/wh/ns/victim",
				"/wh/ns/./victim",
				"/wh/ns//victim",
				"/wh/ns/victim/../victim",
				"file:////wh/ns/victim/",
				"file://localhost/wh/ns/victim",
				"FILE:///wh/./ns/x/../victim/.",
				"file:///wh/ns/victim///",
				"/./wh/ns/victim" };
	for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++)
		assert_canonical(forms[i], "file:///wh/ns/victim");
}

Test(location, root_and_dots)
{
	assert_canonical("/", "file:///");
	assert_canonical("file:///", "file:///");
	assert_canonical("/a/..", "file:///");
	assert_canonical("/a/b/../../c", "file:///c");
	/* Names that merely contain dots are names. */
	assert_canonical("/a/.b/..c/...", "file:///a/.b/..c/...");
	/* No percent decoding: the escaped form is a file name. */
	assert_canonical("/a/%2E%2E/b", "file:///a/%2E%2E/b");
}

Test(location, refused)
{
	assert_refused("/..");
	assert_refused("/a/../..");
	assert_refused("file:///../etc");
	assert_refused("relative/path");
	assert_refused("file:relative");
	assert_refused("file://otherhost/a");
	assert_refused("gs://bucket/a");
	assert_refused("");
	assert_refused(NULL);
}

Test(location, too_long)
{
	char *big = malloc(LOCATION_MAX + 2);
	cr_assert_not_null(big);
	memset(big, 'a', LOCATION_MAX + 1);
	big[0] = '/';
	big[LOCATION_MAX + 1] = '\0';
	assert_refused(big);
	free(big);
}

Test(location, too_long_once_canonical)
{
	/* A bare path under the bound whose canonical form (with "file://")
	 * is over it is refused; one that fits is kept whole. */
	char *big = malloc(LOCATION_MAX);
	cr_assert_not_null(big);
	memset(big, 'a', LOCATION_MAX - 3);
	big[0] = '/';
	big[LOCATION_MAX - 3] = '\0';
	assert_refused(big);
	big[LOCATION_MAX - 7] = '\0';
	struct floe_error err;
	char *c = location_canonical(big, &err);
	cr_assert_not_null(c, "%s", err.message);
	cr_assert_eq(strlen(c), LOCATION_MAX);
	free(c);
	free(big);
}

Test(location, within_and_overlap)
{
	cr_assert(location_within("file:///wh/a", "file:///wh/a"));
	cr_assert(location_within("file:///wh/a/b", "file:///wh/a"));
	cr_assert_not(location_within("file:///wh/ab", "file:///wh/a"));
	cr_assert_not(location_within("file:///wh", "file:///wh/a"));
	cr_assert(location_within("file:///wh", "file:///"));
	cr_assert(location_overlaps("file:///wh", "file:///wh/a/b"));
	cr_assert(location_overlaps("file:///wh/a/b", "file:///wh"));
	cr_assert_not(location_overlaps("file:///wh/a", "file:///wh/b"));
	cr_assert_str_eq(location_path("file:///wh/a"), "/wh/a");
}

Test(location, same_place)
{
	cr_assert(location_same("file:/wh/a", "file:///wh/a"));
	cr_assert(location_same("file:/wh/a/", "/wh/a"));
	cr_assert(location_same("file://localhost/wh/a", "FILE:/wh/./a"));
	cr_assert_not(location_same("file:/wh/a", "file:///wh/a/b"));
	cr_assert_not(location_same("file:/wh/a", "file:/wh/b"));
	cr_assert(location_same("s3://bkt/wh/a", "S3://bkt/wh//a/"));
	cr_assert_not(location_same("s3://bkt/wh/a", "file:///bkt/wh/a"));
	cr_assert_not(location_same("file:relative", "file:relative"));
}

Test(location, object_storage)
{
	assert_canonical("s3://bkt/wh/ns/t", "s3://bkt/wh/ns/t");
	assert_canonical("S3://bkt/wh//ns/./t/", "s3://bkt/wh/ns/t");
	assert_canonical("s3://bkt/wh/x/../t", "s3://bkt/wh/t");
	assert_canonical("s3://bkt", "s3://bkt");
	assert_canonical("s3://bkt/", "s3://bkt");
	assert_canonical("s3://my.bucket-1/a", "s3://my.bucket-1/a");
	assert_refused("s3://bkt/..");
	assert_refused("s3://bkt/a/../../b");
	assert_refused("s3://Bkt/a");
	assert_refused("s3://b/a");
	assert_refused("s3:///a");
	assert_refused("s3://bk_t/a");
	assert_refused("s3://-bkt/a");
	assert_refused("s3://bkt-/a");
	assert_refused("s3://b..kt/a");
	assert_refused("s3:/bkt/a");
	assert_refused("s3a://bkt/a");
	/* The bucket is a root of its own: nothing crosses buckets or
	 * schemes. */
	cr_assert(location_within("s3://bkt/wh/a", "s3://bkt/wh"));
	cr_assert(location_within("s3://bkt/wh", "s3://bkt"));
	cr_assert_not(location_within("s3://bkt/wh-x", "s3://bkt/wh"));
	cr_assert_not(location_within("s3://bktx/wh", "s3://bkt"));
	cr_assert_not(location_within("s3://bkt/wh", "file:///"));
	cr_assert_not(location_within("file:///bkt/wh", "s3://bkt"));
	cr_assert(location_is_s3("s3://bkt/wh"));
	cr_assert_not(location_is_s3("file:///s3"));
	cr_assert_str_eq(location_path("s3://bkt/wh"), "s3://bkt/wh");
}
