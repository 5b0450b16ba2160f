/*
 * assertion.c - the failure half of FLOE_ASSERT (assertion.h): one log
 * line, then abort(3), which leaves a core for the post-mortem.
 */
#include "assertion.h"

#include <stdlib.h>

#include "log.h"

_Noreturn void floe_assert_fail(const char *file, int line, const char *expr)
{
	log_error("assert", "%s:%d: assertion failed: %s; aborting", file, line, expr);
	abort();
}
