/*
 * assertion.h - FLOE_ASSERT, for what a comment would otherwise call
 * "must never happen". A false condition logs its file, line and
 * expression through floe's log and aborts, so a test or sanitizer build
 * stops at the first breach instead of carrying on wrong. Active unless
 * NDEBUG (meson's b_ndebug), as PostgreSQL's Assert under cassert and
 * curl's DEBUGASSERT are: every test build checks, a release may not.
 * Not for errors a client or an operator can cause: those are
 * struct floe_error.
 */
#ifndef FLOE_ASSERTION_H
#define FLOE_ASSERTION_H

/* Logs "<file>:<line>: assertion failed: <expr>" and aborts. */
_Noreturn void floe_assert_fail(const char *file, int line, const char *expr);

#ifdef NDEBUG
/* Not evaluated, but still compiled, so it cannot rot. */
#define FLOE_ASSERT(cond) ((void)sizeof(!(cond)))
#else
#define FLOE_ASSERT(cond) ((cond) ? (void)0 : floe_assert_fail(__FILE__, __LINE__, #cond))
#endif

#endif
