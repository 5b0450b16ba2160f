/*
 * scope.c - reading scopes (scope.h): a scan over the words, no copy.
 */
#include "scope.h"

#include <stdio.h>
#include <string.h>

#define SCOPE_ROLE "role:"
#define SCOPE_ROLE_LEN 5

/* The next word of *p (its start in *word, its length answered), *p moved
 * past it; 0 at the end. */
static size_t scope_next(const char **p, const char **word)
{
	const char *s = *p;

	while (*s == ' ')
		s++;
	size_t len = strcspn(s, " ");
	*word = s;
	*p = s + len;
	return len;
}

static bool scope_is_role(const char *word, size_t len)
{
	return len > SCOPE_ROLE_LEN && strncmp(word, SCOPE_ROLE, SCOPE_ROLE_LEN) == 0;
}

bool scope_has(const char *scope, const char *word, size_t len)
{
	const char *p = scope != NULL ? scope : "";
	const char *w = NULL;
	size_t n = 0;

	while ((n = scope_next(&p, &w)) > 0)
		if (n == len && strncmp(w, word, len) == 0)
			return true;
	return false;
}

bool scope_narrows(const char *scope)
{
	const char *p = scope != NULL ? scope : "";
	const char *w = NULL;
	size_t n = 0;

	while ((n = scope_next(&p, &w)) > 0)
		if (scope_is_role(w, n))
			return true;
	return false;
}

bool scope_exchange(const char *subject, const char *requested, char *out, size_t outlen, char *why,
		    size_t whylen)
{
	const char *from = subject != NULL && subject[0] != '\0' ? subject : "catalog";
	const char *answer = from;

	if (scope_narrows(requested)) {
		if (scope_narrows(from)) {
			/* requested is not NULL here (it narrows), said for the
			 * analyzer too. */
			const char *p = requested != NULL ? requested : "";
			const char *w = NULL;
			size_t n = 0;
			while ((n = scope_next(&p, &w)) > 0) {
				if (!scope_is_role(w, n) || scope_has(from, w, n))
					continue;
				(void)snprintf(
					why, whylen,
					"The subject token's scope is \"%s\": an exchange may "
					"narrow it, not widen it to %.*s",
					from, (int)n, w);
				return false;
			}
		}
		answer = requested;
	}
	int w = snprintf(out, outlen, "%s", answer);
	if (w < 0 || (size_t)w >= outlen) {
		(void)snprintf(why, whylen, "The scope is too long");
		return false;
	}
	return true;
}
