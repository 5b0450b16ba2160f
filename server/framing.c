/*
 * framing.c - the request framing check (framing.h). libmicrohttpd 0.9.75
 * frames a body by the first Transfer-Encoding field, else the first
 * Content-Length, and has no strict mode, so everything another parser
 * could read differently is refused here. Other fields are looked at only
 * for a space or a fold that could hide a framing field; this is not a
 * general header validator.
 */
#include "framing.h"

#include <strings.h>

#define LENGTH_NAME "Content-Length"
#define CODING_NAME "Transfer-Encoding"
#define NAME_LEN(n) (sizeof(n) - 1)
/* The most bytes of a name or value quoted back in a message. */
#define QUOTE_MAX 64

void framing_init(struct framing *f)
{
	f->lengths = 0;
	f->codings = 0;
	f->fault = FRAMING_OK;
	f->what = NULL;
	f->what_len = 0;
}

/* Whether text (len bytes) starts with the prefix, ignoring case. */
static bool starts_with(const char *text, size_t len, const char *prefix, size_t prefix_len)
{
	return len >= prefix_len && strncasecmp(text, prefix, prefix_len) == 0;
}

/*
 * libmicrohttpd ends a name at the first colon and keeps whitespace before
 * it ("Transfer-Encoding : chunked" is a field it ignores), and appends a
 * folded line (one starting with a space) to the name of the field above
 * it: "X: 1\r\n Transfer-Encoding: chunked" arrives as the name
 * "XTransfer-Encoding: chunked". A proxy that drops the space, or reads
 * the folded line as a field of its own, frames by a field floe never
 * sees: refuse both shapes (RFC 9112 §5.1, §5.2).
 */
static bool name_valid(const char *name, size_t len)
{
	if (len == 0)
		return false;
	for (size_t i = 0; i < len; i++) {
		if (name[i] == ' ' || name[i] == '\t' || name[i] == ':')
			return false;
	}
	return true;
}

/* 1*DIGIT (RFC 9110 §8.6): no sign, no list, no space. */
static bool length_valid(const char *value, size_t len)
{
	if (len == 0)
		return false;
	for (size_t i = 0; i < len; i++) {
		if (value[i] < '0' || value[i] > '9')
			return false;
	}
	return true;
}

static bool fault(struct framing *f, enum framing_fault kind, const char *what, size_t len)
{
	f->fault = kind;
	f->what = what;
	f->what_len = len;
	return false;
}

bool framing_field(struct framing *f, const char *name, size_t name_len, const char *value,
		   size_t value_len)
{
	if (f->fault != FRAMING_OK)
		return false;
	if (!name_valid(name, name_len))
		return fault(f, FRAMING_FIELD_NAME, name, name_len);
	/* Most fields are neither framing field: their first letter tells. */
	unsigned char first = (unsigned char)name[0] | 0x20;
	if (first != 'c' && first != 't')
		return true;
	if (starts_with(name, name_len, LENGTH_NAME, NAME_LEN(LENGTH_NAME))) {
		/* "Content-Length:\r\n 5" arrives as "Content-Length5". */
		if (name_len != NAME_LEN(LENGTH_NAME))
			return fault(f, FRAMING_FIELD_NAME, name, name_len);
		/* Repeated fields are refused even when equal (RFC 9110 §8.6
		 * allows it): a lone "5, 5" is refused by libmicrohttpd
		 * already, and one rule for both shapes is easier to trust. */
		if (++f->lengths > 1)
			return fault(f, FRAMING_LENGTH_REPEATED, value, value_len);
		if (!length_valid(value, value_len))
			return fault(f, FRAMING_LENGTH_VALUE, value, value_len);
		return true;
	}
	if (starts_with(name, name_len, CODING_NAME, NAME_LEN(CODING_NAME))) {
		/* "Transfer-Encoding:\r\n chunked" arrives as
		 * "Transfer-Encodingchunked". */
		if (name_len != NAME_LEN(CODING_NAME))
			return fault(f, FRAMING_FIELD_NAME, name, name_len);
		/* libmicrohttpd decodes exactly "chunked" (any case) and reads
		 * any other coding to the end of the connection. */
		if (++f->codings > 1)
			return fault(f, FRAMING_CODING_REPEATED, value, value_len);
		if (value_len != NAME_LEN("chunked") ||
		    strncasecmp(value, "chunked", NAME_LEN("chunked")) != 0)
			return fault(f, FRAMING_CODING, value, value_len);
	}
	return true;
}

/* Copies what a client sent into out for a message: at most QUOTE_MAX
 * bytes, anything but printable ASCII (and the quote) as '?'. */
static void quote(char out[QUOTE_MAX + 1], const char *text, size_t len)
{
	if (len > QUOTE_MAX)
		len = QUOTE_MAX;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)text[i];
		if (c >= 0x20 && c < 0x7f && c != '"')
			out[i] = text[i];
		else
			out[i] = '?';
	}
	out[len] = '\0';
}

bool framing_verdict(const struct framing *f, bool http10, struct floe_error *err)
{
	char shown[QUOTE_MAX + 1];

	quote(shown, f->what != NULL ? f->what : "", f->what != NULL ? f->what_len : 0);
	switch (f->fault) {
	case FRAMING_OK:
		break;
	case FRAMING_FIELD_NAME:
		return floe_err(
			err, FE_BAD_REQUEST,
			"malformed header field name \"%s\": whitespace before the colon or a folded line",
			shown);
	case FRAMING_LENGTH_VALUE:
		return floe_err(err, FE_BAD_REQUEST,
				"Content-Length \"%s\" is not one decimal number", shown);
	case FRAMING_LENGTH_REPEATED:
		return floe_err(err, FE_BAD_REQUEST,
				"Content-Length is given more than once; send it once");
	case FRAMING_CODING:
		return floe_err(err, FE_BAD_REQUEST,
				"Transfer-Encoding \"%s\" is not supported; only \"chunked\" is",
				shown);
	case FRAMING_CODING_REPEATED:
		return floe_err(err, FE_BAD_REQUEST,
				"Transfer-Encoding is given more than once; send it once");
	}
	if (f->codings > 0 && f->lengths > 0)
		return floe_err(
			err, FE_BAD_REQUEST,
			"a request may not have both Content-Length and Transfer-Encoding; send one");
	if (f->codings > 0 && http10)
		return floe_err(err, FE_BAD_REQUEST,
				"Transfer-Encoding is not allowed in an HTTP/1.0 request");
	return true;
}
