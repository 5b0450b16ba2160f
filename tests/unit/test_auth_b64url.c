/* base64url as JWS writes it: RFC 4648's test vectors in the URL
 * alphabet, and a decoder that accepts one spelling of each byte string
 * only (no padding, whitespace, other alphabet or stray bits). */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "b64url.h"

Test(auth_b64url, rfc4648_vectors)
{
	static const struct {
		const char *raw;
		const char *enc;
	} cases[] = {
		{ "", "" },
		{ "f", "Zg" },
		{ "fo", "Zm8" },
		{ "foo", "Zm9v" },
		{ "foob", "Zm9vYg" },
		{ "fooba", "Zm9vYmE" },
		{ "foobar", "Zm9vYmFy" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t n = strlen(cases[i].raw);
		char *enc = b64url_encode((const unsigned char *)cases[i].raw, n);
		cr_assert_not_null(enc);
		cr_assert_str_eq(enc, cases[i].enc);
		cr_assert_eq(b64url_encoded_len(n), strlen(cases[i].enc));
		free(enc);

		size_t len = 0;
		unsigned char *dec = b64url_decode(cases[i].enc, strlen(cases[i].enc), &len);
		cr_assert_not_null(dec, "%s", cases[i].enc);
		cr_assert_eq(len, n);
		cr_assert_eq(memcmp(dec, cases[i].raw, n), 0);
		cr_assert_eq(dec[len], '\0', "decoded text is NUL-terminated");
		free(dec);
	}
}

Test(auth_b64url, url_alphabet_not_the_standard_one)
{
	static const unsigned char raw[] = { 0xfb, 0xff, 0xbf };
	char *enc = b64url_encode(raw, sizeof(raw));
	size_t len = 0;

	cr_assert_str_eq(enc, "-_-_");
	free(enc);
	cr_assert_null(b64url_decode("+/+/", 4, &len),
		       "the standard alphabet's + and / are refused");
}

Test(auth_b64url, refuses_every_non_canonical_spelling)
{
	static const char *const bad[] = {
		"Zg==",        /* padding */
		"Zg=",   "Z",  /* 4k+1 characters */
		"Zm9vY", "Zh", /* 'h' leaves a bit set after the last byte */
		"Zm 9v", "Zm9v\n", " Zm9v", "Zm.v", "Zm9v*",
	};
	size_t len = 0;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_assert_null(b64url_decode(bad[i], strlen(bad[i]), &len), "'%s' was accepted",
			       bad[i]);
	}
	/* The bits after the last byte: "Zg" is "f", "Zh".."Zv" are not. */
	for (char c = 'h'; c <= 'v'; c++) {
		char s[3] = { 'Z', c, '\0' };
		cr_assert_null(b64url_decode(s, 2, &len), "'%s' was accepted", s);
	}
	/* An embedded NUL ends nothing: the length says what is read. */
	cr_assert_null(b64url_decode("Zm\0v", 4, &len));
}

Test(auth_b64url, round_trips_every_length)
{
	unsigned char raw[100];

	for (size_t i = 0; i < sizeof(raw); i++)
		raw[i] = (unsigned char)(i * 37 + 11);
	for (size_t n = 0; n <= sizeof(raw); n++) {
		char *enc = b64url_encode(raw, n);
		size_t len = 0;
		cr_assert_not_null(enc);
		cr_assert_eq(strlen(enc), b64url_encoded_len(n));
		cr_assert_leq(n, b64url_decoded_max(strlen(enc)));
		unsigned char *dec = b64url_decode(enc, strlen(enc), &len);
		cr_assert_not_null(dec, "length %zu: %s", n, enc);
		cr_assert_eq(len, n);
		cr_assert_eq(memcmp(dec, raw, n), 0);
		free(dec);
		free(enc);
	}
}
