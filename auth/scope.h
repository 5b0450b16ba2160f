/*
 * scope.h - the words of an OAuth2 scope (RFC 6749 section 3.3: separated
 * by spaces) as floe reads them: "role:NAME" narrows a token to the roles
 * named; any other word ("catalog", a client's default) narrows nothing.
 * Pure string work: which roles a principal holds is the caller's.
 */
#ifndef FLOE_SCOPE_H
#define FLOE_SCOPE_H

#include <stdbool.h>
#include <stddef.h>

/* Whether scope (NULL: none) holds the word of len bytes. */
bool scope_has(const char *scope, const char *word, size_t len);

/* Whether scope (NULL: none) names any role ("role:" and at least one
 * byte): a token of such a scope carries only the roles named. */
bool scope_narrows(const char *scope);

/*
 * The scope of the token a token exchange answers (RFC 8693: the new
 * token is about the subject token, and may carry less than it, never
 * more). subject is the subject token's scope (NULL or "": "catalog"),
 * requested the request's (NULL: none). When requested names roles, each
 * must be one the subject token carries (a subject that names no role
 * carries every role of its principal) and the answer is requested;
 * otherwise the answer is the subject's scope, so "catalog" asks for
 * everything the subject token carries and no more. Writes it to out
 * (outlen bytes) and answers true; false with why (an invalid_scope
 * description naming the role) for a widening, or when out is too small.
 */
bool scope_exchange(const char *subject, const char *requested, char *out, size_t outlen, char *why,
		    size_t whylen);

#endif
