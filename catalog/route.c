/*
 * route.c - a table's routes as engines are told them (route.h).
 */
#include "route.h"

#include <string.h>

#include "buf.h"

/* Appends s percent-encoded as a path segment. */
static void segment_into(struct buf *b, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";

	for (const unsigned char *p = (const unsigned char *)s; *p != '\0'; p++) {
		if ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
		    (*p >= '0' && *p <= '9') || *p == '-' || *p == '_' || *p == '.' || *p == '~') {
			(void)buf_append(b, p, 1);
		} else {
			char e[3] = { '%', hex[*p >> 4], hex[*p & 15] };
			(void)buf_append(b, e, 3);
		}
	}
}

char *route_table(const char *prefix, const struct ns_ident *ns, const char *name,
		  const char *route)
{
	struct buf b;
	size_t len;

	buf_init(&b, (size_t)64 * 1024);
	(void)buf_append(&b, "v1/", 3);
	if (prefix != NULL && prefix[0] != '\0') {
		segment_into(&b, prefix);
		(void)buf_append(&b, "/", 1);
	}
	(void)buf_append(&b, "namespaces/", 11);
	for (size_t i = 0; i < ns->nlevels; i++) {
		if (i > 0)
			(void)buf_append(&b, "%1F", 3);
		segment_into(&b, ns->levels[i]);
	}
	(void)buf_append(&b, "/tables/", 8);
	segment_into(&b, name);
	(void)buf_append(&b, "/", 1);
	(void)buf_append(&b, route, strlen(route));
	if (b.status != BUF_OK) {
		buf_free(&b);
		return NULL;
	}
	return buf_take(&b, &len);
}
