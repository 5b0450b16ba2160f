/* Scopes: which words narrow a token, and the scope a token exchange
 * answers: never wider than the subject token's, whatever is asked. */
#include <criterion/criterion.h>
#include <string.h>

#include "scope.h"

static const char *exchange(const char *subject, const char *requested)
{
	static char out[256];
	char why[256] = "";

	if (!scope_exchange(subject, requested, out, sizeof(out), why, sizeof(why)))
		return NULL;
	cr_assert_str_empty(why);
	return out;
}

Test(auth_scope, words)
{
	cr_assert(scope_has("catalog role:a", "role:a", 6));
	cr_assert(scope_has("  role:a  catalog ", "catalog", 7));
	cr_assert_not(scope_has("role:ab", "role:a", 6));
	cr_assert_not(scope_has(NULL, "catalog", 7));
	cr_assert(scope_narrows("catalog role:x"));
	cr_assert_not(scope_narrows("catalog PRINCIPAL_ROLE:ALL"));
	cr_assert_not(scope_narrows("role:"), "a role needs a name");
	cr_assert_not(scope_narrows(NULL));
	cr_assert_not(scope_narrows(""));
}

Test(auth_scope, an_exchange_keeps_or_narrows)
{
	/* Asking for everything gets what the subject carries. */
	cr_assert_str_eq(exchange("role:w", "catalog"), "role:w");
	cr_assert_str_eq(exchange("role:w", NULL), "role:w");
	cr_assert_str_eq(exchange("role:w role:r", "PRINCIPAL_ROLE:ALL"), "role:w role:r");
	cr_assert_str_eq(exchange("catalog", "catalog"), "catalog");
	cr_assert_str_eq(exchange(NULL, NULL), "catalog");
	cr_assert_str_eq(exchange("", "catalog"), "catalog");
	/* Naming fewer roles, or the same, is a narrowing. */
	cr_assert_str_eq(exchange("role:w role:r", "role:r"), "role:r");
	cr_assert_str_eq(exchange("role:w", "catalog role:w"), "catalog role:w");
	/* A subject of every role may be narrowed to any. */
	cr_assert_str_eq(exchange("catalog", "role:admin"), "role:admin");
}

Test(auth_scope, an_exchange_never_widens)
{
	char out[64];
	char why[256] = "";

	cr_assert_null(exchange("role:w", "role:admin"));
	cr_assert_null(exchange("role:w", "role:w role:admin"));
	cr_assert_null(exchange("role:w", "role:ww"), "a prefix is another role");
	cr_assert_not(scope_exchange("role:w", "role:admin", out, sizeof(out), why, sizeof(why)));
	cr_assert(strstr(why, "role:w") != NULL &&
			  strstr(why, "not widen it to role:admin") != NULL,
		  "%s", why);
}

Test(auth_scope, a_scope_too_long_for_the_answer_is_refused)
{
	char out[8];
	char why[64] = "";

	cr_assert_not(scope_exchange("role:longer", NULL, out, sizeof(out), why, sizeof(why)));
	cr_assert_str_eq(why, "The scope is too long");
}
