/* Form bodies (application/x-www-form-urlencoded), as the token endpoint
 * reads them: '+' and %XX decoded, empty parameters skipped, and every
 * refusal (a bad escape, a NUL byte, an empty or repeated name, too many
 * parameters, an oversize name or value) a clear sentence. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "form.h"

static struct form form;
static char errbuf[256];

static void parse_ok(const char *body)
{
	bool ok = form_parse(body, strlen(body), &form, errbuf, sizeof(errbuf));

	cr_assert(ok, "'%s': %s", body, errbuf);
}

static void parse_refused(const char *body, size_t len, const char *fragment)
{
	bool ok = form_parse(body, len, &form, errbuf, sizeof(errbuf));

	cr_assert_not(ok, "'%.*s' was accepted", (int)len, body);
	cr_assert_eq(form.count, 0);
	cr_assert_not_null(strstr(errbuf, fragment), "'%s' lacks '%s'", errbuf, fragment);
	form_free(&form);
}

static void done(void)
{
	form_free(&form);
}

TestSuite(form, .fini = done);

Test(form, a_token_request)
{
	parse_ok(
		"grant_type=client_credentials&client_id=alice&client_secret=s3cr%2Bt%21&scope=catalog+role%3Awriter");
	cr_assert_eq(form.count, 4);
	cr_assert_str_eq(form_get(&form, "grant_type"), "client_credentials");
	cr_assert_str_eq(form_get(&form, "client_id"), "alice");
	cr_assert_str_eq(form_get(&form, "client_secret"), "s3cr+t!");
	cr_assert_str_eq(form_get(&form, "scope"), "catalog role:writer");
	cr_assert_null(form_get(&form, "actor_token"));
	cr_assert_null(form_get(&form, "Grant_type"));
	cr_assert_str_eq(form.params[0].name, "grant_type");
	cr_assert_str_eq(form.params[3].name, "scope");
}

Test(form, an_empty_body_is_no_parameter)
{
	parse_ok("");
	cr_assert_eq(form.count, 0);
	cr_assert_null(form_get(&form, "grant_type"));
	form_free(&form);
	parse_ok("&&&");
	cr_assert_eq(form.count, 0);
}

Test(form, decoding)
{
	parse_ok("a=%41%62%2b%2B%20+%25&b%5B%5D=x&c=&d&e==f&%C3%A9=%E2%82%AC&");
	cr_assert_eq(form.count, 6);
	cr_assert_str_eq(form_get(&form, "a"), "Ab++  %");
	cr_assert_str_eq(form_get(&form, "b[]"), "x");
	cr_assert_str_eq(form_get(&form, "c"), "");
	cr_assert_str_eq(form_get(&form, "d"), "");
	cr_assert_str_eq(form_get(&form, "e"), "=f");
	cr_assert_str_eq(form_get(&form, "\xC3\xA9"), "\xE2\x82\xAC");
}

Test(form, empty_parameters_are_skipped)
{
	parse_ok("&a=1&&b=2&");
	cr_assert_eq(form.count, 2);
	cr_assert_str_eq(form_get(&form, "a"), "1");
	cr_assert_str_eq(form_get(&form, "b"), "2");
}

Test(form, the_body_need_not_be_terminated)
{
	const char body[] = "a=1&b=2GARBAGE";

	cr_assert(form_parse(body, 7, &form, errbuf, sizeof(errbuf)), "%s", errbuf);
	cr_assert_str_eq(form_get(&form, "b"), "2");
}

Test(form, a_bad_escape_is_refused)
{
	const char *bodies[] = { "a=%", "a=%4", "a=%4g", "a=%g4", "a%=1", "a=1&b=%%41", "a=%+1" };

	for (size_t i = 0; i < sizeof(bodies) / sizeof(bodies[0]); i++)
		parse_refused(bodies[i], strlen(bodies[i]), "malformed percent-escape");
	parse_refused("grant_type=%zz", 14, "the value of 'grant_type' has");
	parse_refused("\x01=%zz", 5, "the value of parameter 1 has");
	/* A value is never quoted: it may be a secret. */
	parse_refused("client_secret=s3cret%", 21, "the value of 'client_secret' has");
	cr_assert_null(strstr(errbuf, "s3cret"));
	parse_refused("a%zz=1", 6, "the name 'a%zz' has");
}

