/*
 * ident.h - namespace and table identifiers: decoding them from URL path
 * segments and query values, validating them, and encoding them back.
 *
 * A namespace is 1..IDENT_MAX_LEVELS levels; each level (and each table
 * name) is 1..IDENT_MAX_NAME_BYTES bytes of UTF-8 with no control
 * characters. On the wire the levels are joined by the unit separator 0x1F,
 * percent-encoded as %1F.
 */
#ifndef FLOE_IDENT_H
#define FLOE_IDENT_H

#include <stdbool.h>
#include <stddef.h>
#include <jansson.h>

#include "error.h"

#define IDENT_MAX_LEVELS 16
#define IDENT_MAX_NAME_BYTES 255
#define IDENT_SEPARATOR '\x1f'

struct ns_ident {
	size_t nlevels;
	char *levels[IDENT_MAX_LEVELS]; /* owned, NUL-terminated */
};

/* True when s[0..len) is well-formed UTF-8 (no overlongs, no surrogates). */
bool utf8_valid(const char *s, size_t len);

/* Percent-decodes in[0..len). With plus_is_space, '+' decodes to ' '.
 * On success *out is a new NUL-terminated string (caller frees) and
 * *outlen its length, which may contain NUL bytes from %00.
 * Fails with FE_BAD_REQUEST on a malformed escape. */
bool url_decode(const char *in, size_t len, bool plus_is_space, char **out, size_t *outlen,
		struct floe_error *err) FLOE_WUR;

/* Checks one level or table name; what names it in the message (e.g.
 * "namespace level"). Fails with FE_BAD_REQUEST. */
bool ident_name_check(const char *name, size_t len, const char *what,
		      struct floe_error *err) FLOE_WUR;

/* How '+' reads where a name is percent-encoded: in a path segment it is
 * itself (RFC 3986; iceberg-go and iceberg-rust send it so, and Java's
 * client sends %20 for a space), in a query value it is a space (HTML
 * form encoding, which Java's client uses there). */
enum ident_plus { IDENT_PLUS_LITERAL, IDENT_PLUS_SPACE };

/* Parses a namespace from a raw (still percent-encoded) path segment
 * (IDENT_PLUS_LITERAL) or query value (IDENT_PLUS_SPACE). Levels are split
 * on 0x1F after decoding. On failure out is left empty. */
bool ident_ns_parse(const char *raw, size_t len, enum ident_plus plus, struct ns_ident *out,
		    struct floe_error *err) FLOE_WUR;

/* Splits a namespace already decoded (levels joined by 0x1F, as
 * ident_ns_join gives them) and checks each level. On failure out is left
 * empty. */
bool ident_ns_split(const char *text, size_t len, struct ns_ident *out,
		    struct floe_error *err) FLOE_WUR;

/* Parses a namespace from a JSON array of strings; field names the JSON
 * field in messages. */
bool ident_ns_from_json(const json_t *array, const char *field, struct ns_ident *out,
			struct floe_error *err) FLOE_WUR;

/* The levels as a new JSON array of strings (NULL when out of memory). */
json_t *ident_ns_to_json(const struct ns_ident *ns);

/* The levels joined with 0x1F, as a new string (caller frees). */
char *ident_ns_join(const struct ns_ident *ns);

/* The levels joined with '.', for log lines and messages (caller frees). */
char *ident_ns_display(const struct ns_ident *ns);

/* Copies src into dst (dst must be empty). Returns false when out of memory. */
bool ident_ns_copy(struct ns_ident *dst, const struct ns_ident *src) FLOE_WUR;

/* Frees the levels and empties ns. Safe on an empty ns. */
void ident_ns_clear(struct ns_ident *ns);

#endif
