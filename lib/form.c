/*
 * form.c - application/x-www-form-urlencoded bodies: split on '&' and
 * the first '=', each half decoded by url_decode (ident.h) and checked.
 */
#include "form.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ident.h"

/* True when text[0..len) can be quoted in a message as it is. */
static bool form_quotable(const char *text, size_t len)
{
	if (len == 0 || len > 64)
		return false;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)text[i];
		if (c < 0x20 || c >= 0x7F || c == '\'')
			return false;
	}
	return true;
}

/* What a refused part is called in messages. A name is quoted when it
 * can be; a value never is (it may be a secret): it is named by its
 * parameter's name (decoded, NULL before it is), else by its place. */
static void form_label(char *out, size_t outlen, const char *raw_name, size_t raw_len,
		       const char *name, size_t index)
{
	if (name == NULL && form_quotable(raw_name, raw_len))
		(void)snprintf(out, outlen, "name '%.*s'", (int)raw_len, raw_name);
	else if (name == NULL)
		(void)snprintf(out, outlen, "name of parameter %zu", index + 1);
	else if (form_quotable(name, strlen(name)))
		(void)snprintf(out, outlen, "value of '%s'", name);
	else
		(void)snprintf(out, outlen, "value of parameter %zu", index + 1);
}

/* Decodes raw[0..len) (the name when name is NULL, else name's value)
 * into *out; false with the reason in errbuf. */
static bool form_decode(const char *raw, size_t len, const char *raw_name, size_t raw_name_len,
			const char *name, size_t index, char **out, char *errbuf, size_t errlen)
{
	struct floe_error err;
	char label[96];
	size_t n = 0;

	*out = NULL;
	form_label(label, sizeof(label), raw_name, raw_name_len, name, index);
	if (!url_decode(raw, len, true, out, &n, &err)) {
		if (err.kind == FE_BAD_REQUEST)
			(void)snprintf(
				errbuf, errlen,
				"form body: the %s has a malformed percent-escape ('%%' must be followed by two hex digits)",
				label);
		else
			(void)snprintf(errbuf, errlen, "form body: out of memory");
		return false;
	}
	if (n > FORM_MAX_FIELD) {
		(void)snprintf(errbuf, errlen,
			       "form body: the %s is %zu bytes long; the limit is %d bytes", label,
			       n, FORM_MAX_FIELD);
		goto fail;
	}
	if (memchr(*out, '\0', n) != NULL) {
		(void)snprintf(errbuf, errlen, "form body: the %s contains a NUL byte", label);
		goto fail;
	}
	return true;
fail:
	free(*out);
	*out = NULL;
	return false;
}

bool form_parse(const char *body, size_t len, struct form *form, char *errbuf, size_t errlen)
{
	size_t pos = 0;

	memset(form, 0, sizeof(*form));
	if (errlen > 0)
		errbuf[0] = '\0';
	while (pos < len) {
		const char *seg = body + pos;
		const char *amp = memchr(seg, '&', len - pos);
		size_t seglen = amp != NULL ? (size_t)(amp - seg) : len - pos;
		pos += seglen + 1;
		if (seglen == 0)
			continue;
		if (form->count == FORM_MAX_PARAMS) {
			(void)snprintf(errbuf, errlen, "form body: more than %d parameters",
				       FORM_MAX_PARAMS);
			goto fail;
		}
		const char *eq = memchr(seg, '=', seglen);
		size_t nlen = eq != NULL ? (size_t)(eq - seg) : seglen;
		const char *val = eq != NULL ? eq + 1 : seg + seglen;
		size_t vlen = eq != NULL ? seglen - nlen - 1 : 0;
		struct form_param *p = &form->params[form->count];
		if (!form_decode(seg, nlen, seg, nlen, NULL, form->count, &p->name, errbuf, errlen))
			goto fail;
		if (!form_decode(val, vlen, seg, nlen, p->name, form->count, &p->value, errbuf,
				 errlen)) {
			free(p->name);
			p->name = NULL;
			goto fail;
		}
		form->count++;
		if (p->name[0] == '\0') {
			(void)snprintf(errbuf, errlen, "form body: parameter %zu has an empty name",
				       form->count);
			goto fail;
		}
		for (size_t i = 0; i + 1 < form->count; i++) {
			if (strcmp(form->params[i].name, p->name) == 0) {
				char label[96];
				form_label(label, sizeof(label), p->name, strlen(p->name), NULL,
					   form->count - 1);
				(void)snprintf(
					errbuf, errlen,
					"form body: the %s is given twice (parameters must not be repeated)",
					label);
				goto fail;
			}
		}
	}
	return true;
fail:
	form_free(form);
	return false;
}

const char *form_get(const struct form *form, const char *name)
{
	for (size_t i = 0; i < form->count; i++) {
		if (strcmp(form->params[i].name, name) == 0)
			return form->params[i].value;
	}
	return NULL;
}

void form_free(struct form *form)
{
	/* Values are wiped: a token request's carry client_secret and
	 * subject_token. */
	for (size_t i = 0; i < form->count; i++) {
		free(form->params[i].name);
		if (form->params[i].value != NULL)
			explicit_bzero(form->params[i].value, strlen(form->params[i].value));
		free(form->params[i].value);
	}
	memset(form, 0, sizeof(*form));
}
