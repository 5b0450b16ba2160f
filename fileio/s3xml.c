/*
 * s3xml.c - the little XML an S3 server answers (ListObjectsV2,
 * DeleteObjects, Error): a bounded walk that reports each element
 * holding only text, with the path of element names leading to it.
 * Not a general XML parser: no DTD, no external entity, no namespace
 * prefixes beyond dropping them, no text mixed with elements (S3 never
 * writes it, and parsers differ in what they make of it); anything else
 * is refused.
 */
#include "s3.h"

#include <stdio.h>
#include <string.h>

#define S3XML_MAX_DEPTH 8
#define S3XML_NAME_MAX 64

struct walk {
	const char *p;
	const char *end;
	char path[S3XML_MAX_DEPTH * (S3XML_NAME_MAX + 1)];
	size_t plen[S3XML_MAX_DEPTH + 1]; /* path length at each depth */
	int depth;
	char text[S3XML_TEXT_MAX + 1];
	size_t tlen;
	bool text_ok; /* only text (and CDATA) since the last start tag */
};

static bool starts(const struct walk *w, const char *s)
{
	size_t n = strlen(s);
	return (size_t)(w->end - w->p) >= n && memcmp(w->p, s, n) == 0;
}

/* Moves past the next occurrence of s; false when there is none. */
static bool skip_past(struct walk *w, const char *s)
{
	size_t n = strlen(s);

	while ((size_t)(w->end - w->p) >= n) {
		if (memcmp(w->p, s, n) == 0) {
			w->p += n;
			return true;
		}
		w->p++;
	}
	return false;
}

static bool text_add(struct walk *w, const char *s, size_t n)
{
	if (w->tlen + n > S3XML_TEXT_MAX)
		return false;
	memcpy(w->text + w->tlen, s, n);
	w->tlen += n;
	return true;
}

/* Appends code point c as UTF-8; NUL, surrogates and out-of-range
 * values are refused. */
static bool text_add_code(struct walk *w, unsigned long c)
{
	char u[4];
	size_t n;

	if (c == 0 || (c >= 0xD800 && c <= 0xDFFF) || c > 0x10FFFF)
		return false;
	if (c < 0x80) {
		u[0] = (char)c;
		n = 1;
	} else if (c < 0x800) {
		u[0] = (char)(0xC0 | (c >> 6));
		u[1] = (char)(0x80 | (c & 0x3F));
		n = 2;
	} else if (c < 0x10000) {
		u[0] = (char)(0xE0 | (c >> 12));
		u[1] = (char)(0x80 | ((c >> 6) & 0x3F));
		u[2] = (char)(0x80 | (c & 0x3F));
		n = 3;
	} else {
		u[0] = (char)(0xF0 | (c >> 18));
		u[1] = (char)(0x80 | ((c >> 12) & 0x3F));
		u[2] = (char)(0x80 | ((c >> 6) & 0x3F));
		u[3] = (char)(0x80 | (c & 0x3F));
		n = 4;
	}
	return text_add(w, u, n);
}

/* An entity at w->p ('&'): the five predefined ones and character
 * references. */
static bool entity(struct walk *w)
{
	static const struct {
		const char *name;
		char c;
	} named[] = { { "&amp;", '&' },
		      { "&lt;", '<' },
		      { "&gt;", '>' },
		      { "&quot;", '"' },
		      { "&apos;", '\'' } };

	for (size_t i = 0; i < sizeof(named) / sizeof(named[0]); i++) {
		if (starts(w, named[i].name)) {
			w->p += strlen(named[i].name);
			return text_add(w, &named[i].c, 1);
		}
	}
	if (!starts(w, "&#"))
		return false;
	w->p += 2;
	bool hex = w->p < w->end && *w->p == 'x';
	if (hex)
		w->p++;
	unsigned long c = 0;
	int digits = 0;
	while (w->p < w->end && *w->p != ';') {
		char d = *w->p;
		unsigned v;
		if (d >= '0' && d <= '9')
			v = (unsigned)(d - '0');
		else if (hex && d >= 'a' && d <= 'f')
			v = (unsigned)(d - 'a' + 10);
		else if (hex && d >= 'A' && d <= 'F')
			v = (unsigned)(d - 'A' + 10);
		else
			return false;
		if (++digits > 8)
			return false;
		c = c * (hex ? 16 : 10) + v;
		w->p++;
	}
	if (w->p == w->end || digits == 0)
		return false;
	w->p++; /* ';' */
	return text_add_code(w, c);
}

/* A name at w->p, its namespace prefix dropped, into out. */
static bool name(struct walk *w, char *out, size_t *len)
{
	const char *start = w->p;

	while (w->p < w->end && strchr(" \t\r\n/>=", *w->p) == NULL)
		w->p++;
	const char *local = start;
	for (const char *q = start; q < w->p; q++) {
		if (*q == ':')
			local = q + 1;
		else if (*q == '<' || *q == '&' || *q == '"' || *q == '\'')
			return false;
	}
	*len = (size_t)(w->p - local);
	if (*len == 0 || *len > S3XML_NAME_MAX)
		return false;
	memcpy(out, local, *len);
	out[*len] = '\0';
	return true;
}

/* The attributes of a start tag, up to and past its '>' (or "/>", then
 * *empty). Their values are not needed and are skipped. */
