/*
 * form.h - an application/x-www-form-urlencoded body (the OAuth2 token
 * endpoint's, RFC 6749 appendix B) read into its decoded parameters.
 * Strict where RFC 6749 is: a parameter given twice is refused (section
 * 3.2), and so is anything that would make two readings possible (a bad
 * escape, a NUL byte). Capping the body's size is the caller's business.
 */
#ifndef FLOE_FORM_H
#define FLOE_FORM_H

#include <stdbool.h>
#include <stddef.h>

#include "error.h"

#define FORM_MAX_PARAMS 32
#define FORM_MAX_FIELD 4096 /* bytes of a decoded name or value */

struct form_param {
	char *name;  /* owned, decoded, NUL-terminated, not empty */
	char *value; /* owned, decoded, NUL-terminated, may be empty */
};

struct form {
	struct form_param params[FORM_MAX_PARAMS]; /* in body order */
	size_t count;
};

/*
 * Reads body[0..len) (not NUL-terminated necessarily) into *form:
 * parameters separated by '&' (empty ones, as in "a=1&&b=2", skipped),
 * name and value by the first '=' (none: the value is empty), '+' a
 * space and %XX a byte (hex digits of either case). An empty body is
 * zero parameters. Refused, with *form empty and a sentence for the
 * client in errbuf ("form body: the name 'grant_type' is given twice
 * (parameters must not be repeated)"; a value is never quoted, since it
 * may be a secret, but named by its parameter): a '%' not
 * followed by two hex digits, a NUL byte (raw or %00), an empty name, a
 * name given twice, more than FORM_MAX_PARAMS parameters, a name or value
 * over FORM_MAX_FIELD bytes once decoded, and running out of memory.
 * Free a parsed form with form_free (a refused one needs none, but
 * form_free is harmless on it).
 */
bool form_parse(const char *body, size_t len, struct form *form, char *errbuf,
		size_t errlen) FLOE_WUR;

/* The decoded value of name (borrowed from form), or NULL when absent. */
const char *form_get(const struct form *form, const char *name);

/* Frees what form_parse put in form and empties it. */
void form_free(struct form *form);

#endif
