/* The request framing check (server/framing.c): header fields as
 * libmicrohttpd hands them over, and the verdict. Everything a proxy and
 * floe could read as two different body lengths is refused with a 400
 * naming the field; the ordinary shapes pass. */
#include <criterion/criterion.h>
#include <string.h>

#include "framing.h"

/* A request's header fields, "Name: value" each; NULL ends the list. The
 * first colon splits, as libmicrohttpd splits (it drops the whitespace
 * after the colon, so the values here have none). */
static bool verdict(bool http10, struct floe_error *err, const char *const *fields)
{
	struct framing f;

	framing_init(&f);
	for (size_t i = 0; fields[i] != NULL; i++) {
		const char *colon = strchr(fields[i], ':');
		cr_assert_not_null(colon, "field '%s' has no colon", fields[i]);
		const char *value = colon + 1;
		while (*value == ' ')
			value++;
		(void)framing_field(&f, fields[i], (size_t)(colon - fields[i]), value,
				    strlen(value));
	}
	floe_error_clear(err);
	return framing_verdict(&f, http10, err);
}

#define ADMITTED(...)                                                          \
	do {                                                                   \
		struct floe_error e_;                                          \
		const char *const f_[] = { __VA_ARGS__, NULL };                \
		cr_assert(verdict(false, &e_, f_), "refused: %s", e_.message); \
	} while (0)

#define REFUSED(fragment, ...)                                                                  \
	do {                                                                                    \
		struct floe_error e_;                                                           \
		const char *const f_[] = { __VA_ARGS__, NULL };                                 \
		cr_assert_not(verdict(false, &e_, f_), "admitted, expected '%s'", fragment);    \
		cr_assert_eq(e_.kind, FE_BAD_REQUEST);                                          \
		cr_assert_not_null(strstr(e_.message, fragment), "'%s' lacks '%s'", e_.message, \
				   fragment);                                                   \
	} while (0)

Test(framing, ordinary_requests_pass)
{
	ADMITTED("Host: x");
	ADMITTED("Host: x", "Content-Length: 0");
	ADMITTED("Host: x", "content-length: 1048576", "Content-Type: application/json");
	ADMITTED("Host: x", "Transfer-Encoding: chunked");
	ADMITTED("Host: x", "TRANSFER-ENCODING: Chunked");
	/* Fields that only start like a framing field's value, or merely
	 * contain its name, are not framing fields. */
	ADMITTED("Host: x", "Content-Type: application/json", "Content-Encoding: gzip",
		 "X-Content-Length: 7", "Accept-Encoding: gzip, chunked");
}

Test(framing, two_lengths_are_refused_equal_or_not)
{
	REFUSED("more than once", "Content-Length: 5", "Content-Length: 6");
	REFUSED("more than once", "Content-Length: 5", "content-length: 5");
	REFUSED("more than once", "Content-Length: 5", "Content-Length: -1");
}

Test(framing, a_length_is_one_decimal_number)
{
	REFUSED("not one decimal number", "Content-Length: 5, 5");
	REFUSED("not one decimal number", "Content-Length: -1");
	REFUSED("not one decimal number", "Content-Length: +5");
	REFUSED("not one decimal number", "Content-Length: 0x10");
	REFUSED("not one decimal number", "Content-Length: 5 ");
	REFUSED("not one decimal number", "Content-Length: ");
}

Test(framing, length_and_coding_together_are_refused)
{
	REFUSED("both Content-Length and Transfer-Encoding", "Content-Length: 5",
		"Transfer-Encoding: chunked");
	REFUSED("both Content-Length and Transfer-Encoding", "Transfer-Encoding: chunked",
		"Content-Length: 0");
}