static bool attributes(struct walk *w, bool *empty)
{
	*empty = false;
	while (w->p < w->end) {
		char c = *w->p;
		if (c == '>') {
			w->p++;
			return true;
		}
		if (c == '/') {
			if (w->p + 1 >= w->end || w->p[1] != '>')
				return false;
			w->p += 2;
			*empty = true;
			return true;
		}
		if (c == '"' || c == '\'') {
			const char *q = memchr(w->p + 1, c, (size_t)(w->end - w->p - 1));
			if (q == NULL)
				return false;
			w->p = q + 1;
			continue;
		}
		if (c == '<')
			return false;
		w->p++;
	}
	return false;
}

/* Whether the text gathered so far holds more than white space. */
static bool text_significant(const struct walk *w)
{
	for (size_t i = 0; i < w->tlen; i++) {
		if (strchr(" \t\r\n", w->text[i]) == NULL)
			return true;
	}
	return false;
}

static bool start_tag(struct walk *w)
{
	char n[S3XML_NAME_MAX + 1];
	size_t len;
	bool empty;

	/* <a>text<b/></a>: text before an element is mixed content. */
	if (w->depth > 0 && w->text_ok && text_significant(w))
		return false;
	w->p++; /* '<' */
	if (!name(w, n, &len) || !attributes(w, &empty))
		return false;
	if (w->depth == S3XML_MAX_DEPTH)
		return false;
	size_t at = w->plen[w->depth];
	if (at > 0)
		w->path[at++] = '/';
	memcpy(w->path + at, n, len + 1);
	w->depth++;
	w->plen[w->depth] = at + len;
	w->tlen = 0;
	w->text_ok = true;
	if (empty) {
		/* <a/> holds nothing to report, and makes its parent one
		 * with element content. */
		w->depth--;
		w->path[w->plen[w->depth]] = '\0';
		w->text_ok = false;
	}
	return true;
}

static bool end_tag(struct walk *w, s3xml_leaf_fn leaf, void *ctx)
{
	char n[S3XML_NAME_MAX + 1];
	size_t len;

	w->p += 2; /* "</" */
	if (!name(w, n, &len))
		return false;
	while (w->p < w->end && strchr(" \t\r\n", *w->p) != NULL)
		w->p++;
	if (w->p == w->end || *w->p != '>' || w->depth == 0)
		return false;
	w->p++;
	size_t at = w->plen[w->depth - 1];
	const char *open = w->path + (at > 0 ? at + 1 : 0);
	if (strlen(open) != len || memcmp(open, n, len) != 0)
		return false; /* not the element that is open */
	if (w->text_ok) {
		w->text[w->tlen] = '\0';
		if (leaf != NULL && !leaf(ctx, w->path, w->text, w->tlen))
			return false;
	}
	w->depth--;
	w->path[w->plen[w->depth]] = '\0';
	w->text_ok = false;
	w->tlen = 0;
	return true;
}

bool s3xml_walk(const char *text, size_t len, s3xml_leaf_fn leaf, void *ctx)
{
	struct walk w;
	bool root_seen = false;

	memset(&w, 0, sizeof(w));
	w.p = text;
	w.end = text + len;
	while (w.p < w.end) {
		char c = *w.p;
		if (c == '\0')
			return false;
		if (c != '<') {
			if (w.depth == 0) {
				if (strchr(" \t\r\n", c) == NULL)
					return false; /* text outside the root */
				w.p++;
			} else if (!w.text_ok && (c == '&' || strchr(" \t\r\n", c) == NULL)) {
				return false; /* text after an element: mixed content */
			} else if (c == '&') {
				if (!entity(&w))
					return false;
			} else {
				if (w.text_ok && !text_add(&w, &c, 1))
					return false;
				w.p++;
			}
			continue;
		}
		if (starts(&w, "<?")) {
			if (w.depth > 0 || root_seen || !skip_past(&w, "?>"))
				return false;
		} else if (starts(&w, "<!--")) {
			if (!skip_past(&w, "-->"))
				return false;
		} else if (starts(&w, "<![CDATA[")) {
			if (w.depth == 0)
				return false;
			const char *from = w.p + 9;
			w.p = from;
			if (!skip_past(&w, "]]>"))
				return false;
			size_t n = (size_t)(w.p - 3 - from);
			if (memchr(from, '\0', n) != NULL)
				return false; /* no NUL in text, raw or not */
			if (!w.text_ok && n > 0)
				return false; /* mixed content */
			if (w.text_ok && !text_add(&w, from, n))
				return false;
		} else if (starts(&w, "<!")) {
			return false; /* a DTD: never */
		} else if (starts(&w, "</")) {
			if (!end_tag(&w, leaf, ctx))
				return false;
		} else {
			if (w.depth == 0 && root_seen)
				return false; /* a second root */
			if (!start_tag(&w))
				return false;
			root_seen = true;
		}
	}
	return root_seen && w.depth == 0;
}

/* The Code and Message of an S3 Error document. */
struct error_fields {
	char *code;
	size_t code_cap;
	char *message;
	size_t message_cap;
};

static bool error_leaf(void *ctx, const char *path, const char *text, size_t len)
{
	struct error_fields *f = ctx;

	(void)len;
	if (strcmp(path, "Error/Code") == 0)
		(void)snprintf(f->code, f->code_cap, "%s", text);
	else if (strcmp(path, "Error/Message") == 0 && f->message != NULL)
		(void)snprintf(f->message, f->message_cap, "%s", text);
	return true;
}

bool s3xml_error(const char *text, size_t len, char *code, size_t code_cap, char *message,
		 size_t message_cap)
{
	struct error_fields f = { code, code_cap, message, message_cap };

	code[0] = '\0';
	if (message != NULL)
		message[0] = '\0';
	return s3xml_walk(text, len, error_leaf, &f) && code[0] != '\0';
}