Test(form, a_nul_byte_is_refused)
{
	parse_refused("a=x%00y", 7, "the value of 'a' contains a NUL byte");
	parse_refused("a%00b=1", 7, "the name 'a%00b' contains a NUL byte");
	parse_refused("a=x\0y", 5, "the value of 'a' contains a NUL byte");
	parse_refused("a\0=1", 4, "the name of parameter 1 contains a NUL byte");
}

Test(form, a_parameter_given_twice_is_refused)
{
	parse_refused("client_id=a&client_id=a", 23,
		      "the name 'client_id' is given twice (parameters must not be repeated)");
	parse_refused("a=1&b=2&a", 9, "given twice");
	/* Twice once decoded. */
	parse_refused("scope=x&sc%6Fpe=y", 17, "the name 'scope' is given twice");
	parse_refused("a+b=1&a%20b=2", 13, "given twice");
}

Test(form, an_empty_name_is_refused)
{
	parse_refused("=x", 2, "parameter 1 has an empty name");
	parse_refused("a=1&=", 5, "parameter 2 has an empty name");
}

Test(form, more_than_32_parameters_are_refused)
{
	char body[512] = "";
	size_t n = 0;

	for (int i = 0; i < FORM_MAX_PARAMS; i++)
		n += (size_t)snprintf(body + n, sizeof(body) - n, "%sp%d=v", i > 0 ? "&" : "", i);
	parse_ok(body);
	cr_assert_eq(form.count, FORM_MAX_PARAMS);
	cr_assert_str_eq(form_get(&form, "p31"), "v");
	form_free(&form);
	(void)snprintf(body + n, sizeof(body) - n, "&p32=v");
	parse_refused(body, strlen(body), "more than 32 parameters");
	/* Empty ones do not count. */
	body[n] = '\0';
	(void)snprintf(body + n, sizeof(body) - n, "&&&&");
	parse_ok(body);
}

Test(form, a_name_or_value_over_4_kib_is_refused)
{
	size_t cap = 3 * FORM_MAX_FIELD + 64;
	char *body = malloc(cap);

	cr_assert_not_null(body);
	/* Exactly 4 KiB, then one byte more. */
	memcpy(body, "v=", 2);
	memset(body + 2, 'x', FORM_MAX_FIELD);
	body[2 + FORM_MAX_FIELD] = '\0';
	parse_ok(body);
	cr_assert_eq(strlen(form_get(&form, "v")), FORM_MAX_FIELD);
	form_free(&form);
	body[2 + FORM_MAX_FIELD] = 'x';
	body[3 + FORM_MAX_FIELD] = '\0';
	parse_refused(body, strlen(body),
		      "the value of 'v' is 4097 bytes long; the limit is 4096 bytes");
	/* The decoded length counts: 4 KiB written as escapes is 4 KiB. */
	memcpy(body, "v=", 2);
	for (size_t i = 0; i < FORM_MAX_FIELD; i++)
		memcpy(body + 2 + 3 * i, "%41", 3);
	body[2 + 3 * FORM_MAX_FIELD] = '\0';
	parse_ok(body);
	form_free(&form);
	memset(body, 'n', FORM_MAX_FIELD + 1);
	memcpy(body + FORM_MAX_FIELD + 1, "=1", 3);
	parse_refused(body, strlen(body), "the name of parameter 1 is 4097 bytes long");
	free(body);
}

Test(form, form_free_is_harmless_twice)
{
	parse_ok("a=1");
	form_free(&form);
	form_free(&form);
	cr_assert_eq(form.count, 0);
}