Test(framing, only_chunked_is_a_coding)
{
	REFUSED("\"chunked, gzip\" is not supported", "Transfer-Encoding: chunked, gzip");
	REFUSED("\"gzip, chunked\" is not supported", "Transfer-Encoding: gzip, chunked");
	REFUSED("\"identity\" is not supported", "Transfer-Encoding: identity");
	REFUSED("\"xchunked\" is not supported", "Transfer-Encoding: xchunked");
	REFUSED("\"chunked \" is not supported", "Transfer-Encoding: chunked ");
	REFUSED("\"\" is not supported", "Transfer-Encoding: ");
	REFUSED("more than once", "Transfer-Encoding: chunked", "Transfer-Encoding: chunked");
	REFUSED("more than once", "Transfer-Encoding: chunked", "transfer-encoding: identity");
}

Test(framing, coding_in_http10_is_refused)
{
	struct floe_error err;
	const char *const chunked[] = { "Host: x", "Transfer-Encoding: chunked", NULL };
	const char *const length[] = { "Host: x", "Content-Length: 3", NULL };

	cr_assert_not(verdict(true, &err, chunked));
	cr_assert_not_null(strstr(err.message, "HTTP/1.0"), "%s", err.message);
	cr_assert(verdict(true, &err, length), "%s", err.message);
}

/* How libmicrohttpd hands over whitespace before the colon and folded
 * lines: in the name. */
static bool one_field(const char *name, const char *value, struct floe_error *err)
{
	struct framing f;

	framing_init(&f);
	(void)framing_field(&f, "Host", 4, "x", 1);
	(void)framing_field(&f, name, strlen(name), value, strlen(value));
	floe_error_clear(err);
	return framing_verdict(&f, false, err);
}

Test(framing, whitespace_and_folds_in_names_are_refused)
{
	struct floe_error err;
	/* "Transfer-Encoding : chunked", "Transfer-Encoding\t: chunked" */
	cr_assert_not(one_field("Transfer-Encoding ", "chunked", &err));
	cr_assert_not_null(strstr(err.message, "\"Transfer-Encoding \""), "%s", err.message);
	cr_assert_not(one_field("Transfer-Encoding\t", "chunked", &err));
	cr_assert_not_null(strstr(err.message, "\"Transfer-Encoding?\""), "%s", err.message);
	/* "Transfer-Encoding:\r\n chunked" */
	cr_assert_not(one_field("Transfer-Encodingchunked", "", &err));
	/* "Content-Length:\r\n 5" */
	cr_assert_not(one_field("Content-Length5", "", &err));
	/* "X: 1\r\n Transfer-Encoding: chunked" */
	cr_assert_not(one_field("XTransfer-Encoding: chunked", "1", &err));
	cr_assert_eq(err.kind, FE_BAD_REQUEST);
	cr_assert_not_null(strstr(err.message, "folded line"), "%s", err.message);
	/* ": x", and whitespace before any colon */
	cr_assert_not(one_field("", "x", &err));
	cr_assert_not(one_field("Host ", "x", &err));
	/* A fold into another field that brings no colon or space cannot be
	 * told from a name; it frames nothing. */
	cr_assert(one_field("X-Folded", "1", &err), "%s", err.message);
}

Test(framing, the_first_fault_is_named_and_walking_stops)
{
	struct framing f;
	struct floe_error err;

	framing_init(&f);
	cr_assert(framing_field(&f, "Content-Length", 14, "3", 1));
	cr_assert_not(framing_field(&f, "Transfer-Encoding", 17, "gzip", 4));
	cr_assert_not(framing_field(&f, "Content-Length", 14, "4", 1));
	cr_assert_not(framing_verdict(&f, false, &err));
	cr_assert_not_null(strstr(err.message, "\"gzip\""), "%s", err.message);
}

Test(framing, what_is_quoted_back_is_short_printable_ascii)
{
	struct framing f;
	struct floe_error err;
	char value[300];

	memset(value, 'a', sizeof(value));
	value[0] = '"';
	value[1] = (char)0xff;
	framing_init(&f);
	(void)framing_field(&f, "Transfer-Encoding", 17, value, sizeof(value));
	cr_assert_not(framing_verdict(&f, false, &err));
	cr_assert_not_null(strstr(err.message, "\"??aaa"), "%s", err.message);
	cr_assert_lt(strlen(err.message), 160, "%s", err.message);
}
