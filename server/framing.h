/*
 * framing.h - the request framing check (RFC 9112 §6.1, §6.3). A request
 * whose body length two HTTP parsers could read differently (a proxy in
 * front and floe) is refused with 400 before any handler runs, and its
 * connection closed, so bytes after it are never read as another request.
 * Pure: http.c hands in each header field as libmicrohttpd parsed it; no
 * allocation, so it can run on every request.
 */
#ifndef FLOE_FRAMING_H
#define FLOE_FRAMING_H

#include <stdbool.h>
#include <stddef.h>

#include "error.h"

enum framing_fault {
	FRAMING_OK = 0,
	FRAMING_FIELD_NAME,      /* whitespace or a colon in a name; a folded framing name */
	FRAMING_LENGTH_VALUE,    /* a Content-Length that is not one decimal number */
	FRAMING_LENGTH_REPEATED, /* two Content-Length fields, equal or not */
	FRAMING_CODING,          /* a Transfer-Encoding other than "chunked" */
	FRAMING_CODING_REPEATED, /* two Transfer-Encoding fields */
};

/* What the header fields seen so far say about the framing. */
struct framing {
	unsigned lengths;         /* Content-Length fields seen */
	unsigned codings;         /* Transfer-Encoding fields seen */
	enum framing_fault fault; /* the first fault seen */
	const char *what;         /* borrowed: the name or value at fault */
	size_t what_len;
};

/* Starts a check: no field seen. */
void framing_init(struct framing *f);

/* Takes one header field (name and value as the parser split them, not
 * NUL-terminated; borrowed until framing_verdict). Fields after the first
 * fault are not looked at. Returns false once a fault is known, so a
 * caller walking the fields may stop. */
bool framing_field(struct framing *f, const char *name, size_t name_len, const char *value,
		   size_t value_len);

/* True when the request can be read in one way only. Else false with err
 * set to FE_BAD_REQUEST naming the fault: the caller answers it and closes
 * the connection. http10: the request line said HTTP/1.0. */
bool framing_verdict(const struct framing *f, bool http10, struct floe_error *err) FLOE_WUR;

#endif
