/*
 * ident.c - identifier decoding and validation. Everything a client puts
 * in a path or a body passes through here before it reaches the store.
 */
#include "ident.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool utf8_valid(const char *str, size_t len)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t i = 0;

	while (i < len) {
		unsigned char c = s[i];
		uint32_t cp;
		size_t need;

		if (c < 0x80) {
			i++;
			continue;
		} else if (c >= 0xC2 && c <= 0xDF) {
			need = 1;
			cp = c & 0x1F;
		} else if (c >= 0xE0 && c <= 0xEF) {
			need = 2;
			cp = c & 0x0F;
		} else if (c >= 0xF0 && c <= 0xF4) {
			need = 3;
			cp = c & 0x07;
		} else {
			return false;
		}
		if (len - i - 1 < need)
			return false;
		for (size_t k = 1; k <= need; k++) {
			if ((s[i + k] & 0xC0) != 0x80)
				return false;
			cp = (cp << 6) | (s[i + k] & 0x3F);
		}
		if ((need == 2 && cp < 0x800) || (need == 3 && cp < 0x10000) || cp > 0x10FFFF ||
		    (cp >= 0xD800 && cp <= 0xDFFF))
			return false;
		i += need + 1;
	}
	return true;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

bool url_decode(const char *in, size_t len, bool plus_is_space, char **out, size_t *outlen,
		struct floe_error *err)
{
	char *buf = malloc(len + 1);
	size_t n = 0;

	if (buf == NULL)
		return floe_err(err, FE_INTERNAL, "out of memory");
	for (size_t i = 0; i < len; i++) {
		if (in[i] == '%') {
			if (len - i < 3 || hexval(in[i + 1]) < 0 || hexval(in[i + 2]) < 0) {
				free(buf);
				return floe_err(err, FE_BAD_REQUEST,
						"malformed percent-escape in URL");
			}
			buf[n++] = (char)(hexval(in[i + 1]) * 16 + hexval(in[i + 2]));
			i += 2;
		} else if (in[i] == '+' && plus_is_space) {
			buf[n++] = ' ';
		} else {
			buf[n++] = in[i];
		}
	}
	buf[n] = '\0';
	*out = buf;
	*outlen = n;
	return true;
}

bool ident_name_check(const char *name, size_t len, const char *what, struct floe_error *err)
{
	if (len == 0)
		return floe_err(err, FE_BAD_REQUEST, "The %s must not be empty", what);
	if (len > IDENT_MAX_NAME_BYTES)
		return floe_err(err, FE_BAD_REQUEST,
				"The %s is %zu bytes long; the limit is %d bytes", what, len,
				IDENT_MAX_NAME_BYTES);
	if (!utf8_valid(name, len))
		return floe_err(err, FE_BAD_REQUEST, "The %s is not valid UTF-8", what);
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)name[i];
		if (c < 0x20 || c == 0x7F)
			return floe_err(err, FE_BAD_REQUEST,
					"The %s contains the control character 0x%02X", what, c);
	}
	return true;
}

static bool ns_add_level(struct ns_ident *ns, const char *s, size_t len, struct floe_error *err)
{
	if (ns->nlevels >= IDENT_MAX_LEVELS)
		return floe_err(err, FE_BAD_REQUEST, "namespace has more than %d levels",
				IDENT_MAX_LEVELS);
	if (!ident_name_check(s, len, "namespace level", err))
		return false;
	char *copy = strndup(s, len);
	if (copy == NULL)
		return floe_err(err, FE_INTERNAL, "out of memory");
	ns->levels[ns->nlevels++] = copy;
	return true;
}

bool ident_ns_split(const char *text, size_t len, struct ns_ident *out, struct floe_error *err)
{
	size_t start = 0;

	out->nlevels = 0;
	if (len == 0)
		return floe_err(err, FE_BAD_REQUEST, "namespace must not be empty");
	for (size_t i = 0; i <= len; i++) {
		if (i == len || text[i] == IDENT_SEPARATOR) {
			if (!ns_add_level(out, text + start, i - start, err)) {
				ident_ns_clear(out);
				return false;
			}
			start = i + 1;
		}
	}
	return true;
}

bool ident_ns_parse(const char *raw, size_t len, enum ident_plus plus, struct ns_ident *out,
		    struct floe_error *err)
{
	char *dec = NULL;
	size_t declen = 0;

	out->nlevels = 0;
	if (len == 0)
		return floe_err(err, FE_BAD_REQUEST, "namespace must not be empty");
	if (!url_decode(raw, len, plus == IDENT_PLUS_SPACE, &dec, &declen, err))
		return false;
	bool ok = ident_ns_split(dec, declen, out, err);
	free(dec);
	return ok;
}

bool ident_ns_from_json(const json_t *array, const char *field, struct ns_ident *out,
			struct floe_error *err)
{
	size_t i;
	json_t *level;

	out->nlevels = 0;
	if (array == NULL)
		return floe_err(err, FE_BAD_REQUEST, "missing required field '%s'", field);
	if (!json_is_array(array))
		return floe_err(err, FE_BAD_REQUEST, "field '%s' must be an array of strings",
				field);
	if (json_array_size(array) == 0)
		return floe_err(err, FE_BAD_REQUEST, "field '%s' must not be empty", field);
	json_array_foreach(array, i, level) {
		if (!json_is_string(level)) {
			ident_ns_clear(out);
			return floe_err(err, FE_BAD_REQUEST,
					"field '%s' must be an array of strings", field);
		}
		if (!ns_add_level(out, json_string_value(level), json_string_length(level), err)) {
			ident_ns_clear(out);
			return false;
		}
	}
	return true;
}

json_t *ident_ns_to_json(const struct ns_ident *ns)
{
	json_t *arr = json_array();

	if (arr == NULL)
		return NULL;
	for (size_t i = 0; i < ns->nlevels; i++) {
		if (json_array_append_new(arr, json_string(ns->levels[i])) != 0) {
			json_decref(arr);
			return NULL;
		}
	}
	return arr;
}

static char *ns_join_with(const struct ns_ident *ns, char sep)
{
	size_t total = 1;
	char *s;
	size_t n = 0;

	for (size_t i = 0; i < ns->nlevels; i++)
		total += strlen(ns->levels[i]) + 1;
	s = malloc(total);
	if (s == NULL)
		return NULL;
	for (size_t i = 0; i < ns->nlevels; i++) {
		size_t l = strlen(ns->levels[i]);
		if (i > 0)
			s[n++] = sep;
		memcpy(s + n, ns->levels[i], l);
		n += l;
	}
	s[n] = '\0';
	return s;
}

char *ident_ns_join(const struct ns_ident *ns)
{
	return ns_join_with(ns, IDENT_SEPARATOR);
}

char *ident_ns_display(const struct ns_ident *ns)
{
	return ns_join_with(ns, '.');
}

bool ident_ns_copy(struct ns_ident *dst, const struct ns_ident *src)
{
	dst->nlevels = 0;
	for (size_t i = 0; i < src->nlevels; i++) {
		dst->levels[i] = strdup(src->levels[i]);
		if (dst->levels[i] == NULL) {
			ident_ns_clear(dst);
			return false;
		}
		dst->nlevels = i + 1;
	}
	return true;
}

void ident_ns_clear(struct ns_ident *ns)
{
	for (size_t i = 0; i < ns->nlevels; i++) {
		free(ns->levels[i]);
		ns->levels[i] = NULL;
	}
	ns->nlevels = 0;
}
