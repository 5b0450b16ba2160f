/*
 * fuzz_form.c - libFuzzer target for application/x-www-form-urlencoded
 * bodies (the token endpoint's). A refused body leaves no parameter and
 * says why; an accepted one keeps every bound (at most FORM_MAX_PARAMS
 * parameters, names unique and not empty, names and values at most
 * FORM_MAX_FIELD bytes without NUL), form_get finds each value, and the
 * parameters written back out encoded parse to the same parameters.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "form.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Appends s form-encoded to out at *n (room checked by the caller). */
static void encode(const char *s, char *out, size_t *n)
{
	static const char hex[] = "0123456789ABCDEF";

	for (; *s != '\0'; s++) {
		unsigned char c = (unsigned char)*s;
		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		    c == '-' || c == '.' || c == '_' || c == '~') {
			out[(*n)++] = (char)c;
		} else if (c == ' ') {
			out[(*n)++] = '+';
		} else {
			out[(*n)++] = '%';
			out[(*n)++] = hex[c >> 4];
			out[(*n)++] = hex[c & 15];
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct form form;
	struct form again;
	char errbuf[256];

	if (!form_parse((const char *)data, size, &form, errbuf, sizeof(errbuf))) {
		if (form.count != 0 || errbuf[0] == '\0')
			abort();
		return 0;
	}
	if (form.count > FORM_MAX_PARAMS)
		abort();
	size_t cap = 1;
	for (size_t i = 0; i < form.count; i++) {
		size_t nlen = strlen(form.params[i].name);
		size_t vlen = strlen(form.params[i].value);
		if (nlen == 0 || nlen > FORM_MAX_FIELD || vlen > FORM_MAX_FIELD)
			abort();
		for (size_t j = 0; j < i; j++)
			if (strcmp(form.params[i].name, form.params[j].name) == 0)
				abort();
		if (form_get(&form, form.params[i].name) != form.params[i].value)
			abort();
		cap += 3 * (nlen + vlen) + 2;
	}
	char *text = malloc(cap);
	size_t n = 0;
	if (text == NULL)
		abort();
	for (size_t i = 0; i < form.count; i++) {
		if (i > 0)
			text[n++] = '&';
		encode(form.params[i].name, text, &n);
		text[n++] = '=';
		encode(form.params[i].value, text, &n);
	}
	if (!form_parse(text, n, &again, errbuf, sizeof(errbuf)) || again.count != form.count)
		abort();
	for (size_t i = 0; i < form.count; i++)
		if (strcmp(again.params[i].name, form.params[i].name) != 0 ||
		    strcmp(again.params[i].value, form.params[i].value) != 0)
			abort();
	form_free(&again);
	form_free(&form);
	free(text);
	return 0;
}
