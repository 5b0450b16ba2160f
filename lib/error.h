/*
 * error.h - the one error type of floe.
 *
 * Every fallible function fills a struct floe_error: the HTTP status, the
 * Iceberg error "type" and a short message fit for a client. Internal detail
 * (SQL text, errno) goes to the log, never into the message.
 */
#ifndef FLOE_ERROR_H
#define FLOE_ERROR_H

#include <stdbool.h>
#include <jansson.h>

#define FLOE_WUR __attribute__((warn_unused_result))
#define FLOE_PRINTF(a, b) __attribute__((format(printf, a, b)))

enum floe_errkind {
	FE_NONE = 0,
	FE_BAD_REQUEST,          /* 400 BadRequestException */
	FE_NOT_AUTHORIZED,       /* 401 NotAuthorizedException */
	FE_FORBIDDEN,            /* 403 ForbiddenException */
	FE_NOT_FOUND,            /* 404 NotFoundException: unknown route */
	FE_NO_SUCH_NAMESPACE,    /* 404 NoSuchNamespaceException */
	FE_NO_SUCH_TABLE,        /* 404 NoSuchTableException */
	FE_METHOD_NOT_ALLOWED,   /* 405 MethodNotAllowedException */
	FE_UNSUPPORTED,          /* 406 UnsupportedOperationException */
	FE_ALREADY_EXISTS,       /* 409 AlreadyExistsException */
	FE_NAMESPACE_NOT_EMPTY,  /* 409 NamespaceNotEmptyException */
	FE_COMMIT_FAILED,        /* 409 CommitFailedException */
	FE_TOO_LARGE,            /* 413 RequestEntityTooLargeException */
	FE_UNPROCESSABLE,        /* 422 UnprocessableEntityException */
	FE_INTERNAL,             /* 500 InternalServerError */
	FE_COMMIT_STATE_UNKNOWN, /* 500 CommitStateUnknownException */
	FE_UNAVAILABLE,          /* 503 ServiceUnavailableException */
	FE_NO_SUCH_REFERENCE,    /* 404 NoSuchReferenceException */
	FE_NO_SUCH_SNAPSHOT,     /* 404 NoSuchSnapshotException */
	FE_NOT_FAST_FORWARD,     /* 409 NotFastForwardException */
	FE_NO_SUCH_HOOK,         /* 404 NoSuchAuditHookException */
	FE_NO_SUCH_RUN,          /* 404 NoSuchWapRunException */
	FE_RUN_STATE,            /* 409 WapRunStateException */
	FE_NO_HOOK,              /* 412 NoAuditHookException */
	FE_AUDIT_REJECTED,       /* 422 AuditRejectedException */
	FE_AUDIT_UNAVAILABLE,    /* 503 AuditUnavailableException */
	FE_NO_SUCH_WAREHOUSE,    /* 404 NoSuchWarehouseException */
	FE_TOO_MANY_REQUESTS,    /* 429 TooManyRequestsException */
	FE_NO_SUCH_PRINCIPAL,    /* 404 NoSuchPrincipalException */
	FE_NO_SUCH_ROLE,         /* 404 NoSuchRoleException */
	FE_NO_SUCH_VIEW,         /* 404 NoSuchViewException */
	FE_ILLEGAL_ARGUMENT,     /* 400 IllegalArgumentException: a view rule refused */
	FE_NO_SUCH_SUBSCRIPTION, /* 404 NoSuchEventSubscriptionException */
	FE_SUBSCRIPTION_STATE,   /* 409 EventSubscriptionStateException */
	FE_KIND_COUNT
};

#define FLOE_ERROR_MESSAGE_MAX 512

/*
 * What a failed mutation did to the catalog (DESIGN.md "Outcomes"). Only
 * FO_UNKNOWN may be answered 500/502/504: Iceberg clients read those as
 * "state unknown" and keep their files, and read every other failure as
 * "nothing happened" and delete them.
 */
enum floe_outcome {
	FO_NOT_ATTEMPTED = 0, /* refused before anything was changed */
	FO_FAILED,            /* attempted; known not to have taken effect */
	FO_UNKNOWN,           /* the database may or may not have committed it */
};

struct floe_error {
	enum floe_errkind kind;
	enum floe_outcome outcome;
	char sqlstate[6]; /* of the database failure behind it, "" if none */
	char message[FLOE_ERROR_MESSAGE_MAX];
};

/* Fills err (when not NULL) with kind and a printf-style message. The
 * outcome becomes FO_UNKNOWN for FE_COMMIT_STATE_UNKNOWN, else
 * FO_NOT_ATTEMPTED, and the SQLSTATE is cleared: whoever knows more sets
 * them afterwards. Always returns false, so a caller can write
 * `return floe_err(...)`. */
bool floe_err(struct floe_error *err, enum floe_errkind kind, const char *fmt, ...)
	FLOE_PRINTF(3, 4);
#ifdef __clang_analyzer__
/* The analyzer looks at one file at a time: tell it what floe_err
 * returns, or it follows `return floe_err(...)` as a success. */
#define floe_err(...) (floe_err(__VA_ARGS__), false)
#endif

/* The HTTP status of a kind (500 for an unknown kind). */
int floe_errkind_status(enum floe_errkind kind);

/* The Iceberg error type of a kind, e.g. "NoSuchNamespaceException".
 * Returns a static string. */
const char *floe_errkind_type(enum floe_errkind kind);

/* Builds the Iceberg error body {"error": {"message", "type", "code"}}.
 * Returns a new reference, or NULL when out of memory. */
json_t *floe_error_to_json(const struct floe_error *err);

/* Formats a message into buf (len bytes, truncated) for a caller that
 * reports failure as text (the option parser). Always returns false, so a
 * caller can write `return floe_errbuf(...)`. */
bool floe_errbuf(char *buf, size_t len, const char *fmt, ...) FLOE_PRINTF(3, 4);
#ifdef __clang_analyzer__
/* As for floe_err: the analyzer sees the false. */
#define floe_errbuf(...) (floe_errbuf(__VA_ARGS__), false)
#endif

/* Resets err to "no error". */
void floe_error_clear(struct floe_error *err);

/* Sets the outcome of err (when not NULL). */
void floe_error_set_outcome(struct floe_error *err, enum floe_outcome outcome);

/* True when err comes from SQLSTATE class 40 (serialization failure,
 * deadlock): the transaction was rolled back and may simply be retried. */
bool floe_error_is_rollback(const struct floe_error *err);

/*
 * The kind a mutation's failure is answered with: FO_UNKNOWN becomes
 * FE_COMMIT_STATE_UNKNOWN (500), and any other 5xx but 503 becomes
 * FE_UNAVAILABLE (503), because a 500 would tell the client the outcome
 * is unknown when it is known.
 */
enum floe_errkind floe_error_mutation_kind(const struct floe_error *err);

#endif
